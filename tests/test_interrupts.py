"""SIGTERM (a CI system's cancel) ends a run as Ctrl-C does, serially and under xdist: the results of
what finished are written with ``"interrupted": true``, the items cut short are skipped "not
finished", and the run never becomes ``latest.json`` nor a history line. Two Ctrl-Cs in a row do
the same: never a complete-looking run scored over the few evals that finished. Nor is an
interrupted run ever a baseline: `--vibe-baseline` refuses its file, and `latest` passes it over."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, interrupt_when, is_gone, load_json, run, wait_gone, write

from pytest_vibeeval import __main__ as cli

SLOW_AGENT = """
import pathlib, sys, time
prompt = sys.stdin.read()
if prompt == "slow":
    pathlib.Path(sys.argv[1]).write_text("started")
    time.sleep(120)
print(prompt)
"""

CUT = ("skipped", "not finished: the session was interrupted")


def interrupted_run(
    pytester: pytest.Pytester,
    xdist: list[str],
    signals: tuple[signal.Signals, ...],
    extra: tuple[str, ...] = (),
) -> tuple[int, str]:
    """A suite of two quick evals and a slow one, run with ``extra`` arguments and sent ``signals``
    once both quick ones passed and the slow one's agent started; its exit code and output."""
    started = slow_suite(pytester)
    return interrupt_when(
        pytester,
        started,
        *xdist,
        "-v",
        "-p",
        "no:randomly",
        *extra,
        after_lines=(("int.eval.yaml::a[agent]", "PASSED"), ("int.eval.yaml::b[agent]", "PASSED")),
        signals=signals,
    )


def slow_suite(pytester: pytest.Pytester) -> Path:
    """int.eval.yaml: evals a and b answer at once, z-slow's agent writes the returned marker file
    and then sleeps."""
    agent = write(pytester.path / "agent.py", SLOW_AGENT)
    started = pytester.path / "started"
    write(
        pytester.path / "int.eval.yaml",
        f"""
        metadata: {{name: int, model: m}}
        configurations:
          agent: {{cli: "{sys.executable}", args: ["{agent}", "{started}"]}}
        evals:
          - {{name: a, prompt: quick, checks: [{{match: "*quick*"}}]}}
          - {{name: b, prompt: quick, checks: [{{match: "*quick*"}}]}}
          - {{name: z-slow, prompt: slow, checks: [{{match: "*slow*"}}]}}
        """,
    )
    return started


def assert_kept_as_partial(pytester: pytest.Pytester, returncode: int, output: str) -> None:
    """Finished results kept in a stamped file marked interrupted; no latest.json, no history."""
    assert returncode == pytest.ExitCode.INTERRUPTED, output
    folder = pytester.path / ".vibeeval" / "results"
    files = list(folder.glob("2*.json"))
    assert len(files) == 1, output
    data = load_json(files[0])
    assert data["interrupted"] is True, output
    assert data["stopped_early"] == "interrupted"
    records = evals_by_nodeid(data)
    assert records["int.eval.yaml::a[agent]"]["outcome"] == "passed", output
    assert records["int.eval.yaml::b[agent]"]["outcome"] == "passed", output
    cut = records["int.eval.yaml::z-slow[agent]"]
    assert (cut["outcome"], cut["message"]) == CUT, output
    assert not (folder / "latest.json").exists(), output
    assert not (pytester.path / ".vibeeval" / "history.jsonl").exists(), output
    assert "Run Summary" in output
    assert "note: the session was interrupted: 2 of 3 evals ran; " in output, output
    assert "evals were selected" not in output, output  # nothing was deselected
    assert "Traceback" not in output and "INTERNALERROR" not in output, output


@XDIST_MODES
def test_sigterm_ends_the_run_as_ctrl_c_does(pytester: pytest.Pytester, xdist: list[str]) -> None:
    returncode, output = interrupted_run(pytester, xdist, (signal.SIGTERM,))
    assert_kept_as_partial(pytester, returncode, output)
    assert "SIGTERM" in output  # the summary says what ended the run


PID_AGENT = """
import os, pathlib, sys, time
prompt = sys.stdin.read()
if prompt.startswith("slow"):
    folder = pathlib.Path(sys.argv[1])
    (folder / "pid.tmp").write_text(f"{os.getpid()} {os.getppid()}")
    (folder / "pid.tmp").rename(folder / f"{prompt}.pid")  # whole, or not there
    time.sleep(600)
print(prompt)
"""


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def test_sigterm_to_one_xdist_worker_interrupts_the_run(pytester: pytest.Pytester) -> None:
    """SIGTERM sent to one xdist worker alone (not to the controller): that worker kills its agent
    and ends, and the run ends as interrupted, as when the controller receives it, without waiting
    for the agent still running on the other worker (xdist alone would wait for it, here for ten
    minutes). Only under xdist: a serial run has no worker (the signal to its one process is the
    test above)."""
    write(pytester.path / "agent.py", PID_AGENT)
    write(
        pytester.path / "w.eval.yaml",
        f"""
        metadata: {{name: w, model: m}}
        configurations:
          agent: {{cli: "{sys.executable}", args: ["{pytester.path / "agent.py"}", "{pytester.path}"]}}
        evals:
          - {{name: a, prompt: quick, checks: [{{match: "*quick*"}}]}}
          - {{name: slow1, prompt: slow1, checks: [{{match: "*slow*"}}]}}
          - {{name: slow2, prompt: slow2, checks: [{{match: "*slow*"}}]}}
        """,
    )
    # Fewer items than twice the workers: xdist sends them round robin, so slow1 and slow2 run at
    # once on the two workers.
    agents: dict[str, tuple[int, int]] = {}

    def worker_of_slow1(pytest_pid: int) -> int:
        started = time.monotonic()
        while not (pytester.path / "slow2.pid").exists():  # the deadline only stops a hang
            assert time.monotonic() - started < 60, "slow2's agent never started"
            time.sleep(0.05)
        for name in ("slow1", "slow2"):
            pid, parent = map(int, (pytester.path / f"{name}.pid").read_text().split())
            agents[name] = (pid, parent)
        worker = agents["slow1"][1]
        assert parent_of(worker) == pytest_pid  # an xdist worker, not a process of ours in between
        assert agents["slow2"][1] != worker
        return worker

    try:
        returncode, output = interrupt_when(
            pytester,
            pytester.path / "slow1.pid",
            "-n",
            "2",
            "-v",
            "-p",
            "no:randomly",
            after_lines=(("w.eval.yaml::a[agent]", "PASSED"),),
            signals=(signal.SIGTERM,),
            target=worker_of_slow1,
        )
        for pid, worker in agents.values():  # no orphan: every agent and worker is gone
            assert wait_gone(pid, timeout=30) and wait_gone(worker, timeout=30), output
    finally:
        for pid, _ in agents.values():  # a failed run's agents: never left sleeping
            if not is_gone(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
    assert returncode == pytest.ExitCode.INTERRUPTED, output
    assert "interrupted by SIGTERM (sent to xdist worker gw" in output, output
    files = list((pytester.path / ".vibeeval" / "results").glob("2*.json"))
    assert len(files) == 1, output
    data = load_json(files[0])
    assert data["interrupted"] is True, output
    records = evals_by_nodeid(data)
    assert records["w.eval.yaml::a[agent]"]["outcome"] == "passed", output
    for name in ("slow1", "slow2"):
        cut = records[f"w.eval.yaml::{name}[agent]"]
        assert (cut["outcome"], cut["message"]) == CUT, output
    assert "worker was lost" not in output and "crashed" not in output, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output


@XDIST_MODES
def test_two_ctrl_cs_still_give_an_interrupted_partial_run(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    returncode, output = interrupted_run(pytester, xdist, (signal.SIGINT, signal.SIGINT))
    assert_kept_as_partial(pytester, returncode, output)


@XDIST_MODES
def test_an_interrupted_run_is_never_a_baseline(pytester: pytest.Pytester, xdist: list[str]) -> None:
    slow_suite(pytester)
    quick = ("-k", "not slow", "-p", "no:randomly")
    run(pytester, *quick, xdist=xdist).assert_outcomes(passed=2)  # a complete run: latest.json
    latest = pytester.path / ".vibeeval" / "results" / "latest.json"
    before = latest.read_text()
    # cancelled by CI, writing the path the next run also gives: the newest file there
    returncode, output = interrupted_run(pytester, xdist, (signal.SIGTERM,), ("--vibe-results", "out.json"))
    assert returncode == pytest.ExitCode.INTERRUPTED, output
    interrupted = pytester.path / "out.json"
    assert load_json(interrupted)["interrupted"] is True
    assert latest.read_text() == before

    refused = run(pytester, *quick, "--vibe-baseline", str(interrupted), xdist=xdist)
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(
        ["*--vibe-baseline: *out.json holds a partial run (interrupted): not every*"]
    )
    assert "Traceback" not in refused.stdout.str() + refused.stderr.str()
    assert cli.main(["compare", str(interrupted), str(latest)]) == 2  # the CLI refuses it too

    # `latest` passes the newer interrupted file over: the baseline is the complete run
    compared = run(pytester, *quick, "--vibe-baseline", "latest", "--vibe-results", "out.json", xdist=xdist)
    compared.assert_outcomes(passed=2)
    baseline = load_json(interrupted)["runs"][0]["baseline"]
    assert baseline["score"] == 100.0
    assert re.fullmatch(r"\.vibeeval/results/2\w*\.json", baseline["baseline"]), (
        baseline
    )  # what latest copied


QUEUED_REPORT_CONFTEST = """
import os, signal

CONFIG = None
FIRED = []


def pytest_configure(config):
    global CONFIG
    CONFIG = config


def pytest_runtest_logreport(report):
    # The xdist controller, at the first eval's teardown report: once the other eval's teardown
    # report is queued (unread), press Ctrl-C, as a user could at that very moment.
    if hasattr(CONFIG, "workerinput") or report.when != "teardown" or FIRED:
        return
    FIRED.append(report.nodeid)
    queue = CONFIG.pluginmanager.getplugin("dsession").queue

    def other_teardown_queued():
        return any(
            name == "testreport" and kw["rep"].when == "teardown" and kw["rep"].nodeid != report.nodeid
            for name, kw in queue.queue
        )

    with queue.not_empty:
        assert queue.not_empty.wait_for(other_teardown_queued, timeout=120)
    os.kill(os.getpid(), signal.SIGINT)
"""


def test_reports_queued_on_the_xdist_controller_at_an_interrupt_are_kept(
    pytester: pytest.Pytester,
) -> None:
    """Ctrl-C on the xdist controller while an eval's reports wait in its queue: that eval finished
    on its worker, so its result is kept, not reported cut short ("not finished")."""
    write(pytester.path / "conftest.py", QUEUED_REPORT_CONFTEST)
    write(
        pytester.path / "q.eval.yaml",
        """
        metadata: {name: q, model: m}
        configurations:
          app: {python: "q_app:answer"}
        evals:
          - {name: a, prompt: quick, checks: [{match: "*quick*"}]}
          - {name: b, prompt: quick, checks: [{match: "*quick*"}]}
        """,
    )
    write(pytester.path / "q_app.py", "def answer(prompt):\n    return prompt\n")
    result = run(pytester, "-v", "-p", "no:randomly", xdist=["-n", "2"])
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    files = list((pytester.path / ".vibeeval" / "results").glob("2*.json"))
    assert len(files) == 1, output
    data = load_json(files[0])
    assert data["interrupted"] is True, output
    outcomes = {nodeid: record["outcome"] for nodeid, record in evals_by_nodeid(data).items()}
    assert outcomes == {"q.eval.yaml::a[app]": "passed", "q.eval.yaml::b[app]": "passed"}, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output


FINISH_CONFTEST = """
import os
import signal

from pytest_vibeeval import RunVariable

WHERE = os.environ.get("VIBE_SIGNAL_IN")
SIGNALS = [getattr(signal, name) for name in os.environ.get("VIBE_SIGNALS", "").split(",") if name]


def send(where):
    # as a user's Ctrl-C or a CI system's cancel at that very moment of the session's end
    if where == WHERE:
        for signum in SIGNALS:
            os.kill(os.getpid(), signum)


def counted(records):
    send("scoring")
    return float(len(records)), None


def pytest_vibeeval_register_run_variables(registry):
    registry.register(RunVariable("counted", "count", "evals scored", counted, metric=True))


def pytest_vibeeval_write_results(config, results, results_path):
    send("writer")
    return ["writer done"]
"""


def finishing_suite(pytester: pytest.Pytester) -> None:
    """fin.eval.yaml: three quick evals, and a conftest.py that sends this process the signals
    of $VIBE_SIGNALS while the session's end scores the runs or runs the result writers
    ($VIBE_SIGNAL_IN: scoring, writer)."""
    write(pytester.path / "conftest.py", FINISH_CONFTEST)
    write(pytester.path / "fin_app.py", "def answer(prompt):\n    return prompt\n")
    write(
        pytester.path / "fin.eval.yaml",
        """
        metadata: {name: fin, model: m}
        configurations:
          app: {python: "fin_app:answer"}
        score: {formula: success_pct, min: 50}
        evals:
          - {name: a, prompt: quick, checks: [{match: "*quick*"}]}
          - {name: b, prompt: quick, checks: [{match: "*quick*"}]}
          - {name: c, prompt: quick, checks: [{match: "*quick*"}]}
        """,
    )


@XDIST_MODES
@pytest.mark.parametrize(("where", "sent"), [("scoring", "SIGINT"), ("writer", "SIGTERM")])
def test_a_signal_while_the_session_ends_waits_for_the_results(
    pytester: pytest.Pytester, xdist: list[str], where: str, sent: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every eval ran; a Ctrl-C or SIGTERM while the runs are scored or the results written is held
    until they are, and the session then ends as interrupted: the run is complete, and says so."""
    finishing_suite(pytester)
    monkeypatch.setenv("VIBE_SIGNAL_IN", where)
    monkeypatch.setenv("VIBE_SIGNALS", sent)
    result = run(pytester, "-p", "no:randomly", xdist=xdist, subprocess=True)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert f"vibeeval: interrupt ({sent}) received while writing results: finishing them first; " in output
    data = load_json(pytester.path / ".vibeeval" / "results" / "latest.json")
    assert (data["interrupted"], data["stopped_early"]) == (False, None)
    [record] = data["runs"]
    assert record["metrics"]["counted"] == 3.0 and record["gate"]["passed"] is True
    assert {e["outcome"] for e in record["evals"]} == {"passed"}
    assert len((pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()) == 1
    assert "writer done" in output
    assert f"interrupted by {sent} while the session ended: the results were written first" in output


@XDIST_MODES
def test_a_second_signal_while_the_session_ends_abandons_the_results(
    pytester: pytest.Pytester, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user insists: the second signal while the runs are scored ends the session there."""
    finishing_suite(pytester)
    monkeypatch.setenv("VIBE_SIGNAL_IN", "scoring")
    monkeypatch.setenv("VIBE_SIGNALS", "SIGINT,SIGINT")
    result = run(pytester, "-p", "no:randomly", xdist=xdist, subprocess=True)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), output
    assert "press Ctrl-C again to abandon them" in output and "KeyboardInterrupt" in output, output
    assert not (pytester.path / ".vibeeval" / "results").exists(), output


@pytest.mark.parametrize("has_results", [True, False])
def test_a_second_signal_is_held_only_where_there_are_results_to_write(
    has_results: bool, capfd: pytest.CaptureFixture[str]
) -> None:
    """In a session of plain tests (or before any eval finished) a second Ctrl-C is pytest's own:
    not held, and no "writing results" message for results that do not exist."""
    from pytest_vibeeval.interrupts import InterruptWatch

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    watch = InterruptWatch()
    try:
        watch.install(announce=True, has_results=lambda: has_results)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        if has_results:
            signal.raise_signal(signal.SIGTERM)  # held: returns
            assert watch.held == "SIGTERM"
            assert "received while writing results" in capfd.readouterr().err
        else:
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGTERM)
            assert watch.held is None and capfd.readouterr().err == ""
        assert watch.received == "SIGINT"
    finally:
        watch.uninstall()
        for signum, handler in saved.items():
            signal.signal(signum, handler)
