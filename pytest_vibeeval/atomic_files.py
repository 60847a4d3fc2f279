"""Files written whole or not at all: a temporary file beside the target, renamed (or linked) over
it, with the mode any file the user writes gets (the umask's), for the results, the HTML report,
the response cache, record stores and ``outputs``; a device or a pipe the user named is written to
instead (``write_atomic(..., into_special=True)``)."""

from __future__ import annotations

import errno
import functools
import itertools
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .bounded_read import file_kind

__all__ = [
    "copy_atomic",
    "descriptor_file",
    "numbered_names",
    "refused",
    "refused_descriptor",
    "special_mode",
    "temporary_prefix",
    "temporary_target",
    "unwritable_reason",
    "write_atomic",
    "write_new",
    "written_through",
]

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


def write_atomic(
    path: Path, text: str | bytes | Iterable[str], *, into_special: bool = False, mode: int | None = None
) -> None:
    """Write ``text`` (or its pieces, one after another, or bytes) to a temporary file beside ``path``
    and rename it over ``path``: a reader sees the old file or the whole new one, never a part.
    ``mode``: the new file's permission bits (by default those the umask leaves of 0o666).

    ``into_special``, for a path the user named (``--vibe-results``, ``--vibe-html``): a character
    device or a FIFO there, or a link to one (``/dev/null``, ``/dev/stdout``, a FIFO a tool reads),
    is written to instead, and stays what it is (a rename over ``/dev/null`` replaced the system's
    with a file); a block device or a socket there, or a link to one, is refused (an OSError saying
    so), neither written to nor replaced. Without it (the cache, record stores, ``latest.json``,
    ``outputs``) whatever is at ``path`` is replaced, a link too: a FIFO planted there would make
    the write wait for a reader forever, a link to a device have it written into."""
    if into_special:
        kind = special_mode(path)
        if kind is not None and written_through(kind):
            if isinstance(text, bytes):
                path.write_bytes(text)
                return
            with path.open("w", encoding="utf-8") as handle:
                handle.writelines([text] if isinstance(text, str) else text)
            return
        if kind is not None:
            raise OSError(errno.EINVAL, refused(path, kind))
        if (file := descriptor_file(path)) is not None:
            raise OSError(errno.EINVAL, refused_descriptor(path, file))
    with _written(path.parent, path.name, text, mode) as temporary:
        os.replace(temporary, path)


def special_mode(path: Path) -> int | None:
    """The mode of what ``path`` is, or what a link there leads to (``/dev/stdout``, ``/dev/fd/1``),
    when that is neither a file nor a folder: a device, a FIFO, a socket; else None (nothing there,
    a file, a folder, a link to either or to nothing)."""
    try:
        mode = path.stat().st_mode  # to the end of a chain of links
    except (OSError, ValueError):
        return None
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else mode


def written_through(mode: int) -> bool:
    """Whether a user-named path of ``mode`` (:func:`special_mode`) is written to rather than
    replaced: a character device (``/dev/null``, a terminal) or a FIFO; a block device (a disk) or a
    socket is neither."""
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def descriptor_file(path: Path) -> str | None:
    """The file a link at ``path`` leads to through a process's descriptor (``/dev/stdout`` ->
    ``/proc/self/fd/1`` -> ``out.json``, ``/dev/fd/1``), or None. Replacing such a link (as root:
    the machine's /dev/stdout) is never what ``--vibe-results /dev/stdout > out.json`` meant."""
    current = str(path)
    for _ in range(40):  # the kernel's own limit on a chain of links
        try:
            target = os.readlink(current)
        except (OSError, ValueError):  # not a link (any more): the end of the chain
            return None
        if os.path.realpath(os.path.dirname(current)).startswith("/proc/"):
            return target  # a descriptor's link: its target is what the descriptor is
        current = os.path.join(os.path.dirname(current), target)
    return None


def refused_descriptor(path: Path, file: str) -> str:
    """Why a user-named ``path`` that leads to ``file`` through a descriptor is refused."""
    return f"{path} leads to the file {file} through a process's descriptor: name that file"


def refused(path: Path, mode: int) -> str:
    """Why a user-named ``path`` of ``mode`` that is not :func:`written_through` is refused."""
    how = "links to" if path.is_symlink() else "is"
    return f"{path} {how} {file_kind(mode)}: name a file"


_NUMBERED = re.compile(r"(.*?)(?:-(\d+))?(\.json)")


def written_order(name: str) -> tuple[str, int]:
    """A sort key putting the files :func:`write_new` made under one stem in the order it made
    them: ``<stem>.json``, ``<stem>-2.json``, … (as text, ``-2`` sorts before ``.json``)."""
    match = _NUMBERED.fullmatch(name)
    return (match[1] + match[3], int(match[2] or 1)) if match else (name, 0)


def write_new(folder: Path, stem: str, text: str | Iterable[str]) -> Path:
    """Write ``text`` as :func:`write_atomic` does to ``<folder>/<stem>.json``, or ``<stem>-2.json``,
    … when that name is taken, and return the path: never over another file, even one another session
    writes under the same name at the same moment (the whole file is linked to a name, which fails
    when the name exists)."""
    names = numbered_names(stem, ".json")
    with _written(folder, f"{stem}.json", text) as temporary:
        while True:
            path = folder / next(names)
            try:
                os.link(temporary, path)
                return path
            except FileExistsError:
                continue
            except OSError:  # a file system without hard links: the name checked, then taken
                if not os.path.lexists(path):
                    os.replace(temporary, path)
                    return path


def numbered_names(stem: str, suffix: str) -> Iterator[str]:
    """The names a new file of ``stem`` tries in turn until one is free (:func:`write_new`, the
    session's journal): ``<stem><suffix>``, ``<stem>-2<suffix>``, ``<stem>-3<suffix>``, …"""
    yield f"{stem}{suffix}"
    for n in itertools.count(2):
        yield f"{stem}-{n}{suffix}"


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
def _written(
    folder: Path, name: str, text: str | bytes | Iterable[str], mode: int | None = None
) -> Iterator[str]:
    """A temporary file in ``folder`` (made, with its parents) holding ``text``, removed afterwards
    unless the block renamed it."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=temporary_prefix(name), dir=folder)
    try:
        # mkstemp creates the file 0600; give it the mode any file the user writes gets.
        os.fchmod(fd, 0o666 & ~_umask() if mode is None else mode)
        if isinstance(text, bytes):
            with os.fdopen(fd, "wb") as binary:
                binary.write(text)
        else:
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


def unwritable_reason(
    path: Path, example: str | None = "results.json", *, into_special: bool = False
) -> str | None:
    """Why a file cannot be written at ``path`` (a folder there, a file where a folder must be, a
    name too long, no write permission in its folder), or None; checked before a run, so that its
    results are not lost at the end. ``example``: the name suggested for a file in a folder given
    instead of a file (None: no suggestion). ``into_special``: ``path`` is one the user named,
    written as ``write_atomic(path, ..., into_special=True)`` writes it (a character device or a
    FIFO is written to, and needs write permission on itself; a block device or a socket is
    refused)."""
    try:
        return _unwritable_reason(path, example, into_special)
    except OSError as exc:  # e.g. a path too long for the file system even to look it up
        return f"{path} cannot be written: {exc.strerror or exc}"


def _unwritable_reason(path: Path, example: str | None, into_special: bool) -> str | None:
    folder = path.parent
    while not os.path.lexists(folder) and folder != folder.parent:
        folder = folder.parent  # the folders write_atomic would create
    if folder.is_dir():  # before anything looks the path up: a name too long fails that
        longest = os.pathconf(folder, "PC_NAME_MAX")
        for name in path.relative_to(folder).parts:
            size = len(os.fsencode(name))
            if size > longest:
                return f"{path} cannot be created: a name in it has {size} bytes, at most {longest} allowed"
    if path.is_dir():
        return f"{path} is a folder" + (f"; name a file in it, e.g. {path / example}" if example else "")
    if not folder.is_dir():
        return f"{folder} is not a folder, so {path} cannot be created"
    mode = special_mode(path) if into_special else None
    if mode is not None and written_through(mode):  # written to, not replaced (/dev/null)
        return None if os.access(path, os.W_OK) else f"{path} is not writable"
    if mode is not None:  # a block device, a socket
        return refused(path, mode)
    if into_special and (file := descriptor_file(path)) is not None:  # /dev/stdout > out.json
        return refused_descriptor(path, file)
    # The file is written beside its name and renamed over it: that needs the folder's permission
    # only, whatever the mode of a file already there (a read-only latest.json is replaced).
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is not writable"
    return None
