"""Partial credit: the grade steps' JUnit XML / results JSON files give subtask counts, the
``{name}_subtasks`` / ``subtask_pct`` variables, and the time-penalised ``vybes`` preset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import PYTHON, XDIST_MODES, agent, load_json, run, run_of, write, write_cli_config
from test_workspace_evals import ORACLE, make_config_dir

from pytest_vibeeval.results import EvalRecord, StepRecord
from pytest_vibeeval.scoring.formula import BUILTIN_PRESETS, evaluate, parse_formula
from pytest_vibeeval.scoring.variables import compute_variables, run_variable_names
from pytest_vibeeval.workspace.subtasks import (
    DEFAULT_SUBTASK_GLOBS,
    ResultsFileError,
    Subtasks,
    collect_modules,
    collect_subtasks,
    parse_junit,
    parse_results_json,
    snapshot_results,
    subtask_glob,
)

JUNIT_3_OF_4 = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="hidden" tests="4">
    <testcase classname="calc" name="a"/>
    <testcase classname="calc" name="b"><system-out>ok</system-out></testcase>
    <testcase classname="calc" name="c"/>
    <testcase classname="calc" name="d"><failure message="wrong">f(4, 5) != 9</failure></testcase>
  </testsuite>
</testsuites>
"""

# --------------------------------------------------------------------------- parsing


def test_junit_pass_fail_error_skip() -> None:
    assert parse_junit(JUNIT_3_OF_4) == (3, 4)
    single = (
        '<testsuite><testcase name="ok"/><testcase name="e"><error/></testcase>'
        '<testcase name="s"><skipped/></testcase><testcase name="f"><failure/></testcase></testsuite>'
    )
    assert parse_junit(single) == (1, 4)  # a skipped testcase counts, and does not pass
    assert parse_junit("<testsuites/>") == (0, 0)


@pytest.mark.parametrize("text", ["not xml <", "<html><testcase/></html>"])
def test_junit_that_is_not_junit_is_refused(text: str) -> None:
    with pytest.raises(ResultsFileError):
        parse_junit(text)


def test_results_json_both_shapes() -> None:
    entries = [{"taskId": "t1", "passed": True}, {"taskId": "t2", "passed": False}, {"passed": True}]
    assert parse_results_json(json.dumps(entries)) == (2, 3)
    assert parse_results_json(json.dumps({"results": entries, "meta": 1})) == (2, 3)
    assert parse_results_json("[]") == (0, 0)


@pytest.mark.parametrize(
    "text", ["{", '{"other": []}', '[{"taskId": "t", "passed": "yes"}]', "[1]", '"x"', '{"results": 3}']
)
def test_results_json_that_is_not_results_is_refused(text: str) -> None:
    with pytest.raises(ResultsFileError):
        parse_results_json(text)


def test_results_json_with_a_trailing_comma_is_refused_alike_on_every_python() -> None:
    with pytest.raises(ResultsFileError) as caught:
        parse_results_json('[{"taskId": "a", "passed": true},]')
    assert str(caught.value) == "not JSON: a comma after the last entry: line 1 column 33 (char 32)"


def test_collect_sums_files_ignores_bad_and_untouched_ones(tmp_path: Path) -> None:
    planted = write(tmp_path / "junit.xml", '<testsuite><testcase name="fake"/></testsuite>')
    write(tmp_path / "results.json", '[{"taskId": "old", "passed": true}]')
    before = snapshot_results(tmp_path, DEFAULT_SUBTASK_GLOBS)
    assert planted in before
    # the grade steps write these (results.json is rewritten; junit.xml is left as planted)
    write(tmp_path / "reports" / "junit-hidden.xml", JUNIT_3_OF_4)
    write(tmp_path / "results.json", '{"results": [{"taskId": "x", "passed": false}]}')
    write(tmp_path / "sub" / "results-broken.json", "{not json")
    write(tmp_path / "junit-empty.xml", "")
    found = collect_subtasks(tmp_path, DEFAULT_SUBTASK_GLOBS, before)
    assert (found.passed, found.total) == (3, 5)  # 3/4 from JUnit + 0/1 from the results JSON
    assert len(found.notes) == 2
    assert any("sub/results-broken.json ignored: not JSON" in note for note in found.notes)
    assert any("junit-empty.xml ignored: not XML" in note for note in found.notes)


def test_results_files_in_their_tools_encodings_count(tmp_path: Path) -> None:
    """.NET test tools write JSON with a byte-order mark; JUnit XML may be in any encoding its
    declaration names."""
    (tmp_path / "results-dotnet.json").write_bytes(b"\xef\xbb\xbf" + b'[{"taskId": "a", "passed": true}]')
    latin1 = JUNIT_3_OF_4.replace("UTF-8", "ISO-8859-1").replace('name="a"', 'name="caf\xe9"')
    (tmp_path / "junit-java.xml").write_bytes(latin1.encode("latin-1"))
    found = collect_subtasks(tmp_path, DEFAULT_SUBTASK_GLOBS)
    assert (found.passed, found.total, found.notes) == (4, 5, ())
    (tmp_path / "results-dotnet.json").rename(tmp_path / "module.json")
    subtasks, modules = collect_modules(tmp_path)
    assert (subtasks.passed, subtasks.total, subtasks.notes) == (1, 1, ())
    assert modules is not None and modules["module"].passed_tasks == ["a"]


# JUnit XML as a tool in an East Asian locale writes it: 3 of 4 testcases pass.
JUNIT_JAPANESE = JUNIT_3_OF_4.replace('name="a"', 'name="足し算"').replace("wrong", "間違い")


@pytest.mark.parametrize("encoding", ["Shift_JIS", "GBK", "EUC-JP", "UTF-16"])
def test_junit_in_a_multibyte_encoding_counts(encoding: str) -> None:
    assert parse_junit(JUNIT_JAPANESE.replace("UTF-8", encoding).encode(encoding)) == (3, 4)
    # UTF-8 with a byte-order mark, whatever its declaration says
    assert parse_junit(b"\xef\xbb\xbf" + JUNIT_JAPANESE.replace("UTF-8", encoding).encode()) == (3, 4)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            JUNIT_3_OF_4.replace("UTF-8", "x-klingon").encode(),
            "its XML declaration names the encoding 'x-klingon', which is no text encoding Python "
            "knows; write the file in UTF-8",
        ),
        (
            JUNIT_3_OF_4.replace("UTF-8", "Shift_JIS").encode("utf-16"),
            "its encoding cannot be read: multi-byte encodings are not supported",
        ),
        (
            b"<?xml version='1.0' encoding='EUC-JP'?>\n<testsuite name='\xff'/>",
            "not EUC-JP text, as its XML declaration says: illegal multibyte sequence at byte 57",
        ),
        (
            b"\xef\xbb\xbf<testsuite>\n<testcase name='\xff'/></testsuite>",
            "line 2: not UTF-8 text: invalid start byte at byte 31, though it starts with UTF-8's "
            "byte-order mark",
        ),
    ],
)
def test_junit_in_an_encoding_that_cannot_be_read_is_refused_saying_why(data: bytes, message: str) -> None:
    with pytest.raises(ResultsFileError) as caught:
        parse_junit(data)
    assert str(caught.value) == message


def test_collect_without_files_is_unknown(tmp_path: Path) -> None:
    write(tmp_path / "other.xml", JUNIT_3_OF_4)  # no pattern matches it
    found = collect_subtasks(tmp_path, DEFAULT_SUBTASK_GLOBS)
    assert (found.passed, found.total, found.notes) == (None, None, ())


# --------------------------------------------------------------------------- variables


def record(
    name: str, outcome: str = "passed", agent_seconds: float | None = None, **extra: Any
) -> EvalRecord:
    steps = []
    if agent_seconds is not None:
        steps.append(
            StepRecord(
                phase="agent",
                name="c",
                argv=["a"],
                cwd=".",
                exit_code=0,
                duration=agent_seconds,
                timed_out=False,
            )
        )
    return EvalRecord(name=name, named=True, nodeid=f"x::{name}[c]", outcome=outcome, steps=steps, **extra)  # type: ignore[arg-type]


def test_subtask_variables_and_reasons() -> None:
    values, reasons = compute_variables(
        [
            record("a", subtasks_passed=3, subtasks_total=4),
            record("b", "failed", subtasks_passed=1, subtasks_total=6),
            record("c"),
            record("d", "skipped"),
        ]
    )
    assert values["a_subtasks"] == 0.75
    assert values["b_subtasks"] == pytest.approx(1 / 6)
    assert values["c_subtasks"] is None and "reported no subtasks" in reasons["c_subtasks"]
    assert values["d_subtasks"] is None and "skipped" in reasons["d_subtasks"]
    assert values["subtask_pct"] == 40.0  # (3 + 1) / (4 + 6) over the evals that reported subtasks

    values, reasons = compute_variables([record("a"), record("b", "failed")])
    assert values["subtask_pct"] is None and reasons["subtask_pct"] == "no eval reported subtasks"


def test_vybes_hand_computed() -> None:
    records = [
        # 100 × 1.5 × 3/4 × clamp(5 min / (600 s = 10 min), 0.2, 1) = 100 × 1.5 × 0.75 × 0.5 = 56.25
        record("half", agent_seconds=600, subtasks_passed=3, subtasks_total=4,
               vybes_multiplier=1.5, vybes_time_limit_minutes=5),
        # 100 × 2 × 1/2 × clamp(1 min / 60 min, 0.2, 1) = 100 × 2 × 0.5 × 0.2 = 20
        record("slow", agent_seconds=3600, subtasks_passed=1, subtasks_total=2,
               vybes_multiplier=2, vybes_time_limit_minutes=1),
        # no vybes block, a name without a default: multiplier 3, 6 minutes; no subtasks: passed
        # counts 1 → 100 × 3 × 1 × clamp(6 / 1 min, 0.2, 1) = 300
        record("plain", agent_seconds=60),
        # failed without subtasks → 0
        record("broken", "failed", agent_seconds=1, vybes_multiplier=3),
    ]  # fmt: skip
    values, reasons = compute_variables(records)
    assert values["half_vybes"] == pytest.approx(56.25)
    assert values["slow_vybes"] == pytest.approx(20.0)
    assert values["plain_vybes"] == 300.0
    assert values["broken_vybes"] == 0.0
    # the preset: the mean, (56.25 + 20 + 300 + 0) / 4 = 94.0625
    formula = parse_formula("vybes", set(values))
    assert formula.preset == "vybes" and BUILTIN_PRESETS["vybes"] == "vybes_score"
    assert evaluate(formula, values, reasons) == (pytest.approx(94.0625), None)
    assert "vybes_score" in run_variable_names()


# --------------------------------------------------------------------------- a real run

# A grade step writing JUnit XML (3 of 4 testcases pass) into a subfolder of the grading directory.
JUNIT_STEP = f"""
import os
os.makedirs("reports", exist_ok=True)
open(os.path.join("reports", "junit-hidden.xml"), "w").write({JUNIT_3_OF_4!r})
"""


def test_grade_step_junit_gives_partial_credit(pytester: pytest.Pytester) -> None:
    script = write(pytester.path / "steps" / "junit_step.py", JUNIT_STEP)
    config = make_config_dir(
        pytester.path, {"junit": {"command": PYTHON, "args": [str(script)], "timeout": 60000}}
    )
    data = load_json(config / "eval-config.json")
    data["evaluations"]["add"]["gradeSteps"].append("junit")
    # a time limit of 10 000 minutes: the agent takes less, so the time factor clamps at 1
    data["evaluations"]["add"]["vybes"] = {"multiplier": 2, "timeLimitMinutes": 10000}
    write(config / "eval-config.json", json.dumps(data))
    results_path = pytester.path / "results.json"
    result = run(pytester, "--vibe-config", "oracle", "--vibe-results", str(results_path))
    result.assert_outcomes(passed=2)
    results = run_of(load_json(results_path), "oracle")
    records = {r["name"]: r for r in results["evals"]}
    assert (records["add"]["subtasks_passed"], records["add"]["subtasks_total"]) == (3, 4)
    assert (records["mul"]["subtasks_passed"], records["mul"]["subtasks_total"]) == (None, None)
    assert records["add"]["vybes_multiplier"] == 2 and records["add"]["vybes_time_limit_minutes"] == 10000
    agent_minutes = next(s["duration"] for s in records["add"]["steps"] if s["phase"] == "agent") / 60
    assert 10000 / agent_minutes > 1  # so clamp(…, 0.2, 1) = 1
    variables = results["variables"]
    assert variables["add_subtasks"] == 0.75
    assert variables["mul_subtasks"] is None
    assert variables["subtask_pct"] == 75.0  # only add reported subtasks: 3 of 4
    assert variables["add_vybes"] == pytest.approx(150.0)  # 100 × 2 × 0.75 × 1
    assert variables["mul_vybes"] == 300.0  # no vybes block, no subtasks, passed: 100 × 3 × 1 × 1
    assert variables["vybes_score"] == pytest.approx(225.0)  # (150 + 300) / 2
    result.stdout.fnmatch_lines(["Subtasks: 75.0% (3/4 from 1 of 2 evals)"])


# A grade step writing JUnit XML in Shift_JIS (3 of 4 testcases pass), and one whose declared
# encoding Python has no codec for.
SHIFT_JIS_STEP = f"""
open("junit-sjis.xml", "wb").write({JUNIT_JAPANESE.replace("UTF-8", "Shift_JIS").encode("shift_jis")!r})
open("junit-klingon.xml", "wb").write({JUNIT_3_OF_4.replace("UTF-8", "x-klingon").encode()!r})
"""


@XDIST_MODES
def test_grade_step_junit_in_shift_jis_gives_partial_credit(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """It was an error of the eval in its grade phase (ElementTree's "multi-byte encodings are not
    supported"); the file in an unknown encoding is ignored with a note naming it."""
    script = write(pytester.path / "steps" / "sjis_step.py", SHIFT_JIS_STEP)
    config = make_config_dir(pytester.path, {"sjis": {"command": PYTHON, "args": [str(script)]}})
    data = load_json(config / "eval-config.json")
    data["evaluations"]["add"]["gradeSteps"].append("sjis")
    write(config / "eval-config.json", json.dumps(data))
    out = pytester.path / "r.json"
    args = ("--vibe-config", "oracle", "--vibe-eval", "add", "--vibe-results", str(out))
    result = run(pytester, *args, xdist=xdist)
    result.assert_outcomes(passed=1)
    (record,) = run_of(load_json(out), "oracle")["evals"]
    assert (record["subtasks_passed"], record["subtasks_total"]) == (3, 4)
    assert record["message"] == (
        "results file junit-klingon.xml ignored: its XML declaration names the encoding 'x-klingon', "
        "which is no text encoding Python knows; write the file in UTF-8"
    )
    assert "Traceback" not in result.stdout.str()


@XDIST_MODES
def test_an_agent_that_fails_after_its_work_is_still_graded(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The unified runner runs the build and grade steps whatever the agent's exit code: an agent
    that crashed after writing the solution fails its item, but its subtasks still count."""
    script = write(pytester.path / "steps" / "junit_step.py", JUNIT_STEP)
    config = make_config_dir(
        pytester.path, {"junit": {"command": PYTHON, "args": [str(script)], "timeout": 60000}}
    )
    data = load_json(config / "eval-config.json")
    data["evaluations"]["add"]["gradeSteps"].append("junit")
    write(config / "eval-config.json", json.dumps(data))
    crasher = agent(pytester.path / "agents", "crasher.py", ORACLE + "sys.exit(3)\n")
    solutions = str(pytester.path / "evals" / "solutions")
    write_cli_config(
        config / "cli-config.json",
        {"configurations": {"crasher": {"cli": PYTHON, "args": [crasher, solutions]}}},
    )
    results_path = pytester.path / "results.json"
    result = run(pytester, "--vibe-eval", "add", "--vibe-results", str(results_path), xdist=xdist)
    result.assert_outcomes(failed=1)
    (record,) = run_of(load_json(results_path), "crasher")["evals"]
    assert [(s["phase"], s["name"], s["exit_code"]) for s in record["steps"]] == [
        ("agent", "crasher", 3),
        ("build", "compile", 0),
        ("grade", "public", 0),
        ("grade", "hidden", 0),
        ("grade", "junit", 0),
    ]
    assert record["message"].startswith("agent step 'crasher' exited with code 3")
    assert (record["subtasks_passed"], record["subtasks_total"]) == (3, 4)
    assert set(record["phase_durations"]) >= {"agent", "build", "grade"}


def test_results_in_dependency_and_dot_folders_are_not_counted(tmp_path: Path) -> None:
    for folder in ("node_modules/vitest", ".cache", "reports"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "junit-x.xml").write_text(JUNIT_3_OF_4)
    assert collect_subtasks(tmp_path, DEFAULT_SUBTASK_GLOBS, {}) == Subtasks(3, 4)


# --------------------------------------------------------------------------- vibe_subtask_globs


@pytest.mark.parametrize(
    ("pattern", "read"),
    [
        ("**/junit*.xml", "**/junit*.xml"),
        ("reports/**", "reports/**/*"),
        ("**", "**/*"),
        ("a/*.json", "a/*.json"),
    ],
)
def test_a_results_pattern_is_read_alike_on_every_python(pattern: str, read: str) -> None:
    assert subtask_glob(pattern) == read


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("**.xml", "'**.xml': ** must be a whole path component, as in **/*.xml"),
        (
            "reports/**junit.xml",
            "'reports/**junit.xml': ** must be a whole path component, as in reports/**/*junit.xml",
        ),
        (
            "/tmp/*.xml",
            "'/tmp/*.xml' is absolute: write it relative to the grading folder, e.g. **/junit*.xml",
        ),
        ("../*.xml", "'../*.xml' leads out of the grading folder (..): results files are looked for in it"),
    ],
)
def test_a_results_pattern_python_reads_unlike_or_not_at_all_is_refused(pattern: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        subtask_glob(pattern)
    assert str(caught.value) == message


def junit_eval(pytester: pytest.Pytester, patterns: str) -> Path:
    """The oracle's ``add`` eval, whose last grade step writes reports/junit-hidden.xml (3 of 4),
    with ``vibe_subtask_globs`` set to ``patterns``; returns the results file's path."""
    script = write(pytester.path / "steps" / "junit_step.py", JUNIT_STEP)
    config = make_config_dir(pytester.path, {"junit": {"command": PYTHON, "args": [str(script)]}})
    data = load_json(config / "eval-config.json")
    data["evaluations"]["add"]["gradeSteps"].append("junit")
    write(config / "eval-config.json", json.dumps(data))
    pytester.makeini(f"[pytest]\nvibe_subtask_globs =\n    {patterns}\n")
    return pytester.path / "r.json"


@XDIST_MODES
def test_a_results_pattern_ending_in_double_star_counts_the_files_below_it(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """``reports/**`` counted the JUnit file in reports/ on Python 3.13 and nothing on 3.11 and 3.12
    (pathlib's glob matched only folders there)."""
    out = junit_eval(pytester, "reports/**")
    result = run(
        pytester, "--vibe-config", "oracle", "--vibe-eval", "add", "--vibe-results", str(out), xdist=xdist
    )
    result.assert_outcomes(passed=1)
    (record,) = run_of(load_json(out), "oracle")["evals"]
    assert (record["subtasks_passed"], record["subtasks_total"]) == (3, 4)


@XDIST_MODES
def test_a_results_pattern_python_cannot_read_alike_is_a_usage_error(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """``**.xml`` failed every coding eval with pathlib's traceback on Python 3.11 and 3.12 and read as
    ``*.xml`` on 3.13; an absolute pattern failed them on each."""
    out = junit_eval(pytester, "**.xml")
    result = run(
        pytester, "--vibe-config", "oracle", "--vibe-eval", "add", "--vibe-results", str(out), xdist=xdist
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "vibe_subtask_globs (ini): '**.xml': ** must be a whole path component, as in **/*.xml"
        in result.stderr.str()
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
