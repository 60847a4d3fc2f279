"""examples/runner-repository, laid out like the unified runner's repository, runs offline (plain Node
through `npm run`, no `npm install`) and scores by the runner's rules, serially and with xdist."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import NO_HISTORY, XDIST_MODES

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "runner-repository"
SUITE = "examples/runner-repository/evals/config"
HAS_NODE = all(shutil.which(tool) for tool in ("node", "npm"))


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.skipif(not HAS_NODE, reason="node and npm are not on PATH: the example's steps need them")
@XDIST_MODES
def test_runner_repository_example_scores_by_the_runners_rules(tmp_path: Path, xdist: list[str]) -> None:
    before = {name: tree(EXAMPLE / name) for name in ("problems", "grading")}
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLE / "evals"), "-p", "no:cacheprovider",
         "--vibe-results", str(results), NO_HISTORY, *xdist],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    runs = {run["configuration"]: run for run in json.loads(results.read_text())["runs"]}
    assert {run["suite"] for run in runs.values()} == {SUITE}
    [oracle], [nop] = runs["oracle"]["evals"], runs["nop"]["evals"]
    assert oracle["outcome"] == "passed", oracle["message"]
    assert [(s["phase"], s["name"], s["exit_code"]) for s in oracle["steps"]] == [
        ("agent", "oracle", 0),
        ("build", "typecheck", 0),
        ("build", "lint", 0),
        ("build", "test:public", 0),
        ("grade", "lint", 0),
        ("grade", "typecheck", 0),
        ("grade", "test:hidden", 0),
    ]
    assert (oracle["subtasks_passed"], oracle["subtasks_total"]) == (5, 5)
    assert runs["oracle"]["variables"]["word-stats_vybes"] == 200.0  # 100 × 2 × 5/5 × 1
    # the template already passes one hidden subtask: 100 × 2 × 1/5
    assert nop["subtask_modules"]["word-stats"]["passed_tasks"] == ["count-simple"]
    assert runs["nop"]["variables"]["word-stats_vybes"] == 40.0
    assert {name: tree(EXAMPLE / name) for name in ("problems", "grading")} == before
    assert list(EXAMPLE.rglob(".tmp-*")) == []
    if not xdist:
        check_runner_outputs(results, tmp_path / "outputs")


def check_runner_outputs(results: Path, outputs: Path) -> None:
    """`python -m pytest_vibeeval outputs` writes the runner's tree and shape from our results file."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "outputs", str(results), "--dir", str(outputs)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    files = sorted(outputs.glob("word-stats-*/*/results.json"))
    assert [f.parent.name for f in files] == ["nop", "oracle"], files
    assert re.fullmatch(r"word-stats-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\dZ", files[0].parent.parent.name)
    oracle = json.loads(files[1].read_text())
    assert (oracle["evalName"], oracle["configId"], oracle["status"]) == ("word-stats", "oracle", "pass")
    assert [(c["command"], c["exitCode"], c["success"]) for c in oracle["commands"]][1:] == [
        ("npm run typecheck", 0, True),
        ("npm run lint", 0, True),
        ("npm run test:public", 0, True),
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
    nop = json.loads(files[0].read_text())
    breakdown = nop["vybes"]["breakdown"]
    assert (breakdown["subtasksPassed"], breakdown["subtasksTotal"]) == (1, 5)
    assert (breakdown["modulesCompleted"], breakdown["modulesIncomplete"]) == ([], ["word-stats"])
    assert breakdown["modules"]["word-stats"]["passedTasks"] == ["count-simple"]
    assert nop["vybes"]["finalScore"] == 40
