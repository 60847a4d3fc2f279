"""Write the results JSON atomically (temp file + rename)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel

from ..atomic_files import copy_atomic, unwritable_reason, write_atomic, write_new
from ..results import ResultsFile, RunRecord
from ..scoring.spool import OnDemand
from ..surrogates import model_json

DEFAULT_DIR = Path(".vibeeval") / "results"
LATEST = "latest.json"  # in DEFAULT_DIR: a copy of the last complete run's timestamped file


def default_folder_problem(rootdir: Path) -> str | None:
    """Why a session without --vibe-results could not write its results under ``rootdir`` (a file
    where the folder goes, a folder where latest.json goes, no write permission in the folder), or
    None: checked before its evals run, as an explicit path is."""
    problem = unwritable_reason(rootdir / DEFAULT_DIR / LATEST, example=None)
    if problem is None:
        return None
    return (
        f"the results folder {rootdir / DEFAULT_DIR} cannot be written ({problem}): move what is in "
        "the way, or write the results elsewhere with --vibe-results PATH"
    )


def build_results(
    runs: Sequence[RunRecord],
    started_at: str,
    interrupted: bool,
    load_errors: Sequence[str] = (),
    stopped_early: str | None = None,
    resumed_from: Sequence[str] = (),
) -> ResultsFile:
    finished = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    return ResultsFile(
        started_at=started_at,
        finished_at=finished,
        interrupted=interrupted,
        stopped_early=stopped_early,
        load_errors=list(load_errors),
        resumed_from=list(resumed_from),
        runs=list(runs),
    )


def _indented(text: str, prefix: str) -> str:
    # A JSON string never holds a raw line break, so every "\n" in ``text`` is between lines.
    return prefix + text.replace("\n", "\n" + prefix)


# The list fields dumped an item at a time, in the order of the model's fields.
_SPLICED: dict[type[BaseModel], tuple[str, ...]] = {
    ResultsFile: ("runs",),
    RunRecord: ("eval_stats", "evals"),
}


def _spliced(model: BaseModel, depth: int) -> Iterator[str]:
    """``model.model_dump_json(indent=2)`` indented to ``depth`` levels, with its list fields of
    :data:`_SPLICED` dumped an item at a time (see :func:`results_json`)."""
    prefix = "  " * depth
    fields = [name for name in _SPLICED.get(type(model), ()) if getattr(model, name)]
    if not fields:  # a record or stats: nothing to splice, no copy to make
        yield _indented(model_json(model, indent=2), prefix)
        return
    emptied = model.model_copy(update={name: [] for name in fields})
    text = _indented(model_json(emptied, indent=2), prefix)
    heads = []
    for name in fields:
        head, found, text = text.partition(f'\n{prefix}  "{name}": []')  # a key of ``model``
        if not found:  # a pydantic that lays JSON out otherwise: the whole text at once, still correct
            yield _indented(model_json(model, indent=2), prefix)
            return
        heads.append(head)
    heads.reverse()  # each let go of once written: a run's holds its variables, 13 per eval
    for name in fields:
        yield f'{heads.pop()}\n{prefix}  "{name}": [\n'
        yield from _items(getattr(model, name), depth + 2)
        yield f"\n{prefix}  ]"
    yield text


def _items(items: Iterable[BaseModel], depth: int) -> Iterator[str]:
    """A spliced list's items at ``depth``, separated by commas; a record or stats (thousands of
    them) as one piece, without a generator of its own."""
    prefix = "  " * depth
    texts = items.texts() if isinstance(items, OnDemand) else None
    separator = ""
    if texts is not None:  # the controller's stats: their text made from their counts, not the models
        for text in texts:
            yield separator + _indented(text, prefix)
            separator = ",\n"
        return
    for item in items:
        if type(item) in _SPLICED:
            if separator:
                yield separator
            yield from _spliced(item, depth)
        else:
            yield separator + _indented(model_json(item, indent=2), prefix)
        separator = ",\n"


def results_json(results: ResultsFile) -> Iterator[str]:
    """The text of ``results.model_dump_json(indent=2)`` and a final line break, in pieces of an
    eval (or an eval's stats) each: writing the results file never holds all of it in memory at
    once (tens of MB for 10 000 evals, twice while pydantic builds it)."""
    yield from _spliced(results, 0)
    yield "\n"


class ResultsNotWritten(Exception):
    """Not every results file could be written: the message says which and why, and where the
    results are instead; ``written``: the files that were written (empty: none)."""

    def __init__(self, message: str, written: list[Path]) -> None:
        super().__init__(message, written)
        self.message, self.written = message, written

    def __str__(self) -> str:
        return self.message


def write_results(
    results: ResultsFile, explicit: Path | None, rootdir: Path, unreplaced: str | None = None
) -> list[Path]:
    """Write to ``explicit``, or to ``<rootdir>/.vibeeval/results/<timestamp>.json`` and, for a
    complete run, ``latest.json`` (a partial run never replaces it). When ``explicit`` cannot be
    written after all (checked before the run, but the disk may change), the results go to the
    timestamped file; when it is not to be replaced (``unreplaced``: why), to a new file beside it.
    :class:`ResultsNotWritten` says what could not be written, and where the results are instead,
    if anywhere; no other error is raised."""
    if explicit is None:
        return _write_default(results, rootdir)
    if unreplaced is not None:
        return _write_beside(results, explicit, unreplaced)
    try:
        write_atomic(explicit, results_json(results), into_special=True)
    except OSError as exc:
        wanted = f"results not written to {explicit}: {_reason(exc)}"
        stamped = _write_stamped(results, rootdir, f"{wanted}, nor")
        raise ResultsNotWritten(f"{wanted}; they are in {stamped} instead", [stamped]) from None
    return [explicit]


def _write_beside(results: ResultsFile, explicit: Path, unreplaced: str) -> list[Path]:
    """Write a new file beside ``explicit`` (``out-2.json``), which stays as it is (``unreplaced``:
    why); ResultsNotWritten says so."""
    wanted = f"results not written to {explicit}: {unreplaced}"
    stem = explicit.stem if explicit.suffix == ".json" else explicit.name
    try:
        beside = write_new(explicit.parent, stem, results_json(results))
    except OSError as exc:
        raise ResultsNotWritten(f"{wanted}, nor to a new file beside it: {_reason(exc)}", []) from None
    raise ResultsNotWritten(f"{wanted}; they are in {beside} instead", [beside])


def _write_default(results: ResultsFile, rootdir: Path) -> list[Path]:
    stamped = _write_stamped(results, rootdir, "results not written")
    if results.partial:
        return [stamped]
    latest = stamped.parent / LATEST
    try:
        copy_atomic(stamped, latest)
    except OSError as exc:
        raise ResultsNotWritten(
            f"{latest} not replaced: {_reason(exc)}; this run's results are in {stamped} only "
            f"({LATEST} is not this run's)",
            [stamped],
        ) from None
    return [stamped, latest]


def _write_stamped(results: ResultsFile, rootdir: Path, unwritten: str) -> Path:
    """Write the timestamped file in the default folder; when it cannot be, ResultsNotWritten
    saying ``unwritten`` to the folder, and why."""
    folder = rootdir / DEFAULT_DIR
    try:
        return write_new(folder, started_stamp(results.started_at), results_json(results))
    except OSError as exc:
        raise ResultsNotWritten(f"{unwritten} to {folder}: {_reason(exc)}", []) from None


_STAMP = re.compile(r"\d{8}T\d{6}Z")  # a timestamped file's stem, as started_stamp makes it


def started_stamp(started_at: str) -> str:
    """A session's start as its timestamped files in the default folder are named."""
    return started_at.replace(":", "").replace("-", "").replace("+0000", "Z")


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def stamped_original(path: Path) -> Path:
    """For a ``latest.json``, the timestamped file beside it that it is a copy of (the newest such);
    else, or when there is none any more, ``path``. A record naming latest.json would name the file
    the session then replaces."""
    if path.name != LATEST:
        return path
    import filecmp  # only where a record names latest.json

    try:
        size = path.stat().st_size
        twins = [
            p
            for p in path.parent.glob("*.json")
            if p.name != LATEST and p.is_file() and p.stat().st_size == size
        ]
        twins.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
        return next((p for p in twins if filecmp.cmp(p, path, shallow=False)), path)
    except OSError:  # removed meanwhile, unreadable: read the copy itself
        return path


def keep_copy(path: Path, rootdir: Path, started_at: str) -> Path:
    """Copy the results file at ``path`` into the default folder as the timestamped file of the
    session that started at ``started_at`` (now, when that is no time: edited by hand; another name
    when that one is taken), or, when that folder cannot take it, beside ``path`` (its folder is
    about to be written); its path. An OSError when neither can."""
    stamp = started_stamp(started_at)
    if not _STAMP.fullmatch(stamp):  # edited by hand: never a name outside the folder
        stamp = started_stamp(dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    try:
        return _copy_new(path, rootdir / DEFAULT_DIR, stamp)
    except OSError:
        return _copy_new(path, path.parent, stamp)


def _copy_new(path: Path, folder: Path, stem: str) -> Path:
    with path.open(encoding="utf-8", newline="") as handle:
        return write_new(folder, stem, iter(lambda: handle.read(1 << 16), ""))
