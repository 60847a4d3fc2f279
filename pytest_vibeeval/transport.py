"""What travels from an item to the controller on its reports' ``user_properties``: the item's
:class:`RunInfo` (attached at collection) and its finished record (attached by its body). Workers
need only this module, not the scoring code that reads the records on the controller."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RUN_PROPERTY = "vibeeval_run"
RESULT_PROPERTY = "vibeeval_result"


@dataclass
class RunInfo:
    """What an item knows about its run; attached at collection so every report carries it."""

    suite: str
    source: str
    configuration: str
    configuration_name: str | None
    score_formula: str
    eval_id: str
    named: bool
    suite_evals: int  # evals in the suite, selected or not
    eval_index: int = -1  # position in the suite; -1 when unknown (a crashed item)
    score_min: float | None = None  # the score gate; None: no bound
    score_max: float | None = None
    # The formula as collection read it (Formula.canonical: hyphenated names bracketed, a preset
    # expanded), which parse_formula(text, None) reads the same way whichever evals ran. None only
    # for a RunInfo made without one; then score_formula is re-read against the run's variables.
    score_canonical: str | None = None
    score_preset: str | None = None  # the preset's name when the formula is one
    repeat: int = 0  # 1…repeats with --vibe-repeat; 0 when not repeated
    repeats: int = 1
    min_pass_rate: float | None = None  # the eval's
    input_digest: str | None = None  # the suite file(s) and the configuration's settings (resume)

    def key(self) -> tuple[str, str]:
        return (self.source, self.configuration)


def longrepr_text(report: Any) -> str | None:
    """A report's failure text, led by the exception line (e.g. a pytest-timeout ``Failed: Timeout``)."""
    if report.longrepr is None:
        return None
    if isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])
    crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
    text = str(report.longrepr)
    return f"{crash}\n{text}" if crash else text
