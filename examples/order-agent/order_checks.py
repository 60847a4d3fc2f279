"""Custom checks for the order-agent suite (`python: order_checks:<function>`)."""

from __future__ import annotations

import json

from pytest_vibeeval import Response


def mentions_the_order_it_looked_up(response: Response) -> tuple[bool, str]:
    """Pass/fail with a reason: the order in the answer is the one the agent looked up."""
    looked_up = [
        call.args.get("order_id") for call in response.tool_calls if call.tool == "lookup_order" and call.args
    ]
    answered = (json.loads(response.text).get("order") or {}).get("id")
    return answered in looked_up, f"answered about {answered!r}, looked up {looked_up}"


def efficiency(response: Response) -> dict[str, object]:
    """A 0–1 score: fewer tool calls are better (passes at the suite's threshold)."""
    calls = len(response.tool_calls)
    return {"score": max(0.0, 1 - calls / 5), "reason": f"{calls} tool calls"}
