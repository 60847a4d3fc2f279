"""Looking after the response cache (--vibe-cache): what it holds, and removing answers by age or
by configuration, for ``python -m pytest_vibeeval cache info|prune``.

A cache is a folder holding ``CACHEDIR.TAG`` and, per configuration, a folder of one JSON entry per
answer (:mod:`.cache`, :mod:`.answer_files`). The llm_judge's verdicts are entries of the same kind,
in the folder of the judge's configuration (beside its eval answers when a configuration is both),
told apart by the grading instructions they were asked with. An entry holds no time of its own: its
age is its file's (the cache writes an entry once, when the answer is asked; a hit never rewrites it).

Nothing here removes what is not the cache's, nor follows a symbolic link: a folder without
``CACHEDIR.TAG`` is refused, and inside a cache a link, a folder or a file of any other name is
left alone (and named). Every entry is written through a temporary file
(:func:`~.atomic_files.write_atomic`): one younger than :data:`BUSY_SECONDS` is another
session's write in progress and is left alone; an older one was left by a session that was killed.
That, and a damaged entry (unreadable, or not the answer its file name says: every run misses it),
goes with any prune of its configuration."""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .answer_files import AnswerFileError, configuration_folder, read_answer
from .atomic_files import temporary_target
from .bounded_read import file_kind
from .cache import TAG_NAME, not_a_cache
from .judge import JUDGE_RUBRIC_PROMPT, JUDGE_SYSTEM_PROMPT

BUSY_SECONDS = 60.0  # a temporary file younger than this is a write in progress
JUDGE_PROMPTS = frozenset({JUDGE_SYSTEM_PROMPT, JUDGE_RUBRIC_PROMPT})
_UNITS = {"w": 7 * 86400, "d": 86400, "h": 3600, "m": 60, "s": 1}
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[wdhms])+")
_PART = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")

Kind = Literal["answer", "judge", "damaged", "temporary"]
KIND_NAMES: dict[Kind, tuple[str, str]] = {
    "answer": ("answer", "answers"),
    "judge": ("llm_judge verdict", "llm_judge verdicts"),
    "damaged": ("damaged entry", "damaged entries"),
    "temporary": ("temporary file left by a killed session", "temporary files left by killed sessions"),
}


class CacheAdminError(Exception):
    """A folder that is no cache, or a request the cache cannot serve; the message says which."""


def parse_duration(text: str) -> float:
    """The seconds ``text`` spells: ``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or a sum such as
    ``1d12h``; a ValueError saying how to write one."""
    spelled = text.strip().lower()
    if not _DURATION.fullmatch(spelled):
        raise ValueError(
            f"{text!r} is not a duration: write a number and a unit, e.g. 30d, 12h, 90m or 1d12h "
            "(units: w d h m s)"
        )
    return sum(float(number) * _UNITS[unit] for number, unit in _PART.findall(spelled))


@dataclass(frozen=True)
class CacheFile:
    """A file of the cache: an entry (an answer, a judge's verdict, or damaged) or a temporary file."""

    path: Path
    kind: Kind
    size: int
    mtime_ns: int
    problem: str | None = None  # a damaged entry's: why no run can use it ("is unreadable: …")

    @property
    def mtime(self) -> float:
        return self.mtime_ns / 1e9


@dataclass
class ConfigurationFolder:
    """The folder of one configuration's answers."""

    folder: Path
    files: list[CacheFile] = field(default_factory=list)  # its entries, and temporaries left behind
    ids: set[str] = field(default_factory=set)  # the configuration ids its entries name
    busy: int = 0  # temporary files being written now (left alone)
    others: list[str] = field(default_factory=list)  # what is not the cache's (left alone)

    @property
    def name(self) -> str:
        """The configuration's id as its entries name it (its folder's name holds it with any
        character a file name cannot have replaced)."""
        return next(iter(self.ids)) if len(self.ids) == 1 else self.folder.name

    @property
    def entries(self) -> list[CacheFile]:
        return [file for file in self.files if file.kind != "temporary"]


@dataclass
class CacheContents:
    """What a cache folder holds."""

    folder: Path
    configurations: list[ConfigurationFolder] = field(default_factory=list)
    leftovers: list[CacheFile] = field(default_factory=list)  # its tag's temporaries left behind
    busy: int = 0
    others: list[str] = field(default_factory=list)

    def files(self) -> Iterator[CacheFile]:
        for configuration in self.configurations:
            yield from configuration.files
        yield from self.leftovers

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.folder))


def cache_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot be looked after as a response cache, or None."""
    if not folder.exists():
        return f"{folder}: no such folder"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    problem = not_a_cache(folder)
    if problem is None:
        return None
    if (folder.parent / TAG_NAME).is_file():
        return (
            f"{problem}: it is the folder of one configuration in the cache {folder.parent}; give "
            "that folder, and --configuration to choose a configuration"
        )
    return f"{problem}: nothing in it is touched; give the folder --vibe-cache stores its answers in"


def read_cache(folder: Path, now: float | None = None) -> CacheContents:
    """What the cache at ``folder`` holds; a :class:`CacheAdminError` when it is no cache."""
    problem = cache_problem(folder)
    if problem is not None:
        raise CacheAdminError(problem)
    return read_answers(folder, now)


def read_answers(folder: Path, now: float | None = None) -> CacheContents:
    """What the folder of stored answers at ``folder`` holds, a cache's or a record store's
    (checked by the caller); a :class:`CacheAdminError` when it cannot be listed."""
    now = time.time() if now is None else now
    contents = CacheContents(folder)
    for item in _listing(folder):
        if item.name == TAG_NAME and item.is_file(follow_symlinks=False):
            continue
        if item.is_dir(follow_symlinks=False):
            contents.configurations.append(_read_configuration(contents, Path(item.path), now))
        elif item.is_file(follow_symlinks=False) and temporary_target(item.name) == TAG_NAME:
            _temporary(contents, item, now)
        else:
            contents.others.append(_other(folder, item))
    contents.configurations.sort(key=lambda configuration: configuration.name)
    return contents


def _listing(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as found:
            return sorted(found, key=lambda item: item.name)
    except OSError as exc:
        raise CacheAdminError(f"cannot read {folder}: {exc.strerror or exc}") from None


def _read_configuration(contents: CacheContents, folder: Path, now: float) -> ConfigurationFolder:
    configuration = ConfigurationFolder(folder)
    try:
        listing = _listing(folder)
    except CacheAdminError as exc:  # its answers are not known: nothing in it is touched
        configuration.others.append(f"{folder.name}/ ({exc})")
        return configuration
    for item in listing:
        if not item.is_file(follow_symlinks=False):
            configuration.others.append(_other(contents.folder, item))
        elif (temporary_target(item.name) or "").endswith(".json"):
            _temporary(configuration, item, now)
        elif item.name.endswith(".json"):
            entry = _entry(configuration, item)
            if entry is not None:
                configuration.files.append(entry)
        else:
            configuration.others.append(_other(contents.folder, item))
    return configuration


def _temporary(holder: ConfigurationFolder | CacheContents, item: os.DirEntry[str], now: float) -> None:
    try:
        info = item.stat(follow_symlinks=False)
    except FileNotFoundError:  # renamed to its entry, or removed, since it was listed
        return
    if now - info.st_mtime < BUSY_SECONDS:
        holder.busy += 1
        return
    found = CacheFile(Path(item.path), "temporary", info.st_size, info.st_mtime_ns)
    (holder.files if isinstance(holder, ConfigurationFolder) else holder.leftovers).append(found)


def _entry(configuration: ConfigurationFolder, item: os.DirEntry[str]) -> CacheFile | None:
    """The entry ``item``, read as the cache reads it (None when it went since it was listed)."""
    path = Path(item.path)
    try:
        info = item.stat(follow_symlinks=False)
        entry, _ = read_answer(path)
    except FileNotFoundError:
        return None
    except AnswerFileError as exc:
        return CacheFile(path, "damaged", info.st_size, info.st_mtime_ns, str(exc))
    key, config_id = entry.get("key"), entry.get("configuration")
    if (
        not isinstance(key, str)
        or not isinstance(config_id, str)
        or not item.name.endswith(f"-{key[:16]}.json")
        or configuration_folder(Path(), config_id).name != configuration.folder.name
    ):
        problem = (
            "is not the answer its name says (its key or configuration differs: an entry of an older "
            "version, or a copy)"
        )
        return CacheFile(path, "damaged", info.st_size, info.st_mtime_ns, problem)
    configuration.ids.add(config_id)
    kind: Kind = "judge" if entry.get("system_prompt") in JUDGE_PROMPTS else "answer"
    return CacheFile(path, kind, info.st_size, info.st_mtime_ns)


def _other(folder: Path, item: os.DirEntry[str]) -> str:
    where = Path(item.path).relative_to(folder)
    try:
        mode = item.stat(follow_symlinks=False).st_mode
    except OSError:
        return str(where)
    if stat.S_ISLNK(mode):
        return f"{where} (a symbolic link)"
    return f"{where} ({'a file of another name' if stat.S_ISREG(mode) else file_kind(mode)})"


@dataclass
class Pruning:
    """What a prune removes: per configuration it looks at, the files that go."""

    contents: CacheContents
    chosen: list[tuple[ConfigurationFolder, list[CacheFile]]]
    leftovers: list[CacheFile]  # the tag's temporaries left behind

    def going(self) -> list[CacheFile]:
        return [file for _, going in self.chosen for file in going] + self.leftovers


def choose(
    contents: CacheContents,
    configurations: Sequence[str] = (),
    older_than: float | None = None,
    everything: bool = False,
    now: float | None = None,
) -> Pruning:
    """What to remove: with ``everything``, all; else the entries of ``configurations`` (every
    configuration when none is named) stored more than ``older_than`` seconds ago (all of them
    without ``older_than`` when configurations are named). Damaged entries and temporary files left
    by killed sessions go in any case. A :class:`CacheAdminError` names a configuration the cache
    holds no answers of."""
    now = time.time() if now is None else now
    wanted = contents.configurations
    if configurations:
        wanted = _named(contents, configurations)
    cutoff = None if older_than is None else now - older_than
    whole = everything or (bool(configurations) and cutoff is None)
    chosen = [
        (
            configuration,
            [
                file
                for file in configuration.files
                if whole
                or file.kind in ("damaged", "temporary")
                or (cutoff is not None and file.mtime < cutoff)
            ],
        )
        for configuration in wanted
    ]
    return Pruning(contents, chosen, [] if configurations else contents.leftovers)


def _named(contents: CacheContents, names: Sequence[str]) -> list[ConfigurationFolder]:
    by_folder = {configuration.folder.name: configuration for configuration in contents.configurations}
    found: list[ConfigurationFolder] = []
    unknown: list[str] = []
    for name in dict.fromkeys(names):
        configuration = by_folder.get(configuration_folder(Path(), name).name) if name else None
        if configuration is None:
            unknown.append(name)
        elif configuration not in found:
            found.append(configuration)
    if unknown:
        held = ", ".join(configuration.name for configuration in contents.configurations)
        raise CacheAdminError(
            f"the cache {contents.folder} holds no answers of configuration "
            + ", ".join(repr(name) for name in unknown)
            + (f"; it holds those of: {held}" if held else "; it holds no answers")
        )
    return found


@dataclass
class Removal:
    """What a prune did."""

    removed: list[CacheFile] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)  # configuration folders it emptied and removed
    rewritten: list[CacheFile] = field(default_factory=list)  # written again since read: kept
    failed: list[str] = field(default_factory=list)  # "<path>: <why>"


def remove(pruning: Pruning) -> Removal:
    """Remove what ``pruning`` chose, and each configuration folder it empties. A file is removed
    through its folder's descriptor, opened without following a link: a configuration folder
    replaced by a link since it was read is never entered. A file written again since it was read
    (a session storing its answer anew) stays."""
    done = Removal()
    with _opened(pruning.contents.folder, done, follow=True) as top:
        if top is None:
            return done
        for configuration, going in pruning.chosen:
            with _opened(configuration.folder, done, follow=False, at=top) as fd:
                if fd is None:
                    continue
                for file in going:
                    _unlink(file, fd, done)
            emptied = len(going) == len(configuration.files) and not configuration.busy
            if emptied and not configuration.others:
                try:
                    os.rmdir(configuration.folder.name, dir_fd=top)
                    done.folders.append(configuration.folder)
                except OSError:  # an answer stored there meanwhile, or a file it could not remove
                    pass
        for file in pruning.leftovers:
            _unlink(file, top, done)
    return done


@contextmanager
def _opened(folder: Path, done: Removal, follow: bool, at: int | None = None) -> Iterator[int | None]:
    """A descriptor of ``folder`` (``at``: of the folder holding it; ``follow``: even through a
    link), or None with the reason in ``done.failed``."""
    flags = os.O_RDONLY | os.O_DIRECTORY | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(folder if at is None else folder.name, flags, dir_fd=at)
    except OSError as exc:
        done.failed.append(f"{folder}: {exc.strerror or exc}")
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _unlink(file: CacheFile, folder_fd: int, done: Removal) -> None:
    name = file.path.name
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as exc:
        done.failed.append(f"{file.path}: {exc.strerror or exc}")
        return
    if not stat.S_ISREG(info.st_mode) or info.st_mtime_ns != file.mtime_ns:
        done.rewritten.append(file)
        return
    try:
        os.unlink(name, dir_fd=folder_fd)
    except FileNotFoundError:
        return
    except OSError as exc:
        done.failed.append(f"{file.path}: {exc.strerror or exc}")
        return
    done.removed.append(file)
