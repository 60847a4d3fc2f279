"""Python callables for the hostile suites' ``python:`` configurations (on PYTHONPATH in the runs)."""

from __future__ import annotations

from typing import Any


def echo(prompt: str) -> str:
    """``ok`` and the start of the prompt."""
    return "ok " + prompt[:50]


def tokens(prompt: str) -> dict[str, Any]:
    """An answer that reports a million tokens each way (priced by the configuration)."""
    return {"response": "ok", "input_tokens": 10**6, "output_tokens": 10**6}


def huge_cost(prompt: str) -> dict[str, Any]:
    """An answer that reports a cost near the largest float: two of them add up to infinity."""
    return {"response": "ok", "cost": 1.5e308}
