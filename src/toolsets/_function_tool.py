"""Python functions as tools: the schema from type hints and the docstring."""

from __future__ import annotations

import collections.abc
import dis
import functools
import inspect
import types
import typing
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, ParamSpec, TypeVar, overload

import anyio
import anyio.to_thread
import docstring_parser
import pydantic
from pydantic.fields import FieldInfo
from pydantic.json_schema import (
    GenerateJsonSchema,
    JsonSchemaMode,
    JsonSchemaValue,
    PydanticJsonSchemaWarning,
)
from pydantic_core import core_schema

from toolsets._auth import AuthConfig
from toolsets._concurrency import Ready
from toolsets._context import ToolContext
from toolsets._declaration import ToolAnnotations, ToolDeclaration
from toolsets._errors import ToolCallError, ToolDefinitionError
from toolsets._json import JsonValue, all_atoms, copy_json, to_json_value
from toolsets._jsonschema import DATA_KEYWORDS, SCHEMA_MAP_KEYWORDS
from toolsets._results import invalid_arguments_result
from toolsets._streaming import ToolStream
from toolsets._tool import BaseTool

__all__ = ["FunctionTool", "tool", "validation_problems"]

P = ParamSpec("P")
R = TypeVar("R")

_NO_RESPONSE_SCHEMA: tuple[object, ...] = (inspect.Signature.empty, None, type(None), Any)

# Extra arguments are rejected (a model inventing parameters should hear about it), and
# numbers are accepted for strings: models often send an id as 123 instead of "123".
_ARGUMENTS_CONFIG = pydantic.ConfigDict(extra="forbid", coerce_numbers_to_str=True)


def _strip_titles(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _strip_titles(item)
    elif isinstance(node, dict):
        if isinstance(node.get("title"), str):
            del node["title"]
        for key, value in node.items():
            if key in DATA_KEYWORDS:
                continue
            if key in SCHEMA_MAP_KEYWORDS and isinstance(value, dict):
                for sub in value.values():
                    _strip_titles(sub)
            else:
                _strip_titles(value)


class _SchemaWithoutTitles(GenerateJsonSchema):
    """Pydantic's schema minus the generated titles, which only cost the model tokens."""

    def generate(
        self, schema: core_schema.CoreSchema, mode: JsonSchemaMode = "validation"
    ) -> JsonSchemaValue:
        out = super().generate(schema, mode)
        _strip_titles(out)
        return out


@dataclass(frozen=True)
class _Param:
    name: str  # the Python parameter's name
    positional_only: bool
    field: str | None  # the arguments model's field; None for the injected context


def _user_alias(annotation: Any) -> str | None:
    """An alias given in ``Annotated[..., Field(alias=...)]``: the name the model sees."""
    if typing.get_origin(annotation) is typing.Annotated:
        for meta in typing.get_args(annotation)[1:]:
            if isinstance(meta, FieldInfo) and isinstance(meta.alias, str):
                return meta.alias
    return None


def _is_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_context(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return len(args) == 1 and _is_context(args[0])
    return False


def _is_async(fn: Callable[..., Any]) -> bool:
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = inspect.unwrap(fn)
    if inspect.iscoroutinefunction(fn):
        return True
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return False
    # A callable object: its class's __call__ decides.
    return inspect.iscoroutinefunction(type(fn).__call__)


def _never_waits(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` makes a coroutine that finishes on its first step: an
    ``async def`` (a function or a bound method; nothing wrapped, whose wrapper could
    wait) whose own code never suspends. A coroutine suspends only through a
    ``YIELD_VALUE`` of its own frame (every ``await``, ``async for`` and ``async with``
    compiles to one), so a body without one runs to its end when it is first sent to."""
    if isinstance(fn, types.MethodType):
        fn = fn.__func__
    if type(fn) is not types.FunctionType or not fn.__code__.co_flags & inspect.CO_COROUTINE:
        return False
    return not any(op.opname == "YIELD_VALUE" for op in dis.get_instructions(fn.__code__))


def _describe(doc: docstring_parser.Docstring) -> str:
    paragraphs = [doc.short_description, doc.long_description]
    if doc.returns is not None and doc.returns.description:
        paragraphs.append(f"Returns: {doc.returns.description}")
    return "\n\n".join(p.strip() for p in paragraphs if p and p.strip())


class FunctionTool(BaseTool, Generic[P, R]):
    """A Python function (sync or async) as a tool.

    The parameter schema comes from the type hints (via pydantic) and the per-parameter
    descriptions from the docstring (Google, NumPy, reST or Epydoc style). Arguments are
    validated before the call: invalid ones come back as ``{"error": ...}`` naming each
    field, and the function is not called. A parameter annotated `ToolContext` receives
    the context and never appears in the schema. Sync functions run in a worker thread
    so they cannot block the event loop; they can poll ``ctx.cancellation.cancelled``.
    An ``async def`` that yields is a streaming tool: its ``run`` returns a `ToolStream`
    of what it yields (the last is the result; the response schema is that of the yielded
    type, from ``AsyncIterator[X]``).

    The tool is still callable as the plain function.

    Args:
        fn: The function.
        name: The tool's name (default: the function's ``__name__``).
        description: What it does (default: from the docstring).
        run_in_thread: Run a sync function in a worker thread (default). Turn off only
            for functions that return at once: they are then called on the event loop,
            right away when ``run`` is called, and the call path (`toolsets._invoke`)
            takes their result without a cancel scope (nothing could interrupt them).
        read_only: The function does not change its environment (annotations shortcut).
        title: A human-readable title (the declaration's ``title``).
        annotations: The behaviour hints (read-only, destructive, idempotent, open-world).
        is_long_running: The result arrives later, from outside the call.
        is_concurrency_safe: Calls may run side by side (default: when read-only).
        requires_confirmation: The user approves each call first, or a function of the
            arguments that says so per call.
        confirmation_hint: What the user is asked, or a function of the arguments.
        auth_config: The credential the tool needs.
        required_scopes: What the caller must be allowed.
        timeout: Seconds a call may take (None: the caller's default).

    Raises:
        ToolDefinitionError: a parameter or return type cannot be described in JSON
            Schema, or the signature has ``*args`` / ``**kwargs``.
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        run_in_thread: bool = True,
        read_only: bool | None = None,
        title: str | None = None,
        annotations: ToolAnnotations | None = None,
        is_long_running: bool = False,
        is_concurrency_safe: bool | None = None,
        requires_confirmation: bool | Callable[[Mapping[str, Any]], bool] = False,
        confirmation_hint: str | Callable[[Mapping[str, Any]], str] | None = None,
        auth_config: AuthConfig | None = None,
        required_scopes: frozenset[str] | set[str] | tuple[str, ...] = frozenset(),
        timeout: float | None = None,
    ) -> None:
        tool_name = name if name is not None else getattr(fn, "__name__", None)
        if not tool_name:
            raise ToolDefinitionError(f"{fn!r} has no __name__; pass name=...")
        self.fn = fn
        """The wrapped function."""
        self._is_async = _is_async(fn)
        self._at_once = self._is_async and _never_waits(fn)
        self._run_in_thread = run_in_thread
        self._streams = inspect.isasyncgenfunction(inspect.unwrap(fn))
        if inspect.isgeneratorfunction(inspect.unwrap(fn)):
            raise ToolDefinitionError(
                f"tool {tool_name!r}: a generator function cannot stream; make it an "
                "``async def`` that yields, or return a value",
                tool_name=tool_name,
            )

        try:
            # ToolContext is offered as a local so that modules importing it only under
            # TYPE_CHECKING still resolve their string annotations.
            signature = inspect.signature(fn, eval_str=True, locals={"ToolContext": ToolContext})
        except (NameError, TypeError, ValueError, SyntaxError) as exc:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: cannot read the signature's type hints: {exc}",
                tool_name=tool_name,
            ) from exc
        doc = docstring_parser.parse(inspect.getdoc(fn) or "")
        param_docs = {p.arg_name: p.description for p in doc.params if p.description}

        self._params: list[_Param] = []
        fields: dict[str, Any] = {}
        for index, param in enumerate(signature.parameters.values()):
            annotation = Any if param.annotation is param.empty else param.annotation
            positional_only = param.kind is param.POSITIONAL_ONLY
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ToolDefinitionError(
                    f"tool {tool_name!r}: *args and **kwargs cannot be described to a "
                    f"model; declare each parameter (found {param})",
                    tool_name=tool_name,
                )
            if index == 0 and param.name in ("self", "cls") and param.annotation is param.empty:
                raise ToolDefinitionError(
                    f"tool {tool_name!r} is an unbound method; make the tool from the bound "
                    "method instead, e.g. FunctionTool(instance.method)",
                    tool_name=tool_name,
                )
            if _is_context(annotation):
                self._params.append(_Param(param.name, positional_only, None))
                continue
            field = f"p{index}"
            self._params.append(_Param(param.name, positional_only, field))
            default = ... if param.default is param.empty else param.default
            alias = _user_alias(annotation) or param.name
            # Passing description=None would erase one given in Annotated[..., Field()].
            if param.name in param_docs:
                info = pydantic.Field(default, alias=alias, description=param_docs[param.name])
            else:
                info = pydantic.Field(default, alias=alias)
            fields[field] = (annotation, info)

        try:
            with warnings.catch_warnings():
                # e.g. a default value that JSON cannot show: a definition error here.
                warnings.simplefilter("error", PydanticJsonSchemaWarning)
                self._arguments_model: type[pydantic.BaseModel] = pydantic.create_model(
                    f"{tool_name}_arguments",
                    __config__=_ARGUMENTS_CONFIG,
                    **fields,
                )
                parameters = self._arguments_model.model_json_schema(
                    schema_generator=_SchemaWithoutTitles
                )
        except (
            pydantic.PydanticSchemaGenerationError,
            pydantic.PydanticUserError,
            PydanticJsonSchemaWarning,
            RecursionError,  # e.g. an implicitly recursive type alias
        ) as exc:
            raise ToolDefinitionError(
                f"tool {tool_name!r}: a parameter cannot be described in JSON Schema: {exc}",
                tool_name=tool_name,
            ) from exc
        parameters.setdefault("properties", {})

        return_hint = signature.return_annotation
        if self._streams:
            return_hint = _yielded(return_hint)
        response_schema: dict[str, Any] | None = None
        if not any(return_hint is t for t in _NO_RESPONSE_SCHEMA):
            try:
                response_schema = pydantic.TypeAdapter(return_hint).json_schema(
                    schema_generator=_SchemaWithoutTitles
                )
            except (
                pydantic.PydanticSchemaGenerationError,
                pydantic.PydanticUserError,
                RecursionError,
            ) as exc:
                raise ToolDefinitionError(
                    f"tool {tool_name!r}: the return type {return_hint!r} has no JSON "
                    "Schema; return JSON-compatible data or drop the annotation",
                    tool_name=tool_name,
                ) from exc

        if read_only is not None:
            base = annotations if annotations is not None else ToolAnnotations()
            annotations = ToolAnnotations(
                read_only=read_only,
                destructive=base.destructive,
                idempotent=base.idempotent,
                open_world=base.open_world,
            )
        super().__init__(
            tool_name,
            description if description is not None else _describe(doc),
            parameters=parameters,
            response_schema=response_schema,
            title=title,
            annotations=annotations,
            is_long_running=is_long_running,
            is_concurrency_safe=is_concurrency_safe,
            requires_confirmation=requires_confirmation,
            confirmation_hint=confirmation_hint,
            auth_config=auth_config,
            required_scopes=required_scopes,
            timeout=timeout,
        )
        self.__wrapped__ = fn  # lets inspect.signature(tool) show the function's
        # Everything a declaration is made of is fixed by now; it is asked for each turn.
        self._declaration = BaseTool.declaration(self)

    def declaration(self) -> ToolDeclaration | None:
        """The declaration, made once."""
        return self._declaration

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """Call the plain function."""
        return self.fn(*args, **kwargs)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        """Validate ``args``, call the function, and return its result as JSON.

        A call that cannot wait is made now, and its result handed back ready: a sync
        function run on the event loop (``run_in_thread=False``), and an ``async def``
        whose body never awaits (its coroutine finishes on its first step). Nothing could
        interrupt such a call, so the call path needs no cancel scope for it. Otherwise
        the awaitable does the call (an async function's, or one in a worker thread).
        """
        try:
            positional, keywords = self._bind(args, ctx)
        except _InvalidArguments as invalid:
            return Ready(invalid.result)
        fn: Callable[..., Any] = self.fn  # (not cast(): that builds the type on every call)
        if self._streams:
            return ToolStream(
                fn(*positional, **keywords), convert=self._as_json, tool_name=self.name
            )
        if self._at_once:
            return self._stepped(fn(*positional, **keywords))
        if self._is_async:
            return self._awaited(fn(*positional, **keywords))
        if self._run_in_thread:
            return self._in_thread(functools.partial(fn, *positional, **keywords), ctx)
        result = fn(*positional, **keywords)
        if inspect.isawaitable(result):  # e.g. a sync wrapper around a coroutine function
            return self._awaited(result)
        return Ready(self._as_json(result))

    def _stepped(self, coroutine: typing.Coroutine[Any, Any, Any]) -> Awaitable[JsonValue]:
        """The result of a coroutine that never waits, run to its end now."""
        try:
            coroutine.send(None)
        except StopIteration as done:
            value = done.value
        else:  # cannot happen: its code has no point to wait at
            coroutine.close()
            raise ToolCallError(
                f"tool {self.name!r}: its coroutine waited, though its code never does",
                tool_name=self.name,
            )
        if type(value) not in _AS_IS and inspect.isawaitable(value):
            return self._awaited(value)  # e.g. an async function returning a coroutine
        return Ready(self._as_json(value))

    async def _in_thread(self, call: Callable[[], Any], ctx: ToolContext) -> JsonValue:
        try:
            result = await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            ctx.cancellation.cancel("the tool call was cancelled")
            raise
        if inspect.isawaitable(result):  # e.g. a sync wrapper around a coroutine function
            result = await result
        return self._as_json(result)

    async def _awaited(self, result: Awaitable[Any]) -> JsonValue:
        value = await result
        if inspect.isawaitable(value):  # e.g. an async function returning a coroutine
            value = await value
        return self._as_json(value)

    def _bind(self, args: Mapping[str, Any], ctx: ToolContext) -> tuple[list[Any], dict[str, Any]]:
        """The function's arguments from the model's, validated.

        Raises:
            _InvalidArguments: with the result telling the model what is wrong.
        """
        received: object = args  # typed as a Mapping, but it is whatever the model sent
        if type(received) is not dict or not all_atoms(received):
            if not isinstance(received, Mapping):
                raise _InvalidArguments(
                    invalid_arguments_result(
                        [("", f"expected a JSON object, got {type(received).__name__}")]
                    )
                )
            # A deep copy: values of Any-typed parameters reach the function as they
            # are, and the function must not be able to change the caller's arguments.
            # (Arguments that are all scalars cannot be changed, and validating reads
            # them only: they need none.)
            received = copy_json(dict(received))
        arguments: dict[str, Any] = received  # type: ignore[assignment]  # a dict now
        try:
            # (model_validate's own work, without its Python layer of options)
            validated = self._arguments_model.__pydantic_validator__.validate_python(arguments)
        except pydantic.ValidationError as exc:
            problems = validation_problems(exc, arguments)
            raise _InvalidArguments(invalid_arguments_result(problems)) from None

        fields = validated.__dict__
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for param in self._params:
            value = ctx if param.field is None else fields[param.field]
            if param.positional_only:
                positional.append(value)
            else:
                keywords[param.name] = value
        return positional, keywords

    def _as_json(self, result: Any) -> JsonValue:
        if type(result) in _AS_IS:
            return result  # type: ignore[no-any-return]  # a JSON scalar
        try:
            return to_json_value(result)
        except TypeError as exc:
            raise ToolCallError(
                f"tool {self.name!r} returned a value JSON cannot carry: {exc}",
                tool_name=self.name,
            ) from exc


def _yielded(hint: Any) -> Any:
    """What an async generator function's return annotation says it yields
    (``AsyncIterator[X]``, ``AsyncGenerator[X, None]``, ...: ``X``), or no annotation."""
    if typing.get_origin(hint) in (
        collections.abc.AsyncIterator,
        collections.abc.AsyncIterable,
        collections.abc.AsyncGenerator,
    ):
        args = typing.get_args(hint)
        if args:
            return args[0]
    return inspect.Signature.empty


_AS_IS = frozenset({str, int, bool, type(None)})
"""Results already JSON as they are (not float: NaN and the infinities become null)."""


class _InvalidArguments(Exception):
    """The model's arguments do not fit the function (internal to FunctionTool)."""

    def __init__(self, result: JsonValue) -> None:
        super().__init__("invalid arguments")
        self.result = result


def _has(node: Any, part: int | str) -> bool:
    if isinstance(node, Mapping):
        return part in node
    return isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)


def _field_path(loc: tuple[int | str, ...], arguments: Any, error_type: str) -> str:
    """The path of the failing value in the model's arguments.

    Pydantic's locations also name union members (``x.int``, ``m.Item.name``), which do
    not exist in the arguments; they are left out by walking the arguments themselves.
    """
    parts: list[str] = []
    node = arguments
    for position, part in enumerate(loc):
        if _has(node, part):
            node = node[part]
        elif not (position == len(loc) - 1 and error_type == "missing"):
            continue  # a union member's tag: not in the arguments
        # (a missing field is, by definition, not in the arguments: it is kept)
        parts.append(str(part))
    return ".".join(parts)


def validation_problems(exc: pydantic.ValidationError, arguments: Any) -> list[tuple[str, str]]:
    """What pydantic found wrong with ``arguments``: ``(field path, problem)`` pairs, as
    `invalid_arguments_result` takes them."""
    problems = []
    for error in exc.errors(include_url=False):
        path = _field_path(error["loc"], arguments, error["type"])
        message = error["msg"]
        if error["type"] not in ("missing", "extra_forbidden"):
            shown = repr(error.get("input"))
            message += f" (got {shown[:77] + '...' if len(shown) > 80 else shown})"
        problems.append((path, message))
    return problems


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    run_in_thread: bool = True,
    read_only: bool | None = None,
    title: str | None = None,
    annotations: ToolAnnotations | None = None,
    is_long_running: bool = False,
    is_concurrency_safe: bool | None = None,
    requires_confirmation: bool | Callable[[Mapping[str, Any]], bool] = False,
    confirmation_hint: str | Callable[[Mapping[str, Any]], str] | None = None,
    auth_config: AuthConfig | None = None,
    required_scopes: frozenset[str] | set[str] | tuple[str, ...] = frozenset(),
    timeout: float | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None, /, **options: Any
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a function a `FunctionTool`: ``@tool`` or ``@tool(name=..., ...)``.

    The options are `FunctionTool`'s.
    """
    if fn is not None:
        return FunctionTool(fn, **options)

    def decorate(inner: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(inner, **options)

    return decorate
