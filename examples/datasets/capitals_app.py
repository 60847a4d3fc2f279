"""EXAMPLE APPLICATION UNDER TEST: a tiny lookup table standing in for a team's LLM app.

It is not a model. It answers "What is the capital of X?" and "Translate 'word' into Y"
deterministically from two tables, so the dataset example runs offline with no API keys. Replace
``answer`` with a call into your own application.
"""

from __future__ import annotations

from typing import Any

CAPITALS = {
    "France": "Paris",
    "Japan": "Tokyo",
    "Peru": "Lima",
    "Kenya": "Nairobi",
    "Canada": "Ottawa",
    "New Zealand": "Wellington",
}
WORDS = {("hello", "French"): "bonjour", ("thanks", "Spanish"): "gracias", ("cat", "German"): "Katze"}


def answer(prompt: str, context: Any = None) -> str:
    for country, capital in CAPITALS.items():
        if country in prompt:
            return f"The capital of {country} is {capital}."
    for (word, language), translation in WORDS.items():
        if f"'{word}'" in prompt and language in prompt:
            return translation
    return "I do not know."
