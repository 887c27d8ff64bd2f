"""Independent judges of what `RestApiTool` puts on the wire, for tests over whole specs.

- `ArgumentMaker`: deterministic arguments from the model-facing schema (ours, with
  ``$defs``), the least it requires or everything it allows.
- `CoreJudge`: openapi-core's request validator over an ``httpx2.Request``, reading the
  request as a server would (path segments and query percent-decoded).
- `misread`: what a server reads back from a request, against what the model meant.
- `Prism`, `prism_document`, `prism_shards`, `violations`: Prism mocking a spec's
  requests only (responses are replaced by one ``204``: answering is not judged, and
  GitHub's 422 examples would hide Prism's own verdict), and what it says of a request.
"""

from __future__ import annotations

import base64
import functools
import json
import math
import re
import subprocess
import warnings
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, unquote, urlsplit

import anyio
import httpx2
from jsonschema import Draft202012Validator, FormatChecker
from openapi_core import Config, OpenAPI
from openapi_core.datatypes import RequestParameters
from openapi_core.templating.datatypes import TemplateResult
from openapi_core.templating.paths.datatypes import Path as CorePath
from openapi_core.templating.paths.finders import APICallPathFinder
from openapi_core.templating.paths.iterators import TemplatePathsIterator
from openapi_core.templating.paths.util import template_path_len
from werkzeug.datastructures import Headers, ImmutableMultiDict

from tests.helpers import free_port
from toolsets.cli._example import matching_string
from toolsets.openapi import Operation

__all__ = [
    "ArgumentMaker",
    "CoreJudge",
    "WireRequest",
    "core_errors",
    "GenerationError",
    "Prism",
    "misread",
    "prism_document",
    "prism_shards",
    "violations",
]


# -- arguments -----------------------------------------------------------------------------


class GenerationError(Exception):
    """The schema asks for something this generator cannot make (a judge gap)."""


_FORMATS: Final = {
    "date-time": "2024-05-06T07:08:09Z",
    "date": "2024-05-06",
    "time": "07:08:09Z",
    "email": "octo.cat@example.com",
    "idn-email": "octo.cat@example.com",
    "uri": "https://example.com/a/b?c=d",
    "iri": "https://example.com/a/b?c=d",
    "uri-reference": "https://example.com/a/b?c=d",
    "url": "https://example.com/a/b?c=d",
    "uri-template": "https://example.com/{id}",
    "hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uuid": "123e4567-e89b-12d3-a456-426614174000",
    "byte": "aGVsbG8=",
    "repo.nwo": "octo/hello",
}
"""Fixed values for ``format``s (the numeric ones, ``int64``, ``binary``... constrain
nothing a value of the right type does not already meet)."""
PLAIN: Final = "octocat"
"""A string with nothing to encode."""
TRICKY: Final = "Octo cat/ü+&=%?#,;[]"
"""A string with everything a URL must encode, for the rich arguments."""
_MAX_DEPTH: Final = 12


class ArgumentMaker:
    """Arguments that fit the schema of a tool's arguments (JSON Schema 2020-12).

    ``minimal()`` gives only what is required, with the plainest values; ``rich()`` gives
    every property, nested objects to a few levels, arrays of two, and strings that need
    percent-encoding. Each result is checked against the schema (formats included).
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._root = schema
        self._defs: Mapping[str, Any] = schema.get("$defs", {})
        self._validator = Draft202012Validator(dict(schema), format_checker=FormatChecker())

    def minimal(self) -> dict[str, Any]:
        return self._arguments(rich=False)

    def rich(self) -> dict[str, Any]:
        return self._arguments(rich=True)

    def problems(self, args: Mapping[str, Any]) -> list[str]:
        """Where ``args`` do not fit the schema (empty when they do)."""
        return [
            f"{'.'.join(map(str, error.absolute_path)) or '(arguments)'}: {error.message}"
            for error in self._validator.iter_errors(args)
        ]

    def _arguments(self, *, rich: bool) -> dict[str, Any]:
        value = self._value(self._root, rich=rich, depth=0, variant=0)
        if not isinstance(value, dict):
            raise GenerationError(f"the arguments are not an object: {value!r}")
        problems = self.problems(value)
        if problems:
            raise GenerationError("; ".join(problems))
        return value

    def _fits(self, schema: Mapping[str, Any], value: object) -> bool:
        return bool(self._validator.evolve(schema={**schema, "$defs": self._defs}).is_valid(value))

    def _follow(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while "$ref" in schema:
            ref = schema["$ref"]
            if not ref.startswith("#/$defs/") or seen > _MAX_DEPTH:
                raise GenerationError(f"cannot follow {ref!r}")
            rest = {k: v for k, v in schema.items() if k not in ("$ref", "description")}
            target = self._defs[ref.removeprefix("#/$defs/")]
            schema = {**target, **rest} if rest else target
            seen += 1
        return schema

    def _merged(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """``schema`` with its ``allOf`` members folded in (properties and ``required``
        united; for other keywords the first one wins)."""
        merged = {k: v for k, v in schema.items() if k != "allOf"}
        for member in schema.get("allOf", ()):
            part = self._merged(self._follow(member))
            for key, item in part.items():
                if key == "properties":
                    properties = dict(merged.get("properties", {}))
                    for name, sub in item.items():
                        properties[name] = (
                            {"allOf": [properties[name], sub]} if name in properties else sub
                        )
                    merged["properties"] = properties
                elif key == "required":
                    merged["required"] = [*merged.get("required", ()), *item]
                else:
                    merged.setdefault(key, item)
        return merged

    def _value(self, schema: Any, *, rich: bool, depth: int, variant: int) -> Any:
        if depth > _MAX_DEPTH:
            raise GenerationError("the schema nests too deeply (a required cycle?)")
        if schema is True or schema == {}:
            return PLAIN if not variant else f"{PLAIN}{variant}"
        if not isinstance(schema, Mapping):
            raise GenerationError(f"no value fits {schema!r}")
        schema = self._merged(self._follow(schema))
        choices = schema.get("anyOf") or schema.get("oneOf")
        if choices:
            return self._choice(schema, choices, rich=rich, depth=depth, variant=variant)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            options = [item for item in schema["enum"] if item is not None] or [None]
            index = (len(options) - 1 if rich else 0) + variant
            return options[index % len(options)]
        kind = schema.get("type")
        if isinstance(kind, list):
            kinds = [k for k in kind if k != "null"] or ["null"]
            kind = kinds[0]
        if kind is None:
            kind = _implied_type(schema)
        maker = _MAKERS.get(kind)
        if maker is None:
            raise GenerationError(f"unknown type {kind!r}")
        return getattr(self, maker)(schema, rich, depth, variant)  # a subclass's own

    def _choice(
        self,
        schema: Mapping[str, Any],
        choices: list[Any],
        *,
        rich: bool,
        depth: int,
        variant: int,
    ) -> Any:
        outer = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        ranked = sorted(choices, key=lambda c: self._follow(c).get("type") == "null")
        for choice in ranked:
            for richness in (rich, False) if rich else (False,):
                try:
                    candidate = self._value(
                        {"allOf": [outer, choice]}, rich=richness, depth=depth + 1, variant=variant
                    )
                except GenerationError:
                    continue
                if self._fits(schema, candidate):
                    return candidate
        raise GenerationError("no branch of anyOf/oneOf could be met")

    def _object(
        self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int
    ) -> dict[str, Any]:
        properties: Mapping[str, Any] = schema.get("properties", {})
        required = list(dict.fromkeys(schema.get("required", ())))
        wanted = list(properties) if rich and depth < 4 else required
        value: dict[str, Any] = {}
        for name in dict.fromkeys([*wanted, *required]):
            sub = properties.get(name, schema.get("additionalProperties", {}))
            value[name] = self._value(sub, rich=rich, depth=depth + 1, variant=variant)
        extra = schema.get("additionalProperties")
        wanted_extra = max(schema.get("minProperties", 0) - len(value), 0)
        if rich and not properties and isinstance(extra, Mapping) and extra != {"not": {}}:
            wanted_extra = max(wanted_extra, 1)
        for index in range(wanted_extra):
            sub = extra if isinstance(extra, Mapping) else {}
            value[f"key{index + 1}"] = self._value(sub, rich=rich, depth=depth + 1, variant=index)
        return value

    def _array(self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int) -> list[Any]:
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", math.inf)
        count = int(min(max(low, 2 if rich else 0), high))
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", {})
        value: list[Any] = []
        for index in range(count):
            sub = prefix[index] if index < len(prefix) else items
            value.append(self._value(sub, rich=rich, depth=depth + 1, variant=index))
        distinct = {json.dumps(item, sort_keys=True) for item in value}
        if schema.get("uniqueItems") and len(distinct) < len(value):
            value = value[: max(low, 1)]  # variants that came out alike: keep the fewest
        return value

    def _string(self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int) -> str:
        text: str
        if schema.get("format") in _FORMATS:
            text = _FORMATS[schema["format"]]
            if variant and schema["format"] in ("email", "hostname"):
                text = f"v{variant}.{text}"
            elif variant and schema["format"].startswith(("ur", "ir")):
                text = f"{text}{variant}"
        elif "pattern" in schema:
            text = _matching(schema["pattern"])
        else:
            text = TRICKY if rich else PLAIN
            if variant:
                text = f"{text}{variant}"
        low = schema.get("minLength", 0)
        high = schema.get("maxLength", math.inf)
        if len(text) < low:
            text += "x" * (low - len(text))
        if len(text) > high:
            text = text[: int(high)]
        return text

    def _integer(self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int) -> int:
        return int(_number_in(schema, rich, variant, whole=True))

    def _number(self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int) -> float:
        return _number_in(schema, rich, variant, whole=False)

    def _boolean(self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int) -> bool:
        return (variant % 2 == 0) != rich

    def _null(self, schema: Mapping[str, Any], rich: bool, depth: int, variant: int) -> None:
        return None


_MAKERS: Final[dict[str, str]] = {
    kind: f"_{kind}"
    for kind in ("object", "array", "string", "integer", "number", "boolean", "null")
}


def _implied_type(schema: Mapping[str, Any]) -> str:
    if any(k in schema for k in ("properties", "additionalProperties", "required")):
        return "object"
    if any(k in schema for k in ("items", "prefixItems", "minItems", "maxItems")):
        return "array"
    if any(k in schema for k in ("minimum", "maximum", "multipleOf")):
        return "number"
    return "string"


def _number_in(schema: Mapping[str, Any], rich: bool, variant: int, *, whole: bool) -> float:
    step = schema.get("multipleOf", 1 if whole else None)
    low = schema.get("minimum", -math.inf)
    if "exclusiveMinimum" in schema:
        low = max(low, schema["exclusiveMinimum"] + (1 if whole else 0.5))
    high = schema.get("maximum", math.inf)
    if "exclusiveMaximum" in schema:
        high = min(high, schema["exclusiveMaximum"] - (1 if whole else 0.5))
    if rich:
        value = high - variant if math.isfinite(high) else 42.5 + variant
    else:
        value = low + variant if math.isfinite(low) else 1 + variant
    value = min(max(value, low), high)
    if step:
        value = math.ceil(value / step) * step
        if value > high:
            value -= step
    return int(value) if whole else value


def _matching(pattern: str) -> str:
    """A short string ``re.search(pattern, ...)`` accepts (the command line's example
    maker writes it)."""
    made = matching_string(pattern)
    if made is None:
        raise GenerationError(f"cannot make a string matching {pattern!r}")
    return made


# -- openapi-core --------------------------------------------------------------------------


class _DecodedPathParameters(RequestParameters):
    """openapi-core fills ``path`` with the raw segments it matched; a server decodes
    them before handing them to the application."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "path":
            value = {key: unquote(text) for key, text in value.items()}
        super().__setattr__(name, value)


@dataclass(frozen=True)
class WireRequest:
    """A request as it goes on the wire, in a form that can cross to a worker process."""

    method: str
    target: str
    """The raw path and query, percent-encoded as sent."""
    headers: tuple[tuple[str, str], ...]
    content: bytes

    @classmethod
    def of(cls, request: httpx2.Request) -> WireRequest:
        return cls(
            request.method,
            request.url.raw_path.decode("ascii"),
            tuple(request.headers.multi_items()),
            request.content,
        )

    def header(self, name: str) -> str:
        return next((value for key, value in self.headers if key.lower() == name), "")


class _CoreRequest:
    """A `WireRequest` as openapi-core's ``Request`` protocol, read the way a server
    reads it: routed on the raw path, segments and query pairs percent-decoded (``+`` in
    the query is a space), blank query values kept."""

    def __init__(self, request: WireRequest, host_url: str) -> None:
        path, _, query = request.target.partition("?")
        self.host_url = host_url
        self.path = path
        self.method = request.method.lower()
        cookies = [piece.strip().split("=", 1) for piece in request.header("cookie").split(";")]
        self.parameters = _DecodedPathParameters(
            query=ImmutableMultiDict(parse_qsl(query, keep_blank_values=True)),
            header=Headers(list(request.headers)),
            cookie=ImmutableMultiDict([(c[0], unquote(c[-1])) for c in cookies if c[0]]),
        )
        # As sent: openapi-core matches the spec's media type as written first (a spec's
        # "application/JSON"), then in lower case.
        self.content_type = request.header("content-type")
        self.body = request.content or None


class _ListedPaths(TemplatePathsIterator):
    """openapi-core's own template routing, with the spec's paths listed once (listing
    them for every request costs ~40 ms on GitHub's 900 paths), and a template's regex
    tried only when the URL ends with the template's literal tail, which it must."""

    def __init__(self) -> None:
        super().__init__("paths")
        self._listed: list[tuple[str, str, Any]] | None = None

    def __call__(self, name: str, spec: Any, base_url: str | None = None) -> Iterator[CorePath]:
        if self._listed is None:
            self._listed = [
                (pattern, pattern.rpartition("}")[2], path)
                for pattern, path in (spec / self.paths_part).str_items()
            ]
        templated: list[CorePath] = []
        for pattern, tail, path in self._listed:
            if not name.endswith(tail):
                continue
            if name.endswith(pattern):
                yield CorePath(path, TemplateResult(pattern, {}))
            else:
                result = self._get_path_parser(pattern).search(name)
                if result:
                    templated.append(CorePath(path, TemplateResult(pattern, result.named)))
        yield from sorted(templated, key=template_path_len)


class CoreJudge:
    """openapi-core's verdict on requests against one spec (loaded without validating
    the spec itself, which costs ~23 s on GitHub's)."""

    def __init__(self, spec: Mapping[str, Any]) -> None:
        finder = type("Finder", (APICallPathFinder,), {"paths_iterator": _ListedPaths()})
        # None turns the spec check off (openapi-core's documented way; typed as Unset only)
        config = Config(spec_validator_cls=None, path_finder_cls=finder)  # type: ignore[arg-type]
        self._openapi = OpenAPI.from_dict(dict(spec), config=config)

    def errors(self, request: httpx2.Request | WireRequest, server: str) -> list[str]:
        """openapi-core's complaints about ``request`` (empty when it is valid), as if it
        had been sent to ``server`` (the operation's server URL in the spec)."""
        if isinstance(request, httpx2.Request):
            request = WireRequest.of(request)
        parts = urlsplit(server)
        adapted = _CoreRequest(request, f"{parts.scheme}://{parts.netloc}")
        with warnings.catch_warnings():
            # Sending a deprecated parameter is allowed; openapi-core warns of it.
            warnings.filterwarnings("ignore", "[^ ]+ parameter is deprecated", DeprecationWarning)
            errors = self._openapi.iter_request_errors(adapted)  # type: ignore[arg-type]
            return [_describe(error) for error in errors]


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    for inner in getattr(error, "schema_errors", ()) or ():
        text += f" [{'.'.join(map(str, inner.absolute_path))}: {inner.message}]"
    if error.__cause__ is not None and not getattr(error, "schema_errors", None):
        text += f" ({_describe(error.__cause__)})"
    return text


@functools.cache
def _judge_of(spec_path: str) -> CoreJudge:
    return CoreJudge(json.loads(Path(spec_path).read_text()))


def core_errors(spec_path: str, batch: list[tuple[WireRequest, str]]) -> list[list[str]]:
    """`CoreJudge.errors` for each ``(request, server)``, for a worker process
    (`anyio.to_process.run_sync`): it loads the spec's judge once and keeps it, and
    openapi-core's ~10 ms a request leaves the test's own process free."""
    judge = _judge_of(spec_path)
    return [judge.errors(request, server) for request, server in batch]


# -- Prism ---------------------------------------------------------------------------------


_METHODS: Final = frozenset(("get", "put", "post", "delete", "options", "head", "patch", "trace"))


def prism_shards(spec: Mapping[str, Any], count: int) -> list[list[str]]:
    """``spec``'s paths in ``count`` runs of neighbouring paths with about as many
    operations each. Prism sorts every operation of its document for each request it
    routes (~40 ms a request on all of GitHub's), so several smaller Prisms judge faster."""
    paths = sorted(spec["paths"])
    weights = [len(_METHODS.intersection(spec["paths"][path])) for path in paths]
    share = sum(weights) / count
    shards: list[list[str]] = [[] for _ in range(count)]
    done = 0
    for path, weight in zip(paths, weights, strict=True):
        shards[min(int(done / share), count - 1)].append(path)
        done += weight
    return shards


def prism_document(spec: Mapping[str, Any], paths_kept: Collection[str]) -> dict[str, Any]:
    """``spec`` with only ``paths_kept``, as Prism should see it to judge requests: every
    operation answers one ``204``; extensions, webhooks and components no request refers
    to are left out (they only slow Prism's start). Parameters, bodies and their schemas
    are untouched."""
    paths: dict[str, Any] = {}
    for path, item in spec["paths"].items():
        if path not in paths_kept:
            continue
        kept = {}
        for key, node in item.items():
            if isinstance(node, Mapping) and "responses" in node:
                node = {**node, "responses": {"204": {"description": "judged"}}}
            kept[key] = node
        paths[path] = _without_extensions(kept)
    components: dict[str, dict[str, Any]] = {}
    todo: list[Any] = [paths]
    seen: set[str] = set()
    while todo:
        node = todo.pop()
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref not in seen:
                seen.add(ref)
                _, _, kind, name = ref.split("/")
                target = _without_extensions(spec["components"][kind][name])
                components.setdefault(kind, {})[name] = target
                todo.append(target)
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    document = {k: spec[k] for k in ("openapi", "info", "servers") if k in spec}
    return {**document, "paths": paths, "components": components}


def _without_extensions(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: _without_extensions(v) for k, v in node.items() if not k.startswith("x-")}
    if isinstance(node, list):
        return [_without_extensions(v) for v in node]
    return node


_PORTS_GIVEN: set[int] = set()
"""Ports handed to a Prism in this process: never handed out twice."""


@dataclass
class Prism:
    """``prism mock`` on a spec file, on a free port of 127.0.0.1."""

    node: Path
    cli: Path
    document: Path
    log: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Starts the process; `wait_ready` waits for it to listen."""
        port = free_port()
        while port in _PORTS_GIVEN:  # the OS may hand a closed port out again
            port = free_port()
        _PORTS_GIVEN.add(port)
        self.port = port
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [
                    *(str(self.node), str(self.cli), "mock", "-v", "error"),
                    *("-h", "127.0.0.1", "-p", str(self.port), str(self.document)),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    async def wait_ready(self, within: float) -> None:
        """Returns once Prism listens; raises if it exits or is not up ``within`` s. A
        port taken meanwhile by another process (between choosing it and Prism binding
        it) is retried on another port, twice at most."""
        assert self.process is not None
        try:
            with anyio.fail_after(within):
                for _attempt in range(3):
                    while self.process.poll() is None:
                        try:
                            stream = await anyio.connect_tcp("127.0.0.1", self.port)
                        except OSError:
                            await anyio.sleep(0.2)  # starting: nothing to wait on but the port
                            continue
                        await stream.aclose()
                        return
                    if "EADDRINUSE" not in self._tail():
                        break
                    self.start()
        except TimeoutError:
            raise RuntimeError(f"prism did not listen within {within} s: {self._tail()}") from None
        raise RuntimeError(f"prism exited with {self.process.returncode}: {self._tail()}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.kill()  # a mock keeps nothing worth a graceful stop
            self.process.wait(10)
        self.process = None

    def _tail(self) -> str:
        return self.log.read_text(errors="replace")[-2000:]


def violations(status: int, body: object) -> list[str]:
    """Prism's complaints in its answer (none for a success): the ``validation`` items
    of its 422, else the problem it reports (404 no route, 405, 415...)."""
    if status < 400:
        return []
    if isinstance(body, Mapping) and isinstance(body.get("validation"), list):
        return [
            f"{'.'.join(map(str, item.get('location', ())))}: {item.get('message')}"
            for item in body["validation"]
        ]
    if isinstance(body, Mapping) and "type" in body:
        return [f"{status} {body.get('type')}: {body.get('detail') or body.get('title')}"]
    return [f"{status}: {json.dumps(body)[:300]}"]


# -- what a server reads -------------------------------------------------------------------


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise GenerationError(f"no plain text for {value!r} (a judge gap: not in this spec)")


def misread(operation: Operation, args: Mapping[str, Any], request: httpx2.Request) -> list[str]:
    """Where what a server reads from ``request`` differs from the model's ``args``: path
    segments and query pairs percent-decoded, the body parsed by its media type.

    Parameters are read in their default styles (``simple`` path, ``form`` exploded
    query), the only ones GitHub's spec uses; argument names follow the toolset's rule
    (a body property named like a parameter is ``body_<name>``)."""
    problems: list[str] = []
    raw = request.url.raw_path.decode("ascii")
    path, _, query = raw.partition("?")
    names = {p.name for p in operation.parameters}
    segments = re.fullmatch(_template_regex(operation.path), path)
    if segments is None:
        return [f"path {path!r} does not fit {operation.path!r}"]
    for name, text in zip(_template_names(operation.path), segments.groups(), strict=True):
        if name in args and unquote(text) != _text(args[name]):
            problems.append(f"path {name}: read {unquote(text)!r}, meant {args[name]!r}")
    read = parse_qsl(query, keep_blank_values=True)
    meant: list[tuple[str, str]] = []
    for param in operation.parameters:
        if param.location == "query" and param.name in args:
            value = args[param.name]
            items = value if isinstance(value, list) else [value]
            meant.extend((param.name, _text(item)) for item in items)
    if sorted(read) != sorted(meant):
        problems.append(f"query: read {read!r}, meant {meant!r}")
    problems.extend(_misread_body(args, names, request))
    return problems


def _template_regex(template: str) -> str:
    return "".join(
        "([^/]+)" if piece.startswith("{") else re.escape(piece)
        for piece in re.split(r"(\{[^}]+\})", template)
    )


def _template_names(template: str) -> list[str]:
    return re.findall(r"\{([^}]+)\}", template)


def _misread_body(args: Mapping[str, Any], names: set[str], request: httpx2.Request) -> list[str]:
    lifted = {
        (key.removeprefix("body_") if key.removeprefix("body_") in names else key): value
        for key, value in args.items()
        if key not in names
    }
    content_type = request.headers.get("content-type", "")
    if not request.content:
        return [f"body: none sent, meant {lifted!r}"] if lifted else []
    kind = content_type.split(";")[0].strip().lower()
    body: object
    if kind == "application/json":
        try:
            body = json.loads(request.content)
        except ValueError:
            return [f"body: not JSON: {request.content[:200]!r}"]
    elif kind.startswith("text/"):
        body = request.content.decode("utf-8")
    else:
        file = args.get("body")
        if isinstance(file, Mapping):  # a file object: its bytes go as they are
            sent = (
                base64.b64decode(file["content_base64"] + "==")
                if "content_base64" in file
                else str(file.get("content", "")).encode()
            )
            return [] if request.content == sent else [f"body: read {request.content[:80]!r}"]
        body = request.content.decode("utf-8", "replace")
    if body != lifted and ("body" not in args or body != args["body"]):
        return [f"body: read {body!r} as {content_type!r}, meant {lifted!r}"]
    return []
