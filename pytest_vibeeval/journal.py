"""The session's journal: each finished eval's record, appended as one JSON line to
``.vibeeval/results/<timestamp>.journal.jsonl`` as the controller takes it, so that a session killed
hard (SIGKILL, a lost machine), which writes no results file, leaves its finished evals for
``--vibe-resume``. The session's end removes it once its results file is written.

Lines are gathered and written at most once per :data:`INTERVAL` seconds (by a timer thread), or at
once past :data:`CHUNK` bytes: a write on the controller releases the interpreter lock, which under
xdist costs more than the write (see ``scoring/spool.py``). A hard kill loses at most the records
of the last :data:`INTERVAL` seconds. The first line is a header naming the files the session
resumed from, so that a resume from the journal reads them too."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import stat
import threading
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Protocol


class _Dumpable(Protocol):
    def model_dump_json(self, *, exclude_defaults: bool = ...) -> str: ...


Record = str | _Dumpable  # a record's JSON (from an xdist worker), or the record (a serial run)

INTERVAL = 1.0  # seconds a finished record may wait before it is written
CHUNK = 1 << 16  # bytes gathered before a write without waiting
SUFFIX = ".journal.jsonl"
_UNNAMED = SUFFIX + "."  # in the name of a journal's hidden file, before its random part
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND


class Journal:
    """Appends records to a journal file (made at the first record); a journal that cannot be made
    or written stops, with the reason in :attr:`problem`, and the session goes on without it."""

    def __init__(self, folder: Path, stamp: str, resumed_from: Iterable[str]) -> None:
        self.folder = folder
        self.stamp = stamp
        self.path: Path | None = None
        self.problem: str | None = None  # why it could not be written
        self._closed = False
        self._header = json.dumps({"journal": 1, "resumed_from": list(resumed_from)}) + "\n"
        self._fd: int | None = None
        self._pending = bytearray()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._held: dict[str, tuple[str, str, str, Record]] = {}  # records whose teardown is to come
        self._prefixes: dict[tuple[str, str, str], bytes] = {}  # each run's line start (see add)

    def hold(self, nodeid: str, source: str, input_digest: str, configuration: str, record: Record) -> None:
        """An item's record (its JSON, or the record itself in a serial run), written once its
        teardown passed (one that fails makes it an error): :meth:`settle` turns a record into
        JSON then, once. Each of an item's reports may bring it: the last is kept."""
        self._held[nodeid] = (source, input_digest, configuration, record)

    def settle(self, nodeid: str, teardown_passed: bool) -> None:
        """The item's teardown reported: append its held record when the teardown passed."""
        held = self._held.pop(nodeid, None)
        if held is not None and teardown_passed:
            source, input_digest, configuration, record = held
            text = record if isinstance(record, str) else record.model_dump_json(exclude_defaults=True)
            self.add(source, input_digest, configuration, text)

    def add(self, source: str, input_digest: str, configuration: str, record_json: str) -> None:
        """Append one finished record (its JSON, unparsed) with what --vibe-resume matches it by."""
        if self.problem is not None or self._closed:
            return
        key = (source, input_digest, configuration)
        prefix = self._prefixes.get(key)
        if prefix is None:  # the same for every item of a run: made once per run
            prefix = self._prefixes[key] = (
                f'{{"source":{json.dumps(source)},"input_digest":{json.dumps(input_digest)},'
                f'"configuration":{json.dumps(configuration)},"record":'
            ).encode()
        with self._lock:
            self._pending += prefix
            self._pending += record_json.encode()
            self._pending += b"}\n"
            if len(self._pending) >= CHUNK:
                self._write()
            elif self._timer is None:
                self._timer = threading.Timer(INTERVAL, self.flush)
                self._timer.daemon = True
                self._timer.start()

    def flush(self) -> None:
        """Write what is gathered."""
        with self._lock:
            self._timer = None
            self._write()

    def _write(self) -> None:
        if not self._pending or self.problem is not None or self._closed:
            return
        data = bytes(self._pending)  # a copy: a view of the buffer would keep it from being emptied
        self._pending.clear()
        try:
            if self._fd is None:
                self._fd = self._open()
                data = self._header.encode() + data
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError as exc:
            self.problem = f"the journal {self.path or self.folder} cannot be written ({exc.strerror or exc})"

    def _open(self) -> int:
        """Make the journal, locked before its name can be seen: another session's scan takes a
        journal nobody locks for one a killed session left (to name, resume or delete)."""
        from .atomic_files import numbered_names, temporary_prefix  # here: imported at start-up

        self.folder.mkdir(parents=True, exist_ok=True)
        names = numbered_names(self.stamp, SUFFIX)
        while True:  # a name no scan matches (it does not end in SUFFIX) and nobody else knows
            temporary = self.folder / f"{temporary_prefix(self.stamp + SUFFIX)}{secrets.token_hex(6)}"
            with contextlib.suppress(FileExistsError):
                fd = os.open(temporary, _FLAGS, 0o644)
                break
        try:
            _lock(fd)
            path, linked = _link(temporary, self.folder, names)
        except BaseException:
            os.close(fd)
            raise
        finally:
            temporary.unlink(missing_ok=True)
        if not linked:  # no hard links here
            os.close(fd)
            return self._open_in_place(path, names)
        self.path = path
        return fd

    def _open_in_place(self, path: Path, names: Iterator[str]) -> int:
        """Make the journal under its own name, then lock it: a file system without hard links. A
        scan between the two may take it for a killed session's (a window of a system call)."""
        while True:
            try:
                fd = os.open(path, _FLAGS, 0o644)
                break
            except FileExistsError:
                path = self.folder / next(names)
        _lock(fd)
        self.path = path
        return fd

    def close(self, remove: bool) -> None:
        """Stop the timer and write what is gathered; with ``remove``, delete the file (the session's
        results file now holds its records)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if not remove:
                self._write()
            if remove and self.path is not None:  # while the lock is held: nobody takes it over first
                Path(self.path).unlink(missing_ok=True)
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            self._closed = True


def _lock(fd: int) -> None:
    """Lock the session's journal until the session ends (or dies), waiting out another session's
    momentary look (:func:`is_running`); a file system without locks leaves it unlocked."""
    with contextlib.suppress(OSError):
        fcntl.flock(fd, fcntl.LOCK_EX)


def _link(temporary: Path, folder: Path, names: Iterator[str]) -> tuple[Path, bool]:
    """Link ``temporary`` to the first free name of ``names`` (never over another file); the name
    and whether it is linked (not: the file system has no hard links)."""
    while True:
        path = folder / next(names)
        try:
            os.link(temporary, path)
            return path, True
        except FileExistsError:
            continue
        except OSError:
            return path, False


def _locked(path: Path, how: int) -> int | None:
    """A descriptor of the regular file at ``path`` holding the lock ``how`` (flock), or None when
    another process holds the journal's lock (its session is running), it is not a regular file or
    it is no longer at ``path`` once locked (a session that ended removed it, then let go of it).
    On a file system without locks the file is taken as its writers could not lock it either."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:  # another process holds it
        os.close(fd)
        return None
    except OSError:
        pass  # no locks here
    if not _still_at(path, os.fstat(fd)):
        os.close(fd)
        return None
    return fd


def _still_at(path: Path, info: os.stat_result) -> bool:
    """Whether the file ``info`` describes is (still) the one at ``path``."""
    try:
        now = path.stat()
    except OSError:
        return False
    return (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino)


def is_running(path: Path) -> bool:
    """Whether the journal at ``path`` is being written by a session that is still running (it
    holds the journal's lock until it ends; a killed one holds none)."""
    fd = _locked(path, fcntl.LOCK_SH)
    if fd is None:
        return True
    os.close(fd)
    return False


def remove_finished(path: Path) -> bool:
    """Delete the journal at ``path`` unless a running session holds it; whether it was deleted."""
    fd = _locked(path, fcntl.LOCK_EX)
    if fd is None:
        return False
    try:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)
    return True


class Listing:
    """The names of the journals in a folder (ending in :data:`SUFFIX`) and of the hidden files
    journals are made through (:func:`remove_unnamed`), from one listing of the folder."""

    __slots__ = ("journals", "unnamed")  # a plain class: a NamedTuple is compiled at import

    def __init__(self, journals: list[str], unnamed: list[str]) -> None:
        self.journals = journals
        self.unnamed = unnamed


def listing(folder: Path) -> Listing:
    """The journals and journals' hidden files in ``folder`` (none where it cannot be listed).

    The results folder gains a file with every session, so the end of each session lists it once,
    names only (no regular expression, no path object and no ``stat`` for the other files): its
    cost per results file kept is a few hundred instructions."""
    try:
        names = os.listdir(folder)
    except OSError:
        return Listing([], [])
    return Listing(
        [name for name in names if name.endswith(SUFFIX)],
        [name for name in names if name[:1] == "." and name.find(_UNNAMED, 1) > 0],  # ".*<SUFFIX>.*"
    )


def newest_journal(folder: Path, newer_than: Path | None) -> Path | None:
    """The newest journal in ``folder`` modified after ``newer_than`` (a results file; None: any)
    whose session is not running: a session that never finished after the newest results."""
    try:
        since = newer_than.stat().st_mtime if newer_than is not None else None
    except OSError:
        since = None
    found = [(mtime, path) for mtime, path in _journals(folder) if since is None or mtime > since]
    for _, path in sorted(found, reverse=True):
        if not is_running(path):
            return path
    return None


def left_journals(folder: Path, skip: Collection[Path], listed: Listing | None = None) -> list[Path]:
    """The journals in ``folder``, newest first, of sessions that did not finish and are not
    running (killed ones, whose journal no resume took), other than those in ``skip`` (however
    spelt: through ``..`` or a link); ``listed``: the folder's :func:`listing`, when made already."""
    places = {place(path) for path in skip}
    found = sorted(
        ((mtime, path) for mtime, path in _journals(folder, listed) if place(path) not in places),
        reverse=True,
    )
    return [path for _, path in found if not is_running(path)]


def remove_unnamed(folder: Path, before: float, listed: Listing | None = None) -> None:
    """Delete the temporary files of journals whose session was killed between making one and
    naming it (:meth:`Journal._open`), which would stay hidden in ``folder`` for good (empty, or a
    second name of the journal when the kill came after it was named): those no running session
    locks, made before ``before`` (the start of the session that looks, as a timestamp). A newer
    one is left for a later session: its maker may be running still, between making and locking it.
    ``listed``: the folder's :func:`listing`, when made already."""
    from .atomic_files import temporary_target  # here: imported at start-up

    with contextlib.suppress(OSError):
        for name in (listed or listing(folder)).unnamed:
            path = folder / name
            target = temporary_target(path.name)
            if target is None or not target.endswith(SUFFIX):
                continue
            fd = _locked(path, fcntl.LOCK_EX)
            if fd is None:  # a running session's (or gone, or no regular file)
                continue
            try:
                if os.fstat(fd).st_mtime < before:
                    path.unlink(missing_ok=True)
            except OSError:
                pass
            finally:
                os.close(fd)


def _journals(folder: Path, listed: Listing | None = None) -> Iterator[tuple[float, Path]]:
    """Each regular journal file in ``folder`` with its modification time."""
    with contextlib.suppress(OSError):
        for name in (listed or listing(folder)).journals:
            path = folder / name
            with contextlib.suppress(OSError):  # gone meanwhile (a session ending), or unreadable
                info = path.stat()
                if stat.S_ISREG(info.st_mode):
                    yield info.st_mtime, path


def place(path: Path) -> str:
    """Where ``path`` is, symbolic links and ``..`` resolved (as given when it cannot be)."""
    try:
        return os.path.realpath(path)
    except (OSError, ValueError):  # a NUL in a name a results file gave
        return str(path)


SHOWN_LEFT = 3  # journals named in the note on those left


def left_note(shown: list[str]) -> str:
    """The Run Summary's note on the journals of killed sessions left in the results folder
    (``shown``: as results name them, newest first): what they hold and what to do with them."""
    if len(shown) == 1:
        return (
            f"{shown[0]} holds the finished evals of a session that did not finish (killed before it "
            f"wrote its results): reuse them with --vibe-resume {shown[0]}, or delete the file"
        )
    names = ", ".join(shown[:SHOWN_LEFT]) + (
        f" and {len(shown) - SHOWN_LEFT} more" if len(shown) > SHOWN_LEFT else ""
    )
    return (
        f"{len(shown)} journals hold the finished evals of sessions that did not finish (killed before "
        f"they wrote their results): {names}; reuse one's with --vibe-resume <journal>, or delete them"
    )
