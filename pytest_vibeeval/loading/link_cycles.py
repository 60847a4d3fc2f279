"""Symlinked folders that lead back up the tree (a workspace template linking to an ancestor, say).

pytest follows symlinked folders while it collects. A link to a folder above it makes the walk find
the same tree again inside the link, and again inside that, until the path is too long for the system
(ELOOP): spurious collection errors; two such links make the walk exponential. Only such cycles are
skipped: a link to a folder elsewhere (tests symlinked in on purpose) is collected as pytest would.
"""

from __future__ import annotations

from pathlib import Path


def is_link_cycle(path: Path) -> bool:
    """Whether ``path`` is a symlink to a folder that holds it: the folder it resolves to is one the
    walk already passed through (the real folder of one of ``path``'s ancestors as given) or one above
    the link's real location. Dangling and self-referencing links are no folders: False."""
    try:
        if not path.is_symlink():
            return False
        target = path.resolve(strict=True)
        if not target.is_dir():
            return False
        location = path.absolute()
        real_parent = location.parent.resolve(strict=True)
        if target == real_parent or target in real_parent.parents:
            return True
        return any(ancestor.resolve() == target for ancestor in location.parents)
    except (OSError, RuntimeError):  # a symlink loop (RuntimeError before Python 3.13), no permission
        return False
