"""The session's journal: a session killed hard (SIGKILL) leaves its finished evals in
``.vibeeval/results/<timestamp>.journal.jsonl``, and ``--vibe-resume`` reuses them, running only
what did not finish (counted by the agent itself); a damaged journal is notes, not a traceback."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, run, wait_gone, write

from pytest_vibeeval.reaping import MARKER
from pytest_vibeeval.results import EvalRecord

# Logs each call's prompt: in calls.log, or in killed.log for an agent of the session a file "kill"
# marks (its processes' pids are in killed/, and the plugin names the process that started an agent
# in its environment, as pid:start time). That session's third call (and any later one) waits
# until its journal holds two records, then SIGKILLs its controller. Its workers are killed then,
# but an agent one of them started just before, slow to start under load, may log its call later:
# never in calls.log, the calls of the sessions after it, nor killing another session's controller.
AGENT = f"""
import fcntl, os, pathlib, signal, sys, time
here = pathlib.Path(sys.argv[1])
prompt = sys.stdin.read()
killed = here / "killed"
starter = os.environ.get("{MARKER}", "").partition(":")[0]  # "pid:start time"
of_killed = starter in {{p.read_text() for p in killed.glob("*.pid")}}
with open(here / ("killed.log" if of_killed else "calls.log"), "a") as log:
    fcntl.flock(log, fcntl.LOCK_EX)
    log.write(prompt + "\\n")
    log.flush()
    calls = len(pathlib.Path(log.name).read_text().splitlines())
if of_killed and calls >= 3:
    folder = here / ".vibeeval" / "results"
    def journaled():
        return sum(len(p.read_bytes().splitlines()) - 1 for p in folder.glob("*.journal.jsonl"))
    deadline = time.monotonic() + 10  # the journal writes within a second; without one, kill anyway
    while journaled() < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        os.kill(int((killed / "controller.pid").read_text()), signal.SIGKILL)
    except ProcessLookupError:
        pass
print(prompt)
"""

# Every process of the session to be killed records its pid: the controller's is what the agent
# kills, the workers' what the test kills after it. (By workerinput: PYTEST_XDIST_WORKER is
# inherited when these tests themselves run under xdist.)
CONFTEST = """
import os, pathlib
def pytest_configure(config):
    here = pathlib.Path(__file__).parent
    if not (here / "kill").exists():
        return
    worker = getattr(config, "workerinput", {}).get("workerid")
    name = f"worker-{worker}.pid" if worker else "controller.pid"
    (here / "killed").mkdir(exist_ok=True)
    (here / "killed" / name).write_text(str(os.getpid()))
"""

EVALS = ("one", "two", "three", "four")


def make_suite(pytester: pytest.Pytester, pattern: str = "*") -> None:
    agent = write(pytester.path / "agent.py", AGENT)
    write(pytester.path / "conftest.py", CONFTEST)
    rows = "\n".join(
        f'  - {{name: {name}, prompt: {name}, checks: [{{match: "{pattern}"}}]}}' for name in EVALS
    )
    write(
        pytester.path / "j.eval.yaml",
        f"metadata: {{name: j, model: m}}\n"
        f'configurations:\n  agent: {{cli: "{PYTHON}", args: ["{agent}", "{pytester.path}"]}}\n'
        f"evals:\n{rows}\n",
    )


def calls(pytester: pytest.Pytester) -> list[str]:
    """The prompts the agent was called with since the last look (the log is emptied)."""
    log = pytester.path / "calls.log"
    lines = sorted(log.read_text().splitlines()) if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def results_folder(pytester: pytest.Pytester) -> Path:
    return pytester.path / ".vibeeval" / "results"


def killed_session(pytester: pytest.Pytester, xdist: list[str]) -> tuple[Path, set[str]]:
    """Run the suite until the agent SIGKILLs the controller; the journal it left (a path in the
    results folder even where none was left) and the evals whose records it holds. At least three
    calls were made (the third killed it)."""
    (pytester.path / "kill").write_text("")
    result = run(pytester, "-p", "no:randomly", *xdist, subprocess=True)
    assert result.ret == -signal.SIGKILL, result.stdout.str()
    assert len((pytester.path / "killed.log").read_text().splitlines()) >= 3
    for pid_file in pytester.path.glob("killed/worker-*.pid"):  # orphaned workers: end them too
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            continue
        assert wait_gone(pid)
    (pytester.path / "kill").unlink()
    folder = results_folder(pytester)
    assert not list(folder.glob("*.json")), "a killed session writes no results file"
    journals = list(folder.glob("*.journal.jsonl"))
    assert len(journals) <= 1
    journal = journals[0] if journals else folder / "(none).journal.jsonl"
    lines = journal.read_text().splitlines()[1:] if journals else []
    return journal, {json.loads(line)["record"]["name"] for line in lines}


@XDIST_MODES
def test_resume_after_sigkill_runs_only_unfinished(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    journal, finished = killed_session(pytester, xdist)
    assert calls(pytester) == []  # the killed session's calls are in killed.log

    result = run(pytester, "-p", "no:randomly", "--vibe-resume", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert len(finished) >= 2, "the evals that finished before the kill are in the journal"
    assert calls(pytester) == sorted(set(EVALS) - finished)  # the finished (paid) ones are not asked again
    shown = journal.relative_to(pytester.path).as_posix()
    output = result.stdout.str()
    assert f"Resumed: {len(finished)} eval(s) reused from {shown}" in output
    assert f"{shown} is the journal of a session that did not finish" in output
    assert not journal.exists(), "the resumed journal is removed once the results are written"
    assert not list(results_folder(pytester).glob("*.journal.jsonl"))
    (written,) = (p for p in results_folder(pytester).glob("*.json") if p.name != "latest.json")
    data = json.loads(written.read_text())
    assert data["resumed_from"] == []  # the journal is gone: its records are in this file
    reused = {r["name"] for run in data["runs"] for r in run["evals"] if r.get("reused_from") == shown}
    assert reused == finished


@XDIST_MODES
def test_a_subset_resumed_from_a_journal_keeps_it(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    journal, finished = killed_session(pytester, xdist)
    unfinished = sorted(set(EVALS) - finished)
    # Resume only the first unfinished eval: the journal's evals are not this session's, so it stays.
    result = run(pytester, "-p", "no:randomly", "--vibe-resume", "-k", unfinished[0], *xdist)
    assert result.ret == 0, result.stdout.str()
    assert calls(pytester) == unfinished[:1]
    assert journal.exists()
    shown = journal.relative_to(pytester.path).as_posix()
    assert json.loads((results_folder(pytester) / "latest.json").read_text())["resumed_from"] == [shown]
    # A plain resume reads that session's results and, through them, the journal: only the rest runs.
    result = run(pytester, "-p", "no:randomly", "--vibe-resume", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert calls(pytester) == unfinished[1:]
    assert not journal.exists(), "every eval it held is in this session's results now"


@XDIST_MODES
def test_edited_suite_reuses_nothing_from_the_journal(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    _, finished = killed_session(pytester, xdist)
    assert len(finished) >= 2
    make_suite(pytester, pattern="**")  # same evals, other checks: another input digest
    result = run(pytester, "-p", "no:randomly", "--vibe-resume", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert calls(pytester) == sorted(EVALS)
    assert "Resumed: 0 eval(s) reused" in result.stdout.str()


@XDIST_MODES
def test_a_finished_session_leaves_no_journal(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    result = run(pytester, *xdist)
    assert result.ret == 0, result.stdout.str()
    assert calls(pytester) == sorted(EVALS)
    folder = results_folder(pytester)
    assert [p.name for p in folder.iterdir() if p.name.endswith(".journal.jsonl")] == []
    assert (folder / "latest.json").is_file()


def journal_line(name: str, outcome: str = "passed") -> str:
    record = EvalRecord(name=name, nodeid=f"s.eval.yaml::{name}[c]", outcome=outcome).model_dump_json(
        exclude_defaults=True
    )
    return json.dumps(
        {"source": "s.eval.yaml", "input_digest": "d", "configuration": "c", "record": json.loads(record)}
    )


def test_torn_last_line_and_damaged_lines_are_notes(tmp_path: Path) -> None:
    from pytest_vibeeval.resume import load_journal  # here: the other tests show the defect without it

    path = tmp_path / "x.journal.jsonl"
    lines = ['{"journal": 1, "resumed_from": []}', journal_line("a"), "{not json", journal_line("b", "error")]
    path.write_text("\n".join(lines) + "\n" + journal_line("c")[:20])
    index = load_journal(path, "x.journal.jsonl", tmp_path.joinpath)
    assert sorted(key[3] for key in index.records) == ["a"]  # b errored, c was cut short
    assert index.records[("s.eval.yaml", "d", "c", "a", 0)].reused_from == "x.journal.jsonl"
    notes = "\n".join(index.notes)
    assert "x.journal.jsonl:3: damaged line skipped" in notes
    assert "x.journal.jsonl:5: ignored its last line, cut short" in notes


@XDIST_MODES
def test_resume_tolerates_a_torn_last_journal_line(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    journal, _ = killed_session(pytester, xdist)
    lines = journal.read_text().splitlines()
    torn = lines.pop()  # the last record, as a kill mid-write leaves it
    journal.write_text("\n".join(lines) + "\n" + torn[: len(torn) // 2])
    finished = {json.loads(line)["record"]["name"] for line in lines[1:]}

    result = run(pytester, "-p", "no:randomly", "--vibe-resume", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert calls(pytester) == sorted(set(EVALS) - finished)
    shown = journal.relative_to(pytester.path).as_posix()
    assert (
        f"note: --vibe-resume: {shown}:{len(lines) + 1}: ignored its last line, cut short"
        in result.stdout.str()
    )


@XDIST_MODES
@pytest.mark.parametrize("spelling", ["dotdot", "link"])
def test_a_journal_resumed_under_another_spelling_is_not_named_as_left(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str], spelling: str
) -> None:
    """A journal named through ``..`` (from a subfolder) or a link is the one the session resumed
    from, not one a killed session left for nobody (whose note says to delete it)."""
    make_suite(pytester)
    write(pytester.path / "pytest.ini", "[pytest]\n")
    folder = results_folder(pytester)
    folder.mkdir(parents=True)
    header = '{"journal": 1, "resumed_from": []}'
    (folder / "20260101T000000Z.journal.jsonl").write_text(f"{header}\n{journal_line('x')}\n")
    (pytester.path / "results-link").symlink_to(folder)
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    named = "../.vibeeval/results" if spelling == "dotdot" else "../results-link"
    result = run(
        pytester, f"--vibe-resume={named}/20260101T000000Z.journal.jsonl", "-k", "one", "..", xdist=xdist
    )
    output = result.stdout.str()
    assert result.ret == 0, output
    assert "is the journal of a session that did not finish" in output
    assert "holds the finished evals of a session that did not finish" not in output


def test_records_beyond_a_chunk_are_all_written(tmp_path: Path) -> None:
    """More than a chunk's worth of records at once (thousands of quick evals in a second) is
    written at once, and the next records after it too: the buffer is emptied after each write."""
    from pytest_vibeeval.journal import CHUNK, Journal

    journal = Journal(tmp_path, "20260101T000000Z", ["earlier.json"])
    record = json.dumps({"name": "e", "outcome": "passed", "response": "x" * 1000})
    count = 3 * CHUNK // len(record)
    for _ in range(count):
        journal.add("s.eval.yaml", "digest", "c", record)
    journal.close(remove=False)
    assert journal.path is not None and journal.problem is None
    lines = journal.path.read_text().splitlines()
    assert json.loads(lines[0]) == {"journal": 1, "resumed_from": ["earlier.json"]}
    assert len(lines) == count + 1
    assert all(json.loads(line)["record"]["response"] == "x" * 1000 for line in lines[1:])


def test_each_run_s_line_start_is_made_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line's source, digest and configuration are the same for every item of a run: they are
    turned into JSON once per run, not once per record, and each line reads as before."""
    from pytest_vibeeval import journal as journal_module

    dumped: list[object] = []
    real_dumps = json.dumps

    def counting(value: object, **options: object) -> str:
        dumped.append(value)
        return real_dumps(value, **options)  # type: ignore[arg-type]

    journal = journal_module.Journal(tmp_path, "20260101T000000Z", [])
    monkeypatch.setattr(journal_module.json, "dumps", counting)
    runs = [("s.eval.yaml", "d1", "c"), ('a "q"\u00e9.eval.yaml', "d2", "c\u2028")]
    for index in range(4):
        for source, digest, configuration in runs:
            journal.add(source, digest, configuration, f'{{"name":"e{index}"}}')
    journal.close(remove=False)
    assert len(dumped) == 3 * len(runs)
    assert journal.path is not None
    lines = [json.loads(line) for line in journal.path.read_text().splitlines()[1:]]
    assert lines == [
        {"source": source, "input_digest": digest, "configuration": configuration, "record": {"name": name}}
        for name in ("e0", "e1", "e2", "e3")
        for source, digest, configuration in runs
    ]


def test_the_journal_of_a_running_session_is_neither_resumed_nor_removed(tmp_path: Path) -> None:
    """A session holds its journal's lock while it runs: another session's `--vibe-resume` does
    not take its records as those of a session that did not finish, nor delete the journal; once
    it ends (or dies: the lock goes with the process) the journal is free."""
    from pytest_vibeeval.journal import Journal, newest_journal, remove_finished

    journal = Journal(tmp_path, "20260101T000000Z", [])
    journal.add("s.eval.yaml", "digest", "c", json.dumps({"name": "e", "outcome": "passed"}))
    journal.flush()
    assert journal.path is not None and journal.path.is_file()
    assert newest_journal(tmp_path, None) is None
    assert remove_finished(journal.path) is False and journal.path.is_file()
    journal.close(remove=False)
    assert newest_journal(tmp_path, None) == journal.path
    assert remove_finished(journal.path) is True and not journal.path.exists()


@pytest.mark.timeout(60)
def test_a_fifo_named_as_a_journal_is_an_error_not_a_hang(tmp_path: Path) -> None:
    """Only a regular file is read as a journal: a FIFO in its place (nobody writes to it) would
    block the session for ever."""
    from pytest_vibeeval.report.baseline import BaselineError
    from pytest_vibeeval.resume import load_journal

    fifo = tmp_path / "20260101T000000Z.journal.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(BaselineError, match="not a regular file but a FIFO"):
        load_journal(fifo, fifo.name, tmp_path.joinpath)


@XDIST_MODES
def test_a_journal_no_resume_took_is_named_with_what_to_do(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A killed session's journal, and a plain session after it (no --vibe-resume): its summary
    names the journal left in the results folder, how to reuse it and that it can be deleted, for
    as long as it is there; a resume naming it takes it, and the note is gone."""
    make_suite(pytester)
    journal, finished = killed_session(pytester, xdist)
    assert len(finished) >= 2
    shown = journal.relative_to(pytester.path).as_posix()
    note = (
        f"note: {shown} holds the finished evals of a session that did not finish (killed before it "
        f"wrote its results): reuse them with --vibe-resume {shown}, or delete the file"
    )
    for _ in range(2):  # the results of a plain session are newer: `--vibe-resume` alone no longer takes it
        result = run(pytester, "-p", "no:randomly", *xdist)
        assert result.ret == 0, result.stdout.str()
        assert note in result.stdout.str().splitlines()
        assert journal.exists()
    calls(pytester)
    result = run(pytester, "-p", "no:randomly", "--vibe-resume", shown, *xdist)
    assert result.ret == 0, result.stdout.str()
    assert calls(pytester) == sorted(set(EVALS) - finished)
    assert not journal.exists()
    assert "holds the finished evals" not in result.stdout.str()


def test_left_journals_are_those_of_sessions_not_running(tmp_path: Path) -> None:
    """The journals named as left: not a running session's (it holds the lock), not one skipped,
    newest first, and the note names at most three of them."""
    from pytest_vibeeval.journal import Journal, left_journals, left_note

    old, new = tmp_path / "20260101T000000Z.journal.jsonl", tmp_path / "20260102T000000Z.journal.jsonl"
    for path, mtime in ((old, 1_000_000), (new, 2_000_000)):
        path.write_text('{"journal": 1, "resumed_from": []}\n')
        os.utime(path, (mtime, mtime))
    running = Journal(tmp_path, "20260103T000000Z", [])
    running.add("s.eval.yaml", "digest", "c", json.dumps({"name": "e", "outcome": "passed"}))
    running.flush()
    (tmp_path / "20260104T000000Z.json").write_text("{}")
    assert left_journals(tmp_path, set()) == [new, old]
    assert left_journals(tmp_path, {new}) == [old]
    running.close(remove=True)
    names = [f"j{i}.journal.jsonl" for i in range(5)]
    assert left_note(names).startswith(
        "5 journals hold the finished evals of sessions that did not finish (killed before they wrote "
        "their results): j0.journal.jsonl, j1.journal.jsonl, j2.journal.jsonl and 2 more; reuse one's "
        "with --vibe-resume <journal>, or delete them"
    )


@XDIST_MODES
def test_the_hidden_file_of_a_journal_never_named_goes(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A session killed between making its journal's hidden file and naming it leaves that file: a
    later session's end deletes it, unless a running session locks it or it is newer than that
    session (its maker may be about to lock it); other hidden files stay."""
    import fcntl

    make_suite(pytester)
    folder = results_folder(pytester)
    folder.mkdir(parents=True)
    left = folder / ".20260101T000000Z.journal.jsonl.0123456789ab"
    held = folder / ".20260101T000001Z.journal.jsonl.0123456789ab"
    newer = folder / ".20260101T000002Z.journal.jsonl.0123456789ab"
    other = folder / ".20260101T000000Z.json.0123456789ab"  # a results file's: not the journal's to delete
    for path in (left, held, newer, other):
        path.write_bytes(b"")
        os.utime(path, (1_000_000, 1_000_000))
    os.utime(newer, (4_000_000_000, 4_000_000_000))
    with held.open("rb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as a running session holds its journal's
        result = run(pytester, "-p", "no:randomly", *xdist)
        assert result.ret == 0, result.stdout.str()
    assert not left.exists()
    assert held.exists() and newer.exists() and other.exists()
    assert [p.name for p in folder.iterdir() if p.name.endswith(".journal.jsonl")] == []


# Counts, in the controller, how often the session lists the results folder and which files in it
# it opens (os.open, open), and writes both to counted.json at its end.
COUNTING_CONFTEST = """
import builtins, io, json, os, pathlib
FOLDER = os.path.realpath(".vibeeval/results")
seen = {"listings": 0, "opened": []}
def _path(args, kwargs):
    path = args[0] if args else kwargs.get("path", kwargs.get("file", "."))
    return os.path.realpath(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else None
def _listing(real):
    def counted(*args, **kwargs):
        if _path(args, kwargs) == FOLDER:
            seen["listings"] += 1
        return real(*args, **kwargs)
    return counted
def _opening(real):
    def counted(*args, **kwargs):
        path = _path(args, kwargs)
        if path is not None and os.path.dirname(path) == FOLDER:
            seen["opened"].append(os.path.basename(path))
        return real(*args, **kwargs)
    return counted
os.listdir, os.scandir = _listing(os.listdir), _listing(os.scandir)
os.open = _opening(os.open)
builtins.open = io.open = _opening(io.open)
def pytest_unconfigure(config):
    if not hasattr(config, "workerinput"):
        pathlib.Path("counted.json").write_text(json.dumps(seen))
"""


@XDIST_MODES
def test_a_session_lists_the_results_folder_once_and_reads_no_earlier_results(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The results folder gains a file with every session and nothing removes them: the end of a
    session, looking for journals left by killed sessions, lists it once (names only) and opens
    none of the earlier sessions' results files, so that its cost does not grow with the project's
    past beyond that one listing. A journal left among them is still named."""
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'The answer is 42.'\n")
    write(
        pytester.path / "q.eval.yaml",
        "metadata: {name: q, model: m}\nconfigurations:\n  c: {python: 'app:answer'}\n"
        "evals:\n  - {name: e, prompt: p, checks: [{match: '*42*'}]}\n",
    )
    write(pytester.path / "conftest.py", COUNTING_CONFTEST)
    folder = results_folder(pytester)
    folder.mkdir(parents=True)
    earlier = [f"202501{day:02d}T{hour:02d}0000Z.json" for day in range(1, 11) for hour in range(10)]
    for name in earlier:
        (folder / name).write_text("{}")
    left = folder / "20250111T000000Z.journal.jsonl"
    left.write_text('{"journal": 1, "resumed_from": []}\n')
    result = run(pytester, "-p", "no:randomly", *xdist, subprocess=True)
    assert result.ret == 0, result.stdout.str()
    note = "note: .vibeeval/results/20250111T000000Z.journal.jsonl holds the finished evals"
    assert note in result.stdout.str()
    counted = json.loads((pytester.path / "counted.json").read_text())
    assert counted["listings"] == 1
    assert not set(counted["opened"]) & set(earlier)
