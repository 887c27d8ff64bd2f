"""`RestApiTool`: one operation as a tool. It declares the operation, checks the model's
arguments against it and asks for the user's credential when the toolset holds none;
its `RestApi` builds the request exactly as the spec says, sends it and turns the
response into a result for the model."""

from __future__ import annotations

import copy
import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx2

from toolsets._auth import AuthConfig, AuthCredential
from toolsets._confirmed import ConfirmPolicy, confirm_rule
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._errors import SpecError, ToolDefinitionError
from toolsets._gc import collector_paused
from toolsets._json import JsonValue
from toolsets._paging import next_page_for
from toolsets._results import error_result, invalid_arguments_result
from toolsets._tool import BaseTool
from toolsets._validation import ArgumentChecker
from toolsets.openapi._api import RestApi
from toolsets.openapi._budget import fit_declaration
from toolsets.openapi._model import Operation
from toolsets.openapi._oauth import is_expired
from toolsets.openapi._operations import dropped
from toolsets.openapi._request import RequestBuilder
from toolsets.openapi._returns import SuccessResponse, success_response
from toolsets.openapi._schema import OperationSchema, SchemaBuilder, plain_text
from toolsets.openapi._security import (
    Requirement,
    check_credential,
    credential_problem_for,
    missing_credential,
)
from toolsets.openapi._serialize import SerializationError

__all__ = ["OperationSchemas", "RestApiTool"]

logger = logging.getLogger("toolsets.openapi")

_READ_ONLY_METHODS = frozenset(("get", "head", "options"))
_DESTRUCTIVE_METHODS = frozenset(("delete", "put", "patch"))
"""Methods that may remove or overwrite what is there (a PUT replaces the whole resource,
a PATCH changes it): destructive in MCP's sense. A POST is taken to add (use the
``writes`` policy for APIs whose POSTs do more)."""

_INTEGER = re.compile(r"-?[0-9]{1,18}")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


class OperationSchemas:
    """The schemas of one spec's operations, each built the first time its tool needs it
    (a catalogue is listed without translating its schemas): one at a time, as the
    builder's definitions are shared. Remembers the operations whose schema is broken.

    Args:
        builder: The spec's schema builder.
        source: The spec's URI, for the problems (``""``: none).
    """

    def __init__(self, builder: SchemaBuilder, source: str) -> None:
        self._builder = builder
        self._source = source
        self._lock = threading.Lock()  # held while building, never across an await
        self._failed_lock = threading.Lock()  # held to write or copy `failed`, briefly
        self.failed: dict[str, SpecError] = {}
        """The problem of each operation (by its pointer) whose schema could not be
        built, in the order they were found (`broken` copies them from any thread)."""

    def broken(self) -> tuple[SpecError, ...]:
        """The problems found so far, in order: safe while another thread builds."""
        with self._failed_lock:
            return tuple(self.failed.values())

    def of(self, op: Operation) -> OperationSchema:
        """The schema of ``op``'s arguments.

        Raises:
            SpecError: it cannot be built (at the operation's pointer, the cause
                naming the node that broke); logged the first time.
        """
        with self._lock:
            failed = self.failed.get(op.pointer)
            if failed is None:
                try:
                    return self._builder.operation(op, self._source)
                except SpecError as error:
                    what = f"{op.method.upper()} {op.path}"
                    failed = dropped(error, op.pointer, self._source or None, what)
                    with self._failed_lock:
                        self.failed[op.pointer] = failed
                    raise failed from failed.__cause__
        # A fresh error each time, chained to the one kept: the kept one's traceback
        # does not grow with every raise.
        raise copy.copy(failed) from failed


@dataclass(frozen=True, slots=True)
class _Built:
    """What a tool makes of its operation's schema, on first need."""

    schema: OperationSchema
    checker: ArgumentChecker
    request: RequestBuilder
    description: str
    """The description the model is sent (cut when it alone breaks the budget)."""
    parameters: Mapping[str, Any]
    """The schema the model is sent (summarized to fit the budget)."""


class RestApiTool(BaseTool):
    """One API operation. Made by `OpenApiToolset`; the model's arguments are checked
    against the operation's whole schema before anything is sent.

    Its schema is built the first time its declaration is asked for or it is called. A
    spec whose schema for this operation is broken makes it a tool no model is offered
    (`declaration` is None) and whose calls are an error result naming the JSON pointer
    (nothing is sent); the problem is logged once, kept in the toolset's `problems`, and
    the toolset leaves the tool out of its next listings.
    """

    _schemas: OperationSchemas | None = None  # until made (BaseTool checks the rest)
    _built: _Built | None = None

    def __init__(
        self,
        name: str,
        operation: Operation,
        schemas: OperationSchemas,
        api: RestApi,
        *,
        base_url: str | None,
        confirm: ConfirmPolicy,
        declaration_budget: int | None = None,
    ) -> None:
        method = operation.method
        super().__init__(
            name,
            _description(operation),
            title=operation.summary or None,
            annotations=ToolAnnotations(
                read_only=method in _READ_ONLY_METHODS,
                destructive=(
                    method in _DESTRUCTIVE_METHODS if method not in _READ_ONLY_METHODS else None
                ),
                idempotent=method in ("get", "head", "options", "put", "delete"),
                open_world=True,
            ),
            auth_config=missing_credential(operation, api.spec, api.credentials),
        )
        self._confirm = confirm_rule(confirm)
        self.operation = operation
        """The operation this tool calls."""
        self._schemas = schemas
        self._budget = declaration_budget
        self._api = api
        self._base_url = base_url or ""
        """Where requests go (``""``: nowhere known; a call raises)."""

    def _build(self) -> _Built:
        """The schema and what is made of it, built on first need (two threads may both
        build it: the same thing, and one is kept).

        Raises:
            SpecError: the operation's schema is broken.
        """
        built = self._built
        if built is None:
            with collector_paused():  # many long-lived objects, no cycles (see _gc)
                built = self._built = self._make()
        return built

    def _built_or_broken(self) -> _Built | SpecError:
        """`_build`'s answer, or the problem of a broken schema (logged and kept in the
        toolset's `problems` the first time it is found)."""
        built = self._built
        if built is not None:  # every call but the first
            return built
        try:
            return self._build()
        except SpecError as error:
            return error

    def _make(self) -> _Built:
        assert self._schemas is not None, "used before it was made"
        schema = self._schemas.of(self.operation)
        bodies = [key for key, argument in schema.arguments.items() if argument.location == "body"]
        description, parameters = fit_declaration(
            self.description, schema.parameters, self._budget, bodies=bodies
        )
        return _Built(
            schema=schema,
            checker=ArgumentChecker(schema.parameters, tool_name=self.name),
            request=RequestBuilder(
                self.name,
                self.operation,
                schema,
                self._api.spec,
                base_url=self._base_url,
                headers=self._api.headers,
                follow=self._api.follow,
            ),
            description=description,
            parameters=parameters,
        )

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The JSON Schema of the arguments as the model is sent it: within the
        toolset's ``declaration_budget``, deep branches summarized (`arguments_schema`
        is the whole one, which calls are checked against).

        Raises:
            SpecError: the operation's schema is broken.
        """
        if self._schemas is None:  # BaseTool checking its declaration, while it is made
            return super().parameters
        return self._build().parameters

    @property
    def arguments_schema(self) -> Mapping[str, Any]:
        """The whole JSON Schema of the arguments, which calls are checked against.

        Raises:
            SpecError: the operation's schema is broken.
        """
        return self._build().schema.parameters

    def declaration(self) -> ToolDeclaration | None:
        """As `BaseTool.declaration`, within the toolset's ``declaration_budget``: the
        view the model is sent. None when the operation's schema is broken: no model is
        offered the tool (the problem is in the toolset's `problems`)."""
        built = self._built_or_broken()
        if isinstance(built, SpecError):
            return None
        return self._declared(built.description, built.parameters)

    def call_declaration(self) -> ToolDeclaration | None:
        """The declaration calls are made under (`Tool.call_declaration`):
        `declaration` with the whole arguments schema (`arguments_schema`), which the
        call path checks arguments against before asking the user to confirm. None
        when the operation's schema is broken."""
        built = self._built_or_broken()
        if isinstance(built, SpecError):
            return None
        whole = built.schema.parameters
        if whole is built.parameters:
            return self._declared(built.description, whole)
        return self._declared(self.description, whole)

    def idempotency_key_argument(self) -> str | None:
        """The argument that carries the operation's ``Idempotency-Key`` header, when it
        declares one (None otherwise, or when its schema is broken): a call given the
        same key again has no further effect, so a retry may repeat even a POST."""
        built = self._built_or_broken()
        if isinstance(built, SpecError):
            return None
        for argument, where in built.schema.arguments.items():
            if where.location == "header" and where.name.lower() == "idempotency-key":
                return argument
        return None

    def _declared(self, description: str, parameters: Mapping[str, Any]) -> ToolDeclaration:
        return ToolDeclaration(
            name=self.name,
            description=description,
            parameters=parameters,
            response=self.response_schema,
            title=self.title,
            annotations=self.annotations,
        )

    def success_response(self) -> SuccessResponse | None:
        """What a successful call returns, as the spec describes it (its lowest 2xx
        response, else ``2XX`` or ``default``), for people reading about the tool: it is
        not declared to the model (not `response_schema`: served over MCP, that would
        make every result match it, and real APIs often answer beyond their specs).
        None when the spec declares no such response.

        Raises:
            SpecError: a ``$ref`` on the way cannot be followed.
        """
        api = self._api
        return success_response(self.operation, api.resolver, swagger=api.spec.version == "2.0")

    @property
    def base_url(self) -> str | None:
        """Where its requests go: ``base_url=``, else the spec's server URL made
        absolute; None when there is none (it can be listed, not called)."""
        return self._base_url or None

    def confirmation_hint(self, args: Mapping[str, Any], *, name: str | None = None) -> str:
        """What the user is asked: the request about to be sent, and the tool that sends it
        (``name``: the name the user knows it by, under ``prefixed`` or ``renamed``)."""
        shown = json.dumps(dict(args), default=repr, ensure_ascii=False, sort_keys=True)
        operation = self.operation
        return (
            f"Allow {operation.method.upper()} {operation.path} (the tool "
            f"{name or self.name!r}) with {shown}?"
        )

    def requires_confirmation(self, args: Mapping[str, Any]) -> bool:
        """As the toolset's ``confirm`` says: the check `confirmed` makes (over the
        method-derived hints: GET, HEAD, OPTIONS read-only; DELETE, PUT, PATCH
        destructive). Never for an operation whose schema is broken: its calls send
        nothing (an error result says why)."""
        if isinstance(self._built_or_broken(), SpecError):
            return False
        return self._confirm(self, args)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        self._check_base()
        built = self._built_or_broken()
        if isinstance(built, SpecError):  # nothing is sent
            return error_result(
                f"{self.name} cannot be called: the API's description of this operation "
                f"is broken ({built})",
                pointer=built.pointer,
            )
        if type(args) is dict or isinstance(args, Mapping):
            # null for an optional argument: not given (as strict hosts send it)
            args = built.checker.without_null_options(args)
        problems = self._check(built, args)
        if problems:
            return invalid_arguments_result(problems)
        asked = self.auth_config
        user = ctx.auth_credential if asked is not None else None
        if asked is not None and user is not None:
            if is_expired(user):
                return self._ask_again(ctx, asked, "has expired")
            problem = credential_problem_for(asked.scheme, user)
            if problem is not None:  # e.g. pasted with a newline: the user can fix it
                logger.warning(
                    "%s: the credential given for security scheme %r %s; asking again",
                    self.name,
                    asked.scheme_name,
                    problem,
                )
                return self._ask_again(ctx, asked, problem)
        page = next_page_for(self)
        try:
            status, result = await self._api.call(
                self.name,
                built.request,
                self.operation,
                args,
                user=(asked.scheme_name, user) if asked is not None and user is not None else None,
                base_url=self._base_url,
                next_page=page,
            )
        except SerializationError as error:
            return invalid_arguments_result([(built.request.argument_of(error), str(error))])
        if page is not None and status is not None and status < 300:
            page.arguments = _page_arguments(built.schema, page.url) if page.url else {}
        if status == 401 and asked is not None and user is not None:
            return self._ask_again(ctx, asked, "was refused (HTTP 401)", result)
        return result

    def _ask_again(
        self, ctx: ToolContext, asked: AuthConfig, why: str, result: JsonValue = None
    ) -> JsonValue:
        """The user's credential is no good: ask for a new one (the call pauses and runs
        again with it), or, outside an agent, say so."""
        message = f"the credential for security scheme {asked.scheme_name!r} {why}"
        if ctx.function_call_id is None:
            return result if result is not None else error_result(message)
        ctx.request_credential(asked)
        return error_result(message + "; a new one was asked for")

    def _check(self, built: _Built, args: Mapping[str, Any]) -> list[tuple[str, str]]:
        """What is wrong with ``args``: each field's path and problem."""
        received: object = args  # typed as a Mapping, but it is whatever the model sent
        checker = built.checker
        if type(received) is not dict and not isinstance(received, Mapping):
            return checker.problems(received)
        problems: list[tuple[str, str]] = []
        taken = built.schema.arguments
        if not built.schema.extra_to_body and not args.keys() <= taken.keys():
            # One problem per unknown name; the rest is checked as usual.
            problems.extend(checker.unknown(args, taken))
            args = {key: value for key, value in args.items() if key in taken}
        problems.extend(checker.problems(args))
        return problems

    def build_request(
        self,
        args: Mapping[str, Any],
        *,
        credentials: Mapping[str, AuthCredential | str] | None = None,
        requirement: Requirement | None = None,
    ) -> httpx2.Request:
        """The request for ``args`` (already checked), with ``credentials`` for
        ``requirement`` (by default: the toolset's given keys and tokens, for the first
        alternative they meet; tokens still to be fetched are not included).

        Raises:
            AuthError: a credential given here cannot be carried by any request.
            SerializationError: a value cannot be sent as the spec says.
        """
        self._check_base()
        if credentials is None:
            credentials, requirement = self._api.given_credentials(self.operation)
        else:
            for name, credential in credentials.items():
                scheme = self._api.spec.security_schemes.get(name)
                if scheme is not None:
                    check_credential(name, scheme, credential)
        request = self._build().request
        return request.build(args, credentials, requirement, self._api.clients.template)

    def _check_base(self) -> None:
        """Raise, naming what to pass, when the spec's server URL could not be made
        absolute (the tool can be listed and inspected, but not called)."""
        if self._base_url:
            return
        servers = self.operation.servers
        where = (
            f"its server URL {servers[0].url!r} is relative"
            if servers
            else "the spec names no server"
        )
        raise ToolDefinitionError(
            f"{self.name}: {where} and the spec was not loaded from an http(s) URL to "
            "resolve it against: pass base_url= (the API's URL) or spec_url= (the "
            "spec's) to OpenApiToolset",
            tool_name=self.name,
        )


def _page_arguments(schema: OperationSchema, url: str) -> dict[str, Any]:
    """The arguments of the operation that ask for the page at ``url`` (same operation,
    its query parameters by their wire names; an integer, number or boolean argument's
    value as such when it reads as one)."""
    query = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
    properties = schema.parameters.get("properties", {})
    found: dict[str, Any] = {}
    for argument, where in schema.arguments.items():
        if where.location != "query" or where.name not in query:
            continue
        text = query[where.name]
        declared = properties.get(argument, {}) if isinstance(properties, Mapping) else {}
        kind = declared.get("type") if isinstance(declared, Mapping) else None
        found[argument] = _typed(text, kind)
    return found


def _typed(text: str, kind: object) -> Any:
    """``text`` as the JSON type ``kind`` names, when it reads as one."""
    if kind in ("integer", "number") and _INTEGER.fullmatch(text):
        return int(text)
    if kind == "number" and _NUMBER.fullmatch(text):
        return float(text)
    if kind == "boolean" and text in ("true", "false"):
        return text == "true"
    return text


def _description(op: Operation) -> str:
    text = op.summary
    if op.description and op.description != op.summary:
        text = f"{text}\n\n{op.description}" if text else op.description
    if op.deprecated:
        text = f"(Deprecated.) {text}"
    return plain_text(text) or f"{op.method.upper()} {op.path}"
