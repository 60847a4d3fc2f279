"""The --junitxml file against the published JUnit schema (the Jenkins xUnit plugin's junit-10.xsd,
tests/junit-10.xsd; its origin is in tests/junit-10.xsd.ORIGIN), in both junit families, serially
and with ``-n 2``, and read back with junitparser (the JUnit reader of Python CI tools, e.g. the
publish-unit-test-result GitHub action).

xunit2 (pytest's default) validates as written. xunit1 cannot, whatever a plugin does: pytest
writes ``file`` and ``line`` on every test case there, and the schema has neither; the tests check
that those are its only deviations (also for a run without evals) and that the rest validates.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import junitparser
import junitparser.xunit2
import pytest
import xmlschema
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, run_of, write

from pytest_vibeeval.report.junit import score_variables
from pytest_vibeeval.results import EvalRecord, RunRecord
from pytest_vibeeval.scoring.aggregate import formula_names
from pytest_vibeeval.scoring.formula import BUILTIN_PRESETS
from pytest_vibeeval.transport import RunInfo

SCHEMA = xmlschema.XMLSchema(str(Path(__file__).with_name("junit-10.xsd")))
FAMILIES = pytest.mark.parametrize("family", ["xunit2", "xunit1"])
XUNIT1_ONLY = {"file", "line"}  # what pytest writes on xunit1 test cases and the schema lacks

APP = """
import time

def answer(prompt, context):
    if "crash" in prompt:
        raise RuntimeError("the agent crashed")
    time.sleep(0.01)
    text = "4" if "2 + 2" in prompt else "green" if "colour" in prompt else "Paris"
    return {"response": text, "cost": 0.01, "input_tokens": 7, "output_tokens": 2}
"""
# Every outcome: passed, failed, xfailed, skipped (a skip mark, see SKIPPING_CONFTEST) and an
# agent error (the callable raises); the gate fails: success_pct is 25 (1 of 4; the skip does not count).
QUIZ = """
metadata: {name: quiz, model: test/model}
evals:
  - name: arith
    prompt: What is 2 + 2?
    checks: [{match: "*4*"}]
  - name: colour
    prompt: What colour is the sky?
    checks: [{match: "*blue*"}]
  - name: known_bad
    prompt: What colour is grass, really?
    xfail: the app answers green
    checks: [{match: "*blue*"}]
  - name: needs_var
    prompt: Say hi
    checks: [{match: "*"}]
  - name: boom
    prompt: please crash
    checks: [{match: "*"}]
score: {formula: success_pct, min: 90}
configurations:
  claude: {python: "vibe_junitxsd_app:answer"}
"""
# A gate that passes, with a formula that uses the eval's own variables.
OK = """
metadata: {name: ok, model: test/model}
evals:
  - name: capital
    prompt: What is the capital of France?
    checks: [{contains: paris}]
score: {formula: capital * 100 - capital_cost, min: 50}
configurations:
  claude: {python: "vibe_junitxsd_app:answer"}
"""
# With -n 2 only: the agent kills its worker; xdist reports the item as crashed.
CRASH = """
metadata: {name: crash, model: test/model}
evals:
  - name: ask
    prompt: anything
    checks: [{match: "*"}]
configurations:
  crashes: {python: "vibe_junitxsd_crash:answer"}
"""
PLAIN = """
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("fixture failed")

def test_ok():
    pass

def test_setup_error(broken):
    pass
"""


class LocatedCase(junitparser.TestCase):
    """A test case with the location attributes pytest writes in xunit1."""

    file = junitparser.Attr()
    line = junitparser.IntAttr()


SKIPPING_CONFTEST = """
import pytest


def pytest_collection_modifyitems(items):
    for item in items:
        if "needs_var" in item.nodeid:
            item.add_marker(pytest.mark.skip(reason="vibe_junit_missing"))
"""


def write_project(root: Path, crash: bool) -> None:
    write(root / "vibe_junitxsd_app.py", APP)
    write(root / "conftest.py", SKIPPING_CONFTEST)
    write(root / "quiz.eval.yaml", QUIZ)
    write(root / "ok.eval.yaml", OK)
    write(root / "test_vibe_junitxsd_plain.py", PLAIN)
    if crash:
        write(root / "vibe_junitxsd_crash.py", "import os\n\ndef answer(prompt):\n    os._exit(7)\n")
        write(root / "crash.eval.yaml", CRASH)


def junit_run(pytester: pytest.Pytester, family: str, xdist: list[str]) -> tuple[Path, dict[str, Any]]:
    write_project(pytester.path, crash=bool(xdist))
    xml_path = pytester.path / "junit.xml"
    results_path = pytester.path / "results.json"
    result = run(
        pytester,
        "-o",
        f"junit_family={family}",
        f"--junitxml={xml_path}",
        "--vibe-results",
        str(results_path),
        xdist=xdist,
    )
    crashed = 1 if xdist else 0
    result.assert_outcomes(passed=3, failed=2 + crashed, skipped=1, xfailed=1, errors=1)
    return xml_path, load_json(results_path)


def schema_deviations(document: Path | ET.Element) -> list[tuple[str, str]]:
    """(element tag, reason) of every way ``document`` breaks junit-10.xsd."""
    return [(getattr(error.elem, "tag", "?"), str(error.reason)) for error in SCHEMA.iter_errors(document)]


def without_xunit1_location(path: Path) -> ET.Element:
    """The document with pytest's xunit1 ``file`` and ``line`` test case attributes removed."""
    root = ET.parse(path).getroot()
    for case in root.iter("testcase"):
        for name in XUNIT1_ONLY:
            case.attrib.pop(name, None)
    return root


def assert_valid(path: Path, family: str) -> None:
    if family == "xunit2":
        SCHEMA.validate(str(path))
        return
    deviations = schema_deviations(path)
    assert deviations, "xunit1 validates now: make the tests say so"
    expected = {("testcase", f"{name!r} attribute not allowed for element") for name in XUNIT1_ONLY}
    assert set(deviations) == expected
    SCHEMA.validate(without_xunit1_location(path))


@FAMILIES
@XDIST_MODES
def test_junit_validates_and_reads_back(pytester: pytest.Pytester, family: str, xdist: list[str]) -> None:
    xml_path, results = junit_run(pytester, family, xdist)
    assert_valid(xml_path, family)

    reader = junitparser.xunit2.JUnitXml if family == "xunit2" else junitparser.JUnitXml
    (suite,) = list(reader.fromfile(str(xml_path)))
    crashed = 1 if xdist else 0
    # passed: arith, capital, test_ok and the passing gate; failures: colour, boom and the quiz gate;
    # skipped: known_bad (xfail), needs_var; errors: the fixture error (and the crashed worker).
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (10 + crashed, 3, 1 + crashed, 2)
    cases = {f"{case.classname}::{case.name}": case for case in suite}

    def results_of(key: str) -> list[type]:
        return [type(result) for result in cases[key].result]

    assert results_of("quiz.eval.yaml::arith[claude]") == []
    assert results_of("quiz.eval.yaml::colour[claude]") == [junitparser.Failure]
    assert results_of("quiz.eval.yaml::boom[claude]") == [junitparser.Failure]
    xfailed = cases["quiz.eval.yaml::known_bad[claude]"].result
    assert [(type(r), r.type) for r in xfailed] == [(junitparser.Skipped, "pytest.xfail")]
    assert results_of("quiz.eval.yaml::needs_var[claude]") == [junitparser.Skipped]
    assert results_of("test_vibe_junitxsd_plain::test_setup_error") == [junitparser.Error]
    if xdist:
        assert results_of("crash.eval.yaml::ask[crashes]") == [junitparser.Error]

    # The gates: a failed test case for the failed gate, a passed one for the other.
    (gate_failure,) = cases["quiz.eval.yaml::score-gate[quiz::claude]"].result
    assert isinstance(gate_failure, junitparser.Failure)
    assert gate_failure.message == "GATE FAILED: quiz × claude: score 25.00 is below min 90 (by 65.00)"
    assert cases["ok.eval.yaml::score-gate[ok::claude]"].is_passed

    # Location: the YAML file and the eval's line (0-based, as pytest writes every test's) in
    # xunit1; xunit2 has no place for them but the classname, the file's path.
    for key, case in cases.items():
        located = LocatedCase.fromelem(case)  # type: ignore[no-untyped-call]
        if family == "xunit2":
            assert (located.file, located.line) == (None, None), key
            continue
        source, _, name = key.partition("::")
        if source.endswith(".eval.yaml"):
            assert located.file == source, key
            eval_name = name.partition("[")[0]
            if eval_name == "score-gate" or source == "crash.eval.yaml":
                # None for a gate, nor for an item whose worker crashed (xdist reports no line).
                assert located.line is None, key
            else:
                lines = (pytester.path / source).read_text().splitlines()
                assert located.line == lines.index(f"  - name: {eval_name}"), key

    assert not any(case.find("properties") is not None for case in ET.parse(xml_path).iter("testcase"))
    assert_properties(suite, results, xdist)


def assert_properties(suite: junitparser.TestSuite, results: dict[str, Any], xdist: list[str]) -> None:
    """Every property is the test suite's; each says what results.json says."""
    properties = {p.name: p.value for p in suite.properties()}  # type: ignore[no-untyped-call]
    assert all(name.startswith("vibe.") for name in properties)

    quiz, ok = run_of(results, "claude", "quiz"), run_of(results, "claude", "ok")
    assert properties["vibe.quiz.eval.yaml[claude].score"] == "25.0"
    assert properties["vibe.quiz.eval.yaml[claude].success_pct"] == "25.0"
    assert properties["vibe.quiz.eval.yaml[claude].score_formula"] == "success_pct"
    assert properties["vibe.quiz.eval.yaml[claude].gate"] == "failed"
    assert properties["vibe.quiz.eval.yaml[claude].gate_min"] == "90.0"
    assert "vibe.quiz.eval.yaml[claude].gate_max" not in properties
    assert float(properties["vibe.ok.eval.yaml[claude].score"]) == pytest.approx(ok["score"])
    assert properties["vibe.ok.eval.yaml[claude].gate"] == "passed"
    assert quiz["gate"]["passed"] is False and ok["gate"]["passed"] is True
    if xdist:
        assert properties["vibe.crash.eval.yaml[crashes].score"] == "0.0"  # success_pct of 0 of 1
        assert "vibe.crash.eval.yaml[crashes].gate" not in properties

    records = evals_by_nodeid(results)
    assert len(records) == 6 + (1 if xdist else 0)
    for nodeid, record in records.items():
        prefix = f"vibe.{nodeid}"
        assert properties[f"{prefix}.configuration"] == nodeid.rpartition("[")[2].rstrip("]")
        assert properties[f"{prefix}.outcome"] == record["outcome"]
        for name in ("latency", "cost", "input_tokens", "output_tokens"):
            if record[name] is None:
                assert f"{prefix}.{name}" not in properties
            else:
                assert float(properties[f"{prefix}.{name}"]) == record[name], (nodeid, name)
    assert properties["vibe.quiz.eval.yaml::boom[claude].outcome"] == "error"
    assert properties["vibe.quiz.eval.yaml::known_bad[claude].outcome"] == "failed"  # the eval's own
    assert float(properties["vibe.quiz.eval.yaml::arith[claude].latency"]) >= 0.01
    assert properties["vibe.quiz.eval.yaml::arith[claude].cost"] == "0.01"
    assert properties["vibe.quiz.eval.yaml::arith[claude].input_tokens"] == "7"
    assert "vibe.quiz.eval.yaml::needs_var[claude].latency" not in properties  # it never ran
    # The eval's own variables in its run's formula; none for a formula of run-wide variables only.
    used = json.loads(properties["vibe.ok.eval.yaml::capital[claude].score_variables"])
    assert used == {"capital": 1.0, "capital_cost": 0.01}
    assert not any(name.endswith(".score_variables") for name in properties if "quiz.eval.yaml" in name)


def test_pytest_writes_the_same_xunit1_deviations_without_evals(pytester: pytest.Pytester) -> None:
    """The xunit1 deviations are pytest's own: a run of plain tests has exactly the same ones."""
    write(pytester.path / "test_vibe_junitxsd_plain.py", PLAIN)
    xml_path = pytester.path / "junit.xml"
    run(pytester, "-o", "junit_family=xunit1", f"--junitxml={xml_path}")
    assert_valid(xml_path, "xunit1")  # only pytest's file and line, and valid without them


def test_the_schema_refuses_test_case_properties() -> None:
    """Why no test case carries properties: the schema refuses them (the suite's it accepts)."""
    document = ET.fromstring(
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
        '<properties><property name="a" value="1"/></properties>'
        '<testcase name="t"><properties><property name="b" value="2"/></properties></testcase>'
        "</testsuite></testsuites>"
    )
    assert schema_deviations(document) == [
        ("testcase", "Unexpected child with tag 'properties' at position 1.")
    ]


def _run(formula: str, canonical: str | None, variables: dict[str, float | None]) -> RunRecord:
    """A run as the aggregator leaves it: with the names its formula reads (JUnit reads no formula)."""
    info = RunInfo(
        suite="s",
        source="s.eval.yaml",
        configuration="c",
        configuration_name=None,
        score_formula=formula,
        eval_id="a",
        named=True,
        suite_evals=1,
        score_canonical=canonical,
    )
    return RunRecord(
        suite="s",
        source="s.eval.yaml",
        configuration="c",
        score=None,
        score_formula=formula,
        score_error=None,
        score_canonical=canonical,
        score_names=formula_names(info, variables, BUILTIN_PRESETS),
        metrics={"success_pct": None},
        variables=variables,
        evals=[],
    )


def _record(name: str, named: bool = True) -> EvalRecord:
    return EvalRecord(name=name, named=named, nodeid=f"s.eval.yaml::{name}[c]", outcome="passed")


@pytest.mark.parametrize(
    ("formula", "canonical", "record", "expected"),
    [
        ("a * 2 + a_cost", "a * 2 + a_cost", _record("a"), {"a": 1.0, "a_cost": 0.5}),
        ("a * 2 + a_cost", "a * 2 + a_cost", _record("b"), {}),  # not in the formula
        ("success_pct", "success_pct", _record("a"), {}),  # run-wide variables only
        ("math-q * 2", "[math-q] * 2", _record("math-q"), {"math-q": 1.0}),
        ("math-q * 2", None, _record("math-q"), {"math-q": 1.0}),  # read against the run's names
        ("a +", None, _record("a"), {}),  # not a formula: no variables (the run has its score_error)
        ("1 + 2", "1 + 2", _record("e3", named=False), {}),  # an unnamed eval has no variables
    ],
)
def test_score_variables(
    formula: str, canonical: str | None, record: EvalRecord, expected: dict[str, float]
) -> None:
    variables: dict[str, float | None] = {
        "a": 1.0,
        "a_cost": 0.5,
        "b": 0.0,
        "math-q": 1.0,
        "success_pct": 50.0,
    }
    assert score_variables(_run(formula, canonical, variables), record) == expected


def test_the_private_api_the_gate_case_reads_still_exists() -> None:
    """The gate test case reads LogXML.family (private; "legacy" is read as xunit1) to add ``file``."""
    from _pytest.junitxml import LogXML

    assert LogXML("unused.xml", None, family="legacy").family == "xunit1"
    assert LogXML("unused.xml", None, family="xunit2").family == "xunit2"
