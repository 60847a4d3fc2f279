"""The file system the benchmark writes to, and a short probe of how fast it makes files.

On an ext4 without a journal, after a large deletion each new inode costs hundreds of µs for a few
seconds (the kernel skips recently freed inodes, reading their tables to tell), so the rows that
create files (``cli:`` evals, workspace copies) follow what was deleted just before. The header
names the file system of the run's temporary folder, and probes at the start, before those
benchmarks and at the end time the creation and removal of a few hundred empty files, so that a
reader can tell a disturbed disk from slow code."""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
PROBE_FILES = 500
_ESCAPE = re.compile(r"\\([0-7]{3})")  # mountinfo writes space, tab, newline and \ as \ooo


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo``: the file system mounted at ``point``."""

    point: str
    device: str  # major:minor
    fstype: str
    source: str
    options: str  # the mount's own
    super_options: str  # the file system's


@dataclass(frozen=True)
class Probe:
    """The creation and removal of ``files`` empty files in one folder, at one point of the run."""

    when: str
    files: int
    create_us: float  # per file
    remove_us: float  # per file

    def line(self) -> str:
        return (
            f"disk probe, {self.when}: {self.files} empty files, create {self.create_us:.0f} µs/file, "
            f"remove {self.remove_us:.0f} µs/file"
        )


def _unescape(text: str) -> str:
    return _ESCAPE.sub(lambda m: chr(int(m[1], 8)), text)


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a ``/proc/self/mountinfo`` text, in its order (a later mount on the same point
    hides an earlier one); lines that are not of its shape are skipped."""
    mounts = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 6 or len(tail) < 2:
            continue
        supers = tail[2] if len(tail) > 2 else ""
        mounts.append(Mount(_unescape(fields[4]), fields[2], tail[0], _unescape(tail[1]), fields[5], supers))
    return mounts


def mount_of(path: str, mounts: list[Mount]) -> Mount | None:
    """The mount ``path`` (absolute, links resolved) is on: the longest mount point above it, the
    last mounted of equals."""
    found: Mount | None = None
    longest = -1
    for mount in mounts:
        point = mount.point.rstrip("/")
        if (path == point or path.startswith(point + "/")) and len(point) >= longest:
            found, longest = mount, len(point)
    return found


def ext4_journal(device: str, sys_root: Path = Path("/sys"), proc_root: Path = Path("/proc")) -> str:
    """Whether the ext4 file system on ``device`` (major:minor) has a journal: "journal", "no
    journal" or "journal unknown", read from ``/sys/fs/ext4/<name>/journal_task`` (``<none>``
    without a journal) or else ``/proc/fs/jbd2`` (an entry ``<name>-<inode>`` per journal in use);
    no root tools."""
    try:
        name = Path(os.readlink(sys_root / "dev" / "block" / device)).name
    except OSError:
        return "journal unknown"
    try:
        task = (sys_root / "fs" / "ext4" / name / "journal_task").read_text().strip()
    except OSError:
        task = ""
    if task:
        return "no journal" if task == "<none>" else "journal"
    try:
        entries = os.listdir(proc_root / "fs" / "jbd2")
    except OSError:
        return "journal unknown"
    return "journal" if any(entry.startswith(name + "-") for entry in entries) else "journal unknown"


def describe(folder: Path, mountinfo: Path = MOUNTINFO) -> str:
    """The file system ``folder`` is on: its type, source, mount options and, for ext4, whether it
    has a journal."""
    try:
        mounts = parse_mountinfo(mountinfo.read_text())
    except OSError:
        return "file system unknown (no /proc/self/mountinfo)"
    mount = mount_of(os.path.realpath(folder), mounts)
    if mount is None:
        return "file system unknown (no mount found)"
    options = f"mount {mount.options}; super {mount.super_options}"
    text = f"{mount.fstype} ({mount.source} on {mount.point}; {options})"
    return f"{text}; {ext4_journal(mount.device)}" if mount.fstype == "ext4" else text


def probe(folder: Path, when: str, files: int = PROBE_FILES) -> Probe:
    """Create and remove ``files`` empty files in a new folder under ``folder``, timed. A probe
    that fails (a full disk) leaves neither its files nor its folder behind."""
    where = folder / f"disk-probe-{time.monotonic_ns()}"
    where.mkdir(parents=True)
    try:
        names = [str(where / f"f{i}") for i in range(files)]
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
        started = time.perf_counter()
        for name in names:
            os.close(os.open(name, flags, 0o644))
        created = time.perf_counter()
        for name in names:
            os.unlink(name)
        removed = time.perf_counter()
    finally:
        shutil.rmtree(where, ignore_errors=True)  # empty by now unless the probe failed
    return Probe(when, files, (created - started) / files * 1e6, (removed - created) / files * 1e6)
