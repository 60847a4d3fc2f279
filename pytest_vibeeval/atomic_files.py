"""Files written whole or not at all: a temporary file beside the target, renamed (or linked) over
it, with the mode any file the user writes gets (the umask's), for the results, the HTML report,
the response cache, record stores and ``outputs``."""

from __future__ import annotations

import functools
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["copy_atomic", "is_special", "temporary_prefix", "temporary_target", "write_atomic", "write_new"]

# On Linux a "Umask:" line tells the process's umask without changing it.
_PROC_STATUS = Path("/proc/self/status")


@functools.cache
def _umask() -> int:
    """The process's umask, read once (for every file written, a cached or recorded answer each):
    from :data:`_PROC_STATUS`, else by setting it and setting it back, which changes process-wide
    state another thread could see meanwhile."""
    try:
        for line in _PROC_STATUS.read_bytes().splitlines():
            if line.startswith(b"Umask:"):
                return int(line.split()[1], 8)
    except (OSError, IndexError, ValueError):  # no /proc, or a line of another form
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str | Iterable[str]) -> None:
    """Write ``text`` (or its pieces, one after another) to a temporary file beside ``path`` and
    rename it over ``path``: a reader sees the old file or the whole new one, never a part. A
    device or a pipe there (``/dev/null``, a FIFO) is written to, never replaced: a rename over
    ``/dev/null`` replaced the system's with a file."""
    if is_special(path):
        with path.open("w", encoding="utf-8") as handle:
            handle.writelines([text] if isinstance(text, str) else text)
        return
    with _written(path.parent, path.name, text) as temporary:
        os.replace(temporary, path)


def is_special(path: Path) -> bool:
    """Whether ``path`` is something else than a file, a folder or a link: a device, a pipe (a link
    is replaced, as a file is: what it links to is left alone)."""
    try:
        mode = path.lstat().st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))


def write_new(folder: Path, stem: str, text: str | Iterable[str]) -> Path:
    """Write ``text`` as :func:`write_atomic` does to ``<folder>/<stem>.json``, or ``<stem>-2.json``,
    … when that name is taken, and return the path: never over another file, even one another session
    writes under the same name at the same moment (the whole file is linked to a name, which fails
    when the name exists)."""
    with _written(folder, f"{stem}.json", text) as temporary:
        n = 1
        while True:
            path = folder / (f"{stem}.json" if n == 1 else f"{stem}-{n}.json")
            try:
                os.link(temporary, path)
                return path
            except FileExistsError:
                n += 1
            except OSError:  # a file system without hard links: the name checked, then taken
                if not os.path.lexists(path):
                    os.replace(temporary, path)
                    return path
                n += 1


def temporary_prefix(name: str) -> str:
    """How the name of a temporary file :func:`write_atomic` writes ``name`` through starts (a
    random part of letters, digits and ``_`` follows)."""
    return f".{name}."


def temporary_target(name: str) -> str | None:
    """The name of the file a temporary file named ``name`` is written for (:func:`temporary_prefix`),
    or None when ``name`` is no such temporary name."""
    target = name[1:].rpartition(".")[0] if name.startswith(".") else ""
    return target if target and name.startswith(temporary_prefix(target)) else None


@contextmanager
def _written(folder: Path, name: str, text: str | Iterable[str]) -> Iterator[str]:
    """A temporary file in ``folder`` (made, with its parents) holding ``text``, removed afterwards
    unless the block renamed it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=temporary_prefix(name), dir=folder)
    try:
        # mkstemp creates the file 0600; give it the mode any file the user writes gets.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.writelines([text] if isinstance(text, str) else text)
        yield temporary
    finally:
        Path(temporary).unlink(missing_ok=True)


def copy_atomic(source: Path, path: Path) -> None:
    """Copy ``source`` to ``path`` as :func:`write_atomic` writes: all or nothing (in pieces of 64 Ki
    characters: bigger ones cost megabytes at the session's peak for no speed)."""
    with source.open(encoding="utf-8", newline="") as handle:
        write_atomic(path, iter(lambda: handle.read(1 << 16), ""))
