"""Read a file we were pointed at without trusting it: only a regular file (never a FIFO, which
blocks, nor a device such as ``/dev/zero``, which never ends), and at most a given size."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .positional_io import READ_CHUNK, read_at_most_at


class UnreadableFile(Exception):
    """Why the file was not read; the message does not repeat the path (callers name it)."""


def read_bounded(path: Path, limit: int) -> bytes:
    """The bytes of the regular file at ``path`` (symlinks followed), at most ``limit`` of them;
    UnreadableFile for anything else. FileNotFoundError passes through (callers often expect it)."""
    fd, size = _open_regular(path)
    try:
        if size > limit:
            raise UnreadableFile(f"too large to read: {size} bytes, more than {limit}")
        data = _read(fd, 0, limit + 1, size)
    finally:
        os.close(fd)
    if len(data) > limit:  # grew while we read it
        raise UnreadableFile(f"too large to read: more than {limit} bytes")
    return data


def read_start(path: Path, limit: int) -> bytes:
    """At most the first ``limit`` bytes of the regular file at ``path`` (a larger file is no error);
    UnreadableFile for anything but a regular file."""
    fd, size = _open_regular(path)
    try:
        return _read(fd, 0, limit, size)
    finally:
        os.close(fd)


def read_end(path: Path, limit: int) -> tuple[bytes, bool]:
    """At most the last ``limit`` bytes of the regular file at ``path``, and whether the file was
    longer (its start left unread); UnreadableFile for anything but a regular file."""
    fd, size = _open_regular(path)
    try:
        start = max(0, size - limit)
        return _read(fd, start, limit, size), start > 0
    finally:
        os.close(fd)


def file_kind(mode: int) -> str:
    """What a file of ``mode`` is, for a message: "a FIFO", "a character device", …"""
    for test, name in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "something else"


def _open_regular(path: Path) -> tuple[int, int]:
    """A descriptor of the regular file at ``path`` and its size."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without waiting for a writer
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise UnreadableFile(f"cannot read it: not a regular file but {file_kind(info.st_mode)}")
    return fd, info.st_size


# The least a read asks for: a file that grows while it is read is read on in steps of this many.
_MIN_CHUNK = 65536


def _read(fd: int, offset: int, limit: int, size: int) -> bytes:
    """At most ``limit`` bytes from ``offset`` on, of a file that was ``size`` bytes long: each
    read asks for about that much, not for the largest chunk (a buffer of 16 MiB allocated and
    freed twice for an answer of a few bytes)."""
    chunk = min(max(size - offset + 1, _MIN_CHUNK), READ_CHUNK)
    try:
        return read_at_most_at(fd, offset, limit, chunk)
    except OSError as exc:
        raise UnreadableFile(f"cannot read it: {exc.strerror or exc}") from None
