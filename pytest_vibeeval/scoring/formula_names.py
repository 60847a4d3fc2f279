"""Reading variable names in a score formula, before Python parses it.

Eval names may hold ``-`` (``critical-math``), which Python reads as minus. This module scans the
formula and replaces every name Python cannot read with a placeholder identifier:

- ``[name]`` (square brackets around a variable name) is always that variable.
- A run of name characters joined by hyphens, without spaces (``critical-math``, ``passed-total``,
  ``x-1e-3``), is read in every way its parts allow: as one variable, as a number, or as a subtraction
  of variables and numbers. One reading: that one. Several (evals ``a``, ``b`` and ``a-b``; an eval
  named ``2``): an error showing each reading and how to write it. A subtraction written without
  spaces whose operand is itself a hyphenated name (``critical-math-2``) is an error too: put spaces
  around a ``-`` that means minus.
- ``a - b`` with spaces is always subtraction.
- Eval names may also start or end with hyphens or double them (``-x``, ``a-``, ``a--b``): a run
  takes leading hyphens where a minus sign would be unary, and trailing ones, and a hyphen that is
  no part of a name reads as minus (``a--b``: ``a`` minus negative ``b``), so such a spelling with
  two readings is an error too.

With ``known=None`` no name is known: only brackets make names, and a hyphen is minus. That is how
``Formula.canonical`` (every such name bracketed) reads the same without the suite's eval names.
"""

from __future__ import annotations

import ast
import functools
import keyword
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from ..errors import did_you_mean

MAX_DEPTH = 32

# One part of a hyphen-joined run: a word that starts with a digit (a number such as 1.5e or a name
# such as 2fa), a number that starts with a point, or an identifier-like word.
_PART = r"(?:\d\w*(?:\.\w*)?|\.\d\w*|[^\W\d]\w*)"
_RUN = re.compile(rf"{_PART}(?:-+{_PART})*-*")
_SIGNED_RUN = re.compile(rf"-+{_PART}(?:-+{_PART})*-*")  # where a leading '-' would be unary
_OPERAND_START = re.compile(r"[\w.(\[+-]")  # what may follow a minus sign
_NAME = re.compile(r"[\w-]+")
_WORD = re.compile(r"\w+")
_BRACKET = re.compile(r"\[\s*([\w-]+)\s*\]")
_NUMBER = re.compile(r"(?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d(?:_?\d)*)?")
_PYTHON_NUMBER = re.compile(r"0[xXoObB]\w+|\d\w*[jJ]")  # literals Python reads (and we then reject)
# Keywords that are part of the formula language: a variable with such a name needs brackets.
_LANGUAGE_KEYWORDS = frozenset({"if", "else"})
_OPERATOR_KEYWORDS = frozenset({"if", "else", "and", "or", "not", "in", "is", "lambda"})
_MAX_READINGS = 8

# (group, kind) with kind "name", "number" or "function", or "minus" for the empty group of a hyphen
# that is a minus sign of its own (leading: unary; inside: a unary minus after a binary one;
# trailing: a binary minus whose operand follows the run)
Reading = tuple[tuple[str, str], ...]


class FormulaError(ValueError):
    """A formula that cannot be accepted; ``column`` is a 0-based offset into the text, ``width``
    how many characters from there the carets underline (a whole name, a whole divisor)."""

    def __init__(self, formula: str, message: str, column: int | None = None, width: int = 1) -> None:
        self.formula, self.reason, self.column = formula, message, column
        self.width = max(1, min(width, len(formula) - (column or 0)))
        super().__init__(self.render())

    def render(self) -> str:
        if self.column is None:
            return f"{self.reason}\n      {self.formula}"
        return f"{self.reason}\n      {self.formula}\n      {' ' * self.column}{'^' * self.width}"


@dataclass
class Rewrite:
    """The formula with the names Python cannot read replaced, and how to map columns back."""

    text: str  # as the user wrote it, whitespace normalised
    source: str = ""  # what Python parses
    canonical: str = ""  # every placeholder written as [name]
    placeholders: dict[str, str] = field(default_factory=dict)  # placeholder → name
    spans: list[tuple[int, int, int, int]] = field(default_factory=list)  # source ↔ text ranges

    def column(self, source_column: int) -> int:
        """A character column of ``source`` mapped to the matching column of ``text``."""
        shift = 0
        for s_start, s_end, t_start, t_end in self.spans:
            if source_column < s_start:
                break
            if source_column < s_end:
                return t_start
            shift = t_end - s_end
        return source_column + shift

    def node_column(self, node: ast.AST, attr: str = "col_offset") -> int | None:
        offset = getattr(node, attr, None)
        if offset is None:
            return None
        # ast offsets count UTF-8 bytes; columns count characters
        chars = len(self.source.encode()[:offset].decode(errors="ignore"))
        return self.column(chars)

    def snippet(self, node: ast.AST) -> str:
        start, end = self.node_column(node), self.node_column(node, "end_col_offset")
        return self.text[start:end] if start is not None and end is not None else ""

    def source_of(self, node: ast.AST) -> str:
        """The source text of ``node`` (placeholders included)."""
        start, end = getattr(node, "col_offset", None), getattr(node, "end_col_offset", None)
        return self.source.encode()[start:end].decode() if start is not None else ""


class _Scanner:
    def __init__(
        self, text: str, known: Collection[str] | None, allow_unknown: bool, functions: Collection[str]
    ) -> None:
        self.text, self.known, self.allow_unknown, self.functions = text, known, allow_unknown, functions
        self.result = Rewrite(text)
        self.source: list[str] = []
        self.canonical: list[str] = []
        self.source_length = 0
        prefix = "_v"
        while prefix in text:
            prefix += "_"
        self.prefix = prefix
        self.by_name: dict[str, str] = {}
        self.rest = ""  # the text after the run being read

    @functools.cached_property
    def max_parts(self) -> int:
        """The most hyphen-joined parts of a known name (a scan of every eval's variables)."""
        return max((name.count("-") + 1 for name in self.known or ()), default=1)

    def emit(self, raw: str) -> None:
        self.source.append(raw)
        self.canonical.append(raw)
        self.source_length += len(raw)

    def emit_name(self, name: str, start: int, end: int) -> None:
        placeholder = self.by_name.setdefault(name, f"{self.prefix}{len(self.by_name)}")
        self.result.placeholders[placeholder] = name
        s_start = self.source_length
        self.result.spans.append((s_start, s_start + len(placeholder), start, end))
        self.source.append(placeholder)
        self.canonical.append(f"[{name}]")
        self.source_length += len(placeholder)

    def scan(self) -> Rewrite:
        text, i, depth, previous = self.text, 0, 0, ""
        while i < len(text):
            char = text[i]
            if char in "'\"":
                end = text.find(char, i + 1)
                end = len(text) if end < 0 else end + 1
                self.emit(text[i:end])  # a string: rejected after parsing, shown as written
                i, previous = end, char
                continue
            if char == "[" and not (previous and (previous.isalnum() or previous in "_)]'\".")):
                match = _BRACKET.match(text, i)
                tail = _WORD.match(text, match.end()) if match else None
                if match and tail:  # [x-y]_cost: the brackets were meant around all of it
                    whole = f"[{match.group(1)}{tail.group()}]"
                    raise FormulaError(
                        text,
                        f"{match.group()!r} is followed by {tail.group()!r}: the brackets hold a whole "
                        f"variable name, write {whole}",
                        i,
                        tail.end() - i,
                    )
                if match:
                    self.emit_name(match.group(1), i, match.end())
                    i, previous = match.end(), "]"
                    continue
            if char in "([":
                depth += 1
                if depth >= MAX_DEPTH:  # with the innermost value: MAX_DEPTH levels
                    raise FormulaError(text, f"the formula nests deeper than {MAX_DEPTH} levels", i)
            elif char in ")]":
                depth -= 1
            signed = char == "-" and not (previous and (previous.isalnum() or previous in "_)]'\""))
            if signed or char.isalnum() or char == "_" or (char == "." and text[i + 1 : i + 2].isdigit()):
                run = (_SIGNED_RUN if signed else _RUN).match(text, i)
                if run:
                    self.rest = text[run.end() :].lstrip()
                    if previous == "." and char != ".":
                        self.emit(run.group())  # an attribute name: rejected after parsing
                    else:
                        self.word(run.group(), i, text[run.end() :].lstrip().startswith("("))
                    # after an operator keyword, [name] is a name; after a value, a subscript
                    i, previous = run.end(), "" if run.group() in _OPERATOR_KEYWORDS else "a"
                    continue
            self.emit(char)
            if not char.isspace():
                previous = char
            i += 1
        self.result.source = "".join(self.source)
        self.result.canonical = "".join(self.canonical)
        return self.result

    # ------------------------------------------------------------------ one hyphen-joined run

    def word(self, run: str, column: int, call: bool) -> None:
        known = self.known
        if known is None:
            self.emit(run)  # no names known: Python's reading (a hyphen is minus)
            return
        if run in _LANGUAGE_KEYWORDS and run in known:
            raise FormulaError(
                self.text,
                f"{run!r} is ambiguous: it is a variable and the keyword of a conditional "
                f"(x if condition else y); write [{run}] for the variable",
                column,
            )
        if call and run in known and run not in self.functions:
            raise FormulaError(self.text, f"{run!r} is a variable and cannot be called", column)
        readings = self.readings(run, call)
        if not readings and run.strip("-") != run:  # Python's reading of the hyphens at its ends
            core = run.strip("-")
            start = run.index(core)
            self.emit(run[:start])
            self.word(core, column + start, call and run.endswith(core))
            self.emit(run[start + len(core) :])
            return
        if len(readings) == 1 and (len(readings[0]) == 1 or not _hyphenated_name(readings[0])):
            self.emit_reading(readings[0], column)
        elif len(readings) > 1:
            shown = " or as ".join(self.describe(r) for r in readings)
            raise FormulaError(self.text, f"{run!r} is ambiguous: it can be read as {shown}", column)
        elif readings:
            self.unclear(run, readings[0], column)
        else:
            self.unreadable(run, column, call)

    def kinds(self, group: str, last: bool, call: bool) -> list[str]:
        if not group:  # a minus sign: trailing, only when an operand follows the run
            return ["minus"] if not last or _OPERAND_START.match(self.rest) else []
        if last and call:
            return ["function"] if group in self.functions else []
        kinds = []
        if self.known is not None and group in self.known:
            kinds.append("name")
        if _NUMBER.fullmatch(group):
            kinds.append("number")
        return kinds

    def readings(self, run: str, call: bool) -> list[Reading]:
        """Every way to read ``run`` as variables and numbers joined by minus (at most a few)."""
        parts = run.split("-")
        # A number has at most one hyphen (1e-3); a run of at most two parts never needs max_parts.
        longest = max(self.max_parts, 2) if len(parts) > 2 else 2
        empty: Reading = ()
        prefixes: list[list[Reading]] = [[empty]] + [[] for _ in parts]
        for end in range(1, len(parts) + 1):
            for start in range(max(0, end - longest), end):
                if not prefixes[start]:
                    continue
                group = "-".join(parts[start:end])
                for kind in self.kinds(group, end == len(parts), call):
                    for head in prefixes[start]:
                        if len(prefixes[end]) < _MAX_READINGS:
                            prefixes[end].append((*head, (group, kind)))
        return prefixes[-1]

    def emit_reading(self, reading: Reading, column: int) -> None:
        for index, (group, kind) in enumerate(reading):
            if index:
                self.emit("-")
                column += 1
            if kind == "minus":
                continue
            if kind == "name" and not _plain_identifier(group):
                self.emit_name(group, column, column + len(group))
            else:
                self.emit(group)
            column += len(group)

    def written(self, group: str, kind: str) -> str:
        """How to write ``group`` (read as ``kind``) between spaced minus signs, unambiguously."""
        plain_hyphens = not (group.startswith("-") or group.endswith("-") or "--" in group)
        if len(self.readings(group, call=False)) < 2 and (
            kind != "name" or ("-" in group and plain_hyphens) or group.isidentifier()
        ):
            return group
        return f"[{group}]" if kind == "name" else _with_point(group)

    def describe(self, reading: Reading) -> str:
        if len(reading) == 1:
            group, kind = reading[0]
            if kind == "name":
                return f"the variable {group!r} (write [{group}])"
            return f"the number {group} (write {_with_point(group)})"
        said = _joined(
            reading,
            lambda group, kind: (
                group
                if kind == "number"
                else f"the variable {group!r}"
                if _NUMBER.fullmatch(group)
                else repr(group)
            ),
            " minus ",
            "negative {}",
            "what follows",
        )
        return f"{said} (write {_joined(reading, self.written, ' - ', '-({})', '…')})"

    def unclear(self, run: str, reading: Reading, column: int) -> None:
        """A subtraction without spaces of a hyphenated name: ``critical-math-2``."""
        inner = next(group for group, kind in reading if kind == "name" and "-" in group)
        example = _joined(reading, self.written, " - ", "-({})", "…")
        raise FormulaError(
            self.text,
            f"{run!r} is ambiguous: {inner!r} is a variable, but {run!r} is not; "
            f"put spaces around a '-' that means minus (e.g. {example!r})",
            column,
        )

    def unreadable(self, run: str, column: int, call: bool) -> None:
        """No reading with known names and numbers: an unknown name, or Python's reading.

        A hyphen-joined run of which no part is a known name (``nonexistent-eval``) is one unknown
        name as written; with a known part (``passed-bogus``) Python reads a subtraction, whose
        unknown operands are then reported by their own names."""
        known = self.known or ()
        if "-" in run:
            if not run[0].isdigit() and not call and _NAME.fullmatch(run):
                if self.allow_unknown:
                    self.emit_name(run, column, column + len(run))  # most likely an eval that did not run
                    return
                if not any(part in known for part in run.split("-")):
                    raise FormulaError(self.text, _unknown(run, known), column, len(run))
            hint = did_you_mean(run, [name for name in known if "-" in name])
            if hint:
                raise FormulaError(self.text, f"unknown variable {run!r}{hint}", column, len(run))
        elif not run.isidentifier() and not _PYTHON_NUMBER.fullmatch(run) and "." not in run:
            if self.allow_unknown and not call:
                self.emit_name(run, column, column + len(run))
                return
            raise FormulaError(self.text, _unknown(run, known), column, len(run))
        self.emit(run)  # Python's reading; unknown operands are reported with their own names


def _joined(
    reading: Reading, show: Callable[[str, str], str], minus: str, negative: str, trailing: str
) -> str:
    """``reading`` said or written: its groups shown by ``show`` between ``minus``, the group after
    a minus sign of its own (an empty group) as ``negative`` (``{}`` the group), and a minus sign at
    its end as ``minus`` then ``trailing`` (what follows the run)."""
    out = ""
    for index, (group, kind) in enumerate(reading):
        if index and reading[index - 1][1] != "minus":
            out += minus
        if kind != "minus":
            shown = show(group, kind)
            out += negative.format(shown) if index and reading[index - 1][1] == "minus" else shown
    return out + trailing if reading[-1][1] == "minus" and len(reading) > 1 else out


def _unknown(name: str, known: Collection[str]) -> str:
    return f"unknown variable {name!r}{did_you_mean(name, known)}"


def _plain_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _hyphenated_name(reading: Reading) -> bool:
    return any(kind == "name" and "-" in group for group, kind in reading)


def _with_point(number: str) -> str:
    """``2`` → ``2.0``, ``1e-3`` → ``1.0e-3``: a number that no eval name can spell."""
    if "." in number:
        return number
    mantissa, e, exponent = number.replace("E", "e").partition("e")
    return f"{mantissa}.0{e}{exponent}"


def rewrite_names(
    text: str, known: Collection[str] | None, allow_unknown: bool, functions: Collection[str]
) -> Rewrite:
    """Replace the names in ``text`` that Python cannot read; raises FormulaError.

    ``functions`` are the names that may be called (``max(`` is a call, not a variable)."""
    return _Scanner(text, known, allow_unknown, functions).scan()
