"""Reading a spec's operations into the operation model: OpenAPI 3.0 and 3.1 as they are,
Swagger 2.0 translated (body and formData parameters, consumes, collection formats,
host/basePath/schemes).

A broken operation is reported in `Spec.problems` (and logged) and left out; it never
stops the rest of the spec from loading. A broken document raises `SpecError`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

from toolsets._errors import SpecError
from toolsets.openapi._document import Resolver, join_pointer
from toolsets.openapi._model import (
    DEFAULT_STYLES,
    Body,
    Encoding,
    HttpMethod,
    Location,
    MediaType,
    Operation,
    Parameter,
    Server,
)

__all__ = ["Spec", "dropped", "read_spec"]

logger = logging.getLogger("toolsets.openapi")

METHODS: tuple[HttpMethod, ...] = (
    "get",
    "put",
    "post",
    "delete",
    "options",
    "head",
    "patch",
    "trace",
)
LOCATIONS: frozenset[str] = frozenset(("path", "query", "header", "cookie"))
STYLES: Mapping[str, frozenset[str]] = {
    "path": frozenset(("simple", "label", "matrix")),
    "query": frozenset(("form", "spaceDelimited", "pipeDelimited", "deepObject")),
    "header": frozenset(("simple",)),
    "cookie": frozenset(("form",)),
}
_COLLECTION_FORMATS: Mapping[str, tuple[str, bool]] = {
    "csv": ("form", False),
    "ssv": ("spaceDelimited", False),
    "tsv": ("tabDelimited", False),
    "pipes": ("pipeDelimited", False),
    "multi": ("form", True),
}
"""Swagger 2.0's ``collectionFormat`` → (style, explode) in a query or a form body.
``tsv`` has no OpenAPI 3 style: ``tabDelimited`` is the serializer's own for it. In a
path or a header ``csv`` (and ``multi``, meant for queries and forms only) is ``simple``,
and ``ssv``, ``tsv`` and ``pipes`` keep their delimited style (which the serializer
joins there too)."""
# Swagger 2.0 parameter fields that are JSON Schema keywords.
_V2_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
)


@dataclass(frozen=True, kw_only=True)
class Spec:
    """What the toolset needs of a spec document."""

    version: str
    """``2.0``, ``3.0.x`` or ``3.1.x``."""
    title: str = ""
    description: str = ""
    operations: tuple[Operation, ...] = ()
    """Every operation that could be read, in document order."""
    problems: tuple[SpecError, ...] = ()
    """The operations that could not be read, each naming its JSON pointer."""
    servers: tuple[Server, ...] = ()
    """The document's servers (each operation also has the ones that apply to it)."""
    security_schemes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Scheme name → security scheme object (3.x form; Swagger 2.0's translated)."""
    security: tuple[Mapping[str, tuple[str, ...]], ...] = ()
    """The document's default security requirements."""


def read_spec(resolver: Resolver) -> Spec:
    """Read the spec in ``resolver``'s root document."""
    doc = resolver.root
    root = doc.root
    source = doc.uri or None
    if not isinstance(root, Mapping):
        raise SpecError("an OpenAPI document must be an object", source=source)
    if "swagger" in root:
        version = str(root["swagger"])
        if version != "2.0":
            raise SpecError(
                f"unsupported Swagger version {version!r}", pointer="/swagger", source=source
            )
    elif "openapi" in root:
        version = str(root["openapi"])
        if not version.startswith("3."):
            raise SpecError(
                f"unsupported OpenAPI version {version!r}", pointer="/openapi", source=source
            )
    else:
        raise SpecError("not an OpenAPI document: no 'openapi' or 'swagger' field", source=source)
    reader = _Reader(resolver, v2=version == "2.0")
    info = _mapping(root.get("info", {}), "/info", source)
    operations, problems = reader.operations()
    return Spec(
        version=version,
        title=str(info.get("title", "")),
        description=str(info.get("description", "")),
        operations=tuple(operations),
        problems=tuple(problems),
        servers=reader.root_servers,
        security_schemes=reader.security_schemes(),
        security=reader.security(root.get("security"), "/security") or (),
    )


def dropped(error: SpecError, pointer: str, source: str | None, what: str) -> SpecError:
    """The problem of an operation (or path item) left out because of ``error``: at the
    operation's pointer, whatever node deeper down (or in another document) broke; logged.
    """
    if error.pointer != pointer or error.source != source:
        problem = SpecError(f"{what} was left out: {error}", pointer=pointer, source=source)
        problem.__cause__ = error
        error = problem
    logger.warning("skipping %s: %s", what, error)
    return error


def _mapping(node: Any, pointer: str, source: str | None) -> Mapping[str, Any]:
    if not isinstance(node, Mapping):
        raise SpecError("must be an object", pointer=pointer, source=source)
    return node


class _Reader:
    def __init__(self, resolver: Resolver, *, v2: bool) -> None:
        self.resolver = resolver
        self.v2 = v2
        self.root: Mapping[str, Any] = resolver.root.root
        self.uri = resolver.root.uri
        self.source = self.uri or None
        self.root_servers = self._v2_servers() if v2 else self.servers(self.root, "")
        # Parameters shared through $ref (components), by their place: read once.
        self._shared: dict[tuple[str, str], Parameter] = {}

    # --- the document ---------------------------------------------------------------

    def operations(self) -> tuple[list[Operation], list[SpecError]]:
        operations: list[Operation] = []
        problems: list[SpecError] = []
        paths = _mapping(self.root.get("paths", {}), "/paths", self.source)
        for path, raw_item in paths.items():
            if isinstance(path, str) and path.startswith("x-"):
                continue  # an extension (OpenAPI allows them here), not a path
            item_pointer = join_pointer("/paths", str(path))
            if not isinstance(path, str) or not path.startswith("/"):
                # The path is appended to the server's URL: any other start names
                # another URL, even another host ("@evil.example/x").
                error = SpecError(
                    "a path must begin with '/' (it is appended to the server's URL)",
                    pointer=item_pointer,
                    source=self.source,
                )
                problems.append(dropped(error, item_pointer, self.source, f"the path {path!r}"))
                continue
            try:
                item, base, _ = self.resolver.resolve(raw_item, self.uri, item_pointer)
                item = _mapping(item, item_pointer, self.source)
                shared = self.parameters(item.get("parameters", ()), base, item_pointer)
                servers = self.servers(item, item_pointer) or self.root_servers
            except SpecError as error:
                problems.append(dropped(error, item_pointer, self.source, f"the path {path}"))
                continue
            for method in METHODS:
                if method not in item:
                    continue
                pointer = join_pointer(item_pointer, method)
                try:
                    operations.append(
                        self.operation(method, path, item[method], base, pointer, shared, servers)
                    )
                except SpecError as error:
                    what = f"{method.upper()} {path}"
                    problems.append(dropped(error, pointer, self.source, what))
        return operations, problems

    def operation(
        self,
        method: HttpMethod,
        path: str,
        node: Any,
        base: str,
        pointer: str,
        shared: Mapping[tuple[str, str], Parameter | _V2Body],
        servers: tuple[Server, ...],
    ) -> Operation:
        op = _mapping(node, pointer, self.source)
        own = self.parameters(op.get("parameters", ()), base, pointer)
        merged = {**shared, **own}
        parameters = tuple(p for p in merged.values() if isinstance(p, Parameter))
        for name in _template_names(path):
            if not any(p.location == "path" and p.name == name for p in parameters):
                raise SpecError(
                    f"the path has {{{name}}} but no path parameter of that name",
                    pointer=pointer,
                    source=self.source,
                )
        _, hash_sign, fragment = path.partition("#")
        for name in _template_names(fragment) if hash_sign else ():
            if name not in _template_names(path.partition("#")[0]):
                # The fragment (APIs.guru's way to tell operations apart) is never sent:
                # the model's value could not be either, and the request would go to
                # another resource (Mastercard's "/send/#env/v1/partners/{partnerId}").
                raise SpecError(
                    f"the path has {{{name}}} after '#': a fragment is never sent, so "
                    f"path parameter {name!r} could not be",
                    pointer=pointer,
                    source=self.source,
                )
        if self.v2:
            bodies = [p for p in merged.values() if isinstance(p, _V2Body)]
            body = self._v2_body(op, bodies, pointer)
        else:
            body = self.body(op.get("requestBody"), base, join_pointer(pointer, "requestBody"))
        operation_id = op.get("operationId")
        tags = op.get("tags", ())
        return Operation(
            method=method,
            path=path,
            pointer=pointer,
            operation_id=str(operation_id) if operation_id is not None else None,
            summary=str(op.get("summary") or ""),
            description=str(op.get("description") or ""),
            tags=tuple(str(t) for t in tags) if isinstance(tags, list) else (),
            deprecated=bool(op.get("deprecated", False)),
            parameters=parameters,
            body=body,
            servers=(servers if self.v2 else self.servers(op, pointer) or servers),
            security=self.security(op.get("security"), join_pointer(pointer, "security")),
            responses=_mapping(op.get("responses", {}), join_pointer(pointer, "responses"), None),
        )

    # --- parameters -----------------------------------------------------------------

    def parameters(
        self, nodes: Any, base: str, pointer: str
    ) -> dict[tuple[str, str], Parameter | _V2Body]:
        if not isinstance(nodes, list | tuple):
            raise SpecError("parameters must be a list", pointer=pointer, source=self.source)
        found: dict[tuple[str, str], Parameter | _V2Body] = {}
        for index, raw in enumerate(nodes):
            where = f"{pointer}/parameters/{index}"
            node, node_base, node_pointer = self.resolver.resolve(raw, base, where)
            shared = self._shared.get((node_base, node_pointer)) if node_pointer != where else None
            if shared is not None:
                found[(shared.location, shared.name)] = shared
                continue
            node = _mapping(node, node_pointer, node_base or None)
            name, location = node.get("name"), node.get("in")
            # A Swagger 2.0 body parameter's name never goes on the wire: it may be "".
            if not isinstance(name, str) or not (name or (self.v2 and location == "body")):
                raise SpecError("a parameter needs a name", pointer=where, source=self.source)
            if self.v2 and location in ("body", "formData"):
                found[(str(location), name)] = _V2Body(
                    location=str(location), node=node, base=node_base, pointer=where
                )
                continue
            if (
                not isinstance(location, str)
                or location not in LOCATIONS
                or (self.v2 and location == "cookie")
            ):
                allowed = (
                    "path, query, header, body, formData"
                    if self.v2
                    else ("path, query, header, cookie")
                )
                raise SpecError(
                    f"parameter {name!r}: 'in' must be one of {allowed}",
                    pointer=where,
                    source=self.source,
                )
            location = cast(Location, location)
            read = self._v2_parameter if self.v2 else self._parameter
            parameter = read(node, name, location, where)
            if node_base != self.resolver.root.uri:  # its schema's $refs are relative there
                parameter = dataclasses.replace(parameter, base=node_base)
            found[(location, name)] = parameter
            if node_pointer != where:
                self._shared[(node_base, node_pointer)] = parameter
        return found

    def _parameter(
        self, node: Mapping[str, Any], name: str, location: Location, pointer: str
    ) -> Parameter:
        style = node.get("style", DEFAULT_STYLES[location])
        if not isinstance(style, str) or style not in STYLES[location]:
            raise SpecError(
                f"parameter {name!r}: style {style!r} is not allowed in {location}",
                pointer=pointer,
                source=self.source,
            )
        schema = node.get("schema")
        content_type = None
        content = node.get("content")
        if schema is None and isinstance(content, Mapping) and content:
            content_type, media = next(iter(content.items()))
            schema = media.get("schema") if isinstance(media, Mapping) else None
        if schema is not None and not isinstance(schema, Mapping):
            raise SpecError(
                f"parameter {name!r}: schema must be an object",
                pointer=pointer,
                source=self.source,
            )
        return _new_parameter(
            node,
            name,
            location,
            schema=schema,
            style=style,
            explode=bool(node.get("explode", style == "form")),
            allow_reserved=bool(node.get("allowReserved", False)),
            content_type=content_type,
        )

    def _v2_parameter(
        self, node: Mapping[str, Any], name: str, location: Location, pointer: str
    ) -> Parameter:
        schema = {k: node[k] for k in _V2_SCHEMA_KEYS if k in node}
        if schema.get("type") == "file":
            raise SpecError(
                f"parameter {name!r}: type 'file' is only allowed in formData",
                pointer=pointer,
                source=self.source,
            )
        style = DEFAULT_STYLES[location]
        explode = style == "form"
        if schema.get("type") == "array":
            style, explode = self._collection_format(node, name, pointer)
            if location in ("path", "header") and style == "form":
                style, explode = "simple", False
        return _new_parameter(node, name, location, schema=schema, style=style, explode=explode)

    def _collection_format(
        self, node: Mapping[str, Any], name: str, pointer: str
    ) -> tuple[str, bool]:
        """The style and explode of a Swagger 2.0 array parameter's ``collectionFormat``
        (``csv`` when it names none)."""
        fmt = node.get("collectionFormat", "csv")
        if not isinstance(fmt, str) or fmt not in _COLLECTION_FORMATS:
            raise SpecError(
                f"parameter {name!r}: collectionFormat {fmt!r} is not one of "
                f"{', '.join(_COLLECTION_FORMATS)}",
                pointer=pointer,
                source=self.source,
            )
        return _COLLECTION_FORMATS[fmt]

    # --- bodies ---------------------------------------------------------------------

    def body(self, raw: Any, base: str, pointer: str) -> Body | None:
        if raw is None:
            return None
        node, node_base, node_pointer = self.resolver.resolve(raw, base, pointer)
        node = _mapping(node, node_pointer, node_base or None)
        content = _mapping(node.get("content", {}), join_pointer(node_pointer, "content"), None)
        media_types: list[MediaType] = []
        for content_type, media in content.items():
            where = join_pointer(node_pointer, "content", content_type)
            media = _mapping(media, where, self.source)
            encodings = _mapping(media.get("encoding", {}), join_pointer(where, "encoding"), None)
            media_types.append(
                MediaType(
                    content_type=content_type,
                    schema=media.get("schema"),
                    base=node_base,
                    encoding={
                        prop: _encoding(_mapping(e, join_pointer(where, "encoding", prop), None))
                        for prop, e in encodings.items()
                    },
                )
            )
        return Body(
            required=bool(node.get("required", False)),
            description=str(node.get("description") or ""),
            media_types=tuple(media_types),
        )

    def _v2_body(
        self, op: Mapping[str, Any], bodies: Sequence[_V2Body], pointer: str
    ) -> Body | None:
        if not bodies:
            return None
        consumes = op.get("consumes") or self.root.get("consumes") or ["application/json"]
        if not isinstance(consumes, list) or not all(isinstance(c, str) for c in consumes):
            where = join_pointer(pointer, "consumes") if op.get("consumes") else "/consumes"
            raise SpecError(
                "consumes must be a list of media types", pointer=where, source=self.source
            )
        body_param = next((b for b in bodies if b.location == "body"), None)
        if body_param is not None:
            node = body_param.node
            schema = node.get("schema", {})
            return Body(
                required=bool(node.get("required", False)),
                description=str(node.get("description") or ""),
                media_types=tuple(
                    MediaType(content_type=c, schema=schema, base=body_param.base) for c in consumes
                ),
            )
        properties: dict[str, Any] = {}
        required: list[str] = []
        encoding: dict[str, Encoding] = {}
        for form in bodies:
            node = form.node
            name = str(node["name"])
            schema = {k: node[k] for k in _V2_SCHEMA_KEYS if k in node}
            if schema.get("type") == "file":
                schema = {"type": "string", "format": "binary"}
            if node.get("description"):
                schema["description"] = node["description"]
            properties[name] = schema
            if node.get("required"):
                required.append(name)
            if schema.get("type") == "array":
                style, explode = self._collection_format(node, name, form.pointer)
                encoding[name] = Encoding(style=style, explode=explode)
        form_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            form_schema["required"] = required
        wanted = [
            c for c in consumes if c in ("multipart/form-data", "application/x-www-form-urlencoded")
        ]
        return Body(
            required=bool(required),
            media_types=tuple(
                MediaType(content_type=c, schema=form_schema, encoding=encoding)
                for c in wanted or ["application/x-www-form-urlencoded"]
            ),
        )

    # --- servers and security -------------------------------------------------------

    def servers(self, node: Mapping[str, Any], pointer: str) -> tuple[Server, ...]:
        raw = node.get("servers")
        if raw is None:
            return ()
        if not isinstance(raw, list):
            where = join_pointer(pointer, "servers")
            raise SpecError("servers must be a list", pointer=where, source=self.source)
        servers = []
        for index, server in enumerate(raw):
            where = join_pointer(pointer, "servers", index)
            server = _mapping(server, where, self.source)
            url = server.get("url")
            if not isinstance(url, str):
                raise SpecError("a server needs a url", pointer=where, source=self.source)
            variables = _mapping(
                server.get("variables", {}), join_pointer(where, "variables"), None
            )
            servers.append(
                Server(
                    url=url,
                    variables={k: _mapping(v, where, None) for k, v in variables.items()},
                    description=str(server.get("description") or ""),
                )
            )
        return tuple(servers)

    def _v2_servers(self) -> tuple[Server, ...]:
        host = self.root.get("host")
        base_path = str(self.root.get("basePath") or "")
        if not host:
            return (Server(url=base_path or "/"),)
        schemes = self.root.get("schemes") or [urlsplit(self.uri).scheme or "https"]
        if not isinstance(schemes, list):
            raise SpecError("schemes must be a list", pointer="/schemes", source=self.source)
        if "https" in schemes:  # prefer the secure one when the API offers both
            schemes = ["https", *[s for s in schemes if s != "https"]]
        return tuple(
            Server(url=f"{scheme}://{host}{base_path}")
            for scheme in schemes
            if scheme in ("http", "https")
        )

    def security(self, raw: Any, pointer: str) -> tuple[Mapping[str, tuple[str, ...]], ...] | None:
        if raw is None:
            return None
        if not isinstance(raw, list):
            raise SpecError("security must be a list", pointer=pointer, source=self.source)
        requirements = []
        for index, requirement in enumerate(raw):
            where = join_pointer(pointer, index)
            requirement = _mapping(requirement, where, self.source)
            for name, scopes in requirement.items():
                if scopes is not None and not (
                    isinstance(scopes, list) and all(isinstance(s, str) for s in scopes)
                ):
                    raise SpecError(
                        f"the scopes of {name!r} must be a list of names",
                        pointer=join_pointer(where, name),
                        source=self.source,
                    )
            requirements.append({name: tuple(scopes or ()) for name, scopes in requirement.items()})
        return tuple(requirements)

    def security_schemes(self) -> dict[str, Mapping[str, Any]]:
        if self.v2:
            raw = self.root.get("securityDefinitions", {})
            pointer = "/securityDefinitions"
        else:
            components = self.root.get("components")
            if components is None:  # "components:" with nothing under it, in YAML
                components = {}
            components = _mapping(components, "/components", self.source)
            raw = components.get("securitySchemes", {})
            pointer = "/components/securitySchemes"
        schemes: dict[str, Mapping[str, Any]] = {}
        for name, node in _mapping(raw, pointer, self.source).items():
            where = join_pointer(pointer, name)
            scheme, _, _ = self.resolver.resolve(node, self.uri, where)
            scheme = _mapping(scheme, where, self.source)
            schemes[name] = _v2_scheme(scheme) if self.v2 else scheme
        return schemes


@dataclass(frozen=True)
class _V2Body:
    """A Swagger 2.0 body or formData parameter, gathered into the body."""

    location: str
    node: Mapping[str, Any]
    base: str
    pointer: str
    """Where it is listed (for errors)."""


def _new_parameter(
    node: Mapping[str, Any], name: str, location: Location, **serialization: Any
) -> Parameter:
    """A parameter: what every spec version says alike, and its serialization rules."""
    return Parameter(
        name=name,
        location=location,
        required=location == "path" or bool(node.get("required", False)),
        description=str(node.get("description") or ""),
        deprecated=bool(node.get("deprecated", False)),
        **serialization,
    )


def _encoding(node: Mapping[str, Any]) -> Encoding:
    explode = node.get("explode")
    return Encoding(
        content_type=node.get("contentType"),
        headers=node.get("headers") or {},
        style=node.get("style"),
        explode=bool(explode) if explode is not None else None,
        allow_reserved=bool(node.get("allowReserved", False)),
    )


def _v2_scheme(scheme: Mapping[str, Any]) -> Mapping[str, Any]:
    """A Swagger 2.0 security definition in its OpenAPI 3 form."""
    kind = scheme.get("type")
    if kind == "basic":
        return {"type": "http", "scheme": "basic"}
    if kind == "oauth2":
        flow = {
            "implicit": "implicit",
            "password": "password",
            "application": "clientCredentials",
            "accessCode": "authorizationCode",
        }.get(str(scheme.get("flow")), "authorizationCode")
        details = {k: scheme[k] for k in ("authorizationUrl", "tokenUrl") if k in scheme}
        return {
            "type": "oauth2",
            "flows": {flow: {**details, "scopes": scheme.get("scopes", {})}},
        }
    return scheme  # apiKey has the same shape


def _template_names(path: str) -> list[str]:
    names = []
    rest = path
    while "{" in rest:
        start = rest.index("{")
        end = rest.find("}", start)
        if end < 0:
            break
        names.append(rest[start + 1 : end])
        rest = rest[end + 1 :]
    return names
