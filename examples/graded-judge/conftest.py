"""Run-wide metrics of this example: precision and recall of the `urgent` label.

Each eval's name is its true label (`urgent-*`, `routine-*`); the app's answer starts with the label
it predicted. The metrics are computed on the controller from every eval's record (of every xdist
worker), shown in the Run Summary (`Metrics: precision 0.50 · recall 0.50`), in the results'
`metrics` and `variables`, and usable in a score formula."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_vibeeval import EvalRecord, RunVariable, RunVariables


def _counts(records: Sequence[EvalRecord]) -> tuple[int, int, int] | None:
    """True positives, false positives, false negatives of `urgent`; None: no labelled eval ran."""
    labelled = [r for r in records if r.name.startswith(("urgent-", "routine-")) and r.response]
    if not labelled:
        return None
    truth = [r.name.startswith("urgent-") for r in labelled]
    said = [(r.response or "").startswith("urgent:") for r in labelled]
    pairs = list(zip(truth, said, strict=True))
    return pairs.count((True, True)), pairs.count((False, True)), pairs.count((True, False))


def precision(records: Sequence[EvalRecord]) -> tuple[float | None, str | None]:
    counts = _counts(records)
    if counts is None or counts[0] + counts[1] == 0:
        return None, "no eval was labelled urgent by the app"
    return counts[0] / (counts[0] + counts[1]), None


def recall(records: Sequence[EvalRecord]) -> tuple[float | None, str | None]:
    counts = _counts(records)
    if counts is None or counts[0] + counts[2] == 0:
        return None, "no urgent-* eval ran"
    return counts[0] / (counts[0] + counts[2]), None


def pytest_vibeeval_register_run_variables(registry: RunVariables) -> None:
    registry.register(RunVariable("precision", "fraction 0–1", "of the urgent label", precision, metric=True))
    registry.register(RunVariable("recall", "fraction 0–1", "of the urgent label", recall, metric=True))
