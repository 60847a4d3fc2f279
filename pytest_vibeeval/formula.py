"""Score formulas: parsed and checked when the suite is collected, evaluated at session end.

The language is arithmetic over numeric variables: ``+ - * /``, parentheses, numeric literals and
unary minus. Evaluation goes through simpleeval with only those operators and no functions.
"""

from __future__ import annotations

import ast
import math
import operator
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
    text: str
    names: frozenset[str]


def parse_formula(text: str, known: Collection[str] | None) -> Formula:
    """Check ``text`` against the variables in ``known`` (``None``: any name); raises FormulaError."""
    stripped = text.strip()
    if not stripped:
        raise FormulaError(text, "the formula is empty")
    if len(stripped) > MAX_LENGTH:
        raise FormulaError(stripped[:60] + "…", f"the formula is longer than {MAX_LENGTH} characters")
    try:
        tree = ast.parse(stripped, mode="eval")
    except SyntaxError as exc:
        column = (exc.offset - 1) if exc.offset else None
        raise FormulaError(stripped, f"syntax error: {exc.msg}", column) from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise FormulaError(stripped, f"cannot parse the formula: {exc}") from None
    names: set[str] = set()
    _check(tree.body, stripped, known, names, 1)
    return Formula(stripped, frozenset(names))


def _check(node: ast.AST, text: str, known: Collection[str] | None, names: set[str], depth: int) -> None:
    column = getattr(node, "col_offset", None)
    if depth > MAX_DEPTH:
        raise FormulaError(text, f"the formula nests deeper than {MAX_DEPTH} levels", column)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        if isinstance(node.op, ast.Div) and _is_zero_literal(node.right):
            raise FormulaError(text, "division by the literal zero", node.right.col_offset)
        _check(node.left, text, known, names, depth + 1)
        _check(node.right, text, known, names, depth + 1)
    elif isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        _check(node.operand, text, known, names, depth + 1)
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        pass
    elif isinstance(node, ast.Name):
        if known is not None and node.id not in known:
            raise FormulaError(text, f"unknown variable {node.id!r}{did_you_mean(node.id, known)}", column)
        names.add(node.id)
    else:
        raise FormulaError(
            text,
            f"{_describe(node)} is not allowed; use + - * / ( ), numbers and variables",
            column,
        )


def _is_zero_literal(node: ast.AST) -> bool:
    while isinstance(node, ast.UnaryOp):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == 0


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return f"the literal {node.value!r}"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        return f"the operator {type(node.op).__name__}"
    return {
        ast.Call: "a function call",
        ast.Attribute: "attribute access",
        ast.Subscript: "subscripting",
        ast.Compare: "a comparison",
        ast.Lambda: "lambda",
    }.get(type(node), f"{type(node).__name__}")


def evaluate(
    formula: Formula, values: Mapping[str, float | None], reasons: Mapping[str, str]
) -> tuple[float | None, str | None]:
    """The score, or ``None`` and why: a variable without a value, division by zero, overflow."""
    missing = sorted(name for name in formula.names if values.get(name) is None)
    if missing:
        why = "; ".join(f"{name}: {reasons.get(name, 'no value in this run')}" for name in missing)
        return None, f"no value for {why}"
    evaluator = SimpleEval(
        operators=_OPERATORS,
        functions={},
        names={name: values[name] for name in formula.names},
    )
    try:
        result = evaluator.eval(formula.text)
    except ZeroDivisionError:
        return None, f"division by zero in {formula.text!r} with " + _show(formula, values)
    except OverflowError:
        return None, f"overflow in {formula.text!r}"
    if not isinstance(result, int | float) or isinstance(result, bool) or not math.isfinite(result):
        return None, f"the formula gave {result!r}, not a finite number"
    return float(result), None


def _show(formula: Formula, values: Mapping[str, float | None]) -> str:
    return ", ".join(
        f"{name}={values[name]:g}" for name in sorted(formula.names) if values.get(name) is not None
    )
