"""``{{var('name')}}`` and ``{{secret('name')}}`` templates, and keeping secrets out of every output.

Values come from, first to last: ``--vibe-var NAME=VALUE``, the environment, the ``vibe_vars``
ini option. In the environment a name maps to ``VIBE_VAR_<NAME>`` (secrets: ``VIBE_SECRET_<NAME>``)
with the name upper-cased and every character that is not a letter or digit replaced by ``_``:
``linear.projectId`` is ``VIBE_VAR_LINEAR_PROJECTID``. Secrets come from the environment only, so
they never appear on a command line.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field

TEMPLATE = re.compile(r"\{\{\s*(?P<func>[A-Za-z_]\w*)\s*\(\s*(?P<q>['\"])(?P<name>[^'\"]*)(?P=q)\s*\)\s*\}\}")
FUNCTIONS = ("var", "secret")
REDACTED = "[secret]"


class _AnyTemplate:
    """Every ``{{ ... }}``, well formed or not: ``finditer`` and ``sub`` as on a compiled pattern."""

    pattern = re.compile(r"\{\{.*?\}\}", re.DOTALL)

    def _end(self, text: str) -> int:
        """Where the search may stop: just after the last ``}}`` (1 when there is none).

        Alone the pattern is quadratic on many unclosed ``{{``: each scans the rest of the text for a
        ``}}``. A ``{{`` before the last ``}}`` always matches and none after it can, so stopping there
        finds the same spans with each character scanned once.
        """
        return text.rfind("}}") + 2

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text, 0, self._end(text))

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        end = self._end(text)
        return self.pattern.sub(repl, text[:end]) + text[end:]


ANY_TEMPLATE = _AnyTemplate()


def env_name(kind: str, name: str) -> str:
    """The environment variable that supplies template ``kind`` (``var``/``secret``) ``name``."""
    return f"VIBE_{kind.upper()}_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def template_problems(text: str) -> list[str]:
    """Messages for every malformed or unknown template in ``text`` (empty when all are fine)."""
    problems = []
    for match in ANY_TEMPLATE.finditer(text):
        parsed = TEMPLATE.fullmatch(match.group(0))
        if parsed is None:
            problems.append(
                f"malformed template {match.group(0)!r}: write {{{{var('name')}}}} or {{{{secret('name')}}}}"
            )
        elif parsed["func"] not in FUNCTIONS:
            problems.append(
                f"unknown template function {parsed['func']!r} in {match.group(0)!r}: "
                "only var('name') and secret('name') exist"
            )
        elif not parsed["name"].strip():
            problems.append(f"empty name in template {match.group(0)!r}")
    return problems


def has_templates(text: str) -> bool:
    return "{{" in text and TEMPLATE.search(text) is not None


class MissingValue(LookupError):
    """A template names a variable or secret that has no value here."""

    def __init__(self, kind: str, name: str) -> None:
        self.kind, self.name = kind, name
        how = (
            f"pass --vibe-var {name}=VALUE, set {env_name(kind, name)}, or add it to the vibe_vars ini option"
            if kind == "var"
            else f"set the environment variable {env_name(kind, name)}"
        )
        super().__init__(f"template {kind} {name!r} has no value: {how}")


@dataclass
class TemplateValues:
    """Where template values come from on this machine."""

    cli_vars: Mapping[str, str] = field(default_factory=dict)
    ini_vars: Mapping[str, str] = field(default_factory=dict)
    # The live environment, so that a conftest can set values (a server it started) before the
    # items run. repr=False: a traceback must not print the environment or secrets.
    environ: Mapping[str, str] = field(default_factory=lambda: os.environ, repr=False)

    def variables(self) -> dict[str, str]:
        """The --vibe-var and vibe_vars values (the command line's win)."""
        return {**self.ini_vars, **self.cli_vars}

    def lookup(self, kind: str, name: str) -> str:
        if kind == "var":
            if name in self.cli_vars:
                return self.cli_vars[name]
            if (key := env_name("var", name)) in self.environ:
                return self.environ[key]
            if name in self.ini_vars:
                return self.ini_vars[name]
        elif (key := env_name("secret", name)) in self.environ:
            return self.environ[key]
        raise MissingValue(kind, name)


@dataclass
class Renderer:
    """Fills templates and remembers every secret value it used, for :class:`Redactor`."""

    values: TemplateValues
    used_secrets: set[str] = field(default_factory=set, repr=False)

    def render(self, text: str) -> str:
        if "{{" not in text:
            return text

        def fill(match: re.Match[str]) -> str:
            value = self.values.lookup(match["func"], match["name"])
            if match["func"] == "secret":
                self.used_secrets.add(value)
            return value

        return TEMPLATE.sub(fill, text)


def parse_assignments(items: Iterable[str], source: str) -> dict[str, str]:
    """``NAME=VALUE`` strings to a dict; raises ValueError naming ``source`` for a bad item."""
    out: dict[str, str] = {}
    for item in items:
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{source}: expected NAME=VALUE, got {item!r}")
        out[name.strip()] = value
    return out


@dataclass
class Redactor:
    """Replaces secret values in text with ``[secret]``."""

    secrets: set[str] = field(default_factory=set, repr=False)

    def add(self, values: Iterable[str]) -> None:
        self.secrets.update(value for value in values if value)

    _longest_first: tuple[str, ...] = field(default=(), init=False, repr=False)

    def __call__(self, text: str | None) -> str | None:
        if not text or not self.secrets:
            return text
        if len(self._longest_first) != len(self.secrets):  # the set only grows
            self._longest_first = tuple(sorted(self.secrets, key=len, reverse=True))
        for secret in self._longest_first:
            if secret:
                text = text.replace(secret, REDACTED)
        return text
