"""EXAMPLE APPLICATION UNDER TEST: a rule-based glossary assistant standing in for a paid, slow
model, and a stand-in judge. Neither is a language model.

`define` answers a few known terms deterministically and reports made-up usage: token counts, a
cost and a latency of 1.5 s, as a real model's call would have. `grade` is the judge
configuration's stand-in: it answers the JSON verdict `llm_judge` expects. With --vibe-cache the
second run asks neither of them: every answer comes from the cache, with these figures.
"""

from __future__ import annotations

import json
from typing import Any

DEFINITIONS = {
    "latency": "Latency is the time between sending a request and receiving its answer.",
    "token": "A token is a piece of text, often part of a word, that a language model reads or writes.",
    "temperature": (
        "Temperature is a sampling setting: higher values make a model's answers more varied, "
        "lower values more predictable."
    ),
}
FALLBACK = "I do not know that term yet."


def _usage(prompt: str, reply: str) -> dict[str, Any]:
    input_tokens, output_tokens = len(prompt.split()), len(reply.split())
    cost = (input_tokens * 3 + output_tokens * 15) / 1_000_000  # USD 3 / 15 per million tokens
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cost": cost, "latency": 1.5}


def define(prompt: str, context: Any) -> dict[str, Any]:
    """The system under test: `configurations: {app: {python: glossary_app:define}}`."""
    lowered = prompt.lower()
    reply = next((text for term, text in DEFINITIONS.items() if term in lowered), FALLBACK)
    return {"response": reply, **_usage(prompt, reply)}


def grade(prompt: str, context: Any) -> dict[str, Any]:
    """The judge: passes a response that is one or two sentences and is not the fallback."""
    response = prompt.split("RESPONSE:\n", 1)[-1].strip()
    sentences = response.count(".")
    passed = response != FALLBACK and 1 <= sentences <= 2
    reason = "a short definition" if passed else "not a short definition"
    verdict = json.dumps({"pass": passed, "reason": reason})
    return {"response": verdict, **_usage(prompt, verdict)}
