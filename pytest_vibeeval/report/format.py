"""How every output (the Run Summary, baseline lines, the HTML report, JUnit properties) shows a
run and its values: one run title, one spelling of a missing score, one of a missing metric."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..text_input import first_line

if TYPE_CHECKING:  # importing the models costs a session without evals (the budget's message)
    from ..results import EvalRecord, RunRecord

NULL_SCORE = "null"  # a score the formula could not give (the results JSON's null; score_error says why)
MISSING = "n/a"  # a value no eval reported, or one that is not a finite number


def run_title(run: RunRecord) -> str:
    """``quiz × claude``: the suite and the configuration of a run."""
    return f"{run.suite} × {run.configuration}"


def number(value: Any) -> float | None:
    """A finite number, or None (missing, null, not a number, inf/nan)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    found = float(value)
    return found if math.isfinite(found) else None


SIGNIFICANT = 2  # digits a small nonzero value keeps, so that it never prints as 0.00
MAX_DECIMALS = 12


def decimal(value: Any, digits: int = 2, grouped: bool = False, missing: str = MISSING) -> str:
    """A number with ``digits`` decimals (thousands ``grouped``; from 1e9 in exponent form), or
    ``missing``. A small nonzero value gets the decimals it needs for two significant digits
    (0.003, not 0.00; 0.000021, not 0.0000)."""
    found = number(value)
    if found is None:
        return missing
    if abs(found) >= 1e9:
        return f"{found:.3e}"
    if found != 0 and abs(found) < 10 ** (SIGNIFICANT - 1 - digits):
        needed = SIGNIFICANT - 1 - math.floor(math.log10(abs(found)))
        if needed > MAX_DECIMALS:
            return f"{found:.{SIGNIFICANT - 1}e}"
        text = f"{found:.{needed}f}".rstrip("0")
        whole, _, fraction = text.partition(".")
        return f"{whole}.{fraction.ljust(digits, '0')}"
    return f"{found:{',' if grouped else ''}.{digits}f}"


def signed(value: float) -> str:
    """A difference as :func:`decimal` shows it, with its sign (``+1.20``, ``-3.00``)."""
    text = decimal(value)
    return text if text.startswith("-") else f"+{text}"


def score(value: Any) -> str:
    """A score with two decimals (large ones in exponent form; small ones with two significant
    digits), or ``null``."""
    return decimal(value, missing=NULL_SCORE)


def money(value: Any) -> str:
    """USD with four decimals (small amounts with two significant digits), or ``n/a``."""
    found = number(value)
    return MISSING if found is None else f"${decimal(found, 4, grouped=True)}"


def seconds(value: Any) -> str:
    """Milliseconds under 0.1 s, else seconds as :func:`decimal` shows them, or ``n/a``."""
    found = number(value)
    if found is None:
        return MISSING
    return f"{found * 1000:.1f}ms" if abs(found) < 0.1 else f"{decimal(found, grouped=True)}s"


def failed_check(record: EvalRecord) -> str | None:
    """The first failed check as ``type: message`` (in a conversation, after the turn that failed:
    ``turn 2/3: contains: …``), or None."""
    if record.turns:
        turn = next((t for t in record.turns if t.outcome in ("failed", "error")), None)
        if turn is None:
            return None
        return f"turn {turn.turn}/{len(record.turns)}: {first_line(turn.message or '')}"
    for check in record.checks:
        if check.passed is False:
            return f"{check.type}: {check.message}"
    return None
