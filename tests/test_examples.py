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
    }
    assert runs["support-bot", "app"]["metrics"]["success_pct"] == 100.0
    assert runs["support-bot", "app"]["score"] is not None
    assert runs["support-bot", "app"]["gate"]["passed"] is True
    assert runs["quiz", "quiz-json"]["metrics"]["total_cost"] > 0
    assert runs["quiz", "quiz-text"]["metrics"]["total_cost"] is None
    failures = runs["known-failures", "quiz-json"]
    assert failures["metrics"]["passed"] == 1 and failures["metrics"]["failed"] == 2
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
