"""``llm_judge``: a judge configuration decides whether a response meets the criteria.

The judge gets the criteria, the eval's prompt and the response, and must answer one JSON object
``{"pass": true|false, "reason": "..."}``; the reason becomes the check's message. An answer that
is not such a verdict is a :class:`JudgeError` (the eval errors), never a pass. The judge's cost
is counted apart from the system under test's (``judge_cost``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .providers import PromptRequest, Provider, ProviderError

JUDGE_SYSTEM_PROMPT = (
    "You are an impartial grader. Decide whether the RESPONSE to the PROMPT meets the CRITERIA. "
    'Answer with one JSON object and nothing else: {"pass": true or false, "reason": "<one sentence>"}'
)
_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)
SHOWN = 200


class JudgeError(Exception):
    """The judge could not give a verdict (it failed, or answered something else)."""


def judge_prompt(criteria: str, prompt: str, response: str) -> str:
    return f"CRITERIA:\n{criteria}\n\nPROMPT:\n{prompt}\n\nRESPONSE:\n{response}\n"


def parse_verdict(text: str) -> tuple[bool, str]:
    """``(passed, reason)`` from the judge's answer; raises :class:`JudgeError` when it is not a
    JSON object with a boolean ``pass`` (``passed`` is accepted too) and a string ``reason``."""
    stripped = _FENCE.sub("", text.strip())
    start, end = stripped.find("{"), stripped.rfind("}")
    data: Any = None
    if start != -1 and end > start:
        try:
            data = json.loads(stripped[start : end + 1])
        except json.JSONDecodeError:
            data = None
    shown = text if len(text) <= SHOWN else text[:SHOWN] + "…"
    if not isinstance(data, dict):
        raise JudgeError(f'the judge did not answer a JSON verdict {{"pass": …, "reason": …}}: {shown!r}')
    verdict = data.get("pass", data.get("passed"))
    if not isinstance(verdict, bool):
        raise JudgeError(f'the judge\'s verdict has no boolean "pass": {shown!r}')
    reason = data.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise JudgeError(f'the judge\'s verdict has no "reason": {shown!r}')
    return verdict, reason.strip()


@dataclass
class Judge:
    """One eval's judge: asks ``provider`` (the judge configuration) and adds up what it costs."""

    provider: Provider
    config_id: str
    model: str
    prompt: str  # the eval's prompt, as sent to the system under test
    suite: str
    eval_id: str
    workdir: Path
    cost: float | None = None
    calls: int = 0
    reasons: list[str] = field(default_factory=list)

    def unavailable_reason(self) -> str | None:
        reason = self.provider.unavailable_reason()
        return f"llm_judge (judge configuration {self.config_id!r}): {reason}" if reason else None

    def decide(self, criteria: str, response: str) -> tuple[bool | None, str]:
        """The judge's verdict on ``response``; ``None`` (undecided) when the judge cannot run here."""
        unavailable = self.unavailable_reason()
        if unavailable:
            return None, unavailable
        request = PromptRequest(
            judge_prompt(criteria, self.prompt, response),
            self.model,
            JUDGE_SYSTEM_PROMPT,
            self.suite,
            self.eval_id,
            self.config_id,
            self.workdir,
        )
        self.calls += 1
        try:
            answer = self.provider.answer(request)
        except ProviderError as exc:
            failed = f"llm_judge: the judge configuration {self.config_id!r} failed"
            raise JudgeError(f"{failed}: {exc.message}") from None
        if answer.cost is not None:
            self.cost = (self.cost or 0.0) + answer.cost
        passed, reason = parse_verdict(answer.text)
        return passed, f"judge: {reason}"
