"""The score gate: ``score: {formula, min, max}`` decides the exit code, the Run Summary's GATE FAILED
line, the run's ``gate`` record and a ``score-gate[...]`` JUnit test case; ``vibe_gate_only`` lets
the gates alone decide when evals of gated runs fail."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import XDIST_MODES, load_json, run, run_of, run_summary, write

from pytest_vibeeval.results import EvalRecord
from pytest_vibeeval.scoring.aggregate import Aggregator, RunInfo, gate_record
from pytest_vibeeval.scoring.formula import BUILTIN_PRESETS, parse_formula

APP = """
def answer(prompt, context):
    text = "4" if "2 + 2" in prompt else "green" if "colour" in prompt else "Paris"
    return {"response": text, "cost": 0.01, "output_tokens": 2}
"""
SILENT_APP = """
def answer(prompt, context):
    return {"response": "4"}
"""
PASSING = [
    {"name": "arith", "prompt": "What is 2 + 2?", "checks": [{"match": "*4*"}]},
    {"name": "capital", "prompt": "What is the capital of France?", "checks": [{"contains": "paris"}]},
]
FAILING = {"name": "colour", "prompt": "What colour is the sky?", "checks": [{"match": "*blue*"}]}


def gate_suite(
    root: Path,
    score: dict[str, Any],
    *,
    evals: list[dict[str, Any]] | None = None,
    name: str = "quiz",
    app: str = APP,
    file: str = "quiz.eval.yaml",
) -> Path:
    module = f"vibe_gate_{name}_app"
    write(root / f"{module}.py", app)
    suite = {
        "metadata": {"name": name, "model": "test/model"},
        "evals": evals if evals is not None else PASSING,
        "score": score,
        "configurations": {"claude": {"python": f"{module}:answer"}},
    }
    return write(root / file, yaml.safe_dump(suite, sort_keys=False))


def junit_cases(path: Path) -> dict[str, ET.Element]:
    root = ET.parse(path).getroot()
    return {f"{case.get('classname')}::{case.get('name')}": case for case in root.iter("testcase")}


def gate_run(pytester: pytest.Pytester, *args: str, xdist: list[str]) -> tuple[pytest.RunResult, Any]:
    results = pytester.path / "results.json"
    junit = pytester.path / "junit.xml"
    result = run(pytester, "--vibe-results", str(results), f"--junitxml={junit}", *args, xdist=xdist)
    return result, load_json(results)


@XDIST_MODES
def test_score_below_min_fails_the_session_though_every_eval_passed(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # score = 100 / 0.02 = 5000
    gate_suite(pytester.path, {"formula": "success_pct / total_cost", "min": 6000})
    result, data = gate_run(pytester, xdist=xdist)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = run_summary(result)
    expected = "GATE FAILED: quiz × claude: score 5000.00 is below min 6000 (by 1000.00)"
    assert expected in summary
    assert "Gate: FAILED: score 5000.00 is below min 6000 (by 1000.00)" in summary
    gate = run_of(data, "claude")["gate"]
    assert gate == {
        "min": 6000.0,
        "max": None,
        "passed": False,
        "message": "score 5000.00 is below min 6000 (by 1000.00)",
    }
    cases = junit_cases(pytester.path / "junit.xml")
    case = cases["quiz.eval.yaml::score-gate[quiz::claude]"]
    failure = case.find("failure")
    assert failure is not None
    assert failure.get("message") == expected
    assert case.find("properties") is None  # junit-10.xsd allows properties on the suite only
    suite = ET.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("3", "1")
    global_props = {p.get("name"): p.get("value") for p in suite.find("properties").iter("property")}  # type: ignore[union-attr]
    assert global_props["vibe.quiz.eval.yaml[claude].gate"] == "failed"
    assert global_props["vibe.quiz.eval.yaml[claude].gate_min"] == "6000.0"
    assert float(global_props["vibe.quiz.eval.yaml[claude].score"]) == pytest.approx(5000)


@XDIST_MODES
def test_score_within_bounds_exits_0(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 100, "max": 100})  # inclusive
    result, data = gate_run(pytester, xdist=xdist)
    assert result.ret == pytest.ExitCode.OK
    summary = run_summary(result)
    assert "Gate: passed: score 100.00 meets min 100 and max 100" in summary
    assert not any(line.startswith("GATE FAILED") for line in summary)
    assert run_of(data, "claude")["gate"]["passed"] is True
    case = junit_cases(pytester.path / "junit.xml")["quiz.eval.yaml::score-gate[quiz::claude]"]
    assert case.find("failure") is None


@XDIST_MODES
def test_score_above_max_fails(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "total_cost", "max": 0.015})
    result, _ = gate_run(pytester, xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "GATE FAILED: quiz × claude: score 0.02 is above max 0.015 (by 0.005)" in run_summary(result)


@XDIST_MODES
def test_null_score_with_a_bound_fails_with_the_reason(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct / total_cost", "min": 1}, app=SILENT_APP)
    result, data = gate_run(pytester, xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    message = "score is null (no value for total_cost: no eval reported cost); the gate (min 1) needs a score"
    assert f"GATE FAILED: quiz × claude: {message}" in run_summary(result)
    assert run_of(data, "claude")["gate"] == {"min": 1.0, "max": None, "passed": False, "message": message}
    case = junit_cases(pytester.path / "junit.xml")["quiz.eval.yaml::score-gate[quiz::claude]"]
    assert case.find("failure") is not None


@XDIST_MODES
def test_min_greater_than_max_is_a_collection_error(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 90, "max": 50})
    result = run(pytester, xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = "\n".join(result.outlines)
    # `score:` is line 10 of the file yaml.safe_dump writes.
    lines = (pytester.path / "quiz.eval.yaml").read_text().splitlines()
    line = lines.index("score:") + 1
    assert f"quiz.eval.yaml:{line}: score: min (90) is greater than max (50)" in text
    result.assert_outcomes(errors=1)


@pytest.mark.parametrize(
    ("bound", "message"),
    [
        (
            "'50'",
            "score.min: must be a number, not the text '50'\n"
            "    hint: write the number without quotes: min: 50",
        ),
        ("true", "score.min: must be a number, not the boolean true"),
    ],
)
def test_a_bound_must_be_a_number(pytester: pytest.Pytester, bound: str, message: str) -> None:
    path = gate_suite(pytester.path, {"formula": "success_pct", "min": 0})
    path.write_text(path.read_text().replace("min: 0", f"min: {bound}"))
    result = run(pytester)
    assert message in "\n".join(result.outlines)


def test_gate_is_absent_without_bounds(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "success_pct"}, evals=[*PASSING, FAILING])
    result, data = gate_run(pytester, xdist=[])
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # an eval failed
    assert run_of(data, "claude")["gate"] is None
    assert not any("score-gate" in key for key in junit_cases(pytester.path / "junit.xml"))
    assert not any(line.startswith(("Gate:", "GATE")) for line in run_summary(result))


# --- vibe_gate_only ---------------------------------------------------------------------------


@XDIST_MODES
def test_gate_only_a_passing_gate_forgives_failed_evals(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 60}, evals=[*PASSING, FAILING])
    result, _ = gate_run(pytester, "--vibe-gate-only", xdist=xdist)
    result.assert_outcomes(passed=2, failed=1)  # the failure is still reported
    assert result.ret == pytest.ExitCode.OK
    assert (
        "vibe_gate_only: 1 failed eval(s) do not fail the session; the score gates decide the exit code (0)"
        in run_summary(result)
    )
    cases = junit_cases(pytester.path / "junit.xml")
    assert cases["quiz.eval.yaml::colour[claude]"].find("failure") is not None
    assert cases["quiz.eval.yaml::score-gate[quiz::claude]"].find("failure") is None


@XDIST_MODES
def test_gate_only_a_failed_gate_still_fails(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 70}, evals=[*PASSING, FAILING])
    result, _ = gate_run(pytester, "--vibe-gate-only", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    summary = run_summary(result)
    assert "GATE FAILED: quiz × claude: score 66.67 is below min 70 (by 3.33)" in summary
    assert any("the score gates decide the exit code (1)" in line for line in summary)


def test_gate_only_from_the_ini_file(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 60}, evals=[*PASSING, FAILING])
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_gate_only = true\n")
    assert run(pytester).ret == pytest.ExitCode.OK


@XDIST_MODES
def test_gate_only_does_not_forgive_other_failures(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 60}, evals=[*PASSING, FAILING])
    # A suite without a gate: its failed eval still fails the session.
    gate_suite(
        pytester.path, {"formula": "success_pct"}, evals=[FAILING], name="plain", file="plain.eval.yaml"
    )
    pytester.makepyfile(test_vibe_gate_plain="def test_ok():\n    pass\n")
    result, _ = gate_run(pytester, "--vibe-gate-only", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    note = next(line for line in run_summary(result) if line.startswith("vibe_gate_only"))
    assert note == (
        "vibe_gate_only not applied: 1 failure(s) outside runs with a score gate "
        "(plain.eval.yaml::colour[claude])"
    )


def test_gate_only_does_not_forgive_a_failing_python_test(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 60}, evals=[*PASSING, FAILING])
    pytester.makepyfile(test_vibe_gate_py="def test_bad():\n    assert False\n")
    result = run(pytester, "--vibe-gate-only")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert any("test_vibe_gate_py.py::test_bad" in line for line in run_summary(result))


def test_gate_only_not_applied_when_stopped_early(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 0}, evals=[FAILING, *PASSING])
    result = run(pytester, "--vibe-gate-only", "-x")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "vibe_gate_only not applied: the session stopped after the first failure (-x)" in run_summary(
        result
    )


def test_without_gate_only_a_failed_eval_fails_a_passing_gate(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 60}, evals=[*PASSING, FAILING])
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "Gate: passed: score 66.67 meets min 60" in run_summary(result)


# --- collection and aggregation ---------------------------------------------------------------


def test_run_info_carries_the_bounds_and_the_formula_as_read(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "price_performance", "min": 10, "max": 90.5})
    items = pytester.inline_genitems()[0]
    assert items
    for item in items:
        info = item.info  # type: ignore[attr-defined]
        assert (info.score_min, info.score_max) == (10, 90.5)
        assert info.score_preset == "price_performance"
        assert info.score_canonical == parse_formula("price_performance", None).canonical
        assert info.score_canonical == parse_formula(BUILTIN_PRESETS["price_performance"], None).canonical


def test_run_info_canonical_brackets_hyphenated_names(pytester: pytest.Pytester) -> None:
    evals = [{**PASSING[0], "name": "math-q"}, PASSING[1]]
    gate_suite(pytester.path, {"formula": "math-q * 2 + capital"}, evals=evals)
    (item, *_) = pytester.inline_genitems()[0]
    info = item.info  # type: ignore[attr-defined]
    assert info.score_preset is None
    assert parse_formula(info.score_canonical, None).names == {"math-q", "capital"}


def test_a_deselected_hyphenated_eval_stays_one_name_at_session_end(pytester: pytest.Pytester) -> None:
    evals = [{**PASSING[0], "name": "math-q"}, {**PASSING[1], "name": "q"}]
    gate_suite(pytester.path, {"formula": "math-q * 2 + q"}, evals=evals)
    path = pytester.path / "results.json"
    run(pytester, "--vibe-eval", "q", "--vibe-results", str(path))
    run_record = run_of(load_json(path), "claude")
    assert run_record["score"] is None
    assert run_record["score_error"] == "no value for math-q: the eval did not run in this run (deselected?)"


def _record(name: str, outcome: str) -> EvalRecord:
    return EvalRecord(name=name, named=True, nodeid=f"s.eval.yaml::{name}[c]", outcome=outcome)  # type: ignore[arg-type]


def _info(name: str, formula: str = "success_pct", **extra: Any) -> RunInfo:
    return RunInfo("s", "s.eval.yaml", "c", None, formula, name, True, 2, **extra)


def test_aggregated_run_gets_the_gate() -> None:
    agg = Aggregator()
    for name, outcome in (("a", "passed"), ("b", "failed")):
        info = _info(name, score_min=60.0)
        agg.add_report(f"s.eval.yaml::{name}[c]", "call", outcome, info, _record(name, outcome), None, False)
    (run_record,) = agg.runs()
    assert run_record.gate is not None
    assert run_record.gate.passed is False
    assert run_record.gate.message == "score 50.00 is below min 60 (by 10.00)"


def test_a_crashed_item_keeps_its_runs_gate() -> None:
    agg = Aggregator()
    agg.add_report(
        "s.eval.yaml::a[c]", "call", "passed", _info("a", score_max=10.0), _record("a", "passed"), None, False
    )
    agg.add_report("s.eval.yaml::b[c]", "???", "failed", None, None, "worker crashed", False)
    (run_record,) = agg.runs()
    assert run_record.gate is not None and run_record.gate.max == 10.0
    assert run_record.gate.message == "score 50.00 is above max 10 (by 40.00)"


def test_the_controller_evaluates_the_canonical_text_when_there_is_one() -> None:
    agg = Aggregator()
    info = _info("a", formula="success_pct", score_canonical="passed * 7")
    agg.add_report("s.eval.yaml::a[c]", "call", "passed", info, _record("a", "passed"), None, False)
    (run_record,) = agg.runs()
    assert run_record.score == 7.0
    assert run_record.score_formula == "success_pct"  # what the user wrote is what is shown


@pytest.mark.parametrize(
    ("score", "low", "high", "passed", "message"),
    [
        (50.0, 50.0, None, True, "score 50.00 meets min 50"),
        (90.0, None, 90.0, True, "score 90.00 meets max 90"),
        (42.1, 50.0, None, False, "score 42.10 is below min 50 (by 7.90)"),
        (49.999, 50.0, None, False, "score 49.999 is below min 50 (by 0.001)"),
        (95.5, 0.0, 90.0, False, "score 95.50 is above max 90 (by 5.50)"),
        (-1.0, 0.0, 1.0, False, "score -1.00 is below min 0 (by 1.00)"),
        (1e300, None, 1e9, False, "score 1.000e+300 is above max 1e+09 (by 1.000e+300)"),
    ],
)
def test_gate_record(score: float, low: float | None, high: float | None, passed: bool, message: str) -> None:
    gate = gate_record(score, None, low, high)
    assert gate is not None
    assert (gate.passed, gate.message, gate.min, gate.max) == (passed, message, low, high)


def test_gate_record_without_bounds_is_none() -> None:
    assert gate_record(1.0, None, None, None) is None
    assert gate_record(None, "no value", None, None) is None


def test_gate_record_null_score() -> None:
    gate = gate_record(None, "division by zero in 'a / b'", None, 3.0)
    assert gate is not None and not gate.passed
    assert gate.message == "score is null (division by zero in 'a / b'); the gate (max 3) needs a score"


def test_junit_private_api_for_the_gate_test_case_still_exists() -> None:
    """The gate's JUnit test case is added through private pytest objects (LogXML, _NodeReporter);
    if pytest changes them, this fails loudly."""
    from _pytest.junitxml import LogXML, _NodeReporter, xml_key

    assert isinstance(xml_key, pytest.StashKey)
    for name in ("node_reporter", "add_stats", "add_global_property"):
        assert callable(getattr(LogXML, name)), name
    for name in ("add_attribute", "add_property", "append", "finalize", "to_xml"):
        assert callable(getattr(_NodeReporter, name)), name
    xml = LogXML("unused.xml", prefix=None)
    assert xml.prefix is None
    reporter = xml.node_reporter("a.eval.yaml::score-gate[s::c]")
    reporter.add_attribute("classname", "a.eval.yaml")
    reporter.add_attribute("name", "score-gate[s::c]")
    reporter.append(ET.Element("failure", message="m"))
    reporter.finalize()
    case = xml.node_reporters_ordered[0].to_xml()
    assert case.get("classname") == "a.eval.yaml" and case.find("failure") is not None
    assert xml.stats["failure"] == 1


@XDIST_MODES
def test_no_summary_leaves_only_the_failed_gate_line(pytester: pytest.Pytester, xdist: list[str]) -> None:
    gate_suite(pytester.path, {"formula": "success_pct / total_cost", "min": 6000})
    result, data = gate_run(pytester, "--no-summary", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "Run Summary" not in out
    assert "Score:" not in out
    assert "results:" not in out
    gate = "GATE FAILED: quiz × claude: score 5000.00 is below min 6000 (by 1000.00)"
    assert [line for line in result.outlines if "quiz" in line and "claude" in line] == [gate]
    assert run_of(data, "claude")["gate"]["passed"] is False  # the results file is written still


def test_no_summary_prints_nothing_of_a_passing_run(pytester: pytest.Pytester) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 50})
    result, data = gate_run(pytester, "--no-summary", xdist=[])
    assert result.ret == pytest.ExitCode.OK
    assert "Run Summary" not in result.stdout.str()
    assert "GATE" not in result.stdout.str()
    assert run_of(data, "claude")["gate"]["passed"] is True


@XDIST_MODES
def test_no_summary_still_names_the_suites_that_did_not_load(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    gate_suite(pytester.path, {"formula": "success_pct", "min": 50})
    write(pytester.path / "broken.eval.yaml", "metadata: {name: broken}\nevals: [{prompt: [}\n")
    result, _ = gate_run(pytester, "--no-summary", xdist=xdist)
    assert result.ret != pytest.ExitCode.OK
    out = result.stdout.str()
    assert "Run Summary" not in out
    assert "1 suite file(s) failed to load and did not run: broken.eval.yaml" in out, out
