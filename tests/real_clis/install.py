"""Install the real agent CLIs the contract tests drive, pinned, into a cache folder outside the
repository: the npm packages with ``npm install --prefix``, aider in a virtualenv of its own.

    python tests/real_clis/install.py [NAME ...]

The cache folder is ``$VIBE_CLI_CACHE``, by default ``pytest-vibeeval/clis`` under
``$XDG_CACHE_HOME`` (``~/.cache``). ``VIBE_CLI_VERSIONS=latest`` installs today's releases instead of
the pinned ones (into folders of their own, refreshed on every install). A CLI whose package asks
for a newer Node than the system's gets the ``node`` package of that major version beside it.
``VIBE_CLI_<PRESET>`` (``VIBE_CLI_LLXPRT``; ``-`` as ``_``) names an executable to test instead of
the install, such as a build from source where the registry lacks the package. Exits 0 when every
CLI asked for is installed, else 1 with one line per failure.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

INSTALLED = ".installed"  # written last: its presence means the folder is complete
FAILED = ".failed"  # why the last install failed, for the tests' skip reason


@dataclass(frozen=True)
class Cli:
    """One agent CLI: its preset, package, pinned version and executable."""

    preset: str
    package: str
    pinned: str
    executable: str
    registry: str  # "npm" or "pypi"


CLIS: dict[str, Cli] = {
    cli.preset: cli
    for cli in (
        Cli("claude-code", "@anthropic-ai/claude-code", "2.1.197", "claude", "npm"),
        Cli("codex", "@openai/codex", "0.169.0", "codex", "npm"),
        Cli("gemini", "@google/gemini-cli", "0.61.0", "gemini", "npm"),
        Cli("llxprt", "@vybestack/llxprt-code", "0.10.0", "llxprt", "npm"),
        Cli("aider", "aider-chat", "0.86.2", "aider", "pypi"),
    )
}


class InstallError(RuntimeError):
    """A CLI could not be installed; the message says why, ``output`` is what the command printed."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


def _default_cache() -> Path:
    if os.environ.get("VIBE_CLI_CACHE"):
        return Path(os.environ["VIBE_CLI_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-vibeeval" / "clis"


# Read once, at import: tests that give the CLIs a private HOME must still find them.
CACHE = _default_cache()


def cache_dir() -> Path:
    """Where the CLIs are installed: ``$VIBE_CLI_CACHE`` or under the user's cache folder."""
    return CACHE


def wanted_version(cli: Cli) -> str:
    """The pinned version, or ``latest`` with ``VIBE_CLI_VERSIONS=latest``."""
    return "latest" if os.environ.get("VIBE_CLI_VERSIONS", "").strip() == "latest" else cli.pinned


def folder(cli: Cli, version: str | None = None) -> Path:
    return cache_dir() / f"{cli.preset}-{version or wanted_version(cli)}"


def override_variable(cli: Cli) -> str:
    """The variable naming an executable to test instead of the install: ``VIBE_CLI_LLXPRT``."""
    return "VIBE_CLI_" + cli.preset.upper().replace("-", "_")


def override(cli: Cli) -> Path | None:
    """The executable ``VIBE_CLI_<PRESET>`` names, if it is set."""
    value = os.environ.get(override_variable(cli), "").strip()
    return Path(value).expanduser().absolute() if value else None


def bin_dir(cli: Cli, version: str | None = None) -> Path:
    """The folder holding the CLI's executable (and, where it needs one, its own ``node``)."""
    chosen = override(cli)
    if chosen is not None:
        return chosen.parent
    root = folder(cli, version)
    return root / "bin" if cli.registry == "pypi" else root / "node_modules" / ".bin"


def installed(cli: Cli) -> Path | None:
    """The CLI's executable if its install is complete (or the one ``VIBE_CLI_<PRESET>`` names
    exists), else None."""
    chosen = override(cli)
    if chosen is not None:
        return chosen if chosen.is_file() else None
    path = bin_dir(cli) / cli.executable
    return path if (folder(cli) / INSTALLED).exists() and path.exists() else None


def missing_reason(cli: Cli) -> str | None:
    """Why the CLI cannot run here (for a skip), or None."""
    chosen = override(cli)
    if chosen is not None:
        return None if chosen.is_file() else f"{override_variable(cli)}: no file {chosen}"
    if cli.registry == "npm" and shutil.which("node") is None and not (bin_dir(cli) / "node").exists():
        return f"{cli.preset}: node is not on PATH"
    if installed(cli) is None:
        failed = folder(cli) / FAILED
        why = f" (the last install failed: {failed.read_text().strip()})" if failed.is_file() else ""
        return (
            f"{cli.package} {wanted_version(cli)} is not installed in {folder(cli)}{why}: "
            f"run `python tests/real_clis/install.py`, or name a build in {override_variable(cli)}"
        )
    return None


def _run(argv: list[str], cwd: Path | None = None) -> str:
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallError(f"{argv[0]}: {exc}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-10:])
        raise InstallError(
            f"`{' '.join(argv)}` exited with code {done.returncode}:\n{tail}", done.stderr or done.stdout
        )
    return done.stdout


def _node_major() -> int | None:
    node = shutil.which("node")
    if node is None:
        return None
    match = re.match(r"v(\d+)", _run([node, "--version"]).strip())
    return int(match.group(1)) if match else None


def _install_npm(cli: Cli, root: Path, version: str) -> None:
    if shutil.which("npm") is None:
        raise InstallError("npm is not on PATH")
    _run(["npm", "install", "--prefix", str(root), "--no-save", f"{cli.package}@{version}"])
    manifest = root / "node_modules" / cli.package / "package.json"
    engines = json.loads(manifest.read_text()).get("engines", {}).get("node", "")
    match = re.search(r">=\s*(\d+)", engines)
    needed = int(match.group(1)) if match else 0
    have = _node_major()
    if have is None or have < needed:
        major = max(needed, 22)
        _run(["npm", "install", "--prefix", str(root), "--no-save", f"node@{major}"])


def _install_pypi(cli: Cli, root: Path, version: str) -> None:
    if not (root / "bin" / "python").exists():
        _run([sys.executable, "-m", "venv", str(root)])
    spec = cli.package if version == "latest" else f"{cli.package}=={version}"
    _run([str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--upgrade", spec])


def _first_lines(error: InstallError) -> str:
    """The first two lines the failed command printed, or the error's message: npm's ``npm error
    code E404; npm error 404 Not Found - GET …``."""
    lines = [line.strip() for line in error.output.splitlines() if line.strip()]
    return "; ".join(lines[:2]) or str(error)


def install(cli: Cli) -> Path:
    """Install ``cli`` (once per version; ``latest`` every time) and return its executable: the
    one ``VIBE_CLI_<PRESET>`` names instead, where it is set."""
    if override(cli) is not None:
        chosen = installed(cli)
        if chosen is None:
            raise InstallError(str(missing_reason(cli)))
        return chosen
    version = wanted_version(cli)
    root = folder(cli, version)
    root.mkdir(parents=True, exist_ok=True)
    with (root.parent / f".{root.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one install at a time per folder (parallel CI steps)
        done = installed(cli)
        if done is not None and version != "latest":
            return done
        (root / INSTALLED).unlink(missing_ok=True)
        try:
            if cli.registry == "npm":
                _install_npm(cli, root, version)
            else:
                _install_pypi(cli, root, version)
        except InstallError as exc:
            (root / FAILED).write_text(_first_lines(exc) + "\n")
            raise
        (root / FAILED).unlink(missing_ok=True)
        (root / INSTALLED).write_text(version + "\n")
    path = installed(cli)
    if path is None:
        raise InstallError(f"{cli.package} installed but {cli.executable} is not in {bin_dir(cli)}")
    return path


def main(names: list[str]) -> int:
    unknown = [name for name in names if name not in CLIS]
    if unknown:
        print(f"unknown CLI {', '.join(unknown)}; choose from {', '.join(CLIS)}", file=sys.stderr)
        return 2
    failed = 0
    for name in names or list(CLIS):
        cli = CLIS[name]
        try:
            path = install(cli)
        except InstallError as exc:
            failed += 1
            print(f"{cli.package} {wanted_version(cli)}: not installed: {exc}", file=sys.stderr)
        else:
            print(f"{cli.package} {wanted_version(cli)}: {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
