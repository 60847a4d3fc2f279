"""Live progress: while an agent runs, the controller shows which eval × configuration is in which
phase and for how long: periodic plain lines when the output is not a terminal, one redrawn status
line on a terminal, nothing with -q; from xdist workers too."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import FAST_ARGS, XDIST_MODES, write

from pytest_vibeeval.progress import LiveStatus, ProgressBoard, Running, read_board, status_line

# Waits until the test has seen the progress line (the file `go` appears), then answers.
AGENT = """
import pathlib, sys, time
go = pathlib.Path(sys.argv[1])
deadline = time.monotonic() + 60
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
print("done")
"""


def make_suite(pytester: pytest.Pytester) -> Path:
    go = pytester.path / "go"
    agent = write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_progress_interval = 0.5\n")
    write(
        pytester.path / "long.eval.yaml",
        f"""
        metadata: {{name: long, model: m}}
        configurations:
          slowpoke: {{cli: "{sys.executable}", args: ["{agent}", "{go}"]}}
        evals:
          - {{name: waits, prompt: hi, checks: [{{match: "*done*"}}]}}
        """,
    )
    return go


def run_until_progress(pytester: pytest.Pytester, go: Path, *args: str) -> tuple[str, str | None]:
    """Run pytest, read its output as it comes, and let the agent finish once a progress line
    about it appeared (or the run ended); the whole output and that line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *FAST_ARGS, *args],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen: str | None = None
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if seen is None and "vibeeval: running long.eval.yaml::waits[slowpoke] agent" in line:
            seen = line.strip()
            go.write_text("x")
    proc.wait(timeout=120)
    go.write_text("x")
    return "".join(lines), seen


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_plain_progress_lines_name_the_item_and_its_phase(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    go = make_suite(pytester)
    output, seen = run_until_progress(pytester, go, *workers)
    assert seen is not None, output
    assert seen.startswith("vibeeval: running long.eval.yaml::waits[slowpoke] agent ")
    assert "1 passed" in output


def test_quiet_runs_show_no_progress(pytester: pytest.Pytester) -> None:
    go = make_suite(pytester)
    go.write_text("x")  # the agent answers at once; a progress line would still have been possible
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_progress_interval = 0.01\n")
    output, seen = run_until_progress(pytester, go, "-q")
    assert seen is None and "vibeeval: running" not in output


def test_the_board_and_the_status_line(tmp_path: Path) -> None:
    board = ProgressBoard(tmp_path)
    board.show(Running("s.eval.yaml::a[x]", "agent", "x", 1000.0, 1030.0))
    assert read_board(tmp_path) == [Running("s.eval.yaml::a[x]", "agent", "x", 1000.0, 1030.0)]
    line = status_line(read_board(tmp_path), now=1100.0)
    assert line == "vibeeval: 1 running: s.eval.yaml::a[x] agent 1m10s (1m40s in all)"
    board.clear()
    assert read_board(tmp_path) == []
    many = [Running(f"s.eval.yaml::e{n}[config]", "grade", "test", 0.0, 0.0) for n in range(20)]
    narrow = status_line(many, now=5.0, width=80)
    assert len(narrow) <= 80 and narrow.endswith("more")


def test_the_terminal_status_line_is_redrawn_and_taken_away(tmp_path: Path) -> None:
    ProgressBoard(tmp_path).show(Running("s.eval.yaml::a[x]", "build", "compile", 0.0, 0.0))
    stream = io.StringIO()
    live = LiveStatus(tmp_path, stream, tty=True, current_line=lambda: "s.eval.yaml ..", width=lambda: 100)
    live._draw(read_board(tmp_path))
    assert stream.getvalue().startswith("\r\x1b[Kvibeeval: 1 running: s.eval.yaml::a[x] build compile ")
    live.pause()  # pytest is about to write: the status goes, the line pytest was writing comes back
    assert stream.getvalue().endswith("\r\x1b[Ks.eval.yaml ..")
    live.resume()


def test_a_dead_process_is_taken_off_the_board(tmp_path: Path) -> None:
    """A worker that died mid-item (it crashed) left its entry: it is not shown as running."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / "progress").mkdir()
    entry = Running("s.eval.yaml::a[x]", "agent", "", 0.0, 0.0)
    (tmp_path / "progress" / f"{gone.pid}.json").write_text(json.dumps(vars(entry)))
    assert read_board(tmp_path) == []


# Notes every entry a process writes on the board (the workers' too: they load the conftest).
BOARD_LOG_CONFTEST = """
import os

from pytest_vibeeval import progress

_show = progress.ProgressBoard.show


def show(self, running):
    with open(os.environ["BOARD_LOG"], "a") as log:
        log.write(f"{running.nodeid} {running.phase}\\n")
    _show(self, running)


progress.ProgressBoard.show = show
"""


@XDIST_MODES
def test_evals_that_end_at_once_leave_the_board_alone(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The board is read once a second at most: an item that ends sooner than its posting delay is
    never written there (its phases would cost file-system calls of their own), while a long one
    is (``test_plain_progress_lines_name_the_item_and_its_phase``)."""
    # A posting delay no stall of a loaded machine reaches: the test is about items that end
    # before theirs, not about how long 0.25 s is.
    patient = BOARD_LOG_CONFTEST + (
        "\n_init = progress.ProgressBoard.__init__\n"
        "progress.ProgressBoard.__init__ = lambda self, lock_dir, delay=0: _init(self, lock_dir, 60.0)\n"
    )
    write(pytester.path / "conftest.py", patient)
    write(pytester.path / "quick_app.py", "def answer(prompt):\n    return 'fine'\n")
    write(
        pytester.path / "quick.eval.yaml",
        """
        metadata: {name: quick, model: m}
        configurations:
          app: {python: "quick_app:answer"}
        evals:
          - {name: a, prompt: hi, checks: [{match: "*fine*"}]}
          - {name: b, prompt: hi, checks: [{match: "*fine*"}]}
          - {name: c, prompt: hi, checks: [{match: "*fine*"}]}
        """,
    )
    log = pytester.path / "board.log"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *FAST_ARGS, *xdist],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        env={**os.environ, "BOARD_LOG": str(log)},
    )
    assert "3 passed" in proc.stdout, proc.stdout + proc.stderr
    assert not log.exists(), log.read_text()
