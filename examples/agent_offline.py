"""An agent that plans a trip with tools, offline: no network, no API key.

The "model" is a small rule-based function standing in for an LLM (swap in
`toolsets.models.OpenAIChatModel` for a real one). The run shows the whole cycle: tool calls
(two read-only ones run concurrently), invalid arguments answered with a field error,
state written by a tool, and a booking that pauses for the user's confirmation and is
resumed with the answer.

Run: python examples/agent_offline.py
"""

from __future__ import annotations

import json
from typing import Literal

import anyio

from toolsets import Content, FunctionCall, ToolContext, tool
from toolsets.agent import ConfirmationRequest, Event, LlmAgent, LlmRequest, Runner
from toolsets.models import ScriptedModel, Step

FORECASTS = {"lisbon": "sunny, 24 °C", "oslo": "rain, 9 °C"}


@tool(read_only=True)
def get_weather(city: str) -> str:
    """Today's forecast for a city.

    Args:
        city: The city's name.
    """
    return FORECASTS.get(city.lower(), "unknown")


@tool(read_only=True)
def convert_distance(km: float, to: Literal["mi", "m"] = "mi") -> float:
    """Convert kilometres to miles or metres.

    Args:
        km: Distance in kilometres.
        to: The unit wanted.
    """
    return round(km / 1.609344, 1) if to == "mi" else km * 1000


@tool(
    requires_confirmation=True,
    confirmation_hint=lambda args: f"Book a trip to {args['city']} for {args['nights']} nights?",
)
def book_trip(city: str, nights: int, ctx: ToolContext) -> dict[str, str | int]:
    """Book a trip (costs money, so the user confirms first).

    Args:
        city: Where to.
        nights: How many nights.
    """
    ctx.state["booking"] = f"{city}, {nights} nights"
    return {"booked": city, "nights": nights, "reference": "TRIP-0042"}


def planner(request: LlmRequest) -> Step:
    """A stand-in for an LLM: decides the next step from the conversation."""
    last = request.contents[-1]
    answered = {
        p.function_response.name: p.function_response.response
        for c in request.contents
        for p in c.parts
        if p.function_response is not None
    }
    if last.role == "user":
        return [
            FunctionCall(name="get_weather", args={"city": "Lisbon"}),
            FunctionCall(name="convert_distance", args={"km": "far", "to": "mi"}),
        ]
    if "book_trip" in answered:
        return f"All set: {json.dumps(answered['book_trip'])}. Enjoy Lisbon!"
    distance = answered.get("convert_distance")
    if isinstance(distance, dict) and "error" in distance:
        # The tool said which field was wrong: try again with a number.
        return FunctionCall(name="convert_distance", args={"km": 1740, "to": "mi"})
    return FunctionCall(name="book_trip", args={"city": "Lisbon", "nights": 3})


def show(event: Event) -> None:
    for call in event.function_calls:
        print(f"{event.author} calls {call.name}({json.dumps(dict(call.args))})")
    for response in event.function_responses:
        note = " (waiting)" if response.will_continue else ""
        shown = json.dumps(response.response, ensure_ascii=False)
        print(f"  {response.name} → {shown}{note}")
    if event.text and not event.partial:
        print(f"{event.author}: {event.text}")


async def main() -> None:
    agent = LlmAgent(
        "trip_planner",
        ScriptedModel(respond=planner),
        instruction="Plan trips. Check the weather and distances, then book.",
        tools=[get_weather, convert_distance, book_trip],
    )
    runner = Runner(agent, app_name="trips")
    session = await runner.create_session(user_id="ann")

    print("ann: Plan me three nights somewhere sunny, far from Oslo.")
    pending: list[ConfirmationRequest] = []
    message = Content.user("Plan me three nights somewhere sunny, far from Oslo.")
    async for event in runner.run(user_id="ann", session_id=session.id, message=message):
        show(event)
        pending = [r for r in event.pending if isinstance(r, ConfirmationRequest)]

    for request in pending:
        print(f"asks ann: {request.hint}  yes")
    async for event in runner.resume(
        user_id="ann",
        session_id=session.id,
        confirmations={r.function_call_id: True for r in pending},
    ):
        show(event)

    session = await runner.get_session(user_id="ann", session_id=session.id)
    print(f"session state: {session.state}")


if __name__ == "__main__":
    anyio.run(main)
