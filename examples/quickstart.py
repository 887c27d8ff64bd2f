"""List and call function tools: no network, no API key.

Run: python examples/quickstart.py
"""

from __future__ import annotations

import json
from typing import Literal

import anyio

from toolsets import (
    InMemoryArtifactService,
    Invocation,
    Part,
    StaticToolset,
    ToolContext,
    combined,
    prefixed,
    tool,
)

Unit = Literal["km", "mi"]
KM_PER = {"km": 1.0, "mi": 1.609344}


@tool(read_only=True)
def convert_distance(value: float, from_unit: Unit, to_unit: Unit) -> float:
    """Convert a distance between kilometres and miles.

    Args:
        value: The distance to convert.
        from_unit: The unit of ``value``.
        to_unit: The unit wanted.
    """
    return round(value * KM_PER[from_unit] / KM_PER[to_unit], 3)


@tool
async def save_note(title: str, text: str, ctx: ToolContext) -> dict[str, int | str]:
    """Save a note as a versioned artifact and remember its title in the session state.

    Args:
        title: A short file-name-like title.
        text: The note's body.
    """
    version = await ctx.save_artifact(f"{title}.txt", Part.from_text(text))
    ctx.state["last_note"] = title
    return {"saved": title, "version": version}


async def main() -> None:
    toolset = combined(
        prefixed(StaticToolset([convert_distance]), "units"),
        StaticToolset([save_note]),
    )
    async with toolset:
        tools = await toolset.list_tools()

        print("Tools offered to the model:")
        print(f"  {'name':<24} {'read-only':<10} parameters")
        for t in tools:
            decl = t.declaration()
            assert decl is not None
            params = ", ".join(decl.parameters["properties"])
            print(f"  {t.name:<24} {'yes' if t.is_read_only else 'no':<10} {params}")
        print()

        invocation = Invocation(user_id="ann", artifact_service=InMemoryArtifactService())
        calls = [
            ("units_convert_distance", {"value": 42.195, "from_unit": "km", "to_unit": "mi"}),
            ("save_note", {"title": "marathon", "text": "42.195 km is 26.219 mi"}),
            ("units_convert_distance", {"value": "far", "from_unit": "km", "to_unit": "au"}),
        ]
        by_name = {t.name: t for t in tools}
        for number, (name, args) in enumerate(calls, start=1):
            ctx = ToolContext(invocation, function_call_id=f"call-{number}")
            result = await by_name[name].run(args, ctx)
            print(f"{name}({json.dumps(args)})")
            print(f"  → {json.dumps(result)}")
            if ctx.actions.state_delta or ctx.actions.artifact_delta:
                print(
                    f"  actions: state {ctx.actions.state_delta}, "
                    f"artifacts {ctx.actions.artifact_delta}"
                )


if __name__ == "__main__":
    anyio.run(main)
