"""How every output (the Run Summary, baseline lines, the HTML report, JUnit properties) shows a
run and its values: one run title, one spelling of a missing score, one of a missing metric."""

from __future__ import annotations

import math
from typing import Any

from ..results import RunRecord

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


def decimal(value: Any, digits: int = 2, grouped: bool = False, missing: str = MISSING) -> str:
    """A number with ``digits`` decimals (thousands ``grouped``; from 1e9 in exponent form), or
    ``missing``."""
    found = number(value)
    if found is None:
        return missing
    return f"{found:.3e}" if abs(found) >= 1e9 else f"{found:{',' if grouped else ''}.{digits}f}"


def score(value: Any) -> str:
    """A score with two decimals (large ones in exponent form), or ``null``."""
    return decimal(value, missing=NULL_SCORE)


def money(value: Any) -> str:
    """USD with four decimals, or ``n/a``."""
    found = number(value)
    return MISSING if found is None else f"${found:,.4f}"


def seconds(value: Any) -> str:
    """Milliseconds under 0.1 s, else seconds, or ``n/a``."""
    found = number(value)
    if found is None:
        return MISSING
    return f"{found * 1000:.1f}ms" if abs(found) < 0.1 else f"{found:,.2f}s"
