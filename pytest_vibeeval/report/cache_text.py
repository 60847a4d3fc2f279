"""What ``python -m pytest_vibeeval cache info|prune`` prints (:mod:`..cache_admin` finds and
removes): a table per configuration, the files a dry run would remove, what a prune removed."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable

from ..cache_admin import BUSY_SECONDS, KIND_NAMES, CacheContents, CacheFile, Pruning, Removal


def size_text(size: int) -> str:
    """``512 B``, ``1.5 KiB``, ``12.0 MiB``, ``2.3 GiB``."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def moment(seconds: float) -> str:
    """A time as local ``YYYY-MM-DD HH:MM``."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def counted(files: Iterable[CacheFile]) -> str:
    """``2 answers, 1 llm_judge verdict, 1 damaged entry`` (kinds in that order)."""
    counts = Counter(file.kind for file in files)
    return (
        ", ".join(
            f"{counts[kind]} {KIND_NAMES[kind][counts[kind] != 1]}" for kind in KIND_NAMES if counts[kind]
        )
        or "nothing"
    )


def info_lines(contents: CacheContents) -> list[str]:
    """The table of ``cache info``: per configuration and in all, its answers, llm_judge verdicts,
    damaged entries, bytes and the oldest and newest entry; then what needs saying."""
    lines = [f"Response cache {contents.folder}"]
    rows = [_row(configuration.name, configuration.files) for configuration in contents.configurations]
    if not rows:
        lines.append("no answers stored")
    else:
        header = ("configuration", "answers", "llm_judge", "damaged", "size", "oldest", "newest")
        rows.append(_row("total", list(contents.files())))
        widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
        for row in [header, *rows]:
            cells = [
                cell.ljust(width) if column in (0, 5, 6) else cell.rjust(width)
                for column, (cell, width) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  ".join(cells).rstrip())
    lines.extend(_notes(contents))
    return lines


def _row(name: str, files: list[CacheFile]) -> tuple[str, ...]:
    counts = Counter(file.kind for file in files)
    stored = [file.mtime for file in files if file.kind != "temporary"]
    return (
        name,
        str(counts["answer"]),
        str(counts["judge"]),
        str(counts["damaged"]),
        _size(files),
        moment(min(stored)) if stored else "-",
        moment(max(stored)) if stored else "-",
    )


def _notes(contents: CacheContents) -> list[str]:
    lines = []
    damaged = [file for file in contents.files() if file.kind == "damaged"]
    if damaged:
        lines.append(
            f"{counted(damaged)}, which no run can use (a run asks the answer again and stores it anew); "
            "`cache prune` removes damaged entries:"
        )
        lines.extend(f"  {contents.relative(file.path)} {file.problem}" for file in damaged)
    left = [file for file in contents.files() if file.kind == "temporary"]
    if left:
        lines.append(f"{counted(left)}; `cache prune` removes such files")
    busy = contents.busy + sum(configuration.busy for configuration in contents.configurations)
    if busy:
        lines.append(
            f"{busy} temporary {'file' if busy == 1 else 'files'} being written now (younger than "
            f"{BUSY_SECONDS:.0f} s): left alone"
        )
    others = contents.others + [other for c in contents.configurations for other in c.others]
    if others:
        lines.append("not the cache's own, left alone by `cache prune`:")
        lines.extend(f"  {other}" for other in others)
    return lines


def prune_lines(pruning: Pruning, done: Removal | None) -> list[str]:
    """What ``cache prune`` removed (``done``), or with ``--dry-run`` (None) what it would: each file
    (dry run), then each configuration's count, then the total and what stays."""
    contents = pruning.contents
    verb = "would remove" if done is None else "removed"
    went = pruning.going() if done is None else done.removed
    gone = {file.path for file in went}
    lines = [
        f"would remove {contents.relative(file.path)} ({KIND_NAMES[file.kind][0]}, {moment(file.mtime)})"
        for file in (went if done is None else ())
    ]
    for configuration, going in pruning.chosen:
        mine = [file for file in going if file.path in gone]
        if mine:
            kept = sum(file.path not in gone for file in configuration.entries)
            line = f"{configuration.name}: {verb} {counted(mine)} ({_size(mine)}); {kept} kept"
            if done is not None and configuration.folder in done.folders:
                line += "; its emptied folder removed"
            elif done is not None and not kept and configuration.others:
                line += "; its folder stays: it holds what is not the cache's own"
            lines.append(line)
    entries = [file for c in contents.configurations for file in c.entries if file.path not in gone]
    staying = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'} kept"
    if not went:
        lines.append(f"nothing to remove in {contents.folder} ({staying})")
    else:
        lines.append(f"{verb} {counted(went)} ({_size(went)}) from {contents.folder}; {staying}")
    if done is None and went:
        lines.append("(dry run: nothing was removed)")
    elif any(file.kind in ("answer", "judge") for file in went):
        lines.append("the next run with --vibe-cache asks the removed answers again")
    if done is not None and done.rewritten:
        lines.append(f"{len(done.rewritten)} file(s) written again since they were read: kept")
    return lines


def _size(files: Iterable[CacheFile]) -> str:
    return size_text(sum(file.size for file in files))
