"""Obsolete recordings: the answers in a --vibe-record / --vibe-replay store that no eval of a
session used (recorded for a prompt, a configuration or request settings that changed since, or
for an eval that is gone), found at the end of a session that ran its whole selection, and removed
on request (``--vibe-prune-recordings``).

Each process notes the files it replayed or recorded (:func:`.recording.used_recordings`); an
xdist worker hands them to the controller, the only place that decides. Answers are keyed by the
request, not the suite, so only a session that collected every suite counts (run from the rootdir
without path arguments), and only the folders of the configurations that every collected suite
listing them ran are looked at (the workers hand over those a suite lists but did not run). The
store is read, and files removed, as ``cache prune`` does (:mod:`.cache_admin`): never through a
link, never a file written again since it was read, never what is not a stored answer."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .answer_files import configuration_folder
from .cache_admin import CacheAdminError, CacheContents, CacheFile, ConfigurationFolder, Pruning, read_answers

if TYPE_CHECKING:
    from .results import ResultsFile

MISS = "no recorded answer for"  # how a replay miss's message starts: the eval reached the store


PATHS = "path arguments given"
NOT_ROOTDIR = "not run from the rootdir"
UNSAID = "pytest does not say where it collected from"
ELSEWHERE = {PATHS, NOT_ROOTDIR, UNSAID}  # a narrowing that a run from the rootdir without paths avoids


NOT_RUN = "not run"  # why a configuration folder is not looked at: the session did not run it


class StoreError(Exception):
    """A store that cannot be looked at; the message names it and says why."""


@dataclass
class Obsolete:
    """What a session found in its store: the recordings no eval used (``pruning``), and the
    configuration folders it did not look at, each with why (:data:`NOT_RUN`, or the suites that
    list it but did not run it)."""

    store: Path
    pruning: Pruning
    unchecked: dict[str, str] = field(default_factory=dict)

    @property
    def unused(self) -> list[CacheFile]:
        return self.pruning.going()

    def kept(self, gone: Iterable[CacheFile]) -> int:
        """How many recordings the store holds but ``gone``."""
        going = {file.path for file in gone}
        configurations = self.pruning.contents.configurations
        return sum(file.path not in going for c in configurations for file in c.entries)


def read_store(folder: Path) -> CacheContents:
    """What the store at ``folder`` holds; a :class:`StoreError` saying why it cannot be read."""
    if not folder.exists():
        raise StoreError(f"the record store {folder} is gone (no such folder)")
    if not folder.is_dir():
        raise StoreError(f"the record store {folder} is not a folder")
    try:
        return read_answers(folder)
    except CacheAdminError as exc:
        raise StoreError(f"{exc}; make the record store readable") from None


def obsolete(
    folder: Path,
    used: Iterable[str],
    configurations: Iterable[str],
    not_run: Mapping[str, Iterable[str]] | None = None,
) -> Obsolete:
    """The recordings in the store at ``folder`` that are not in ``used`` (paths relative to it),
    in the folders of ``configurations`` (the ids the session ran) and of any recording used (a
    judge's), but those of ``not_run`` (id: the suites that list it but did not run it: their
    recordings there may be used); a :class:`StoreError` where the store cannot be read."""
    used = set(used)
    contents = read_store(folder)
    looked = {configuration_folder(Path(), config_id).name for config_id in configurations}
    looked.update(path.split("/", 1)[0] for path in used)
    skipped = {
        configuration_folder(Path(), cid).name: f"{', '.join(sorted(suites))} lists it but did not run it"
        for cid, suites in (not_run or {}).items()
    }
    chosen: list[tuple[ConfigurationFolder, list[CacheFile]]] = []
    unchecked: dict[str, str] = {}
    for configuration in contents.configurations:
        name = configuration.folder.name
        if name not in looked or name in skipped:
            if configuration.entries:
                unchecked[configuration.name] = skipped.get(name, NOT_RUN)
            continue
        going = [file for file in configuration.files if _relative(folder, file.path) not in used]
        chosen.append((configuration, going))
    return Obsolete(folder, Pruning(contents, chosen, []), unchecked)


def _relative(folder: Path, path: Path) -> str:
    return path.relative_to(folder).as_posix()


def cannot_tell(
    narrowed: list[str], partial: str | None, outcomes: Iterable[tuple[str, str | None, bool]]
) -> str | None:
    """Why a session cannot tell which recordings are obsolete, or None: it narrowed its selection
    (``narrowed``: the options that did), it was ``partial`` (why), or one of its evals may not have
    asked for its answers (``outcomes``: each eval's outcome, message, and whether it has a turn or
    step that did not run). A failed eval was answered; an errored one only where the error is a
    replay miss (its answer is not in the store)."""
    if narrowed:
        why = f"the selection was narrowed ({', '.join(narrowed)})"
        if ELSEWHERE.intersection(narrowed):
            why += "; only a run from the rootdir with no path arguments collects every suite"
        return why
    if partial:
        return f"the run is partial ({partial})"
    unasked = 0
    for outcome, message, cut_short in outcomes:
        if outcome == "passed" or (outcome == "failed" and not cut_short):
            continue
        if outcome == "error" and message and MISS in message:
            continue
        unasked += 1
    if unasked:
        return (
            f"{unasked} eval(s) skipped, errored or stopped before all their prompts were answered "
            "(their recordings may be unused)"
        )
    return None


def narrowing(config: Any, evals: tuple[str, ...] | None, resumed: bool) -> list[str]:
    """The options with which the session ``config`` (a pytest config) ran less than its whole
    selection: a recording an eval left out did not reach is not obsolete. ``evals``:
    --vibe-eval's names; ``resumed``: --vibe-resume reused earlier results."""
    found = [
        option
        for option, dest in (
            ("-k", "keyword"),
            ("-m", "markexpr"),
            ("--deselect", "deselect"),
            ("--lf", "lf"),
            ("--sw", "stepwise"),
            ("--ignore", "ignore"),
            ("--ignore-glob", "ignore_glob"),
        )
        if config.getoption(dest, None)
    ]
    if any("::" in arg for arg in config.args):
        found.append("node ids")
    found.extend(_collected_from_elsewhere(config))
    if evals is not None and evals != ("ALL",):
        found.append("--vibe-eval")
    if resumed:
        found.append("--vibe-resume")
    return found


def _collected_from_elsewhere(config: Any) -> list[str]:
    """Why the session ``config`` may not have collected every suite of the project: only one run
    from the rootdir without path arguments (testpaths, or the rootdir itself) did. A recording of
    a suite it did not collect may be filed beside those of one it did (answers are keyed by the
    request), so it cannot be told from an unused one. Pytest without ``args_source`` cannot say."""
    kinds = getattr(type(config), "ArgsSource", None)
    source = getattr(config, "args_source", None)
    if kinds is None or source is None:
        return [UNSAID]
    found: list[str] = []
    if source == kinds.ARGS and not any("::" in arg for arg in config.args):
        found.append(PATHS)
    if Path(config.invocation_params.dir).resolve() != Path(config.rootpath).resolve():
        found.append(NOT_ROOTDIR)
    return found


def outcomes(results: ResultsFile) -> list[tuple[str, str | None, bool]]:
    """Each eval's outcome and message, and whether a turn or a step of it was not reached (a
    conversation stops at a failed turn; a coding eval that did not pass may stop before a step)."""
    return [
        (
            record.outcome,
            record.message,
            any(turn.outcome == "not_run" for turn in record.turns)
            or (bool(record.steps) and record.outcome != "passed"),
        )
        for run in results.runs
        for record in run.evals
    ]
