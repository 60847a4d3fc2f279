"""EXAMPLE APPLICATION UNDER TEST: a tiny rule-based support bot standing in for a team's LLM app.

It is not a model. It answers a few known questions deterministically so the example suite runs
offline with no API keys, and it reports made-up token counts and a made-up cost
(USD 1 per million input tokens, USD 2 per million output tokens) so cost-aware formulas have
something to work with. Replace `answer` with a call into your own application.
"""

from __future__ import annotations

from typing import Any

ANSWERS = {
    "refund": (
        "You can request a refund within 30 days of purchase. Open Settings > Billing, choose the "
        "order and click 'Request refund'. Refunds reach your card in 5-10 business days."
    ),
    "password": (
        "To reset your password, click 'Forgot password' on the sign-in page and follow the link "
        "we email you. For security we never ask for your password by email or phone."
    ),
    "order": "Your order ORD-48213 shipped yesterday and should arrive on Friday.",
    "hours": "Our support team is available Monday to Friday, 9:00-17:00 CET.",
}
FALLBACK = "I'm sorry, I can only help with refunds, passwords, orders and opening hours."


def _tokens(text: str) -> int:
    return len(text.split())


def answer(prompt: str, context: Any) -> dict[str, Any]:
    """Called by pytest-vibeeval once per eval: `configurations: {app: {python: support_app:answer}}`."""
    lowered = prompt.lower()
    reply = next((text for key, text in ANSWERS.items() if key in lowered), FALLBACK)
    if context.system_prompt and "pirate" in context.system_prompt.lower():
        reply = "Arr! " + reply
    input_tokens, output_tokens = _tokens(prompt), _tokens(reply)
    return {
        "response": reply,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cost": (input_tokens * 1 + output_tokens * 2) / 1_000_000,
    }
