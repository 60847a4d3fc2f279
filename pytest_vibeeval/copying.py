"""Copying workspace and grading templates into an item's directory.

Templates are only ever read: copies are real copies (never hardlinks), symlinks stay symlinks.
"""

from __future__ import annotations

import shutil
from pathlib import Path


def copy_tree(source: Path, target: Path) -> None:
    """Copy ``source``'s contents into ``target`` (created if needed): real copies, symlinks kept
    as symlinks, never hardlinks; ``source`` is only read."""
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
