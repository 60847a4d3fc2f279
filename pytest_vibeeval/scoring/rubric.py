"""The scoring rubric's automatic signals, its weighted score (0–100) and grade, as pure functions.

Each signal function returns ``(value, reason)``: a value in 0–1, or ``None`` with the reason it
cannot be computed. Text heuristics read the *prose* of an output: its lines outside fenced code
blocks (see :func:`split_markdown`); the structure score applies the rubric document's regexes to the
whole output, as written there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Literal, NamedTuple

from pytest_vibeeval.results import RubricRecord, RubricSignal, TranscriptRecord

from .answer_text import (
    Task,
    accuracy_tenths,
    completeness_tenths,
    count_output_errors,
)
from .grades import GRADES as GRADES
from .grades import RUBRIC_FORMULA as RUBRIC_FORMULA
from .grades import grade as grade

Complexity = Literal["simple", "medium", "complex"]
Basis = Literal["time", "tools"]
Signal = tuple[float | None, str | None]
"""A signal's value (0–1) and, when the value is ``None``, why it cannot be computed."""

SIGNALS: dict[RubricSignal, str] = {
    "tool_success_rate": "succeeded tool calls / all tool calls in the agent's transcript",
    "output_quality": "(completeness + accuracy) / 2 of the response, by the rubric's heuristics",
    "efficiency": "1 - (seconds or tool calls) / the task complexity's max_expected, clamped to 0–1",
    "error_rate": "min(1, errors / 10): failed tool calls, retries and error lines in the response",
    "structure_score": "0.4 for markdown headers + 0.3 for list items + 0.3 for ``` in the response",
}
"""The five signals in the formula's order, each with its meaning."""

WEIGHTS: dict[RubricSignal, float] = {
    "tool_success_rate": 0.35,
    "output_quality": 0.25,
    "efficiency": 0.20,
    "error_rate": 0.15,  # applied to (1 - error_rate)
    "structure_score": 0.05,
}
"""Each signal's weight in the score; error_rate's applies to ``1 - error_rate``."""


class ExpectedEffort(NamedTuple):
    """The most time and tool calls a task of one complexity is expected to take."""

    seconds: float
    tools: int


MAX_EXPECTED: dict[Complexity, ExpectedEffort] = {
    "simple": ExpectedEffort(30.0, 5),
    "medium": ExpectedEffort(120.0, 15),
    "complex": ExpectedEffort(300.0, 30),
}
"""The rubric's normalisation of efficiency, by task complexity."""

MAX_ERRORS = 10
"""error_rate reaches 1 at this many errors."""

NO_TRANSCRIPT = "no transcript: the agent's tool calls were not recorded"
NO_OUTPUT = "no output to analyse"

# --- The signals -----------------------------------------------------------------------------------


def tool_success_rate(transcript: TranscriptRecord | None) -> Signal:
    """Succeeded calls / all calls (calls with no reported outcome count as not succeeded)."""
    if transcript is None:
        return None, NO_TRANSCRIPT
    if transcript.calls == 0:
        return None, "the agent made no tool calls"
    return transcript.succeeded / transcript.calls, None


def output_quality(output: str | None, task: Task, passed: bool, cut: str | None = None) -> Signal:
    """(completeness + accuracy) / 2; ``cut``: the marker line when ``output`` is an excerpt."""
    if output is None:
        return None, NO_OUTPUT
    return (completeness_tenths(output, task) + accuracy_tenths(output, passed, cut)) / 20, None


def efficiency(basis: Basis, complexity: Complexity, seconds: float | None, tool_calls: int | None) -> Signal:
    """1 - actual / max expected (:data:`MAX_EXPECTED`) for time or tool calls, clamped to 0–1."""
    budget = MAX_EXPECTED[complexity]
    if basis == "time":
        if seconds is None or math.isnan(seconds):
            return None, "the agent's run time is unknown"
        ratio = seconds / budget.seconds
    else:
        if tool_calls is None:
            return None, f"{NO_TRANSCRIPT}, so their count is unknown"
        ratio = tool_calls / budget.tools
    return min(1.0, max(0.0, 1 - ratio)), None


def count_errors(transcript: TranscriptRecord | None, output: str | None) -> dict[str, int]:
    """Errors by type: ``tool_fail`` and ``retry`` from the transcript, ``output_error`` from the
    output (:func:`count_output_errors`). A type is present, zero included, when it was counted; absent
    when its source is missing. User corrections are not counted (nothing records them)."""
    errors: dict[str, int] = {}
    if transcript is not None:
        errors["tool_fail"] = transcript.errors.get("tool_fail", 0)
        errors["retry"] = transcript.errors.get("retry", 0)
    if output is not None:
        errors["output_error"] = count_output_errors(output)
    return errors


def error_rate(errors: int | None) -> Signal:
    """min(1, errors / 10); ``None`` (unknown) without a transcript, as tool errors are then unknown."""
    if errors is None:
        return None, f"{NO_TRANSCRIPT}, so tool failures and retries are unknown"
    if errors < 0:
        raise ValueError(f"error count {errors} is negative")
    return min(1.0, errors / MAX_ERRORS), None


HEADERS = re.compile(r"^#+\s", re.MULTILINE)
"""The document's header check. ``\\s`` includes the newline, so a line of only ``#`` counts, and so
do ``# comments`` inside code blocks."""
LISTS = re.compile(r"^[\-\*\d\.]\s", re.MULTILINE)
"""The document's list check: ONE of ``-``, ``*``, a digit or ``.`` at the start of a line, then
whitespace. ``- a``, ``* a`` and ``1 a`` match; ``1. a``, ``10 a`` and indented items do not."""
CODE = re.compile(r"```")
"""The document's code check: three backticks anywhere."""


def structure_score(output: str | None) -> Signal:
    """0.4 headers + 0.3 lists + 0.3 code (the document's regexes, over the whole output)."""
    if output is None:
        return None, NO_OUTPUT
    tenths = (
        4 * (HEADERS.search(output) is not None)
        + 3 * (LISTS.search(output) is not None)
        + 3 * (CODE.search(output) is not None)
    )
    return tenths / 10, None


# --- Score and grade -------------------------------------------------------------------------------


def rubric_score(signals: Mapping[str, float | None]) -> float | None:
    """The weighted signals × 100, rounded to 2 decimals; ``None`` when a signal is absent or None."""
    t, q, e, r, s = (signals.get(name) for name in SIGNALS)
    if t is None or q is None or e is None or r is None or s is None:
        return None
    return round((0.35 * t + 0.25 * q + 0.20 * e + 0.15 * (1 - r) + 0.05 * s) * 100, 2)


def evaluate_rubric(
    *,
    output: str | None,
    passed: bool,
    transcript: TranscriptRecord | None,
    seconds: float | None,
    complexity: Complexity,
    basis: Basis,
    task: Task,
    cut: str | None = None,
) -> RubricRecord:
    """All five signals of one eval, the reasons of those missing, the score, its grade and errors.
    ``cut``: the marker line where an excerpt of a longer answer (``output``) leaves text out."""
    errors = count_errors(transcript, output)
    computed: dict[RubricSignal, Signal] = {
        "tool_success_rate": tool_success_rate(transcript),
        "output_quality": output_quality(output, task, passed, cut),
        "efficiency": efficiency(basis, complexity, seconds, transcript.calls if transcript else None),
        "error_rate": error_rate(sum(errors.values()) if transcript is not None else None),
        "structure_score": structure_score(output),
    }
    signals: dict[str, float | None] = {name: value for name, (value, _) in computed.items()}
    score = rubric_score(signals)
    return RubricRecord(
        signals=signals,
        missing={name: reason for name, (value, reason) in computed.items() if value is None and reason},
        score=score,
        grade=grade(score),
        complexity=complexity,
        efficiency_basis=basis,
        task=task,
        errors=errors,
    )
