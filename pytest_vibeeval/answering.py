"""One answer of a prompt eval: ask the provider, record the answer (an excerpt, its measures, its
steps and tool calls, secrets masked), and run its checks. Shared by the single prompt
(:mod:`.runner`) and each turn of a conversation (:mod:`.conversation`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .checks import CheckNode, CheckResult, Response, run_checks
from .excerpts import response_excerpt
from .loading.templates import Redactor
from .models import Configuration
from .providers import PromptRequest, Provider, ProviderError, ProviderResponse
from .results import CheckRecord, StepRecord
from .spending import answer_measures

if TYPE_CHECKING:
    from .judge import Judge
    from .phases import Progress


def redact_steps(steps: list[StepRecord], redact: Redactor) -> list[StepRecord]:
    """The steps with secret values removed from their command lines."""
    if not redact.secrets:  # nothing to remove: no copies
        return list(steps)
    return [step.model_copy(update={"argv": [redact(a) or "" for a in step.argv]}) for step in steps]


def check_record(result: CheckResult, redact: Redactor) -> CheckRecord:
    judges = [
        judge.model_copy(
            update={
                "prompt": response_excerpt(redact(judge.prompt) or "")[0],
                "reasoning": redact(judge.reasoning) or "",
                "error": redact(judge.error),
            }
        )
        for judge in result.judges
    ]
    return CheckRecord(
        type=result.type,
        passed=result.passed,
        message=redact(result.message) or "",
        score=result.score,
        name=result.name,
        judges=judges,
        error=result.error,
        children=[check_record(child, redact) for child in result.children],
    )


@dataclass(frozen=True)
class Exchange:
    """What every turn of a conversation is asked and checked with."""

    provider: Provider
    request: PromptRequest  # the first turn's; later turns replace its prompt and history
    configuration: Configuration | None
    judge_of: Callable[[str], Judge | None]
    redact: Redactor
    entered: Callable[[str, str], None]
    progress: Progress | None = None  # told what the eval has finished, turn by turn


class JudgeSource(NamedTuple):
    """A suite's judge configuration: its id, its settings (None: the implicit OpenRouter one,
    which prices a cost its provider does not report) and its provider; ``spend`` is told what each
    judge answer asked now (not from the cache) cost, when known (--vibe-max-cost)."""

    config_id: str
    configuration: Configuration | None
    provider: Provider
    spend: Callable[[float | None], None] | None = None


def judge_maker(
    judge_source: JudgeSource | None, model: str, suite: str, eval_id: str, workdir: Path
) -> Callable[[str], Judge | None]:
    """A function giving the :class:`Judge` of the llm_judge checks of an answer to ``prompt``
    (None without a judge configuration)."""

    def judge_of(prompt: str) -> Judge | None:
        if judge_source is None:
            return None
        from .judge import Judge  # the llm_judge machinery: imported when a suite has a judge

        judge_id, configuration, provider_of_judge, spend = judge_source
        return Judge(
            provider_of_judge, judge_id, model, prompt, suite, eval_id, workdir, configuration, spend
        )

    return judge_of


def ask(provider: Provider, request: PromptRequest) -> tuple[ProviderResponse, float]:
    """The provider's answer and its latency; a :class:`ProviderError` carries the time it took
    (``latency``)."""
    started = time.perf_counter()
    try:
        response = provider.answer(request)
    except ProviderError as exc:
        exc.latency = time.perf_counter() - started
        raise
    measured = time.perf_counter() - started
    # The agent's own figure (output.latency_ms, or a callable's `latency`) wins over wall time,
    # which also counts process start-up; the steps keep the measured duration either way.
    return response, measured if response.latency is None else response.latency


def answer_fields(
    response: ProviderResponse,
    latency: float,
    configuration: Configuration | None,
    model: str,
    redact: Redactor,
) -> dict[str, Any]:
    """The record's fields about an answer: its measures, an excerpt, steps and tool calls."""
    agent_log = next((step.log for step in response.steps if step.phase == "agent" and step.log), None)
    # Redacted before it is cut, so that no cut can leave part of a secret showing.
    kept, whole_chars = response_excerpt(redact(response.text) or "", agent_log)
    return {
        **answer_measures(response, configuration, model),
        "latency": latency,
        "response": kept,
        "response_chars": whole_chars,
        "cached": response.cached,
        "steps": redact_steps(response.steps, redact),
        "tool_calls": [
            call.model_copy(update={"error": redact(call.error)}) for call in response.tool_calls or ()
        ],
        "api_retries": response.api_retries,
    }


def check_answer(
    checks: tuple[CheckNode, ...],
    response: ProviderResponse,
    fields: dict[str, Any],
    judge: Judge | None,
    prompt: str,
    workdir: Path,
) -> tuple[bool | None, list[CheckResult]]:
    """Run ``checks`` on ``response`` (its measures as its record's ``fields`` from
    :func:`answer_fields` hold them); raises :class:`ChecksError` when a check cannot run."""
    seen = Response(
        response.text,
        response.output_tokens,
        judge.decide if judge else None,
        tool_calls=tuple(response.tool_calls or ()),
        tool_calls_reported=response.tool_calls is not None,
        cost=fields["cost"],
        latency=fields["latency"],
        input_tokens=response.input_tokens,
        prompt=prompt,
        workdir=workdir,
    )
    return run_checks(checks, seen)


def answer_note(response: ProviderResponse) -> str | None:
    """What the eval's message notes about an answer that was checked as it is: one cut off at the
    model's output limit (``finish_reason: length``)."""
    if response.finish_reason != "length":
        return None
    return (
        "note: the answer was cut off at the model's output limit (finish_reason: length); "
        "raise max_tokens (http.params) if it should be whole"
    )


def with_note(message: str | None, note: str | None) -> str | None:
    """``message`` with ``note`` on a line of its own after it (the note alone without one)."""
    if note is None:
        return message
    return f"{message}\n{note}" if message else note


def undecided_message(results: list[CheckResult]) -> str:
    reasons = sorted({r for result in results for r in result.undecided_reasons()})
    return "could not be decided: " + "; ".join(reasons)


def check_walk(checks: list[CheckRecord], depth: int, lines: list[str]) -> None:
    """Append a line per check (and per alternative of an ``or``) with its verdict to ``lines``."""
    for check in checks:
        mark = "ERROR" if check.error else {True: "PASS", False: "FAIL", None: "SKIP"}[check.passed]
        lines.append(f"{'  ' * depth}  {mark} {check.type}: {check.message}")
        check_walk(check.children, depth + 1, lines)


MAX_CHECK_LINES = 50  # of a failure message: an eval may have thousands of checks


def check_lines(checks: list[CheckRecord], depth: int = 0, limit: int = MAX_CHECK_LINES) -> list[str]:
    """The lines of :func:`check_walk`; past ``limit`` of them, only the checks that did not pass
    (as many as ``limit`` lines hold, the first one always), then a line saying how many are left
    out: the results JSON has every check's verdict."""
    lines: list[str] = []
    check_walk(checks, depth, lines)
    if len(lines) <= limit:
        return lines
    lines = []
    not_passed = [check for check in checks if check.passed is not True or check.error]
    shown = 0
    for check in not_passed:
        part: list[str] = []
        check_walk([check], depth, part)
        if shown and len(lines) + len(part) > limit:
            break
        lines += part[:limit]
        shown += 1
    passed, more = len(checks) - len(not_passed), len(not_passed) - shown
    counts = [f"{passed} that passed"] if passed else []
    counts += [f"{more} more that did not pass"] if more else []
    lines.append(
        f"{'  ' * depth}  … not shown: {' and '.join(counts)}, of the {len(checks)} checks (the "
        "results JSON has each one's verdict)"
    )
    return lines
