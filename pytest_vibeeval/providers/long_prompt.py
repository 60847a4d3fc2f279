"""A prompt too long for an agent CLI's command line: Linux takes at most 128 KiB in one argument
(``MAX_ARG_STRLEN``) and refuses to start a command with a longer one (E2BIG). Where the
configuration's preset says how its CLI reads a prompt otherwise (a :class:`LongPrompt`: gemini
from stdin, aider from a file), the prompt goes that way; elsewhere the eval errors, naming the
limit and what to change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..models import Configuration
from ..presets import AGENT_PRESETS, PROMPT_FILE, LongPrompt
from ..surrogates import utf8_bytes


@dataclass(frozen=True)
class Rerouted:
    """The command line without the prompt, and what the CLI reads it from instead: ``stdin``
    (the prompt), or ``file``, which the caller writes the prompt to."""

    argv: list[str]
    stdin: str | None
    file: Path | None


def long_prompt_of(configuration: Configuration) -> LongPrompt | None:
    preset = AGENT_PRESETS.get(configuration.preset) if configuration.preset else None
    return preset.long_prompt if preset is not None else None


def _prompt_pair(argv: Sequence[str], prompt: str, flags: Sequence[str]) -> int | None:
    """The index of the flag that the prompt follows as an argument of its own, or None."""
    for index in range(1, len(argv) - 1):
        if argv[index] in flags and argv[index + 1] == prompt:
            return index
    return None


def reroute(
    configuration: Configuration, argv: Sequence[str], prompt: str, stdin: str | None, file: Path
) -> Rerouted | str | None:
    """How the prompt, too long for ``argv``, reaches the CLI of ``configuration`` instead: its
    preset's way, ``file`` being where a prompt file goes. A text saying why it cannot (the CLI's
    stdin holds less), or None when the preset has no way or ``argv`` does not hold the prompt as
    the argument of one of its flags."""
    way = long_prompt_of(configuration)
    index = _prompt_pair(argv, prompt, way.flags) if way is not None else None
    if way is None or index is None:
        return None
    rest = [*argv[:index], *argv[index + 2 :]]
    if way.args:
        args = [arg.replace(PROMPT_FILE, str(file)) for arg in way.args]
        return Rerouted([*rest[:index], *args, *rest[index:]], stdin, file)
    if stdin is not None:  # stdin holds something else already
        return None
    size = len(utf8_bytes(prompt))
    if way.stdin_max_bytes is not None and size > way.stdin_max_bytes:
        return (
            f"the prompt is {size} bytes: too long for the command line, and {configuration.cli} "
            f"reads at most {way.stdin_max_bytes} bytes of a prompt on stdin (it would cut the rest)"
        )
    return Rerouted(rest, prompt, None)


def too_long_hint(configuration: Configuration, prompt: str, on_command_line: bool) -> str:
    """What to change when the system refused the command line (E2BIG) and the prompt could not
    go another way; empty when the prompt is not on the command line."""
    if not on_command_line:
        return ""
    size = len(utf8_bytes(prompt))
    way = long_prompt_of(configuration)
    if way is not None:
        return (
            f"; the prompt ({size} bytes) goes another way (the {configuration.preset} preset's) "
            f"when it is an argument of its own after {' or '.join(way.flags)}, as in the preset's "
            "`args`: write `${PROMPT}` so in yours"
        )
    return (
        f"; the prompt ({size} bytes) is on the command line: pass it on stdin instead "
        f"(`prompt_via: stdin` and no `${{PROMPT}}` in `args`) if {configuration.cli} reads it there"
    )
