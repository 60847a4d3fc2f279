"""A run that stopped before every selected eval ran (-x, --maxfail, Ctrl-C) says so, keeps its
results in a file of its own, and never becomes the baseline: not ``latest.json``, no history line;
``--vibe-resume latest`` still finds it."""

from __future__ import annotations

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
    assert (baseline["baseline"], baseline["score"]) == (".vibeeval/results/latest.json", 100.0)
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
