"""The rubric's formula and grades: what scoring and the Run Summary need of the rubric (see
``rubric``), apart from its signals' text heuristics and the YAML parser they load, which the xdist
controller, scoring the workers' records, never uses."""

from __future__ import annotations

import math

RUBRIC_FORMULA = (
    "round((0.35 * tool_success_rate + 0.25 * output_quality + 0.20 * efficiency"
    " + 0.15 * (1 - error_rate) + 0.05 * structure_score) * 100, 2)"
)
"""The rubric score in the formula language (the ``rubric`` preset), with ``rubric.WEIGHTS``."""

GRADES: tuple[tuple[float, str], ...] = ((90.0, "A+"), (80.0, "A"), (70.0, "B"), (60.0, "C"), (50.0, "D"))
"""Each grade's lowest score (inclusive): 89.99 is an A, 90 an A+; below 50 is F."""


def grade(score: float | None) -> str | None:
    """A+ (≥ 90), A (≥ 80), B (≥ 70), C (≥ 60), D (≥ 50) or F; ``None`` without a score. Decided on
    the score rounded to 2 decimals, as it is shown: 89.997 shows as 90.00, an A+."""
    if score is None or math.isnan(score):
        return None
    shown = round(score, 2)
    return next((letter for lowest, letter in GRADES if shown >= lowest), "F")
