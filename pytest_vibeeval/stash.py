"""Where the session's state is kept (``config.stash``), and node paths as the results show them:
what every hook needs, importing nothing else of the plugin."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .state import VibeState

STATE_KEY: pytest.StashKey[VibeState] = pytest.StashKey()


def rootdir_relative(path: Path, rootdir: Path) -> str:
    """``path`` as the results and node ids show it: relative to the rootdir when inside it."""
    return path.relative_to(rootdir).as_posix() if path.is_relative_to(rootdir) else str(path)


def get_state(config: pytest.Config) -> VibeState:
    return config.stash[STATE_KEY]
