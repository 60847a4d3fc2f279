"""A file's stamp: its modification time and size, which tell without reading it whether it was
written since it was last looked at."""

from __future__ import annotations

from pathlib import Path

Stamp = tuple[int, int]


def file_stamp(path: Path) -> Stamp | None:
    """``path``'s modification time (nanoseconds) and size; None where it cannot be stat'ed."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_mtime_ns, stat.st_size
