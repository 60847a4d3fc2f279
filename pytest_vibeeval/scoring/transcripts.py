"""Agent tool calls: read a JSONL tool log (the rubric's ``executions.jsonl``) and summarise calls.

A tool log holds one JSON object per line, e.g. ``{"ts": "2024-05-01T10:00:00Z", "tool": "Bash",
"exit": 0}``. Values may be native JSON or strings (``"exit": "0"``, ``"success": "true"``). Fields read:

- ``tool`` (aliases ``tool_name``, ``name``): the tool's name; required.
- ``success``: true/false, "true"/"false"/"yes"/"no" (any case), 1/0 or "1"/"0".
- ``exit`` (alias ``exit_code``): the exit code, an integer or integer string.
- ``error``: what went wrong; a non-empty string means the call failed.
- ``output`` / ``stderr``: the call's output; a line matching :data:`FAILURE_PATTERN` means it failed.
- ``ts``: ISO-8601 (``Z``, an offset or none: read as UTC) or epoch seconds (number or numeric string).
- ``duration`` (seconds) or ``duration_ms``.
- ``retry`` (true/false as for ``success``, or a count: > 0 is a retry) or ``attempt`` (> 1 is a retry).

A call's outcome, as the rubric defines it (failed: the exit code is not 0 or an error pattern
matches): failed when the exit code is not 0, ``error`` is non-empty, the output matches
:data:`FAILURE_PATTERN` or ``success`` is false; otherwise succeeded when ``success`` is true or the
exit code is 0, and unknown (``None``) when the line reports none of these. So evidence of a failure
wins over ``"success": true``. ``null`` counts as absent everywhere.

A line that is not JSON, not an object, names no tool or holds a value of the wrong kind is skipped
and reported (``file:line: what is wrong; how to fix it``); reading goes on.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from pytest_vibeeval.masking import keep_start
from pytest_vibeeval.results import ToolCallRecord, ToolStats, TranscriptRecord
from pytest_vibeeval.surrogates import loads

MAX_LINE_BYTES = 1024 * 1024
"""Longer log lines are skipped (and reported)."""
MAX_LOG_BYTES = 64 * 1024 * 1024
"""The log is read up to this many bytes; the rest is reported and not read."""
MAX_CALLS = 100_000
"""At most this many calls are read from one log; the rest is reported and not read."""
MAX_PROBLEMS = 20
"""Problems reported one by one; the rest are counted in a final ``… and N more``."""
MAX_ERROR_CHARS = 500
"""A failed call's error text is shortened to this many characters."""

FAILURE_PATTERN = re.compile(
    r"^[ \t]*(?:"
    r"Traceback \(most recent call last\):"  # a Python traceback
    r"|(?:[A-Za-z_][\w.]*)?(?:Error|Exception):"  # ValueError: …, json.JSONDecodeError: …, Error: …
    r"|(?i:error|fatal):"  # error: …, ERROR: …, fatal: … (git, compilers, many CLIs)
    r")",
    re.MULTILINE,
)
"""A line of output that reports a failure: it starts (after spaces or tabs) with a Python traceback
header, ``<Name>Error:`` / ``<Name>Exception:`` (bare ``Error:`` and ``Exception:`` included, case as
written) or ``error:`` / ``fatal:`` in any case."""

TOOL_KEYS = ("tool", "tool_name", "name")
EXIT_KEYS = ("exit", "exit_code")
TRUE_WORDS = frozenset({"true", "yes", "1"})
FALSE_WORDS = frozenset({"false", "no", "0"})
INTEGER = re.compile(r"[+-]?\d{1,18}")
NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


class ToolLogError(Exception):
    """A tool log that cannot be read at all (missing, a folder, unreadable); the message names it."""


class _BadValue(Exception):
    """One field of a log line holds a value of the wrong kind."""

    def __init__(self, what: str, fix: str) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix


@dataclass
class _Problems:
    """The problems of one log, the first :data:`MAX_PROBLEMS` kept and the rest counted."""

    name: str
    kept: list[str] = field(default_factory=list)
    dropped: int = 0

    def add(self, line: int | None, what: str, fix: str) -> None:
        if len(self.kept) >= MAX_PROBLEMS:
            self.dropped += 1
            return
        where = f"{self.name}:{line}" if line is not None else self.name
        self.kept.append(f"{where}: {what}; {fix}")

    def render(self) -> list[str]:
        return [*self.kept, f"… and {self.dropped} more"] if self.dropped else list(self.kept)


@dataclass(frozen=True)
class _Line:
    """One readable log line: its call and, when it has one, its timestamp (epoch seconds)."""

    call: ToolCallRecord
    ts: float | None


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _first(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any]:
    """The first of ``keys`` that ``obj`` holds with a non-null value, and that value."""
    for key in keys:
        if obj.get(key) is not None:
            return key, obj[key]
    return keys[0], None


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return value == 1
    if isinstance(value, str) and value.strip().lower() in TRUE_WORDS | FALSE_WORDS:
        return value.strip().lower() in TRUE_WORDS
    raise _BadValue(f'"{key}" is {_short(value)}, not true or false', f'write "{key}": true or false')


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    raise _BadValue(f'"{key}" is {_short(value)}, not an integer', f'write it as a number, e.g. "{key}": 0')


def _as_number(key: str, value: Any) -> float:
    number: float | None = None
    try:
        if isinstance(value, int | float) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str) and NUMBER.fullmatch(value.strip()):
            number = float(value.strip())
    except OverflowError:  # an integer too large for a float
        number = None
    if number is None or not math.isfinite(number):
        raise _BadValue(
            f'"{key}" is {_short(value)}, not a number', f'write it as a number, e.g. "{key}": 1.5'
        )
    return number


def _as_text(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _BadValue(f'"{key}" is {_short(value)}, not a string', f'write "{key}" as a string (or null)')


def _as_timestamp(key: str, value: Any) -> float:
    """Epoch seconds from an ISO-8601 string (naive times read as UTC) or epoch seconds."""
    if isinstance(value, str) and not NUMBER.fullmatch(value.strip()):
        try:
            moment = datetime.fromisoformat(value.strip())
        except ValueError:
            raise _BadValue(
                f'"{key}" is {_short(value)}, not a timestamp',
                'write ISO-8601 (e.g. "2024-05-01T10:00:00Z") or epoch seconds',
            ) from None
        return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return _as_number(key, value)


def _duration(obj: Mapping[str, Any]) -> float | None:
    if obj.get("duration") is not None:
        seconds = _as_number("duration", obj["duration"])
    elif obj.get("duration_ms") is not None:
        seconds = _as_number("duration_ms", obj["duration_ms"]) / 1000
    else:
        return None
    if seconds < 0:
        raise _BadValue("the duration is negative", "write the call's duration in seconds (≥ 0)")
    return seconds


def _is_retry(obj: Mapping[str, Any]) -> bool:
    value = obj.get("retry")
    if isinstance(value, int | str) and not isinstance(value, bool) and INTEGER.fullmatch(str(value).strip()):
        count = int(str(value).strip())  # a retry count (0 or 1 read the same as false/true)
        if count < 0:
            raise _BadValue(f'"retry" is {_short(value)}, a negative count', 'write "retry": true or false')
        if count > 0:
            return True
    elif value is not None and _as_bool("retry", value):
        return True
    attempt = obj.get("attempt")
    return attempt is not None and _as_int("attempt", attempt) > 1


def _failure_line(text: str) -> str | None:
    """The first line of ``text`` that matches :data:`FAILURE_PATTERN`, stripped."""
    match = FAILURE_PATTERN.search(text)
    if match is None:
        return None
    end = text.find("\n", match.start())
    return text[match.start() : end if end >= 0 else len(text)].strip()


def _outcome(obj: Mapping[str, Any]) -> tuple[bool | None, str | None]:
    """The call's success and, for a failed call, what went wrong."""
    success = _as_bool("success", obj["success"]) if obj.get("success") is not None else None
    exit_key, exit_value = _first(obj, EXIT_KEYS)
    exit_code = _as_int(exit_key, exit_value) if exit_value is not None else None
    error = _as_text("error", obj["error"]).strip() if obj.get("error") is not None else ""
    failure = None
    for key in ("output", "stderr"):
        if obj.get(key) is not None:
            failure = failure or _failure_line(_as_text(key, obj[key]))
    reason = error or failure or (f"exit code {exit_code}" if exit_code else None)
    if reason is not None:
        success = False  # evidence of a failure wins over a success flag
    elif success is None and exit_code == 0:
        success = True
    return success, (keep_start(reason, MAX_ERROR_CHARS - 1) if reason else None)


def _parse_call(obj: Mapping[str, Any]) -> _Line:
    key, tool = _first(obj, TOOL_KEYS)
    if tool is None:
        raise _BadValue("no tool name", 'add "tool": "<the tool\'s name>"')
    if not isinstance(tool, str) or not tool.strip():
        raise _BadValue(f'"{key}" is {_short(tool)}, not a tool name', f'write "{key}" as a non-empty string')
    success, error = _outcome(obj)
    ts = _as_timestamp("ts", obj["ts"]) if obj.get("ts") is not None else None
    call = ToolCallRecord(
        tool=tool.strip(), success=success, error=error, duration=_duration(obj), retry=_is_retry(obj)
    )
    return _Line(call, ts)


def _parse_line(raw: bytes, first: bool) -> _Line | None:
    """The call on one log line; ``None`` for a blank line. Raises :class:`_BadValue`."""
    try:
        text = raw.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError:
        raise _BadValue("not UTF-8 text", "write the log as UTF-8") from None
    if not text.strip():
        return None
    try:
        obj = loads(text)
    except RecursionError:
        raise _BadValue("JSON nested too deeply", "write one flat JSON object per line") from None
    except ValueError as exc:
        from pytest_vibeeval.loading.syntax_hints import json_error  # a file that does not parse

        problem = json_error(exc).msg if isinstance(exc, json.JSONDecodeError) else exc
        raise _BadValue(f"not JSON ({problem})", "write one JSON object per line") from None
    if not isinstance(obj, dict):
        kind = type(obj).__name__ if obj is not None else "null"
        raise _BadValue(f"a JSON {kind}, not an object", 'write one object per line, e.g. {"tool": "Bash"}')
    return _parse_call(obj)


def _skip_rest_of_line(stream: IO[bytes]) -> int:
    """Read past the end of the current line; the number of bytes read."""
    skipped = 0
    while chunk := stream.readline(64 * 1024):
        skipped += len(chunk)
        if chunk.endswith(b"\n"):
            break
    return skipped


def _read_lines(stream: IO[bytes], problems: _Problems) -> list[_Line]:
    lines: list[_Line] = []
    number = 0
    read = 0
    while raw := stream.readline(MAX_LINE_BYTES + 1):
        number += 1
        read += len(raw)
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            read += _skip_rest_of_line(stream)
            problems.add(number, "line longer than 1 MiB", "shorten the call's output in the log")
            continue
        if read > MAX_LOG_BYTES or len(lines) >= MAX_CALLS:
            limit = "64 MiB" if read > MAX_LOG_BYTES else f"{MAX_CALLS} calls"
            problems.add(
                number, f"the log is longer than {limit}; the rest is not read", "write a shorter log"
            )
            break
        try:
            line = _parse_line(raw, first=number == 1)
        except _BadValue as exc:
            problems.add(number, f"{exc.what}, line skipped", exc.fix)
            continue
        if line is not None:
            lines.append(line)
    return lines


def read_tool_log(path: Path) -> tuple[list[ToolCallRecord], float | None, list[str]]:
    """Read a JSONL tool log: its calls in order, the seconds from its earliest to its latest timestamp
    (``None`` without timestamps) and the problems of the lines skipped. Raises :class:`ToolLogError`."""
    problems = _Problems(path.name)
    try:
        with path.open("rb") as stream:
            lines = _read_lines(stream, problems)
    except FileNotFoundError:
        raise ToolLogError(
            f"tool log {path}: not found; check the path, or that the agent wrote it"
        ) from None
    except IsADirectoryError:
        raise ToolLogError(f"tool log {path}: is a folder, not a file; give the JSONL file's path") from None
    except OSError as exc:
        raise ToolLogError(f"tool log {path}: cannot be read ({exc.strerror or exc})") from None
    stamps = [line.ts for line in lines if line.ts is not None]
    duration = max(stamps) - min(stamps) if stamps else None
    return [line.call for line in lines], duration, problems.render()


def count_retries(calls: Sequence[ToolCallRecord]) -> int:
    """Calls marked as retries, plus unmarked calls that repeat the tool of a call that failed in the
    batch right before theirs (each call counted once). A batch is the calls the agent issued together
    (:attr:`ToolCallRecord.batch`), so a sibling of a failed call is not a retry; a call without one
    is a batch of its own, so that the batch before it is the call right before it."""
    retries = 0
    failed_before: set[str] = set()  # the tools that failed in the previous batch
    failed_now: set[str] = set()
    current: object = None
    for index, call in enumerate(calls):
        batch = call.batch if call.batch is not None else ("call", index)
        if batch != current:
            failed_before, failed_now, current = failed_now, set(), batch
        retries += call.retry or call.tool in failed_before
        if call.success is False:
            failed_now.add(call.tool)
    return retries


def summarise(
    calls: Sequence[ToolCallRecord],
    source: str,
    duration: float | None = None,
    problems: Sequence[str] = (),
    api_retries: int = 0,
) -> TranscriptRecord:
    """Summarise tool calls: counts per tool, failed calls (``tool_fail``) and retries (``retry``:
    retried tool calls and the ``api_retries``, requests to the model the agent retried).

    ``errors`` always holds both keys, zero counts included. Calls with no reported outcome count as
    neither succeeded nor failed."""
    tools: dict[str, ToolStats] = {}
    for call in calls:
        stats = tools.setdefault(call.tool, ToolStats(calls=0, succeeded=0, failed=0))
        stats.calls += 1
        stats.succeeded += call.success is True
        stats.failed += call.success is False
    retries = count_retries(calls)
    return TranscriptRecord(
        source=source,
        calls=len(calls),
        succeeded=sum(stats.succeeded for stats in tools.values()),
        tools=tools,
        errors={"tool_fail": sum(stats.failed for stats in tools.values()), "retry": retries + api_retries},
        retries=retries,
        api_retries=api_retries,
        duration=duration,
        problems=list(problems),
    )
