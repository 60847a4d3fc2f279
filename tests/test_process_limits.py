"""Agents that misbehave with processes: a fork bomb is bounded by the agent's pids cgroup, and a
grandchild that escapes the process group with setsid is killed at the end even without bwrap.
Both need a pids cgroup this process may create (root with cgroup v1, or a delegated v2 subtree);
elsewhere they skip, saying so, and the Security model (docs/security.md) says what is then contained."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.workspace.cgroups import process_limit

probe = process_limit(2)
if probe is not None:
    probe.close()
needs_cgroup = pytest.mark.skipif(probe is None, reason="no pids cgroup can be made here (not root?)")

# Forks until the cgroup refuses (EAGAIN), every process noting its pid, then all of them wait.
FORK_BOMB = """
import os, sys, time
log = sys.argv[1]
while True:
    try:
        os.fork()
    except OSError:
        break
with open(log, "a") as handle:
    handle.write(f"{os.getpid()}\\n")
time.sleep(300)
"""

ESCAPER = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", sys.argv[1]], start_new_session=True)
print("done")
"""


def survivors(marker: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split() if int(pid) != os.getpid()]


@needs_cgroup
@XDIST_MODES
def test_a_fork_bomb_is_bounded_and_cleaned_up(pytester: pytest.Pytester, xdist: list[str]) -> None:
    log = pytester.path / "pids.log"
    bomb = agent(pytester.path, "bomb.py", FORK_BOMB)
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_max_processes = 40\n")
    write(pytester.path / "template" / "a.txt", "a\n")
    write(pytester.path / "grading" / "b.txt", "b\n")
    write(
        pytester.path / "bomb.eval.yaml",
        f"""
        metadata: {{name: bomb, model: m}}
        configurations:
          bomber: {{cli: "{PYTHON}", args: ["{bomb}", "{log}"], timeout: 3000}}
        commands:
          check: {{command: "true"}}
        evals:
          - {{name: boom, prompt: go, workspace: template, grading: grading, grade_steps: [check]}}
        """,
    )
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), "--vibe-sandbox", "none", xdist=xdist)
    result.assert_outcomes(failed=1)
    record = evals_by_nodeid(load_json(out))["bomb.eval.yaml::boom[bomber]"]
    assert record["outcome"] == "failed" and "timed out" in record["message"], record["message"]
    pids = set(log.read_text().split())
    assert 1 < len(pids) <= 40  # never more than the limit at once, and none died before the end
    assert survivors(str(bomb)) == []


@needs_cgroup
@XDIST_MODES
def test_a_setsid_escapee_is_killed_without_bwrap(pytester: pytest.Pytester, xdist: list[str]) -> None:
    marker = f"vibe-escapee-{os.getpid()}-{len(xdist)}"
    escaper = agent(pytester.path, "escaper.py", ESCAPER)
    write(pytester.path / "template" / "a.txt", "a\n")
    write(pytester.path / "grading" / "b.txt", "b\n")
    write(
        pytester.path / "esc.eval.yaml",
        f"""
        metadata: {{name: esc, model: m}}
        configurations:
          escaper: {{cli: "{PYTHON}", args: ["{escaper}", "{marker}"]}}
        commands:
          check: {{command: "true"}}
        evals:
          - {{name: leave, prompt: go, workspace: template, grading: grading, grade_steps: [check]}}
        """,
    )
    result = run(pytester, "--vibe-sandbox", "none", xdist=xdist)
    result.assert_outcomes(passed=1)
    assert survivors(marker) == []


def test_the_limit_must_be_a_whole_number(pytester: pytest.Pytester) -> None:
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_max_processes = lots\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "vibe_max_processes (ini): 'lots' is not a whole number >= 0" in result.stderr.str()


@needs_cgroup
def test_process_limit_kills_whatever_is_left(tmp_path: Path) -> None:
    limit = process_limit(10)
    assert limit is not None
    child = subprocess.Popen(limit.wrap([sys.executable, "-c", "import time; time.sleep(300)"]))
    try:
        while not limit.pids():  # the wrapper has moved itself in
            assert child.poll() is None
        limit.close()
        assert child.wait(timeout=10) == -9
        assert not limit.folder.exists()
    finally:
        if child.poll() is None:
            child.kill()
