"""The plugin's per-session state, in one object kept in ``config.stash`` (no globals)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

from .aggregate import Aggregator
from .checks import CheckRegistry
from .configurations import ConfigFileCache
from .providers import Provider
from .templates import Renderer


@dataclass
class Options:
    evals: tuple[str, ...] | None
    configs: tuple[str, ...] | None
    results: Path | None
    patterns: tuple[str, ...]


@dataclass
class VibeState:
    options: Options
    renderer: Renderer
    registry: CheckRegistry = field(default_factory=CheckRegistry)
    config_files: ConfigFileCache = field(default_factory=ConfigFileCache)
    aggregator: Aggregator = field(default_factory=Aggregator)
    providers: dict[tuple[Path, str], Provider] = field(default_factory=dict)
    known_evals: set[str] = field(default_factory=set)
    known_configs: set[str] = field(default_factory=set)
    suites_collected: int = 0
    started_at: str = field(default_factory=lambda: dt.datetime.now(dt.UTC).isoformat(timespec="seconds"))
    runs: list[object] = field(default_factory=list)
    results_written: list[Path] = field(default_factory=list)
