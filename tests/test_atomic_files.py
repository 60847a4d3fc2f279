"""Files written whole or not at all (``atomic_files``), with the mode the umask gives any file the
user writes, the umask read once per process and never changed where /proc tells it."""

from __future__ import annotations

import os
import re
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_vibeeval import atomic_files

# Writes two files under umask 027 with os.umask refused: the process's umask, read without it.
UNCHANGED_UMASK = """
import os, sys
from pathlib import Path

os.umask(0o027)


def refused(mask):
    raise AssertionError(f"os.umask({mask:o}) called: the umask changed for every thread meanwhile")


os.umask = refused
from pytest_vibeeval.atomic_files import write_atomic

for name in ("a.json", "b.json"):
    write_atomic(Path(sys.argv[1]) / name, "{}")
"""


def file_modes(folder: Path) -> set[int]:
    return {path.stat().st_mode & 0o777 for path in folder.iterdir()}


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="no /proc/self/status to read it from")
def test_the_files_get_the_umasks_mode_and_the_umask_is_never_changed(tmp_path: Path) -> None:
    """Every file written (each cached or recorded answer too) got its mode from setting the umask
    and setting it back, process-wide state another thread could see changed; it is read instead."""
    done = subprocess.run(
        [sys.executable, "-c", UNCHANGED_UMASK, str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert file_modes(tmp_path) == {0o640}


@pytest.fixture
def umask_027() -> Iterator[None]:
    """The process's umask 027 (a file written is 0640, not the usual 0644), read afresh."""
    old = os.umask(0o027)
    atomic_files._umask.cache_clear()
    yield
    os.umask(old)
    atomic_files._umask.cache_clear()


@pytest.mark.usefixtures("umask_027")
def test_without_proc_the_umask_is_set_and_set_back_once_per_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where there is no /proc the umask is set and set back, but once, not for every file."""
    calls = []
    umask = os.umask

    def counted(mask: int) -> int:
        calls.append(mask)
        return umask(mask)

    monkeypatch.setattr(atomic_files, "_PROC_STATUS", tmp_path / "no-proc" / "status")
    monkeypatch.setattr(os, "umask", counted)
    folder = tmp_path / "out"
    for name in ("a.json", "b.json", "c.json"):
        atomic_files.write_atomic(folder / name, "{}")
    assert len(calls) == 2
    assert file_modes(folder) == {0o640}


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[tuple[Path, int]]:
    """A FIFO in ``tmp_path`` and a descriptor reading it, held open so that a writer never waits
    (opened read-write and non-blocking: the open itself waits for nobody)."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    reader = os.open(path, os.O_RDWR | os.O_NONBLOCK)
    yield path, reader
    os.close(reader)


def unread(reader: int) -> bytes:
    """What is waiting in the pipe ``reader`` reads (b"": nothing)."""
    try:
        return os.read(reader, 1 << 16)
    except BlockingIOError:
        return b""


def test_a_fifo_at_a_cache_entry_is_replaced_not_written_into(fifo: tuple[Path, int]) -> None:
    """The cache, record stores, latest.json and outputs always replace what is at the path: a FIFO
    planted at a cache entry (by anyone who can write in a shared cache) had the answer written into
    it, which waits forever for a reader, stalling every session that asked that prompt."""
    path, reader = fifo
    atomic_files.write_atomic(path, '{"answer": 1}\n')
    assert stat.S_ISREG(path.lstat().st_mode)
    assert path.read_text() == '{"answer": 1}\n'
    assert unread(reader) == b""


def test_a_link_at_a_cache_entry_is_replaced_not_followed(tmp_path: Path, fifo: tuple[Path, int]) -> None:
    target, reader = fifo
    entry = tmp_path / "entry.json"
    entry.symlink_to(target)
    atomic_files.write_atomic(entry, "{}")
    assert not entry.is_symlink() and entry.read_text() == "{}"
    assert stat.S_ISFIFO(target.lstat().st_mode) and unread(reader) == b""


def test_a_user_named_fifo_or_a_link_to_one_is_written_into_and_left_in_place(
    tmp_path: Path, fifo: tuple[Path, int]
) -> None:
    """--vibe-results naming a FIFO, or a link to one (/dev/stdout is a link to /proc/self/fd/1): the
    link was replaced by a file (as root, the machine's /dev/stdout), the output lost."""
    path, reader = fifo
    atomic_files.write_atomic(path, ["{", "}\n"], into_special=True)
    assert stat.S_ISFIFO(path.lstat().st_mode) and unread(reader) == b"{}\n"
    link = tmp_path / "stdout"
    link.symlink_to(path)
    atomic_files.write_atomic(link, "[]\n", into_special=True)
    assert os.readlink(link) == str(path) and unread(reader) == b"[]\n"


def test_a_user_named_link_to_a_descriptors_pipe_is_written_into(tmp_path: Path) -> None:
    """As ``/dev/stdout | jq``: a link to /proc/self/fd/N, N a pipe's writing end."""
    if not Path(f"/proc/{os.getpid()}/fd").is_dir():
        pytest.skip("no /proc/PID/fd")
    read_end, write_end = os.pipe()
    try:
        os.set_blocking(read_end, False)
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{write_end}")
        atomic_files.write_atomic(link, "{}\n", into_special=True)
        assert link.is_symlink() and os.read(read_end, 100) == b"{}\n"
    finally:
        os.close(read_end)
        os.close(write_end)


def test_a_user_named_link_to_a_file_is_replaced(tmp_path: Path) -> None:
    """Only a device or a pipe is written through: a link to a file is replaced, as ever."""
    target = tmp_path / "target.json"
    target.write_text("old")
    link = tmp_path / "r.json"
    link.symlink_to(target)
    atomic_files.write_atomic(link, "new", into_special=True)
    assert not link.is_symlink() and link.read_text() == "new" and target.read_text() == "old"


def test_a_user_named_socket_is_refused_and_left_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A UNIX socket cannot be opened to write to (ENXIO): refused, saying what it is, and kept."""
    path = tmp_path / "s"
    monkeypatch.chdir(tmp_path)  # a full path may be too long to bind
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind("s")
        link = tmp_path / "link"
        link.symlink_to(path)
        with pytest.raises(OSError, match=f"{re.escape(str(path))} is a socket: name a file$"):
            atomic_files.write_atomic(path, "{}", into_special=True)
        with pytest.raises(OSError, match=f"{re.escape(str(link))} links to a socket: name a file$"):
            atomic_files.write_atomic(link, "{}", into_special=True)
        assert stat.S_ISSOCK(path.lstat().st_mode) and link.is_symlink()
        atomic_files.write_atomic(path, "{}")  # where nobody named it: replaced
        assert path.read_text() == "{}"


def block_device(tmp_path: Path) -> Path:
    """A block device node in ``tmp_path`` (a loop device's numbers), or a skip where mknod is not
    permitted. Only ever checked and refused: nothing may open it."""
    path = tmp_path / "blk"
    try:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a block device node: {exc}")
    return path


def test_a_user_named_block_device_is_refused_before_anything_opens_it(tmp_path: Path) -> None:
    """--vibe-results /dev/sda, as root, would have overwritten the disk."""
    path = block_device(tmp_path)
    # Checked first, so that a write_atomic that would open it is never called.
    assert atomic_files.special_mode(path) is not None
    assert not atomic_files.written_through(os.stat(path).st_mode)
    with pytest.raises(OSError, match=r"is a block device: name a file$"):
        atomic_files.write_atomic(path, "{}", into_special=True)
    assert stat.S_ISBLK(path.lstat().st_mode)


def test_a_user_named_link_to_a_descriptors_file_is_refused_not_replaced(tmp_path: Path) -> None:
    """``--vibe-results /dev/stdout > out.json``: /dev/stdout leads to a file through the
    descriptor's link, and replacing the link (as root: the machine's /dev/stdout) is never meant.
    Refused before the run, naming the file to give instead; the link and the file are left alone."""
    from pytest_vibeeval.report.resultsfile import unwritable_reason

    if not Path(f"/proc/{os.getpid()}/fd").is_dir():
        pytest.skip("no /proc/PID/fd")
    out = tmp_path / "out.json"
    with out.open("w") as handle:
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/self/fd/{handle.fileno()}")
        expected = f"{link} leads to the file {out} through a process's descriptor: name that file"
        assert unwritable_reason(link, into_special=True) == expected
        with pytest.raises(OSError, match=re.escape(expected)):
            atomic_files.write_atomic(link, "{}", into_special=True)
        assert link.is_symlink() and out.read_text() == ""
        assert unwritable_reason(link) is None  # where the plugin names the path: replaced


def test_new_files_of_one_stem_are_numbered_in_the_order_written() -> None:
    """``<stem>.json``, then ``<stem>-2.json``, …: the names :func:`written_order` sorts back into
    the order they were made (as text ``-10`` comes before ``-2`` and ``.json``)."""
    names = atomic_files.numbered_names("20260101T000000Z", ".json")
    made = [next(names) for _ in range(11)]
    assert made[:3] == ["20260101T000000Z.json", "20260101T000000Z-2.json", "20260101T000000Z-3.json"]
    assert made[-1] == "20260101T000000Z-11.json"
    assert sorted(reversed(made), key=atomic_files.written_order) == made


@pytest.mark.parametrize("hard_links", [True, False], ids=["hard-links", "no-hard-links"])
def test_write_new_never_writes_over_a_file_of_its_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hard_links: bool
) -> None:
    """A name taken (by another session) is passed over for the next one, also on a file system
    without hard links, where the name is checked before the file is renamed to it."""
    if not hard_links:

        def no_link(source: object, target: object) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(atomic_files.os, "link", no_link)
    (tmp_path / "s.json").write_text("theirs")
    (tmp_path / "s-3.json").write_text("theirs too")
    made = [atomic_files.write_new(tmp_path, "s", f"ours {n}") for n in range(2)]
    assert [path.name for path in made] == ["s-2.json", "s-4.json"]
    assert [path.read_text() for path in made] == ["ours 0", "ours 1"]
    assert (tmp_path / "s.json").read_text() == "theirs" and (
        tmp_path / "s-3.json"
    ).read_text() == "theirs too"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["s-2.json", "s-3.json", "s-4.json", "s.json"]
