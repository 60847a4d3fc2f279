"""The values of the workspace options (``vibe_sandbox``, ``vibe_subtask_globs``) that the plugin
checks at start-up, apart from the machinery that uses them: every pytest process reads them, and
only sessions with coding evals need the sandbox and the results files' parsers."""

from __future__ import annotations

from typing import Literal

SandboxMode = Literal["auto", "bwrap", "none"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("auto", "bwrap", "none")

# Where the grade steps' results are looked for, relative to the grading directory.
DEFAULT_SUBTASK_GLOBS: tuple[str, ...] = ("**/junit*.xml", "**/results*.json")


def subtask_glob(pattern: str) -> str:
    """A ``vibe_subtask_globs`` pattern as every supported Python reads it alike; a ValueError says
    what is wrong with it. It is relative to the grading folder and stays in it; a ``**`` is a whole
    path component (Python 3.11 and 3.12 refuse ``**.xml``, 3.13 reads it as ``*.xml``); a trailing
    ``**`` matches the files below it, as Python 3.13 reads it (earlier versions match only folders
    there, and a folder is no results file)."""
    parts = pattern.split("/")
    if pattern.startswith("/"):
        raise ValueError(
            f"{pattern!r} is absolute: write it relative to the grading folder, e.g. **/junit*.xml"
        )
    if ".." in parts:
        raise ValueError(
            f"{pattern!r} leads out of the grading folder (..): results files are looked for in it"
        )
    bad = next((part for part in parts if "**" in part and part != "**"), None)
    if bad is not None:
        fixed = "/".join(f"**/{part.replace('**', '*')}" if part == bad else part for part in parts)
        raise ValueError(f"{pattern!r}: ** must be a whole path component, as in {fixed}")
    return f"{pattern}/*" if parts[-1] == "**" else pattern
