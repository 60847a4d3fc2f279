"""EXAMPLE APPLICATION UNDER TEST: a rule-based support-ticket triage bot, standing in for your own
LLM application. It labels a ticket `urgent` or `routine` from a few keywords (so it misses an
urgent ticket without them, and takes "not urgent" for urgent) and writes a short reply."""

from __future__ import annotations

from typing import Any

URGENT_WORDS = ("down", "outage", "cannot pay", "urgent")
REPLIES = {
    "down": "We are sorry about the outage. An engineer is on it now; we will update you within 30 minutes.",
    "restore": "Sorry for the trouble. We will look at the restore and reply by tomorrow.",
    "invoice": "Thank you for asking. We will email last month's invoice today.",
    "password": "Thanks for asking. Open Settings, then Security, and choose Change password.",
}


def answer(prompt: str, context: Any) -> dict[str, Any]:
    lowered = prompt.lower()
    label = "urgent" if any(word in lowered for word in URGENT_WORDS) else "routine"
    reply = next((text for key, text in REPLIES.items() if key in lowered), "No.")
    text = f"{label}: {reply}"
    return {
        "response": text,
        "input_tokens": len(prompt.split()),
        "output_tokens": len(text.split()),
        "cost": 0.0002,
    }
