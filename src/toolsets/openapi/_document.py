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
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import yaml

from toolsets._errors import SpecError

__all__ = ["Document", "Fetch", "Resolver", "escape", "join_pointer"]

Fetch = Callable[[str], str]
"""Gets the text at an http(s) URL (raising on failure)."""

MAX_REF_CHAIN = 64
"""References followed in a row before the chain is called a loop."""

# The C loader is ten times faster, when PyYAML was built with libyaml.
_YamlLoader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_MISSING = object()


def escape(token: str) -> str:
    """A JSON pointer reference token (RFC 6901): ``~`` → ``~0``, ``/`` → ``~1``."""
    return token.replace("~", "~0").replace("/", "~1")


def join_pointer(pointer: str, *tokens: str | int) -> str:
    """``pointer`` extended by ``tokens``."""
    for token in tokens:
        text = str(token)
        if "~" in text or "/" in text:
            text = escape(text)
        pointer = f"{pointer}/{text}"
    return pointer


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
    try:
        return yaml.load(text, Loader=_YamlLoader)
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
        walked = ""
        for raw in pointer[1:].split("/"):
            token = raw.replace("~1", "/").replace("~0", "~")
            walked += f"/{raw}"
            if isinstance(node, Mapping) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                raise SpecError(
                    f"the reference target {pointer!r} does not exist",
                    pointer=walked,
                    source=self.uri or None,
                )
        return node


class Resolver:
    """The documents of one spec, and ``$ref`` resolution across them."""

    def __init__(self, root: Document, *, fetch: Fetch | None = None) -> None:
        self.root = root
        """The spec's own document."""
        self._documents: dict[str, Document] = {root.uri: root}
        self._fetch = fetch
        # (reference, base) → what resolve() found: the same $ref is met once per use.
        self._resolved: dict[tuple[str, str], tuple[Any, str, str]] = {}

    def document(self, uri: str) -> Document:
        """The document at ``uri`` (absolute), loaded on first use."""
        found = self._documents.get(uri)
        if found is None:
            found = self._documents[uri] = Document(self._load(uri), uri)
        return found

    def resolve(self, node: Any, base: str, pointer: str) -> tuple[Any, str, str]:
        """Follow ``node``'s ``$ref`` (and the target's, and so on).

        Args:
            node: a spec node, a reference or not.
            base: the URI of the document ``node`` is in.
            pointer: ``node``'s JSON pointer there (for errors).

        Returns:
            ``(target, its document's URI, its pointer)``; ``node`` itself when it is
            not a reference.
        """
        if not isinstance(node, Mapping) or "$ref" not in node:
            return node, base, pointer
        first = node["$ref"]
        key = (first, base) if isinstance(first, str) else None
        found = self._resolved.get(key) if key is not None else None
        if found is not None:
            return found
        for _ in range(MAX_REF_CHAIN):
            if not isinstance(node, Mapping) or "$ref" not in node:
                if key is not None:
                    self._resolved[key] = (node, base, pointer)
                return node, base, pointer
            ref = node["$ref"]
            if not isinstance(ref, str):
                raise SpecError("$ref must be a string", pointer=pointer, source=base or None)
            uri, fragment = self.split(ref, base, pointer)
            node, base, pointer = self.document(uri).at(fragment), uri, fragment
        raise SpecError(
            f"more than {MAX_REF_CHAIN} references in a row (a loop?)",
            pointer=pointer,
            source=base or None,
        )

    def split(self, ref: str, base: str, pointer: str) -> tuple[str, str]:
        """A reference as (absolute document URI, JSON pointer in it)."""
        if ref.startswith("#"):  # most are, and urldefrag is slow
            return base, unquote(ref[1:]) if "%" in ref else ref[1:]
        target, fragment = urldefrag(ref)
        uri = urljoin(base, target) if target else base
        if target and not uri:
            raise SpecError(
                f"cannot follow {ref!r}: the spec was given in memory, with no base URL "
                "to resolve relative references against (pass base_url=)",
                pointer=pointer,
            )
        return uri, unquote(fragment)

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
            return parse_text(self._fetch(uri), uri)
        raise SpecError(f"cannot load {uri!r}: only files and http(s) URLs", source=uri)


def file_uri(path: str | os.PathLike[str]) -> str:
    """The absolute ``file:`` URI of a path."""
    return Path(path).resolve().as_uri()
