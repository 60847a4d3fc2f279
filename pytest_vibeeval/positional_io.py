"""Whole reads and writes at an offset of a file descriptor (``os.pread``/``os.pwrite`` may do part
of the work per call), never moving the descriptor's position."""

from __future__ import annotations

import os


def write_all_at(fd: int, data: bytes | bytearray, offset: int) -> None:
    """Write all of ``data`` at ``offset``."""
    view = memoryview(data)
    while view:
        written = os.pwrite(fd, view, offset)
        view, offset = view[written:], offset + written


READ_CHUNK = 2**24  # the most one read asks for


def read_at_most_at(fd: int, offset: int, limit: int, chunk: int = READ_CHUNK) -> bytes:
    """At most ``limit`` bytes from ``offset`` on (fewer where the file ends), asking for at most
    ``chunk`` bytes a call (a huge limit never makes one huge read buffer)."""
    pieces = []
    while limit > 0:
        piece = os.pread(fd, min(limit, chunk), offset)
        if not piece:
            break
        pieces.append(piece)
        offset += len(piece)
        limit -= len(piece)
    return b"".join(pieces)


def read_exactly_at(fd: int, offset: int, size: int) -> bytes:
    """``size`` bytes from ``offset``; OSError if the file ends before."""
    data = read_at_most_at(fd, offset, size)
    if len(data) < size:
        raise OSError(f"the file ended {size - len(data)} bytes early")
    return data
