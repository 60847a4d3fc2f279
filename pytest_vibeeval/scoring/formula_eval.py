"""Evaluating a checked formula with simpleeval (never raising: a null score and the reason
instead), and showing it with the run's values substituted."""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from simpleeval import SimpleEval

if TYPE_CHECKING:
    from .formula import Formula

from .formula_language import (
    CHUNK,
    FUNCTIONS,
    MAX_LENGTH,
    WRAPPED_OPERATORS,
    Deferred,
    Refused,
    not_finite,
    one_line,
    parse_expression,
    strict,
)


def evaluate(
    formula: Formula, values: Mapping[str, float | None], reasons: Mapping[str, str]
) -> tuple[float | None, str | None]:
    """The score, or ``None`` and why: a variable without a value, division by zero, overflow,
    a value outside a function's domain. Never raises."""
    if len(one_line(formula.text)) > MAX_LENGTH:  # a Formula not made by parse_formula
        # Refused the same on every Python: a newer parser would evaluate what an older one cannot.
        return None, f"the formula is longer than {MAX_LENGTH} characters"
    missing = sorted(name for name in formula.names if values.get(name) is None)
    if missing:
        why = "; ".join(f"{name}: {reasons.get(name, 'no value in this run')}" for name in missing)
        return None, f"no value for {why}"
    shown = formula.shown()
    for name in sorted(formula.names):
        value = values[name]
        if isinstance(value, float) and not math.isfinite(value):
            return None, f"{name} is {not_finite(value)} in {shown!r}"
    names = {formula.python_name(name): values[name] for name in formula.names}
    score, error = run_source(formula.source or formula.text, names)
    if error is None:
        return score, None
    if error == "division by zero":
        given = _show(formula, values)
        return None, f"division by zero in {shown!r}" + (f" with {given}" if given else "")
    if error.startswith("cannot evaluate"):
        return None, f"cannot evaluate {shown!r}: {error.removeprefix('cannot evaluate: ')}"
    if error.startswith("the formula gave"):
        return None, error
    return None, f"{error} in {shown!r}"


def run_source(source: str, names: Mapping[str, Any]) -> tuple[float | None, str | None]:
    """Evaluate ``source`` with the language's operators and functions: a value or a reason."""
    evaluator = SimpleEval(
        operators=WRAPPED_OPERATORS,
        functions={name: strict(f.call, name) for name, f in FUNCTIONS.items()},
        names=dict(names),
    )
    try:
        result = _evaluate_tree(evaluator, source)
        if isinstance(result, Deferred):
            raise result.error
        if isinstance(result, bool) or not isinstance(result, int | float):
            return None, f"the formula gave {result!r}, not a finite number"
        score = float(result)
    except ZeroDivisionError:
        return None, "division by zero"
    except OverflowError:
        return None, "overflow"
    except Refused as exc:
        return None, str(exc)
    except RecursionError:
        return None, "the formula is nested too deeply to evaluate"
    except Exception as exc:  # a Formula not made by parse_formula; never crash the session
        return None, f"cannot evaluate: {type(exc).__name__}: {exc}"
    if not math.isfinite(score):
        return None, f"the formula gave {score!r}, not a finite number"
    return score, None


_EVALUABLE = (
    ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Compare, ast.IfExp, ast.Call,
    ast.operator, ast.unaryop, ast.cmpop, ast.expr_context,
)  # fmt: skip


def _evaluate_tree(evaluator: SimpleEval, source: str) -> Any:
    """simpleeval recurses once per node; a long flat chain (a+b+c+… of hundreds of terms) would
    exhaust the stack. Subtrees ``CHUNK`` deep are evaluated first, bottom-up, and replaced by a
    name; their errors are deferred until the value is used (an unused branch must not fail)."""
    root = parse_expression(source.strip()).body
    order = list(ast.walk(root))
    for node in order:  # a Formula not made by parse_formula: still only the language's node types
        if not isinstance(node, _EVALUABLE) or (
            isinstance(node, ast.Call) and not isinstance(node.func, ast.Name)
        ):
            raise Refused(f"{type(node).__name__} is not allowed")
    parents: dict[int, tuple[ast.AST, str, int | None]] = {}
    for node in order:
        for field_name, value in ast.iter_fields(node):
            if isinstance(value, ast.expr):
                parents[id(value)] = (node, field_name, None)
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    if isinstance(item, ast.expr):
                        parents[id(item)] = (node, field_name, index)
    heights: dict[int, int] = {}
    for node in reversed(order):  # breadth-first order reversed: children before parents
        if not isinstance(node, ast.expr):
            continue
        height = 1 + max((heights.get(id(c), 0) for c in ast.iter_child_nodes(node)), default=0)
        if height >= CHUNK and node is not root and id(node) in parents:
            try:
                value = evaluator.eval(source, previously_parsed=node)
            except Exception as exc:
                value = Deferred(exc)
            name = f" chunk{len(heights)}"  # a space: never a variable's identifier
            evaluator.names[name] = value
            parent, field_name, position = parents[id(node)]
            stand_in = ast.Name(id=name, ctx=ast.Load())
            if position is None:
                setattr(parent, field_name, stand_in)
            else:
                getattr(parent, field_name)[position] = stand_in
            height = 1
        heights[id(node)] = height
    return evaluator.eval(source, previously_parsed=root)


def breakdown(formula: Formula, values: Mapping[str, float | None]) -> str:
    """The formula with every variable replaced by its value: ``(1*3 + 1*2 + 0) / 0.0177``.

    A variable without a value shows as ``?``; a negative value is parenthesised."""
    out = formula.source or formula.text
    tree = parse_expression(out.strip())
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    offset = len(out) - len(out.lstrip())
    spans = sorted(
        ((node.col_offset + offset, (node.end_col_offset or node.col_offset) + offset, node.id)
         for node in ast.walk(tree) if isinstance(node, ast.Name) and id(node) not in called),
        reverse=True,
    )  # fmt: skip
    aliases = {python: name for name, python in formula.aliases}
    raw = out.encode()
    for start, end, python_name in spans:
        value = values.get(aliases.get(python_name, python_name))
        shown = "?" if value is None else f"{value:.6g}" if value >= 0 else f"({value:.6g})"
        raw = raw[:start] + shown.encode() + raw[end:]
    return raw.decode()


def _show(formula: Formula, values: Mapping[str, float | None]) -> str:
    return ", ".join(
        f"{name}={values[name]:g}" for name in sorted(formula.names) if values.get(name) is not None
    )
