"""Score formulas: parsed and checked when the suite is collected, evaluated at session end.

The language is arithmetic over numeric variables: ``+ - * /``, parentheses, numeric literals and
unary minus. Evaluation goes through simpleeval with only those operators and no functions.

Eval names may hold ``-`` (``critical-eval``). Written without spaces, a hyphenated word that names a
known variable is that variable; ``a - b`` with spaces is always subtraction. A hyphenated word that is
not a name but contains one (``critical-eval-x`` when ``critical-eval`` exists) is ambiguous and an
error that says how to write it.
"""

from __future__ import annotations

import ast
import keyword
import math
import operator
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from simpleeval import SimpleEval

from .errors import did_you_mean

MAX_LENGTH = 1000
MAX_DEPTH = 32

_BINARY: dict[type[ast.operator], Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
_UNARY: dict[type[ast.unaryop], Any] = {ast.USub: operator.neg, ast.UAdd: operator.pos}


_OPERATORS: dict[Any, Any] = {**_BINARY, **_UNARY}

# A run of name characters, possibly joined by hyphens, not part of a dotted number or attribute.
_WORD = re.compile(r"(?<![\w.])[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


class FormulaError(ValueError):
    """A formula that cannot be accepted; ``column`` is a 0-based offset into the text."""

    def __init__(self, formula: str, message: str, column: int | None = None) -> None:
        self.formula, self.reason, self.column = formula, message, column
        super().__init__(self.render())

    def render(self) -> str:
        if self.column is None:
            return f"{self.reason}\n      {self.formula}"
        return f"{self.reason}\n      {self.formula}\n      {' ' * self.column}^"


@dataclass(frozen=True)
class Formula:
    """A checked formula. ``names`` are the variables it uses, as written (``critical-eval``);
    ``source`` is the Python expression evaluated, where ``aliases`` maps each name that is not a
    Python identifier to the identifier standing in for it."""

    text: str
    names: frozenset[str]
    source: str = ""
    aliases: tuple[tuple[str, str], ...] = ()

    def python_name(self, name: str) -> str:
        return dict(self.aliases).get(name, name)


@dataclass
class _Rewrite:
    """The formula with non-identifier names replaced, and how to map columns back."""

    text: str  # as the user wrote it, whitespace normalised
    source: str  # what Python parses
    placeholders: dict[str, str]  # placeholder → name
    spans: list[tuple[int, int, int, int]]  # (source start, source end, text start, text end)

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


def parse_formula(text: str, known: Collection[str] | None, *, allow_unknown: bool = False) -> Formula:
    """Check ``text`` against the variables in ``known``; raises FormulaError.

    ``known=None`` accepts any name (and, knowing no eval names, reads ``a-b`` as subtraction).
    ``allow_unknown`` accepts names outside ``known`` (used at session end, when an eval may not have
    run); ``known`` still decides whether a hyphenated word is one name.
    """
    stripped = re.sub(r"\s", " ", text.strip())
    if not stripped:
        raise FormulaError(text, "the formula is empty")
    if len(stripped) > MAX_LENGTH:
        raise FormulaError(stripped[:60] + "…", f"the formula is longer than {MAX_LENGTH} characters")
    rewrite = _rewrite(stripped, known, allow_unknown)
    try:
        tree = ast.parse(rewrite.source, mode="eval")
    except SyntaxError as exc:
        if exc.offset is None:
            column = None
        elif exc.offset <= 0:
            column = len(stripped)
        else:
            column = rewrite.column(min(exc.offset - 1, len(rewrite.source)))
        raise FormulaError(stripped, f"syntax error: {exc.msg}", column) from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise FormulaError(stripped, f"cannot parse the formula: {exc}") from None
    names: set[str] = set()
    strict_known = None if known is None or allow_unknown else known
    _check(tree.body, rewrite, strict_known, names, 1)
    aliases = tuple(sorted((name, ph) for ph, name in rewrite.placeholders.items() if name in names))
    return Formula(stripped, frozenset(names), rewrite.source, aliases)


def _rewrite(text: str, known: Collection[str] | None, allow_unknown: bool) -> _Rewrite:
    if known is None:
        return _Rewrite(text, text, {}, [])
    prefix = "_v"
    while prefix in text:
        prefix += "_"
    placeholders: dict[str, str] = {}
    by_name: dict[str, str] = {}
    spans: list[tuple[int, int, int, int]] = []
    out: list[str] = []
    last = 0
    for match in _WORD.finditer(text):
        word = match.group()
        if _IDENTIFIER.fullmatch(word) and not keyword.iskeyword(word):
            continue  # an ordinary Python name
        if not _is_name(word, known, allow_unknown, text, match.start()):
            continue
        placeholder = by_name.setdefault(word, f"{prefix}{len(by_name)}")
        placeholders[placeholder] = word
        out.append(text[last : match.start()])
        s_start = sum(len(part) for part in out)
        out.append(placeholder)
        spans.append((s_start, s_start + len(placeholder), match.start(), match.end()))
        last = match.end()
    out.append(text[last:])
    return _Rewrite(text, "".join(out), placeholders, spans)


def _is_name(word: str, known: Collection[str], allow_unknown: bool, text: str, column: int) -> bool:
    """Whether ``word`` (not a Python identifier) is read as one variable name."""
    if word in known:
        return True
    if "-" not in word:
        return False  # a number such as 12 or 1e5, or a name Python rejects with its own error
    parts = word.split("-")
    for size in range(len(parts) - 1, 1, -1):
        for start in range(len(parts) - size + 1):
            inner = "-".join(parts[start : start + size])
            if inner in known:
                left, right = "-".join(parts[:start]), "-".join(parts[start + size :])
                example = " - ".join(part for part in (left, inner, right) if part)
                raise FormulaError(
                    text,
                    f"{word!r} is ambiguous: {inner!r} is a variable, but {word!r} is not; "
                    f"put spaces around a '-' that means minus (e.g. {example!r})",
                    column,
                )
    if word[0].isdigit():
        return False
    try:
        as_python = ast.parse(word, mode="eval")
    except (SyntaxError, ValueError):
        as_python = None
    python_names = (
        {node.id for node in ast.walk(as_python) if isinstance(node, ast.Name)} if as_python else set()
    )
    if as_python is not None and python_names <= set(known):
        return False  # subtraction of known variables written without spaces, e.g. passed-failed
    if allow_unknown:
        return True  # most likely an eval that did not run
    hint = did_you_mean(word, [name for name in known if "-" in name])
    if hint:
        raise FormulaError(text, f"unknown variable {word!r}{hint}", column)
    return False  # subtraction with an unknown operand: reported below with the operand's name


def _check(
    node: ast.AST, rewrite: _Rewrite, known: Collection[str] | None, names: set[str], depth: int
) -> None:
    text = rewrite.text
    column = rewrite.node_column(node)
    if depth > MAX_DEPTH:
        raise FormulaError(text, f"the formula nests deeper than {MAX_DEPTH} levels", column)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        if isinstance(node.op, ast.Div) and _is_zero_literal(node.right):
            raise FormulaError(text, "division by the literal zero", rewrite.node_column(node.right))
        _check(node.left, rewrite, known, names, depth + 1)
        _check(node.right, rewrite, known, names, depth + 1)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, rewrite, known, names, depth + 1)
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        pass
    elif isinstance(node, ast.Name):
        name = rewrite.placeholders.get(node.id, node.id)
        if known is not None and name not in known:
            raise FormulaError(text, f"unknown variable {name!r}{did_you_mean(name, known)}", column)
        names.add(name)
    else:
        if isinstance(node, ast.BinOp | ast.Compare):
            column = _operator_column(node, rewrite) or column
        raise FormulaError(
            text,
            f"{_describe(node, rewrite)} is not allowed; use + - * / ( ), numbers and variables",
            column,
        )


def _operator_column(node: ast.BinOp | ast.Compare, rewrite: _Rewrite) -> int | None:
    """The column of the first operator of ``node``: after its left operand and any ``)``."""
    left = node.left
    right = node.right if isinstance(node, ast.BinOp) else node.comparators[0]
    start, end = rewrite.node_column(left, "end_col_offset"), rewrite.node_column(right)
    if start is None or end is None:
        return None
    for index in range(start, end):
        if rewrite.text[index] not in " )":
            return index
    return None


def _is_zero_literal(node: ast.AST) -> bool:
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 0


_OPERATOR_NAMES = {
    ast.Pow: "**",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.MatMult: "@",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitOr: "|",
    ast.BitAnd: "&",
    ast.BitXor: "^",
    ast.Invert: "~",
    ast.Not: "not",
}


def _describe(node: ast.AST, rewrite: _Rewrite) -> str:
    if isinstance(node, ast.Constant):
        return f"the literal {rewrite.snippet(node) or repr(node.value)}"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        symbol = _OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)
        return f"the operator {symbol!r}"
    return {
        ast.Call: "a function call",
        ast.Attribute: "attribute access",
        ast.Subscript: "subscripting",
        ast.Compare: "a comparison",
        ast.Lambda: "lambda",
        ast.BoolOp: "and/or",
        ast.IfExp: "a conditional expression",
    }.get(type(node), f"{type(node).__name__}")


def evaluate(
    formula: Formula, values: Mapping[str, float | None], reasons: Mapping[str, str]
) -> tuple[float | None, str | None]:
    """The score, or ``None`` and why: a variable without a value, division by zero, overflow.

    Never raises."""
    missing = sorted(name for name in formula.names if values.get(name) is None)
    if missing:
        why = "; ".join(f"{name}: {reasons.get(name, 'no value in this run')}" for name in missing)
        return None, f"no value for {why}"
    evaluator = SimpleEval(
        operators=_OPERATORS,
        functions={},
        names={formula.python_name(name): values[name] for name in formula.names},
    )
    try:
        result = evaluator.eval(formula.source or formula.text)
        finite = isinstance(result, int | float) and not isinstance(result, bool) and math.isfinite(result)
        score = float(result) if finite else None
    except ZeroDivisionError:
        shown = _show(formula, values)
        return None, f"division by zero in {formula.text!r}" + (f" with {shown}" if shown else "")
    except OverflowError:
        return None, f"overflow in {formula.text!r}"
    except Exception as exc:  # a Formula not made by parse_formula; never crash the session
        return None, f"cannot evaluate {formula.text!r}: {type(exc).__name__}: {exc}"
    if score is None:
        return None, f"the formula gave {result!r}, not a finite number"
    return score, None


def breakdown(formula: Formula, values: Mapping[str, float | None]) -> str:
    """The formula with every variable replaced by its value: ``(1*3 + 1*2 + 0) / 0.0177``.

    A variable without a value shows as ``?``."""
    out = formula.source or formula.text
    tree = ast.parse(out, mode="eval")
    spans = sorted(
        ((node.col_offset, node.end_col_offset or node.col_offset, node.id) for node in ast.walk(tree)
         if isinstance(node, ast.Name)),
        reverse=True,
    )  # fmt: skip
    aliases = {python: name for name, python in formula.aliases}
    raw = out.encode()
    for start, end, python_name in spans:
        value = values.get(aliases.get(python_name, python_name))
        shown = "?" if value is None else f"{value:.6g}"
        raw = raw[:start] + shown.encode() + raw[end:]
    return raw.decode()


def _show(formula: Formula, values: Mapping[str, float | None]) -> str:
    return ", ".join(
        f"{name}={values[name]:g}" for name in sorted(formula.names) if values.get(name) is not None
    )
