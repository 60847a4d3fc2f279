"""``llm_judge``: a judge configuration decides whether a response meets criteria, or scores it.

With ``criteria`` the judge gets the criteria, the eval's prompt and the response, and must answer
one JSON object ``{"pass": true|false, "reason": "..."}``. With ``rubric`` it scores the response
against the rubric, ``{"score": 0–1, "reasoning": "..."}``, and the check passes at the threshold.
``judges: [model, ...]`` asks each model through the judge configuration; their verdicts combine by
``aggregate`` (mean score, or majority). An answer that is no such object is a :class:`JudgeError`
(the eval errors) naming the judge and showing the answer's start, never a pass or a silent 0; so
is an answer holding several such objects that disagree, and so is a judge that failed or refused.
A judge that answered no verdict (a refusal and a filtered answer too) is in the check's ``judges``
all the same, with that ``error`` and what its answer cost.
The judges' cost is counted apart from the system under test's (``judge_cost``).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from .cache import forget
from .check_api import JudgeError, Verdict, against_threshold
from .checks import JudgeArgs
from .models import Configuration
from .providers import PromptRequest, Provider, ProviderError
from .results import JudgeRecord
from .spending import answer_measures, spent_measures
from .surrogates import loads

JUDGE_SYSTEM_PROMPT = (
    "You are an impartial grader. Decide whether the RESPONSE to the PROMPT meets the CRITERIA. "
    'Answer with one JSON object and nothing else: {"pass": true or false, "reason": "<one sentence>"}'
)
JUDGE_RUBRIC_PROMPT = (
    "You are an impartial grader. Score how well the RESPONSE to the PROMPT meets the RUBRIC, from 0 to "
    "1: 1 meets it fully, 0.7 meets it with minor gaps, 0.4 meets part of it, 0 does not meet it. "
    'Answer with one JSON object and nothing else: {"score": <a number from 0 to 1>, '
    '"reasoning": "<one or two sentences>"}'
)
VERDICT_FORMAT = '{"pass": …, "reason": …}'
SCORE_FORMAT = '{"score": 0–1, "reasoning": …}'
_FENCED = re.compile(r"```[A-Za-z]*\s*\n?(.*?)```", re.DOTALL)
SHOWN = 200
FROM_CACHE = " (answered from --vibe-cache, which no longer holds it: the next run asks again)"
_MAX_STARTS = 50  # `{` positions tried as the start of the object


def judge_prompt(criteria: str, prompt: str, response: str, label: str = "CRITERIA") -> str:
    return f"{label}:\n{criteria}\n\nPROMPT:\n{prompt}\n\nRESPONSE:\n{response}\n"


def json_objects(text: str) -> list[dict[str, Any]]:
    """The JSON objects in a judge's answer, in order: the whole answer, else its fenced code blocks,
    else the objects in the text (at most ``_MAX_STARTS`` tried), never one nested in another (a
    per-criterion breakdown's ``score`` is no verdict of its own)."""
    stripped = text.strip()
    found: list[dict[str, Any]] = []
    for candidate in (stripped, *(m.group(1).strip() for m in _FENCED.finditer(stripped))):
        try:
            data = loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            found.append(data)
    if found:
        return found
    decoder = json.JSONDecoder()
    after = 0  # the end of the last object read: a "{" before it opens one nested in it
    for count, match in enumerate(re.finditer(r"\{", stripped)):
        if count >= _MAX_STARTS:
            break
        if match.start() < after:
            continue
        try:
            data, end = decoder.raw_decode(stripped, match.start())
        except ValueError:
            continue
        if isinstance(data, dict):
            found.append(data)
            after = end
    return found


def _verdict_object(
    text: str, keys: tuple[str, ...], value_of: Callable[[dict[str, Any]], Any], what: str, judge: str
) -> dict[str, Any] | None:
    """The JSON object of a judge's answer (:func:`json_objects`) that has one of ``keys``, else
    the first; None when there is none. A :class:`JudgeError` when the objects that have one give
    different values (``value_of``): a format example before the verdict, or a judge that changed
    its mind, must never decide the check by coming first."""
    found = json_objects(text)
    having = [data for data in found if any(key in data for key in keys)]
    values: list[Any] = []
    for data in having:
        value = value_of(data)
        if value not in values:
            values.append(value)
    if len(values) > 1:
        given = ", then ".join(json.dumps(value) for value in values)
        raise JudgeError(f'{judge} gave conflicting {what} ("{keys[0]}": {given}): {_shown(text)}')
    return having[0] if having else (found[0] if found else None)


def _shown(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[:SHOWN] + "…")


def _reason(data: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _pass_value(data: dict[str, Any]) -> Any:
    return data.get("pass", data.get("passed"))


def _score_value(data: dict[str, Any]) -> Any:
    """The object's ``score``; one written as text (``"0.8"``) as the number it holds."""
    value = data.get("score")
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return float(value.strip())
    return value


def parse_verdict(text: str, judge: str = "the judge") -> tuple[bool, str]:
    """``(passed, reason)`` from the judge's answer; raises :class:`JudgeError` when it is not a
    JSON object with a boolean ``pass`` (``passed`` is accepted too) and a string ``reason``."""
    data = _verdict_object(text, ("pass", "passed"), _pass_value, "verdicts", judge)
    if data is None:
        raise JudgeError(f"{judge} did not answer a JSON verdict {VERDICT_FORMAT}: {_shown(text)}")
    verdict = _pass_value(data)
    if not isinstance(verdict, bool):
        raise JudgeError(f'{judge}\'s verdict has no boolean "pass": {_shown(text)}')
    reason = _reason(data, "reason", "reasoning")
    if reason is None:
        raise JudgeError(f'{judge}\'s verdict has no "reason": {_shown(text)}')
    return verdict, reason


def parse_score(text: str, judge: str = "the judge") -> tuple[float, str]:
    """``(score, reasoning)`` from the judge's answer to a rubric; raises :class:`JudgeError` when it
    is not a JSON object with a ``score`` from 0 to 1 (a number, or text holding one) and a string
    ``reasoning`` (``reason`` is accepted too)."""
    data = _verdict_object(text, ("score",), _score_value, "scores", judge)
    if data is None:
        raise JudgeError(f"{judge} did not answer a JSON score {SCORE_FORMAT}: {_shown(text)}")
    value = _score_value(data)
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise JudgeError(f'{judge}\'s answer has no number "score": {_shown(text)}')
    if not 0 <= value <= 1:
        raise JudgeError(f"{judge} scored {value:g}, outside 0–1: {_shown(text)}")
    reasoning = _reason(data, "reasoning", "reason")
    if reasoning is None:
        raise JudgeError(f'{judge}\'s answer has no "reasoning": {_shown(text)}')
    return float(value), reasoning


@dataclass
class Judge:
    """One eval's judge: asks ``provider`` (the judge configuration) and adds up what it costs."""

    provider: Provider
    config_id: str
    model: str  # the suite's model: the request's model unless `judges:` names others
    prompt: str  # the eval's prompt, as sent to the system under test
    suite: str
    eval_id: str
    workdir: Path
    configuration: Configuration | None = None  # the judge configuration's settings (its pricing)
    spend: Callable[[float | None], None] | None = None  # told each fresh answer's cost (the budget)
    cost: float | None = None  # None: no judge asked yet, or one whose cost is unknown
    calls: int = 0
    unpriced: int = 0  # judges asked whose cost is unknown (not reported, no prices): so is the total

    def unavailable_reason(self) -> str | None:
        reason = self.provider.unavailable_reason()
        return f"llm_judge (judge configuration {self.config_id!r}): {reason}" if reason else None

    def decide(self, args: JudgeArgs, response: str) -> Verdict:
        """The check's verdict on ``response``; undecided when the judge cannot run here."""
        unavailable = self.unavailable_reason()
        if unavailable:
            return Verdict(None, unavailable)
        models: list[str | None] = [*args.judges] if args.judges else [None]
        answers: list[JudgeRecord] = []
        for model in models:
            try:
                answer = self._ask(args, response, model)
            except JudgeError as exc:
                raise JudgeError(str(exc), tuple(answers)) from None
            answers.append(answer)
            if answer.error is not None:
                raise JudgeError(answer.error, tuple(answers))
        return combine(args, tuple(answers))

    def _who(self, model: str | None) -> str:
        if model is None:
            return f"llm_judge: the judge (configuration {self.config_id!r})"
        return f"llm_judge: the judge model {model!r} (configuration {self.config_id!r})"

    def _ask(self, args: JudgeArgs, response: str, model: str | None) -> JudgeRecord:
        """One judge's answer; one that is no verdict (a refusal, a filtered answer, or something
        else than a verdict) has an ``error``, and what it cost all the same. A :class:`JudgeError`
        when no answer came (the request failed): nothing is known to be spent."""
        graded = args.rubric is not None
        system = JUDGE_RUBRIC_PROMPT if graded else JUDGE_SYSTEM_PROMPT
        text = args.rubric if args.rubric is not None else args.criteria or ""
        asked = judge_prompt(text, self.prompt, response, "RUBRIC" if graded else "CRITERIA")
        request = PromptRequest(
            asked,
            model or self.model,
            system,
            self.suite,
            self.eval_id,
            self.config_id,
            self.workdir,
            grading=True,
        )
        judged = partial(JudgeRecord, model=model, system_prompt=system, prompt=asked)
        self.calls += 1
        started = time.perf_counter()
        try:
            answer = self.provider.answer(request)
        except ProviderError as exc:
            failed = f"{self._who(model)} failed: {exc.message}"
            spent = spent_measures(exc, self.configuration, request.model)
            if not spent:
                raise JudgeError(failed) from None
            self._count(spent["cost"], cached=False)  # a refusal was paid for
            latency = time.perf_counter() - started
            return judged(passed=None, reasoning="", error=failed, latency=latency, **_recorded(spent))
        latency = answer.latency if answer.latency is not None else time.perf_counter() - started
        measures = _recorded(answer_measures(answer, self.configuration, request.model))
        self._count(measures["cost"], answer.cached)
        judged = partial(judged, latency=latency, cached=answer.cached, **measures)
        try:
            passed, score, reasoning = _read(args, answer.text, self._who(model))
        except JudgeError as exc:
            forget(self.provider, request)  # the next run asks again instead of repeating it
            return judged(passed=None, reasoning="", error=f"{exc}{FROM_CACHE if answer.cached else ''}")
        return judged(passed=passed, score=score, reasoning=reasoning)

    def _count(self, cost: float | None, cached: bool) -> None:
        """Add an answer's ``cost`` to the judge's (unknown once one's is) and tell the budget
        what it cost now (a cached answer: nothing)."""
        if self.spend is not None and not cached:
            self.spend(cost)
        if cost is None:
            self.unpriced += 1
        self.cost = None if self.unpriced else (self.cost or 0.0) + (cost or 0.0)


def _recorded(measures: dict[str, Any]) -> dict[str, Any]:
    """The measures of an answer (:mod:`.spending`) that a :class:`JudgeRecord` holds."""
    return {key: measures.get(key) for key in ("cost", "cost_source", "input_tokens", "output_tokens")}


def _read(args: JudgeArgs, text: str, judge: str) -> tuple[bool, float | None, str]:
    """``(passed, score, reasoning)`` from a judge's answer ``text``: a verdict, or with a rubric a
    score (passing at the threshold); :class:`JudgeError` when it is neither."""
    if args.rubric is None:
        passed, reason = parse_verdict(text, judge)
        return passed, None, reason
    score, reasoning = parse_score(text, judge)
    return against_threshold(score, args.pass_mark)[0], score, reasoning


def combine(args: JudgeArgs, answers: tuple[JudgeRecord, ...]) -> Verdict:
    """The check's verdict from its judges' answers (see :class:`JudgeArgs`)."""
    scores = [a.score for a in answers if a.score is not None]
    score = sum(scores) / len(scores) if args.rubric is not None and scores else None
    if len(answers) == 1:
        [only] = answers
        if score is None:
            return Verdict(only.passed, f"judge: {only.reasoning}", judges=answers)
        passed, compared = against_threshold(score, args.pass_mark)
        return Verdict(passed, f"judge: score {compared}: {only.reasoning}", score, answers)
    each = ", ".join(
        f"{a.model}: {'pass' if a.passed else 'fail'}" if a.score is None else f"{a.model} {a.score:.2f}"
        for a in answers
    )
    if args.combine == "mean" and score is not None:
        passed, compared = against_threshold(score, args.pass_mark)
        message = f"judges: mean score {compared} ({each})"
    else:
        ayes = sum(a.passed is True for a in answers)
        passed = 2 * ayes > len(answers)
        mark = "" if score is None else f" (score >= {args.pass_mark:g})"
        message = (
            f"judges: {ayes} of {len(answers)} passed{mark}, {'a' if passed else 'no'} majority ({each})"
        )
        if score is not None:
            message += f"; mean score {score:.2f}"
    return Verdict(passed, message, score, answers)
