"""The environment an agent CLI is given: an allowlist of the controller's variables, never all of
them (the keys of the team running the evals stay with the team).

An agent gets the variables of :data:`BASE_ENV`, those its preset needs (``Preset.env``), those its
configuration requires (``requires_env``) or lets through (``env_passthrough``, names or globs),
and what the configuration's ``env`` sets. No pytest here.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from fnmatch import translate

from ..models import Configuration
from ..presets import AGENT_PRESETS

# What any program expects to find (and run_command needs PATH to find the executable).
BASE_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM",
    "TMPDIR", "TZ", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
)  # fmt: skip


def allowed_names(configuration: Configuration) -> tuple[str, ...]:
    """The names and globs of the variables ``configuration``'s agent may be given."""
    preset = AGENT_PRESETS.get(configuration.preset) if configuration.preset else None
    return (
        *BASE_ENV,
        *(preset.env if preset is not None else ()),
        *configuration.requires_env,
        *configuration.env_passthrough,
    )


def allowed_environment(environ: Mapping[str, str], patterns: Iterable[str]) -> dict[str, str]:
    """The variables of ``environ`` whose names match one of ``patterns`` (case-sensitive globs)."""
    allowed = _matcher(tuple(patterns))
    return {name: value for name, value in environ.items() if allowed(name)}


class AllowedEnvironment:
    """:func:`allowed_environment` of a live environment (``os.environ``), filtered again only when
    it changed: an agent starts for every eval, and decoding every variable each time costs more
    than comparing the raw byte mapping."""

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._allowed = _matcher(self.patterns)
        self._seen: list[tuple[bytes, bytes]] | None = None
        self._filtered: dict[str, str] = {}

    def __call__(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The allowed variables of ``environ``, in its order: a new dict each time."""
        raw = getattr(environ, "_data", None)  # os.environ's undecoded variables
        if not isinstance(raw, dict) or self._allowed(CURRENT_TEST):
            return allowed_environment(environ, self.patterns)
        # pytest changes PYTEST_CURRENT_TEST for every phase of every item; it is not let through.
        # Copied, popped and listed in C: a comprehension over every variable cost more.
        snapshot = raw.copy()
        snapshot.pop(_CURRENT_TEST_RAW, None)
        seen = list(snapshot.items())
        if seen != self._seen:
            self._filtered = allowed_environment(environ, self.patterns)
            self._seen = seen
        return dict(self._filtered)


CURRENT_TEST = "PYTEST_CURRENT_TEST"
_CURRENT_TEST_RAW = CURRENT_TEST.encode()  # os.environ's raw keys are bytes on POSIX


@functools.lru_cache(maxsize=256)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], object]:
    """Whether a name matches one of ``patterns``: one regular expression for them all, made once
    per set of patterns (matching each name against each glob was most of a prompt eval's own time
    with a CLI agent: a few dozen variables times a few dozen globs, for every command)."""
    if not patterns:
        return lambda name: False
    return re.compile("|".join(translate(pattern) for pattern in patterns)).fullmatch
