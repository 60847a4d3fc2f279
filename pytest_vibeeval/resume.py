"""--vibe-resume: reuse the results of items that finished in an earlier run, so an interrupted
run continues where it stopped.

An item's earlier record is reused when the same suite file content and configuration settings
as written (the run's ``input_digest``: not what a version of the plugin fills in, so a run
resumes after an upgrade), configuration id, eval and repeat finished there with a verdict
(passed or failed). Errors, skips and anything not reached run again.

A results file written by a resumed session names the files it resumed from (``resumed_from``):
those are read too, so that a chain of resumed sessions (one of a ``-k`` subset among them) loses
none of the evals an earlier file of it finished. The newest file's record of an item wins.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .bounded_read import UnreadableFile, read_bounded
from .models import Configuration
from .results import EvalRecord

if TYPE_CHECKING:  # the results files' reader: imported by a session that resumes (not by plan's digests)
    from .report.baseline import ReadResults

Key = tuple[str, str, str, str, int]  # source, input digest, configuration, eval, repeat
FINISHED = ("passed", "failed")
MAX_FILES = 32  # results files one --vibe-resume reads: the named one and those it resumed from


def resume_key(source: str, input_digest: str, configuration: str, record: EvalRecord) -> Key:
    """What --vibe-resume matches ``record`` by: its run's suite file (``source``), input digest and
    configuration id, and its eval and repeat."""
    return (source, input_digest, configuration, record.name, record.repeat)


def files_digest(files: Iterable[Path]) -> str:
    """sha256 over the files' bytes (a missing one counts as missing)."""
    digest = hashlib.sha256()
    for path in files:
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<missing>")
        digest.update(b"\0")
    return digest.hexdigest()


def input_digests(
    files: str, configuration: Configuration | None, variables: Mapping[str, str] | None = None
) -> tuple[str, str]:
    """What an item's earlier result depends on: its suite files (``files``, from
    :func:`files_digest`), the configuration's settings as written (not what a version of the
    plugin fills in: a default, a new setting, a preset's, so that a run resumes after an upgrade)
    and the template variables (--vibe-var, vibe_vars) its prompt may use. Then the digest that
    results files written before took every setting into (matched too, so that a run interrupted
    before this version resumes)."""
    variables = dict(variables or {})
    if configuration is None:
        implicit = _digest([files, None, variables])
        return implicit, implicit
    written = _digest([files, {"written": configuration.written_settings()}, variables])
    return written, _digest([files, configuration.model_dump(mode="json"), variables])


def _digest(material: object) -> str:
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode("utf-8")).hexdigest()


@dataclass
class ResumeIndex:
    """The finished records of an earlier results file and of the files it resumed from, by item."""

    source: str  # the results file named, as shown to the user
    records: dict[Key, EvalRecord] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)  # the files read, newest first (``resumed_from``)
    notes: list[str] = field(default_factory=list)  # for the summary (the controller's only)
    is_journal: bool = False  # ``source`` is the journal of a session that did not finish
    journals: dict[str, set[Key]] = field(default_factory=dict)  # journals read: their finished items
    finished: dict[str, set[Key]] = field(default_factory=dict)  # results files read: their finished items
    started: dict[str, str] = field(default_factory=dict)  # results files read: their ``started_at``

    def find(
        self, source: str, digests: Iterable[str], configuration: str, eval_id: str, repeat: int
    ) -> EvalRecord | None:
        """The finished record of the item, under the first of its ``digests`` that has one."""
        for digest in digests:
            found = self.records.get((source, digest, configuration, eval_id, repeat))
            if found is not None:
                return found
        return None

    def add(self, shown: str, read: ReadResults) -> None:
        """Index the finished records of the file ``shown`` (read after every newer one: a record
        already indexed stays). A record keeps the file it was produced in as ``reused_from``."""
        self.files.append(shown)
        self.started[shown] = read.results.started_at
        finished = self.finished.setdefault(shown, set())
        note = read.note(f"--vibe-resume {shown}")
        self.notes += [note] if note else []
        for run in read.results.runs:
            if run.input_digest is None:
                continue  # written before results kept digests: nothing can be matched safely
            for record in run.evals:
                key = resume_key(run.source, run.input_digest, run.configuration, record)
                if record.outcome in FINISHED:
                    finished.add(key)
                    if key not in self.records:
                        self.records[key] = record.model_copy(
                            update={"reused_from": record.reused_from or shown}
                        )

    def carried_over(self, reused: Iterable[Key]) -> list[str]:
        """The journals read whose finished items a session all reused (``reused``: the keys of the
        records it reused): its results file holds them now, so they can go. Any other (a ``-k``
        subset) stays, named in ``resumed_from``, so that nothing paid for is lost."""
        done = set(reused)
        return [name for name, keys in self.journals.items() if keys <= done]

    def replaced_by(self, written: Path, locate: Callable[[str], Path]) -> str | None:
        """The file read (as results name it) that ``written`` is, the file this session writes its
        results to (``--vibe-resume out.json --vibe-results out.json``), or None."""
        from .journal import place as _place

        target = _place(written)
        return next((name for name in self.files if _place(locate(name)) == target), None)

    def to_json(self) -> str:
        """The index as text, for xdist workers (through ``workerinput``)."""
        entries = [[list(key), record.model_dump(mode="json")] for key, record in self.records.items()]
        return json.dumps({"source": self.source, "records": entries})

    @classmethod
    def from_json(cls, text: str) -> ResumeIndex:
        data = json.loads(text)
        index = cls(data["source"])
        for (source, digest, configuration, eval_id, repeat), record in data["records"]:
            key = (source, digest, configuration, eval_id, int(repeat))
            index.records[key] = EvalRecord.model_validate(record)
        return index


def load_resume(path: Path, shown: str, locate: Callable[[str], Path]) -> ResumeIndex:
    """The finished records of the results file at ``path`` and of the files it resumed from (each
    read once, newest first, at most :data:`MAX_FILES`; ``locate`` finds a file as results name
    it). Raises BaselineError (naming the file) when the named file cannot be read; an earlier one
    that cannot be is a note."""
    from .report.baseline import read_results

    named = read_results(path)
    index = ResumeIndex(shown)
    index.add(shown, named)
    _read_chain(index, named.results.resumed_from, shown, locate)
    return index


def load_journal(path: Path, shown: str, locate: Callable[[str], Path]) -> ResumeIndex:
    """The finished records of the journal at ``path`` (a session that did not finish; see
    ``journal.py``) and of the files that session resumed from, as :func:`load_resume` reads them.
    Raises BaselineError when the journal cannot be read at all."""
    index = ResumeIndex(shown, is_journal=True)
    index.notes.append(
        f"--vibe-resume: {shown} is the journal of a session that did not finish (it wrote no results "
        "file): the evals it finished are reused"
    )
    resumed_from = _add_journal(index, path, shown)
    _read_chain(index, resumed_from, shown, locate)
    return index


def _add_journal(index: ResumeIndex, path: Path, shown: str) -> list[str]:
    """Index the finished records of the journal at ``path`` (after every newer file's: a record
    already indexed stays) and return the files its session resumed from. A torn last line (the
    kill came mid-write) and a damaged line are notes naming the line, never errors."""
    from .report.baseline import MAX_RESULTS_BYTES, BaselineError

    try:  # only a regular file, and bounded: a FIFO named as a journal never blocks the session
        data = read_bounded(path, MAX_RESULTS_BYTES)
    except UnreadableFile as exc:
        raise BaselineError(f"{path}: {exc}") from None
    except OSError as exc:
        raise BaselineError(f"{path}: {exc.strerror or exc}") from None
    index.files.append(shown)
    lines = data.split(b"\n")
    torn = lines.pop()  # after the last line feed: empty, or a line the kill cut short
    if torn.strip():
        index.notes.append(f"--vibe-resume: {shown}:{len(lines) + 1}: ignored its last line, cut short")
    resumed_from: list[str] = []
    found: dict[Key, EvalRecord] = {}
    for number, line in enumerate(lines, 1):
        try:
            entry = json.loads(line)
            if number == 1 and "journal" in entry:
                resumed_from = [str(name) for name in entry.get("resumed_from", [])]
                continue
            record = EvalRecord.model_validate(entry["record"])
            key = resume_key(
                str(entry["source"]), str(entry["input_digest"]), str(entry["configuration"]), record
            )
        except (ValueError, KeyError, TypeError) as exc:
            why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            index.notes.append(f"--vibe-resume: {shown}:{number}: damaged line skipped ({why})")
            continue
        found.pop(key, None)  # an item that ran again: its last line counts
        if record.outcome in FINISHED:
            found[key] = record.model_copy(update={"reused_from": record.reused_from or shown})
    for key, record in found.items():
        index.records.setdefault(key, record)
    index.journals[shown] = set(found)
    return resumed_from


def _read_chain(
    index: ResumeIndex, earlier: Iterable[str], named_by: str, locate: Callable[[str], Path]
) -> None:
    """Add the files ``named_by`` resumed from, and theirs (each once, at most :data:`MAX_FILES`)."""
    from .journal import SUFFIX as JOURNAL_SUFFIX
    from .journal import place as _place
    from .report.baseline import BaselineError, read_results

    pending = deque((name, named_by) for name in earlier)
    seen = set(index.files)
    places = {_place(locate(name)) for name in index.files}  # a file named otherwise too
    while pending and len(index.files) < MAX_FILES:
        name, by = pending.popleft()
        if name in seen:
            continue
        seen.add(name)
        where = locate(name)
        if _place(where) in places:
            continue
        places.add(_place(where))
        try:
            if name.endswith(JOURNAL_SUFFIX):  # kept by a session that did not carry all of it over
                if os.path.lexists(where):  # gone: a later session carried all of it into its file
                    pending += ((later, name) for later in _add_journal(index, where, name))
                continue
            read = read_results(where)
        except BaselineError as exc:
            why = str(exc).removeprefix(f"{where}: ")
            index.notes.append(
                f"--vibe-resume: {name}, which {by} resumed from, cannot be read ({why}); "
                "the evals only it held run again"
            )
            continue
        index.add(name, read)
        pending += ((later, name) for later in read.results.resumed_from)
    unread = {name for name, _ in pending} - seen
    if unread:
        index.notes.append(
            f"--vibe-resume: {index.source} resumes a chain of more than {MAX_FILES} results files; the "
            f"{len(unread)} earliest were not read (the evals only they held run again)"
        )
