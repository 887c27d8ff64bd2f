"""Tools defined in a module with deferred (string) annotations, as many users write them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pydantic

if TYPE_CHECKING:
    from toolsets import ToolContext


class Item(pydantic.BaseModel):
    name: str
    qty: int = 1


def count_items(items: list[Item], ctx: ToolContext) -> int:
    """Count items, noting the caller."""
    ctx.state["counted_for"] = ctx.user_id
    return sum(i.qty for i in items)
