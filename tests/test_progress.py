"""Live progress: while an agent runs, the controller shows which eval × configuration is in which
phase and for how long: periodic plain lines when the output is not a terminal, one redrawn status
line on a terminal, nothing with -q; from xdist workers too."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import FAST_ARGS, XDIST_MODES, python_suite, run, write

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


QUICK_SUITE = """
metadata: {name: quick, model: m}
configurations:
  app: {python: "quick_app:answer"}
evals:
  - {name: a, prompt: hi, checks: [{match: "*fine*"}]}
  - {name: b, prompt: hi, checks: [{match: "*fine*"}]}
  - {name: c, prompt: hi, checks: [{match: "*fine*"}]}
"""

# A posting delay no stall of a loaded machine reaches: these tests are about items that end
# before theirs, not about how long 0.25 s is.
PATIENT_BOARD = (
    "\n_init = progress.ProgressBoard.__init__\n"
    "progress.ProgressBoard.__init__ = lambda self, lock_dir, delay=0: _init(self, lock_dir, 60.0)\n"
)

# The wall clock steps an hour ahead as the items run (NTP, a suspended laptop): as the board's
# module sees it.
WALL_CLOCK_STEP = """
import time, types
progress.time = types.SimpleNamespace(
    time=lambda: time.time() + 3600, monotonic=time.monotonic, sleep=time.sleep
)
"""


def run_quick_evals(pytester: pytest.Pytester, xdist: list[str], conftest: str) -> Path:
    """Run three quick evals with ``conftest``, which notes the board's writes: the log of them."""
    write(pytester.path / "conftest.py", conftest)
    write(pytester.path / "quick_app.py", "def answer(prompt):\n    return 'fine'\n")
    write(pytester.path / "quick.eval.yaml", QUICK_SUITE)
    log = pytester.path / "board.log"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *FAST_ARGS, *xdist],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        env={**os.environ, "BOARD_LOG": str(log)},
    )
    assert "3 passed" in proc.stdout, proc.stdout + proc.stderr
    return log


@XDIST_MODES
def test_evals_that_end_at_once_leave_the_board_alone(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The board is read once a second at most: an item that ends sooner than its posting delay is
    never written there (its phases would cost file-system calls of their own), while a long one
    is (``test_plain_progress_lines_name_the_item_and_its_phase``)."""
    log = run_quick_evals(pytester, xdist, BOARD_LOG_CONFTEST + PATIENT_BOARD)
    assert not log.exists(), log.read_text()


@XDIST_MODES
def test_a_wall_clock_step_does_not_post_an_item_early(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """When an item is due on the board is measured on a monotonic clock: the wall clock stepping
    ahead mid-item does not make it look as if it had run for an hour."""
    log = run_quick_evals(pytester, xdist, BOARD_LOG_CONFTEST + PATIENT_BOARD + WALL_CLOCK_STEP)
    assert not log.exists(), log.read_text()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class NotedWaits(threading.Condition):
    """The board thread's condition: each wait noted; one with a timeout passes that time on the
    fake clock at once, one without (idle) blocks until notified, as a real one does."""

    clock = FakeClock()

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.waits: list[float | None] = []
        self.notified = 0
        self.seen = threading.Condition()

    def wait(self, timeout: float | None = None) -> bool:
        with self.seen:
            self.waits.append(timeout)
            self.seen.notify_all()
        if timeout is None:
            return super().wait()
        self.clock.now += timeout
        return False

    def notify(self, n: int = 1) -> None:
        self.notified += 1
        super().notify(n)

    def waited(self, count: int) -> list[float | None]:
        """The waits once the thread began its ``count``-th."""
        with self.seen:
            assert self.seen.wait_for(lambda: len(self.waits) >= count, timeout=30), self.waits
            return list(self.waits)


def test_the_board_thread_wakes_only_when_an_entry_is_due_or_it_stops(tmp_path: Path) -> None:
    """No wake-up while no item runs nor while one on the board runs on (an agent's minutes):
    the thread waits without a timeout, until an entry it has not written falls due."""
    clock = NotedWaits.clock
    board = ProgressBoard(tmp_path, delay=10.0, clock=clock, condition=NotedWaits)
    wake = board._wake
    assert isinstance(wake, NotedWaits)
    started = clock.now
    board.post(Running("s.eval.yaml::a[x]", "agent", "", 0.0, 0.0), started)
    assert wake.waited(2) == [10.0, None]  # asleep until due; written; then asleep until told
    assert clock.now == started + 10.0
    assert [r.phase for r in read_board(tmp_path)] == ["agent"]
    board.post(Running("s.eval.yaml::a[x]", "build", "", 0.0, 0.0), started)  # on the board at once
    assert [r.phase for r in read_board(tmp_path)] == ["build"]
    board.clear()
    clock.now += 3600.0  # an hour with no item
    with board._lock:  # the thread is waiting (it holds the lock otherwise)
        assert wake.waits == [10.0, None] and wake.notified == 1
    board.post(Running("s.eval.yaml::b[x]", "agent", "", 0.0, 0.0), clock.now)  # a new item: told
    assert wake.waited(4) == [10.0, None, 10.0, None]
    assert wake.notified == 2
    board.stop()
    assert board._thread is None and wake.notified == 3 and wake.waits == [10.0, None, 10.0, None]
    assert read_board(tmp_path) == []


class TimeoutsNeverCome(threading.Condition):
    """The board thread's condition, its timeouts noted and never reached (a wait ends only when it
    is notified): whatever the thread does then, a notification alone brought about."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.waits: list[float | None] = []
        self.seen = threading.Condition()

    def wait(self, timeout: float | None = None) -> bool:
        with self.seen:
            self.waits.append(None if timeout is None else round(timeout, 6))
            self.seen.notify_all()
        return super().wait()

    def waited(self, count: int) -> list[float | None]:
        with self.seen:
            assert self.seen.wait_for(lambda: len(self.waits) >= count, timeout=30), self.waits
            return list(self.waits)


def test_an_entry_due_sooner_than_the_thread_wakes_wakes_it(tmp_path: Path) -> None:
    """The thread waits for one entry's time; another posted meanwhile that falls due sooner (the
    first cleared) tells it, and one due later does not need to: it waits for each in turn."""
    clock = FakeClock()
    board = ProgressBoard(tmp_path, delay=10.0, clock=clock, condition=TimeoutsNeverCome)
    wake = board._wake
    assert isinstance(wake, TimeoutsNeverCome)
    board.post(Running("s.eval.yaml::a[x]", "agent", "", 0.0, 0.0), clock.now)
    assert wake.waited(1) == [10.0]
    board.clear()
    b_started = clock.now - 6.0  # due in 4 s
    board.post(Running("s.eval.yaml::b[x]", "agent", "", 0.0, 0.0), b_started)
    assert wake.waited(2) == [10.0, 4.0]
    clock.now += 4.0
    board.post(Running("s.eval.yaml::b[x]", "build", "", 0.0, 0.0), b_started)  # due now
    assert [r.phase for r in read_board(tmp_path)] == ["build"]
    board.stop()
    assert read_board(tmp_path) == []


def test_an_interrupt_as_the_board_thread_starts_leaves_no_thread_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or an item's timeout backstop (SIGALRM) may raise in ``post()`` while the thread it
    starts is starting: that thread runs on unrecorded and the next post starts another. Both end
    at ``stop()``, at once, and nothing is left on the board."""
    start = threading.Thread.start
    started: list[threading.Thread] = []

    def interrupted(self: threading.Thread) -> None:
        start(self)
        started.append(self)
        if len(started) == 1:
            raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    board = ProgressBoard(tmp_path, delay=3600.0, condition=TimeoutsNeverCome)
    wake = board._wake
    assert isinstance(wake, TimeoutsNeverCome)
    with pytest.raises(KeyboardInterrupt):
        board.post(Running("s.eval.yaml::a[x]", "agent", "", 0.0, 0.0), board.clock())
    board.clear()
    assert wake.waited(1)
    board.post(Running("s.eval.yaml::b[x]", "agent", "", 0.0, 0.0), board.clock())
    wake.waited(2)  # both threads wait
    monkeypatch.undo()
    board.stop()
    for thread in started:
        thread.join(timeout=10)
    assert [thread.is_alive() for thread in started] == [False, False]
    assert read_board(tmp_path) == []


class PostAsItWaits(TimeoutsNeverCome):
    """Runs ``poster`` in another thread just as the board thread begins its first wait: after its
    check of what is posted, before the wait releases the lock (the worst moment for a post)."""

    poster: Callable[[], None] = staticmethod(lambda: None)

    def wait(self, timeout: float | None = None) -> bool:
        if not self.waits:
            threading.Thread(target=self.poster).start()  # blocks on the lock until this waits
        return super().wait(timeout)


def test_a_post_between_the_threads_check_and_its_wait_wakes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    board = ProgressBoard(tmp_path, delay=10.0, clock=clock, condition=PostAsItWaits)
    entry = Running("s::b", "agent", "", 0, 0)
    # The post waits until _start() has recorded the thread (as an item's own post() would find
    # it), or it would start a second one.
    recorded = threading.Event()

    def post() -> None:
        assert recorded.wait(timeout=30)
        board.post(entry, clock.now)

    monkeypatch.setattr(PostAsItWaits, "poster", staticmethod(post))
    board._start()  # idle: nothing posted yet
    recorded.set()
    wake = board._wake
    assert isinstance(wake, PostAsItWaits)
    assert wake.waited(2) == [None, 10.0]  # told of the entry posted as it began to wait
    board.stop()
    assert board._thread is None


def test_stop_before_any_post_and_twice(tmp_path: Path) -> None:
    board = ProgressBoard(tmp_path)
    board.stop()
    board.stop()
    assert board._thread is None and read_board(tmp_path) == []


def test_without_a_thread_the_board_writes_as_the_phases_begin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no thread can start (``ulimit -u``, pids.max) each phase is written at once."""

    def refused(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refused)
    board = ProgressBoard(tmp_path, delay=3600.0)
    board.post(Running("s::a", "agent", "", 0, 0), board.clock())
    assert [r.phase for r in read_board(tmp_path)] == ["agent"]
    board.post(Running("s::a", "grade", "", 0, 0), board.clock())
    assert [r.phase for r in read_board(tmp_path)] == ["grade"]
    board.clear()
    assert read_board(tmp_path) == []
    board.stop()
    assert board._thread is None


@XDIST_MODES
def test_an_xdist_controller_keeps_no_item_hooks(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """The item hooks serve where items run: an xdist controller runs none, and pytest would call
    them for every item its workers ran (``logfinish``). A serial session keeps them."""
    app = "def answer(prompt):\n    return prompt\n"
    evals = ["{name: a, prompt: p, checks: [{match: p}]}", "{name: b, prompt: q, checks: [{match: q}]}"]
    python_suite(pytester.path / "s.eval.yaml", evals, app=app)
    pytester.makeconftest(
        """
        import pathlib
        def pytest_sessionfinish(session):
            if not hasattr(session.config, "workerinput"):
                held = session.config.pluginmanager.has_plugin("vibeeval-items")
                pathlib.Path("held.txt").write_text(str(held))
        """
    )
    result = run(pytester, *xdist)
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "held.txt").read_text() == str(not xdist)
