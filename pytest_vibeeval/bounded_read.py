"""Read a file we were pointed at without trusting it: only a regular file (never a FIFO, which
blocks, nor a device such as ``/dev/zero``, which never ends), and at most a given size."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class UnreadableFile(Exception):
    """Why the file was not read; the message does not repeat the path (callers name it)."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed), at most ``limit`` of them;
    UnreadableFile for anything else. FileNotFoundError passes through (callers often expect it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnreadableFile(f"cannot read it: not a regular file but {_kind(info.st_mode)}")
        if info.st_size > limit:
            raise UnreadableFile(f"too large to read: {info.st_size} bytes, more than {limit}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while we read it
        raise UnreadableFile(f"too large to read: more than {limit} bytes")
    return data


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "something else"
