"""Distributed runs: several execnet gateways give the results of a serial run, a worker that dies
mid-item loses only that item (failed, with the reason; the summary says a worker was lost), and
Ctrl-C writes the results of what finished."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from helpers import (
    XDIST_MODES,
    comparable,
    default_sigint,
    evals_by_nodeid,
    load_json,
    run,
    run_summary,
    write,
)
from test_interrupts import interrupted_run

APP = """
import os, signal

def answer(prompt):
    if prompt == "die":
        os.kill(os.getpid(), signal.SIGKILL)  # the worker process running this item dies
    return {"response": prompt.upper(), "cost": 0.001 * len(prompt), "input_tokens": 3, "output_tokens": 1}
"""


def make_suite(pytester: pytest.Pytester, with_crash: bool = False) -> None:
    write(pytester.path / "app.py", APP)
    crash = "  - {name: crash, prompt: die, checks: [{match: DIE}]}\n" if with_crash else ""
    evals = "".join(f'  - {{name: e{n}, prompt: word{n}, checks: [{{match: "*{n}*"}}]}}\n' for n in range(12))
    write(
        pytester.path / "dist.eval.yaml",
        "metadata: {name: dist, model: m}\n"
        'configurations:\n  app: {python: "app:answer"}\n  shell: {cli: "cat"}\n'
        'score: {formula: "success_pct - total_cost"}\n'
        "evals:\n" + evals + crash,
    )


def test_three_gateways_give_the_serial_results(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    serial = pytester.path / "serial.json"
    run(pytester, "--vibe-results", str(serial), subprocess=True).assert_outcomes(passed=24)
    spread = pytester.path / "spread.json"
    result = run(
        pytester, "--tx", "3*popen", "--dist", "load", "--vibe-results", str(spread), subprocess=True
    )
    result.assert_outcomes(passed=24)
    assert "[gw2]" in result.stdout.str() or "3 workers" in result.stdout.str()
    assert comparable(load_json(serial)) == comparable(load_json(spread))


# On each worker: which of our properties each report of each item leaves with.
PROPERTIES_CONFTEST = """
import json, os


WORKER = []


def pytest_configure(config):
    WORKER.append(hasattr(config, "workerinput"))


def pytest_runtest_logreport(report):
    if not WORKER[0]:
        return  # the controller
    keys = sorted(k for k, _ in report.user_properties if k.startswith("vibeeval_"))
    with open(f"properties-{os.getpid()}.jsonl", "a") as out:
        out.write(json.dumps([report.nodeid, report.when, keys]) + "\\n")
"""


def test_under_xdist_an_items_run_info_travels_once_and_its_record_once(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    write(pytester.path / "conftest.py", PROPERTIES_CONFTEST)
    out = pytester.path / "results.json"
    run(pytester, "-n", "2", "--vibe-results", str(out), subprocess=True).assert_outcomes(passed=24)
    sent = [
        json.loads(line)
        for path in pytester.path.glob("properties-*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert len(sent) == 72  # 24 items, three reports each, logged on the workers that ran them
    expected = {"setup": ["vibeeval_run"], "call": ["vibeeval_result"], "teardown": []}
    assert all(keys == expected[when] for _, when, keys in sent), sent
    assert len(evals_by_nodeid(load_json(out))) == 24  # and the controller still read every run info


# In each process: the evals whose run info it serialized (its text for a worker's setup report).
TO_JSON_CONFTEST = """
import os

from pytest_vibeeval.transport import RunInfo

_real = RunInfo.to_json


def _counted(self):
    with open(f"to-json-{os.getpid()}.txt", "a") as out:
        out.write(self.eval_id + "\\n")
    return _real(self)


RunInfo.to_json = _counted
"""


@XDIST_MODES
def test_run_info_is_serialized_only_for_the_items_a_worker_runs(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Each xdist worker collects the whole suite but runs its share: an item's run info becomes
    text once, for the setup report of the worker that runs it, not on every worker at collection
    (nor for the items ``-k`` deselects); a serial run never serializes it."""
    make_suite(pytester)
    write(pytester.path / "conftest.py", TO_JSON_CONFTEST)
    out = pytester.path / "results.json"
    result = run(pytester, "-k", "e1 and app", "--vibe-results", str(out), xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=3)  # e1, e10 and e11 with the app configuration, of 24
    made = sorted(line for path in pytester.path.glob("to-json-*.txt") for line in path.read_text().split())
    ran = ["e1", "e10", "e11"]
    assert made == (ran if xdist else [])
    assert sorted(evals_by_nodeid(load_json(out))) == sorted(f"dist.eval.yaml::{e}[app]" for e in ran)


# An item's run info as a worker of another release might send it, or as another plugin might have
# changed it: a keyed object (not two lines of values), or as many values as this release's in
# another order (suite and source swapped), untagged as the releases before the format's tag.
FOREIGN_RUN_INFO_CONFTEST = """
import pytest

RUN_INFO = {text!r}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    report.user_properties = [(k, RUN_INFO if k == "vibeeval_run" else v) for k, v in report.user_properties]
    return report
"""
FOREIGN_RUN_INFOS = {
    "keyed": json.dumps({"suite": "dist", "source": "dist.eval.yaml"}),
    "same-count": json.dumps(
        ["dist.eval.yaml", "dist", "app", None, "success_pct", 24, None, None, None, None, 1, None]
    )
    + '\n["e0",true,0,0,null]',
}


@pytest.mark.parametrize("foreign", sorted(FOREIGN_RUN_INFOS))
@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "n2"])
def test_run_info_that_cannot_be_read_makes_the_run_from_the_node_ids(
    pytester: pytest.Pytester, xdist: list[str], foreign: str
) -> None:
    make_suite(pytester)
    write(pytester.path / "conftest.py", FOREIGN_RUN_INFO_CONFTEST.format(text=FOREIGN_RUN_INFOS[foreign]))
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), *xdist, subprocess=True)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text
    result.assert_outcomes(passed=24)
    assert "could not be read" in text and "another release of pytest-vibeeval" in text
    results = load_json(out)
    assert len(evals_by_nodeid(results)) == 24
    assert sorted(run["configuration"] for run in results["runs"]) == ["app", "shell"]


@pytest.mark.parametrize("workers", [["-n", "2"], ["--tx", "2*popen", "--dist", "load"]], ids=["n2", "tx"])
def test_a_worker_that_dies_loses_only_its_item(pytester: pytest.Pytester, workers: list[str]) -> None:
    make_suite(pytester, with_crash=True)
    out = pytester.path / "results.json"
    result = run(pytester, *workers, "--vibe-results", str(out), "--vibe-config", "app", subprocess=True)
    result.assert_outcomes(passed=12, failed=1)
    records = evals_by_nodeid(load_json(out))
    crashed = records["dist.eval.yaml::crash[app]"]
    assert crashed["outcome"] == "error"
    assert crashed["message"].startswith("no result recorded: worker 'gw"), crashed["message"]
    assert "crashed while running 'dist.eval.yaml::crash[app]'" in crashed["message"]
    assert all(records[f"dist.eval.yaml::e{n}[app]"]["outcome"] == "passed" for n in range(12))
    summary = "\n".join(run_summary(result))
    assert "1 xdist worker was lost" in summary, summary


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_ctrl_c_writes_what_finished(pytester: pytest.Pytester, workers: list[str]) -> None:
    out = pytester.path / "results.json"
    # with -n 2, z-slow may start before a or b is reported: it is interrupted once both are
    returncode, output = interrupted_run(pytester, workers, (signal.SIGINT,), ("--vibe-results", str(out)))
    assert returncode == pytest.ExitCode.INTERRUPTED, output
    data = load_json(out)
    assert data["interrupted"] is True
    records = evals_by_nodeid(data)
    assert records["int.eval.yaml::a[agent]"]["outcome"] == "passed", output
    assert records["int.eval.yaml::b[agent]"]["outcome"] == "passed", output
    cut = records["int.eval.yaml::z-slow[agent]"]
    assert (cut["outcome"], cut["message"]) == ("skipped", "not finished: the session was interrupted")
    assert "Run Summary" in output


PASSTHROUGH = "env_passthrough: [PYTEST_XDIST_WORKER]"  # agents get only the variables let through
WORKER_AGENT = """
import os, sys
print(sys.stdin.read() + " " + os.environ.get("PYTEST_XDIST_WORKER", "-"))
"""


def test_a_configuration_group_runs_on_one_worker_with_loadgroup(pytester: pytest.Pytester) -> None:
    agent = write(pytester.path / "agent.py", WORKER_AGENT)
    evals = "".join(f'  - {{name: e{n}, prompt: p{n}, checks: [{{match: "*"}}]}}\n' for n in range(8))
    write(
        pytester.path / "grp.eval.yaml",
        "metadata: {name: grp, model: m}\n"
        "configurations:\n"
        f'  limited: {{cli: "{sys.executable}", args: ["{agent}"], xdist_group: true, {PASSTHROUGH}}}\n'
        f'  free: {{cli: "{sys.executable}", args: ["{agent}"], {PASSTHROUGH}}}\n'
        "evals:\n" + evals,
    )
    out = pytester.path / "results.json"
    result = run(
        pytester, "-n", "2", "--dist", "loadgroup", "-rA", "--vibe-results", str(out), subprocess=True
    )
    result.assert_outcomes(passed=16)
    # the ids print as collected (pytest 9.2 would rebuild them as e0[limited]@limited])
    result.stdout.fnmatch_lines_random(
        ["PASSED grp.eval.yaml::e0[[]limited]@limited", "PASSED grp.eval.yaml::e0[[]free]"]
    )
    assert "@limited]" not in result.stdout.str()
    records = evals_by_nodeid(load_json(out))
    limited = {r["response"].split()[-1] for n, r in records.items() if "[limited]" in n}
    assert len(limited) == 1 and limited != {"-"}  # one worker ran every eval of the group, in turn
    assert all(nodeid.endswith("@limited") for nodeid in records if "[limited]" in nodeid)
    assert load_json(out)["runs"][1]["metrics"]["passed"] == 8


def test_the_interrupted_run_gets_ctrl_c_even_when_the_suite_was_started_ignoring_it() -> None:
    """A test suite started as a background job ignores SIGINT, and children inherit that: the run
    that interrupt_when presses Ctrl-C in must not, or it would never stop."""
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
        inherited = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        reset = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, preexec_fn=default_sigint
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (inherited.stdout.strip(), reset.stdout.strip()) == ("False", "True")


def test_dist_each_is_refused_for_evals_and_says_what_to_use(pytester: pytest.Pytester) -> None:
    """--dist each runs every item on every worker under one node id: the results could keep one
    run of each eval only, and the score would depend on which report came last. No eval runs."""
    make_suite(pytester)
    write(pytester.path / "test_plain.py", "def test_plain():\n    pass\n")
    result = run(pytester, "--dist", "each", xdist=["-n", "2"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --dist each cannot run evals: every xdist worker would run every eval under the same "
            "node id, *use --vibe-repeat N*--dist load*"
        ]
    )
    assert "passed" not in result.stdout.str()
    assert not (pytester.path / ".vibeeval").exists()

    plain = run(pytester, "--dist", "each", "test_plain.py", xdist=["-n", "2"])  # no eval: as xdist does
    plain.assert_outcomes(passed=2)
