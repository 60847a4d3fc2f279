"""Where an item's copies go in the unified runner's repository layout, and what its agent must not
see.

There the tools of a workspace resolve from the repository (its root ``node_modules``, a
``tsconfig`` it extends), and the grading packages reach the agent's work as ``workspace/`` and
the repository by relative paths (``../../problems/…``). So the copies sit in the repository
tree, as the runner puts them: a workspace at ``<problem>/.tmp-workspace-<id>/workspace`` and a
grading copy beside its grading folder, at the same depth (``<grading's parent>/.tmp-grading-<id>-<name>``),
holding the agent's work in ``workspace/``. The templates and grading folders are only read.
Dot-folders are not collected by pytest, and :func:`is_temporary` names them for the collection
hook. No pytest here.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterable
from pathlib import Path

from ..filenames import bounded_name

TMP_WORKSPACE_PREFIX = ".tmp-workspace-"
TMP_GRADING_PREFIX = ".tmp-grading-"
WORKSPACE_IN_GRADING = "workspace"
RESULTS_IN_WORKSPACE = "results"
# Not copied into a workspace nor into a grading copy's workspace/, as the runner does.
COPY_IGNORE: tuple[str, ...] = ("node_modules", "coverage")
GIT_ENTRY = ".git"


def is_temporary(path: Path) -> bool:
    """A workspace or grading copy's folder made here (for any item of any session)."""
    return path.name.startswith((TMP_WORKSPACE_PREFIX, TMP_GRADING_PREFIX))


def workspace_beside(template: Path) -> Path:
    """A new, empty-to-be ``<template's parent>/.tmp-workspace-<id>/workspace`` (not created)."""
    root = tempfile.mkdtemp(prefix=f"{TMP_WORKSPACE_PREFIX}{uuid.uuid4().hex[:12]}-", dir=template.parent)
    return Path(root) / "workspace"


def temporary_root(workspace: Path) -> Path:
    """What to remove with ``workspace``: its ``.tmp-workspace-…`` parent if it has one."""
    return workspace.parent if is_temporary(workspace.parent) else workspace


def grading_beside(grading: Path, workspace: Path) -> Path:
    """A copy of ``grading`` beside it with the agent's ``workspace`` in its ``workspace/`` folder
    (what the template had there is dropped). Raises OSError (a CopyError) when a copy fails."""
    from .copying import copy_template, copy_tree, remove_tree  # workspace evals' only

    name = bounded_name(f"{TMP_GRADING_PREFIX}{uuid.uuid4().hex[:12]}-{grading.name}")
    copy = grading.parent / name
    try:
        copy_template(grading, copy)
        remove_tree(copy / WORKSPACE_IN_GRADING)
        copy_tree(workspace, copy / WORKSPACE_IN_GRADING, COPY_IGNORE)
    except OSError:
        remove_tree(copy)
        raise
    return copy


def _contains(folder: Path, paths: Iterable[Path]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for path in paths)


def hidden_from_agent(
    gradings: Iterable[Path], templates: Iterable[Path], keep: Iterable[Path], workspace: Path
) -> tuple[Path, ...]:
    """The folders a sandboxed agent must not see: every grading folder (with the grading copies
    beside it, by hiding its parent where that holds nothing the agent needs) and every problem
    folder (a template's parent: other problems, other items' workspaces). A folder that holds one
    of ``keep`` (the config folder, the agent's own files) stays visible; ``workspace`` is bound
    back inside a hidden problem folder by the sandbox. The git repositories holding them are
    hidden too (``git show HEAD:<hidden test>`` would read them)."""
    keep = [Path(os.path.normpath(p)) for p in keep]
    hidden: list[Path] = []
    for grading in gradings:
        parent = grading.parent
        hidden.append(parent if not _contains(parent, [*keep, workspace]) else grading)
    for template in templates:
        problem = template.parent
        beside = _contains(problem, [workspace]) and not is_temporary(workspace.parent)
        hidden.append(template if _contains(problem, keep) or beside else problem)
    hidden += git_stores(hidden)
    ordered = sorted(dict.fromkeys(hidden), key=lambda p: len(p.parts))
    return tuple(p for i, p in enumerate(ordered) if not any(p.is_relative_to(q) for q in ordered[:i]))


def git_stores(folders: Iterable[Path]) -> list[Path]:
    """The git repositories holding ``folders``, whose history has their files: the ``.git`` of every
    folder above them and, where that is a file (a worktree, a submodule), the folders it leads to."""
    stores: list[Path] = []
    for folder in folders:
        for above in dict.fromkeys((*folder.parents, *Path(os.path.realpath(folder)).parents)):
            entry = above / GIT_ENTRY
            if entry.is_dir():
                stores.append(Path(os.path.realpath(entry)))
            elif entry.is_file():
                stores += [entry, *_linked_git_dirs(entry)]
    return list(dict.fromkeys(stores))


def _linked_git_dirs(entry: Path) -> list[Path]:
    """The git folder a ``.git`` file names (``gitdir: …``) and the common one it shares with its
    main worktree (its ``commondir``); none when the file cannot be read."""
    try:
        line = entry.read_text(encoding="utf-8", errors="replace")[:4096].partition("\n")[0]
    except OSError:
        return []
    if not line.startswith("gitdir:"):
        return []
    gitdir = Path(os.path.realpath(entry.parent / line.removeprefix("gitdir:").strip()))
    found = [gitdir]
    try:
        common = (gitdir / "commondir").read_text(encoding="utf-8", errors="replace")[:4096].strip()
    except OSError:
        return found
    return [*found, Path(os.path.realpath(gitdir / common))] if common else found
