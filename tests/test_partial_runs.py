"""A run that stopped before every selected eval ran (-x, --maxfail, Ctrl-C) says so, keeps its
results in a file of its own, and never becomes the baseline: not ``latest.json``, no history line;
``--vibe-resume latest`` still finds it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import XDIST_MODES, load_json, python_suite, run, run_summary, write

from pytest_vibeeval import __main__ as cli

APP = """
def answer(prompt):
    return "no" if prompt == "fail" else "yes"
"""


ANSWER = "partial_app:answer"
GATE = "score: {formula: success_pct, min: 50}"


def yes(name: str, prompt: str) -> str:
    """An eval that passes when the answer is "yes" (APP's to any prompt but "fail")."""
    return f'{{name: {name}, prompt: {prompt}, checks: [{{equals: "yes"}}]}}'


def make_suite(path: Path, first: str = "fail") -> None:
    python_suite(path / "part.eval.yaml", map(yes, "abcd", [first, "ok", "ok", "ok"]), ANSWER, APP)


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
    # as serially: xdist's own Interrupted (exit code 2) is no interruption
    assert stopped.ret == pytest.ExitCode.TESTS_FAILED, stopped.stdout.str()
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
    python_suite(pytester.path / "more.eval.yaml", [yes("e", "fail"), yes("f", "ok")], ANSWER)
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
    python_suite(pytester.path / "part.eval.yaml", [yes("a", "ok"), yes("b", "fail")], ANSWER)
    result = run(pytester, *xdist, "--maxfail", "1", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # under xdist too, not xdist's Interrupted
    summary = "\n".join(run_summary(result))
    assert "the session stopped" not in summary and "partial" not in summary, summary
    latest = load_json(results_folder(pytester.path) / "latest.json")
    assert latest["stopped_early"] is None
    assert len((pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()) == 1


def test_only_the_run_with_evals_left_unrun_is_partial(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path)  # part: a fails first, then b, c, d never start under -x
    python_suite(pytester.path / "done.eval.yaml", [yes("e", "ok")], ANSWER)
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
    evals = [f"{{name: e{i}, prompt: good, checks: [contains: good]}}" for i in range(8)]
    python_suite(pytester.path / "spend.eval.yaml", evals, "budget_app:answer", BUDGET_APP, top=GATE)
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


def make_gated_suite(path: Path, evals: int = 4, first: str = "ok", function: str = "answer") -> None:
    """part.eval.yaml: ``evals`` evals that pass (but the first one's prompt is ``first``) answered
    by ``partial_app:<function>``, with a score gate."""
    prompts = [first, *["ok"] * (evals - 1)]
    lines = [yes(f"e{n}", prompt) for n, prompt in enumerate(prompts)]
    python_suite(path / "part.eval.yaml", lines, f"partial_app:{function}", APP + KILLER, top=GATE)


KILLER = """
import os


def killer(prompt):
    if prompt == "die":
        os._exit(3)  # the process running this eval ends on the spot
    return answer(prompt)
"""


def assert_partial_and_not_judged(
    path: Path, result: pytest.RunResult, stopped: str, before: str, exit_code: int | None = None
) -> None:
    """The newest results file says why (``stopped``: a regular expression), the gate was not judged,
    and neither latest.json (``before``) nor the history changed. ``exit_code``: the session's, where
    it is not 1 (the gate's)."""
    output = result.stdout.str()
    # the gate cannot pass on part of the suite
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if exit_code is None else exit_code), output
    newest = sorted(results_folder(path).glob("2*.json"), key=lambda p: p.stat().st_mtime_ns)[-1]
    data = load_json(newest)
    assert data["interrupted"] is False
    assert re.fullmatch(stopped, data["stopped_early"]), data["stopped_early"]
    gate = data["runs"][0]["gate"]
    assert gate["passed"] is False and gate["message"].startswith("not judged: the session ended early ("), (
        gate
    )
    assert (results_folder(path) / "latest.json").read_text() == before
    assert len((path / ".vibeeval" / "history.jsonl").read_text().splitlines()) == 1
    summary = "\n".join(run_summary(result))
    assert "latest.json not replaced: this run is partial (ended early (" in summary, summary


def complete_run(pytester: pytest.Pytester, xdist: list[str]) -> str:
    """A first, complete run: its latest.json, which a partial run must leave as it is."""
    run(pytester, *xdist, "-p", "no:randomly").assert_outcomes(passed=4)
    return (results_folder(pytester.path) / "latest.json").read_text()


EXIT_CONFTEST = """
import os

import pytest

CALLS = []
WORKER = []


def pytest_configure(config):
    WORKER.append(hasattr(config, "workerinput"))


def pytest_runtest_logreport(report):
    # on the xdist controller or a serial run: the session's own pytest.exit()
    if WORKER[-1] or report.when != "call" or not os.environ.get("VIBE_EXIT_AFTER"):
        return
    CALLS.append(report.nodeid)
    if len(CALLS) == int(os.environ["VIBE_EXIT_AFTER"]):
        pytest.exit("enough for today", returncode=0)
"""


@XDIST_MODES
def test_a_session_ended_by_pytest_exit_is_partial(
    pytester: pytest.Pytester, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest.exit(returncode=0) after 2 of 4 evals: the 2 that never ran make the run partial, so
    its gate is not judged and it replaces neither latest.json nor adds to the history."""
    make_gated_suite(pytester.path)
    write(pytester.path / "conftest.py", EXIT_CONFTEST)
    before = complete_run(pytester, xdist)
    monkeypatch.setenv("VIBE_EXIT_AFTER", "2")
    result = run(pytester, *xdist, "-p", "no:randomly")
    # serially the other two never started; under xdist a worker may have started one of them
    unrun = "[12]" if xdist else "2"
    stopped = rf"ended early \(pytest\.exit: enough for today; {unrun} of 4 selected evals did not run\)"
    assert_partial_and_not_judged(pytester.path, result, stopped, before)


def test_a_session_another_plugin_stopped_is_partial_and_says_why(pytester: pytest.Pytester) -> None:
    """pytest-timeout's --session-timeout sets ``session.shouldfail`` to its reason: pytest stops
    after the item, and the run says why and how many evals did not run."""
    make_gated_suite(pytester.path)
    before = complete_run(pytester, [])
    write(
        pytester.path / "conftest.py",
        """
        def pytest_runtest_teardown(item):
            if item.name.startswith("e1["):
                item.session.shouldfail = "session-timeout: 60.0 sec exceeded"
        """,
    )
    result = run(pytester, "-p", "no:randomly")
    stopped = r"ended early \(session-timeout: 60\.0 sec exceeded; 2 of 4 selected evals did not run\)"
    assert_partial_and_not_judged(pytester.path, result, stopped, before)


STOP_CONFTEST = """
import os


def pytest_runtest_teardown(item):
    if os.environ.get("VIBE_STOP"):
        item.session.shouldfail = True  # a plugin's stop that says nothing, in the process that ran it
"""


@XDIST_MODES
def test_a_session_a_plugin_stopped_without_a_reason_is_partial_not_interrupted(
    pytester: pytest.Pytester, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``session.shouldfail = True`` after each item: every process that runs evals stops after its
    first. Under xdist the worker passes on no reason, and the controller ends with xdist's
    Interrupted, yet the run was stopped, as serially: partial, not interrupted, exit code 1."""
    make_gated_suite(pytester.path)
    write(pytester.path / "conftest.py", STOP_CONFTEST)
    before = complete_run(pytester, xdist)
    monkeypatch.setenv("VIBE_STOP", "1")
    result = run(pytester, *xdist, "-p", "no:randomly")
    unrun = "[23]" if xdist else "3"  # under xdist each worker that got an eval ran one
    stopped = rf"ended early \({unrun} of 4 selected evals did not run\)"
    assert_partial_and_not_judged(pytester.path, result, stopped, before)
    assert "the session was interrupted" not in "\n".join(run_summary(result))


@XDIST_MODES
def test_pytest_timeouts_session_timeout_is_named_serially_and_under_xdist(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The real --session-timeout, past before the first eval ends (pytest-timeout checks it after
    each item; a fresh process spends longer than that importing the suite's models): each process
    that runs evals stops after its first. Under xdist the controller ends with xdist's own
    Interrupted, yet the run was stopped, not interrupted, says by what, and fails as serially."""
    make_gated_suite(pytester.path)
    before = complete_run(pytester, xdist)
    result = run(pytester, *xdist, "--session-timeout=0.01", "-p", "no:randomly", subprocess=True)
    unrun = "[23]" if xdist else "3"  # under xdist each worker that got an eval ran one
    stopped = rf"ended early \(session-timeout: 0\.01 sec exceeded; {unrun} of 4 selected evals did not run\)"
    assert_partial_and_not_judged(pytester.path, result, stopped, before)  # exit code 1, as serially
    assert "the session was interrupted" not in "\n".join(run_summary(result))


@pytest.mark.parametrize("restarts", [["--max-worker-restart", "0"], []], ids=["not-replaced", "replaced"])
def test_a_lost_xdist_worker_leaves_the_run_partial_unless_it_was_replaced(
    pytester: pytest.Pytester, restarts: list[str]
) -> None:
    """A python: callable ends its worker's process. Without restarts xdist stops scheduling: the
    evals never sent to a worker did not run, even with --vibe-gate-only; a replaced worker runs the
    rest, and the run is complete, the lost eval an error."""
    xdist = ["-n", "2"]
    make_gated_suite(pytester.path, evals=16, first="die", function="killer")
    run(pytester, *xdist, "-k", "not e0").assert_outcomes(passed=15)
    before = (results_folder(pytester.path) / "latest.json").read_text()
    result = run(pytester, *xdist, *restarts, "--vibe-gate-only", "-p", "no:randomly")
    if restarts:
        stopped = r"ended early \(an xdist worker was lost; \d+ of 16 selected evals did not run\)"
        assert_partial_and_not_judged(pytester.path, result, stopped, before)
        return
    result.assert_outcomes(passed=15, failed=1)
    assert result.ret == pytest.ExitCode.OK  # --vibe-gate-only: the gate passed at 93.75
    latest = load_json(results_folder(pytester.path) / "latest.json")
    assert latest["stopped_early"] is None
    assert latest["runs"][0]["gate"]["passed"] is True
    assert len((pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()) == 2


@XDIST_MODES
def test_xfail_skips_and_deselected_evals_leave_the_run_complete(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "partial_app.py", APP)
    write(
        pytester.path / "part.eval.yaml",
        """
        metadata: {name: part, model: m}
        configurations:
          app: {python: "partial_app:answer"}
          gone: {cli: no-such-agent-on-this-path}
        evals:
          - {name: a, prompt: ok, checks: [{equals: "yes"}]}
          - {name: b, prompt: fail, xfail: known to fail, checks: [{equals: "yes"}]}
          - {name: c, prompt: ok, checks: [{equals: "yes"}]}
        """,
    )
    result = run(pytester, *xdist, "-k", "not c", "-p", "no:randomly")
    result.assert_outcomes(passed=1, xfailed=1, skipped=2)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    latest = load_json(results_folder(pytester.path) / "latest.json")
    assert latest["stopped_early"] is None
    assert len((pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()) == 2  # a line a run
    collected = run(pytester, *xdist, "--co")
    assert collected.ret == pytest.ExitCode.OK
    assert load_json(results_folder(pytester.path) / "latest.json") == latest
