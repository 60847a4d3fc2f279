"""``{{var('name')}}`` and ``{{secret('name')}}`` templates, ``{{row.column}}`` (a dataset eval's
row), and keeping secrets out of every output.

Values come from, first to last: ``--vibe-var NAME=VALUE``, the environment, the ``vibe_vars``
ini option. In the environment a name maps to ``VIBE_VAR_<NAME>`` (secrets: ``VIBE_SECRET_<NAME>``)
with the name upper-cased and every character that is not a letter or digit replaced by ``_``:
``linear.projectId`` is ``VIBE_VAR_LINEAR_PROJECTID``. Secrets come from the environment only, so
they never appear on a command line.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from ..masking import MASK, EnvironmentWatch, mask

TEMPLATE = re.compile(r"\{\{\s*(?P<func>[A-Za-z_]\w*)\s*\(\s*(?P<q>['\"])(?P<name>[^'\"]*)(?P=q)\s*\)\s*\}\}")
FUNCTIONS = ("var", "secret")
# ``{{row.column}}``: a column of the eval's dataset row; a column name may hold spaces, not braces.
ROW_TEMPLATE = re.compile(r"\{\{\s*row\.(?P<column>[^{}]*?)\s*\}\}")
_ANY_KNOWN = re.compile(f"{TEMPLATE.pattern}|{ROW_TEMPLATE.pattern}")
REDACTED = MASK


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
        row = ROW_TEMPLATE.fullmatch(match.group(0))
        if row is not None:
            if not row["column"].strip():
                problems.append(f"empty column name in template {match.group(0)!r}")
            continue
        parsed = TEMPLATE.fullmatch(match.group(0))
        if parsed is None:
            problems.append(
                f"malformed template {match.group(0)!r}: write {{{{var('name')}}}}, {{{{secret('name')}}}}"
                " or, in an eval with a dataset, {{row.column}}"
            )
        elif parsed["func"] not in FUNCTIONS:
            problems.append(
                f"unknown template function {parsed['func']!r} in {match.group(0)!r}: "
                "only var('name') and secret('name') exist"
            )
        elif not parsed["name"].strip():
            problems.append(f"empty name in template {match.group(0)!r}")
    unclosed = _UNCLOSED.search(text, max(text.rfind("}}"), 0))
    if unclosed is not None:  # it would reach the model as it is written
        start = text[unclosed.start() : unclosed.start() + 40]
        problems.append(f"unclosed template {start!r}: end it with }}}}")
    return problems


# The start of a template after the last ``}}`` of a text: one that was meant and never closed.
_UNCLOSED = re.compile(r"\{\{\s*(?:(?:var|secret)\s*\(|row\.)")


def has_templates(text: str) -> bool:
    return "{{" in text and TEMPLATE.search(text) is not None


def row_columns(text: str) -> list[str]:
    """The columns ``text``'s ``{{row.column}}`` templates name, in order, each once."""
    if "{{" not in text:
        return []
    return list(dict.fromkeys(match["column"].strip() for match in ROW_TEMPLATE.finditer(text)))


def row_text(value: object) -> str:
    """How a row value reads inside a template: text as it is, ``true``/``false``, numbers as
    written, an empty value as nothing, lists and mappings as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def fill_row(text: str, row: Mapping[str, object]) -> str:
    """``text`` with only its ``{{row.column}}`` templates filled (a column ``row`` lacks raises
    KeyError); used for row ids, which hold no other templates."""
    if "{{" not in text:
        return text
    return ROW_TEMPLATE.sub(lambda match: row_text(row[match["column"].strip()]), text)


def _how_to_set(kind: str, name: str) -> str:
    if kind == "row column":
        return "add the column to the eval's dataset"
    if kind == "var":
        how = f"pass --vibe-var {name}=VALUE, set {env_name(kind, name)}"
        return how + ", or add it to the vibe_vars ini option"
    return f"set the environment variable {env_name(kind, name)}"


class MissingValue(LookupError):
    """Templates name variables or secrets that have no value here: ``missing`` lists each
    ``(kind, name)`` once, in the order found; ``kind`` and ``name`` are the first."""

    def __init__(self, kind: str, name: str, more: Iterable[tuple[str, str]] = ()) -> None:
        self.kind, self.name = kind, name
        self.missing = list(dict.fromkeys([(kind, name), *more]))
        if len(self.missing) == 1:
            message = f"template {kind} {name!r} has no value: {_how_to_set(kind, name)}"
        else:
            each = "; ".join(f"{k} {n!r} ({_how_to_set(k, n)})" for k, n in self.missing)
            message = f"{len(self.missing)} template values are missing: {each}"
        super().__init__(message)


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
    """Fills templates and remembers every secret value it used, for :class:`Redactor`; from the
    start ``used_secrets`` also holds the values of the environment's secret-looking variables
    (see :mod:`pytest_vibeeval.masking`), so that every output masks them too."""

    values: TemplateValues
    used_secrets: set[str] = field(default_factory=set, repr=False)
    secret_names: set[str] = field(default_factory=set, repr=False)  # more names that hold secrets
    row: Mapping[str, object] | None = field(default=None, repr=False)  # a dataset eval's row
    _gathered: list[tuple[str, str]] | None = field(default=None, init=False, repr=False)
    # Shared with the renderers of dataset rows (with_row), so each item's look costs no scan.
    watch: EnvironmentWatch = field(default_factory=EnvironmentWatch, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.note_environment()

    def with_row(self, row: Mapping[str, object] | None) -> Renderer:
        """This renderer (sharing its secrets) filling ``{{row.column}}`` from ``row`` too. Row
        values are filled in the same pass as the other templates, so a value is literal text: a
        ``{{secret('x')}}`` inside a dataset is never filled."""
        if row is None:
            return self
        return Renderer(self.values, self.used_secrets, self.secret_names, row, watch=self.watch)

    def note_environment(self, names: Iterable[str] = ()) -> None:
        """Add the values of the environment's secret-looking variables (and of ``names``, such as
        an HTTP configuration's key variable) to the secrets: a conftest may set some late."""
        self.secret_names.update(names)
        found = self.watch.secrets(self.values.environ, self.secret_names)
        if found is not None:
            self.used_secrets.update(found)

    def redactor(self) -> Redactor:
        """A :class:`Redactor` of every secret known so far and of those found later."""
        return Redactor(self.used_secrets)

    @contextmanager
    def gathering(self) -> Iterator[None]:
        """Render several texts and report every missing value at once: inside, a missing value
        renders as "" and is remembered; leaving raises one :class:`MissingValue` naming them all."""
        outer, self._gathered = self._gathered, []
        try:
            yield
            found = self._gathered
        finally:
            self._gathered = outer
        if found:
            raise MissingValue(*found[0], found[1:])

    def render(self, text: str) -> str:
        if "{{" not in text:
            return text
        row = self.row

        def fill(match: re.Match[str]) -> str:
            if match["column"] is not None:
                if row is None:
                    return match.group(0)  # loading refuses row templates outside dataset evals
                column = match["column"].strip()
                if column not in row:
                    raise MissingValue("row column", column)  # loading checks every row's columns
                return row_text(row[column])
            try:
                value = self.values.lookup(match["func"], match["name"])
            except MissingValue:
                if self._gathered is None:
                    raise
                self._gathered.append((match["func"], match["name"]))
                return ""
            if match["func"] == "secret":
                self.used_secrets.add(value)
            return value

        return _ANY_KNOWN.sub(fill, text)


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
    """Replaces secret values, in every form :func:`~pytest_vibeeval.masking.encoded_forms` lists,
    with ``[secret]``."""

    secrets: set[str] = field(default_factory=set, repr=False)

    def add(self, values: Iterable[str]) -> None:
        self.secrets.update(value for value in values if value)

    def __call__(self, text: str | None) -> str | None:
        if not text or not self.secrets:
            return text
        return mask(text, frozenset(self.secrets))
