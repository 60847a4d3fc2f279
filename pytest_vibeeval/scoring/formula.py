"""Score formulas: parsed and checked when the suite is collected, evaluated at session end.

The language: numbers, variables, ``+ - * /``, ``**`` (exponent within ±100), parentheses, unary
minus, comparisons ``< <= > >= == !=`` (1.0 or 0.0), ``x if condition else y`` and the functions
``min max abs round sqrt log exp clamp``. Nothing else: no attributes, subscripts, strings, keyword
arguments, ``and``/``or``/``not``. A preset name (``price_performance``) may stand for the whole formula.

Evaluation goes through simpleeval with only these operators and functions, each wrapped so that a
domain error or an overflow gives ``None`` and a reason, never an exception or a hang.

Eval names may hold ``-`` (``critical-eval``): see ``formula_names`` for how they are read, and
``[name]`` for the spelling that always means the variable.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType

from ..errors import did_you_mean
from .formula_eval import breakdown, evaluate, run_source
from .formula_language import (
    FUNCTIONS,
    LANGUAGE,
    MAX_EXPONENT,
    MAX_LENGTH,
    OPERATORS,
    one_line,
    parse_expression,
)
from .formula_names import MAX_DEPTH, FormulaError, Rewrite, rewrite_names
from .grades import RUBRIC_FORMULA

__all__ = [
    "BUILTIN_PRESETS",
    "FUNCTIONS",
    "MAX_DEPTH",
    "MAX_EXPONENT",
    "MAX_LENGTH",
    "PRESET_UNDEFINED_AT_ZERO",
    "Formula",
    "FormulaError",
    "breakdown",
    "evaluate",
    "one_line",
    "parse_formula",
    "undefined_preset_reason",
]

# Presets that have no value for some runs, though their formula would compute one: the variable
# and the reason. vibecheck gives no price-performance score without cost data (total cost 0).
PRESET_UNDEFINED_AT_ZERO: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "price_performance": (
            "total_cost",
            "price_performance needs the run's cost, and total_cost is 0 (as in vibecheck, no score"
            " without cost data)",
        ),
    }
)


def undefined_preset_reason(preset: str | None, values: Mapping[str, float | None]) -> str | None:
    """Why the built-in ``preset`` has no value for a run with these ``values``, or None."""
    guard = PRESET_UNDEFINED_AT_ZERO.get(preset or "")
    if guard is not None and values.get(guard[0]) == 0:
        return guard[1]
    return None


BUILTIN_PRESETS: Mapping[str, str] = MappingProxyType(
    {
        "success_pct": "success_pct",
        # vibecheck's price-performance score: success per (cost in tenths of a cent + latency in tens of s)
        "price_performance": "success_pct / (total_cost * 1000 + total_latency * 0.1)",
        # the unified runner's time-penalised score: mean over the evals of
        # 100 × multiplier × subtask fraction × clamp(timeLimitMinutes / agent minutes, 0.2, 1)
        "vybes": "vybes_score",
        # the scoring rubric document's weighted automatic signals, 0–100 (grades A+ … F beside it)
        "rubric": RUBRIC_FORMULA,
    }
)


@dataclass(frozen=True)
class Formula:
    """A checked formula.

    ``text`` is as written (whitespace normalised); ``names`` the variables it uses, as written
    (``critical-eval``); ``source`` the Python expression evaluated, where ``aliases`` maps each name
    that is not a Python identifier to the identifier standing in for it. ``canonical`` is a text
    that ``parse_formula(canonical, None)`` reads exactly as this one was read (names bracketed,
    presets expanded); ``preset`` the preset's name when the formula is one."""

    text: str
    names: frozenset[str]
    source: str = ""
    aliases: tuple[tuple[str, str], ...] = ()
    canonical: str = ""
    preset: str | None = None

    def python_name(self, name: str) -> str:
        return dict(self.aliases).get(name, name)

    def shown(self) -> str:
        return show_formula(self.text, self.canonical, self.preset)


def show_formula(text: str, canonical: str | None, preset: str | None) -> str:
    """The formula as written; a preset with its expansion (``price_performance = success_pct / …``)."""
    if preset and canonical and canonical != text.strip():
        return f"{text} = {canonical}"
    return text


def parse_formula(
    text: str,
    known: Collection[str] | None,
    *,
    allow_unknown: bool = False,
    presets: Mapping[str, str] = BUILTIN_PRESETS,
) -> Formula:
    """Check ``text`` against the variables in ``known``; raises FormulaError.

    ``known=None`` accepts any name (and, knowing no eval names, reads ``a-b`` as subtraction; only
    ``[a-b]`` is one name). ``allow_unknown`` accepts names outside ``known`` (an eval that did not
    run); ``known`` still decides whether a hyphenated word is one name. ``presets``: the preset
    names a whole formula may be (the session's registry, or the built-ins).
    """
    stripped = one_line(text)
    if not stripped:
        raise FormulaError(text, "the formula is empty")
    if len(stripped) > MAX_LENGTH:
        window = "…" + stripped[MAX_LENGTH - 50 : MAX_LENGTH + 10] + "…"
        raise FormulaError(
            window,
            f"the formula is {len(stripped)} characters long, longer than {MAX_LENGTH} characters "
            f"(the caret marks character {MAX_LENGTH + 1})",
            51,
        )
    if stripped in presets and presets[stripped] != stripped:
        if known is not None and stripped in known:
            raise FormulaError(
                stripped,
                f"{stripped!r} is ambiguous: it is a preset ({presets[stripped]}) and a variable; "
                f"write [{stripped}] for the variable or the preset's formula for the preset",
                0,
            )
        try:
            expanded = _parse(presets[stripped], known, allow_unknown, presets)
        except FormulaError as exc:
            raise FormulaError(
                exc.formula, f"in preset {stripped!r}: {exc.reason}", exc.column, exc.width
            ) from None
        return replace(expanded, text=stripped, preset=stripped)
    formula = _parse(stripped, known, allow_unknown, presets)
    return replace(formula, preset=stripped) if stripped in presets else formula


def _parse(
    text: str, known: Collection[str] | None, allow_unknown: bool, presets: Mapping[str, str]
) -> Formula:
    rewrite = rewrite_names(text, known, allow_unknown, FUNCTIONS)
    try:
        tree = parse_expression(rewrite.source)
    except SyntaxError as exc:
        raise _syntax_error(rewrite, exc) from None
    except (ValueError, MemoryError, RecursionError) as exc:
        raise FormulaError(text, f"cannot parse the formula: {exc}") from None
    names: set[str] = set()
    _check(tree.body, rewrite, None if known is None or allow_unknown else known, names)
    aliases = tuple(sorted((name, ph) for ph, name in rewrite.placeholders.items() if name in names))
    canonical = rewrite.canonical
    if canonical in presets and presets[canonical] != canonical:
        canonical = f"[{canonical}]"  # a variable named like a preset
    return Formula(text, frozenset(names), rewrite.source, aliases, canonical)


# Where Python cannot parse a formula, its words differ between versions in a few places; there the
# plugin says what the language has not in its own: a `not` (3.13: "'not' after an operator must be
# parenthesized", or an unclosed bracket at another column), an f-string (3.12 words its errors anew).
_NOT = re.compile(r"(?<![\w.])not(?!\w)")
_F_STRING = re.compile(r"(?<![\w.])[rR]?[fF][rR]?(?=[\"'])")
# Python 3.13's words where earlier versions say "invalid syntax" at the same column.
_NEWER_SYNTAX_MESSAGES = ("Invalid star expression",)


def _syntax_error(rewrite: Rewrite, exc: SyntaxError) -> FormulaError:
    """The error of a formula Python cannot parse, worded alike on every supported Python."""
    text, source = rewrite.text, rewrite.source
    keyword = _NOT.search(source)
    if keyword is not None:
        column = rewrite.column(keyword.start())
        return FormulaError(text, f"the operator 'not' is not allowed; {LANGUAGE}", column, 3)
    quoted = _F_STRING.search(source)
    if quoted is not None:
        column = rewrite.column(quoted.start())
        return FormulaError(text, f"{_NOT_ALLOWED[ast.JoinedStr]} is not allowed; {LANGUAGE}", column)
    at: int | None = None
    if exc.offset is not None:
        at = len(text) if exc.offset <= 0 else rewrite.column(min(exc.offset - 1, len(source)))
    message = "invalid syntax" if exc.msg in _NEWER_SYNTAX_MESSAGES else exc.msg
    return FormulaError(text, f"syntax error: {message}", at)


_NOT_ALLOWED = {
    ast.Attribute: "attribute access",
    ast.Subscript: "subscripting",
    ast.List: "a list",
    ast.ListComp: "a list comprehension",
    ast.Lambda: "lambda",
    ast.BoolOp: "and/or",
    ast.Starred: "*args",
    ast.JoinedStr: "an f-string",
}
_HINTS = {
    ast.Subscript: " (square brackets around a variable name, [critical-math], are the variable)",
    ast.List: " (square brackets hold one variable name, e.g. [critical-math])",
    ast.BoolOp: " (use comparisons in a conditional, x if a > 0 else y, or min()/max())",
}


def _check(root: ast.AST, rewrite: Rewrite, known: Collection[str] | None, names: set[str]) -> None:
    """Accept only the formula language; iterative, so a long flat sum cannot exhaust the stack."""
    text = rewrite.text
    stack: list[tuple[ast.AST, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        column = rewrite.node_column(node)
        if depth > MAX_DEPTH:
            raise FormulaError(text, f"the formula nests deeper than {MAX_DEPTH} levels", column)
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            if isinstance(node.op, ast.Div):  # the language's only division (no // or %)
                _check_divisor(node.right, rewrite)
            if isinstance(node.op, ast.Pow):
                _check_exponent(node.right, rewrite)
            stack += [(node.left, depth), (node.right, depth + 1)]  # a chain a+b+c+… does not nest
        elif isinstance(node, ast.UnaryOp) and type(node.op) in OPERATORS:
            stack.append((node.operand, depth + 1))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
            if node.value == math.inf:  # a literal beyond floats (1e400) reads as inf
                literal = rewrite.snippet(node)
                raise FormulaError(
                    text,
                    f"the number {literal} is beyond the largest float (about 1.8e308)",
                    column,
                    len(literal),
                )
        elif isinstance(node, ast.Name):
            name = rewrite.placeholders.get(node.id, node.id)
            if known is not None and name not in known:
                hint = did_you_mean(name, known)
                if name in FUNCTIONS and not hint:
                    hint = f"; {name} is a function: {FUNCTIONS[name].usage}"
                raise FormulaError(
                    text, f"unknown variable {name!r}{hint}", column, len(rewrite.snippet(node))
                )
            names.add(name)
        elif isinstance(node, ast.Compare) and all(type(op) in OPERATORS for op in node.ops):
            stack += [(node.left, depth), *((c, depth + 1) for c in node.comparators)]
        elif isinstance(node, ast.IfExp):
            stack += [(node.test, depth + 1), (node.body, depth + 1), (node.orelse, depth + 1)]
        elif isinstance(node, ast.Call):
            stack += [(arg, depth + 1) for arg in _check_call(node, rewrite)]
        else:
            if isinstance(node, ast.BinOp | ast.Compare):
                column = _operator_column(node, rewrite) or column
            what, hint = _describe(node, rewrite), _HINTS.get(type(node), "")
            raise FormulaError(text, f"{what} is not allowed{hint}; {LANGUAGE}", column)


def _check_call(node: ast.Call, rewrite: Rewrite) -> list[ast.expr]:
    text, column = rewrite.text, rewrite.node_column(node)
    if not isinstance(node.func, ast.Name) or node.func.id in rewrite.placeholders:
        raise FormulaError(text, f"only the functions {', '.join(FUNCTIONS)} can be called", column)
    name = node.func.id
    function = FUNCTIONS.get(name)
    if function is None:
        hint = did_you_mean(name, FUNCTIONS) or f"; the functions are {', '.join(FUNCTIONS)}"
        raise FormulaError(text, f"unknown function {name!r}{hint}", column)
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise FormulaError(text, f"*args is not allowed in {name}()", rewrite.node_column(arg))
    if node.keywords:
        raise FormulaError(
            text,
            f"keyword arguments are not allowed: {function.usage}",
            rewrite.node_column(node.keywords[0]),
        )
    count = len(node.args)
    if count < function.min_args or (function.max_args is not None and count > function.max_args):
        raise FormulaError(text, f"{name}() got {count} argument(s); write {function.usage}", column)
    return node.args


_CONSTANT_NODES = (
    ast.Constant, ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.Name,
    ast.operator, ast.unaryop, ast.cmpop, ast.expr_context,
)  # fmt: skip


def _constant(node: ast.expr, rewrite: Rewrite) -> tuple[float | None, str | None] | None:
    """The value (or why there is none) of a sub-expression without variables, computed now:
    numbers, the language's operators and its functions (all pure). ``None`` when ``node`` uses a
    variable or anything outside the language (which ``_check`` rejects with its own message)."""
    nodes = list(ast.walk(node))
    called = {id(n.func) for n in nodes if isinstance(n, ast.Call)}
    for n in nodes:
        if (
            not isinstance(n, _CONSTANT_NODES)
            or (isinstance(n, ast.Constant) and type(n.value) not in (int, float))
            or (isinstance(n, ast.Name) and (id(n) not in called or n.id not in FUNCTIONS))
            or (isinstance(n, ast.operator | ast.unaryop | ast.cmpop) and type(n) not in OPERATORS)
        ):
            return None
    return run_source(rewrite.source_of(node), {})


def _check_divisor(node: ast.expr, rewrite: Rewrite) -> None:
    """A divisor without variables is computed now: one that is always 0 is an error (1 / (2 - 2))."""
    folded = _constant(node, rewrite)
    if folded is None or folded[0] != 0:
        return  # a variable, a non-zero value, or an error of its own (reported when evaluated)
    snippet = rewrite.snippet(node)
    literal = node
    while isinstance(literal, ast.UnaryOp):
        literal = literal.operand
    reason = (
        "division by the literal zero"
        if isinstance(literal, ast.Constant)
        else f"division by zero: the divisor {snippet!r} is always 0; divide by an expression that uses "
        "a variable, or leave the division out"
    )
    raise FormulaError(rewrite.text, reason, rewrite.node_column(node), len(snippet))


def _check_exponent(node: ast.expr, rewrite: Rewrite) -> None:
    """An exponent without variables is computed now: beyond ±MAX_EXPONENT it is an error (9**9**9)."""
    folded = _constant(node, rewrite)
    if folded is None:
        return
    value, error = folded
    if value is None or abs(value) > MAX_EXPONENT:
        what = error or f"it is {value:g}"
        raise FormulaError(
            rewrite.text,
            f"the exponent {rewrite.snippet(node)} is out of range ({what}); "
            f"exponents are limited to ±{MAX_EXPONENT}",
            rewrite.node_column(node),
            len(rewrite.snippet(node)),
        )


def _operator_column(node: ast.BinOp | ast.Compare, rewrite: Rewrite) -> int | None:
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


_OPERATOR_NAMES = {
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
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
}


def _describe(node: ast.AST, rewrite: Rewrite) -> str:
    if isinstance(node, ast.Constant):
        return f"the literal {rewrite.snippet(node) or repr(node.value)}"
    if isinstance(node, ast.BinOp | ast.UnaryOp):
        symbol = _OPERATOR_NAMES.get(type(node.op), type(node.op).__name__)
        return f"the operator {symbol!r}"
    if isinstance(node, ast.Compare):
        bad = next(op for op in node.ops if type(op) not in OPERATORS)
        return f"the operator {_OPERATOR_NAMES.get(type(bad), type(bad).__name__)!r}"
    return _NOT_ALLOWED.get(type(node), type(node).__name__)


# --------------------------------------------------------------------------- evaluation
