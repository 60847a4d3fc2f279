"""Continue an agent CLI's session in a conversation's later turns: which configurations can
(the presets that declare a :class:`~pytest_vibeeval.presets.Resume`), the session id a run
reported, and the arguments that continue it."""

from __future__ import annotations

from pathlib import Path

from ..models import Configuration
from ..presets import AGENT_PRESETS, SESSION_ID, Resume
from ..surrogates import loads

# The id is in the first lines (claude-code's `system` event, codex's `thread.started`); a
# transcript is read no further than this looking for it.
SCAN_BYTES = 4 * 2**20


def resume_of(configuration: Configuration) -> Resume | None:
    """How ``configuration``'s CLI continues a session, or None when it cannot."""
    preset = AGENT_PRESETS.get(configuration.preset) if configuration.preset else None
    return preset.resume if preset is not None else None


def unsupported_reason(configuration: Configuration | None, config_id: str) -> str | None:
    """Why ``configuration`` cannot answer a conversation (an eval with ``turns``), or None. HTTP
    configurations, Python callables, replays and plugins' providers get every turn's history."""
    if configuration is None or configuration.kind != "cli" or resume_of(configuration) is not None:
        return None
    if configuration.preset:
        what = f"the {configuration.preset} preset has no way to continue a session here"
    else:
        what = "a `cli:` configuration runs one prompt per process and has no way to continue its session"
    able = ", ".join(name for name, preset in AGENT_PRESETS.items() if preset.resume)
    return (
        f"configuration {config_id!r} cannot continue a conversation: {what} (the presets that can: "
        f"{able}; HTTP and Python configurations get the whole conversation on every turn)"
    )


def reported_session(stdout: Path, resume: Resume) -> str | None:
    """The session id a run printed in its JSON lines (``resume.field``), or None."""
    try:
        with stdout.open("rb") as handle:
            data = handle.read(SCAN_BYTES)
    except OSError:
        return None
    for line in data.splitlines():
        if resume.field.encode() not in line:
            continue
        try:
            event = loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or (resume.event and event.get("type") != resume.event):
            continue
        found = event.get(resume.field)
        if isinstance(found, str) and found:
            return found
    return None


def turn_tokens(
    totals: tuple[int | None, ...], before: tuple[int | None, ...] | None
) -> tuple[int | None, ...]:
    """A continuing run's own tokens (input, output, cached input, cache writes): the session's
    ``totals`` less those of the previous turn (``before``). Running totals grow with every turn
    (each sends a new prompt), so input tokens that did not grow are taken as the run's own (a CLI
    version that reports each turn's: equal turns would otherwise count 0); without the earlier
    totals the share is unknown."""
    if before is None:
        return tuple(None for _ in totals)
    if totals[0] is not None and before[0] is not None and totals[0] <= before[0]:
        return totals  # not running totals
    return tuple(
        None if total is None or earlier is None else total - earlier if total >= earlier else total
        for total, earlier in zip(totals, before, strict=True)
    )


def resume_args(resume: Resume, session_id: str) -> tuple[str, ...]:
    """The arguments that continue ``session_id``."""
    return tuple(arg.replace(SESSION_ID, session_id) for arg in resume.args)
