"""The timeout backstop every eval item carries: when it fires the item still has a result (an
error naming the phase it was in), it is a failed test case in the JUnit XML, the other items run
on, and no process it started is left behind. It does not need pytest-timeout, and a global
``--timeout`` does not replace it."""

from __future__ import annotations

import os
import re
import signal
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from chat_server import USAGE, ChatServer
from helpers import PYTHON, XDIST_MODES, evals_by_nodeid, load_json, needs_plugin, python_suite, run, write

from pytest_vibeeval.checks import BUILTIN_CHECKS, AnyOf, Check, JudgeArgs
from pytest_vibeeval.limits import (
    KILL_GRACE_S,
    RETRY_AFTER_CAP_S,
    answer_limit_s,
    judge_calls,
    prompt_eval_limit_s,
)
from pytest_vibeeval.models import Configuration

HANGING_APP = """
import time

def answer(prompt):
    if prompt == "hang":
        time.sleep(120)
    return "ok"
"""

STUCK = "{name: stuck, prompt: hang, checks: [{match: ok}]}"  # line 5 of hang.eval.yaml
FINE = "{name: fine, prompt: fine, checks: [{match: ok}]}"


def write_hang_project(path: Path, fine: str = FINE) -> None:
    """Two evals of a ``python:`` answer, one of which hangs; a backstop of 2 s (1 s of the
    configuration's timeout, 1 s of margin)."""
    write(path / "pytest.ini", "[pytest]\nvibe_timeout_margin = 1\n")
    python_suite(path / "hang.eval.yaml", [STUCK, fine], app=HANGING_APP, configuration=", timeout: 1000")


@XDIST_MODES
def test_a_hung_prompt_eval_reports_its_phase(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write_hang_project(pytester.path)
    out = pytester.path / "results.json"
    junit = pytester.path / "junit.xml"
    result = run(pytester, "--vibe-results", str(out), f"--junitxml={junit}", xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    records = evals_by_nodeid(load_json(out))
    stuck = records["hang.eval.yaml::stuck[app]"]
    assert stuck["outcome"] == "error"
    assert stuck["message"].startswith("stopped in the agent phase (app, "), stuck["message"]
    assert "Timeout (>2.0s) from the vibeeval backstop" in stuck["message"]
    assert records["hang.eval.yaml::fine[app]"]["outcome"] == "passed"
    cases = {case.get("name"): case for case in ET.parse(junit).getroot().iter("testcase")}
    assert cases["stuck[app]"].find("failure") is not None
    assert cases["fine[app]"].find("failure") is None


@needs_plugin("pytest_rerunfailures", "pytest-rerunfailures")
@XDIST_MODES
def test_a_rerun_has_a_backstop_of_its_own(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """pytest-rerunfailures runs an item's phases again inside one protocol: each attempt is timed
    anew (the rerun of a hung answer hung the session, its backstop spent), and the record of the
    rerun that timed out is its own, not the first attempt's."""
    write_hang_project(pytester.path)
    out = pytester.path / "results.json"
    result = run(pytester, "--reruns", "1", "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    assert result.parseoutcomes()["rerun"] == 1
    stuck = evals_by_nodeid(load_json(out))["hang.eval.yaml::stuck[app]"]
    assert stuck["message"].startswith("stopped in the agent phase (app, "), stuck["message"]
    assert "Timeout (>2.0s) from the vibeeval backstop" in stuck["message"]
    assert stuck["attempts"] == 2


@needs_plugin("pytest_rerunfailures", "pytest-rerunfailures")
@XDIST_MODES
def test_the_backstop_sleeps_through_the_delay_between_attempts(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The backstop times each attempt's setup, call and teardown, not pytest-rerunfailures' delay
    between attempts: it stayed armed through that sleep and fired inside it (serially an
    INTERNALERROR and no results; under xdist a lost worker and the eval an error without a
    result). Backstop 3 s (0.5 s of timeout, 2.5 s of margin: an attempt of 0.3 s fits in it on a
    loaded machine), a delay of 4 s; an alarm outside the phases waits 0.2 s (not 10) before it
    raises where it is."""
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_timeout_margin = 2.5\n")
    write(pytester.path / "conftest.py", "import pytest_vibeeval.backstop as b\nb.RETRY_FOR_S = 0.2\n")
    python_suite(
        pytester.path / "slow.eval.yaml",
        ["{name: wrong, prompt: p, checks: [{equals: ok}]}"],
        "slow_app:answer",
        "import time\n\ndef answer(prompt):\n    time.sleep(0.3)\n    return 'no'\n",
        configuration=", timeout: 500",
    )
    out = pytester.path / "results.json"
    options = ("--reruns", "1", "--reruns-delay", "4", "--vibe-results", str(out))
    result = run(pytester, *options, xdist=xdist, subprocess=True)  # the conftest's change stays there
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.assert_outcomes(failed=1)
    assert result.parseoutcomes()["rerun"] == 1
    wrong = evals_by_nodeid(load_json(out))["slow.eval.yaml::wrong[app]"]
    assert (wrong["outcome"], wrong["attempts"]) == ("failed", 2)
    assert wrong["message"].startswith("equals: "), wrong["message"]


@pytest.mark.parametrize(
    ("options", "xdist"),
    [(["-p", "no:timeout"], []), (["--timeout=600"], ["-n", "2"])],
    ids=["without-pytest-timeout", "global-timeout-xdist"],
)
def test_the_backstop_stands_alone(pytester: pytest.Pytester, options: list[str], xdist: list[str]) -> None:
    write_hang_project(pytester.path)
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), *options, xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    stuck = evals_by_nodeid(load_json(out))["hang.eval.yaml::stuck[app]"]
    assert "Timeout (>2.0s) from the vibeeval backstop" in stuck["message"]


def test_without_sigalrm_pytest_timeouts_thread_method_stands_in(pytester: pytest.Pytester) -> None:
    write_hang_project(pytester.path)
    write(pytester.path / "conftest.py", "import pytest_vibeeval.backstop as b\nb.HAS_SIGALRM = False\n")
    result = run(pytester, subprocess=True)
    assert result.ret == 1  # the thread method ends the whole process
    result.stdout.fnmatch_lines(["*+ Timeout +*"])


# Unique to this process: the copies of a test that other xdist workers run at the same time
# have sleeps of their own, which this one must neither count nor kill.
SLEEP_SECONDS = f"4242.{os.getpid()}"

REPORT_HOOK_CONFTEST = """
import signal

RUNS_ITEMS = True  # not an xdist controller, which sees the reports too

def pytest_configure(config):
    global RUNS_ITEMS
    RUNS_ITEMS = hasattr(config, "workerinput") or not getattr(config.option, "numprocesses", None)

def pytest_runtest_logstart(nodeid):
    if HOOK == "logstart" and RUNS_ITEMS and "stuck" in nodeid:
        signal.pause()  # a hook still busy when the backstop's time is up

def pytest_runtest_logreport(report):
    if HOOK == "logreport" and RUNS_ITEMS and report.when == "setup" and "stuck" in report.nodeid:
        signal.pause()
"""


@pytest.mark.parametrize("hook", ["logstart", "logreport"])
@XDIST_MODES
def test_the_backstop_waits_out_the_report_hooks(
    pytester: pytest.Pytester, xdist: list[str], hook: str
) -> None:
    """An exception in a hook around the phases would end the session (INTERNALERROR): the
    backstop raises only in setup, call or teardown, here the call that follows the slow hook.
    Serially this session runs inside this test's own call phase, which must not count."""
    write_hang_project(pytester.path)
    write(pytester.path / "conftest.py", f"HOOK = {hook!r}\n{REPORT_HOOK_CONFTEST}")
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    stuck = evals_by_nodeid(load_json(out))["hang.eval.yaml::stuck[app]"]
    # The alarm the hook put off comes back every 50 ms: on a loaded machine it may come in the
    # call before the eval has entered its first phase, which the message then says.
    phases = ("stopped in the agent phase (app, ", "stopped before its first phase: ")
    assert stuck["message"].startswith(phases), stuck["message"]
    assert "Timeout (>2.0s) from the vibeeval backstop" in stuck["message"]


THREADED_APP = """
import threading

def answer(prompt):
    if prompt == "hang":
        helper = threading.Thread(target=wait_for_ever, name="stuck-helper", daemon=True)
        helper.start()
        helper.join()
    return "ok"

def wait_for_ever():
    threading.Event().wait(120)
"""


@XDIST_MODES
def test_a_timeout_shows_where_the_other_threads_were(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write_hang_project(pytester.path)
    write(pytester.path / "app.py", THREADED_APP)
    result = run(pytester, xdist=xdist, subprocess=True)  # the helper thread ends with the process
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*Captured stderr call*",
            "vibeeval backstop: the other threads when it fired:",
            "Thread stuck-helper:",
        ]
    )
    assert "in wait_for_ever" in result.stdout.str()


@pytest.mark.parametrize("filters", [[], ["-W", "error"]], ids=["default", "warnings-as-errors"])
def test_without_sigalrm_or_pytest_timeout_it_warns(pytester: pytest.Pytester, filters: list[str]) -> None:
    """A warning, also under ``-W error``, where raised it ended the session (INTERNALERROR)."""
    write(pytester.path / "conftest.py", "import pytest_vibeeval.backstop as b\nb.HAS_SIGALRM = False\n")
    evals = [f"{{name: {name}, prompt: {name}, checks: [{{match: ok}}]}}" for name in "ab"]
    python_suite(pytester.path / "ok.eval.yaml", evals, app="def answer(prompt):\n    return 'ok'\n")
    result = run(pytester, "-p", "no:timeout", *filters, subprocess=True)
    result.assert_outcomes(passed=2, warnings=1)  # once, not once per item
    result.stdout.fnmatch_lines(["*eval items run without their timeout backstop*"])


WORKSPACE_CONFTEST = """
import pathlib
import pytest
from pytest_vibeeval.process import run_command

@pytest.fixture
def vibe_workspace(vibe_workdir):
    # A preparation that hangs in a command (a slow clone, say): the backstop must end it.
    (vibe_workdir / "workspace").mkdir()
    sleep = ["sleep", "SLEEP_SECONDS"]
    run_command(sleep, cwd=vibe_workdir, output_dir=vibe_workdir, name="prep", timeout=600)
    return vibe_workdir / "workspace"
"""


def sleepers() -> list[int]:
    """Processes still running this process's ``sleep SLEEP_SECONDS``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if handle.read().split(b"\0")[:2] == [b"sleep", SLEEP_SECONDS.encode()]:
                    found.append(int(entry))
        except OSError:
            continue
    return found


@XDIST_MODES
def test_a_hung_workspace_leaves_no_process_behind(pytester: pytest.Pytester, xdist: list[str]) -> None:
    for pid in sleepers():  # from an earlier, broken run of this test
        os.kill(pid, signal.SIGKILL)
    write(pytester.path / "conftest.py", WORKSPACE_CONFTEST.replace("SLEEP_SECONDS", SLEEP_SECONDS))
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_timeout_margin = 1\n")
    write(pytester.path / "template" / "a.txt", "a\n")
    write(pytester.path / "grading" / "b.txt", "b\n")
    write(
        pytester.path / "code.eval.yaml",
        f"""
        metadata: {{name: code, model: m}}
        configurations:
          agent: {{cli: "{PYTHON}", args: ["-c", "pass"], timeout: 1000}}
        commands:
          check: {{command: "true", timeout: 1000}}
        evals:
          - name: slow-prep
            prompt: do it
            workspace: template
            grading: grading
            grade_steps: [check]
        """,
    )
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), "--vibe-sandbox", "none", xdist=xdist)
    result.assert_outcomes(errors=1)
    record = evals_by_nodeid(load_json(out))["code.eval.yaml::slow-prep[agent]"]
    assert record["outcome"] == "error"
    assert record["message"].startswith("stopped in the workspace phase (slow-prep, "), record["message"]
    assert "Timeout (>3.0s) from the vibeeval backstop" in record["message"]  # 1 s agent + 1 s step + 1 s
    assert sleepers() == []


def test_the_margin_must_be_a_number(pytester: pytest.Pytester) -> None:
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_timeout_margin = soon\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "vibe_timeout_margin (ini): 'soon' is not a number of seconds >= 0" in result.stderr.str()


def test_an_expected_failure_that_stops_early_still_says_why(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "conftest.py",
        """
        import pytest

        @pytest.fixture
        def vibe_provider():
            raise RuntimeError("no provider today")
        """,
    )
    write(
        pytester.path / "x.eval.yaml",
        """
        metadata: {name: x, model: m}
        configurations:
          app: {cli: "true"}
        evals:
          - {name: known, prompt: hi, xfail: not yet, checks: [{match: "*"}]}
        """,
    )
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out))
    result.assert_outcomes(xfailed=1)
    record = evals_by_nodeid(load_json(out))["x.eval.yaml::known[app]"]
    assert record["outcome"] == "error"
    assert record["message"] == "stopped before its first phase: RuntimeError: no provider today"


def failures_section(result: pytest.RunResult) -> str:
    text = result.stdout.str()
    return text[text.index("= FAILURES =") : text.index("short test summary info")]


@XDIST_MODES
def test_a_backstop_timeout_shows_the_users_frames_not_the_plugins(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write_hang_project(pytester.path)
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    failures = failures_section(result)
    assert ">           time.sleep(120)" in failures  # where the user's callable hung
    assert re.search(
        r"\nE +BackstopTimeout: stopped in the agent phase \(app, 2 s in\): Timeout \(>2\.0s\) from the "
        r"vibeeval backstop\n",
        failures,
    ), failures
    assert "app.py:5: BackstopTimeout" in failures
    assert "pytest_vibeeval" not in failures
    stuck = evals_by_nodeid(load_json(out))["hang.eval.yaml::stuck[app]"]
    assert (
        stuck["message"]
        == "stopped in the agent phase (app, 2 s in): Timeout (>2.0s) from the vibeeval backstop"
    )


@XDIST_MODES
def test_tb_line_points_at_the_eval_in_its_suite(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write_hang_project(pytester.path, FINE.replace("{match: ok}", "{match: nope}"))
    result = run(pytester, "--tb=line", xdist=xdist)
    suite = pytester.path / "hang.eval.yaml"
    assert (
        f"{suite}:5: BackstopTimeout: stopped in the agent phase (app, 2 s in): Timeout (>2.0s) from the "
        "vibeeval backstop"
    ) in result.outlines
    assert f"{suite}:6: Failed: match: pattern 'nope' does not match the response" in result.outlines


# The backstop is derived from the most the eval's own limits allow: every turn, every attempt of a
# request with the waits between them, every judge call under the judge's own configuration. So
# these evals, each within its limits, finish with their own outcome and message (before, the
# backstop was the configuration's `timeout` + the margin, and killed each of them).


def limits_project(path: Path, suite: str, margin: float = 0.2) -> Path:
    write(path / "pytest.ini", f"[pytest]\nvibe_timeout_margin = {margin}\n")
    write(path / "l.eval.yaml", suite)
    return path / "results.json"


@XDIST_MODES
def test_a_conversation_has_the_time_of_every_turn(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """Eight answers of at least 0.3 s each (2.4 s), each well within its 2 s timeout: over the 2 s
    that one timeout gave the whole conversation."""
    turns = ", ".join(f'{{prompt: p{n}, checks: [{{match: "*"}}]}}' for n in range(8))
    with ChatServer() as server:
        out = limits_project(
            pytester.path,
            f"""
            metadata: {{name: l, model: v/slow}}
            configurations:
              app: {{http: {{base_url: "{server.url}", max_retries: 0}}, timeout: 2000}}
            evals:
              - {{name: chat, turns: [{turns}]}}
            """,
            margin=0,
        )
        result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1)
    [record] = evals_by_nodeid(load_json(out)).values()
    assert [turn["outcome"] for turn in record["turns"]] == ["passed"] * 8
    assert record["cost"] == pytest.approx(8 * USAGE["cost"])


@XDIST_MODES
def test_slow_judges_have_the_time_of_their_own_configuration(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The app answers within its 1 s; four judge calls take at least 0.3 s each (1.2 s) of the
    judge configuration's own 3 s each."""
    checks = ", ".join(f"{{llm_judge: {{criteria: c{n}}}}}" for n in range(4))
    with ChatServer() as server:
        out = limits_project(
            pytester.path,
            f"""
            metadata: {{name: l, model: v/ok}}
            judge: grader
            default_configurations: [app]
            configurations:
              app: {{http: {{base_url: "{server.url}", max_retries: 0}}, timeout: 1000}}
              grader:
                {{http: {{base_url: "{server.url}", max_retries: 0}}, model: v/judge-slow, timeout: 3000}}
            evals:
              - {{name: polite, prompt: hi, checks: [{checks}]}}
            """,
            margin=0,
        )
        result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1)
    [record] = evals_by_nodeid(load_json(out)).values()
    assert record["judge_cost"] == pytest.approx(4 * USAGE["cost"])


@XDIST_MODES
def test_retries_end_with_their_own_message(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """Three attempts that each time out at 0.1 s, with backoff between them: the provider gives
    up and says so, rather than the backstop stopping it at 0.3 s."""
    with ChatServer() as server:
        out = limits_project(
            pytester.path,
            f"""
            metadata: {{name: l, model: v/slow}}
            configurations:
              app: {{http: {{base_url: "{server.url}", max_retries: 2}}, timeout: 100}}
            evals:
              - {{name: four, prompt: hi, checks: [{{match: "*"}}]}}
            """,
        )
        result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(failed=1)
    [record] = evals_by_nodeid(load_json(out)).values()
    assert record["message"].endswith("within 0.1 s (gave up after 3 attempts)"), record["message"]
    assert "BackstopTimeout" not in result.stdout.str()


def test_the_backstop_adds_up_the_evals_own_limits() -> None:
    http = Configuration.model_validate(
        {"http": {"base_url": "http://h/v1", "max_retries": 2}, "timeout": 20000}
    )
    judge = Configuration.model_validate({"python": "j:judge", "timeout": 120000})
    request = 3 * 20 + 2 * RETRY_AFTER_CAP_S  # three attempts, the longest waits between them
    assert answer_limit_s(http) == request
    assert answer_limit_s(http, mcp=True) == request + 20  # the tool loop's own timeout, then
    types = {check_type.name: check_type for check_type in BUILTIN_CHECKS}
    judged = Check(types["llm_judge"], JudgeArgs(criteria="c"))
    panel = Check(types["llm_judge"], JudgeArgs(rubric="r", judges=["a", "b"]))
    either = AnyOf((Check(types["match"], "x"), judged))
    assert judge_calls((judged, panel, either)) == 4
    assert prompt_eval_limit_s(4, (judged,), http, judge) == 4 * request + 120
    assert answer_limit_s(None) == 5 * 300 + 4 * RETRY_AFTER_CAP_S  # the implicit OpenRouter one
    cli = Configuration.model_validate({"cli": "agent", "timeout": 1000})
    assert answer_limit_s(cli) == 1 + KILL_GRACE_S


KEEPING_APP = """
import threading

def answer(prompt):
    if prompt == "hang":
        threading.Event().wait()  # never set: only the backstop ends it
    return {"response": "ok", "cost": 0.5, "input_tokens": 10, "output_tokens": 2}

def judge(prompt):
    if "CRITERIA:\\nsecond" in prompt:
        threading.Event().wait()
    return {"response": '{"pass": true, "reason": "fine"}', "cost": 0.25}
"""


@XDIST_MODES
def test_what_a_stopped_eval_spent_is_kept(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A conversation stopped in its second turn keeps the first turn and its judge's cost; an eval
    stopped while its second judge is asked keeps its answer and the first judge's cost. The limits
    leave a loaded machine seconds for what must finish first (backstops of 4.5 and 3.5 s)."""
    write(pytester.path / "keeping.py", KEEPING_APP)
    out = limits_project(
        pytester.path,
        """
        metadata: {name: l, model: m}
        judge: grader
        default_configurations: [app]
        configurations:
          app: {python: "keeping:answer", timeout: 1000}
          grader: {python: "keeping:judge", timeout: 1000}
        evals:
          - name: chat
            turns:
              - {prompt: hi, checks: [{llm_judge: {criteria: first}}]}
              - {prompt: hang}
              - {prompt: bye}
          - name: judged
            prompt: hi
            checks: [{llm_judge: {criteria: first}}, {llm_judge: {criteria: second}}]
        """,
        margin=0.5,
    )
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(failed=2)
    records = evals_by_nodeid(load_json(out))
    chat = records["l.eval.yaml::chat[app]"]
    assert chat["outcome"] == "error"
    assert chat["message"].startswith("stopped in the agent phase (app, turn 2/3, "), chat["message"]
    assert [turn["outcome"] for turn in chat["turns"]] == ["passed", "error", "not_run"]
    assert chat["turns"][1]["message"] == chat["message"]
    assert (chat["cost"], chat["input_tokens"], chat["judge_cost"]) == (0.5, 10, 0.25)
    judged = records["l.eval.yaml::judged[app]"]
    assert judged["message"].startswith("stopped in the checks phase "), judged["message"]
    assert (judged["cost"], judged["response"], judged["judge_cost"]) == (0.5, "ok", 0.25)
