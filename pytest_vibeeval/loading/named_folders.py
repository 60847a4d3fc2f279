"""The folders unified-runner config files name (workspace templates, grading folders), so that
collection never walks into them: their test files are the agents' and the graders', not ours.

A directory is checked against the ``eval-config.json`` files that could name it: those beside,
in ``config/`` or in ``evals/config/`` of any folder above it. Reading is best effort (a file that
cannot be read names nothing here; its problems are reported when it is collected). No pytest here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from ..file_stamp import Stamp, file_stamp
from ..filenames import EVAL_CONFIG_NAME

CONFIG_PLACES: tuple[tuple[str, ...], ...] = ((), ("config",), ("evals", "config"))


@functools.lru_cache(maxsize=64)
def _named(config_file: str, stamp: Stamp, eval_root: str | None) -> frozenset[Path]:
    from .eval_root import EVAL_ROOT, absolute, config_eval_root, named_paths
    from .substitution import SubstitutionError, substitute

    path = Path(config_file)
    raw = named_paths(path)
    environ = {EVAL_ROOT: eval_root} if eval_root else {}
    root = config_eval_root(path.parent, raw, environ)
    folders = set()
    for text in raw:
        try:
            folders.add(absolute(substitute(text, root.variables), Path(root.variables[EVAL_ROOT])))
        except SubstitutionError:
            continue
    return frozenset(folders)


def named_folders(config_file: Path, environ: Mapping[str, str]) -> frozenset[Path]:
    """The workspace templates and grading folders ``config_file`` names (empty if unreadable)."""
    from .eval_root import EVAL_ROOT  # the loading machinery: only where an eval-config.json is

    stamp = file_stamp(config_file)
    if stamp is None:
        return frozenset()
    return _named(str(config_file.absolute()), stamp, environ.get(EVAL_ROOT) or None)


def is_named_folder(folder: Path, environ: Mapping[str, str]) -> bool:
    """Whether an ``eval-config.json`` beside, in ``config/`` or ``evals/config/`` of a folder
    above ``folder`` names it as a workspace template or grading folder. A folder that holds the
    config file naming it (a workspace that is the whole evals folder) is still collected: skipping
    it would hide the config itself and collect nothing, silently."""
    folder = folder.absolute()
    for above in folder.parents:
        for place in CONFIG_PLACES:
            candidate = above.joinpath(*place, EVAL_CONFIG_NAME)
            if (
                candidate.is_file()
                and not candidate.is_relative_to(folder)
                and folder in named_folders(candidate, environ)
            ):
                return True
    return False
