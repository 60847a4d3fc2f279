"""A run that stopped before every selected eval ran (-x, --maxfail, Ctrl-C) says so, keeps its
results in a file of its own, and never becomes the baseline: not ``latest.json``, no history line;
``--vibe-resume latest`` still finds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import XDIST_MODES, load_json, run, run_summary, write

from pytest_vibeeval import __main__ as cli

APP = """
def answer(prompt):
    return "no" if prompt == "fail" else "yes"
"""


def make_suite(path: Path, first: str = "fail") -> None:
    write(path / "partial_app.py", APP)
    write(
        path / "part.eval.yaml",
        f"""
        metadata: {{name: part, model: m}}
        configurations:
          app: {{python: "partial_app:answer"}}
        evals:
          - {{name: a, prompt: {first}, checks: [{{equals: "yes"}}]}}
          - {{name: b, prompt: ok, checks: [{{equals: "yes"}}]}}
          - {{name: c, prompt: ok, checks: [{{equals: "yes"}}]}}
          - {{name: d, prompt: ok, checks: [{{equals: "yes"}}]}}
        """,
    )


def results_folder(path: Path) -> Path:
    return path / ".vibeeval" / "results"


@XDIST_MODES
def test_a_run_stopped_by_x_says_so_and_replaces_neither_latest_nor_history(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_suite(pytester.path, first="ok")
    complete = run(pytester, *xdist, "-p", "no:randomly")
    complete.assert_outcomes(passed=4)
    latest = results_folder(pytester.path) / "latest.json"
    before = latest.read_text()
    history = pytester.path / ".vibeeval" / "history.jsonl"
    assert len(history.read_text().splitlines()) == 1

    make_suite(pytester.path, first="fail")
    stopped = run(pytester, *xdist, "-x", "-p", "no:randomly")
    assert stopped.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    summary = "\n".join(run_summary(stopped))
    assert "the session stopped after the first failure (-x): " in summary
    assert "evals were selected" not in summary
    assert "latest.json not replaced: this run is partial (stopped after the first failure (-x))" in summary
    assert "history: no line for this partial run (stopped after the first failure (-x))" in summary
    assert latest.read_text() == before
    assert len(history.read_text().splitlines()) == 1
    files = sorted(results_folder(pytester.path).glob("2*.json"), key=lambda path: path.stat().st_mtime_ns)
    assert len(files) == 2
    partial = load_json(files[-1])
    assert partial["stopped_early"] == "stopped after the first failure (-x)"
    assert partial["interrupted"] is False

    # the baseline `latest` is the complete run; the partial file is no baseline at all
    run(pytester, *xdist, "--vibe-baseline", "latest", "--vibe-results", "r.json")
    baseline = load_json(pytester.path / "r.json")["runs"][0]["baseline"]
    assert baseline["score"] == 100.0
    assert re.fullmatch(r"\.vibeeval/results/2\w*\.json", baseline["baseline"]), (
        baseline
    )  # what latest copied
    assert cli.main(["compare", str(files[-1]), str(files[0])]) == 2  # the CLI refuses it too
    refused = run(pytester, "--vibe-baseline", str(files[-1]))
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--vibe-baseline: * holds a partial run (stopped after the first failure (-x)): not every*"]
    )


def test_maxfail_is_named_and_resume_latest_finds_the_partial_run(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path)
    write(
        pytester.path / "more.eval.yaml",
        """
        metadata: {name: more, model: m}
        configurations:
          app: {python: "partial_app:answer"}
        evals:
          - {name: e, prompt: fail, checks: [{equals: "yes"}]}
          - {name: f, prompt: ok, checks: [{equals: "yes"}]}
        """,
    )
    stopped = run(pytester, "--maxfail", "2", "-p", "no:randomly", "more.eval.yaml", "part.eval.yaml")
    assert "the session stopped after 2 failures (--maxfail=2)" in "\n".join(run_summary(stopped))
    assert not (results_folder(pytester.path) / "latest.json").exists()

    make_suite(pytester.path, first="ok")  # fixed; the suite changed, so nothing of it is reused
    resumed = run(pytester, "--vibe-resume", "-p", "no:randomly", "more.eval.yaml")
    resumed.assert_outcomes(passed=1, failed=1)
    assert "Resumed: 2 eval(s) reused" in "\n".join(run_summary(resumed))


@XDIST_MODES
def test_a_run_in_which_every_eval_ran_before_maxfail_stopped_it_is_complete(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """--maxfail as a safety valve: its last failure on the last item leaves nothing unrun."""
    make_suite(pytester.path, first="ok")
    write(
        pytester.path / "part.eval.yaml",
        """
        metadata: {name: part, model: m}
        configurations:
          app: {python: "partial_app:answer"}
        evals:
          - {name: a, prompt: ok, checks: [{equals: "yes"}]}
          - {name: b, prompt: fail, checks: [{equals: "yes"}]}
        """,
    )
    result = run(pytester, *xdist, "--maxfail", "1", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    summary = "\n".join(run_summary(result))
    assert "the session stopped" not in summary and "partial" not in summary, summary
    latest = load_json(results_folder(pytester.path) / "latest.json")
    assert latest["stopped_early"] is None
    assert len((pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()) == 1


def test_only_the_run_with_evals_left_unrun_is_partial(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path)  # part: a fails first, then b, c, d never start under -x
    write(
        pytester.path / "done.eval.yaml",
        """
        metadata: {name: done, model: m}
        configurations:
          app: {python: "partial_app:answer"}
        evals:
          - {name: e, prompt: ok, checks: [{equals: "yes"}]}
        """,
    )
    result = run(pytester, "-x", "-p", "no:randomly", "done.eval.yaml", "part.eval.yaml")
    lines = run_summary(result)
    stopped = [line for line in lines if "the session stopped" in line]
    assert stopped == [
        "note: the session stopped after the first failure (-x): 1 of 4 evals ran; success_pct and the "
        "score are over those only, and this run is no baseline"
    ], lines
    assert "evals were selected" not in "\n".join(lines)


BUDGET_APP = """
def answer(prompt):
    return {"response": prompt, "cost": 0.01}
"""


@XDIST_MODES
def test_a_run_cut_short_by_max_cost_is_partial_and_its_gate_is_not_judged(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "budget_app.py", BUDGET_APP)
    write(
        pytester.path / "spend.eval.yaml",
        """
        metadata: {name: spend, model: m}
        configurations:
          app: {python: "budget_app:answer"}
        score: {formula: success_pct, min: 50}
        evals: [EVALS]
        """.replace(
            "EVALS", ", ".join(f"{{name: e{i}, prompt: good, checks: [contains: good]}}" for i in range(8))
        ),
    )
    run(pytester, *xdist).assert_outcomes(passed=8)
    latest = results_folder(pytester.path) / "latest.json"
    before = latest.read_text()

    result = run(pytester, *xdist, "--vibe-max-cost", "0.025", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the gate cannot pass on a part of the suite
    summary = "\n".join(run_summary(result))
    assert "GATE FAILED" in summary and "not judged: the session stopped starting evals at" in summary
    assert "note: the session stopped starting evals at --vibe-max-cost $0.025: " in summary
    assert "latest.json not replaced: this run is partial" in summary
    assert latest.read_text() == before
    [partial] = sorted(results_folder(pytester.path).glob("2*.json"), key=lambda p: p.stat().st_mtime_ns)[-1:]
    data = load_json(partial)
    assert data["stopped_early"] == "stopped starting evals at --vibe-max-cost $0.025"
    assert data["runs"][0]["gate"]["passed"] is False


YAML_TESTS = """
import pytest


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".yaml" and file_path.name.startswith("test_"):
        return YamlFile.from_parent(parent, path=file_path)


class YamlFile(pytest.File):
    def collect(self):
        yield YamlItem.from_parent(self, name="fails")


class YamlItem(pytest.Item):
    def runtest(self):
        raise AssertionError("this YAML test fails")
"""


@XDIST_MODES
def test_another_plugins_yaml_tests_are_not_unrun_evals(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The pytest docs' YAML collector beside a suite: its items never report as evals, so a
    session in which every eval ran is complete, whatever -x stopped."""
    make_suite(pytester.path, first="ok")
    write(pytester.path / "conftest.py", YAML_TESTS)
    write(pytester.path / "test_other.yaml", "anything: 1\n")
    result = run(pytester, *xdist, "--maxfail", "1", "-p", "no:randomly")
    result.assert_outcomes(passed=4, failed=1)
    assert "partial" not in "\n".join(run_summary(result))
    assert load_json(results_folder(pytester.path) / "latest.json")["stopped_early"] is None


@XDIST_MODES
def test_repeated_items_left_unrun_count_for_their_run(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester.path)  # a fails first: the other repeats never start
    result = run(pytester, *xdist, "-x", "--vibe-repeat", "2", "-p", "no:randomly")
    summary = "\n".join(run_summary(result))
    assert "the session stopped after the first failure (-x): " in summary
    assert " of 4 evals ran;" in summary, summary
    assert "evals were selected" not in summary
