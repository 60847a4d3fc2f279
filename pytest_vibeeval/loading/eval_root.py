"""What ``${EVAL_ROOT}`` stands for in a unified-runner config folder or a YAML suite.

Two layouts are in use, and both work without a setting:

- the seed's text: EVAL_ROOT is the folder holding ``config/`` (``evals/``), so ``evals/problems``;
- the runner as its repository ships it: EVAL_ROOT is the repository root, the parent of ``evals/``
  (``resolve(__dirname, '..')``), so ``problems/`` sits beside ``evals/``.

The environment variable EVAL_ROOT, when set, wins. Without it the root is the candidate under
which the most of the evaluations' ``${EVAL_ROOT}`` folders exist (the seed's on a tie).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..bounded_read import UnreadableFile, read_bounded
from ..errors import Problem
from .substitution import SubstitutionError, substitute
from .yamlsource import MAX_INPUT_BYTES

EVAL_ROOT = "EVAL_ROOT"
EVAL_ROOT_REFERENCE = "${EVAL_ROOT}"

# "seed": copies in the item's temporary folder, grading files merged over the agent's work.
# "repository": workspaces beside their template and the agent's work in `<grading copy>/workspace`,
# as the runner of the repository whose layout it is does.
Layout = Literal["seed", "repository"]


@dataclass(frozen=True)
class EvalRoot:
    variables: dict[str, str]  # the environment, with EVAL_ROOT set
    layout: Layout
    problem: Problem | None = None


def absolute(text: str, base: Path) -> Path:
    """``text`` as a normalised absolute path (``~`` expanded, relative to ``base``)."""
    path = Path(text).expanduser()
    return Path(os.path.normpath(path if path.is_absolute() else base / path))


def from_environment(default: Path, environ: Mapping[str, str]) -> tuple[dict[str, str], Problem | None]:
    """The variables for ``${...}`` in paths: the environment, and EVAL_ROOT (``default`` unless the
    environment sets it)."""
    variables = dict(environ)
    if not variables.get(EVAL_ROOT):
        variables[EVAL_ROOT] = str(default)
        return variables, None
    try:
        root = absolute(substitute(variables[EVAL_ROOT], variables), Path.cwd())
    except SubstitutionError as exc:
        return variables, Problem(f"environment variable EVAL_ROOT: {exc.message}", hint=exc.hint)
    variables[EVAL_ROOT] = str(root)
    if not root.is_dir():
        return variables, Problem(
            f"EVAL_ROOT {root} (from the environment) is not a folder",
            hint="unset EVAL_ROOT to find it from the config folder, or point it at the evals folder",
        )
    return variables, None


def _existing(paths: Iterable[str], variables: Mapping[str, str], base: Path) -> int:
    count = 0
    for raw in paths:
        try:
            count += absolute(substitute(raw, variables), base).is_dir()
        except SubstitutionError:
            continue
    return count


def config_eval_root(folder: Path, paths: Iterable[str], environ: Mapping[str, str]) -> EvalRoot:
    """EVAL_ROOT for the config folder ``folder`` whose evaluations name the folders ``paths``
    (raw, before substitution): the environment's, else the seed's (``folder``'s parent) or the
    repository's (its grandparent), whichever more of the ``${EVAL_ROOT}`` paths exist under."""
    seed, repository = folder.parent, folder.parent.parent
    variables, problem = from_environment(seed, environ)
    if problem is not None:
        return EvalRoot(variables, "seed", problem)
    if not environ.get(EVAL_ROOT):
        rooted = [raw for raw in paths if EVAL_ROOT_REFERENCE in raw]
        found = {
            root: _existing(rooted, {**variables, EVAL_ROOT: str(root)}, root) for root in (seed, repository)
        }
        if found[repository] > found[seed]:
            variables[EVAL_ROOT] = str(repository)
    layout: Layout = "repository" if Path(variables[EVAL_ROOT]) == repository else "seed"
    return EvalRoot(variables, layout)


def named_paths(path: Path) -> list[str]:
    """The raw ``workspace`` and ``grading`` strings of ``path``'s evaluations (none if it cannot be
    read: its problems are reported when it is loaded)."""
    try:
        data = json.loads(read_bounded(path, MAX_INPUT_BYTES).decode("utf-8-sig"))
    except (OSError, ValueError, UnreadableFile):
        return []
    evaluations = data.get("evaluations") if isinstance(data, dict) else None
    if not isinstance(evaluations, dict):
        return []
    return [
        entry[key]
        for entry in evaluations.values()
        if isinstance(entry, dict)
        for key in ("workspace", "grading")
        if isinstance(entry.get(key), str)
    ]
