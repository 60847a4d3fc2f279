"""Confining coding agents and the build and grade steps that run their files, with bubblewrap
(``bwrap``): the command sees the whole system read-only, a private ``/tmp`` (where only what it
needs, such as the project and the Python environment, appears), not the eval's hidden grading
folder (a grade step sees the whole tree read-only), and may write only in its working folder (an agent also
in the configured extra folders). An agent has the network; a step has none unless its registry
entry says ``"network": true``. Without bwrap they run as the user does; templates are protected
only by being copied, never linked.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .options import SANDBOX_MODES as SANDBOX_MODES
from .options import SandboxMode

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)"
)
PROBE_TIMEOUT_S = 10.0
PRIVATE_TMP = Path("/tmp")


def folders_of(paths: Iterable[str | None]) -> list[Path]:
    """The folders holding those of ``paths`` that are absolute and exist, and holding their link
    targets: what a sandbox must show for a command to reach them (an executable found on PATH)."""
    return list(
        dict.fromkeys(
            folder
            for path in paths
            if path and os.path.isabs(path) and os.path.exists(path)
            for folder in (Path(path).parent, Path(os.path.realpath(path)).parent)
        )
    )


class SandboxUnavailable(Exception):
    """``--vibe-sandbox bwrap`` was asked for and bwrap does not work here."""


@functools.cache
def bwrap_problem() -> str | None:
    """Why bwrap cannot confine an agent on this machine, or None when it can (probed once)."""
    binary = shutil.which("bwrap")
    if binary is None:
        return "bwrap is not installed"
    probe = Path("/tmp")  # the argv the agents get, with /tmp as a stand-in workspace
    argv = bwrap_argv(binary, ["true"], probe, (), network=False)
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not start: {exc}"
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip().splitlines()
        return f"bwrap does not work here ({detail[-1] if detail else f'exit code {proc.returncode}'})"
    return None


def bwrap_argv(
    binary: str,
    argv: Sequence[str],
    workspace: Path,
    writable: Sequence[Path],
    visible: Sequence[Path] = (),
    hidden: Sequence[Path] = (),
    network: bool = True,
) -> list[str]:
    """``argv`` wrapped in bwrap: everything read-only; a private, empty ``/tmp`` in which only the
    ``visible`` folders appear (read-only); ``hidden`` folders (and files) emptied; its own pid
    namespace (the whole tree dies with it), and its own network namespace (only a loopback of its
    own) unless ``network``; ``workspace`` and ``writable`` folders writable; no capabilities, also
    as root."""
    wrapped = [binary, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    bound: list[Path] = []
    for folder in visible:
        if not folder.is_relative_to(PRIVATE_TMP) or not folder.exists():
            continue  # outside /tmp it is visible anyway
        if any(folder.is_relative_to(root) for root in bound):
            continue  # inside a folder already shown (binding onto its entries can fail)
        bound.append(folder)
        wrapped += ["--ro-bind", str(folder), str(folder)]
    for folder in hidden:
        if folder.is_dir():
            wrapped += ["--tmpfs", str(folder)]
        elif folder.is_file():  # a worktree's .git file
            wrapped += ["--ro-bind", "/dev/null", str(folder)]
    for folder in (workspace, *writable):
        wrapped += ["--bind", str(folder), str(folder)]
    wrapped += ["--unshare-pid", *([] if network else ["--unshare-net"]), "--die-with-parent"]
    if os.getuid() == 0:  # bwrap keeps root's capabilities (remount /, mknod) unless told
        wrapped += ["--cap-drop", "ALL"]
    wrapped += ["--chdir", str(workspace), "--", *argv]
    return wrapped


@dataclass(frozen=True)
class Sandbox:
    """What the agents of this session run in: ``kind`` is ``bwrap`` or ``none``; ``reason`` says
    why an ``auto`` sandbox fell back to ``none``."""

    kind: Literal["bwrap", "none"]
    reason: str | None = None
    writable: tuple[Path, ...] = ()

    def wrap(
        self, argv: Sequence[str], workspace: Path, visible: Sequence[Path] = (), hidden: Sequence[Path] = ()
    ) -> list[str]:
        """An agent's ``argv`` as it runs in this sandbox (see :func:`bwrap_argv` for
        ``visible``/``hidden``): with the network and the configured writable folders."""
        if self.kind == "none":
            return list(argv)
        writable = [p for p in self.writable if p.exists()]
        return bwrap_argv(_binary(), argv, workspace, writable, visible, hidden)

    def wrap_step(
        self,
        argv: Sequence[str],
        cwd: Path,
        visible: Sequence[Path] = (),
        hidden: Sequence[Path] = (),
        network: bool = False,
        writable: Sequence[Path] = (),
    ) -> list[str]:
        """A build or grade step's ``argv`` as it runs in this sandbox: only ``cwd`` (its copy) and
        ``writable`` are writable, ``hidden`` folders emptied, no network unless ``network``."""
        if self.kind == "none":
            return list(argv)
        return bwrap_argv(_binary(), argv, cwd, writable, visible, hidden, network)


def _binary() -> str:
    binary = shutil.which("bwrap")
    assert binary is not None  # checked by choose_sandbox
    return binary


def choose_sandbox(mode: SandboxMode, writable: Sequence[Path] = ()) -> Sandbox:
    """The sandbox for ``mode``; raises :class:`SandboxUnavailable` when ``bwrap`` was required."""
    if mode == "none":
        return Sandbox("none")
    problem = bwrap_problem()
    if problem is None:
        return Sandbox("bwrap", writable=tuple(writable))
    if mode == "bwrap":
        raise SandboxUnavailable(
            f"--vibe-sandbox bwrap: {problem}; {INSTALL_HINT}, or use --vibe-sandbox auto"
        )
    return Sandbox("none", reason=f"{problem}; {INSTALL_HINT}")
