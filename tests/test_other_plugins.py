"""The plugin beside the pytest plugins and options teams run it with: pytest-rerunfailures' reruns
count each eval once, with what every attempt cost, and none starts once --vibe-max-cost is spent;
pytest-repeat's ``--count``, which cannot repeat eval items, is refused; the plugin's notes stay
notes where warnings are errors.

``.[test]`` installs both third-party plugins, pytest-rerunfailures and pytest-repeat, so these
tests run in CI; a test of one skips where it is not installed (an environment set up otherwise)."""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET

import pytest
from helpers import (
    PYTHON,
    XDIST_MODES,
    evals_by_nodeid,
    load_json,
    needs_plugin,
    python_suite,
    run,
    run_of,
    write,
)

from pytest_vibeeval.cache import CacheNote
from pytest_vibeeval.notes import note

needs_rerunfailures = needs_plugin("pytest_rerunfailures", "pytest-rerunfailures")

# Each answer costs $0.01 × its attempt, and reports its attempt as its input tokens and tenths of
# a second as its latency, so that the record shows which attempt it is. `flaky` fails its first
# attempt, `broken` every one.
ATTEMPTS_APP = """
import pathlib

HERE = pathlib.Path(__file__).parent

def answer(prompt):
    counter = HERE / f"attempts-{prompt}"
    attempt = int(counter.read_text()) + 1 if counter.exists() else 1
    counter.write_text(str(attempt))
    good = prompt == "steady" or (prompt == "flaky" and attempt > 1)
    return {"response": "ok" if good else "no", "cost": 0.01 * attempt, "input_tokens": attempt,
            "latency": attempt / 10}
"""


def attempts_suite(pytester: pytest.Pytester, *names: str) -> None:
    evals = [f"{{name: {name}, prompt: {name}, checks: [{{equals: ok}}]}}" for name in names]
    python_suite(pytester.path / "re.eval.yaml", evals, "attempts_app:answer", ATTEMPTS_APP)


@needs_rerunfailures
@XDIST_MODES
def test_a_rerun_eval_counts_once_with_what_every_attempt_cost(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """One record per eval, its last attempt's (outcome, latency, tokens), whose cost adds the
    earlier attempts' (they were paid for), as the run's total cost and the JUnit XML do."""
    attempts_suite(pytester, "steady", "flaky", "broken")
    out, junit = pytester.path / "r.json", pytester.path / "j.xml"
    result = run(pytester, "--reruns", "2", "--vibe-results", out, f"--junitxml={junit}", xdist=xdist)
    result.assert_outcomes(passed=2, failed=1)
    assert result.parseoutcomes()["rerun"] == 3
    records = evals_by_nodeid(load_json(out))
    measured = {
        nodeid.split("::")[1]: (r["outcome"], r["attempts"], r["input_tokens"], r["latency"], r["rerun_cost"])
        for nodeid, r in records.items()
    }
    assert measured == {
        "steady[app]": ("passed", 1, 1, 0.1, None),
        "flaky[app]": ("passed", 2, 2, 0.2, 0.01),
        "broken[app]": ("failed", 3, 3, 0.3, pytest.approx(0.03)),
    }
    costs = {nodeid.split("::")[1]: r["cost"] for nodeid, r in records.items()}
    assert costs == pytest.approx({"steady[app]": 0.01, "flaky[app]": 0.03, "broken[app]": 0.06})
    metrics = run_of(load_json(out), "app")["metrics"]
    assert (metrics["passed"], metrics["total"], metrics["total_cost"]) == (2, 3, pytest.approx(0.1))
    result.stdout.fnmatch_lines(
        [
            "Success Rate: 66.7% (2/3)",
            "Total Cost: $0.1000 ($0.0400 of it on 3 earlier attempt(s) of 2 rerun eval(s))",
        ]
    )
    properties = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert properties["vibe.re.eval.yaml::broken[app].attempts"] == "3"
    assert float(properties["vibe.re.eval.yaml::broken[app].cost"]) == pytest.approx(0.06)
    assert "vibe.re.eval.yaml::steady[app].attempts" not in properties


@needs_rerunfailures
@XDIST_MODES
def test_a_rerun_the_budget_holds_back_keeps_the_earlier_result(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """--vibe-max-cost spent by its first attempt, a failed eval is not rerun: it fails as that
    attempt did, for pytest as in the results (the rerun was skipped: pytest counted the eval
    skipped, the results failed). Its reruns stop there: pytest counted 3 reruns (each held
    attempt one more) and the FAILED line showed the hold, not the check's failure."""
    attempts_suite(pytester, "broken")
    out = pytester.path / "r.json"
    result = run(pytester, "--reruns", "3", "--vibe-max-cost", "0.01", "--vibe-results", out, xdist=xdist)
    result.assert_outcomes(failed=1)
    assert "rerun" not in result.parseoutcomes()
    broken = evals_by_nodeid(load_json(out))["re.eval.yaml::broken[app]"]
    assert (broken["outcome"], broken["attempts"], broken["cost"]) == ("failed", 1, 0.01)
    assert broken["message"].startswith("equals: ")
    result.stdout.fnmatch_lines(
        [
            "*not rerun: --vibe-max-cost $0.01 reached (spent $0.0100): this attempt's result stands",
            "FAILED re.eval.yaml::broken?app? - Failed: equals: *",  # ?: [app] would be a class
        ]
    )
    assert (pytester.path / "attempts-broken").read_text() == "1"


SPEND_BETWEEN_ATTEMPTS = """
from pytest_vibeeval.stash import get_state

def pytest_runtest_logreport(report):
    if report.outcome == "rerun":  # after the attempt, before the rerun: as another worker would
        get_state(report_config[0]).budget.add(5.0)

report_config = []

def pytest_configure(config):
    report_config.append(config)
"""


@needs_rerunfailures
@XDIST_MODES
def test_a_rerun_whose_budget_ran_out_while_it_waited_is_held_once(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The budget spent between the attempts (by another worker), the rerun that starts is held
    back: it fails at once with the earlier attempt's failure first, and its reruns end there (each
    held attempt was one more rerun); the results keep the earlier attempt's record."""
    attempts_suite(pytester, "broken")
    write(pytester.path / "conftest.py", SPEND_BETWEEN_ATTEMPTS)
    out = pytester.path / "r.json"
    result = run(pytester, "--reruns", "3", "--vibe-max-cost", "1", "--vibe-results", out, xdist=xdist)
    result.assert_outcomes(failed=1)
    assert result.parseoutcomes()["rerun"] == 1
    result.stdout.fnmatch_lines(
        [
            "equals: response does not equal 'ok' (ignoring outer whitespace)",
            # spent $5.01, or $10.01 where the xdist controller's hook has run too
            "(not rerun: --vibe-max-cost $1 reached (spent $*): its earlier attempt's result stands)",
            "FAILED re.eval.yaml::broken?app? - RerunHeld: equals: response does not equal*",
        ]
    )
    broken = evals_by_nodeid(load_json(out))["re.eval.yaml::broken[app]"]
    assert (broken["outcome"], broken["attempts"], broken["cost"]) == ("failed", 1, 0.01)
    assert (pytester.path / "attempts-broken").read_text() == "1"


CALLS_APP = """
import pathlib

def answer(prompt):
    with open(pathlib.Path(__file__).parent / "calls.txt", "a") as calls:
        calls.write(prompt + "\\n")
    return {"response": "no", "cost": 0.01}
"""


@needs_rerunfailures
@XDIST_MODES
def test_the_cache_line_counts_each_attempt_of_a_rerun_eval(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The rerun of a failed eval gets its first attempt's answer from --vibe-cache: one answer
    asked, one from the cache, $0.01 not spent again (the line read the folded record: the last
    attempt's `cached` with every attempt's cost, so 1 from cache, 0 asked, $0.0200)."""
    python_suite(
        pytester.path / "re.eval.yaml",
        ["{name: wrong, prompt: wrong, checks: [{equals: ok}]}"],
        "calls_app:answer",
        CALLS_APP,
    )
    out = pytester.path / "r.json"
    result = run(pytester, "--reruns", "1", "--vibe-cache=cache", "--vibe-results", out, xdist=xdist)
    result.assert_outcomes(failed=1)
    assert (pytester.path / "calls.txt").read_text().split() == ["wrong"]
    result.stdout.fnmatch_lines(
        [
            "Cache: 1 answer from cache, 1 asked (cache); the cached answers' cost and latency are "
            "their original calls' ($0.0100, not spent again)"
        ]
    )
    wrong = evals_by_nodeid(load_json(out))["re.eval.yaml::wrong[app]"]
    assert (wrong["attempts"], wrong["cached"], wrong["cost"]) == (2, True, 0.02)
    assert [(a["cached"], a["cost"]) for a in wrong["rerun_attempts"]] == [(False, 0.01), (True, 0.01)]


LOST_APP = """
import os, pathlib

def answer(prompt):
    counter = pathlib.Path(__file__).parent / "lost-once"
    if prompt == "crash" and not counter.exists():
        counter.write_text("")
        os._exit(3)  # the worker dies, once
    return {"response": "ok", "cost": 0.01}
"""


@needs_rerunfailures
def test_an_eval_whose_worker_was_lost_and_rerun_passes_with_an_unknown_cost(
    pytester: pytest.Pytester,
) -> None:
    """pytest-rerunfailures runs a lost worker's item again on another worker: the eval is its rerun,
    in a complete run; what the lost attempt spent is unknown, so its cost is too."""
    evals = [f"{{name: {name}, prompt: {name}, checks: [{{equals: ok}}]}}" for name in ("crash", "fine")]
    python_suite(pytester.path / "lost.eval.yaml", evals, "lost_app:answer", LOST_APP)
    out = pytester.path / "r.json"
    result = run(pytester, "--reruns", "1", "--vibe-results", out, xdist=["-n", "2"])
    result.assert_outcomes(passed=2)
    results = load_json(out)
    crash = evals_by_nodeid(results)["lost.eval.yaml::crash[app]"]
    assert (crash["outcome"], crash["attempts"], crash["cost"]) == ("passed", 2, None)
    assert results["stopped_early"] is None
    result.stdout.fnmatch_lines(
        [
            "Success Rate: 100.0% (2/2)",
            "1 xdist worker was lost (*): the item each was running is an error above, unless a plugin "
            "reran it (pytest-rerunfailures); the other items ran on",
        ]
    )


NOT_A_SUITE = "services: {web: {image: nginx}}\n"
ECHO_SUITE = f"""
metadata: {{name: n, model: m}}
configurations:
  echo: {{cli: "{PYTHON}", args: ["-c", "import sys; print(sys.stdin.read())"]}}
evals:
  - {{name: a, prompt: ok, checks: [{{contains: ok}}]}}
  - {{name: b, prompt: ok, checks: [{{contains: ok}}]}}
"""


@XDIST_MODES
def test_notes_stay_notes_where_warnings_are_errors(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """With ``filterwarnings = error`` (or ``-W error``), the note on a YAML file a broad pattern
    matches failed the collection, and the one on an agent's answers --vibe-cache does not keep
    failed every eval of that agent, with the plugin's traceback."""
    write(pytester.path / "pytest.ini", "[pytest]\nfilterwarnings = error\nvibe_patterns = *.yaml\n")
    write(pytester.path / "compose.yaml", NOT_A_SUITE)
    write(pytester.path / "n.eval.yaml", ECHO_SUITE)
    result = run(pytester, "--vibe-cache=cache", xdist=xdist)
    assert result.ret == pytest.ExitCode.OK
    assert result.parseoutcomes()["passed"] == 2
    result.stdout.fnmatch_lines(
        [
            "*compose.yaml matches vibe_patterns but has no top-level `evals:`: not a suite, not collected",
            "*CacheNote: --vibe-cache: configuration 'echo' runs an agent CLI; its answers are not cached*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_note_is_shown_where_warnings_are_errors_and_left_out_where_ignored() -> None:
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("error")
        note(CacheNote("shown"))
    assert [str(warning.message) for warning in shown] == ["shown"]
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", CacheNote)
        note(CacheNote("ignored"))
    assert shown == []


@needs_plugin("pytest_repeat", "pytest-repeat")
@XDIST_MODES
def test_pytest_repeats_count_is_refused_where_evals_run(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """pytest-repeat parametrizes test functions: eval items ran once each, silently, under --count 3."""
    attempts_suite(pytester, "steady")
    result = run(pytester, "--count", "3", xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --count 3 (pytest-repeat) does not repeat eval items: *use --vibe-repeat 3 (scored over *"]
    )
    assert not (pytester.path / "attempts-steady").exists()  # nothing ran
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    run(pytester, "--count", "3", "test_plain.py", xdist=xdist).assert_outcomes(passed=3)  # no evals
