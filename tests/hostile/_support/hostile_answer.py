"""Python callables for the hostile suites' ``python:`` configurations (on PYTHONPATH in the runs)."""

from __future__ import annotations

import base64
import logging
import os
from typing import Any
from urllib.parse import quote


def echo(prompt: str) -> str:
    """``ok`` and the start of the prompt."""
    return "ok " + prompt[:50]


def tokens(prompt: str) -> dict[str, Any]:
    """An answer that reports a million tokens each way (priced by the configuration)."""
    return {"response": "ok", "input_tokens": 10**6, "output_tokens": 10**6}


def huge_cost(prompt: str) -> dict[str, Any]:
    """An answer that reports a cost near the largest float: two of them add up to infinity."""
    return {"response": "ok", "cost": 1.5e308}


def leak(prompt: str) -> str:
    """An in-process callable sees the controller's environment: prints and logs HOSTILE_API_KEY raw,
    base64- and URL-encoded, and answers with it."""
    key = os.environ["HOSTILE_API_KEY"]
    forms = " ".join((key, base64.b64encode(key.encode()).decode(), quote(key, safe="")))
    print("callable printed", forms)
    logging.getLogger("hostile").warning("callable logged %s", forms)
    return "no " + key
