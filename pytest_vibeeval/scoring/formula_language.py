"""The formula language: its operators (strict: no inf, nan or complex, read or made) and its
function whitelist, shared by the checker and the evaluator."""

from __future__ import annotations

import ast
import math
import operator
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MAX_EXPONENT = 100
MAX_LENGTH = 1000  # characters of a formula, as one line
CHUNK = 40  # simpleeval recurses per node: deeper subtrees are evaluated first, bottom-up


class Refused(ArithmeticError):
    """A value the formula language does not define (sqrt(-1), an exponent beyond the limit)."""


class Deferred:
    """The error of a subtree evaluated ahead of its turn; raised only if the value is used."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __bool__(self) -> bool:
        raise self.error


def one_line(text: str) -> str:
    """A formula as one line: every run of whitespace (a `formula: |` block's newlines) one space."""
    return " ".join(text.split())


def strict(function: Callable[..., Any], label: str) -> Callable[..., Any]:
    """``function`` (an operator's symbol or a function's name: ``label``) refusing what is not a
    finite number, read or given: a comparison with nan would otherwise be silently false."""

    def wrapper(*args: Any) -> Any:
        for arg in args:
            if isinstance(arg, Deferred):
                raise arg.error
            if isinstance(arg, float) and not math.isfinite(arg):
                raise Refused(f"{_expression(label, args)} reads {not_finite(arg)}")
        result = function(*args)
        if isinstance(result, float) and not math.isfinite(result):
            raise Refused(f"{_expression(label, args)} is {not_finite(result)}")
        return result

    return wrapper


def not_finite(value: float) -> str:
    """How an error names a value that is not a finite number."""
    return "nan (not a number)" if math.isnan(value) else f"{value!r} (not a finite number)"


def _expression(label: str, args: tuple[Any, ...]) -> str:
    shown = [_number(arg) for arg in args]
    if label.isidentifier():
        return f"{label}({', '.join(shown)})"
    return f" {label} ".join(shown) if len(shown) > 1 else f"{label}{shown[0]}"


def _number(value: Any) -> str:
    try:
        return f"{value:g}"
    except OverflowError:  # an integer beyond floats
        return f"{str(value)[:6]}…"


def _power(base: float, exponent: float) -> float:
    if abs(exponent) > MAX_EXPONENT:
        raise Refused(f"the exponent {exponent:g} is beyond ±{MAX_EXPONENT}")
    try:
        return math.pow(base, exponent)
    except ValueError:
        raise Refused(f"({base:g}) ** {exponent:g} has no real value") from None


def _compare(test: Callable[[Any, Any], bool]) -> Callable[[Any, Any], float]:
    return lambda a, b: 1.0 if test(a, b) else 0.0


SYMBOLS: dict[type[ast.AST], tuple[str, Callable[..., Any]]] = {
    ast.Add: ("+", operator.add),
    ast.Sub: ("-", operator.sub),
    ast.Mult: ("*", operator.mul),
    ast.Div: ("/", operator.truediv),
    ast.Pow: ("**", _power),
    ast.USub: ("-", operator.neg),
    ast.UAdd: ("+", operator.pos),
    ast.Lt: ("<", _compare(operator.lt)),
    ast.LtE: ("<=", _compare(operator.le)),
    ast.Gt: (">", _compare(operator.gt)),
    ast.GtE: (">=", _compare(operator.ge)),
    ast.Eq: ("==", _compare(operator.eq)),
    ast.NotEq: ("!=", _compare(operator.ne)),
}
OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {op: function for op, (_, function) in SYMBOLS.items()}
WRAPPED_OPERATORS = {op: strict(function, symbol) for op, (symbol, function) in SYMBOLS.items()}


def _round(x: float, ndigits: float | None = None) -> float:
    if ndigits is None:
        return float(round(float(x)))
    if ndigits != int(ndigits) or abs(ndigits) > MAX_EXPONENT:
        raise Refused(f"round() needs a whole number of digits within ±{MAX_EXPONENT}, not {ndigits:g}")
    return float(round(float(x), int(ndigits)))


def _sqrt(x: float) -> float:
    if x < 0:
        raise Refused(f"sqrt of the negative number {x:g}")
    return math.sqrt(x)


def _log(x: float, base: float | None = None) -> float:
    if x <= 0:
        raise Refused(f"log of {x:g}, which is not positive")
    if base is None:
        return math.log(x)
    if base <= 0 or base == 1:
        raise Refused(f"log with base {base:g} (a base must be positive and not 1)")
    return math.log(x, base)


def _clamp(x: float, low: float, high: float) -> float:
    if low > high:
        raise Refused(f"clamp() with lower bound {low:g} above upper bound {high:g}")
    return float(min(max(x, low), high))


@dataclass(frozen=True)
class Function:
    """A function a score formula may call, with how many arguments it takes."""

    call: Callable[..., float]
    min_args: int
    max_args: int | None
    usage: str


FUNCTIONS: dict[str, Function] = {
    "min": Function(lambda *a: float(min(a)), 2, None, "min(a, b, ...)"),
    "max": Function(lambda *a: float(max(a)), 2, None, "max(a, b, ...)"),
    "abs": Function(lambda x: float(abs(x)), 1, 1, "abs(x)"),
    "round": Function(_round, 1, 2, "round(x) or round(x, ndigits)"),
    "sqrt": Function(_sqrt, 1, 1, "sqrt(x)"),
    "log": Function(_log, 1, 2, "log(x) (natural) or log(x, base)"),
    "exp": Function(lambda x: math.exp(x), 1, 1, "exp(x)"),
    "clamp": Function(_clamp, 3, 3, "clamp(x, lo, hi)"),
}
LANGUAGE = (
    "formulas use numbers, variables, + - * / ** ( ), comparisons, x if condition else y "
    f"and the functions {', '.join(FUNCTIONS)}"
)


def parse_expression(source: str) -> ast.Expression:
    """``ast.parse`` without its SyntaxWarnings (``1if x else 2``): under ``-W error`` they would raise."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return ast.parse(source, mode="eval")
