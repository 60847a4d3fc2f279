"""The controller's record spool: records received as JSON wait unparsed in a temporary file, each
run's are read back when asked for, and the runs, their stats and the results file are those of
records kept as objects."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest
from helpers import XDIST_MODES, write
from helpers import run as run_pytest
from test_aggregate import SOURCE, crash, run_info

from pytest_vibeeval.report.resultsfile import build_results, results_json
from pytest_vibeeval.results import CheckRecord, EvalRecord, RubricRecord, RunRecord
from pytest_vibeeval.scoring.aggregate import Aggregator, RunInfo
from pytest_vibeeval.scoring.spool import OnDemand, RecordSpool
from pytest_vibeeval.transport import attach_record


def record(name: str, outcome: str = "passed", config: str = "a", repeat: int = 0) -> EvalRecord:
    suffix = f"-r{repeat}" if repeat else ""
    return EvalRecord(
        name=name,
        named=True,
        nodeid=f"{SOURCE}::{name}[{config}{suffix}]",
        outcome=outcome,  # type: ignore[arg-type]
        latency=0.5,
        response="réponse ✓\nover two lines",
        message=None if outcome == "passed" else "contains: 'x' not found",
        checks=[CheckRecord(type="contains", passed=outcome == "passed", message="ünïcödé")],
        rubric=RubricRecord(
            signals={"output_quality": 0.5, "efficiency": None},
            score=None,
            grade=None,
            complexity="medium",
            efficiency_basis="time",
            task="general",
        ),
        repeat=repeat,
    )


@pytest.mark.parametrize("chunk", [1, RecordSpool.CHUNK], ids=["each-written", "gathered"])
def test_the_spool_gives_back_each_record_it_was_given(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    monkeypatch.setattr(RecordSpool, "CHUNK", chunk)
    spool = RecordSpool()
    records = [record("a"), record("b", "failed"), record("c", "error")]
    indexes = [spool.add(r.model_dump_json(exclude_defaults=True)) for r in records]
    assert indexes == [0, 1, 2]
    assert [spool.read(i) for i in (2, 0, 1)] == [records[2], records[0], records[1]]
    assert spool.add(record("d").model_dump_json()) == 3  # appends after reading
    assert spool.read(3) == record("d")
    assert spool.resolve(records[0]) is records[0]


def test_records_are_read_back_a_block_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The session's end reads the records about in the order they came: one read of the file
    gives many of them, not one system call each; a record outside the block read last is read
    anew."""
    monkeypatch.setattr(RecordSpool, "CHUNK", 4096)
    spool = RecordSpool()
    records = [record(f"e{n}") for n in range(40)]
    texts = [r.model_dump_json(exclude_defaults=True) for r in records]
    indexes = [spool.add(text) for text in texts]
    real_pread = os.pread
    reads: list[int] = []

    def counting(fd: int, size: int, offset: int) -> bytes:
        reads.append(size)
        return real_pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", counting)
    assert [spool.read(i) for i in indexes] == records
    on_file = sum(len(text) for text in texts) - len(spool._pending)  # the rest waits in memory
    assert 0 < len(reads) <= on_file // 4096 + 1
    reads.clear()
    assert [spool.read(i) for i in (0, 1)] == [records[0], records[1]]
    assert len(reads) == 1  # back to the start: read again, and its neighbour with it


def test_records_the_disk_had_no_room_for_stay_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Half of the second record is written, then the disk is full: that record and the ones
    after it stay in memory; every record is read back whole."""
    real_pwrite = os.pwrite
    calls: list[int] = []

    def filling(fd: int, data: bytes, offset: int) -> int:
        calls.append(len(data))
        if len(calls) == 2:
            return real_pwrite(fd, bytes(data)[: len(data) // 2], offset)
        if len(calls) == 3:
            raise OSError(28, "No space left on device")
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", filling)
    monkeypatch.setattr(RecordSpool, "CHUNK", 1)
    spool = RecordSpool()
    records = [record("a"), record("b", "failed"), record("c", "error")]
    assert [spool.add(r.model_dump_json()) for r in records] == [0, 1, 2]
    assert len(calls) == 3  # nothing more is tried once the disk is full
    assert [spool.read(i) for i in (0, 1, 2)] == records


def test_an_on_demand_sequence_reads_like_a_list() -> None:
    made: list[int] = []

    def make(n: int) -> str:
        made.append(n)
        return str(n)

    items = OnDemand([1, 2, 3], make)
    assert not made  # nothing is made until asked for
    assert len(items) == 3 and bool(items)
    assert items[0] == "1" and items[-1] == "3" and items[1:] == ["2", "3"]
    assert list(items) == ["1", "2", "3"] and "2" in items
    assert items == ["1", "2", "3"] and items != ["1", "2"]
    assert [str(n) for n in (1, 2, 3)] == items  # a list on the left: the reflected comparison
    assert repr(items) == "['1', '2', '3']"
    assert not OnDemand([], make)
    with pytest.raises(IndexError):
        items[3]


def test_a_run_of_on_demand_records_dumps_as_a_list_of_them() -> None:
    records = [record("a"), record("b", "failed")]
    spool = RecordSpool()
    entries: list[EvalRecord | int] = [spool.add(records[0].model_dump_json()), records[1]]
    listed = RunRecord(
        suite="s",
        source=SOURCE,
        configuration="a",
        score=50.0,
        score_formula="success_pct",
        score_error=None,
        metrics={},
        variables={"success_pct": 50.0},
        evals=records,
    )
    lazy = listed.model_copy(update={"evals": OnDemand(entries, spool.resolve)})
    assert lazy == listed
    assert lazy.model_dump_json(indent=2) == listed.model_dump_json(indent=2)
    assert lazy.model_dump() == listed.model_dump()
    results = build_results([lazy], "2026-01-01T00:00:00+00:00", False)
    assert "".join(results_json(results)) == results.model_dump_json(indent=2) + "\n"


def send(agg: Aggregator, info: RunInfo, made: EvalRecord, as_json: bool) -> None:
    """An item's three reports; its record on the call and teardown ones, as the object (a run
    without xdist) or as its JSON (what a worker sends)."""
    sent = str(attach_record(object(), made)) if as_json else made
    call = {"passed": "passed", "skipped": "skipped"}.get(made.outcome, "failed")
    agg.add_report(made.nodeid, "setup", "passed", info, None, None, False)
    agg.add_report(made.nodeid, "call", call, info, sent, made.message, False)
    agg.add_report(
        made.nodeid, "teardown", "failed" if made.name == "e1" else "passed", info, sent, "boom", False
    )


@pytest.mark.parametrize("repeats", [1, 3])
def test_records_received_as_json_give_the_runs_of_records_kept_as_objects(repeats: int) -> None:
    """What an xdist controller builds (each record's JSON, spooled) equals a serial run's, also
    for the records the session's end rewrites (a teardown that failed after a passed call)."""
    objects, spooled = Aggregator(), Aggregator()
    outcomes = ["passed", "passed", "failed", "error", "skipped"]
    for index, outcome in enumerate(outcomes):
        for config in ("a", "b"):
            for repeat in range(1, repeats + 1) if repeats > 1 else [0]:
                info = run_info(f"e{index}", config, "success_pct")
                info = replace(info, eval_index=index, repeat=repeat, repeats=repeats)
                made = record(f"e{index}", outcome, config, repeat)
                send(objects, info, made, as_json=False)
                send(spooled, info, made, as_json=True)
    for agg in (objects, spooled):
        crash(agg, "e9", "a")
    assert all(isinstance(item.record, int) for item in spooled.items.values() if item.record is not None)
    built, read = objects.runs(), spooled.runs()
    assert [run.model_dump_json() for run in read] == [run.model_dump_json() for run in built]
    assert read == built
    for run in read:
        assert isinstance(run.evals, OnDemand) and isinstance(run.eval_stats, OnDemand)
        assert list(run.evals) == list(run.evals)
    e1 = next(r for r in read[0].evals if r.name == "e1")
    assert e1.outcome == "error" and "teardown failed" in (e1.message or "")


@pytest.mark.parametrize("configs", [("a",), ("a", "b")], ids=["one-run", "two-runs"])
def test_a_session_of_one_run_keeps_its_records_parsed_from_their_first_reading(
    monkeypatch: pytest.MonkeyPatch, configs: tuple[str, ...]
) -> None:
    """The session's end reads every record several times (the results file, the Run Summary, the
    writers): in a session of one run each is parsed once, when the run is built, then kept; with
    several runs (more than one run's records in memory at once) each reading parses."""
    agg = Aggregator()
    for index in (0, 2, 3):  # not e1, which send() makes an error (a record the session's end made)
        for config in configs:
            info = replace(run_info(f"e{index}", config, "success_pct"), eval_index=index)
            send(agg, info, record(f"e{index}", config=config), as_json=True)
    parsed: list[object] = []
    real = EvalRecord.model_validate_json
    monkeypatch.setattr(EvalRecord, "model_validate_json", lambda data: parsed.append(data) or real(data))
    runs = agg.runs()
    assert len(parsed) == 3 * len(configs)  # building the runs
    for _ in range(3):  # results file, Run Summary, a writer
        readings = [list(run.evals) for run in runs]
    if len(configs) == 1:
        assert len(parsed) == 3
        assert [list(run.evals) for run in runs] == readings
        assert runs[0].evals[0] is readings[0][0]
    else:
        assert len(parsed) == 3 * len(configs) * 4


def test_without_a_file_for_the_spool_the_records_are_kept_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_room(*args: object, **kwargs: object) -> None:
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr("tempfile.TemporaryFile", no_room)
    monkeypatch.setattr(RecordSpool, "CHUNK", 1)
    agg = Aggregator()
    made = record("e0")
    send(agg, replace(run_info("e0", "a", "success_pct"), eval_index=0), made, as_json=True)
    assert list(agg.runs()[0].evals) == [made]


WRITER = """
import json


def pytest_vibeeval_write_results(config, results, results_path):
    runs = []
    for run in results.runs:
        records = list(run.evals)
        runs.append({
            "evals": [r.name for r in run.evals],
            "outcomes": [r.outcome for r in records],
            "first": run.evals[0].name,
            "stats": [(s.name, s.passed) for s in run.eval_stats],
            "a": run.variables.get("a"),
            "b_latency_known": run.variables["b_latency"] is not None,
            "variables": len(run.variables),
        })
    dumped = json.loads(results.model_dump_json())["runs"][0]
    assert [e["name"] for e in dumped["evals"]] == runs[0]["evals"]
    assert dumped["variables"] == dict(results.runs[0].variables)
    (config.rootpath / "seen.json").write_text(json.dumps(runs))
    return ["seen"]
"""


@XDIST_MODES
def test_a_result_writer_reads_the_runs_as_before(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A plugin's writer gets the same runs in a serial run (records kept as objects) and under
    xdist (spooled, read on demand): iterating, indexing, ``len``, ``.get`` and the JSON dump."""
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'yes' if prompt != 'c' else 'no'\n")
    write(
        pytester.path / "w.eval.yaml",
        """
        metadata: {name: w, model: m}
        configurations: {app: {python: "app:answer"}, other: {python: "app:answer"}}
        evals:
          - {name: a, prompt: a, checks: [{contains: "yes"}]}
          - {name: b, prompt: b, checks: [{contains: "yes"}]}
          - {name: c, prompt: c, checks: [{contains: "yes"}]}
        """,
    )
    write(pytester.path / "seen_writer.py", WRITER)
    pytester.syspathinsert()
    result = run_pytest(pytester, "-p", "seen_writer", xdist=xdist)
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["seen"])
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert [run["evals"] for run in seen] == [["a", "b", "c"]] * 2
    assert [run["outcomes"] for run in seen] == [["passed", "passed", "failed"]] * 2
    assert all(run["first"] == "a" and run["a"] == 1.0 and run["b_latency_known"] for run in seen)
    assert [run["stats"] for run in seen] == [[["a", 1], ["b", 1], ["c", 0]]] * 2
    assert seen[0]["variables"] == seen[1]["variables"] > 13 * 3
