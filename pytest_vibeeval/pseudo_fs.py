"""Folders on pseudo filesystems (``/proc``, ``/sys``, ``/dev`` and their kind elsewhere): never a
template of files. Copying one (``cp -a /proc/self``) writes without bound and hangs, so such a
workspace or grading setting is refused before anything is copied."""

from __future__ import annotations

import functools
import os
from pathlib import Path

PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
# Kernel filesystems whose files are generated, endless or devices (as /proc/self/mountinfo names them).
PSEUDO_TYPES = frozenset(
    {
        "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs",
        "configfs", "pstore", "bpf", "fusectl", "mqueue", "hugetlbfs", "binfmt_misc", "efivarfs",
        "autofs", "selinuxfs", "rpc_pipefs", "nsfs", "devfs",
    }
)  # fmt: skip
MOUNTINFO = "/proc/self/mountinfo"


def pseudo_filesystem(path: Path) -> str | None:
    """Where ``path`` (links resolved) is when that is a pseudo filesystem, for a message ("under
    /proc", "on a sysfs filesystem"); None for an ordinary folder (or when the mounts cannot be read)."""
    real = os.path.realpath(path)
    for root in PSEUDO_ROOTS:
        if real == root or real.startswith(root + "/"):
            return f"under {root}"
    kind = _mount_type(real)
    return f"on a {kind} filesystem" if kind in PSEUDO_TYPES else None


def _mount_type(real: str) -> str | None:
    """The filesystem type of the innermost mount holding ``real`` (an absolute, resolved path)."""
    best, kind = "", None
    for point, point_kind in _mounts(MOUNTINFO):
        inside = real == point or real.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):  # later mounts over the same point win
            best, kind = point, point_kind
    return kind


@functools.cache
def _mounts(mountinfo: str) -> tuple[tuple[str, str], ...]:
    """The mount points and filesystem types ``mountinfo`` lists, read once: every coding eval's
    workspace and grading folder is checked at collection."""
    try:
        with open(mountinfo, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return ()
    mounts = []
    for line in lines:
        fields, _, rest = line.partition(" - ")
        parts = fields.split()
        if len(parts) >= 5 and rest:
            mounts.append((_unescape(parts[4]), rest.split()[0]))
    return tuple(mounts)


def _unescape(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
