"""What the Run Summary says of a record store's obsolete recordings (:mod:`..recording_prune`
finds and removes them), in the words of ``cache prune`` (:mod:`.cache_text`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..cache_admin import Removal, remove
from ..recording_prune import NOT_RUN, Obsolete, StoreError, cannot_tell, narrowing, obsolete, outcomes
from ..stash import rootdir_relative
from .cache_text import size_text

if TYPE_CHECKING:
    from ..results import ResultsFile
    from ..settings import Settings

PRUNE = "--vibe-prune-recordings"


def _recordings(count: int) -> str:
    return f"{count} recording{'' if count == 1 else 's'}"


def obsolete_lines(found: Obsolete, store: str, action: str | None, done: Removal | None) -> list[str]:
    """The lines on the recordings of ``store`` (as shown) no eval used: how many and how to remove
    them (``action`` None), each that would go (``dry-run``), or each that went (``done``)."""
    unused = found.unused
    lines: list[str] = []
    not_run = [name for name, why in found.unchecked.items() if why == NOT_RUN]
    if not_run:
        lines.append(
            f"recordings: the folders of configurations this run did not run are not looked at: "
            f"{', '.join(not_run)}"
        )
    lines.extend(
        f"recordings: the folder of configuration {name} is not looked at: {why} (its recordings "
        "there may be used); run every configuration (--vibe-config ALL) to look at it"
        for name, why in found.unchecked.items()
        if why != NOT_RUN
    )
    if not unused:
        return [*lines, f"{PRUNE}: nothing to remove in {store}"] if action else []
    size = size_text(sum(file.size for file in unused))
    if action is None:
        return [
            *lines,
            f"recordings: {_recordings(len(unused))} ({size}) in {store} no eval of this run used "
            "(recorded for a prompt, configuration or request settings that changed, or an eval that "
            f"is gone); rerun with {PRUNE} to remove them ({PRUNE}=dry-run lists them)",
        ]
    relative = found.pruning.contents.relative
    if done is None:
        lines.extend(f"would remove {relative(file.path)}" for file in unused)
        kept = found.kept(unused)
        lines.append(
            f"{PRUNE}: would remove {_recordings(len(unused))} ({size}) from {store}; {kept} kept "
            "(dry run: nothing was removed)"
        )
        return lines
    lines.extend(f"removed {relative(file.path)}" for file in done.removed)
    removed_size = size_text(sum(file.size for file in done.removed))
    kept = found.kept(done.removed)
    went = _recordings(len(done.removed))
    lines.append(f"{PRUNE}: removed {went} ({removed_size}) from {store}; {kept} kept")
    if done.rewritten:
        lines.append(f"{len(done.rewritten)} recording(s) written again since they were read: kept")
    lines.extend(f"{PRUNE}: cannot remove {problem}" for problem in done.failed)
    return lines


def untold_line(store: str, why: str, action: str | None) -> str | None:
    """Why the run cannot tell which recordings of ``store`` are obsolete: said where a prune was
    asked (``action``), or the store could not be read; otherwise nothing."""
    if action is None:
        return None
    return (
        f"{PRUNE}: nothing removed from {store}: {why}, so a recording no eval used cannot be told "
        "from one an eval left out did not reach; run the whole selection to prune"
    )


def store_report(
    config: Any,
    settings: Settings,
    results: ResultsFile,
    used: Iterable[str],
    resumed: bool,
    lost: str | None = None,
    not_run: Mapping[str, Iterable[str]] | None = None,
) -> list[str]:
    """The Run Summary's lines on the session's store (--vibe-record / --vibe-replay): how many of
    its recordings no eval used, once the whole selection ran (``used``: the files its processes
    replayed or recorded; ``lost``: why some of them may be missing; ``not_run``: the configurations
    a collected suite lists but did not run, with those suites), and with
    --vibe-prune-recordings what went. None where the run cannot tell, unless a prune was asked:
    then why nothing went."""
    store = settings.replay or settings.record
    if store is None:
        return []
    action = settings.prune_recordings
    shown = rootdir_relative(store, config.rootpath)
    why = cannot_tell(
        narrowing(config, settings.evals, resumed),
        results.stopped_early or ("interrupted" if results.interrupted else None) or lost,
        outcomes(results),
    )
    if why is not None:
        untold = untold_line(shown, why, action)
        return [untold] if untold else []
    try:
        found = obsolete(store, used, [run.configuration for run in results.runs], not_run)
    except StoreError as exc:
        return [f"recordings: {exc}: the recordings no eval used cannot be told"]
    done = remove(found.pruning) if action == "remove" and found.unused else None
    return obsolete_lines(found, shown, action, done)
