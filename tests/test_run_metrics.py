"""Run-wide metrics of a plugin (``pytest_vibeeval_register_run_variables`` with ``metric=True``):
computed on the controller from every worker's records, in the results, the Run Summary and the
formula; a metric that raises or returns no number is reported like a formula error."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml
from helpers import XDIST_MODES, load_json, run, run_of, write
from test_results_schema import results_schema

from pytest_vibeeval import RunVariable
from pytest_vibeeval.results import EvalRecord
from pytest_vibeeval.scoring.variables import compute_variables

CONFTEST = '''
from pytest_vibeeval import RunVariable


def _counts(records):
    """Evals named spam-* are spam; the app's answer is its prediction."""
    labelled = [r for r in records if r.outcome != "skipped" and r.response is not None]
    tp = sum(r.name.startswith("spam-") and r.response == "spam" for r in labelled)
    fp = sum(not r.name.startswith("spam-") and r.response == "spam" for r in labelled)
    fn = sum(r.name.startswith("spam-") and r.response != "spam" for r in labelled)
    return tp, fp, fn


def precision(records):
    tp, fp, _ = _counts(records)
    return (tp / (tp + fp), None) if tp + fp else (None, "nothing was predicted spam")


def recall(records):
    tp, _, fn = _counts(records)
    return (tp / (tp + fn), None) if tp + fn else (None, "no eval is spam")


def broken(records):
    return len(records) / 0


def wordy(records):
    return "lots", None


def pytest_vibeeval_register_run_variables(registry):
    registry.register(RunVariable("precision", "fraction 0–1", "of spam", precision, metric=True))
    registry.register(RunVariable("recall", "fraction 0–1", "of spam", recall, metric=True))
    registry.register(RunVariable("broken", "count", "raises", broken, metric=True))
    registry.register(RunVariable("wordy", "count", "returns text", wordy))
'''
BROKEN_LINE = CONFTEST.lstrip("\n").splitlines().index("    return len(records) / 0") + 1
APP = """
def classify(prompt):
    return "spam" if "prize" in prompt or "free" in prompt else "ham"
"""


def suite(formula: str) -> str:
    cases = {
        "spam-prize": "You won a prize",
        "spam-quiet": "Cheap meds, no questions",  # missed: recall 2/3
        "spam-free": "free money",
        "ham-lunch": "Lunch at noon?",
        "ham-free": "Are you free tomorrow?",  # a false alarm: precision 2/3
    }
    data: dict[str, Any] = {
        "metadata": {"name": "spam", "model": "m"},
        "configurations": {"app": {"python": "app:classify"}},
        "score": {"formula": formula},
        "evals": [
            {"name": name, "prompt": text, "checks": [{"min_tokens": 1}]} for name, text in cases.items()
        ],
    }
    return yaml.safe_dump(data, sort_keys=False)


@XDIST_MODES
def test_plugin_metrics_are_in_the_results_the_summary_and_the_formula(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "conftest.py", CONFTEST)
    write(pytester.path / "app.py", APP)
    write(pytester.path / "spam.eval.yaml", suite("precision * 50 + recall * 50"))
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(passed=5)
    data = load_json(results)
    jsonschema.Draft202012Validator(results_schema()).validate(data)  # the schema allows plugin metrics
    record = run_of(data, "app")
    assert record["metrics"]["precision"] == pytest.approx(2 / 3)  # over all five evals, both workers
    assert record["metrics"]["recall"] == pytest.approx(2 / 3)
    assert record["variables"]["precision"] == record["metrics"]["precision"]
    assert record["score"] == pytest.approx(200 / 3)
    assert "wordy" not in record["metrics"] and record["variables"]["wordy"] is None
    assert record["variable_errors"] == {
        "broken": "run variable 'broken' (conftest.broken) raised ZeroDivisionError: division by zero "
        f"(at conftest.py:{BROKEN_LINE})",
        "wordy": "run variable 'wordy' (conftest.wordy) returned ('lots', None); return a number, or "
        "(value, None) or (None, reason)",
    }
    result.stdout.fnmatch_lines(
        [
            "Score: 66.67 (formula: precision * 50 + recall * 50)",
            "Metrics: precision 0.67 · recall 0.67",
            "  metric error: run variable 'broken' (conftest.broken) raised ZeroDivisionError: *",
            "  metric error: run variable 'wordy' (conftest.wordy) returned ('lots', None)*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@XDIST_MODES
def test_a_metric_that_raises_gives_a_null_score_with_the_error(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "conftest.py", CONFTEST)
    write(pytester.path / "app.py", APP)
    write(pytester.path / "spam.eval.yaml", suite("broken + success_pct"))
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist)
    result.assert_outcomes(passed=5)
    assert result.ret == pytest.ExitCode.OK  # like a formula error: a null score, not a crash
    record = run_of(load_json(results), "app")
    assert record["score"] is None
    assert record["score_error"] == (
        "no value for broken: run variable 'broken' (conftest.broken) raised ZeroDivisionError: "
        f"division by zero (at conftest.py:{BROKEN_LINE})"
    )
    result.stdout.fnmatch_lines(
        ["  score error: no value for broken: run variable 'broken' (conftest.broken) raised*"]
    )


def test_an_unknown_metric_in_the_formula_fails_collection(pytester: pytest.Pytester) -> None:
    write(pytester.path / "conftest.py", CONFTEST)
    write(pytester.path / "app.py", APP)
    write(pytester.path / "spam.eval.yaml", suite("precison * 100"))
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines(
        ["spam.eval.yaml:*: score.formula: unknown variable 'precison' (did you mean 'precision'?)"]
    )


@pytest.mark.parametrize(
    ("returned", "value", "error"),
    [
        ((0.5, None), 0.5, None),
        (3, 3.0, None),  # a bare number is the value
        ((None, "not applicable"), None, None),
        (None, None, "returned no value and no reason"),
        ((True, None), None, "returned (True, None); return a number"),
        ((float("nan"), None), None, "returned nan, not a finite number"),
        ("0.5", None, "returned '0.5'; return a number"),
    ],
)
def test_what_a_run_variable_may_return(returned: object, value: float | None, error: str | None) -> None:
    def compute(records: list[EvalRecord]) -> Any:
        return returned

    errors: dict[str, str] = {}
    values, reasons = compute_variables([], [RunVariable("x", "count", "", compute)], errors)
    assert values["x"] == value
    if error is None:
        assert errors == {}
    else:
        assert error in errors["x"] and errors["x"] == reasons["x"]
        assert errors["x"].startswith("run variable 'x' (test_run_metrics.")


PRICED_APP = """
def answer(prompt):
    return {"response": "ok", "cost": float(prompt), "latency": 2.0}
"""


@XDIST_MODES
def test_price_performance_has_no_score_without_cost_data(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """As vibecheck's calculatePricePerformanceScore: a run that cost 0 has no price-performance
    score (the formula would divide success by the latency alone), and says so."""
    write(pytester.path / "priced_app.py", PRICED_APP)
    for name, cost in (("free", "0"), ("paid", "0.01")):
        suite = {
            "metadata": {"name": name, "model": "m"},
            "configurations": {"app": {"python": "priced_app:answer"}},
            "score": {"formula": "price_performance"},
            "evals": [{"name": "e", "prompt": cost, "checks": [{"match": "ok"}]}],
        }
        write(pytester.path / f"{name}.eval.yaml", yaml.safe_dump(suite))
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist, subprocess=bool(xdist))
    result.assert_outcomes(passed=2)
    data = load_json(out)
    free, paid = run_of(data, "app", "free"), run_of(data, "app", "paid")
    assert free["score"] is None
    assert free["score_error"] == (
        "price_performance needs the run's cost, and total_cost is 0"
        " (as in vibecheck, no score without cost data)"
    )
    assert paid["score"] == pytest.approx(100 / (0.01 * 1000 + 2.0 * 0.1))
