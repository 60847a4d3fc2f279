"""Which YAML files look like suites: a file matched only by a broad ``vibe_patterns`` glob that has
no ``evals:`` is not one (a docker-compose.yaml), and a run that collected no eval names the
suite-like files it did not collect (vibecheck's ``*.yaml`` are collected as ``*.eval.yaml``)."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from pathlib import Path

from ..bounded_read import UnreadableFile, read_start
from ..filenames import EVAL_CONFIG_NAME, SUITE_SUFFIXES, YAML_SUFFIXES

PEEK_BYTES = 64 * 1024  # a suite names its top-level keys long before this
MAX_FILES_SCANNED = 5000
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages", "venv"})
_TOP_KEY = re.compile(r"^(evals|metadata)\s*:", re.MULTILINE)


def _top_level_keys(path: Path) -> set[str]:
    try:  # a FIFO or a device is no suite: never opened in a way that blocks or never ends
        head = read_start(path, PEEK_BYTES).decode("utf-8-sig", errors="replace")
    except (OSError, UnreadableFile):
        return set()
    return {match.group(1) for match in _TOP_KEY.finditer(head)}


def has_evals(path: Path) -> bool:
    """Whether ``path`` has a top-level ``evals:`` key (read from its first 64 KiB; anything but a
    regular file has none)."""
    return "evals" in _top_level_keys(path)


def looks_like_suite(path: Path) -> bool:
    """Whether ``path`` has the top-level ``metadata:`` and ``evals:`` of a suite."""
    return _top_level_keys(path) >= {"evals", "metadata"}


def suite_like_files(
    roots: Iterable[Path], suffixes: tuple[str, ...], collected: tuple[str, ...]
) -> list[Path]:
    """The ``suffixes`` files under ``roots`` (files or folders) that look like suites but whose
    names do not end with one of ``collected``; dot folders and dependency folders are skipped,
    and at most :data:`MAX_FILES_SCANNED` files are looked at."""
    found: list[Path] = []
    scanned = 0
    for root in roots:
        candidates: Iterable[Path] = [root] if root.is_file() else _walk(root)
        for path in candidates:
            if not path.name.endswith(suffixes) or path.name.endswith(collected):
                continue
            scanned += 1
            if scanned > MAX_FILES_SCANNED:
                return found
            if looks_like_suite(path):
                found.append(path)
    return found


def _walk(root: Path) -> Iterable[Path]:
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_FOLDERS)
        for name in sorted(files):
            yield Path(folder) / name


def collected_kind(path: Path, rel: str, patterns: Iterable[str], given: bool) -> str | None:
    """How pytest-vibeeval collects ``path`` (``rel``: as the node ids show it; ``given``: named on
    the command line): ``"config"`` (an eval-config.json), ``"suite"``, ``"no-evals"`` (a file
    ``vibe_patterns`` names that has no top-level ``evals:``: not a suite), or None (not ours)."""
    name = path.name
    if name == EVAL_CONFIG_NAME:
        return "config"
    if not name.endswith(YAML_SUFFIXES):
        return None
    if name.endswith(SUITE_SUFFIXES) or given:
        return "suite"
    if not any(fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(name, pattern) for pattern in patterns):
        return None
    return "suite" if has_evals(path) else "no-evals"
