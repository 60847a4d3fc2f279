"""Which build and grade steps get the network in the bwrap sandbox, and the package caches they
may write there. A step that installs packages (``npm ci``, ``npm install``, ``pip install``, …)
cannot work offline, so it gets the network unless its registry entry says ``"network": false``;
any other step gets it only with ``"network": true``. A step with the network may also write the
package managers' caches in the home folder (read-only otherwise), since npm, for one, fails
without a writable cache even when every package is in it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# Package managers and the subcommands of theirs that install (the first argument that is not
# an option, after pip's and npm's global options).
INSTALLERS: Mapping[str, frozenset[str]] = {
    "npm": frozenset({"install", "i", "in", "ci", "add"}),
    "pnpm": frozenset({"install", "i", "add"}),
    "yarn": frozenset({"install", "add"}),
    "bun": frozenset({"install", "i", "add"}),
    "pip": frozenset({"install", "download", "wheel"}),
    "pip3": frozenset({"install", "download", "wheel"}),
    "uv": frozenset({"sync", "pip", "add"}),
    "poetry": frozenset({"install", "add"}),
}
# Options of those managers that take a value (so the value is not the subcommand).
_VALUED_OPTIONS = frozenset({"--prefix", "-C", "--cwd", "--dir", "--cache-dir", "--directory"})
# Caches in the home folder that a step with the network may write: those that exist, and npm's
# (created if missing: npm cannot install without it).
PACKAGE_CACHES = (".npm", ".cache/pip", ".cache/uv", ".cache/yarn", ".cache/pnpm", ".local/share/pnpm",
                  ".bun/install/cache")  # fmt: skip
NPM_CACHE = ".npm"


def installs_packages(argv: Sequence[str]) -> bool:
    """Whether ``argv`` runs a package manager's install (``npm --prefix workspace install``,
    ``python -m pip install -r requirements.txt``, ``yarn``: its bare form installs too)."""
    if not argv:
        return False
    words = list(argv)
    name = os.path.basename(words[0])
    if name.startswith("python") and words[1:3] == ["-m", "pip"]:
        name, words = "pip", words[2:]
    subcommands = INSTALLERS.get(name)
    if subcommands is None:
        return False
    rest = words[1:]
    skip = False
    for word in rest:
        if skip:
            skip = False
            continue
        if word in _VALUED_OPTIONS:
            skip = True
            continue
        if word.startswith("-"):
            continue
        return word in subcommands
    return name == "yarn"  # a bare `yarn` installs


def step_network(argv: Sequence[str], declared: bool | None) -> bool:
    """Whether a step running ``argv`` gets the network: what its entry says, else whether it
    installs packages."""
    return declared if declared is not None else installs_packages(argv)


def writable_caches(home: Path, argv: Sequence[str]) -> list[Path]:
    """The package caches under ``home`` a step with the network may write (npm's made if it is
    missing and the step runs npm)."""
    if argv and os.path.basename(argv[0]) in ("npm", "npx"):
        with contextlib.suppress(OSError):  # a home folder we cannot write: npm will say so itself
            (home / NPM_CACHE).mkdir(exist_ok=True)
    return [home / cache for cache in PACKAGE_CACHES if (home / cache).is_dir()]
