"""An example application under test: a rule-based table-booking assistant that answers from the
whole conversation (``context.messages``), standing in for your own chat application.

It reports made-up token counts (every message of the conversation is input again, as a chat model
is billed) and a cost, so the results show how a conversation's cost grows with its turns."""

from __future__ import annotations

import re
from typing import Any

PRICE_PER_TOKEN = 0.000002
SIZE = re.compile(r"\b(?:table for|make it|we are|we're)\s+(\d+)\b", re.IGNORECASE)
TIME = re.compile(r"\b(\d{1,2}(?::\d{2})?\s*(?:am|pm))\b", re.IGNORECASE)


def answer(prompt: str, context: Any) -> dict[str, Any]:
    """Answer the last user message given everything said so far."""
    said = [m["content"] for m in context.messages if m["role"] == "user"]
    size = time = None
    for text in said:  # a later message overrides an earlier one
        size = _last(SIZE, text) or size
        time = _last(TIME, text) or time
    if "cancel" in prompt.lower():
        reply = "I can only make bookings."  # the stand-in's known gap: see the xfail eval
    elif size is None:
        reply = "Hello! For how many people?"
    elif time is None:
        reply = f"A table for {size}. At what time?"
    else:
        reply = f"Booked: a table for {size} people at {time}."
    tokens_in = sum(len(m["content"].split()) for m in context.messages)
    tokens_out = len(reply.split())
    return {
        "response": reply,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost": round((tokens_in + tokens_out) * PRICE_PER_TOKEN, 8),
    }


def _last(pattern: re.Pattern[str], text: str) -> str | None:
    found = pattern.findall(text)
    return found[-1] if found else None
