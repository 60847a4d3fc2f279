"""A pytest user's habits work on eval items as on any test: --lf, --ff, --sw, --deselect, node ids
on the command line and -k on eval and configuration names. pytest 9.2 matches --lf/--ff/--sw on a
parsed node id, which an item named ``eval[configuration]`` must agree with.

CI runs this file against the newest pytest and against every dependency's declared floor (pytest
8.0; a venv of its own), so it uses nothing beyond pytest, pytest-xdist and the plugin."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# The cache provider stays on: --lf, --ff and --sw keep their state in it. pytest-randomly, where it
# is installed, would shuffle the items: --sw's first failure and the copies --keep-duplicates
# leaves out depend on their order.
ARGS = ("-p", "no:hypothesispytest", "-p", "no:randomly")
MODES = pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])

SUITE = """
metadata: {name: habits, model: m}
configurations:
  my-app: {python: "habits_app:answer"}
  alt: {python: "habits_app:answer"}
evals:
  - name: arith
    prompt: What is 2 + 2?
    checks: [{match: "*4*"}]
  - name: essay
    prompt: Which colour is the sky?
    checks: [{match: "*blue*"}]
  - name: capital
    prompt: What is the capital of France?
    checks: [{contains: paris}]
"""

APP = """
def answer(prompt, context):
    return "4" if "2 + 2" in prompt else "{colour}" if "colour" in prompt else "Paris"
"""

ALL = {f"{e}[{c}]" for e in ("arith", "essay", "capital") for c in ("my-app", "alt")}


def make_suite(root: Path, colour: str = "green") -> None:
    (root / "habits.eval.yaml").write_text(SUITE, encoding="utf-8")
    (root / "habits_app.py").write_text(APP.format(colour=colour), encoding="utf-8")


def run(pytester: pytest.Pytester, *args: str, xdist: list[str] | None = None) -> pytest.RunResult:
    """pytest in a subprocess (its own cache and sys.modules), verbose so the items it ran show."""
    return pytester.runpytest_subprocess(*ARGS, *(xdist or []), "-v", *args, timeout=120)


def ran(result: pytest.RunResult) -> list[str]:
    """The items the run reported, in the order they ran (serial) or finished (xdist)."""
    # serial -v: "<nodeid> PASSED"; xdist -v: "[gw0] [ 16%] PASSED <nodeid>"
    pattern = r"habits\.eval\.yaml::(\S+\]) (?:PASSED|FAILED)|(?:PASSED|FAILED) habits\.eval\.yaml::(\S+\])"
    found = [a or b for a, b in re.findall(pattern, result.stdout.str())]
    return list(dict.fromkeys(found))


@MODES
def test_last_failed_reruns_only_the_failed_items(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester.path)
    run(pytester, xdist=xdist).assert_outcomes(passed=4, failed=2)
    result = run(pytester, "--lf", xdist=xdist)
    result.assert_outcomes(failed=2)
    assert set(ran(result)) == {"essay[my-app]", "essay[alt]"}
    if not xdist:  # under xdist the workers decide and the controller says nothing
        result.stdout.fnmatch_lines(["*rerun previous 2 failures*"])
    # Fixed: --lf runs them once more, they pass, and the next --lf has nothing to rerun.
    make_suite(pytester.path, colour="blue")
    run(pytester, "--lf", xdist=xdist).assert_outcomes(passed=2)
    result = run(pytester, "--lf", xdist=xdist)
    result.assert_outcomes(passed=6)
    if not xdist:
        result.stdout.fnmatch_lines(["*no previously failed tests*"])


@MODES
def test_failed_first_runs_the_failed_items_before_the_rest(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_suite(pytester.path)
    run(pytester, xdist=xdist).assert_outcomes(passed=4, failed=2)
    result = run(pytester, "--ff", xdist=xdist)
    result.assert_outcomes(passed=4, failed=2)
    if not xdist:  # workers finish in any order, and only they say what they reordered
        result.stdout.fnmatch_lines(["*rerun previous 2 failures first*"])
        assert set(ran(result)[:2]) == {"essay[my-app]", "essay[alt]"}


def test_stepwise_resumes_at_the_item_that_failed(pytester: pytest.Pytester) -> None:
    make_suite(pytester.path)
    first = run(pytester, "--sw")
    first.assert_outcomes(passed=2, failed=1)
    assert ran(first) == ["arith[my-app]", "arith[alt]", "essay[my-app]"]
    make_suite(pytester.path, colour="blue")
    second = run(pytester, "--sw")
    second.assert_outcomes(passed=4, deselected=2)
    assert ran(second)[0] == "essay[my-app]"


@MODES
def test_node_ids_and_deselect_select_items(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester.path)
    one = run(pytester, "habits.eval.yaml::essay[alt]", xdist=xdist)
    one.assert_outcomes(failed=1)
    assert ran(one) == ["essay[alt]"]
    both = run(pytester, "habits.eval.yaml::capital", xdist=xdist)
    assert set(ran(both)) == {"capital[my-app]", "capital[alt]"}
    rest = run(pytester, "--deselect", "habits.eval.yaml::essay[my-app]", xdist=xdist)
    rest.assert_outcomes(passed=4, failed=1)
    assert set(ran(rest)) == ALL - {"essay[my-app]"}


@MODES
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("essay", {"essay[my-app]", "essay[alt]"}),
        ("my-app", {"arith[my-app]", "essay[my-app]", "capital[my-app]"}),
        ("capital and not alt", {"capital[my-app]"}),
    ],
)
def test_k_matches_eval_and_configuration_names(
    pytester: pytest.Pytester, xdist: list[str], expression: str, expected: set[str]
) -> None:
    make_suite(pytester.path)
    result = run(pytester, "-k", expression, xdist=xdist)
    assert set(ran(result)) == expected


@MODES
@pytest.mark.parametrize("option", ["--setup-plan", "--setup-only"])
def test_setup_plan_and_setup_only_score_and_write_nothing(
    pytester: pytest.Pytester, xdist: list[str], option: str
) -> None:
    """pytest runs no test body under --setup-plan/--setup-only: no eval ran, so there is no run
    to score, no results file and no latest.json a baseline could be taken from."""
    make_suite(pytester.path)
    result = run(pytester, option, xdist=xdist)
    assert result.ret == pytest.ExitCode.OK
    assert "Run Summary" not in result.stdout.str()
    assert not (pytester.path / ".vibeeval").exists()


@MODES
def test_keep_duplicates_runs_each_eval_once(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A suite given twice with --keep-duplicates: each eval item runs once (its record is kept by
    its node id), so pytest's outcomes, the Run Summary and the results file count the same items,
    and the summary says why the copies were left out."""
    make_suite(pytester.path)
    result = run(pytester, "habits.eval.yaml", "habits.eval.yaml", "--keep-duplicates", xdist=xdist)
    result.assert_outcomes(passed=4, failed=2, deselected=0 if xdist else 6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert sorted(ran(result)) == sorted(ALL)
    result.stdout.fnmatch_lines(
        [
            "Success Rate: 66.7% (2/3)",
            "Success Rate: 66.7% (2/3)",
            "note: 6 eval item(s) collected more than once (--keep-duplicates) ran once each; "
            "6 copies deselected: habits.eval.yaml::arith[[]my-app], * and 1 more. *--vibe-repeat N",
        ]
    )
    latest = json.loads((pytester.path / ".vibeeval" / "results" / "latest.json").read_text("utf-8"))
    recorded = [record["nodeid"] for run in latest["runs"] for record in run["evals"]]
    assert sorted(recorded) == sorted(f"habits.eval.yaml::{name}" for name in ALL)
