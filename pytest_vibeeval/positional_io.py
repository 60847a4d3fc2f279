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


def read_exactly_at(fd: int, offset: int, size: int) -> bytes:
    """``size`` bytes from ``offset``; OSError if the file ends before."""
    pieces = []
    while size:
        piece = os.pread(fd, size, offset)
        if not piece:
            raise OSError(f"the file ended {size} bytes early")
        pieces.append(piece)
        offset += len(piece)
        size -= len(piece)
    return b"".join(pieces)
