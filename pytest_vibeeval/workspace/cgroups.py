"""A process limit for one agent run, with the Linux pids cgroup controller where this process may
create cgroups (root with cgroup v1's pids hierarchy, or a delegated cgroup v2 subtree).

Every process the agent starts stays in its cgroup, whatever it does (``setsid``, double forks):
``pids.max`` bounds how many there may be at once (a fork bomb gets EAGAIN, not the machine), and at
the end every one left is killed and the cgroup removed. Without such a cgroup nothing is limited
and :func:`process_limit` returns None; the process-group kill and the bwrap sandbox's pid
namespace still apply.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from collections.abc import Callable
from pathlib import Path

PREFIX = "pytest-vibeeval-"  # then the pid of the process that made it, "-" and a random part
V1_ROOT = Path("/sys/fs/cgroup/pids")
V2_ROOT = Path("/sys/fs/cgroup")
# The agent's first process moves itself into the cgroup, then becomes the agent: every process it
# starts is born inside. ``$0`` is the cgroup's procs file, the rest the agent's argv; no shell
# ever sees the agent's arguments.
_ENTER = 'echo $$ > "$0" && exec "$@"'


class ProcessLimit:
    """One agent run's cgroup: ``wrap`` its argv, run it, then ``close``."""

    def __init__(self, folder: Path, limit: int) -> None:
        self.folder, self.limit = folder, limit

    def wrap(self, argv: list[str]) -> list[str]:
        return ["/bin/sh", "-c", _ENTER, str(self.folder / "cgroup.procs"), *argv]

    def pids(self) -> list[int]:
        try:
            text = (self.folder / "cgroup.procs").read_text()
        except OSError:
            return []
        return [int(line) for line in text.split()]

    def close(self) -> None:
        """Kill every process still in the cgroup, then remove it."""
        deadline = time.monotonic() + 5
        while True:
            pids = self.pids()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.folder.rmdir()  # fails while processes are still there
            if not self.folder.exists() or time.monotonic() > deadline:
                return
            time.sleep(0.01)  # the killed processes are being reaped by their parents


def _v2_parent() -> Path | None:
    """This process's own cgroup v2 folder, when the pids controller is enabled below it."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            folder = V2_ROOT / line[3:].lstrip("/")
            try:
                if "pids" in (folder / "cgroup.subtree_control").read_text().split():
                    return folder
            except OSError:
                return None
    return None


def _parents() -> list[Path]:
    """Where this process may make its cgroups."""
    parents = [V1_ROOT] if (V1_ROOT / "cgroup.procs").exists() else []
    v2 = _v2_parent()
    if v2 is not None:
        parents.append(v2)
    return parents


def remove_abandoned(is_alive: Callable[[int], bool]) -> None:
    """Kill what is left in the cgroups made by processes that have terminated (an xdist worker
    that was killed), and remove those cgroups."""
    for parent in _parents():
        try:
            folders = [f for f in parent.iterdir() if f.name.startswith(PREFIX) and f.is_dir()]
        except OSError:
            continue
        for folder in folders:
            owner = folder.name[len(PREFIX) :].partition("-")[0]
            if owner.isdigit() and not is_alive(int(owner)):
                ProcessLimit(folder, 0).close()


def process_limit(limit: int) -> ProcessLimit | None:
    """A new cgroup allowing ``limit`` processes, or None where none can be made here."""
    name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    for parent in _parents():
        folder = parent / name
        try:
            folder.mkdir()
        except OSError:
            continue
        try:
            (folder / "pids.max").write_text(str(limit))
        except OSError:
            with contextlib.suppress(OSError):
                folder.rmdir()
            continue
        return ProcessLimit(folder, limit)
    return None
