"""An example application under test: a rule-based stand-in for an order-support agent that
answers in JSON and reports the tools it called, what it cost and how long it took."""

from __future__ import annotations

import json
from typing import Any

ORDERS = {"ORD-10042": {"status": "shipped", "carrier": "DHL", "items": 2}}


def answer(prompt: str) -> dict[str, Any]:
    """The answer as the suite's checks see it: text plus the agent's tool calls, cost and latency."""
    if "refund" in prompt.lower():
        reply = {"intent": "refund", "action": "handoff", "order": None}
        calls: list[Any] = ["classify_intent", {"tool": "handoff", "args": {"queue": "billing"}}]
    else:
        order_id = next((word.strip("?.,") for word in prompt.split() if word.startswith("ORD-")), "")
        order = ORDERS.get(order_id)
        reply = {"intent": "order_status", "order": {"id": order_id, **(order or {"status": "unknown"})}}
        calls = [
            "classify_intent",
            {"tool": "lookup_order", "args": {"order_id": order_id}, "success": order is not None},
        ]
    return {
        "response": json.dumps(reply),
        "tool_calls": calls,
        "cost": 0.0004 * len(calls),
        "latency": 0.25 * len(calls),
        "input_tokens": 120,
        "output_tokens": 40,
    }
