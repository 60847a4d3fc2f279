"""``python: module:function``: a check written in Python, given the whole :class:`Response`.

The function (in the suite's folder or installed) is called with the response and returns a bool,
a 0–1 score (passing at ``threshold``, default 0.5), ``(verdict, reason)``, a dict with ``pass``
and/or ``score`` and ``reason``, or a :class:`Verdict`. An exception in it, or a return value of
another kind, makes the eval an error with the message, never a pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo

from .check_api import CheckError, CheckName, CheckType, Response, Verdict, against_threshold, raised_at
from .pyimport import ImportProblem, PythonTarget, import_target
from .structural_checks import suite_dir

DEFAULT_THRESHOLD = 0.5
RETURNS = "a bool, a 0–1 score, (verdict, reason), {pass|score, reason} or a Verdict"


class PythonArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    function: PythonTarget = Field(description="`module:function`; the suite's folder is importable")
    threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        default=DEFAULT_THRESHOLD, description="a returned score passes at or above this (0–1)"
    )
    name: CheckName | None = None


@dataclass(frozen=True)
class PythonCheck:
    """A parsed ``python`` check: its target, threshold and the suite's folder."""

    function: str
    threshold: float
    folder: Path
    name: str | None = None

    @property
    def check_name(self) -> str | None:
        """The check's name, which makes its score ``<name>_score`` (see :attr:`.checks.Check.name`)."""
        return self.name


def _parse(value: str | PythonArgs, info: ValidationInfo) -> PythonCheck:
    args = value if isinstance(value, PythonArgs) else PythonArgs(function=value)
    return PythonCheck(args.function, args.threshold, suite_dir(info).resolve(), args.name)


PythonValue = Annotated[PythonTarget | PythonArgs, AfterValidator(_parse)]


def _score(value: Any, check: PythonCheck) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise CheckError(f"python check {check.function} returned the score {value!r}; a score is 0–1")
    if math.isnan(value):
        raise CheckError(f"python check {check.function} returned the score NaN")
    return float(value)


def interpret(value: Any, check: PythonCheck) -> Verdict:
    """The verdict a custom check's return value means; :class:`CheckError` when it means none."""
    name = check.function
    if isinstance(value, Verdict):
        return value
    reason: Any = None
    if isinstance(value, tuple) and len(value) == 2:
        value, reason = value
    elif isinstance(value, dict) and set(value) <= {"pass", "passed", "score", "reason"} and value:
        if not {"pass", "passed", "score"} & set(value):
            raise CheckError(
                f"python check {name} returned {value!r}, without `pass` or `score`; return {RETURNS}"
            )
        reason = value.get("reason")
        if "score" in value:
            score = _score(value["score"], check)
            passed = value.get("pass", value.get("passed"))  # None: the threshold decides
            return _scored(score, passed, reason, check)
        value = value.get("pass", value.get("passed"))
    if reason is not None and not isinstance(reason, str):
        raise CheckError(f"python check {name} returned the reason {reason!r}; a reason is text")
    if isinstance(value, bool):
        return Verdict(value, reason or f"{name} returned {value}")
    if isinstance(value, int | float):
        return _scored(_score(value, check), None, reason, check)
    raise CheckError(f"python check {name} returned {value!r}; return {RETURNS}")


def _scored(score: float, passed: Any, reason: str | None, check: PythonCheck) -> Verdict:
    """The verdict of a score, against the threshold unless the check said ``pass`` itself (then
    its word decides, and the message says so rather than compare with a threshold it ignored)."""
    if passed is None:
        passed, text = against_threshold(score, check.threshold)
        text = f"score {text}"
    elif not isinstance(passed, bool):
        raise CheckError(f"python check {check.function} returned pass={passed!r}; pass is true or false")
    else:
        text = f"score {score:.2f}, {'passed' if passed else 'failed'} by the check itself (pass: {passed})"
    return Verdict(passed, f"{text}: {reason}" if reason else text, score)


def _python(check: PythonCheck, response: Response) -> Verdict:
    try:
        function = import_target(check.function, check.folder, "a python check")
    except ImportProblem as exc:
        raise CheckError(str(exc)) from None
    try:
        value = function(response)
    except (Exception, SystemExit) as exc:
        raise CheckError(
            f"python check {check.function} raised {type(exc).__name__}: {exc}{raised_at(exc)}"
        ) from None
    return interpret(value, check)


CUSTOM_CHECKS: tuple[CheckType, ...] = (
    CheckType(
        "python",
        PythonValue,
        _python,
        "a Python function `module:function` decides from the whole response (answer, tool calls, "
        "cost, latency, tokens); a 0–1 score passes at `threshold` (default 0.5)",
        template_fields=False,
    ),
)
