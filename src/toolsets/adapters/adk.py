"""google-adk: any toolset as an ADK toolset, and ADK tools as a toolset.

Out: `AdkToolset` is an ADK ``BaseToolset`` that lists the wrapped toolset's tools on
each invocation, each an `AdkTool` (an ADK ``BaseTool``) calling the tool through
toolsets' one call path. What ADK has, the call keeps: the user, session, state (writes
land in ADK's state delta), call id, the user's message and the artifact service reach
the tool's `ToolContext`; the actions the tool sets (state, artifacts,
``skip_summarization``, ``escalate``, a transfer) become ADK's; arguments that do not fit
the schema come back to the model as an error result naming the field.

- A call that needs the user's approval asks through ADK's ``request_confirmation`` (the
  client sees an ``adk_request_confirmation`` function call); approved, it runs once;
  declined, it never runs and the model is told so.
- A tool that needs a credential takes the one the user sent back to ADK's
  ``adk_request_credential`` (in this invocation), else the one the runner's credential
  service keeps (where an answer is saved), else asks through ``request_credential``.
  ADK asks the user only for what calls *the model made* request, not for what a
  resumed call requests: a call needing both approval and a credential asks for both at
  once (answer both in one message, or give the runner a credential service).
- Passive tools (no declaration) are left out: they shape toolsets' own requests only.

In: `from_adk` turns ADK tools and toolsets (``FunctionTool`` and any other
``BaseTool``) into a toolsets `Toolset`, so toolsets' agent loop can run them or an MCP
server can serve them. Each call runs the ADK tool with an ADK ``ToolContext`` made from
toolsets' (over a fresh in-memory ADK session holding a copy of the state): its state
writes, confirmation and credential requests, ``skip_summarization``, ``escalate`` and
transfer come back as toolsets'. Tools that need what only ADK's own runner has (its
artifact, memory and credential services, the session's events, live streaming) are not
supported there.

`AdkToolset` runs where ADK runs: on asyncio. The toolset `from_adk` makes runs on asyncio
and trio alike, as long as the ADK tool itself needs nothing of asyncio.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, Sequence, Set
from typing import Any, Literal

from toolsets._auth import AuthConfig, AuthCredential, credential_refused
from toolsets._consumers import toolset_of
from toolsets._content import Blob, Content, FileData, Part
from toolsets._context import EventActions, Invocation, ToolConfirmation, ToolContext
from toolsets._errors import AuthError, ToolDefinitionError
from toolsets._install import missing_extra
from toolsets._invoke import (
    DEFAULT_TOOL_TIMEOUT,
    ConfirmationNeeded,
    Done,
    LongRunning,
    Outcome,
    invoke,
)
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import BaseTool, Tool
from toolsets._toolset import BaseToolset, Toolset
from toolsets._validation import ArgumentChecker
from toolsets.schema import DialectSchema, ToolCallMap, to_gemini_declarations

try:
    from google.adk.agents.invocation_context import InvocationContext
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.auth.auth_credential import AuthCredential as AdkAuthCredential
    from google.adk.auth.auth_credential import (
        AuthCredentialTypes,
        HttpAuth,
        HttpCredentials,
        OAuth2Auth,
    )
    from google.adk.auth.auth_tool import AuthConfig as AdkAuthConfig
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.adk.sessions.session import Session
    from google.adk.tools.base_tool import BaseTool as AdkBaseTool
    from google.adk.tools.base_toolset import BaseToolset as AdkBaseToolset
    from google.adk.tools.base_toolset import ToolPredicate
    from google.adk.tools.function_tool import FunctionTool as AdkFunctionTool
    from google.adk.tools.tool_confirmation import ToolConfirmation as AdkToolConfirmation
    from google.adk.tools.tool_context import ToolContext as AdkToolContext
    from google.genai import types
except ImportError as exc:
    raise missing_extra(__name__, "adk", exc) from exc

__all__ = [
    "WAITING_FOR_CONFIRMATION",
    "WAITING_FOR_CREDENTIAL",
    "AdkTool",
    "AdkToolset",
    "from_adk",
    "SchemaForm",
    "function_declarations",
]

WAITING_FOR_CONFIRMATION: dict[str, JsonValue] = {"status": "waiting for the user's confirmation"}
"""What a call that waits for the user's approval answers meanwhile."""
WAITING_FOR_CREDENTIAL: dict[str, JsonValue] = {"status": "waiting for the user's credentials"}
"""What a call that waits for a credential answers meanwhile."""


SchemaForm = Literal["json_schema", "parameters"]
"""How declarations carry their parameters: ``"json_schema"`` as Gemini's
``parametersJsonSchema`` (the Gemini API), ``"parameters"`` as the OpenAPI-subset
``Schema`` every Gemini endpoint takes (Vertex AI, older models)."""


def function_declarations(
    tools: Sequence[Tool], form: SchemaForm = "json_schema"
) -> tuple[list[types.FunctionDeclaration], ToolCallMap]:
    """The declarations ADK sends to the model for ``tools`` (declared ones only), and
    the map that turns each call's name and arguments back into the tool's own.

    The one place the schema's form is chosen: toolsets' Gemini dialect
    (`toolsets.schema.to_gemini_declarations`), so that names Gemini refuses (with
    ``/`` or too long) and schemas it refuses (type lists, ``$ref``, ``oneOf``...) are
    made legal, and mapped back exactly.
    """
    declared = [d for d in (t.declaration() for t in tools) if d is not None]
    wire, calls = to_gemini_declarations(declared, form=form)
    out = []
    for declaration, spec in zip(declared, wire, strict=True):
        made = types.FunctionDeclaration.model_validate(spec)
        if declaration.response is not None and form == "json_schema":
            made.response_json_schema = dict(declaration.response)
        out.append(made)
    return out, calls


# --- out: toolsets' tools in ADK ------------------------------------------------------


class AdkToolset(AdkBaseToolset):
    """A toolsets `Toolset` (or tools) as an ADK toolset, listed on each invocation.

    ADK calls ``close()`` when the agent is done with it (a runner's ``close()`` does):
    that shuts the wrapped toolset down (an MCP server's session ends). Or use it as
    ``async with``, which enters the wrapped toolset in the caller's task and exits it.

    Args:
        toolset: A `Toolset`, or tools and plain functions (put in a `StaticToolset`).
        tool_filter: ADK's filter: tool names, or a predicate over each ADK tool.
        tool_name_prefix: ADK's prefix for every tool name.
        tool_timeout: Seconds a call may take when the tool has no ``timeout``.
        scopes: The scopes the caller holds (see `Tool.required_scopes`).
        form: The declarations' form (see `SchemaForm`): ``"json_schema"`` (the
            default, for the Gemini API) or ``"parameters"`` (for Vertex AI). Either
            way names and schemas are made legal for Gemini and the model's calls are
            mapped back to the tools' own names and arguments.
    """

    def __init__(
        self,
        toolset: Toolset | Iterable[Tool | Callable[..., Any]],
        *,
        tool_filter: ToolPredicate | list[str] | None = None,
        tool_name_prefix: str | None = None,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        scopes: Set[str] = frozenset(),
        form: SchemaForm = "json_schema",
    ) -> None:
        super().__init__(tool_filter=tool_filter, tool_name_prefix=tool_name_prefix)
        self.toolset: Toolset = toolset_of(toolset)
        if form not in ("json_schema", "parameters"):
            raise ToolDefinitionError(
                f"form must be 'json_schema' or 'parameters', got {form!r}", field="form"
            )
        self._timeout = tool_timeout
        self._scopes = frozenset(scopes)
        self._form: SchemaForm = form
        # The last listing's tools and their ADK tools: rebuilt when the list changes.
        self._listed: tuple[list[Tool], list[AdkTool]] = ([], [])

    async def get_tools(self, readonly_context: ReadonlyContext | None = None) -> list[AdkBaseTool]:
        """The wrapped toolset's tools (passive ones, which only shape toolsets' own
        requests, are left out), listed for this invocation's user and session."""
        ctx = None if readonly_context is None else ToolContext(self._invocation(readonly_context))
        listed = [t for t in await self.toolset.list_tools(ctx) if t.declaration() is not None]
        before, wrapped = self._listed
        if len(listed) != len(before) or any(
            a is not b for a, b in zip(listed, before, strict=True)
        ):
            declarations, calls = function_declarations(listed, self._form)
            wrapped = [
                AdkTool(
                    tool,
                    tool_timeout=self._timeout,
                    scopes=self._scopes,
                    declaration=declaration,
                    schema=calls.schema(tool.name),
                )
                for tool, declaration in zip(listed, declarations, strict=True)
            ]
            self._listed = (listed, wrapped)
        return [t for t in wrapped if self._is_tool_selected(t, readonly_context)]

    def _invocation(self, adk: ReadonlyContext) -> Invocation:
        return _invocation(adk, adk.state, self._scopes)

    async def close(self) -> None:
        """Shut the wrapped toolset down (safe from any task; idempotent)."""
        await self.toolset.shutdown()

    async def __aenter__(self) -> AdkToolset:
        await self.toolset.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.toolset.__aexit__(*exc_info)

    def __repr__(self) -> str:
        return f"AdkToolset({self.toolset!r})"


class AdkTool(AdkBaseTool):
    """One toolsets `Tool` as an ADK tool, called through toolsets' call path.

    Args:
        tool: The tool.
        tool_timeout: Seconds a call may take when the tool has no ``timeout``.
        scopes: The scopes the caller holds (see `Tool.required_scopes`).
        declaration: Its declaration for Gemini (by default made by
            `function_declarations`, with its name legal for Gemini).
        schema: How the model's arguments map back to the tool's (by default, as
            `function_declarations` made them).
    """

    def __init__(
        self,
        tool: Tool,
        *,
        tool_timeout: float = DEFAULT_TOOL_TIMEOUT,
        scopes: Set[str] = frozenset(),
        declaration: types.FunctionDeclaration | None = None,
        schema: DialectSchema | None = None,
    ) -> None:
        if declaration is None:
            made, calls = function_declarations([tool])
            declaration = made[0] if made else None
            schema = calls.schema(tool.name)
        super().__init__(
            name=declaration.name or tool.name if declaration is not None else tool.name,
            description=tool.description,
            is_long_running=tool.is_long_running,
        )
        self.tool = tool
        """The toolsets tool this calls."""
        self._declaration = declaration
        self._restore = schema.restore if schema is not None and schema.changes_arguments else None
        self._timeout = tool_timeout
        self._scopes = frozenset(scopes)

    def _get_declaration(self) -> types.FunctionDeclaration | None:
        return self._declaration

    async def run_async(self, *, args: dict[str, Any], tool_context: AdkToolContext) -> Any:
        """Call the tool once, answering ADK's confirmation and credential requests."""
        if self._restore is not None:
            args = self._restore(args)
        ctx = ToolContext(
            _invocation(tool_context, _StateView(tool_context), self._scopes),
            function_call_id=tool_context.function_call_id,
        )
        answered = tool_context.tool_confirmation
        confirmation = None if answered is None else _confirmation(answered)
        credential: AuthCredential | None = None
        if self.tool.auth_config is not None:
            try:
                credential = await _stored_credential(tool_context, self.tool.auth_config)
            except AuthError as refused:
                # Said to the model (and the user), as every other adapter does; the
                # run goes on, and the call asks again when made again.
                return error_result(str(refused))
        outcome = await self._invoke(args, ctx, confirmation, credential)
        if isinstance(outcome, ConfirmationNeeded) and confirmation is None:
            # ADK gives the approval to the run that follows it only; a run resumed
            # later (with the credential the approved call then asked for) finds it in
            # the session's events.
            earlier = _approval_in_session(tool_context)
            if earlier is not None:
                outcome = await self._invoke(outcome.args, ctx, earlier, credential)
            elif credential is None and self.tool.auth_config is not None:
                # ADK turns requests into the user's questions only for calls the model
                # made, not for resumed ones: ask for both now (the user answers both
                # in one message, or ADK's credential service keeps the credential).
                tool_context.request_credential(_adk_auth_config(self.tool.auth_config))
        return _answer(outcome, tool_context)

    def _invoke(
        self,
        args: Mapping[str, Any],
        ctx: ToolContext,
        confirmation: ToolConfirmation | None,
        credential: AuthCredential | None,
    ) -> Awaitable[Outcome]:
        return invoke(
            self.tool,
            args,
            ctx,
            default_timeout=self._timeout,
            scopes=self._scopes,
            confirmation=confirmation,
            credential=credential,
        )

    def __repr__(self) -> str:
        return f"AdkTool({self.tool!r})"


class _StateView(Mapping[str, Any]):
    """ADK's session state (with this call's writes so far), read as a mapping."""

    __slots__ = ("_state",)

    def __init__(self, adk: AdkToolContext) -> None:
        self._state = adk.state

    def __getitem__(self, key: str) -> Any:
        return self._state[key]

    def __contains__(self, key: object) -> bool:
        return key in self._state

    def __iter__(self) -> Iterator[str]:
        return iter(self._state)

    def __len__(self) -> int:
        return len(self._state.to_dict())


def _invocation(
    adk: ReadonlyContext, state: Mapping[str, Any], scopes: frozenset[str]
) -> Invocation:
    """The run as toolsets' tools see it, from ADK's context."""
    inner = adk._invocation_context
    return Invocation(
        app_name=inner.app_name,
        user_id=adk.user_id,
        session_id=adk.session.id,
        invocation_id=adk.invocation_id,
        agent_name=adk.agent_name,
        user_content=None if adk.user_content is None else _content(adk.user_content),
        state=state,
        scopes=scopes,
        artifact_service=(
            None if inner.artifact_service is None else _Artifacts(inner.artifact_service)
        ),
    )


def _answer(outcome: Outcome, adk: AdkToolContext) -> Any:
    """What ADK gets from one call: the result, or the request it waits for."""
    if outcome.actions is not None:
        _apply(outcome.actions, adk)
    if isinstance(outcome, Done):
        return outcome.result
    if isinstance(outcome, LongRunning):
        return outcome.interim
    # The pause is no result for the model to summarize: without skipping, ADK asks
    # the model again, which calls the tool again (ADK's own confirmation gate does so).
    adk.actions.skip_summarization = True
    if isinstance(outcome, ConfirmationNeeded):
        adk.request_confirmation(hint=outcome.hint, payload=outcome.payload)
        return WAITING_FOR_CONFIRMATION
    adk.request_credential(_adk_auth_config(outcome.auth_config))
    return WAITING_FOR_CREDENTIAL


def _apply(actions: EventActions, adk: AdkToolContext) -> None:
    """The actions a toolsets tool set, as ADK's."""
    if actions.state_delta:
        adk.state.update(actions.state_delta)
    adk_actions = adk.actions
    if actions.artifact_delta:
        adk_actions.artifact_delta.update(actions.artifact_delta)
    if actions.skip_summarization:
        adk_actions.skip_summarization = True
    if actions.escalate:
        adk_actions.escalate = True
    if actions.transfer_to_agent is not None:
        adk_actions.transfer_to_agent = actions.transfer_to_agent


def _confirmation(adk: AdkToolConfirmation) -> ToolConfirmation:
    return ToolConfirmation(hint=adk.hint, confirmed=adk.confirmed, payload=adk.payload)


_REQUEST_CONFIRMATION = "adk_request_confirmation"


def _approval_in_session(adk: AdkToolContext) -> ToolConfirmation | None:
    """The user's answer to a confirmation request of this very call, if the session
    holds one: asked after the model made the call (a model may reuse an id in a later
    turn, and an old approval never covers a new call)."""
    call_id = adk.function_call_id
    asked: set[str] = set()  # ids of the confirmation requests for this call
    answer: ToolConfirmation | None = None
    for event in adk.session.events:
        for call in event.get_function_calls():
            if call.name != _REQUEST_CONFIRMATION:
                if call.id == call_id:  # the call itself: what came before is not its
                    asked.clear()
                    answer = None
                continue
            original = (call.args or {}).get("originalFunctionCall")
            if isinstance(original, dict) and original.get("id") == call_id and call.id:
                asked.add(call.id)
        if event.author != "user":
            continue
        for response in event.get_function_responses():
            if response.id in asked and response.response is not None:
                answer = _confirmation(AdkToolConfirmation.from_response_dict(response.response))
    return answer


async def _stored_credential(adk: AdkToolContext, config: AuthConfig) -> AuthCredential | None:
    """The credential ADK holds for ``config``: the user's answer to a credential
    request of this invocation, else one its credential service stored.

    Raises:
        AuthError: what ADK holds is no credential toolsets can send (e.g. a service
            account's, or an OAuth2 answer not yet exchanged for a token); names the
            scheme (``scheme_name``).
    """
    adk_config = _adk_auth_config(config)
    found = adk.get_auth_response(adk_config)
    service = adk._invocation_context.credential_service
    if found is not None:
        if service is not None:
            adk_config.exchanged_auth_credential = found
            await adk.save_credential(adk_config)
    elif service is not None:
        found = await adk.load_credential(adk_config)
    if found is None:
        return None
    credential = _credential(found)
    if credential is None:  # asking again would only get the same answer
        raise credential_refused(
            config.scheme_name,
            f"is an {found.auth_type.value} credential carrying no key, password or token",
        )
    return credential


def _adk_auth_config(config: AuthConfig) -> AdkAuthConfig:
    """ADK's form of what a tool needs. Its key, under which ADK keeps the user's
    answer, names the scheme and its scopes (as toolsets' credential store does) and a
    digest of the scheme, so that two APIs whose schemes share a name never share a
    credential."""
    scheme = dict(config.scheme)
    digest = hashlib.sha256(json.dumps(scheme, sort_keys=True, default=str).encode()).hexdigest()
    key = f"toolsets_{config.key}_{digest[:16]}"
    return AdkAuthConfig(auth_scheme=scheme, credential_key=key)


def _credential(adk: AdkAuthCredential) -> AuthCredential | None:
    """toolsets' form of a credential ADK holds (None: a kind toolsets has no form for)."""
    if adk.api_key:
        return AuthCredential.api_key(adk.api_key)
    http = adk.http
    if http is not None:
        given = http.credentials
        if http.scheme.lower() == "basic" and given.username and given.password:
            return AuthCredential.basic(given.username, given.password)
        if given.token:
            return AuthCredential.bearer(given.token)
    oauth2 = adk.oauth2
    if oauth2 is not None and oauth2.access_token:
        return AuthCredential.oauth2(
            oauth2.access_token,
            refresh_token=oauth2.refresh_token,
            expires_at=None if oauth2.expires_at is None else float(oauth2.expires_at),
        )
    return None


def _content(adk: types.Content) -> Content:
    """toolsets' form of a message (its text, inline data and file references)."""
    parts: list[Part] = []
    for part in adk.parts or ():
        if part.text is not None:
            parts.append(Part(text=part.text, thought=bool(part.thought)))
        elif part.inline_data is not None and part.inline_data.data is not None:
            mime = part.inline_data.mime_type or "application/octet-stream"
            parts.append(Part(inline_data=Blob(mime_type=mime, data=part.inline_data.data)))
        elif part.file_data is not None and part.file_data.file_uri:
            parts.append(
                Part(
                    file_data=FileData(
                        uri=part.file_data.file_uri, mime_type=part.file_data.mime_type
                    )
                )
            )
    return Content(role="model" if adk.role == "model" else "user", parts=tuple(parts))


def _genai_part(part: Part) -> types.Part:
    if part.text is not None:
        return types.Part(text=part.text)
    if part.inline_data is not None:
        return types.Part.from_bytes(
            data=part.inline_data.data, mime_type=part.inline_data.mime_type
        )
    if part.file_data is not None:
        return types.Part(
            file_data=types.FileData(
                file_uri=part.file_data.uri, mime_type=part.file_data.mime_type
            )
        )
    raise ValueError("only text, inline data and file references can be stored as artifacts")


def _part(adk: types.Part) -> Part:
    if adk.inline_data is not None and adk.inline_data.data is not None:
        mime = adk.inline_data.mime_type or "application/octet-stream"
        return Part(inline_data=Blob(mime_type=mime, data=adk.inline_data.data))
    if adk.file_data is not None and adk.file_data.file_uri:
        return Part(
            file_data=FileData(uri=adk.file_data.file_uri, mime_type=adk.file_data.mime_type)
        )
    return Part(text=adk.text or "")


class _Artifacts:
    """ADK's artifact service, as toolsets' `ArtifactService`."""

    def __init__(self, service: Any) -> None:
        self._service = service

    async def save_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str, artifact: Part
    ) -> int:
        version: int = await self._service.save_artifact(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            filename=filename,
            artifact=_genai_part(artifact),
        )
        return version

    async def load_artifact(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        filename: str,
        version: int | None = None,
    ) -> Part | None:
        found = await self._service.load_artifact(
            app_name=app_name,
            user_id=user_id,
            session_id=session_id,
            filename=filename,
            version=version,
        )
        return None if found is None else _part(found)

    async def list_artifact_keys(
        self, *, app_name: str, user_id: str, session_id: str
    ) -> list[str]:
        keys: list[str] = await self._service.list_artifact_keys(
            app_name=app_name, user_id=user_id, session_id=session_id
        )
        return keys

    async def list_versions(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> list[int]:
        versions: list[int] = await self._service.list_versions(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
        )
        return versions

    async def delete_artifact(
        self, *, app_name: str, user_id: str, session_id: str, filename: str
    ) -> None:
        await self._service.delete_artifact(
            app_name=app_name, user_id=user_id, session_id=session_id, filename=filename
        )


# --- in: ADK's tools as a toolset ----------------------------------------------------


def from_adk(*tools: AdkBaseTool | AdkBaseToolset | Callable[..., Any]) -> Toolset:
    """ADK tools and toolsets (plain functions become ADK ``FunctionTool``s) as one
    toolsets `Toolset`, listed anew on each `list_tools` (an ADK toolset's tools may
    change). ``shutdown`` closes the ADK toolsets.

    Raises:
        ToolDefinitionError: something given is none of these (``field="tools"``).
    """
    items: list[AdkBaseTool | AdkBaseToolset] = []
    for item in tools:
        if isinstance(item, AdkBaseTool | AdkBaseToolset):
            items.append(item)
        elif callable(item):
            items.append(AdkFunctionTool(item))
        else:
            raise ToolDefinitionError(
                f"{item!r} is not an ADK tool, toolset or function", field="tools"
            )
    return _FromAdk(items)


class _FromAdk(BaseToolset):
    def __init__(self, items: Sequence[AdkBaseTool | AdkBaseToolset]) -> None:
        self._items = items
        self._sessions = InMemorySessionService()
        # The wrappers of the last listing, by ADK tool (kept while ADK keeps the tool).
        self._wrapped: dict[int, _AdkToolAsTool] = {}
        self.credential_keys: dict[str, str] = {}
        """Call id → the key under which ADK looks for the credential that call asked
        for (the call is run again, by a new wrapper if the toolset listed anew)."""

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        listed: dict[int, _AdkToolAsTool] = {}
        for item in self._items:
            if isinstance(item, AdkBaseToolset):
                readonly = ReadonlyContext(self._invocation_context(ctx or ToolContext()))
                adk_tools = await item.get_tools_with_prefix(readonly)
            else:
                adk_tools = [item]
            for adk_tool in adk_tools:
                wrapped = self._wrapped.get(id(adk_tool))
                if wrapped is None or wrapped.adk_tool is not adk_tool:
                    declaration = adk_tool._get_declaration()
                    if declaration is None:  # a model's built-in tool (e.g. Google Search)
                        continue
                    wrapped = _AdkToolAsTool(self, adk_tool, declaration)
                listed[id(adk_tool)] = wrapped
        self._wrapped = listed
        return list(listed.values())

    def _invocation_context(self, ctx: ToolContext) -> InvocationContext:
        session = Session(
            id=ctx.session_id,
            app_name=ctx.app_name,
            user_id=ctx.user_id,
            state=ctx.state.to_dict(),
        )
        return InvocationContext(
            session_service=self._sessions,
            invocation_id=ctx.invocation_id,
            session=session,
        )

    async def shutdown(self) -> None:
        for item in self._items:
            if isinstance(item, AdkBaseToolset):
                await item.close()

    def __repr__(self) -> str:
        return f"from_adk({', '.join(getattr(i, 'name', type(i).__name__) for i in self._items)})"


def _parameters(declaration: types.FunctionDeclaration) -> dict[str, Any]:
    """The JSON Schema of an ADK tool's arguments."""
    if declaration.parameters_json_schema is not None:
        schema = dict(declaration.parameters_json_schema)
    elif declaration.parameters is not None:
        schema = declaration.parameters.json_schema.model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    else:
        schema = {"type": "object", "properties": {}}
    if "type" not in schema:
        schema["type"] = "object"
    return schema


class _AdkToolAsTool(BaseTool):
    """One ADK tool, run with an ADK context made from toolsets'."""

    def __init__(
        self, owner: _FromAdk, adk_tool: AdkBaseTool, declaration: types.FunctionDeclaration
    ) -> None:
        rule = getattr(adk_tool, "_require_confirmation", False)
        super().__init__(
            adk_tool.name,
            declaration.description or adk_tool.description,
            parameters=_parameters(declaration),
            is_long_running=adk_tool.is_long_running,
            # A fixed rule is asked before the call; a function of the arguments (which
            # may want ADK's context) is asked by the run, below.
            requires_confirmation=rule is True,
        )
        self.adk_tool = adk_tool
        self._owner = owner
        self._checker = ArgumentChecker(self.parameters, tool_name=self.name)

    async def run(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue:
        invalid = self._checker.result(args)
        if invalid is not None:  # the model is told which field, as for every tool
            return invalid
        call_id = ctx.function_call_id
        context = self._owner._invocation_context(ctx)
        answered = ctx.tool_confirmation
        adk = AdkToolContext(
            context,
            function_call_id=call_id,
            tool_confirmation=(
                None
                if answered is None
                else AdkToolConfirmation(
                    hint=answered.hint, confirmed=answered.confirmed, payload=answered.payload
                )
            ),
        )
        key = None if call_id is None else self._owner.credential_keys.pop(call_id, None)
        if key is not None and ctx.auth_credential is not None:
            # Where ADK's get_auth_response looks for the user's answer.
            context.session.state["temp:" + key] = _adk_credential(ctx.auth_credential)
        if (
            answered is None
            and call_id is not None
            and await self.adk_tool.check_require_confirmation(dict(args), adk)
        ):
            ctx.request_confirmation(hint=self.confirmation_hint(args))
            return WAITING_FOR_CONFIRMATION
        result = await self.adk_tool.run_async(args=dict(args), tool_context=adk)
        _took_back(adk, ctx, self._owner.credential_keys)
        return _json(result)


def _took_back(adk: AdkToolContext, ctx: ToolContext, credential_keys: dict[str, str]) -> None:
    """The actions an ADK tool set, as toolsets'."""
    actions = adk.actions
    if actions.state_delta:
        ctx.state.update(actions.state_delta)
    if actions.skip_summarization:
        ctx.actions.skip_summarization = True
    if actions.escalate:
        ctx.actions.escalate = True
    if actions.transfer_to_agent is not None:
        ctx.actions.transfer_to_agent = actions.transfer_to_agent
    call_id = ctx.function_call_id
    if call_id is None:
        return
    asked = actions.requested_tool_confirmations.get(call_id)
    if asked is not None:
        ctx.request_confirmation(hint=asked.hint, payload=asked.payload)
    needed = actions.requested_auth_configs.get(call_id)
    if needed is not None:
        key = needed.credential_key or call_id
        credential_keys[call_id] = key
        scheme = needed.auth_scheme.model_dump(mode="json", by_alias=True, exclude_none=True)
        ctx.request_credential(AuthConfig(scheme_name=key, scheme=scheme))


def _adk_credential(credential: AuthCredential) -> AdkAuthCredential:
    """ADK's form of a toolsets credential."""
    if credential.kind == "api_key":
        return AdkAuthCredential(auth_type=AuthCredentialTypes.API_KEY, api_key=credential.secret)
    if credential.kind == "basic":
        given = HttpCredentials(username=credential.username, password=credential.secret)
        return AdkAuthCredential(
            auth_type=AuthCredentialTypes.HTTP, http=HttpAuth(scheme="basic", credentials=given)
        )
    if credential.kind == "bearer":
        given = HttpCredentials(token=credential.secret)
        return AdkAuthCredential(
            auth_type=AuthCredentialTypes.HTTP, http=HttpAuth(scheme="bearer", credentials=given)
        )
    return AdkAuthCredential(
        auth_type=AuthCredentialTypes.OAUTH2,
        oauth2=OAuth2Auth(
            access_token=credential.secret,
            refresh_token=credential.refresh_token,
            expires_at=None if credential.expires_at is None else int(credential.expires_at),
        ),
    )


def _json(value: Any) -> JsonValue:
    """An ADK tool's result as JSON (pydantic models dumped; anything else as its text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return _json(dump(mode="json", exclude_none=True))
    return str(value)
