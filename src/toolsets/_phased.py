"""`phased`: a toolset whose tools are offered per phase, the phase read from the state."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from toolsets._concurrency import Ready
from toolsets._context import ToolContext
from toolsets._errors import ToolDefinitionError
from toolsets._forwarding import ForwardingTool
from toolsets._json import JsonValue
from toolsets._results import error_result
from toolsets._tool import LlmRequest, Tool
from toolsets._toolset import BaseToolset, StaticToolset, Toolset, list_each
from toolsets._wrappers import ManyToolsets

__all__ = ["PhaseChooser", "phased"]

PhaseChooser = Callable[[Mapping[str, Any]], str]
"""Chooses the current phase from the session state."""


class _PhaseTool(ForwardingTool):
    """A tool of some phases, as one listing offers it: declared in its phases; in the
    others, still known by name (so that a call is refused naming the phase) but passive."""

    def __init__(
        self,
        tool: Tool,
        phases: tuple[str, ...],
        owner: _Phased,
        current: str,
        names: Mapping[str, tuple[str, ...]],
    ) -> None:
        super().__init__(tool)
        self.phases = phases
        """The phases the tool belongs to."""
        self._owner = owner
        self._offered = current in phases
        self._names = names  # each phase's tools, as this listing found them

    def declaration(self) -> Any:
        return super().declaration() if self._offered else None

    async def process_llm_request(self, req: LlmRequest, ctx: ToolContext) -> None:
        if self._offered:
            await super().process_llm_request(req, ctx)
        else:  # callable, not offered: a call gets the phase's refusal, not "no such tool"
            req.tools.setdefault(self.name, self)

    def refusal(self, args: Mapping[str, Any], ctx: ToolContext) -> JsonValue | None:
        refused = self._outside_phase(ctx)
        return refused if refused is not None else super().refusal(args, ctx)

    def run(self, args: Mapping[str, Any], ctx: ToolContext) -> Awaitable[JsonValue]:
        # Checked again here: a wrapper of the caller's own that does not forward
        # ``refusal`` must not let a call outside the phase through.
        refused = self._outside_phase(ctx)
        return Ready(refused) if refused is not None else super().run(args, ctx)

    def _outside_phase(self, ctx: ToolContext) -> JsonValue | None:
        """The error result refusing a call in the current phase, if it is none of this
        tool's phases (or the state names no phase)."""
        # Named as the model knows them: under a prefix (`prefixed`), prefixed too.
        called = ctx.tool_name or self.name
        try:
            current = self._owner.phase(ctx.state)
        except ToolDefinitionError as error:
            return error_result(f"The tool {called!r} was not called: {error}", field=error.field)
        if current in self.phases:
            return None
        prefix = called[: -len(self.name)] if called.endswith(self.name) else ""
        offered = [prefix + name for name in self._names.get(current, ())]
        return error_result(
            f"The tool {called!r} cannot be used in the current phase {current!r} "
            f"(it belongs to the phase{'s' if len(self.phases) > 1 else ''} "
            f"{', '.join(repr(p) for p in self.phases)}). The tools of the phase "
            f"{current!r}: {', '.join(offered) or 'none'}.",
            phase=current,
            tools=list(offered),
        )

    def __repr__(self) -> str:
        return f"_PhaseTool({self.tool!r}, phases={self.phases!r})"


class _Phased(ManyToolsets):
    label = "phased"

    def __init__(
        self,
        phases: Mapping[str, Toolset | Sequence[Tool | Callable[..., Any]]],
        phase: str | PhaseChooser,
        initial: str | None,
    ) -> None:
        if not phases:
            raise ToolDefinitionError("phased() needs at least one phase", field="phases")
        self._order = tuple(phases)
        self.toolsets = tuple(
            given if isinstance(given, Toolset) else StaticToolset(given)
            for given in phases.values()
        )
        """Each phase's toolset, in the phases' order."""
        if initial is None:
            initial = self._order[0]
        if initial not in phases:
            raise ToolDefinitionError(
                f"phased(): the initial phase {initial!r} is none of {', '.join(self._order)}",
                field="initial",
            )
        self._initial = initial
        self._choose = phase

    def phase(self, state: Mapping[str, Any]) -> str:
        """The current phase, in ``state``.

        Raises:
            ToolDefinitionError: (``field="phase"``) the state or the chooser names a
                phase there is none of.
        """
        choose = self._choose
        chosen = choose(state) if callable(choose) else state.get(choose, self._initial)
        if chosen not in self._order:
            raise ToolDefinitionError(
                f"phased(): the current phase {chosen!r} is none of {', '.join(self._order)}",
                field="phase",
            )
        return str(chosen)

    async def list_tools(self, ctx: ToolContext | None = None) -> Sequence[Tool]:
        context = ctx if ctx is not None else ToolContext()
        current = self.phase(context.state)
        listed = await list_each(self.toolsets, ctx)
        found: dict[str, tuple[Tool, list[str]]] = {}
        for name, tools in zip(self._order, listed, strict=True):
            for t in tools:
                seen = found.get(t.name)
                if seen is None:
                    found[t.name] = (t, [name])
                elif seen[0] is t:
                    seen[1].append(name)
                else:
                    raise ToolDefinitionError(
                        f"phased(): two different tools are named {t.name!r} (phases "
                        f"{seen[1][0]!r} and {name!r}); give a tool in several phases as "
                        "the same object",
                        tool_name=t.name,
                    )
        # Each listing's own: another session's listing may find other tools.
        names = {
            name: tuple(t.name for t in tools)
            for name, tools in zip(self._order, listed, strict=True)
        }
        # The current phase's tools first, in its order: the model sees them as listed.
        first = names[current]
        ordered = [found[name] for name in first]
        ordered += [item for name, item in found.items() if name not in first]
        return tuple(_PhaseTool(t, tuple(p), self, current, names) for t, p in ordered)

    def __repr__(self) -> str:
        return f"phased({', '.join(self._order)})"


def phased(
    phases: Mapping[str, Toolset | Sequence[Tool | Callable[..., Any]]],
    phase: str | PhaseChooser,
    *,
    initial: str | None = None,
) -> BaseToolset:
    """Tools restricted per phase, the phase read from the session state each time.

    Each listing offers the current phase's tools to the model; the other phases' tools
    stay known by name, without a declaration (passive), so that a call to one — a
    model remembering an earlier phase — is refused, before any callback or gate, with
    an error result naming the current phase and its tools (``phase``, ``tools``) —
    checked again when the tool runs, should a wrapper not forward ``refusal``. A
    call while the state names no phase gets an error result (``field="phase"``).
    Transitions are state changes: a tool (or a callback) writes the phase's key, and
    the next model turn gets the next phase's tools.

    Args:
        phases: Each phase's tools, by the phase's name: a toolset, or a list of tools
            and functions. A tool may belong to several phases (the same object).
        phase: The state key holding the current phase's name, or a function of the
            state choosing it.
        initial: The phase while the key is not set (default: the first phase).

    Raises:
        ToolDefinitionError: no phases, or an initial phase that is none of them
            (``field``); when listing, a current phase that is none of them
            (``field="phase"``) or two different tools of one name.
    """
    return _Phased(phases, phase, initial)
