"""The decorators that make a function of yours a resource, a resource template or a
prompt of `McpServer`'s own: `resource`, `resource_template` and `prompt` (what they read
of the function is `Signature`'s)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets.mcp.server._catalog import (
    Completer,
    Prompt,
    PromptArgument,
    Resource,
    ResourceTemplate,
    variables_of,
)
from toolsets.mcp.server._functions import Signature

__all__ = ["prompt", "resource", "resource_template"]


def resource(
    uri: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
) -> Callable[[Callable[..., Any]], Resource]:
    """Make a function a `Resource` at ``uri``: it takes nothing, or the request's
    `ToolContext` (a parameter annotated so), and returns the contents (``str`` or
    ``bytes``); sync or async. The name defaults to the function's, the description
    to its docstring.

    Example::

        @resource("note://today", mime_type="text/markdown")
        def today() -> str:
            \"\"\"Today's note.\"\"\"
            return "# Today"
    """

    def make(fn: Callable[..., Any]) -> Resource:
        call = Signature(fn, f"resource {uri!r}")
        call.only(())

        async def read(ctx: ToolContext) -> Any:
            return await call({}, ctx)

        return Resource(
            uri,
            name or fn.__name__,
            read=read,
            title=title,
            description=call.description if description is None else description,
            mime_type=mime_type,
        )

    return make


def resource_template(
    uri_template: str,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    mime_type: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], ResourceTemplate]:
    """Make a function a `ResourceTemplate`: it takes the template's variables as
    keyword arguments (strings; a ``Literal[...]`` or ``Enum`` annotation gives the
    choices offered as completions) and, if it likes, the request's `ToolContext`; it
    returns the contents (``str`` or ``bytes``), or None when there is no such
    resource.

    Example::

        @resource_template("user://{user_id}/profile", mime_type="application/json")
        async def profile(user_id: str) -> str | None:
            return json.dumps(await load_profile(user_id))

    Raises:
        ToolDefinitionError: a variable is not a parameter of the function, or a
            parameter without a default is not a variable (``field`` names it).
    """

    def make(fn: Callable[..., Any]) -> ResourceTemplate:
        call = Signature(fn, f"resource template {uri_template!r}")
        variables = variables_of(uri_template)
        call.only(variables)
        missing = [v for v in variables if v not in call.params]
        if missing:
            raise ToolDefinitionError(
                f"resource template {uri_template!r}: the function {fn.__name__!r} has no "
                f"parameter {', '.join(missing)}",
                field=missing[0],
            )
        return ResourceTemplate(
            uri_template,
            name or fn.__name__,
            read=call,
            title=title,
            description=call.description if description is None else description,
            mime_type=mime_type,
            choices={p: c for p, c in call.choices.items() if c},
            complete=complete,
        )

    return make


@overload
def prompt(fn: Callable[..., Any], /) -> Prompt: ...
@overload
def prompt(
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Completer | None = None,
) -> Callable[[Callable[..., Any]], Prompt]: ...
def prompt(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    complete: Completer | None = None,
) -> Prompt | Callable[[Callable[..., Any]], Prompt]:
    """Make a function a `Prompt`: its parameters are the prompt's arguments (required
    unless they have a default; described by the docstring's ``Args:``; a
    ``Literal[...]`` or ``Enum`` annotation gives the choices offered as completions),
    and a parameter annotated `ToolContext` gets the request's context. It returns the
    messages (see `PromptMessages`); sync or async. ``@prompt`` or ``@prompt(...)``.

    Example::

        @prompt
        def review(code: str, style: Literal["short", "thorough"] = "short") -> str:
            \"\"\"Ask for a code review.

            Args:
                code: The code to review.
                style: How deep to go.
            \"\"\"
            return f"Review this code ({style}):\\n{code}"
    """

    def make(fn: Callable[..., Any]) -> Prompt:
        call = Signature(fn, f"prompt {name or fn.__name__!r}")
        arguments = [
            PromptArgument(
                param,
                call.argument_doc.get(param, ""),
                required=param in call.required,
                choices=call.choices.get(param, ()),
            )
            for param in call.params
        ]
        return Prompt(
            name or fn.__name__,
            call.description if description is None else description,
            render=call,
            arguments=arguments,
            title=title,
            complete=complete,
        )

    return make if fn is None else make(fn)
