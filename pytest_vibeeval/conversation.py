"""A conversation eval (``turns:``): each user message is asked with the conversation so far and
its answer checked; the eval passes when every turn's checks pass. After a turn that fails or
errors the conversation stops: later turns are recorded as ``not_run``."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .answering import (
    Exchange,
    answer_fields,
    answer_note,
    ask,
    check_answer,
    check_lines,
    check_record,
    redact_steps,
    undecided_message,
    with_note,
)
from .checks import CheckNode, ChecksError
from .excerpts import response_excerpt
from .loading.templates import Redactor
from .providers import ProviderError
from .providers.base import ASSISTANT, USER
from .results import CheckRecord, EvalRecord, TurnRecord, judges_asked
from .spending import spent_measures
from .text_input import first_line, text_lines

if TYPE_CHECKING:
    from .judge import Judge


def run_conversation(
    base: EvalRecord,
    exchange: Exchange,
    prompts: tuple[str, ...],
    checks: tuple[tuple[CheckNode, ...], ...],
) -> EvalRecord:
    """Ask each of ``prompts`` in turn with the earlier turns as history and run its ``checks``;
    the record holds every turn, the sums of their measures, and the outcome with its message."""
    redact, request = exchange.redact, exchange.request
    turns: list[TurnRecord] = []
    record = base
    history: tuple[tuple[str, str], ...] = ()
    session: str | None = None
    session_tokens: tuple[int | None, ...] | None = None
    stopped = False
    for number, (prompt, turn_checks) in enumerate(zip(prompts, checks, strict=True), start=1):
        shown = response_excerpt(redact(prompt) or "")[0]
        if stopped:
            turns.append(TurnRecord(turn=number, outcome="not_run", prompt=shown))
            continue
        asked = replace(
            request,
            prompt=prompt,
            turn=number,
            history=history,
            session_id=session,
            session_tokens=session_tokens,
        )
        stop = _Stop(base, record, tuple(turns), number, shown, prompts, redact)
        if exchange.progress is not None:
            exchange.progress.so_far = stop.record_with
        exchange.entered("agent", f"{asked.configuration_id}, turn {number}/{len(prompts)}")
        try:
            response, latency = ask(exchange.provider, asked)
        except ProviderError as exc:
            # A refusal was paid for: its tokens and cost are the turn's and count in the sums.
            spent = spent_measures(exc, exchange.configuration, request.model)
            measures = {key: spent[key] for key in TURN_MEASURES if key in spent}
            turn = TurnRecord(
                turn=number,
                outcome="error",
                message=redact(exc.message) or "",
                prompt=shown,
                latency=exc.latency,
                **measures,
            )
            # Paid for now, so the eval's answers did not all come from the cache.
            update = {**_totals(record, turn, spent["cost_source"]), "cached": False} if spent else {}
            update["steps"] = [*record.steps, *redact_steps(exc.steps, redact)]
            update["latency"] = _plus(record.latency, exc.latency)
            record = record.model_copy(update=update)
            turns.append(turn)
            stopped = True
            continue
        fields = answer_fields(response, latency, exchange.configuration, request.model, redact)
        answered = base.model_copy(update=fields)
        turn = TurnRecord(
            turn=number,
            outcome="passed",
            prompt=shown,
            **{key: fields[key] for key in TURN_MEASURES},
        )
        judge = exchange.judge_of(judged_prompt(history, prompt))
        if exchange.progress is not None:
            exchange.progress.so_far = functools.partial(stop.record_with, fields=fields, judge=judge)
        failure: str | None = None
        exchange.entered("checks", f"turn {number}/{len(prompts)}")
        try:
            verdict, results = check_answer(turn_checks, response, fields, judge, prompt, request.workdir)
        except ChecksError as exc:
            verdict, results, failure = None, exc.results, redact(str(exc)) or ""
        checked = [check_record(r, redact) for r in results]
        turn = turn.model_copy(update={"judge_cost": judge.cost if judge else None, "checks": checked})
        if failure is not None:
            turn = turn.model_copy(update={"outcome": "error", "message": failure})
            stopped = True
        elif verdict is False:
            turn = turn.model_copy(update={"outcome": "failed", "message": _first_failure(checked)})
            stopped = True
        elif verdict is None:
            turn = turn.model_copy(update={"outcome": "skipped", "message": undecided_message(results)})
        if answer_note(response):
            turn = turn.model_copy(update={"message": with_note(turn.message, answer_note(response))})
        record = _add(record, turn, answered, turns)
        turns.append(turn)
        history = (*history, (USER, prompt), (ASSISTANT, response.text))
        session, session_tokens = response.session_id, response.session_tokens
    return _verdict(record.model_copy(update={"turns": turns}))


@dataclass(frozen=True)
class _Stop:
    """The record of a conversation stopped in turn ``number`` (its backstop fired): the turns
    before it as they finished, this one an error with what it spent, the later ones not run."""

    base: EvalRecord
    record: EvalRecord  # with the finished turns' sums
    turns: tuple[TurnRecord, ...]  # the finished turns
    number: int
    shown: str  # this turn's prompt as recorded
    prompts: tuple[str, ...]
    redact: Redactor

    def record_with(
        self, message: str, fields: dict[str, Any] | None = None, judge: Judge | None = None
    ) -> EvalRecord:
        """Stopped with ``message``; ``fields``: this turn's answer (see :func:`answer_fields`),
        ``judge``: its judge, whose calls until then are counted."""
        turn = TurnRecord(turn=self.number, outcome="error", message=message, prompt=self.shown)
        record = self.record
        if fields is not None:
            measures = {key: fields[key] for key in TURN_MEASURES}
            turn = turn.model_copy(update={**measures, "judge_cost": judge.cost if judge else None})
            record = _add(record, turn, self.base.model_copy(update=fields), self.turns)
        later = [
            TurnRecord(turn=n, outcome="not_run", prompt=response_excerpt(self.redact(p) or "")[0])
            for n, p in enumerate(self.prompts[self.number :], start=self.number + 1)
        ]
        turns = [*self.turns, turn, *later]
        return record.model_copy(update={"turns": turns, "outcome": "error", "message": message})


def judged_prompt(history: tuple[tuple[str, str], ...], prompt: str) -> str:
    """What an llm_judge check of a later turn is shown as the PROMPT: the conversation so far,
    then the user's latest message (the first turn's prompt as it is)."""
    if not history:
        return prompt
    earlier = "\n\n".join(f"[{role}]\n{text}" for role, text in history)
    return f"(a conversation; the RESPONSE answers its last user message)\n\n{earlier}\n\n[{USER}]\n{prompt}"


TURN_MEASURES = (
    "latency",
    "cost",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_tokens",
    "response",
    "response_chars",
    "cached",
    "tool_calls",
    "api_retries",
    "finish_reason",
)


def _plus(total: float | None, value: float | None) -> float | None:
    return value if total is None else total if value is None else total + value


def _known_sum(total: float | None, value: float | None, first: bool) -> float | None:
    """A total over the turns: unknown (None) as soon as one turn's value is."""
    if first:
        return value
    return None if total is None or value is None else total + value


def _judged(turn: TurnRecord) -> bool:
    """Whether the turn asked a judge (one that failed leaves a cost but no check)."""
    return turn.judge_cost is not None or bool(judges_asked(turn.checks))


def _add(
    record: EvalRecord, turn: TurnRecord, answered: EvalRecord, earlier: Sequence[TurnRecord]
) -> EvalRecord:
    """``record`` with ``turn``'s measures added (``earlier``: the turns added before): sums
    (unknown once a turn's is), the latest answer, all checks, steps and tool calls in order."""
    judge_cost = record.judge_cost
    if _judged(turn):  # a turn without an llm_judge check adds nothing to know
        judge_cost = _known_sum(judge_cost, turn.judge_cost, not any(map(_judged, earlier)))
    return record.model_copy(
        update={
            **_totals(record, turn, answered.cost_source),
            "latency": _plus(record.latency, turn.latency),
            "judge_cost": judge_cost,
            "response": turn.response,
            "response_chars": turn.response_chars,
            "cached": (record.cached or turn.turn == 1) and turn.cached,
            "checks": [*record.checks, *turn.checks],
            "steps": [*record.steps, *answered.steps],
            "tool_calls": [*record.tool_calls, *turn.tool_calls],
            "api_retries": _plus(record.api_retries, turn.api_retries),
        }
    )


def _totals(record: EvalRecord, turn: TurnRecord, cost_source: str | None) -> dict[str, Any]:
    """The eval's cost and tokens with ``turn``'s added (unknown once a turn's is), and why the
    model stopped its latest answer; ``cost_source``: how ``turn``'s cost is known."""
    first = turn.turn == 1
    tokens_in = _known_sum(record.input_tokens, turn.input_tokens, first)
    tokens_out = _known_sum(record.output_tokens, turn.output_tokens, first)
    tokens_cached = _known_sum(record.cached_input_tokens, turn.cached_input_tokens, first)
    tokens_written = _known_sum(record.cache_write_tokens, turn.cache_write_tokens, first)
    return {
        "cost": _known_sum(record.cost, turn.cost, first),
        "cost_source": record.cost_source or cost_source,
        "input_tokens": None if tokens_in is None else int(tokens_in),
        "output_tokens": None if tokens_out is None else int(tokens_out),
        "cached_input_tokens": None if tokens_cached is None else int(tokens_cached),
        "cache_write_tokens": None if tokens_written is None else int(tokens_written),
        "finish_reason": turn.finish_reason,
    }


def _first_failure(checks: list[CheckRecord]) -> str:
    failed = next((check for check in checks if check.passed is False), None)
    if failed is None:
        return "checks failed"
    return f"{failed.type}: {first_line(failed.message or '')}"


def _verdict(record: EvalRecord) -> EvalRecord:
    """The eval's outcome from its turns: the first turn that errored or failed decides it; else
    a turn that could not be decided skips it; else it passed."""
    total = len(record.turns)
    for turn in record.turns:
        if turn.outcome in ("error", "failed"):
            message = conversation_failure(record, turn)
            return record.model_copy(update={"outcome": turn.outcome, "message": message})
    undecided = [turn for turn in record.turns if turn.outcome == "skipped"]
    if undecided:
        message = "; ".join(f"turn {turn.turn}/{total}: {turn.message}" for turn in undecided)
        return record.model_copy(update={"outcome": "skipped", "message": message})
    noted = "; ".join(f"turn {turn.turn}/{total}: {turn.message}" for turn in record.turns if turn.message)
    return record.model_copy(update={"outcome": "passed", "message": noted or None})


def conversation_failure(record: EvalRecord, failed: TurnRecord, response_chars: int = 600) -> str:
    """The failure report of a conversation: which turn failed and its first failing check (or
    its error) on the first line, then every turn with its prompt, checks and, for the failed
    one, the start of its answer."""
    total = len(record.turns)
    headline = first_line(failed.message or "")
    lines = [f"turn {failed.turn}/{total}: {headline}"]
    for turn in record.turns:
        prompt = " ".join(turn.prompt.split())
        prompt = prompt if len(prompt) <= 120 else prompt[:120] + "…"
        lines.append(f"turn {turn.turn} ({turn.outcome.replace('_', ' ')}): {prompt}")
        lines += check_lines(turn.checks, 1)
        if turn is failed:
            if turn.outcome == "error" and turn.message:
                lines.extend("    " + line for line in text_lines(turn.message)[1:])
            text = turn.response or ""
            whole = turn.response_chars or len(text)
            shown = text if len(text) <= response_chars else text[:response_chars] + f"… [{whole} chars]"
            if turn.response is not None:
                lines.append("  response:")
                lines.extend("    " + line for line in text_lines(shown))
    return "\n".join(lines)
