"""examples/runner-repository, a TypeScript problem in the unified runner's repository layout, runs
with real tools (npm ci, tsc, eslint with typescript-eslint, vitest) and scores by the runner's
rules, serially and with xdist: the oracle gets full marks, the do-nothing agent partial credit
from the subtasks its template already passes, the sloppy agent 0 for its lint and type errors
although every hidden test passes; the time penalty is shown on the run's own records.

Needs node and npm (skipped without them) and, for the first `npm ci`, the npm registry (later
runs use npm's cache). The oracle and the do-nothing agent are the example's default
configurations: their records come from the bundled examples' own runs (`pytest examples`,
serially and with `-n 2`, made once per session, tests/shared_runs.py); the sloppy agent runs here,
on a copy of the example outside the checkout, as a repository of its own.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import NO_HISTORY, XDIST_MODES
from shared_runs import SHARED_RUN_TIMEOUT, examples_run

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "runner-repository"
SUITE = "evals/config"
EXAMPLE_SUITE = "examples/runner-repository/evals/config"  # the same suite, in `pytest examples`
HAS_NODE = all(shutil.which(tool) for tool in ("node", "npm"))
needs_node = pytest.mark.skipif(
    not HAS_NODE, reason="node and npm are not on PATH: the example's steps need them"
)

BUILD = ["workspace-install", "typecheck", "lint", "test:public"]
GRADE = ["workspace-install", "lint", "typecheck", "test:hidden"]
ALL_SUBTASKS = {
    "count": ["count-simple", "count-whitespace", "count-empty"],
    "top": ["top-words", "top-words-ties"],
}


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def copy_example(tmp_path: Path) -> Path:
    """The example as a repository of its own, outside the checkout (no npm install left in it)."""
    copy = tmp_path / "runner-repository"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("node_modules", ".tmp-*"))
    return copy


def steps(record: dict[str, Any]) -> list[tuple[str, str, int]]:
    return [(s["phase"], s["name"], s["exit_code"]) for s in record["steps"]]


def modules(record: dict[str, Any]) -> dict[str, list[str]]:
    return {name: module["passed_tasks"] for name, module in record["subtask_modules"].items()}


def test_the_default_configurations_are_the_oracle_and_the_do_nothing_agent(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "evals", "--collect-only", "-q", "-p", "no:cacheprovider",
         "--rootdir", str(root), NO_HISTORY],
        cwd=root, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    collected = [line for line in proc.stdout.splitlines() if "::" in line]
    assert collected == [
        "evals/config/eval-config.json::word-stats[oracle]",
        "evals/config/eval-config.json::word-stats[nop]",
    ]


@needs_node
@pytest.mark.examples_run
@SHARED_RUN_TIMEOUT  # waits for the examples' runs, which run `npm ci`, tsc, eslint and vitest
@XDIST_MODES
def test_runner_repository_example_scores_by_the_runners_rules(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, xdist: list[str]
) -> None:
    examples = examples_run(tmp_path_factory, xdist)
    examples.assert_ok()
    root = copy_example(tmp_path)
    before = {name: tree(root / name) for name in ("problems", "grading")}
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "evals", "--vibe-config", "sloppy", "-p", "no:cacheprovider",
         "--rootdir", str(root), "--vibe-results", str(results), NO_HISTORY, *xdist],
        cwd=root, capture_output=True, text=True, timeout=840,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    [sloppy_run] = json.loads(results.read_text())["runs"]
    assert (sloppy_run["suite"], sloppy_run["configuration"]) == (SUITE, "sloppy")
    runs = {"sloppy": sloppy_run}
    runs |= {config_id: examples.runs()[EXAMPLE_SUITE, config_id] for config_id in ("oracle", "nop")}
    [oracle], [nop], [sloppy] = (runs[config_id]["evals"] for config_id in ("oracle", "nop", "sloppy"))

    def vybes(config_id: str) -> float:
        run = runs[config_id]
        assert (run["score_preset"], run["score"]) == ("vybes", run["variables"]["word-stats_vybes"])
        return float(run["variables"]["word-stats_vybes"])

    # the oracle: every step of the grading package passes, full marks (100 × multiplier 2 × 5/5)
    assert oracle["outcome"] == "passed", oracle["message"]
    assert steps(oracle) == [
        ("agent", "oracle", 0),
        *(("build", name, 0) for name in BUILD),
        *(("grade", name, 0) for name in GRADE),
    ]
    assert (oracle["subtasks_passed"], oracle["subtasks_total"]) == (5, 5)
    assert modules(oracle) == ALL_SUBTASKS
    assert vybes("oracle") == 200.0

    # the do-nothing agent: its template passes lint, typecheck and one hidden subtask of five
    assert (nop["outcome"], nop["xfail"]) == ("failed", True)
    assert nop["message"].startswith("grade step 'test:hidden' exited with code 1")
    assert [s for s in steps(nop) if s[2] != 0] == [("grade", "test:hidden", 1)]
    assert modules(nop) == {"count": ["count-simple"], "top": []}
    assert (nop["subtasks_passed"], nop["subtasks_total"]) == (1, 5)
    assert vybes("nop") == 40.0  # 100 × 2 × 1/5

    # the sloppy agent: every hidden subtask passes, but eslint (an `any`) and tsc (a string where a
    # number belongs) fail, in the workspace and in the grading package alike: the score is 0
    assert (sloppy["outcome"], sloppy["xfail"]) == ("failed", True)
    assert [s for s in steps(sloppy) if s[2] != 0] == [
        ("build", "typecheck", 2),
        ("build", "lint", 1),
        ("grade", "lint", 1),
        ("grade", "typecheck", 2),
    ]
    assert modules(sloppy) == ALL_SUBTASKS
    assert vybes("sloppy") == 0.0

    # the example agents take well under the task's 5 minutes: no time penalty (see check_time_penalty)
    assert all(s["duration"] < 60 for r in (oracle, nop, sloppy) for s in r["steps"] if s["phase"] == "agent")

    # the templates and grading folders were only read; no copy is left behind
    assert {name: tree(root / name) for name in ("problems", "grading")} == before
    assert sorted(p.name for p in root.rglob(".tmp-*")) == []
    assert not list(root.rglob("node_modules"))
    if not xdist:
        check_runner_outputs(examples.results_path, results, tmp_path / "outputs")
        check_time_penalty(examples.results_path, tmp_path)


def runner_outputs(results: Path, outputs: Path) -> dict[str, dict[str, Any]]:
    """`python -m pytest_vibeeval outputs`: the runner's results.json of each configuration of
    word-stats (the example's eval; the examples' results file holds other suites' too)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "outputs", str(results), "--dir", str(outputs)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    files = sorted(outputs.glob("word-stats-*/*/results.json"))
    assert files and re.fullmatch(r"word-stats-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ", files[0].parent.parent.name)
    return {file.parent.name: json.loads(file.read_text()) for file in files}


def check_runner_outputs(examples: Path, sloppy: Path, outputs: Path) -> None:
    """The runner's tree and shape from our results files (the examples' for the oracle and the
    do-nothing agent, this test's for the sloppy agent), vybes breakdown by module included."""
    written = runner_outputs(examples, outputs / "examples") | runner_outputs(sloppy, outputs / "sloppy")
    assert sorted(written) == ["nop", "oracle", "sloppy"]
    oracle = written["oracle"]
    assert (oracle["evalName"], oracle["configId"], oracle["status"]) == ("word-stats", "oracle", "pass")
    install = "npm ci --no-audit --no-fund --prefer-offline --ignore-scripts"
    assert [(c["command"], c["exitCode"], c["success"]) for c in oracle["commands"]][1:] == [
        (install, 0, True),
        ("npm run typecheck", 0, True),
        ("npm run lint", 0, True),
        ("npm run test:public", 0, True),
        (install, 0, True),
        ("npm run lint", 0, True),
        ("npm run typecheck", 0, True),
        ("npm run test:hidden", 0, True),
    ]
    assert all(isinstance(c["duration"], int) for c in oracle["commands"])
    vybes = oracle["vybes"]
    assert (vybes["complexityMultiplier"], vybes["timeLimitMinutes"], vybes["baseScore"]) == (2, 5, 200)
    assert (vybes["successPercentage"], vybes["timePenaltyMultiplier"], vybes["finalScore"]) == (1, 1, 200)
    assert (vybes["description"], vybes["category"]) == (
        "Word counts and the most frequent words",
        "utilities",
    )
    assert sorted(vybes["breakdown"]["modulesCompleted"]) == ["count", "top"]
    assert "error" not in vybes

    nop = written["nop"]["vybes"]
    breakdown = nop["breakdown"]
    assert (breakdown["subtasksPassed"], breakdown["subtasksTotal"]) == (1, 5)
    assert (breakdown["modulesCompleted"], sorted(breakdown["modulesIncomplete"])) == ([], ["count", "top"])
    assert breakdown["modules"]["count"] == {
        "passed": 1,
        "total": 3,
        "passedTasks": ["count-simple"],
        "failedTasks": ["count-whitespace", "count-empty"],
    }
    assert (nop["successPercentage"], nop["finalScore"]) == (0.2, 40)

    sloppy = written["sloppy"]["vybes"]
    assert written["sloppy"]["status"] == "fail"
    assert (sloppy["breakdown"]["subtasksPassed"], sloppy["breakdown"]["subtasksTotal"]) == (5, 5)
    assert (sloppy["successPercentage"], sloppy["finalScore"], sloppy["error"]) == (
        0,
        0,
        "lint/typecheck failed",
    )


def check_time_penalty(results: Path, tmp_path: Path) -> None:
    """The examples' oracle record of word-stats as if its agent had taken 10 minutes, then 30, for
    the 5-minute task: the score is halved (5 / 10), then clamped at 0.2 of it."""
    data = json.loads(results.read_text())
    for minutes, factor, score in ((10, 0.5, 100), (30, 0.2, 40)):
        for run in (run for run in data["runs"] if run["suite"] == EXAMPLE_SUITE):
            for step in run["evals"][0]["steps"]:
                if step["phase"] == "agent":
                    step["duration"] = minutes * 60.0
        slow = tmp_path / f"slow-{minutes}.json"
        slow.write_text(json.dumps(data))
        vybes = runner_outputs(slow, tmp_path / f"outputs-{minutes}")["oracle"]["vybes"]
        assert (vybes["actualTimeMinutes"], vybes["timePenaltyMultiplier"]) == (minutes, factor)
        assert (vybes["successPercentage"], vybes["finalScore"]) == (1, score)
