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

from .atomic_files import write_atomic
from .bounded_read import UnreadableFile, read_end
from .filenames import NAME_MAX, bounded_name
from .results import EvalRecord, ResultsFile, RunRecord, StepRecord, is_coding_record
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
    """The files :func:`write_runner_outputs` wrote, how many step logs it found gone, and a line
    for each file whose folder was disambiguated (another run's eval had its name)."""

    files: list[Path]
    missing_logs: int
    renamed: tuple[str, ...] = ()


class OutputsNotWritten(Exception):
    """The tree cannot be written where asked; the message names the path and what to do."""


class _Planned(NamedTuple):
    run: RunRecord
    record: EvalRecord
    target: Path


def _one_folder_name(name: str, what: str) -> None:
    """Refuse a name (read from a results file, which may have been edited) that would not be one
    folder inside ``--dir``: ``..``, a path, a NUL."""
    if not name or name in {".", ".."} or "/" in name or "\\" in name or "\0" in name:
        raise OutputsNotWritten(
            f"the {what} {name!r} in the results file cannot name a folder (it would leave --dir); "
            "was the file edited?"
        )


def _plan(results: ResultsFile, folder: Path) -> tuple[list[_Planned], list[str]]:
    """Where each coding-agent eval's file goes. Two runs of the same eval name × configuration (two
    suites with an evaluation of that name) would share the runner's path: the later ones in the
    results file get ``-2``, ``-3``, … after the folder name, and a line saying whose it is."""
    stamp = _stamp(results.started_at)
    planned: list[_Planned] = []
    first: dict[Path, _Planned] = {}
    taken: set[Path] = set()
    renamed: list[str] = []
    for run in results.runs:
        for record in run.evals:
            if record.outcome == "skipped" or not is_coding_record(record):
                continue
            _one_folder_name(record.name, "eval name")
            _one_folder_name(run.configuration, "configuration")
            suffix = f"-r{record.repeat}" if record.repeat else ""
            # A name too long for a folder (255 bytes) is cut, with a hash (room left for -2, …).
            base = bounded_name(f"{record.name}-{stamp}{suffix}", NAME_MAX - 8)
            configuration = bounded_name(run.configuration)
            target = folder / base / configuration / RESULTS_NAME
            n = 1
            while target in taken:
                n += 1
                target = folder / f"{base}-{n}" / configuration / RESULTS_NAME
            taken.add(target)
            entry = _Planned(run, record, target)
            planned.append(entry)
            plain = folder / base / configuration / RESULTS_NAME
            if (base, configuration) != (f"{record.name}-{stamp}{suffix}", run.configuration):
                renamed.append(
                    f"{target}: {record.name} × {run.configuration} (the runner's folder names would be "
                    f"longer than a file name may be, {NAME_MAX} bytes: cut, with a hash)"
                )
            if n == 1:
                first[plain] = entry
            else:
                other = first[plain]
                renamed.append(
                    f"{target}: {record.name} × {run.configuration} of {run.source} (that of "
                    f"{other.run.source} is {other.target})"
                )
    return planned, renamed


def not_a_folder(folder: Path) -> str | None:
    """Why ``folder``, given to a command's ``--dir``, cannot be one (it is a file), or None."""
    if os.path.lexists(folder) and not folder.is_dir():
        return f"{folder} is not a folder: give --dir a folder (it is made if missing)"
    return None


def _make_folder(folder: Path) -> None:
    """``folder`` and its parents, or :class:`OutputsNotWritten` saying why not."""
    problem = not_a_folder(folder)
    if problem:
        raise OutputsNotWritten(problem)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputsNotWritten(
            f"cannot make the folder {folder}: {exc.strerror or exc}; give --dir a folder you can write"
        ) from None


def write_runner_outputs(results: ResultsFile, folder: Path) -> Written:
    """Write the tree for every coding-agent eval that ran; a step log that is gone is written as
    ``[log not found: <path>]`` and counted. :class:`OutputsNotWritten` when ``folder`` (or a file
    in it) cannot be written."""
    planned, renamed = _plan(results, folder)
    if not planned:
        return Written([], 0)
    _make_folder(folder)
    written: list[Path] = []
    logs = _Logs()
    for run, record, target in planned:
        data = runner_results(record, run.configuration, results.started_at, results.finished_at, logs)
        try:
            write_atomic(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise OutputsNotWritten(f"cannot write {target}: {exc.strerror or exc}") from None
        written.append(target)
    return Written(written, logs.missing, tuple(renamed))
