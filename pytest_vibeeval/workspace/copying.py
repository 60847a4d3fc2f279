"""Copying workspace and grading templates into an item's directory.

Templates are only ever read: copies are real copies (never hardlinks), symlinks stay symlinks and
modes are kept. GNU ``cp -a`` does the copy when it is available (reflinks where the filesystem has
them), a Python walk otherwise and whenever names are to be ignored.

Copying into an existing directory merges: an entry already in the target is replaced, never written
through (a symlink in the target is not followed), and a directory is never replaced by a file or a
file by a directory (that is a :class:`CopyError`).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import shutil
import stat
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from ..masking import CUT, keep_start

# How much of cp's complaints goes into a CopyError's message.
MAX_ERROR_LINES = 5
MAX_LINE_CHARS = 400
MAX_ERROR_CHARS = 1500


class CopyError(OSError):
    """A tree could not be copied; the message names the source, the target and the reason."""

    def __init__(self, source: str | os.PathLike[str], target: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"cannot copy {os.fspath(source)} to {os.fspath(target)}: {reason}")
        self.source = os.fspath(source)
        self.target = os.fspath(target)
        self.reason = reason

    def __reduce__(self) -> tuple[type[CopyError], tuple[str, str, str]]:
        return type(self), (self.source, self.target, self.reason)


def copy_tree(source: Path, target: Path, ignore: Sequence[str] = ()) -> None:
    """Copy the contents of directory ``source`` into ``target`` (created with its parents if
    missing, merged into if present), skipping entries whose name matches a glob of ``ignore`` at
    any depth (a single string is one glob). Raises :class:`CopyError`."""
    patterns = (ignore,) if isinstance(ignore, str) else tuple(ignore)
    try:
        mode = os.stat(source).st_mode
    except OSError as exc:
        raise CopyError(source, target, f"cannot read the source: {exc.strerror or exc}") from exc
    if not stat.S_ISDIR(mode):
        raise CopyError(source, target, "the source is not a directory")
    real_source, real_target = os.path.realpath(source), os.path.realpath(target)
    if os.path.commonpath([real_source, real_target]) == real_source:
        raise CopyError(source, target, "the target is the source or inside it")
    try:
        os.makedirs(target, exist_ok=True)
    except OSError as exc:
        raise CopyError(source, target, f"cannot create the target: {exc.strerror or exc}") from exc
    cp = _gnu_cp()
    if cp is not None and not patterns:
        _copy_with_cp(cp, source, target)
    else:
        _copy_tree_python(source, target, patterns)


@functools.cache
def _gnu_cp() -> str | None:
    """The path of GNU ``cp`` if it is on PATH and knows ``--reflink`` (probed once a process)."""
    cp = shutil.which("cp")
    if cp is None:
        return None
    try:
        probe = subprocess.run(
            [cp, "--reflink=auto", "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=30,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return cp if probe.returncode == 0 and "GNU coreutils" in probe.stdout else None


def _copy_with_cp(cp: str, source: Path, target: Path) -> None:
    """``cp -a`` the contents of ``source`` into the existing directory ``target``."""
    # Absolute operands after ``--``: names starting with a dash stay names.
    # ``--remove-destination``: an entry already in the target is replaced, never written through.
    argv = ["cp", "-a", "--reflink=auto", "--remove-destination", "--"]
    argv += [os.path.join(os.path.abspath(source), "."), os.path.abspath(target)]
    try:
        proc = subprocess.run(
            argv, executable=cp, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
    except OSError as exc:
        raise CopyError(source, target, f"cannot run {cp}: {exc.strerror or exc}") from exc
    if proc.returncode != 0:
        raise CopyError(source, target, _summary(proc.stderr.decode(errors="replace"), proc.returncode))


def _summary(stderr: str, returncode: int) -> str:
    """cp's complaints, trimmed to a few lines, each to its start and end: a path near the
    system's limit (4096 bytes) would push out of sight the reason after it."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if not lines:
        return f"cp exited with status {returncode}"
    half = MAX_LINE_CHARS // 2
    lines = [line if len(line) <= MAX_LINE_CHARS else line[:half] + CUT + line[-half:] for line in lines]
    text = "\n".join(lines[:MAX_ERROR_LINES])
    text = keep_start(text, MAX_ERROR_CHARS)
    if len(lines) > MAX_ERROR_LINES:
        text += f"\n… and {len(lines) - MAX_ERROR_LINES} more lines"
    return text


def _copy_tree_python(source: Path, target: Path, ignore: Sequence[str] = ()) -> None:
    """:func:`copy_tree` walked in Python (without ``cp``; ``target`` need not exist): the same
    result, except that hardlinks within ``source`` become separate files and, running as root,
    owners are not kept. Stops at the first error."""
    skip = shutil.ignore_patterns(*ignore) if ignore else None
    src, dst = os.fspath(source), os.fspath(target)
    try:
        _make_dir(dst, top=True)
        _copy_dir(src, dst, skip)
    except OSError as exc:
        raise CopyError(source, target, _describe(exc)) from exc


def _copy_dir(src: str, dst: str, skip: Callable[[str, list[str]], set[str]] | None) -> None:
    with os.scandir(src) as scan:
        entries = list(scan)
    ignored = skip(src, [entry.name for entry in entries]) if skip else set()
    for entry in entries:
        if entry.name in ignored:
            continue
        target = os.path.join(dst, entry.name)
        if entry.is_dir(follow_symlinks=False):
            _make_dir(target)
            _copy_dir(entry.path, target, skip)
        else:
            _remove_non_dir(target, entry.path)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
                shutil.copystat(entry.path, target, follow_symlinks=False)
            else:
                shutil.copy2(entry.path, target)
    # After the contents: a read-only directory's mode and every directory's times hold.
    shutil.copystat(src, dst)


def _make_dir(path: str, top: bool = False) -> None:
    """Create directory ``path`` unless it is one (a symlink to one does not count below the top)."""
    try:
        os.mkdir(path)
    except FileExistsError:
        mode = os.stat(path).st_mode if top else os.lstat(path).st_mode
        if not stat.S_ISDIR(mode):
            raise FileExistsError(
                errno.EEXIST, "cannot overwrite non-directory with directory", path
            ) from None
    except FileNotFoundError:
        if not top:
            raise
        os.makedirs(path, exist_ok=True)


def _remove_non_dir(path: str, source: str) -> None:
    """Make way for a file or symlink at ``path``: remove what is there unless it is a directory."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except (IsADirectoryError, PermissionError):
        if not stat.S_ISDIR(os.lstat(path).st_mode):
            raise
        raise IsADirectoryError(
            errno.EISDIR, f"cannot overwrite directory with non-directory {source}", path
        ) from None


def _describe(exc: OSError) -> str:
    """An OSError as ``reason: path``."""
    reason = exc.strerror or str(exc)
    if isinstance(exc, shutil.SpecialFileError):
        reason = str(exc)
    elif exc.filename is not None:
        reason += f": {exc.filename}"
    return reason


def copy_template(source: Path, target: Path, ignore: Sequence[str] = ()) -> None:
    """:func:`copy_tree` of a template, then every absolute symlink that points into the template
    is re-pointed (relatively) into the copy, so that writing through it never reaches the template."""
    copy_tree(source, target, ignore)
    try:
        for location, relative in _links_into(os.path.realpath(source), os.fspath(source)):
            link = os.path.join(target, location)
            if os.path.islink(link):
                os.unlink(link)
                os.symlink(relative, link)
    except OSError as exc:
        raise CopyError(source, target, f"cannot re-point a symlink: {_describe(exc)}") from exc


@functools.lru_cache(maxsize=256)
def _links_into(real_source: str, source: str) -> tuple[tuple[str, str], ...]:
    """The absolute symlinks of a template that point into it: (their path, the relative target
    that means the same inside a copy). Templates are only read, so once a process suffices."""
    found = []
    roots = {real_source, os.path.normpath(os.path.abspath(source))}
    for folder, dirs, files in os.walk(source):
        for name in (*dirs, *files):
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                continue
            pointed = os.readlink(path)
            if not os.path.isabs(pointed):
                continue
            pointed = os.path.normpath(pointed)
            root = next((r for r in roots if os.path.commonpath([r, pointed]) == r), None)
            if root is None:
                continue
            location = os.path.relpath(path, source)
            inside = os.path.join(real_source, os.path.relpath(pointed, root))
            relative = os.path.relpath(inside, os.path.join(real_source, os.path.dirname(location)))
            found.append((location, relative))
    return tuple(found)


def remove_tree(path: Path) -> None:
    """Remove ``path`` and everything below it, best effort: read-only or unreadable folders left
    in it (as an agent or its tools may leave them) are opened up first; a path already gone is fine."""
    try:
        shutil.rmtree(path)
        return
    except FileNotFoundError:
        return
    except OSError:
        pass
    with contextlib.suppress(OSError):
        os.chmod(path, stat.S_IRWXU)
    for folder, dirs, _ in os.walk(path):  # top-down: each folder is opened before it is listed
        for name in dirs:
            child = os.path.join(folder, name)
            if not os.path.islink(child):  # never follow a link out of the tree
                with contextlib.suppress(OSError):
                    os.chmod(child, stat.S_IRWXU)
    shutil.rmtree(path, ignore_errors=True)
