"""The most time an eval may take within its own limits, from which its item's timeout backstop is
derived (the backstop adds ``vibe_timeout_margin``): every answer of every turn, with the HTTP
retries and the waits between them, and every llm_judge call under the judge configuration's own
limits. The plugin's own timeouts and retry limits then always stop an eval first, each with its
own message; the backstop is left for what has none (a hung ``python:`` answer).

The retry waits are bounded here, and the HTTP provider (:mod:`.providers.http`) keeps to them."""

from __future__ import annotations

import functools
from collections.abc import Iterable

from .checks import AnyOf, CheckNode
from .models import DEFAULT_TIMEOUT_MS, Configuration, HttpSpec

BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
RETRY_AFTER_CAP_S = 120.0  # a longer Retry-After is not waited: the eval errors at once
KILL_GRACE_S = 2.0  # between a timed-out agent's SIGTERM and its SIGKILL (see .process)


@functools.cache
def _default_retries() -> int:
    """The implicit HTTP settings' ``max_retries``, from the field's default: making an
    ``HttpSpec`` builds its schema, in every session (the implicit judge) even without HTTP."""
    return int(HttpSpec.model_fields["max_retries"].default)


def backoff_ceiling(attempt: int) -> float:
    """The longest backoff after failed attempt ``attempt`` (0, 1, …): ``base × 2^attempt``, capped."""
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0**attempt)


def answer_limit_s(configuration: Configuration | None, mcp: bool = False) -> float:
    """The most one answer of ``configuration`` (None: the implicit OpenRouter one) may take: an
    HTTP request's attempts, each within the timeout, and the longest waits between them; an
    agent's timeout and the grace before it is killed; a callable's timeout. ``mcp``: an HTTP model
    in the MCP tool loop, which stops at the timeout but waits for the request in flight."""
    timeout = configuration.timeout_s if configuration is not None else DEFAULT_TIMEOUT_MS / 1000
    if configuration is not None and configuration.kind != "http":
        return timeout + (KILL_GRACE_S if configuration.kind == "cli" else 0.0)
    http = configuration.http if configuration is not None else None
    attempts = (http.max_retries if http else _default_retries()) + 1
    waits = sum(max(backoff_ceiling(attempt), RETRY_AFTER_CAP_S) for attempt in range(attempts - 1))
    request = attempts * timeout + waits
    return request + timeout if mcp else request


def judge_calls(checks: Iterable[CheckNode]) -> int:
    """How many judge requests ``checks`` may make at most: one per llm_judge check, or one per
    model it lists in ``judges`` (every alternative of an ``or`` counted)."""
    calls = 0
    for node in checks:
        if isinstance(node, AnyOf):
            calls += judge_calls(node.children)
        elif node.type.name == "llm_judge":
            calls += len(getattr(node.value, "judges", None) or ()) or 1
    return calls


def prompt_eval_limit_s(
    turns: int,
    checks: Iterable[CheckNode],
    configuration: Configuration | None,
    judge: Configuration | None,
    mcp: bool = False,
) -> float:
    """The most a prompt eval of ``turns`` answers (1 for a single prompt) and ``checks`` (every
    turn's) may take: each answer under ``configuration``'s limits, each judge call under the judge
    configuration's (``judge``; None: the implicit one)."""
    return limit_of_answers(turns, checks, answer_limit_s(configuration, mcp), answer_limit_s(judge))


def limit_of_answers(turns: int, checks: Iterable[CheckNode], answer_s: float, judge_s: float) -> float:
    """:func:`prompt_eval_limit_s` given its configuration's and its judge's
    :func:`answer_limit_s`, which the evals of a suite share."""
    answers = max(turns, 1) * answer_s
    calls = judge_calls(checks)
    return answers + calls * judge_s if calls else answers
