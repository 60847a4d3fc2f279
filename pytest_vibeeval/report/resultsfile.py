"""Write the results JSON atomically (temp file + rename)."""

from __future__ import annotations

import datetime as dt
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ..results import ResultsFile, RunRecord

DEFAULT_DIR = Path(".vibeeval") / "results"
DEFAULT_HISTORY = Path(".vibeeval") / "history.jsonl"


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the mode any file the user writes gets.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def unwritable_reason(path: Path) -> str | None:
    """Why a file cannot be written at ``path`` (a folder there, a file where a folder must be, no
    write permission), or None; checked before a run, so that its results are not lost at the end."""
    if path.is_dir():
        return f"{path} is a folder; name a file in it, e.g. {path / 'results.json'}"
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the folders write_atomic would create
    if not folder.is_dir():
        return f"{folder} is not a folder, so {path} cannot be created"
    target = path if path.exists() else folder
    if not os.access(target, os.W_OK) or not os.access(folder, os.W_OK | os.X_OK):
        return f"{target} is not writable"
    return None


def build_results(
    runs: Sequence[RunRecord],
    started_at: str,
    interrupted: bool,
    load_errors: Sequence[str] = (),
    stopped_early: str | None = None,
) -> ResultsFile:
    finished = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return ResultsFile(
        started_at=started_at,
        finished_at=finished,
        interrupted=interrupted,
        stopped_early=stopped_early,
        load_errors=list(load_errors),
        runs=list(runs),
    )


def write_results(results: ResultsFile, explicit: Path | None, rootdir: Path) -> list[Path]:
    """Write to ``explicit``, or to ``<rootdir>/.vibeeval/results/<timestamp>.json`` and, for a
    complete run, ``latest.json`` (a partial run never replaces it)."""
    text = results.model_dump_json(indent=2) + "\n"
    if explicit is not None:
        write_atomic(explicit, text)
        return [explicit]
    folder = rootdir / DEFAULT_DIR
    stamp = results.started_at.replace(":", "").replace("-", "").replace("+0000", "Z")
    stamped = folder / f"{stamp}.json"
    n = 1
    while stamped.exists():
        n += 1
        stamped = folder / f"{stamp}-{n}.json"
    write_atomic(stamped, text)
    if results.partial:
        return [stamped]
    write_atomic(folder / "latest.json", text)
    return [stamped, folder / "latest.json"]
