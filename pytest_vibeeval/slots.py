"""A semaphore that holds across processes (pytest-xdist workers): ``n`` lock files in one folder,
each held with ``flock`` by at most one process at a time. The kernel releases a lock when its
holder dies, so a crashed worker never leaves a slot taken."""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


class Slots:
    """At most ``count`` holders of ``name`` at once among every process using ``folder``."""

    def __init__(self, folder: Path, name: str, count: int) -> None:
        if count < 1:
            raise ValueError("count must be at least 1")
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:80]
        self.paths = [folder / f"{safe}.{index}.lock" for index in range(count)]

    @contextmanager
    def hold(self) -> Iterator[int]:
        """Wait for a free slot and hold it for the ``with`` block; yields the slot's index."""
        self.paths[0].parent.mkdir(parents=True, exist_ok=True)
        for index, path in enumerate(self.paths):
            fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            try:
                yield index
            finally:
                os.close(fd)  # closing releases the lock
            return
        # Every slot is taken: queue on one of them (spread over the processes by pid).
        index = os.getpid() % len(self.paths)
        fd = os.open(self.paths[index], os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield index
        finally:
            os.close(fd)
