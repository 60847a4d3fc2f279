"""The bundled examples run offline, exit 0, and show passing and failing evals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_examples_run_end_to_end(tmp_path: Path, xdist: list[str]) -> None:
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "examples", "-p", "no:cacheprovider",
         "--vibe-results", str(results), *xdist],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Run Summary" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
    data = json.loads(results.read_text())
    runs = {(run["suite"], run["configuration"]): run for run in data["runs"]}
    assert set(runs) == {
        ("support-bot", "app"),
        ("quiz", "quiz-json"),
        ("quiz", "quiz-text"),
        ("known-failures", "quiz-json"),
        ("known-failures", "quiz-text"),
        (
            "examples/coding-agent/evals/config",
            "oracle",
        ),  # examples/coding-agent: `defaultConfigurations` leaves nop out
    }
    assert runs["support-bot", "app"]["metrics"]["success_pct"] == 100.0
    assert runs["support-bot", "app"]["score"] is not None
    assert runs["support-bot", "app"]["gate"]["passed"] is True
    assert runs["quiz", "quiz-json"]["metrics"]["total_cost"] > 0
    assert runs["quiz", "quiz-text"]["metrics"]["total_cost"] is None
    failures = runs["known-failures", "quiz-json"]
    assert failures["metrics"]["passed"] == 1 and failures["metrics"]["failed"] == 2
    assert runs["examples/coding-agent/evals/config", "oracle"]["metrics"]["success_pct"] == 100.0
    checks_used = {
        check["type"]
        for run in data["runs"]
        for record in run["evals"]
        for check in record["checks"]
        for check in [check, *check.get("children", [])]
    }
    assert {
        "match",
        "not_match",
        "min_tokens",
        "max_tokens",
        "or",
        "regex",
        "equals",
        "contains",
    } <= checks_used


def test_coding_agent_example_oracle_passes_and_nop_fails_at_a_grade_step(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "examples/coding-agent", "-p", "no:cacheprovider",
         "--vibe-config", "ALL", "--vibe-results", str(results)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == pytest.ExitCode.TESTS_FAILED, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "1 failed, 1 passed" in proc.stdout
    assert "Traceback" not in proc.stderr
    data = json.loads(results.read_text())
    runs = {(run["suite"], run["configuration"]): run for run in data["runs"]}
    assert set(runs) == {
        ("examples/coding-agent/evals/config", "oracle"),
        ("examples/coding-agent/evals/config", "nop"),
    }
    [oracle] = runs["examples/coding-agent/evals/config", "oracle"]["evals"]
    [nop] = runs["examples/coding-agent/evals/config", "nop"]["evals"]
    assert oracle["outcome"] == "passed"
    assert [(s["phase"], s["name"], s["exit_code"]) for s in oracle["steps"]] == [
        ("agent", "oracle", 0),
        ("build", "compile", 0),
        ("grade", "test:public", 0),
        ("grade", "test:hidden", 0),
    ]
    assert nop["outcome"] == "failed"
    assert [(s["phase"], s["name"], s["exit_code"]) for s in nop["steps"]] == [
        ("agent", "nop", 0),
        ("build", "compile", 0),
        ("grade", "test:public", 1),
    ]
    assert nop["message"].startswith("grade step 'test:public' exited with code 1")
    assert "AssertionError: 'hello,-world!' != 'hello-world'" in nop["message"]
    # the oracle wrote its solution into the item's copy, never into the template
    template = REPO / "examples/coding-agent/evals/problems/slugify/workspace/slugify.py"
    assert "return title.lower()" in template.read_text()
