"""The score formula language: functions, comparisons, conditionals, bounded ``**``, hyphenated and
bracketed names, the canonical text, presets, limits and attacks."""

from __future__ import annotations

import math
import os
import sys

import pytest
from helpers import best_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_vibeeval.registry import builtin_presets
from pytest_vibeeval.scoring.formula import (
    BUILTIN_PRESETS,
    MAX_DEPTH,
    MAX_EXPONENT,
    MAX_LENGTH,
    Formula,
    FormulaError,
    breakdown,
    evaluate,
    parse_formula,
)
from pytest_vibeeval.scoring.variables import eval_variable_names, run_variable_names

EVALS = ("critical-math", "important-translation", "secondary-question", "a", "b", "a-b", "2fa")
KNOWN = frozenset(run_variable_names()) | {v for name in EVALS for v in eval_variable_names(name)}
VALUES: dict[str, float | None] = {name: None for name in KNOWN} | {
    "success_pct": 80.0,
    "passed": 4.0,
    "failed": 1.0,
    "total": 5.0,
    "total_cost": 0.02,
    "avg_cost": 0.004,
    "total_latency": 10.0,
    "avg_latency": 2.0,
    "max_latency": 4.0,
    "min_latency": 1.0,
    "critical-math": 1.0,
    "critical-math_latency": 1.5,
    "important-translation": 0.0,
    "secondary-question": 1.0,
    "a": 5.0,
    "b": 2.0,
    "a-b": 1.0,
    "a_latency": 3.0,
    "2fa": 1.0,
}
REASONS = {name: "not reported in this test run" for name, value in VALUES.items() if value is None}


def score(text: str, known: frozenset[str] | None = KNOWN) -> tuple[float | None, str | None]:
    return evaluate(parse_formula(text, known), VALUES, REASONS)


def rejection(text: str, known: frozenset[str] | None = KNOWN) -> FormulaError:
    with pytest.raises(FormulaError) as info:
        parse_formula(text, known)
    return info.value


def assert_caret(error: FormulaError) -> None:
    """Every rejection names the offending part with carets under it."""
    assert error.column is not None, error.render()
    lines = error.render().splitlines()
    assert lines[1] == "      " + error.formula
    assert lines[2] == "      " + " " * error.column + "^" * error.width


# --------------------------------------------------------------------------- the table

TABLE: list[tuple[str, float | str]] = [
    # arithmetic, precedence, unary minus
    ("1 + 2 * 3", 7.0),
    ("(1 + 2) * 3", 9.0),
    ("-passed + 10", 6.0),
    ("10 / 4", 2.5),
    # ** within the bounds
    ("2 ** 10", 1024.0),
    ("passed ** 0.5", 2.0),
    ("2 ** -2", 0.25),
    ("2 ** 2 ** 3", 256.0),  # right-associative: 2 ** 8
    ("-2 ** 2", -4.0),  # as in Python: -(2 ** 2)
    (f"2 ** {MAX_EXPONENT}", 2.0**MAX_EXPONENT),
    ("2 ** (passed * 25)", 2.0**100),
    # comparisons give 1.0 / 0.0; chains as in Python
    ("passed > 3", 1.0),
    ("passed >= 5", 0.0),
    ("passed == 4", 1.0),
    ("passed != 4", 0.0),
    ("failed < passed <= total", 1.0),
    ("(passed < 3) * 10 + 1", 1.0),
    # conditionals
    ("100 if success_pct >= 80 else 0", 100.0),
    ("100 if success_pct > 80 else 0", 0.0),
    ("1 if failed else 2 if passed else 3", 1.0),
    ("success_pct / total_cost if total_cost > 0 else 0", 4000.0),
    # functions
    ("min(passed, failed)", 1.0),
    ("max(passed, failed, total)", 5.0),
    ("abs(failed - passed)", 3.0),
    ("round(2.5)", 2.0),  # banker's rounding, as Python
    ("round(avg_cost * 1000, 1)", 4.0),
    ("sqrt(passed)", 2.0),
    ("log(1)", 0.0),
    ("log(8, 2)", 3.0),
    ("exp(0)", 1.0),
    ("clamp(success_pct, 0, 50)", 50.0),
    ("clamp(-3, 0, 1)", 0.0),
    ("max(min(passed, 3), 1) + sqrt(abs(-9))", 6.0),
    # names
    ("critical-math * 3", 3.0),
    ("[critical-math] * 3", 3.0),
    ("[success_pct] / 8", 10.0),
    ("[ a-b ] + 1", 2.0),
    ("[a-b] - [a] - b", -6.0),
    ("a - b", 3.0),
    ("critical-math_latency * 2", 3.0),
    ("2fa + [2fa]", 2.0),
    ("passed-failed", 3.0),  # no eval passed-failed: a subtraction
    ("a_latency-1e-3*1000", 2.0),  # a number with a hyphen in its exponent
    ("critical-math - 2.5", -1.5),
    # evaluation problems: None and a reason
    ("sqrt(-1)", "sqrt of the negative number -1"),
    ("log(0)", "log of 0, which is not positive"),
    ("log(passed - 4)", "log of 0, which is not positive"),
    ("log(passed, 1)", "log with base 1"),
    ("clamp(1, 3, 2)", "clamp() with lower bound 3 above upper bound 2"),
    ("round(1.5, 0.5)", "round() needs a whole number of digits"),
    ("exp(1000)", "overflow in 'exp(1000)'"),
    ("2 ** (passed * 26)", f"the exponent 104 is beyond ±{MAX_EXPONENT}"),
    ("1e300 ** 2", "overflow"),
    ("(-8) ** (1 / 3)", "(-8) ** 0.333333 has no real value"),
    ("(passed - 4) ** -1", "(0) ** -1 has no real value"),
    ("passed / (total - passed - 1)", "division by zero in 'passed / (total - passed - 1)'"),
    ("min(passed, critical-math_cost)", "no value for critical-math_cost: not reported in this test run"),
]

ERRORS: list[tuple[str, str]] = [
    ("9**9**9", "the exponent 9**9 is out of range (it is 3.8742e+08)"),
    (
        "passed ** 101",
        f"the exponent 101 is out of range (it is 101); exponents are limited to ±{MAX_EXPONENT}",
    ),
    ("passed ** -(10 * 11)", "the exponent -(10 * 11) is out of range (it is -110)"),
    ("passed / 0", "division by the literal zero"),
    ("sqr(passed)", "unknown function 'sqr' (did you mean 'sqrt'?)"),
    ("mean(passed, failed)", "unknown function 'mean'; the functions are min, max, abs"),
    ("min(passed)", "min() got 1 argument(s); write min(a, b, ...)"),
    ("clamp(passed, 1)", "clamp() got 2 argument(s); write clamp(x, lo, hi)"),
    ("round(passed, ndigits=2)", "keyword arguments are not allowed: round(x) or round(x, ndigits)"),
    ("max(*passed)", "*args is not allowed in max()"),
    ("passed and failed", "and/or is not allowed (use comparisons in a conditional"),
    ("passed or failed", "and/or is not allowed"),
    ("not passed", "the operator 'not' is not allowed"),
    ("passed % 2", "the operator '%' is not allowed"),
    ("passed in failed", "the operator 'in' is not allowed"),
    ("passed(2)", "'passed' is a variable and cannot be called"),
    ("[passed](2)", "only the functions min, max, abs, round, sqrt, log, exp, clamp can be called"),
    ("sqrt", "unknown variable 'sqrt'; sqrt is a function: sqrt(x)"),
    ("passed[0]", "subscripting is not allowed (square brackets around a variable name"),
    ("[passed, failed]", "a list is not allowed (square brackets hold one variable name"),
    ("[bananas]", "unknown variable 'bananas'"),
    ("[critical-mat] * 2", "unknown variable 'critical-mat' (did you mean 'critical-math'?)"),
    ("critical-mat * 2", "unknown variable 'critical-mat' (did you mean 'critical-math'?)"),
    ("'text'", "the literal 'text' is not allowed"),
    ("passed * 1e400", "the number 1e400 is beyond the largest float (about 1.8e308)"),
    ("x if passed else 1", "unknown variable 'x'"),
]


@pytest.mark.parametrize(("formula", "expected"), TABLE)
def test_formula_table(formula: str, expected: float | str) -> None:
    value, error = score(formula)
    if isinstance(expected, float):
        assert error is None
        assert value == pytest.approx(expected)
    else:
        assert value is None
        assert error is not None
        assert expected in error


@pytest.mark.parametrize(("formula", "message"), ERRORS)
def test_rejected_at_parse_with_a_caret(formula: str, message: str) -> None:
    error = rejection(formula)
    assert message in error.reason
    assert_caret(error)


def test_the_table_is_large() -> None:
    assert len(TABLE) + len(ERRORS) >= 40


def test_an_exponent_with_a_variable_is_checked_when_evaluated() -> None:
    formula = parse_formula("2 ** x", None)
    assert evaluate(formula, {"x": 100.0}, {}) == (2.0**100, None)
    value, error = evaluate(formula, {"x": 1e9}, {})
    assert value is None
    assert error == f"the exponent 1e+09 is beyond ±{MAX_EXPONENT} in '2 ** x'"
    # a huge base overflows quickly instead of building a huge integer
    value, error = evaluate(parse_formula("(10 ** 100) ** 100 ** 1", None), {}, {})
    assert (value, error) == (None, "overflow in '(10 ** 100) ** 100 ** 1'")
    huge = parse_formula("((9 ** 99) ** 99) ** 99", None)
    assert evaluate(huge, {}, {})[0] is None
    assert best_time(lambda: evaluate(huge, {}, {})) < 0.05


def test_an_unused_branch_does_not_fail() -> None:
    formula = parse_formula("success_pct / total_cost if total_cost > 0 else 0", None)
    assert evaluate(formula, {"success_pct": 80.0, "total_cost": 0.0}, {}) == (0.0, None)
    # the same with a branch long enough to be evaluated ahead of its turn
    long_sum = " + ".join(["x"] * 100)
    formula = parse_formula(f"0 if x == 0 else ({long_sum}) / x", None)
    assert evaluate(formula, {"x": 0.0}, {}) == (0.0, None)
    assert evaluate(formula, {"x": 2.0}, {}) == (100.0, None)
    formula = parse_formula(f"{long_sum} / x", None)
    value, error = evaluate(formula, {"x": 0.0}, {})
    assert value is None
    assert error is not None
    assert error.startswith("division by zero in")


# --------------------------------------------------------------------------- hyphenated names


def test_a_known_hyphenated_run_is_one_name() -> None:
    formula = parse_formula("critical-math * 3", KNOWN)
    assert formula.names == {"critical-math"}


def test_spaces_make_a_subtraction() -> None:
    assert parse_formula("a - b", KNOWN).names == {"a", "b"}
    assert parse_formula("a -b", KNOWN).names == {"a", "b"}


def test_a_spelling_with_two_readings_is_rejected_showing_both() -> None:
    error = rejection("a-b * 2")
    assert error.reason == (
        "'a-b' is ambiguous: it can be read as the variable 'a-b' (write [a-b]) "
        "or as 'a' minus 'b' (write a - b)"
    )
    assert error.column == 0
    assert_caret(error)
    # both spellings the message offers are accepted, with the meaning it says
    assert score("[a-b] * 2") == (2.0, None)
    assert score("a - b * 2") == (1.0, None)


def test_a_bracketed_name_followed_by_more_of_a_name_says_where_the_bracket_goes() -> None:
    """``[a-b]_cost`` named the placeholder the brackets became (``_v0_cost``) in its error."""
    error = rejection("2 * [a-b]_cost")
    assert (
        error.reason
        == "'[a-b]' is followed by '_cost': the brackets hold a whole variable name, write [a-b_cost]"
    )
    assert (error.column, error.width) == (4, len("[a-b]_cost"))
    assert_caret(error)
    assert score("[a-b]-a") == score("[a-b] - a")  # a minus after the brackets is still a minus


def test_a_longer_spelling_with_two_readings() -> None:
    error = rejection("1 + a-b-a_latency")
    assert error.column == 4
    assert "'a-b' minus 'a_latency' (write [a-b] - a_latency)" in error.reason
    assert "'a' minus 'b' minus 'a_latency' (write a - b - a_latency)" in error.reason


def test_a_subtraction_without_spaces_of_a_hyphenated_name_is_rejected() -> None:
    error = rejection("critical-math-2")
    assert error.reason == (
        "'critical-math-2' is ambiguous: 'critical-math' is a variable, but 'critical-math-2' is not; "
        "put spaces around a '-' that means minus (e.g. 'critical-math - 2')"
    )
    assert score("critical-math - 2") == (-1.0, None)


HYPHEN_EDGES = frozenset({"a--b", "-x", "a-", "a", "b", "x"})


@pytest.mark.parametrize(
    ("formula", "run", "column", "readings"),
    [
        (
            "a--b * 100",
            "a--b",
            0,
            "the variable 'a--b' (write [a--b]) or as 'a-' minus 'b' (write [a-] - b) "
            "or as 'a' minus negative 'b' (write a - -(b))",
        ),
        ("-x * 100", "-x", 0, "the variable '-x' (write [-x]) or as negative 'x' (write -(x))"),
        ("1 - -x", "-x", 4, "the variable '-x' (write [-x]) or as negative 'x' (write -(x))"),
        ("a- b", "a-", 0, "the variable 'a-' (write [a-]) or as 'a' minus what follows (write a - …)"),
    ],
)
def test_names_with_leading_trailing_or_doubled_hyphens_read_two_ways_are_rejected(
    formula: str, run: str, column: int, readings: str
) -> None:
    error = rejection(formula, HYPHEN_EDGES)
    assert error.reason == f"{run!r} is ambiguous: it can be read as {readings}"
    assert error.column == column
    assert_caret(error)


def test_names_with_leading_trailing_or_doubled_hyphens_are_read_as_written() -> None:
    values = {"a--b": 0.0, "-x": 2.0, "a-": 3.0, "a": 1.0, "b": 1.0, "x": 5.0}

    def value(text: str, known: frozenset[str]) -> float | None:
        return evaluate(parse_formula(text, known), values, {})[0]

    assert value("a--b * 100", frozenset({"a--b"})) == 0.0  # not `unknown variable 'b'`
    assert value("-x * 100", frozenset({"-x"})) == 200.0
    assert value("a- * 2", frozenset({"a-"})) == 6.0  # not a bare syntax error
    assert value("a- * 2", HYPHEN_EDGES) == 6.0  # `a` minus `* 2` is no reading
    # the spellings the messages offer mean what they say
    assert value("[a--b] * 100 + a - -(b) + [-x] + -(x)", HYPHEN_EDGES) == -1.0
    assert value("a - b", HYPHEN_EDGES) == 0.0 and value("-1 + 2*-x", frozenset({"x"})) == -11.0


def test_an_eval_named_like_a_number_needs_brackets() -> None:
    known = KNOWN | {"2"}
    error = rejection("passed * 2", known)
    assert "the variable '2' (write [2]) or as the number 2 (write 2.0)" in error.reason
    assert error.column == 9
    assert parse_formula("passed * 2.0", known).names == {"passed"}
    assert parse_formula("passed * [2]", known).names == {"passed", "2"}


def test_an_eval_named_if_needs_brackets() -> None:
    known = KNOWN | {"if"}
    error = rejection("passed if failed else 0", known)
    assert "write [if] for the variable" in error.reason
    assert error.column == 7
    assert parse_formula("[if] + 1", known).names == {"if"}


def test_brackets_work_for_any_name_and_without_known_names() -> None:
    for text in ("[success_pct]", "[critical-math]", "[2fa]", "[ a-b ]"):
        formula = parse_formula(text, None)
        assert len(formula.names) == 1
    assert parse_formula("[critical-math] + critical-math", None).names == {
        "critical-math",
        "critical",
        "math",
    }


def test_brackets_after_a_value_are_a_subscript() -> None:
    error = rejection("passed [failed]")
    assert "subscripting is not allowed" in error.reason
    assert error.column == 0


# --------------------------------------------------------------------------- the seed's examples


def test_seed_example_1_cost_efficiency() -> None:
    # 80 / 0.02 = 4000
    assert score("success_pct / total_cost") == (pytest.approx(4000.0), None)


def test_seed_example_2_weighted_hyphenated_evals() -> None:
    formula = "(critical-math * 3 + important-translation * 2 + secondary-question) / total_cost"
    assert parse_formula(formula, KNOWN).names == {
        "critical-math",
        "important-translation",
        "secondary-question",
        "total_cost",
    }
    # (1*3 + 0*2 + 1) / 0.02 = 4 / 0.02 = 200
    assert score(formula) == (pytest.approx(200.0), None)
    assert breakdown(parse_formula(formula, KNOWN), VALUES) == "(1 * 3 + 0 * 2 + 1) / 0.02"


def test_seed_example_3_multi_factor() -> None:
    known = frozenset(run_variable_names()) | {
        v for name in ("accuracy-test", "speed-test") for v in eval_variable_names(name)
    }
    formula = parse_formula(
        "(accuracy-test * 0.6 + speed-test * 0.4) * success_pct / (avg_latency * total_cost)", known
    )
    values: dict[str, float | None] = {
        "accuracy-test": 1.0,
        "speed-test": 0.0,
        "success_pct": 50.0,
        "avg_latency": 2.0,
        "total_cost": 0.01,
    }
    # (1*0.6 + 0*0.4) * 50 / (2 * 0.01) = 30 / 0.02 = 1500
    assert evaluate(formula, values, {}) == (pytest.approx(1500.0), None)


def test_seed_success_weighted_cost_penalised() -> None:
    # 80 * 0.7 - (0.02 * 100) = 56 - 2 = 54
    assert score("success_pct * 0.7 - (total_cost * 100)") == (pytest.approx(54.0), None)


# --------------------------------------------------------------------------- canonical text

CANONICAL_CASES = [text for text, expected in TABLE if isinstance(expected, float)] + [
    "(critical-math * 3 + important-translation * 2 + secondary-question) / total_cost",
    "[a-b] - a - b",
    "2fa * 10",
    "price_performance",
    "success_pct",
]


@pytest.mark.parametrize("text", CANONICAL_CASES)
def test_canonical_reads_the_same_without_known_names(text: str) -> None:
    formula = parse_formula(text, KNOWN)
    again = parse_formula(formula.canonical, None)
    assert again.names == formula.names
    assert evaluate(again, VALUES, REASONS) == evaluate(formula, VALUES, REASONS)
    assert again.canonical == formula.canonical  # a fixed point


def test_canonical_brackets_names_python_cannot_read() -> None:
    formula = parse_formula("(critical-math * 3 + secondary-question) / total_cost + 2fa", KNOWN)
    assert formula.canonical == "([critical-math] * 3 + [secondary-question]) / total_cost + [2fa]"
    assert formula.text == "(critical-math * 3 + secondary-question) / total_cost + 2fa"


def test_canonical_of_a_variable_named_like_a_preset() -> None:
    known = KNOWN | {"price_performance"}
    formula = parse_formula("[price_performance]", known)
    assert formula.preset is None
    assert parse_formula(formula.canonical, None).preset is None


# --------------------------------------------------------------------------- presets


def test_price_performance_preset() -> None:
    assert BUILTIN_PRESETS["price_performance"] == "success_pct / (total_cost * 1000 + total_latency * 0.1)"
    formula = parse_formula("price_performance", KNOWN)
    assert formula.preset == "price_performance"
    assert formula.text == "price_performance"
    assert formula.names == {"success_pct", "total_cost", "total_latency"}
    # 80 / (0.02*1000 + 10*0.1) = 80 / 21
    assert evaluate(formula, VALUES, REASONS) == (pytest.approx(80 / 21), None)
    assert formula.canonical == BUILTIN_PRESETS["price_performance"]


def test_success_pct_is_the_default_preset() -> None:
    formula = parse_formula("success_pct", KNOWN)
    assert formula.preset == "success_pct"
    assert evaluate(formula, VALUES, REASONS) == (80.0, None)


def test_a_preset_is_only_the_whole_formula() -> None:
    error = rejection("price_performance * 2")
    assert "unknown variable 'price_performance'" in error.reason


def test_a_preset_error_names_the_preset() -> None:
    value, error = evaluate(
        parse_formula("price_performance", None), VALUES | {"total_cost": 0.0, "total_latency": 0.0}, {}
    )
    assert value is None
    assert error is not None
    assert error.startswith("division by zero in 'price_performance = success_pct / (total_cost")


def test_a_variable_named_like_a_preset_is_ambiguous() -> None:
    error = rejection("price_performance", KNOWN | {"price_performance"})
    assert "write [price_performance] for the variable" in error.reason


def test_register_preset() -> None:
    presets = builtin_presets()
    presets.register("pass_ratio_test", "passed / total")
    formula = parse_formula("pass_ratio_test", KNOWN, presets=presets)
    assert formula.preset == "pass_ratio_test"
    assert evaluate(formula, VALUES, REASONS) == (0.8, None)
    with pytest.raises(ValueError, match="already registered"):
        presets.register("pass_ratio_test", "passed")
    with pytest.raises(FormulaError):
        presets.register("broken_test", "passed +")
    with pytest.raises(ValueError, match="not an identifier"):
        presets.register("not-an-identifier", "passed")
    with pytest.raises(ValueError, match="not its name"):
        presets.register("alias_test", "price_performance")
    assert "broken_test" not in presets
    assert "pass_ratio_test" not in builtin_presets()  # registries do not share state
    with pytest.raises(FormulaError, match="unknown variable 'pass_ratio_test'"):
        parse_formula("pass_ratio_test", KNOWN)  # the built-ins alone do not know it


# --------------------------------------------------------------------------- limits


def test_length_limit() -> None:
    ok = " + ".join(["passed"] * 111) + " + 1"  # exactly 1000 characters
    assert len(ok) == MAX_LENGTH
    assert score(ok) == (445.0, None)
    error = rejection(ok + "0")
    assert f"longer than {MAX_LENGTH} characters" in error.reason
    assert_caret(error)


def test_nesting_counts_parentheses_calls_unary_and_conditionals() -> None:
    inner = MAX_DEPTH - 1
    assert score("(" * inner + "1" + ")" * inner) == (1.0, None)
    assert score("abs(" * inner + "1" + ")" * inner) == (1.0, None)
    for text, column in [
        ("(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH, MAX_DEPTH - 1),
        ("abs(" * MAX_DEPTH + "1" + ")" * MAX_DEPTH, 4 * (MAX_DEPTH - 1) + 3),
        ("-" * MAX_DEPTH + "1", MAX_DEPTH),
        ("1 if x else " * MAX_DEPTH + "1", None),
        ("x ** " * MAX_DEPTH + "1", None),
    ]:
        error = rejection(text, None)
        assert error.reason == f"the formula nests deeper than {MAX_DEPTH} levels"
        assert_caret(error)
        if column is not None:
            assert error.column == column


def _stack_depth() -> int:
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1  # type: ignore[assignment]
    return depth


def test_a_flat_chain_is_not_nesting_and_evaluates_without_deep_recursion() -> None:
    longest = "+".join(["x"] * ((MAX_LENGTH + 1) // 2))  # 500 terms, 999 characters
    for text in ("+".join(["x"] * 300), longest, "*".join(["x"] * 300), "-".join(["x"] * 300)):
        formula = parse_formula(text, None)

        def deep(levels: int, formula: Formula = formula) -> tuple[float | None, str | None]:
            return deep(levels - 1) if levels else evaluate(formula, {"x": 1.0}, {})

        # leave only a little of the stack to the evaluator
        value, error = deep(sys.getrecursionlimit() - _stack_depth() - 250)
        assert error is None
        assert value is not None


def test_literal_zero_divisor_and_exponent_limits_have_their_own_messages() -> None:
    assert rejection("passed / -0.0").reason == "division by the literal zero"
    assert rejection("passed ** 1e3").reason.startswith("the exponent 1e3 is out of range")


# --------------------------------------------------------------------------- attacks

ATTACKS = [
    ("__import__('os').system('id')", "only the functions"),
    ("().__class__", "attribute access is not allowed"),
    ("(1).real", "attribute access is not allowed"),
    ("'a'*10**9", "the literal 'a' is not allowed"),
    ("9**9**9", "the exponent 9**9 is out of range"),
    (" + ".join(["1"] * 5000), "longer than 1000 characters"),
    ("lambda: 1", "lambda is not allowed"),
    ("[x for x in y]", "a list comprehension is not allowed"),
    ("success_pct.real", "attribute access is not allowed"),
    ("critical-math.__class__", "attribute access is not allowed"),
    ("[critical-math].real", "attribute access is not allowed"),
    ("max.__globals__", "attribute access is not allowed"),
    ("(lambda: 1)()", "only the functions"),
    ("open('/etc/passwd')", "unknown function 'open'"),
    ("exec('1')", "unknown function 'exec'"),
    ("{}", "Dict is not allowed"),
    ("f'{passed}'", "an f-string is not allowed"),
    ("(x := 1)", "NamedExpr is not allowed"),
    ("passed; __import__('os')", "syntax error"),
]


# Some attacks (huge powers, deep nesting) would run for minutes if evaluated: the timeout only guards
# against that hang.
@pytest.mark.timeout(60)
@pytest.mark.parametrize(("formula", "message"), ATTACKS)
def test_attacks_are_rejected_at_parse_and_nothing_runs(
    formula: str, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def forbidden(*args: object) -> None:
        raise AssertionError("executed")

    monkeypatch.setattr(os, "system", forbidden)
    with pytest.raises(FormulaError) as info:
        parse_formula(formula, KNOWN)
    assert message in info.value.reason
    # a hand-made Formula (never checked) still cannot run anything
    value, error = evaluate(Formula(formula, frozenset()), {}, {})
    assert value is None
    assert error


def test_evaluate_refuses_a_hand_made_formula_outside_the_language() -> None:
    value, error = evaluate(Formula("(1).real", frozenset()), {}, {})
    assert (value, error) == (None, "Attribute is not allowed in '(1).real'")


# --------------------------------------------------------------------------- breakdown


def test_breakdown_with_functions_brackets_and_conditionals() -> None:
    formula = parse_formula("sqrt([a-b] * 4) + max(a, -b) if critical-math > 0 else min(a, b)", KNOWN)
    assert breakdown(formula, VALUES) == "sqrt(1 * 4) + max(5, -2) if 1 > 0 else min(5, 2)"
    formula = parse_formula("price_performance", KNOWN)
    assert breakdown(formula, VALUES) == "80 / (0.02 * 1000 + 10 * 0.1)"
    assert breakdown(parse_formula("x ** 2", None), {"x": -3.0}) == "(-3) ** 2"
    assert breakdown(parse_formula("x + y", None), {"x": 1.0}) == "1 + ?"


# --------------------------------------------------------------------------- property

NAMES = (
    "success_pct",
    "passed",
    "failed",
    "critical-math",
    "[critical-math]",
    "[a-b]",
    "a",
    "2fa",
    "total_cost",
)
ATOMS = st.one_of(
    st.sampled_from(["0", "1", "2.5", "1e308", "1e-3", "-0", "100"]),
    st.integers(min_value=0, max_value=10**6).map(str),
    st.sampled_from(NAMES),
)
BINARY = [" + ", " - ", " * ", " / ", "+", "*", " < ", " <= ", " > ", " >= ", " == ", " != "]


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    small = st.integers(min_value=-4, max_value=4).map(str)
    return st.one_of(
        st.tuples(inner, st.sampled_from(BINARY), inner).map("".join),
        st.tuples(inner, small).map(lambda t: f"{t[0]} ** {t[1]}"),
        st.tuples(inner, inner).map(lambda t: f"({t[0]}) ** ({t[1]})"),
        inner.map(lambda s: f"({s})"),
        inner.map(lambda s: f"-{s}"),
        st.tuples(inner, inner, inner).map(lambda t: f"{t[0]} if {t[1]} else {t[2]}"),
        st.tuples(st.sampled_from(["abs", "sqrt", "exp", "round", "log"]), inner).map(
            lambda t: f"{t[0]}({t[1]})"
        ),
        st.tuples(st.sampled_from(["min", "max", "log", "round"]), inner, inner).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"
        ),
        st.tuples(inner, inner, inner).map(lambda t: f"clamp({t[0]}, {t[1]}, {t[2]})"),
    )


FORMULAS = st.recursive(ATOMS, _extend, max_leaves=30)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FORMULAS)
def test_random_formulas_parse_or_fail_cleanly_and_evaluate_quickly(text: str) -> None:
    try:
        formula = parse_formula(text, KNOWN)
    except FormulaError as exc:
        assert exc.reason
        return
    value, error = evaluate(formula, VALUES, REASONS)
    assert best_time(lambda: evaluate(formula, VALUES, REASONS)) < 0.05
    if value is None:
        assert error
    else:
        assert error is None
        assert math.isfinite(value)
    again = parse_formula(formula.canonical, None)
    assert again.names == formula.names
    again_value, again_error = evaluate(again, VALUES, REASONS)
    assert again_value == value
    assert (again_error is None) == (error is None)
    assert breakdown(formula, VALUES)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet="ab2f-[] ()*+/0123.e_i,'\"lsqrtmx<=>\n", max_size=40), st.booleans())
def test_random_text_fails_only_with_formula_error(text: str, allow_unknown: bool) -> None:
    """Arbitrary text never raises anything but FormulaError; what is accepted has a canonical text."""
    try:
        formula = parse_formula(text, KNOWN, allow_unknown=allow_unknown)
    except FormulaError as exc:
        assert exc.reason
        return
    value, error = evaluate(formula, VALUES, REASONS)
    assert (value is None) != (error is None)
    assert parse_formula(formula.canonical, None).names == formula.names
    breakdown(formula, VALUES)
