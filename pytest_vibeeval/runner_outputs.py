"""The unified runner's output tree from a results file: ``<dir>/<eval>-<time>/<config>/results.json``
per coding-agent eval, in the runner's shape (commands with exit codes and durations in ms, the
``vybes`` score with its breakdown by module and its time penalty), for teams whose scoreboards
read that tree. No pytest here.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, NamedTuple

from .bounded_read import UnreadableFile, read_end
from .results import EvalRecord, ResultsFile, StepRecord
from .scoring.vybes import vybes_result

RESULTS_NAME = "results.json"
MAX_LOG_CHARS = 1_000_000  # of each command's stdout and stderr, from its end


def _stamp(iso: str) -> str:
    """``2026-01-02T03:04:05+00:00`` as the runner names folders: ``2026-01-02T03-04-05Z``."""
    text = iso.replace("+00:00", "Z")
    return re.sub(r"[:.]", "-", text)


def _tail(path: Path) -> str:
    """The last :data:`MAX_LOG_CHARS` characters of a step log, read from its end (a UTF-8
    character is at most 4 bytes); empty if it is not a regular file."""
    try:
        data, _ = read_end(path, 4 * MAX_LOG_CHARS)
    except (OSError, UnreadableFile):
        return ""
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return text[-MAX_LOG_CHARS:]


class _Logs:
    """Reads the step logs, counting those that are gone (pytest removed their temporary folder)."""

    def __init__(self) -> None:
        self.missing = 0

    def read(self, path: Path) -> str:
        if os.path.lexists(path):
            return _tail(path)
        self.missing += 1
        return f"[log not found: {path}]"


def _command(step: StepRecord, logs: _Logs) -> dict[str, Any]:
    stdout = Path(step.log) if step.log else None
    exit_code = 1 if step.exit_code is None else step.exit_code  # killed or never started, as the runner
    return {
        "name": step.argv[0] if step.argv else step.name,
        "command": " ".join(step.argv),
        "cwd": step.cwd,
        "exitCode": exit_code,
        "stdout": logs.read(stdout) if stdout else "",
        "stderr": logs.read(stdout.with_suffix(".stderr")) if stdout else "",
        "duration": round(step.duration * 1000),
        "success": exit_code == 0,
    }


def runner_results(
    record: EvalRecord, config_id: str, started: str, finished: str, logs: _Logs | None = None
) -> dict[str, Any]:
    """One eval's ``results.json`` in the runner's shape; ``started``/``finished`` stand in for the
    record's own times when it has none (results files written before they were recorded)."""
    logs = logs or _Logs()
    return {
        "evalName": record.name,
        "configId": config_id,
        "startedAt": record.started_at or started,
        "finishedAt": record.finished_at or finished,
        "status": "pass" if record.outcome == "passed" else "fail",
        "totalDuration": round(sum(record.phase_durations.values()) * 1000),
        "commands": [_command(step, logs) for step in record.steps],
        "workspaceArchive": record.workspace or "",
        "vybes": vybes_result(record, config_id),
    }


class Written(NamedTuple):
    """The files :func:`write_runner_outputs` wrote, and how many step logs it found gone."""

    files: list[Path]
    missing_logs: int


def write_runner_outputs(results: ResultsFile, folder: Path) -> Written:
    """Write the tree for every coding-agent eval that ran; a step log that is gone is written as
    ``[log not found: <path>]`` and counted."""
    written: list[Path] = []
    logs = _Logs()
    stamp = _stamp(results.started_at)
    for run in results.runs:
        for record in run.evals:
            if record.outcome == "skipped" or not any(step.phase == "agent" for step in record.steps):
                continue
            suffix = f"-r{record.repeat}" if record.repeat else ""
            target = folder / f"{record.name}-{stamp}{suffix}" / run.configuration / RESULTS_NAME
            target.parent.mkdir(parents=True, exist_ok=True)
            data = runner_results(record, run.configuration, results.started_at, results.finished_at, logs)
            temporary = target.with_suffix(".tmp")
            temporary.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
            os.replace(temporary, target)
            written.append(target)
    return Written(written, logs.missing)
