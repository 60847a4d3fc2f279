"""The results file is written an eval at a time, and reads exactly as pydantic's own dump."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_vibeeval.report import resultsfile
from pytest_vibeeval.report.resultsfile import build_results, results_json, stamped_original, write_results
from pytest_vibeeval.results import CheckRecord, EvalRecord, EvalStats, ResultsFile, RunRecord


def run(suite: str, evals: list[EvalRecord]) -> RunRecord:
    return RunRecord(
        suite=suite,
        source=f"evals/{suite}.eval.yaml",
        configuration="app",
        score=50.0,
        score_formula="success_pct",
        score_error=None,
        metrics={"errors": 0},
        variables={"success_pct": 50.0, "evals": None},
        notes=["a note,\nover two lines", 'with "quotes" and \\ and ünïcödé ✓'],
        evals=evals,
    )


def record(name: str, outcome: str = "passed", response: str = "The answer is 42.") -> EvalRecord:
    return EvalRecord(
        name=name,
        nodeid=f"evals/s.eval.yaml::{name}[app]",
        outcome=outcome,  # type: ignore[arg-type]
        response=response,
        message=None if outcome == "passed" else "contains: 'x' not found\n  in the response",
        checks=[CheckRecord(type="contains", passed=outcome == "passed", message="line one\nline two")],
    )


def stats(name: str, passed: int) -> EvalStats:
    rate = float(passed)
    return EvalStats(
        name=name,
        runs=1,
        passed=passed,
        pass_rate=rate,
        pass_at_k={"1": rate},
        pass_hat_k={"1": rate},
        status="passed" if passed else "failed",
    )


CASES = {
    "no runs": [],
    "a run without evals": [run("empty", [])],
    "runs and evals": [
        run("one", [record("a"), record("b", "failed", "two\nlines: ]\n}, {")]),
        run("two", [record("c", "error", '  "evals": []\n'), record("d", "skipped")]),
    ],
    "runs with eval stats": [
        run("one", [record("a"), record("b", "failed")]).model_copy(
            update={"eval_stats": [stats("a", 1), stats("b", 0)], "baseline": None}
        ),
        run("two", []).model_copy(update={"eval_stats": [stats("c", 0)]}),
    ],
}


@pytest.mark.parametrize("runs", CASES.values(), ids=CASES.keys())
@pytest.mark.parametrize("load_errors", [[], ["evals/broken.eval.yaml"]])
def test_the_written_text_is_pydantics_own_dump(runs: list[RunRecord], load_errors: list[str]) -> None:
    results = build_results(runs, "2026-01-01T00:00:00+00:00", False, load_errors)
    assert "".join(results_json(results)) == results.model_dump_json(indent=2) + "\n"


def test_each_eval_and_each_eval_stats_is_a_piece_of_its_own() -> None:
    results = build_results(CASES["runs with eval stats"], "2026-01-01T00:00:00+00:00", False)
    pieces = list(results_json(results))
    assert len([p for p in pieces if '"pass_at_k"' in p]) == 3  # not one piece with the whole run
    assert len([p for p in pieces if '"nodeid"' in p]) == 2
    assert all('"pass_at_k"' not in p for p in pieces if '"nodeid"' in p)


def test_the_file_and_latest_hold_the_same_results(tmp_path: Path) -> None:
    results = build_results(CASES["runs and evals"], "2026-01-01T00:00:00+00:00", False)
    stamped, latest = write_results(results, None, tmp_path)
    assert latest.name == "latest.json"
    assert stamped.read_bytes() == latest.read_bytes()
    assert ResultsFile.model_validate_json(stamped.read_text()) == results
    assert json.loads(latest.read_text())["runs"][1]["evals"][0]["response"] == '  "evals": []\n'
    assert not [p for p in latest.parent.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_latest_resolves_to_the_file_it_copies(tmp_path: Path) -> None:
    """What --vibe-resume names in `reused_from`: latest.json's timestamped original, which the
    session does not replace; a partial run written after it (not copied) is not it."""
    first = build_results(CASES["runs and evals"], "2026-01-01T00:00:00+00:00", False)
    stamped, latest = write_results(first, None, tmp_path)
    write_results(build_results(CASES["runs and evals"], "2026-01-01T00:05:00+00:00", True), None, tmp_path)
    (latest.parent / "copy.json").mkdir()  # a folder of that name is passed over
    assert stamped_original(latest) == stamped
    stamped.unlink()
    assert stamped_original(latest) == latest  # nothing else holds those bytes
    assert stamped_original(tmp_path / "r.json") == tmp_path / "r.json"
    assert stamped_original(tmp_path / "latest.json") == tmp_path / "latest.json"  # missing


def test_a_partial_run_is_written_but_never_latest(tmp_path: Path) -> None:
    results = build_results(CASES["runs and evals"], "2026-01-01T00:00:00+00:00", True)
    written = write_results(results, None, tmp_path)
    assert [p.name for p in written] == ["20260101T000000Z.json"]
    assert not (tmp_path / ".vibeeval" / "results" / "latest.json").exists()


def test_a_layout_it_does_not_know_is_written_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """Were pydantic to lay the JSON out otherwise (no ``"runs": []`` line to splice at), the file
    is still the model's own dump, written at once."""
    results = build_results(CASES["runs and evals"], "2026-01-01T00:00:00+00:00", False)
    expected = results.model_dump_json(indent=2) + "\n"
    dump = ResultsFile.model_dump_json

    def compact_when_empty(self: ResultsFile, **kwargs: object) -> str:
        return dump(self) if not self.runs else dump(self, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ResultsFile, "model_dump_json", compact_when_empty)
    assert "".join(results_json(results)) == expected


OTHER_SESSION = """
import sys
from pathlib import Path
from pytest_vibeeval.report.resultsfile import build_results, write_results
write_results(build_results([], sys.argv[2], False), None, Path(sys.argv[1]))
"""


def test_two_sessions_started_in_the_same_second_each_keep_their_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two sessions of one project started in the same second, whose ends overlap: another session
    (a real process) writes its results while this one is writing its own, under the same timestamp.
    Neither replaces the other's file, and latest.json is one of them, whole."""
    started = "2026-01-01T00:00:00+00:00"
    pieces = resultsfile.results_json

    def other_session_meanwhile(results: ResultsFile) -> Iterator[str]:
        written = pieces(results)
        yield next(written)
        subprocess.run([sys.executable, "-c", OTHER_SESSION, str(tmp_path), started], check=True, timeout=60)
        yield from written

    monkeypatch.setattr(resultsfile, "results_json", other_session_meanwhile)
    ours = build_results(CASES["runs and evals"], started, False)
    stamped, latest = write_results(ours, None, tmp_path)
    folder = tmp_path / ".vibeeval" / "results"
    assert sorted(p.name for p in folder.iterdir()) == [
        "20260101T000000Z-2.json",
        "20260101T000000Z.json",
        "latest.json",
    ]
    theirs = ResultsFile.model_validate_json((folder / "20260101T000000Z.json").read_text())
    assert theirs.runs == [] and stamped == folder / "20260101T000000Z-2.json"
    assert ResultsFile.model_validate_json(stamped.read_text()) == ours
    assert latest.read_bytes() == stamped.read_bytes()  # the last complete run to finish


def test_results_written_to_a_pipe_or_a_device_leave_it_in_place(pytester: pytest.Pytester) -> None:
    """`--vibe-results /dev/null` (or a FIFO a tool reads) is written to, never replaced: the
    rename that makes a file's write atomic replaced the system's /dev/null with a file. Shown on a
    FIFO this test holds open, so that nothing of the machine's is at stake."""
    from helpers import run, write

    write(pytester.path / "app.py", "def answer(prompt):\n    return 'ok'\n")
    write(
        pytester.path / "p.eval.yaml",
        """
        metadata: {name: p, model: m}
        configurations: {app: {python: "app:answer"}}
        evals: [{name: a, prompt: hi, checks: [{equals: ok}]}]
        """,
    )
    fifo = pytester.path / "results.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a reader, so that the writer does not wait
    try:
        run(pytester, "--vibe-results", fifo, "--vibe-history=").assert_outcomes(passed=1)
        assert stat.S_ISFIFO(fifo.lstat().st_mode)
        assert json.loads(os.read(reader, 1 << 16))["runs"][0]["evals"][0]["outcome"] == "passed"
    finally:
        os.close(reader)
    assert resultsfile.unwritable_reason(fifo, into_special=True) is None
    assert resultsfile.unwritable_reason(Path(os.devnull), into_special=True) is None


def one_eval_suite(pytester: pytest.Pytester) -> Path:
    """A suite of one eval whose answer leaves a mark in the file ``asked`` each time it is asked."""
    from helpers import python_suite

    app = "def answer(prompt):\n    open('asked', 'a').write('x')\n    return 'ok'\n"
    python_suite(pytester.path / "p.eval.yaml", ["{name: a, prompt: hi, checks: [{equals: ok}]}"], app=app)
    return pytester.path / "asked"


def block_device(folder: Path) -> Path:
    """A block device node in ``folder`` (a loop device's numbers), or a skip where mknod is not
    permitted. Only ever checked and refused: nothing may open it."""
    path = folder / "blk"
    try:
        os.mknod(path, stat.S_IFBLK | 0o600, os.makedev(7, 250))
    except OSError as exc:
        pytest.skip(f"cannot make a block device node: {exc}")
    return path


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize(
    ("option", "kind"),
    [
        ("--vibe-results", "a block device"),
        ("--vibe-html", "a socket"),
        ("--vibe-results", "link to a socket"),
    ],
)
def test_a_block_device_or_a_socket_named_for_the_results_is_a_usage_error(
    pytester: pytest.Pytester, xdist: list[str], option: str, kind: str
) -> None:
    """--vibe-results /dev/sda wrote the results over the disk (as root); a socket passed the check
    and lost the results at the end (ENXIO). Both are refused before any eval runs, and stay."""
    import socket

    from helpers import run

    asked = one_eval_suite(pytester)
    with socket.socket(socket.AF_UNIX) as bound:
        if kind == "a block device":
            path = block_device(pytester.path)
            # Refused by the check before the run, the only thing that may touch it: never opened.
            assert resultsfile.unwritable_reason(path, into_special=True) is not None
        else:
            path = pytester.path / "s"
            bound.bind("s")  # in pytester's folder, the current one: its full path is too long to bind
            if kind == "link to a socket":
                path = pytester.path / "link"
                path.symlink_to(pytester.path / "s")
        result = run(pytester, option, path, "--vibe-history=", xdist=xdist)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        what = "links to a socket" if kind == "link to a socket" else f"is {kind}"
        result.stderr.fnmatch_lines([f"*{option}: {path} {what}: name a file*"])
        assert not asked.exists()
        assert path.is_symlink() if kind == "link to a socket" else not stat.S_ISREG(path.lstat().st_mode)


class PipeReader(threading.Thread):
    """Reads the FIFO ``path`` to its end, from the moment a writer opens it, into ``data``."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path, self.data = path, b""

    def run(self) -> None:
        with self.path.open("rb") as pipe:  # waits for a writer
            self.data = pipe.read()

    def text(self) -> str:
        """What was read, once the writer is done; a writer that never came is let in and failed."""
        self.join(timeout=30)
        if self.is_alive():
            os.close(os.open(self.path, os.O_WRONLY))  # release the reader's open
            self.join(timeout=30)
            pytest.fail(f"nothing opened {self.path} to write to it")
        return self.data.decode()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_results_named_through_a_link_to_a_pipe_are_written_into_it(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """``--vibe-results /dev/stdout | jq``: /dev/stdout is a link (to /proc/self/fd/1), and a link
    was replaced by a file (as root, the machine's /dev/stdout). Links to FIFOs of this test's
    own stand for it: written through, and left links."""
    from helpers import run

    one_eval_suite(pytester)
    links = {}
    for name in ("results", "html"):
        fifo = pytester.path / f"{name}.fifo"
        os.mkfifo(fifo)
        links[name] = pytester.path / f"{name}-link"
        links[name].symlink_to(fifo)
    readers = {name: PipeReader(pytester.path / f"{name}.fifo") for name in links}
    for reader in readers.values():
        reader.start()
    result = run(
        pytester,
        "--vibe-results",
        links["results"],
        "--vibe-html",
        links["html"],
        "--vibe-history=",
        xdist=xdist,
    )
    texts = {name: reader.text() for name, reader in readers.items()}
    result.assert_outcomes(passed=1)
    assert json.loads(texts["results"])["runs"][0]["evals"][0]["outcome"] == "passed"
    assert texts["html"].startswith("<!DOCTYPE html>")
    for name, link in links.items():
        assert os.readlink(link) == str(pytester.path / f"{name}.fifo")
        assert stat.S_ISFIFO(link.stat().st_mode)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_fifo_planted_in_the_cache_is_replaced_not_waited_on(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A cache entry replaced by a FIFO (anyone who can write in a shared cache can) was a miss, and
    the answer then written into the FIFO: the session waited for a reader forever. It is replaced
    by the answer's file. (This test holds the FIFO open, so that the old code did not wait.)"""
    from helpers import run

    asked = one_eval_suite(pytester)
    run(pytester, "--vibe-cache=cache", "--vibe-history=", xdist=xdist).assert_outcomes(passed=1)
    (entry,) = (pytester.path / "cache" / "app").glob("*.json")
    entry.unlink()
    os.mkfifo(entry)
    reader = os.open(entry, os.O_RDWR | os.O_NONBLOCK)
    try:
        run(pytester, "--vibe-cache=cache", "--vibe-history=", xdist=xdist).assert_outcomes(passed=1)
        assert stat.S_ISREG(entry.lstat().st_mode) and json.loads(entry.read_text())
        with pytest.raises(BlockingIOError):
            os.read(reader, 1 << 16)  # nothing went into the FIFO
    finally:
        os.close(reader)
    assert asked.read_text() == "xx"  # asked again for the entry spoilt, once


STATS_COUNTS = [(1, 1, None), (1, 0, None), (1, 0, 0.0), (0, 0, 0.5), (3, 2, 0.5), (5, 1, None), (4, 4, 0.9)]
STATS_NAMES = ["a", "ünï-cödé ✓", 'say "hi"\\', "tab\there\x01\x7f", "\u2028line", "lone \ud83d half"]


@pytest.mark.parametrize("counts", STATS_COUNTS, ids=str)
def test_the_controllers_eval_stats_are_written_as_pydantic_dumps_them(
    counts: tuple[int, int, float | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the controller a run's stats are their counts: the file writes each from its counts'
    text, the name put in: the same text as the stats made and dumped, without making them."""
    from pytest_vibeeval.scoring import aggregate, repeats
    from pytest_vibeeval.scoring.spool import OnDemand

    entries = [(name, *counts) for name in STATS_NAMES]
    made = [repeats.stats_from_counts(*entry) for entry in entries]
    on_demand = OnDemand(entries, aggregate._stats, aggregate._stats_json)
    controller = run("one", [record("a")]).model_copy(update={"eval_stats": on_demand})
    plain = controller.model_copy(update={"eval_stats": made})
    expected = "".join(results_json(build_results([plain], "2026-01-01T00:00:00+00:00", False)))
    calls = []
    monkeypatch.setattr(
        aggregate, "_stats", lambda entry: calls.append(entry) or repeats.stats_from_counts(*entry)
    )
    written = "".join(results_json(build_results([controller], "2026-01-01T00:00:00+00:00", False)))
    assert written == expected
    assert all(
        entry[0] == "lone \ud83d half" for entry in calls
    )  # made only where the name cannot be dumped alone
