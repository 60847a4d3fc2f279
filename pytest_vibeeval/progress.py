"""Live progress of long runs: which eval × configuration is in which phase, and for how long.

Each process that runs items (the only one in a serial run, every xdist worker otherwise) keeps
one small JSON file in the run's lock folder saying what it runs now; the controller reads them
all and shows them. Files work for local workers, whatever the distribution; remote (ssh)
workers are not shown.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .backstop import OWN_THREAD_PREFIX
from .bounded_read import UnreadableFile, read_bounded

PROGRESS_DIR = "progress"
MAX_ENTRY_BYTES = 2**20  # a board entry is a few hundred bytes: anything larger is not ours


@dataclass(frozen=True)
class Running:
    """One item in progress."""

    nodeid: str
    phase: str
    detail: str
    item_started: float  # time.time(): shown, and read by another process
    phase_started: float


# How long an item runs before it goes on the board. The board is read once a second at most (the
# terminal's status line; a log's lines are for items running far longer): an item that ends
# sooner would hardly ever be seen there, and writing its entry for each phase and removing it
# cost more file-system calls than a short eval's whole run (milliseconds each where the disk
# is busy).
POST_DELAY_S = 0.25


class ProgressBoard:
    """This process's entry on the board (a no-op without a folder).

    :meth:`show` writes the entry at once; :meth:`post` (the items' phases) leaves it to a thread
    of this board, which writes it once the item has run for ``delay`` seconds, so that items
    that end sooner never touch the file system. The thread sleeps until an entry it has not
    written falls due or the board stops: it does not wake while no item runs, nor while one that
    is on the board runs on. :meth:`clear` takes the entry off.

    ``clock`` (monotonic: a step of the wall clock neither hastens nor delays an entry) and
    ``condition`` (what the thread waits on) are the tests' to replace."""

    def __init__(
        self,
        lock_dir: Path | None,
        delay: float = POST_DELAY_S,
        clock: Callable[[], float] = time.monotonic,
        condition: Callable[[threading.Lock], threading.Condition] = threading.Condition,
    ) -> None:
        self.path = lock_dir / PROGRESS_DIR / f"{os.getpid()}.json" if lock_dir is not None else None
        self.shown = False  # an entry may be on the board: clear() has a file to remove
        self.delay = delay
        self.clock = clock
        self._lock = threading.Lock()  # the entry's writes and removal, and what is posted
        self._wake = condition(self._lock)  # the thread's: an entry falls due sooner, or stop
        self._posted: Running | None = None  # what the process runs now, on the board or not yet
        self._due = 0.0  # when the posted entry goes on the board, by ``clock``
        self._written: Running | None = None  # the posted entry the board holds
        self._waking = math.inf  # when the thread wakes next, by ``clock`` (inf: when told)
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._no_thread = False  # none could start: post() writes at once instead

    def show(self, running: Running) -> None:
        if self.path is None:
            return
        self.shown = True
        try:
            self.path.parent.mkdir(exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(vars(running), handle)
            os.replace(temp, self.path)
        except OSError:
            pass  # progress is a display aid: never fail an item over it

    def post(self, running: Running, started: float) -> None:
        """What this process runs now: on the board once its item, which started at ``started``
        (by :attr:`clock`), has run for ``delay`` seconds (at once if that is already so, or if no
        thread can be started)."""
        if self.path is None:
            return
        due = started + self.delay
        with self._lock:
            self._posted, self._due = running, due
            if self._written is not None or self._no_thread or self.clock() >= due:
                self._write(running)  # shown already (a new phase) or due now
                return
            if due < self._waking:
                self._wake.notify()  # it sleeps past this entry's time: it waits afresh
        if self._thread is None:
            self._start()

    def _start(self) -> None:
        thread = threading.Thread(target=self._run, name=f"{OWN_THREAD_PREFIX}progress-board", daemon=True)
        try:
            thread.start()
        except RuntimeError:  # no thread can start (`ulimit -u`, pids.max): write as the phases begin
            with self._lock:
                self._no_thread = True
                if self._posted is not None:
                    self._write(self._posted)
            return
        self._thread = thread

    def _run(self) -> None:
        with self._lock:
            while not self._stopped:
                running = self._posted
                if running is None or running is self._written:
                    self._waking = math.inf
                    self._wake.wait()  # nothing to post: until post() or stop() tells it
                elif self.clock() >= self._due:
                    self._write(running)
                else:  # an entry cleared before its time still wakes it then, once
                    self._waking = self._due
                    self._wake.wait(self._due - self.clock())

    def _write(self, running: Running) -> None:
        self._written = running
        self.show(running)

    def clear(self) -> None:
        """Take this process's entry off the board (no system call when none was shown)."""
        with self._lock:
            self._posted = self._written = None
            if self.path is not None and self.shown:
                self.shown = False
                with contextlib.suppress(OSError):
                    self.path.unlink(missing_ok=True)

    def stop(self) -> None:
        """The process runs no more items: its thread ends and its entry comes off the board."""
        with self._lock:
            self._stopped = True
            # every thread: an interrupt (Ctrl-C, an item's backstop) raised in post() while one
            # started leaves it unrecorded, and the next post() starts another
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.clear()


def read_board(lock_dir: Path) -> list[Running]:
    """Every item in progress, longest-running first."""
    found = []
    folder = lock_dir / PROGRESS_DIR
    try:
        paths = [p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
    except OSError:
        return []
    for path in paths:
        if not _alive(path.stem):
            continue  # its process died mid-item (a lost xdist worker): it runs nothing now
        try:
            data = json.loads(read_bounded(path, MAX_ENTRY_BYTES).decode("utf-8"))
            found.append(Running(**data))
        except (OSError, ValueError, TypeError, UnreadableFile):
            continue  # being replaced, or removed as the item ended
    return sorted(found, key=lambda r: (r.item_started, r.nodeid))


def _alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (ValueError, OSError):
        return True  # not ours to judge (another user's process, an odd name): keep it
    return True


def duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def describe(running: Running, now: float) -> str:
    """``quiz.eval.yaml::capital[claude] agent 1m12s (3m05s in all)``."""
    detail = f" {running.detail}" if running.detail and running.detail not in running.nodeid else ""
    text = f"{running.nodeid} {running.phase}{detail} {duration(now - running.phase_started)}"
    if running.phase_started - running.item_started >= 1:
        text += f" ({duration(now - running.item_started)} in all)"
    return text


def status_line(board: list[Running], now: float | None = None, width: int = 120) -> str:
    """One line for a terminal: the items in progress, as many as fit."""
    now = time.time() if now is None else now
    if not board:
        return ""
    head = f"vibeeval: {len(board)} running: "
    parts = [describe(r, now) for r in board]
    line = head + parts[0]
    shown = 1
    for part in parts[1:]:
        if len(line) + len(part) + 3 + 10 > width:
            break
        line += " · " + part
        shown += 1
    if shown < len(parts):
        line += f" · +{len(parts) - shown} more"
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def progress_lines(board: list[Running], now: float | None = None, at_least: float = 0.0) -> list[str]:
    """Plain lines for a log: each item running for at least ``at_least`` seconds."""
    now = time.time() if now is None else now
    return [f"vibeeval: running {describe(r, now)}" for r in board if now - r.item_started >= at_least]


class LiveStatus:
    """The controller's display: on a terminal one status line, redrawn every ``tick`` seconds and
    taken away (the line pytest was writing put back) whenever pytest writes; elsewhere a plain
    line per long-running item every ``interval`` seconds.

    ``pause()`` / ``resume()`` bracket pytest's own writes (the status is cleared in between)."""

    def __init__(
        self,
        lock_dir: Path,
        stream: TextIO,
        tty: bool,
        current_line: Callable[[], str],
        width: Callable[[], int],
        interval: float = 30.0,
        tick: float = 1.0,
        sync: Callable[[], None] | None = None,
        owns_stream: bool = False,
    ) -> None:
        self.lock_dir, self.stream, self.tty = lock_dir, stream, tty
        self.sync = sync or (lambda: None)  # flushes pytest's own writes before ours
        self.owns_stream = owns_stream  # a duplicate of the terminal, closed at stop()
        self.current_line, self.width = current_line, width
        self.interval, self.tick = interval, tick
        self.lock = threading.RLock()  # pytest may write from a hook inside another one
        self.shown = False  # a status line is on the screen
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"{OWN_THREAD_PREFIX}progress", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        with self.lock:
            self._erase()
            if self.owns_stream:
                with contextlib.suppress(OSError, ValueError):
                    self.stream.close()

    def pause(self) -> None:
        self.lock.acquire()
        self._erase()
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()

    def resume(self) -> None:
        self.lock.release()

    def _run(self) -> None:
        wait = self.tick if self.tty else self.interval
        while not self.stopped.wait(wait):
            board = read_board(self.lock_dir)
            with self.lock:
                if self.stopped.is_set():
                    return
                try:
                    self._draw(board)
                except (OSError, ValueError):
                    return  # the terminal went away

    def _draw(self, board: list[Running]) -> None:
        self.sync()
        if self.tty:
            line = status_line(board, width=max(20, self.width() - 1))
            self.stream.write("\r\x1b[K" + line if line else "")
            self.shown = bool(line)
        else:
            lines = progress_lines(board, at_least=self.interval)
            if lines:
                start = "\n" if self.current_line() else ""
                self.stream.write(start + "\n".join(lines) + "\n" + self.current_line())
        self.stream.flush()

    def _erase(self) -> None:
        if self.shown:
            try:
                self.stream.write("\r\x1b[K" + self.current_line())
                self.stream.flush()
            except (OSError, ValueError):
                pass
            self.shown = False
