"""Reading spec documents (a path, a URL, a dict, or JSON/YAML text) and following their
``$ref``s: within a document, to other files relative to it, and to URLs.

Documents are parsed once and never walked as a whole: a reference is followed when
something needs what it points to, so loading costs little more than parsing. Everything
here is synchronous; the toolset runs it in a worker thread, and fetches URLs through a
callback that goes back to the event loop's pooled client.
"""

from __future__ import annotations

import json
import os
import posixpath
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

from toolsets._errors import ConnectionError, SpecError, ToolDefinitionError
from toolsets._jsonschema import (
    DATA_KEYWORDS,
    PointerError,
    escape,
    join_pointer,
    resolve,
    unescape,
)

__all__ = [
    "Document",
    "Fetch",
    "RefPolicy",
    "Resolver",
    "escape",
    "file_uri",
    "join_pointer",
    "parse_text",
]

Fetch = Callable[[str], str]
"""Gets the text at an http(s) URL (raising on failure)."""

MAX_REF_CHAIN = 64
"""References followed in a row before the chain is called a loop."""

_MISSING = object()


def parse_text(text: str, source: str | None) -> Any:
    """JSON or YAML text as Python values (JSON is tried first: it is far faster)."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            if stripped.startswith("["):
                raise SpecError(f"invalid JSON: {error}", source=source) from error
            # YAML flow style also starts with "{": let the YAML parser have a go.
    import yaml  # here: a JSON spec never needs it, and it takes a while to import

    # The C loader, when PyYAML was built with libyaml: parsing in C, not Python.
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as error:
        raise SpecError(f"invalid JSON or YAML: {error}", source=source) from error


class Document:
    """One parsed document and where it came from."""

    def __init__(self, root: Any, uri: str) -> None:
        self.root = root
        """The parsed content."""
        self.uri = uri
        """Its absolute URI (``file:``, ``http(s):``), or ``""`` for a document given
        in memory with no base."""
        self._found: dict[str, Any] = {}  # a shared parameter is looked up once per use

    def at(self, pointer: str) -> Any:
        """The node at ``pointer`` (RFC 6901); SpecError if there is none."""
        node = self._found.get(pointer, _MISSING)
        if node is _MISSING:
            node = self._found[pointer] = self._walk(pointer)
        return node

    def _walk(self, pointer: str) -> Any:
        node = self.root
        if pointer in ("", "/"):
            return node
        if not pointer.startswith("/"):
            raise SpecError(f"invalid JSON pointer {pointer!r}", source=self.uri or None)
        try:
            return resolve(node, pointer)
        except PointerError as error:
            raise SpecError(
                f"the reference target {pointer!r} does not exist",
                pointer=error.walked,
                source=self.uri or None,
            ) from None


class RefPolicy:
    """Which documents a spec's documents may refer to with ``$ref``.

    A document may refer to what its own origin allows: a file to other files and to
    http(s) URLs; a document fetched over http(s) to its own origin only (scheme, host
    and port); a spec given in memory (a dict or text, without ``spec_url``) to nothing
    outside itself. ``allow`` adds origins (``https://schemas.example``) or URL prefixes
    (``https://example.com/specs/``, ``file:///srv/specs/``) that any document may refer
    to. A redirect is followed only within the origin that was asked.
    """

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allow = tuple(_allowed_prefix(entry) for entry in allow)
        """The normalised origins and prefixes every document may refer to."""

    def allows(self, referrer: str, uri: str) -> bool:
        """Whether the document at ``referrer`` (``""``: in memory) may refer to ``uri``."""
        target = _normalised(uri)
        if target is None:
            return False
        if any(_under(target, prefix) for prefix in self.allow):
            return True
        kind = urlsplit(referrer).scheme.lower()
        if kind == "file":
            return True
        if kind in ("http", "https"):
            own = _normalised(referrer)
            return own is not None and own[:2] == target[:2]
        return False

    def check(self, referrer: str, uri: str, pointer: str) -> None:
        """`SpecError` at ``pointer`` unless `allows`."""
        if not self.allows(referrer, uri):
            where = (
                "a spec given in memory (pass spec_url= or allow_refs=)"
                if not referrer
                else f"a document from {_origin_text(referrer)} (pass allow_refs= to allow it)"
            )
            raise SpecError(
                f"{where} may not refer to {_origin_text(uri)}",
                pointer=pointer,
                source=referrer or None,
            )


def _normalised(uri: str) -> tuple[str, str, str] | None:
    """(scheme, host[:port], path with dot segments and escapes resolved); None for what
    cannot be loaded."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower()
    if scheme not in ("file", "http", "https"):
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    host = (parts.hostname or "").lower()
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host = f"{host}:{port}"
    path = posixpath.normpath("/" + unquote(parts.path)) if parts.path else "/"
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    return scheme, host, path


def _allowed_prefix(entry: str) -> tuple[str, str, str]:
    normal = _normalised(entry)
    if normal is None or not urlsplit(entry).scheme:
        raise ToolDefinitionError(
            f"allow_refs: {entry!r} is not an absolute file:, http: or https: URL"
        )
    return normal


def _under(target: tuple[str, str, str], prefix: tuple[str, str, str]) -> bool:
    if target[:2] != prefix[:2]:
        return False
    root = prefix[2].rstrip("/")
    return not root or target[2] == root or target[2].startswith(root + "/")


def _origin_text(uri: str) -> str:
    """A URI as errors name it: a file's path, else the origin and path (no query, no
    user info)."""
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return uri.split("#", 1)[0]
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}{parts.path}"


class Resolver:
    """The documents of one spec, and ``$ref`` resolution across them.

    In an OpenAPI 3.1 spec, schemas may name themselves with ``$id`` and be referred to
    by that name, as JSON Schema 2020-12 says: an ``$id`` (relative to the base URI of
    the schema around it) is the base URI of the references inside its schema, and a
    reference to it (or to an ``$anchor`` in it, or a JSON pointer relative to it) finds
    the schema where it is, never a file or URL of that name. The documents are searched
    for ``$id``s only when a reference names something that is not a document loaded.

    Which documents a document may refer to is `RefPolicy`'s to say; a reference it
    refuses is a `SpecError` at the reference's pointer.
    """

    def __init__(
        self, root: Document, *, fetch: Fetch | None = None, policy: RefPolicy | None = None
    ) -> None:
        self.root = root
        """The spec's own document."""
        self._documents: dict[str, Document] = {root.uri: root}
        self._fetch = fetch
        self._policy = policy if policy is not None else RefPolicy()
        # (reference, base) → what resolve() found: the same $ref is met once per use.
        self._resolved: dict[tuple[str, str], tuple[Any, str, str, str]] = {}
        spec = root.root
        version = str(spec.get("openapi", "")) if isinstance(spec, Mapping) else ""
        self.ids = version.startswith("3.") and not version.startswith("3.0")
        """Whether schemas may name themselves with ``$id`` (OpenAPI 3.1 and later)."""
        self._ids: dict[str, tuple[str, str]] = {}  # $id → (document URI, pointer)
        self._anchors: dict[tuple[str, str], tuple[str, str]] = {}
        self._indexed: set[str] = set()
        # Base URI → the documents whose schemas gave it: what may be loaded from there
        # is what every one of them may load (an $id cannot lend another's rights).
        self._homes: dict[str, set[str]] = {}
        self._allowed: set[tuple[str, str]] = set()
        self._unreadable: dict[str, SpecError] = {}

    def document(self, uri: str) -> Document:
        """The document at ``uri`` (absolute), loaded on first use."""
        found = self._documents.get(uri)
        if found is None:
            failed = self._unreadable.get(uri)
            if failed is not None:  # tried once: a dead server is not asked again per use
                raise failed
            try:
                found = self._documents[uri] = Document(self._load(uri), uri)
            except SpecError as error:
                self._unreadable[uri] = error
                raise
        return found

    def retrieve(self, uri: str) -> Any:
        """The document, or the schema named by ``$id``, at ``uri``: for a JSON Schema
        validator's registry, which does not say who refers to it, so only what every
        document loaded so far may refer to is loaded."""
        if uri not in self._documents:
            identified = self._identified(uri) if self.ids else None
            if identified is not None:
                return self._documents[identified[0]].at(identified[1])
            for home in list(self._documents):
                self._policy.check(home, uri, "")
        return self.document(uri).root

    def resolve(self, node: Any, base: str, pointer: str) -> tuple[Any, str, str]:
        """Follow ``node``'s ``$ref`` (and the target's, and so on).

        Args:
            node: a spec node, a reference or not.
            base: the base URI ``node`` is under: its document's, or (OpenAPI 3.1) the
                ``$id`` of a schema around it.
            pointer: ``node``'s JSON pointer (for errors).

        Returns:
            ``(target, the base URI it is under, its JSON pointer in its document)``;
            ``node`` itself when it is not a reference.
        """
        target, target_base, _, target_pointer = self.locate(node, base, pointer)
        return target, target_base, target_pointer

    def locate(self, node: Any, base: str, pointer: str) -> tuple[Any, str, str, str]:
        """`resolve`, also saying which document the target is in: ``(target, base,
        document URI, pointer)``; the last two name the target whichever way it was
        referred to."""
        if not isinstance(node, Mapping) or "$ref" not in node:
            return node, base, self.home_document(base), pointer
        first = node["$ref"]
        # (A base several documents gave is checked for each of them every time.)
        shared = len(self._homes.get(base, ())) > 1
        key = (first, base) if isinstance(first, str) and not shared else None
        found = self._resolved.get(key) if key is not None else None
        if found is not None:
            return found
        document = self.home_document(base)
        for _ in range(MAX_REF_CHAIN):
            if not isinstance(node, Mapping) or "$ref" not in node:
                if key is not None:
                    self._resolved[key] = (node, base, document, pointer)
                return node, base, document, pointer
            ref = node["$ref"]
            if not isinstance(ref, str):
                raise SpecError("$ref must be a string", pointer=pointer, source=document or None)
            node, base, document, pointer = self._step(ref, base, pointer)
        raise SpecError(
            f"more than {MAX_REF_CHAIN} references in a row (a loop?)",
            pointer=pointer,
            source=document or None,
        )

    def inner_base(self, node: Any, base: str) -> str:
        """The base URI inside ``node``: its ``$id`` (OpenAPI 3.1) against ``base``."""
        if self.ids and isinstance(node, Mapping):
            ident = node.get("$id")
            if isinstance(ident, str):
                return self._derive(base, ident)
        return base

    def home_document(self, base: str) -> str:
        """The document a base URI was met in (one of them, if several gave it: the one
        errors name)."""
        if base in self._documents:
            return base
        homes = self._homes.get(base)
        return min(homes) if homes else base

    def split(self, ref: str, base: str) -> tuple[str, str]:
        """A reference as (absolute URI, fragment: a JSON pointer or an anchor)."""
        if ref.startswith("#"):  # most are, and urldefrag is slow
            return base, unquote(ref[1:]) if "%" in ref else ref[1:]
        target, fragment = urldefrag(ref)
        uri = urljoin(base, target) if target else base
        return uri, unquote(fragment)

    # --- one step -------------------------------------------------------------------

    def _step(self, ref: str, base: str, pointer: str) -> tuple[Any, str, str, str]:
        """Where one ``$ref`` leads: ``(node, base, document URI, pointer)``."""
        uri, fragment = self.split(ref, base)
        source = self.home_document(base) or None
        prefix = ""
        document_uri = uri
        if uri not in self._documents:
            identified = self._identified(uri) if self.ids else None
            if identified is not None:
                document_uri, prefix = identified
            elif not urlsplit(uri).scheme:
                missing = f"no schema has the $id {uri!r}, and " if self.ids else ""
                raise SpecError(
                    f"cannot follow {ref!r}: {missing}the spec was given in memory, with no "
                    "URL to resolve relative references against (pass spec_url=)",
                    pointer=pointer,
                    source=source,
                )
        self._check(base, document_uri, pointer)
        try:
            document = self.document(document_uri)
            if fragment and not fragment.startswith("/"):  # an $anchor
                anchored = self._anchor(uri, fragment)
                if anchored is None:
                    raise SpecError(f"no $anchor {fragment!r} in {uri}", source=document_uri)
                document_uri, where = anchored
                return self._documents[document_uri].at(where), uri, document_uri, where
            where = prefix + fragment
            try:
                node = document.at(where)
            except SpecError:
                if not prefix:
                    raise
                # A schema with an $id whose "#/..." references were written relative to
                # the whole document: the only reading that finds something.
                node = document.at(fragment)
                prefix, where, uri = "", fragment, document_uri
        except SpecError as error:
            raise SpecError(
                f"cannot follow {ref!r}: {error}", pointer=pointer, source=source
            ) from error
        return node, self._base_along(document, prefix, fragment, uri), document_uri, where

    def _check(self, base: str, uri: str, pointer: str) -> None:
        """`SpecError` unless every document ``base`` came from may refer to ``uri``."""
        for home in self._homes.get(base) or (self.home_document(base),):
            if home != uri and (home, uri) not in self._allowed:
                self._policy.check(home, uri, pointer)
                self._allowed.add((home, uri))

    def _base_along(self, document: Document, prefix: str, fragment: str, base: str) -> str:
        """The base URI a JSON pointer leads under: the ``$id``s of the schemas it passes
        through (not the target's own)."""
        if not self.ids or fragment.count("/") < 2:
            return base
        node = document.at(prefix)
        for raw in fragment[1:].split("/")[:-1]:
            token = unescape(raw)
            node = node[token] if isinstance(node, Mapping) else node[int(token)]
            base = self.inner_base(node, base)
        return base

    def _derive(self, base: str, ident: str) -> str:
        uri = urldefrag(urljoin(base, ident))[0]
        homes = self._homes.setdefault(uri, set())
        homes.update(self._homes.get(base) or (self.home_document(base),))
        return uri

    # --- $id and $anchor ------------------------------------------------------------

    def _identified(self, uri: str) -> tuple[str, str] | None:
        found = self._ids.get(uri)
        if found is None and self._index():
            found = self._ids.get(uri)
        return found

    def _anchor(self, uri: str, name: str) -> tuple[str, str] | None:
        found = self._anchors.get((uri, name))
        if found is None and self._index():
            found = self._anchors.get((uri, name))
        return found

    def _index(self) -> bool:
        """Note the ``$id``s and ``$anchor``s of the documents not searched yet; False
        when there were none."""
        todo = [uri for uri in self._documents if uri not in self._indexed]
        for uri in todo:
            self._indexed.add(uri)
            self._index_document(self._documents[uri])
        return bool(todo)

    def _index_document(self, document: Document) -> None:
        stack: list[tuple[Any, str, str, str]] = [(document.root, document.uri, "", document.uri)]
        while stack:
            node, base, pointer, resource = stack.pop()
            if isinstance(node, Mapping):
                ident = node.get("$id")
                if isinstance(ident, str) and pointer:
                    base = resource = self._derive(base, ident)
                    self._ids.setdefault(resource, (document.uri, pointer))
                for keyword in ("$anchor", "$dynamicAnchor"):
                    name = node.get(keyword)
                    if isinstance(name, str):
                        self._anchors.setdefault((resource, name), (document.uri, pointer))
                # An $id in data (an example, a default) names nothing.
                children = ((k, v) for k, v in node.items() if k not in DATA_KEYWORDS)
            elif isinstance(node, list):
                children = enumerate(node)  # type: ignore[assignment]
            else:
                continue
            for key, child in children:
                if isinstance(child, Mapping | list):
                    stack.append((child, base, join_pointer(pointer, key), resource))

    # --- loading --------------------------------------------------------------------

    def _load(self, uri: str) -> Any:
        scheme = urlsplit(uri).scheme
        if scheme == "file":
            path = Path(unquote(urlsplit(uri).path))
            try:
                text = path.read_text(encoding="utf-8")
            except OSError as error:
                raise SpecError(f"cannot read {path}: {error.strerror}", source=uri) from error
            return parse_text(text, uri)
        if scheme in ("http", "https"):
            if self._fetch is None:
                raise SpecError(f"cannot fetch {uri}: no HTTP client", source=uri)
            try:
                text = self._fetch(uri)
            except ConnectionError as error:
                raise SpecError(f"cannot fetch {uri}: {error}", source=uri) from error
            return parse_text(text, uri)
        raise SpecError(f"cannot load {uri!r}: only files and http(s) URLs", source=uri)


def file_uri(path: str | os.PathLike[str]) -> str:
    """The absolute ``file:`` URI of a path."""
    return Path(path).resolve().as_uri()
