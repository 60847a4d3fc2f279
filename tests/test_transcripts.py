"""Unit tests for pytest_vibeeval.scoring.transcripts: reading JSONL tool logs and summarising tool calls."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_vibeeval.results import ToolCallRecord, ToolStats
from pytest_vibeeval.scoring import transcripts
from pytest_vibeeval.scoring.transcripts import ToolLogError, count_retries, read_tool_log, summarise


def write_log(path: Path, *lines: dict[str, Any] | str) -> Path:
    """Write a JSONL log: dicts as JSON, strings as they are."""
    path.write_text("".join((json.dumps(line) if isinstance(line, dict) else line) + "\n" for line in lines))
    return path


def calls(*spec: tuple[str, bool | None]) -> list[ToolCallRecord]:
    return [ToolCallRecord(tool=tool, success=success) for tool, success in spec]


# --- summarise -------------------------------------------------------------------------------------


def test_summarise_the_documents_example_gives_nine_of_ten() -> None:
    # Read 5/5, Write 2/2, Bash 2/3 (1 failed); the failed Bash call is last, so nothing retries it.
    records = calls(
        *[("Read", True)] * 5, *[("Write", True)] * 2, ("Bash", True), ("Bash", True), ("Bash", False)
    )
    transcript = summarise(records, "executions.jsonl")
    assert transcript.calls == 10
    assert transcript.succeeded == 9
    assert transcript.succeeded / transcript.calls == 0.90
    assert transcript.tools == {
        "Read": ToolStats(calls=5, succeeded=5, failed=0),
        "Write": ToolStats(calls=2, succeeded=2, failed=0),
        "Bash": ToolStats(calls=3, succeeded=2, failed=1),
    }
    assert transcript.errors == {"tool_fail": 1, "retry": 0}
    assert transcript.source == "executions.jsonl"


def test_summarise_keeps_zero_error_counts_and_passes_duration_and_problems() -> None:
    transcript = summarise(calls(("Read", True)), "log", duration=2.5, problems=["log:3: bad"])
    assert transcript.errors == {"tool_fail": 0, "retry": 0}
    assert transcript.duration == 2.5
    assert transcript.problems == ["log:3: bad"]


def test_summarise_no_calls() -> None:
    transcript = summarise([], "output:codex")
    assert (transcript.calls, transcript.succeeded, transcript.tools) == (0, 0, {})
    assert transcript.errors == {"tool_fail": 0, "retry": 0}


def test_calls_without_an_outcome_are_neither_succeeded_nor_failed() -> None:
    transcript = summarise(calls(("Bash", None), ("Bash", True)), "log")
    assert transcript.tools["Bash"] == ToolStats(calls=2, succeeded=1, failed=0)
    assert transcript.errors["tool_fail"] == 0


def test_retry_of_the_same_tool_right_after_its_failure() -> None:
    # Bash fails, Bash again -> a retry; Read after a failed Bash is not; Bash after Read is not.
    assert count_retries(calls(("Bash", False), ("Bash", True))) == 1
    assert count_retries(calls(("Bash", False), ("Read", True), ("Bash", True))) == 0
    assert count_retries(calls(("Bash", True), ("Bash", True))) == 0
    assert count_retries(calls(("Bash", None), ("Bash", True))) == 0
    assert count_retries(calls(("Bash", False), ("Bash", False), ("Bash", True))) == 2


def batched(*spec: tuple[str, bool | None, int]) -> list[ToolCallRecord]:
    return [ToolCallRecord(tool=tool, success=success, batch=batch) for tool, success, batch in spec]


def test_a_call_made_together_with_a_failed_one_is_not_a_retry() -> None:
    # two Reads of one assistant message, the first failed: siblings, not a retry
    assert count_retries(batched(("Read", False, 0), ("Read", True, 0))) == 0
    assert count_retries(batched(("Read", False, 0), ("Read", True, 0), ("Glob", True, 1))) == 0
    # a Read in the next message retries; so does each Read after a batch in which a Read failed
    assert count_retries(batched(("Read", True, 0), ("Read", False, 0), ("Read", True, 1))) == 1
    assert count_retries(batched(("Read", False, 0), ("Read", True, 1), ("Read", True, 1))) == 2
    # only the batch right before counts, as only the call right before does without batches
    assert count_retries(batched(("Read", False, 0), ("Glob", True, 1), ("Read", True, 2))) == 0
    # calls without a batch each stand alone
    assert count_retries([ToolCallRecord(tool="Read", success=False), *batched(("Read", True, 0))]) == 1


def test_marked_retries_are_not_counted_twice() -> None:
    records = [
        ToolCallRecord(tool="Bash", success=False),
        ToolCallRecord(tool="Bash", success=True, retry=True),  # marked and after a failure: once
        ToolCallRecord(tool="Read", success=True, retry=True),  # marked only
    ]
    transcript = summarise(records, "log")
    assert transcript.retries == 2
    assert transcript.errors == {"tool_fail": 1, "retry": 2}


def test_the_documents_error_example_two_failures_and_a_retry() -> None:
    records = calls(("Bash", False), ("Read", True), ("Bash", False), ("Bash", True))
    transcript = summarise(records, "log")
    assert transcript.errors == {"tool_fail": 2, "retry": 1}


# --- read_tool_log: values -------------------------------------------------------------------------


def test_native_and_string_values_read_alike(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "executions.jsonl",
        {"tool": "Read", "exit": 0, "success": True},
        {"tool": "Read", "exit": "0", "success": "true"},
        {"tool": "Read", "success": "True"},
        {"tool": "Read", "success": 1},
        {"tool": "Read", "success": "1"},
        {"tool": "Read", "success": "yes"},
        {"tool": "Bash", "success": False},
        {"tool": "Bash", "success": "false"},
        {"tool": "Bash", "success": 0},
        {"tool": "Bash", "success": "0"},
    )
    records, _, problems = read_tool_log(log)
    assert problems == []
    assert [call.success for call in records] == [True] * 6 + [False] * 4


def test_outcome_from_exit_and_error_when_success_is_absent(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "log.jsonl",
        {"tool": "Bash", "exit": 0},
        {"tool": "Bash", "exit": "2"},
        {"tool": "Bash", "exit_code": 1},
        {"tool": "Bash", "exit": 0, "error": "permission denied"},
        {"tool": "Bash", "exit": 0, "error": "  "},
        {"tool": "Bash", "error": "timed out"},
        {"tool": "Bash"},
        {"tool": "Bash", "exit": None, "error": None},
    )
    records, _, problems = read_tool_log(log)
    assert problems == []
    assert [call.success for call in records] == [True, False, False, False, True, False, None, None]
    assert [call.error for call in records] == [
        None,
        "exit code 2",
        "exit code 1",
        "permission denied",
        None,
        "timed out",
        None,
        None,
    ]


def test_failure_patterns_in_output_fail_the_call(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "log.jsonl",
        {"tool": "Bash", "exit": 0, "output": "ok\nTraceback (most recent call last):\n  File 'x'\n"},
        {"tool": "Bash", "exit": 0, "stderr": "ValueError: bad value"},
        {"tool": "Bash", "exit": 0, "output": "fatal: not a git repository"},
        {"tool": "Bash", "exit": 0, "output": "  json.decoder.JSONDecodeError: Expecting value"},
        {"tool": "Bash", "output": "ERROR: build failed"},
        {"tool": "Bash", "exit": 0, "output": "no errors found; the ValueError: is handled"},
        {"tool": "Bash", "exit": 0, "output": "Errors: 0"},
    )
    records, _, _ = read_tool_log(log)
    assert [call.success for call in records] == [False, False, False, False, False, True, True]
    assert records[0].error == "Traceback (most recent call last):"
    assert records[1].error == "ValueError: bad value"
    assert records[3].error == "json.decoder.JSONDecodeError: Expecting value"


def test_evidence_of_a_failure_wins_over_a_success_flag(tmp_path: Path) -> None:
    """The rubric: a call failed when its exit code is not 0 or an error pattern matches, whatever
    else the line says; `success` decides only when nothing contradicts it."""
    log = write_log(
        tmp_path / "log.jsonl",
        {"tool": "Bash", "exit": 1, "success": True},
        {"tool": "Bash", "exit": 0, "success": "true", "stderr": "fatal: not a git repository"},
        {"tool": "Bash", "success": True, "error": "timed out"},
        {"tool": "Bash", "success": True, "output": "Error: could not connect"},
        {"tool": "Bash", "exit": 0, "success": False},
        {"tool": "Bash", "exit": 0, "success": True, "output": "all fine"},
    )
    records, _, _ = read_tool_log(log)
    assert [(call.success, call.error) for call in records] == [
        (False, "exit code 1"),
        (False, "fatal: not a git repository"),
        (False, "timed out"),
        (False, "Error: could not connect"),
        (False, None),
        (True, None),
    ]


def test_failure_pattern_definition() -> None:
    matches = transcripts.FAILURE_PATTERN.search
    assert matches("Traceback (most recent call last):")
    assert matches("KeyError: 'x'") and matches("Exception: boom") and matches("Error: x")
    assert matches("error: could not compile") and matches("FATAL: out of memory")
    assert not matches("The error was fixed") and not matches("ErrorCount: 0") and not matches("errors: 0")


def test_error_text_is_shortened(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", {"tool": "Bash", "error": "x" * 2000})
    records, _, _ = read_tool_log(log)
    assert records[0].error == "x" * 499 + "…"  # marked cut: masking masks a secret's start there


def test_tool_name_aliases_durations_and_retries(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "log.jsonl",
        {"tool_name": "Read", "exit": 0, "duration": 1.5},
        {"name": " Write ", "exit": 0, "duration_ms": "250"},
        {"tool": "Bash", "exit": 0, "retry": "true"},
        {"tool": "Bash", "exit": 0, "retry": 2},
        {"tool": "Bash", "exit": 0, "retry": "0"},
        {"tool": "Bash", "exit": 0, "attempt": "2"},
        {"tool": "Bash", "exit": 0, "attempt": 1},
    )
    records, _, problems = read_tool_log(log)
    assert problems == []
    assert [call.tool for call in records] == ["Read", "Write", "Bash", "Bash", "Bash", "Bash", "Bash"]
    assert [call.duration for call in records[:2]] == [1.5, 0.25]
    assert [call.retry for call in records[2:]] == [True, True, False, True, False]


def test_iso_timestamps_give_the_duration(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "log.jsonl",
        {"ts": "2024-05-01T10:00:00Z", "tool": "Read", "exit": "0"},
        {"ts": "2024-05-01T12:00:30+02:00", "tool": "Read", "exit": "0"},  # 10:00:30 UTC
        {"ts": "2024-05-01T10:01:00", "tool": "Read", "exit": "0"},  # naive: read as UTC
    )
    _, duration, problems = read_tool_log(log)
    assert problems == []
    assert duration == 60.0


def test_epoch_timestamps_give_the_duration(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "log.jsonl",
        {"ts": 1714557600, "tool": "Read"},
        {"ts": "1714557612.5", "tool": "Read"},
        {"ts": 1714557605.25, "tool": "Read"},
    )
    _, duration, _ = read_tool_log(log)
    assert duration == 12.5


def test_no_timestamps_no_duration_one_timestamp_zero(tmp_path: Path) -> None:
    assert read_tool_log(write_log(tmp_path / "a.jsonl", {"tool": "Read"}))[1] is None
    assert read_tool_log(write_log(tmp_path / "b.jsonl", {"tool": "Read", "ts": 5}))[1] == 0.0


# --- read_tool_log: bad lines ----------------------------------------------------------------------


def test_bad_lines_are_skipped_and_reported_with_file_and_line(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "executions.jsonl",
        {"tool": "Read", "exit": 0},
        "not json",
        "",
        "[1, 2]",
        {"exit": 0},
        {"tool": 3},
        {"tool": "Bash", "exit": "zero"},
        {"tool": "Bash", "success": "maybe"},
        {"tool": "Bash", "ts": "yesterday"},
        {"tool": "Bash", "error": {"message": "x"}},
        {"tool": "Bash", "duration": -1},
        "   ",
        {"tool": "Write", "exit": 1},
    )
    records, _, problems = read_tool_log(log)
    assert [(call.tool, call.success) for call in records] == [("Read", True), ("Write", False)]
    assert [problem.split(":", 2)[:2] for problem in problems] == [
        ["executions.jsonl", str(line)] for line in (2, 4, 5, 6, 7, 8, 9, 10, 11)
    ]
    assert problems[0].startswith("executions.jsonl:2: not JSON (")
    assert problems[0].endswith("line skipped; write one JSON object per line")
    assert "a JSON list, not an object" in problems[1]
    assert 'no tool name, line skipped; add "tool"' in problems[2]
    assert "\"exit\" is 'zero', not an integer" in problems[4]
    assert "\"success\" is 'maybe', not true or false" in problems[5]
    assert "\"ts\" is 'yesterday', not a timestamp" in problems[6]
    assert "not a string" in problems[7]
    assert "negative" in problems[8]


def test_problems_are_capped(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", *["oops"] * 30, {"tool": "Read"})
    records, _, problems = read_tool_log(log)
    assert len(records) == 1
    assert len(problems) == 21
    assert problems[-1] == "… and 10 more"


def test_overlong_line_is_skipped_without_losing_the_next(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(transcripts, "MAX_LINE_BYTES", 100)
    log = write_log(
        tmp_path / "log.jsonl",
        {"tool": "Read", "output": "x" * 50},
        {"tool": "Bash", "output": "x" * 500},
        {"tool": "Write"},
    )
    records, _, problems = read_tool_log(log)
    assert [call.tool for call in records] == ["Read", "Write"]
    assert problems == ["log.jsonl:2: line longer than 1 MiB; shorten the call's output in the log"]


def test_calls_are_capped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transcripts, "MAX_CALLS", 2)
    log = write_log(tmp_path / "log.jsonl", *[{"tool": "Read"}] * 4)
    records, _, problems = read_tool_log(log)
    assert len(records) == 2
    assert problems == [
        "log.jsonl:3: the log is longer than 2 calls; the rest is not read; write a shorter log"
    ]


def test_bom_and_non_utf8(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'\xef\xbb\xbf{"tool": "Read"}\n{"tool": "\xff"}\n')
    records, _, problems = read_tool_log(log)
    assert [call.tool for call in records] == ["Read"]
    assert problems == ["log.jsonl:2: not UTF-8 text, line skipped; write the log as UTF-8"]


def test_deeply_nested_json_line_is_a_problem(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", "[" * 100_000 + "]" * 100_000, {"tool": "Read"})
    records, _, problems = read_tool_log(log)
    assert len(records) == 1
    assert problems == [
        "log.jsonl:1: JSON nested too deeply, line skipped; write one flat JSON object per line"
    ]


def test_missing_file_raises_tool_log_error(tmp_path: Path) -> None:
    with pytest.raises(ToolLogError, match=r"tool log .*missing\.jsonl: not found"):
        read_tool_log(tmp_path / "missing.jsonl")


def test_folder_raises_tool_log_error(tmp_path: Path) -> None:
    with pytest.raises(ToolLogError, match="is a folder"):
        read_tool_log(tmp_path)


def test_empty_log(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("")
    assert read_tool_log(log) == ([], None, [])


def test_read_then_summarise(tmp_path: Path) -> None:
    log = write_log(
        tmp_path / "executions.jsonl",
        {"ts": "2024-05-01T10:00:00Z", "tool": "Bash", "exit": "1"},
        {"ts": "2024-05-01T10:00:05Z", "tool": "Bash", "exit": "0"},
        "garbage",
    )
    records, duration, problems = read_tool_log(log)
    transcript = summarise(records, str(log), duration, problems)
    assert (transcript.calls, transcript.succeeded, transcript.duration) == (2, 1, 5.0)
    assert transcript.errors == {"tool_fail": 1, "retry": 1}
    assert len(transcript.problems) == 1


def test_numbers_too_large_for_a_float_are_reported_not_raised(tmp_path: Path) -> None:
    huge = int("9" * 400)
    log = write_log(tmp_path / "e.jsonl", {"tool": "Bash", "duration": huge}, {"tool": "Read", "ts": huge})
    found, duration, problems = read_tool_log(log)
    assert found == [] and duration is None
    assert len(problems) == 2 and all("not a number" in problem for problem in problems)
