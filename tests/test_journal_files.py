"""The journal's files (``journal.py``): each session its own name, and the lock that tells a
journal a running session writes from one a session that ended (or died) left."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_vibeeval import journal as journal_module
from pytest_vibeeval.journal import Journal, is_running, remove_finished

STAMP = "20260101T000000Z"
RECORD = json.dumps({"name": "e", "outcome": "passed"})

# Holds an exclusive lock on the file argv[1] until its stdin closes, as a running session does.
HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.read()
"""


def open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_sessions_of_one_second_each_write_their_own_journal(tmp_path: Path) -> None:
    """Journals of sessions started in the same second are ``<stamp>.journal.jsonl``,
    ``<stamp>-2.journal.jsonl``, …, never a file that is there already (one planted is left
    alone)."""
    planted = tmp_path / f"{STAMP}-2.journal.jsonl"
    planted.write_text("not ours\n")
    journals = [Journal(tmp_path, STAMP, []) for _ in range(3)]
    for number, journal in enumerate(journals):
        journal.add("s.eval.yaml", "d", "c", json.dumps({"name": f"e{number}", "outcome": "passed"}))
        journal.flush()
    assert [j.path.name if j.path else None for j in journals] == [
        f"{STAMP}.journal.jsonl",
        f"{STAMP}-3.journal.jsonl",
        f"{STAMP}-4.journal.jsonl",
    ]
    for number, journal in enumerate(journals):
        journal.close(remove=False)
        assert journal.path is not None and journal.problem is None
        lines = journal.path.read_text().splitlines()
        assert json.loads(lines[1])["record"]["name"] == f"e{number}"
    assert planted.read_text() == "not ours\n"


@pytest.fixture
def held(tmp_path: Path) -> Iterator[Path]:
    """A journal whose lock another process (a running session) holds until the test ends."""
    path = tmp_path / f"{STAMP}.journal.jsonl"
    path.write_text('{"journal": 1, "resumed_from": []}\n')
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        yield path
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)


def test_a_journal_another_process_holds_is_running_and_stays(held: Path) -> None:
    before = open_descriptors()
    assert is_running(held) is True
    assert remove_finished(held) is False and held.is_file()
    assert open_descriptors() == before


@pytest.mark.parametrize("locks", [True, False], ids=["locks", "no-locks"])
def test_a_journal_nobody_holds_is_free_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locks: bool
) -> None:
    """Also where flock fails (ENOLCK: some network file systems): the session that wrote the
    journal could not lock it either, so it is taken as free."""
    if not locks:

        def no_locks(fd: int, how: int) -> None:
            raise OSError(errno.ENOLCK, "No locks available")

        monkeypatch.setattr(journal_module.fcntl, "flock", no_locks)
    path = tmp_path / f"{STAMP}.journal.jsonl"
    path.write_text("")
    before = open_descriptors()
    assert is_running(path) is False
    assert remove_finished(path) is True and not path.exists()
    assert open_descriptors() == before


@pytest.mark.parametrize("kind", ["fifo", "folder", "missing"])
def test_what_is_no_regular_file_is_never_taken_for_a_journal_to_remove(tmp_path: Path, kind: str) -> None:
    """A FIFO (opened without waiting for a writer), a folder or nothing at a journal's name is
    neither free nor removed."""
    path = tmp_path / f"{STAMP}.journal.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    before = open_descriptors()
    assert is_running(path) is True
    assert remove_finished(path) is False
    assert os.path.lexists(path) is (kind != "missing")
    assert open_descriptors() == before


BOTH = [f"{STAMP}-2.journal.jsonl", f"{STAMP}.journal.jsonl"]


def test_a_journal_is_locked_before_its_name_can_be_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another session's scan (the journals left, ``--vibe-resume`` alone, the removal of a resumed
    one) never sees a running session's journal unlocked: it is made and locked under a name no scan
    matches, then linked to its own."""
    seen: list[tuple[bool, list[str]]] = []
    link = os.link

    def checked_link(source: str | Path, target: str | Path) -> None:
        journals = [p.name for p in tmp_path.glob("*.journal.jsonl")]
        seen.append((is_running(Path(source)), journals))
        link(source, target)

    monkeypatch.setattr(journal_module.os, "link", checked_link)
    journals = [Journal(tmp_path, STAMP, []) for _ in range(2)]
    for journal in journals:
        journal.add("s.eval.yaml", "d", "c", RECORD)
        journal.flush()
    first = [f"{STAMP}.journal.jsonl"]
    assert seen == [(True, []), (True, first), (True, first)]  # the second tries the first's name too
    assert sorted(p.name for p in tmp_path.iterdir()) == BOTH
    for journal in journals:
        assert journal.path is not None and is_running(journal.path)
        journal.close(remove=False)
        assert not is_running(journal.path)


def test_without_hard_links_the_journal_is_made_in_place_and_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_links(source: str | Path, target: str | Path) -> None:
        raise OSError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(journal_module.os, "link", no_links)
    (tmp_path / f"{STAMP}.journal.jsonl").write_text("not ours\n")
    journal = Journal(tmp_path, STAMP, [])
    journal.add("s.eval.yaml", "d", "c", RECORD)
    journal.flush()
    assert journal.problem is None and journal.path == tmp_path / f"{STAMP}-2.journal.jsonl"
    assert sorted(p.name for p in tmp_path.iterdir()) == BOTH
    assert is_running(journal.path)
    journal.close(remove=False)
    assert json.loads(journal.path.read_text().splitlines()[1])["record"]["name"] == "e"


def test_a_journal_removed_while_it_is_looked_at_is_not_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session that ends removes its journal, then lets go of its lock: a scan that opened the
    journal just before and locks it just after finds it gone, not left by a killed session."""
    journal = Journal(tmp_path, STAMP, [])
    journal.add("s.eval.yaml", "d", "c", RECORD)
    journal.flush()
    assert journal.path is not None
    flock = journal_module.fcntl.flock

    def session_ends_first(fd: int, how: int) -> None:
        journal.close(remove=True)
        flock(fd, how)

    monkeypatch.setattr(journal_module.fcntl, "flock", session_ends_first)
    assert is_running(journal.path) is True
    assert journal_module.left_journals(tmp_path, set()) == []
    assert remove_finished(journal.path) is False
