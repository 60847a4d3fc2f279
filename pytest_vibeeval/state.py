"""The plugin's per-session state, in one object kept in ``config.stash`` (no globals)."""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .budget import Budget
from .extensions import Extensions
from .interrupts import InterruptWatch

if TYPE_CHECKING:
    from .loading.configurations import ConfigFileCache
    from .loading.parse_cache import ParseStore
    from .loading.templates import Renderer
    from .providers.pool import ProviderPool
    from .results import ResultsFile, RunRecord
    from .resume import ResumeIndex
    from .scoring.aggregate import Aggregator
    from .settings import Settings
    from .workspace.sandbox import Sandbox


class WorkdirAllocator:
    """Fresh per-item directories under one base directory made once per session (or worker).

    One ``mkdir`` per item: pytest's ``tmp_path`` costs two more filesystem calls per item and
    dominated the overhead of short evals. The base lives in pytest's basetemp, so pytest's
    retention of old runs applies.
    """

    def __init__(self) -> None:
        self.base: Path | None = None
        self.count = 0

    def new(self, make_base: Callable[[], Path], label: str, create: bool = True) -> Path:
        """The next item's directory, made unless ``create`` is false (nothing will use it: the
        path is then only reserved, and no file of the session is ever written there).

        The base is made at the first item that needs a folder: making it makes pytest's basetemp
        (``pytest-N``, its ``pytest-current`` link, the deletion of old runs), which a session whose
        items need no folder never pays. Until then a path that is not needed lies under
        :data:`UNMADE`, where nothing can be created."""
        if self.base is None and create:
            self.base = make_base()
        self.count += 1
        safe = _UNSAFE.sub("-", label)[:60].strip("-")
        path = (self.base or UNMADE) / f"{self.count:05d}-{safe}"
        if create:
            path.mkdir()
        return path


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
UNMADE = Path(os.devnull) / "vibeeval"  # no folder can be made below a device file


@dataclass
class VibeState:
    """One session's state, kept in ``config.stash`` (see :mod:`.stash`)."""

    settings: Settings
    renderer: Renderer
    extensions: Extensions = field(default_factory=Extensions)  # filled by the register hooks
    known_evals: set[str] = field(default_factory=set)
    registered_tags: set[str] = field(default_factory=set)
    python_modules: dict[str, Path] = field(default_factory=dict)  # module name → file, see collect
    known_configs: set[str] = field(default_factory=set)
    suites_collected: int = 0
    gc_paused: bool = False  # automatic collections off while eval files are collected (collection_gc)
    gc_frozen: bool = False  # gc.freeze() after collection (vibe_gc_freeze); undone in the last cleanup
    other_collection_errors: int = 0  # collection errors of files that are not eval files
    started_at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    workdirs: WorkdirAllocator = field(default_factory=lambda: WorkdirAllocator())
    load_errors: list[str] = field(default_factory=list)  # node ids of suite files that failed to load
    runs: list[RunRecord] = field(default_factory=list)
    results_written: list[Path] = field(default_factory=list)
    sandbox: Sandbox | None = None  # chosen at the first coding-agent item, see execute
    lock_dir: Path | None = None  # concurrency slots shared by the controller and its workers
    owns_lock_dir: bool = False  # made by this process (removed at its end), not received from xdist
    budget: Budget = field(default_factory=lambda: Budget(None, None))  # --vibe-max-cost
    baseline: ResultsFile | None = None  # --vibe-baseline, read at configure (before latest.json is replaced)
    baseline_path: str | None = None
    baseline_missing: list[str] = field(default_factory=list)  # its runs this session did not have
    resume: ResumeIndex | None = None  # --vibe-resume: finished records of an earlier run
    read_notes: list[str] = field(default_factory=list)  # about the files read and items collected
    interrupts: InterruptWatch = field(default_factory=InterruptWatch)  # SIGINT/SIGTERM seen
    recordings_used: set[str] = field(default_factory=set)  # the store's files this process used
    # configuration id -> the suites (sources) that list it but did not run it (recording_prune)
    configs_not_run: dict[str, set[str]] = field(default_factory=dict)
    # makes and returns the folder of pytest's cache parsed suites are kept in (None: pytest's cache is off)
    parse_folder: Callable[[], Path] | None = None

    # The suites' machinery, made when first used: a session without evals never imports it.

    @functools.cached_property
    def config_files(self) -> ConfigFileCache:
        from .loading.configurations import ConfigFileCache

        return ConfigFileCache(self.extensions)

    @functools.cached_property
    def parses(self) -> ParseStore | None:
        """Where parsed suites are kept across sessions (see :mod:`.loading.parse_cache`)."""
        from .loading.parse_cache import ParseStore

        return None if self.parse_folder is None else ParseStore(self.parse_folder)

    @functools.cached_property
    def aggregator(self) -> Aggregator:
        from .scoring.aggregate import Aggregator

        return Aggregator(self.extensions)

    @functools.cached_property
    def providers(self) -> ProviderPool:
        from .providers.pool import ProviderPool

        return ProviderPool()

    def aggregated(self) -> bool:
        """Whether the aggregator holds any item's reports (without making it)."""
        return "aggregator" in self.__dict__ and bool(self.aggregator.items)
