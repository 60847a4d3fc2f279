"""Unit tests for pytest_vibeeval.scoring.formula: parsing, validation with caret positions, evaluation."""

from __future__ import annotations

import math

import pytest
from helpers import best_time
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_vibeeval.scoring.formula import (
    MAX_DEPTH,
    MAX_LENGTH,
    Formula,
    FormulaError,
    evaluate,
    parse_formula,
)

# One run's variables, as compute_variables would give them.
VALUES: dict[str, float | None] = {
    "success_pct": 80.0,
    "passed": 4.0,
    "failed": 0.0,
    "total": 4.0,
    "avg_latency": 2.0,
    "max_latency": 2.5,
    "avg_cost": 0.005,
    "total_cost": None,
    "critical-eval": 1.0,
    "secondary-eval": 0.0,
    "critical-eval_latency": 1.5,
    "critical-eval_cost": None,
}
REASONS = {
    "total_cost": "no eval reported cost",
    "critical-eval_cost": "eval 'critical-eval' reported no cost",
}
KNOWN = frozenset(VALUES)


def score(text: str) -> tuple[float | None, str | None]:
    return evaluate(parse_formula(text, KNOWN), VALUES, REASONS)


def caret_column(error: FormulaError) -> int:
    """Where the rendered carets start, as a 0-based column under the formula (they underline
    ``error.width`` characters: a whole name, a whole divisor)."""
    lines = error.render().splitlines()
    assert len(lines) == 3, lines
    _reason, formula, caret = lines
    assert formula == "      " + error.formula
    assert caret.strip() == "^" * error.width
    return caret.index("^") - len("      ")


BIG_INT = "9" * 400


@pytest.mark.parametrize(
    ("formula", "expected"),
    [
        ("success_pct", 80.0),
        ("7", 7.0),
        ("success_pct / avg_cost", 16000.0),
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("10 - 4 - 3", 3.0),  # left-associative
        ("2 * 3 / 4", 1.5),
        ("100 / 8 / 5", 2.5),
        ("1 + 2 * 3 - 4 / 2", 5.0),
        ("-success_pct", -80.0),
        ("--2", 2.0),
        ("+passed", 4.0),
        ("-(1 + 2) * -2", 6.0),
        ("2 * -3", -6.0),
        ("success_pct * 0.7 - (avg_cost * 100)", 55.5),
        ("(critical-eval * 2 + secondary-eval) / avg_latency", 1.0),  # hyphenated eval names
        ("critical-eval - secondary-eval", 1.0),
        ("critical-eval_latency * 2", 3.0),
        ("passed-total", 0.0),  # no eval is called passed-total: subtraction
        ("1e-3 * 1000", 1.0),
        ("1.5e2", 150.0),
        (".5 + .5", 1.0),
        ("1_000 * 2", 2000.0),
        ("  success_pct  ", 80.0),
        ("(success_pct\n + passed)", 84.0),
        ("success_pct +\n passed", 84.0),  # a YAML block scalar's newline is a space
        ("max_latency - avg_latency", 0.5),
        (f"{BIG_INT} - {BIG_INT}", 0.0),  # big integers are fine while the result fits a float
        ("passed ** 2", 16.0),
        ("(passed) ** 2 > 15", 1.0),
        ("passed if failed else total", 4.0),
        ("abs(-passed)", 4.0),
    ],
)
def test_valid_formulas(formula: str, expected: float) -> None:
    value, error = score(formula)
    assert error is None
    assert value == pytest.approx(expected)
    assert isinstance(value, float)


@pytest.mark.parametrize(
    ("formula", "message"),
    [
        ("success_pct / failed", "division by zero in 'success_pct / failed' with failed=0, success_pct=80"),
        (
            "passed / (total - passed)",
            "division by zero in 'passed / (total - passed)' with passed=4, total=4",
        ),
        ("1 / (1 - passed / total)", "division by zero in '1 / (1 - passed / total)'"),
        ("success_pct / total_cost", "no value for total_cost: no eval reported cost"),
        (
            "total_cost + critical-eval_cost",
            "no value for critical-eval_cost: eval 'critical-eval' reported no cost; "
            "total_cost: no eval reported cost",
        ),
        ("1e308 * 10", "1e+308 * 10 is inf (not a finite number) in '1e308 * 10'"),
        ("-1e308 * 10", "-1e+308 * 10 is -inf (not a finite number) in '-1e308 * 10'"),
        ("(1e308 * 10 - 1e308 * 10) > 0", "1e+308 * 10 is inf (not a finite number) in '(1e308"),
        ("max(0, 1e308 + 1e308) == 0", "1e+308 + 1e+308 is inf (not a finite number) in 'max("),
        (f"{BIG_INT} * 10", "overflow in '999"),
        (f"{BIG_INT} / 3", "overflow in '999"),
    ],
)
def test_evaluation_problems_give_none_and_a_reason(formula: str, message: str) -> None:
    value, error = score(formula)
    assert value is None
    assert error is not None
    assert error.startswith(message)


@pytest.mark.parametrize(
    ("formula", "message", "column"),
    [
        ("", "the formula is empty", None),
        ("   \n ", "the formula is empty", None),
        ("1+" * 600 + "1", f"1201 characters long, longer than {MAX_LENGTH} characters", 51),
        ("-" * 40 + "1", f"the formula nests deeper than {MAX_DEPTH} levels", MAX_DEPTH),
        ("-(" * 40 + "1" + ")" * 40, f"the formula nests deeper than {MAX_DEPTH} levels", 63),  # 32nd (
        ("tota_cost", "unknown variable 'tota_cost' (did you mean 'total_cost'?)", 0),
        ("success_pct / avg_cots", "unknown variable 'avg_cots' (did you mean 'avg_cost'?)", 14),
        ("success_pct / bananas", "unknown variable 'bananas'", 14),
        ("2 * critical-evl", "unknown variable 'critical-evl' (did you mean 'critical-eval'?)", 4),
        ("success_pct-bananas", "unknown variable 'bananas'", 12),
        (
            "critical-eval-secondary-eval",
            "'critical-eval-secondary-eval' is ambiguous: 'critical-eval' is a variable",
            0,
        ),
        ("1 + critical-eval-2", "(e.g. 'critical-eval - 2')", 4),
        ("success_pct.real", "attribute access is not allowed; formulas use numbers, variables, + - * /", 0),
        ("__import__('os').system('id')", "only the functions min, max", 0),
        ("abs(passed, 2)", "abs() got 2 argument(s); write abs(x)", 0),
        ("success_pct[0]", "subscripting is not allowed", 0),
        ("'text'", "the literal 'text' is not allowed", 0),
        ('passed + "x"', 'the literal "x" is not allowed', 9),
        ("True + 1", "the literal True is not allowed", 0),
        ("1j * passed", "the literal 1j is not allowed", 0),
        ("lambda: 1", "lambda is not allowed", 0),
        ("[x for x in (1, 2)]", "a list comprehension is not allowed", 0),
        ("passed ** 200", "the exponent 200 is out of range", 10),
        ("(passed) ** -(2 * 60)", "the exponent -(2 * 60) is out of range (it is -120)", 12),
        ("passed // 2", "the operator '//' is not allowed", 7),
        ("passed % 2", "the operator '%' is not allowed", 7),
        ("passed in 2", "the operator 'in' is not allowed", 7),
        ("passed is failed", "the operator 'is' is not allowed", 7),
        ("passed and failed", "and/or is not allowed", 0),
        ("not passed", "the operator 'not' is not allowed", 0),
        ("1/0", "division by the literal zero", 2),
        ("passed / (0)", "division by the literal zero", 10),
        ("passed/-0.0", "division by the literal zero", 7),
        ("passed / 0e5", "division by the literal zero", 9),
        ("1 / (1 - 1)", "division by zero: the divisor '1 - 1' is always 0", 5),
        ("passed +", "syntax error", 8),
        ("passed passed", "syntax error", 7),
        ("(passed", "syntax error: '(' was never closed", 0),
        ("passed; import os", "syntax error", None),
        ("success_pct = 1", "syntax error", None),
        # worded and placed alike on every Python (3.13 says "'not' after an operator must be
        # parenthesized", "Invalid star expression"; 3.12 words f-string errors anew)
        ("passed + not failed", "the operator 'not' is not allowed", 9),
        ("(passed + not", "the operator 'not' is not allowed", 10),
        ("passed * (*)", "syntax error: invalid syntax", 11),
        ('f"{passed!}"', "an f-string is not allowed", 0),
        ('f"{passed:{1:{2}}}"', "an f-string is not allowed", 0),
        ('passed + f"x', "an f-string is not allowed", 9),
    ],
)
def test_invalid_formulas(formula: str, message: str, column: int | None) -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula(formula, KNOWN)
    error = info.value
    assert message in error.reason
    if column is not None:
        assert error.column == column
        assert caret_column(error) == column
    elif message in ("the formula is empty",):
        assert error.column is None
    assert str(error) == error.render()


def test_render_shows_a_caret_under_the_offending_column() -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula("success_pct / avg_cots", KNOWN)
    assert info.value.render() == (
        "unknown variable 'avg_cots' (did you mean 'avg_cost'?)\n"
        "      success_pct / avg_cots\n"
        "                    ^^^^^^^^"
    )
    with pytest.raises(FormulaError) as info:
        parse_formula("passed // 2", KNOWN)
    assert info.value.render().splitlines()[2] == "             ^"
    with pytest.raises(FormulaError) as info:
        parse_formula("passed / 0", KNOWN)
    assert info.value.render().splitlines()[2] == "               ^"


def test_render_without_a_column_has_no_caret() -> None:
    error = FormulaError("a + b", "nope")
    assert error.render() == "nope\n      a + b"


def test_caret_counts_characters_not_bytes() -> None:
    """ast offsets are UTF-8 bytes; a non-ASCII character before the error must not shift the caret."""
    known = {"é", "passed"}
    with pytest.raises(FormulaError) as info:
        parse_formula("é + bananas", known)
    assert info.value.column == 4
    with pytest.raises(FormulaError) as info:
        parse_formula("é + passed // 2", known)
    assert info.value.column == 11
    with pytest.raises(FormulaError) as info:
        parse_formula("é + é / 'ü'", known)
    assert info.value.column == 8
    assert caret_column(info.value) == 8


def test_caret_after_a_hyphenated_name_is_mapped_back() -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula("critical-eval + secondary-eval // 2", KNOWN)
    assert info.value.column == 31
    assert "secondary-eval // 2"[info.value.column - 16 :].startswith("//")


def test_over_long_formula_is_shortened_in_the_message() -> None:
    """The message shows the text around the limit, the caret under the first character beyond it."""
    text = "passed + " * 200
    with pytest.raises(FormulaError) as info:
        parse_formula(text, KNOWN)
    shown = info.value.formula
    assert shown.startswith("…")
    assert shown.endswith("…")
    assert len(shown) == 62
    assert caret_column(info.value) == 51
    assert shown[51] == text.strip()[MAX_LENGTH]
    # exactly the limit is accepted
    formula = "1" + " " * (MAX_LENGTH - 2) + "1"
    with pytest.raises(FormulaError, match="syntax error"):
        parse_formula(formula, KNOWN)
    assert parse_formula("1" + " " * (MAX_LENGTH - 1), KNOWN).text == "1"


def test_nesting_up_to_the_limit_is_accepted() -> None:
    ok = "-" * (MAX_DEPTH - 1) + "1"
    assert evaluate(parse_formula(ok, KNOWN), VALUES, REASONS) == (-1.0, None)
    with pytest.raises(FormulaError, match="nests deeper"):
        parse_formula("-" + ok, KNOWN)


def test_names_are_the_variables_used() -> None:
    formula = parse_formula("(critical-eval * 2 + secondary-eval) / avg_latency + 1", KNOWN)
    assert formula.names == {"critical-eval", "secondary-eval", "avg_latency"}
    assert formula.text == "(critical-eval * 2 + secondary-eval) / avg_latency + 1"
    assert parse_formula("1 + 2", KNOWN).names == frozenset()


def test_any_name_when_known_is_none() -> None:
    formula = parse_formula("whatever / other", None)
    assert formula.names == {"whatever", "other"}
    # knowing no eval names, a hyphen is subtraction
    assert parse_formula("a-b", None).names == {"a", "b"}
    assert evaluate(parse_formula("a-b", None), {"a": 3.0, "b": 1.0}, {}) == (2.0, None)
    with pytest.raises(FormulaError, match="unknown function 'f'"):
        parse_formula("f(x)", None)


def test_allow_unknown_reads_unknown_hyphenated_words_as_names() -> None:
    """At session end, an eval that did not run is unknown; its hyphenated name is still one name."""
    formula = parse_formula("critical-eval * 2 + x-1", {"x"}, allow_unknown=True)
    assert formula.names == {"critical-eval", "x"}
    value, error = evaluate(formula, {"x": 3.0}, {"critical-eval": "the eval did not run"})
    assert value is None
    assert error == "no value for critical-eval: the eval did not run"


def test_eval_names_that_are_not_python_identifiers() -> None:
    known = {"2fa", "2fa_latency", "None", "if"}
    formula = parse_formula("2fa * 10 + None + [if]", known)
    assert formula.names == {"2fa", "None", "if"}
    assert evaluate(formula, {"2fa": 1.0, "None": 2.0, "if": 3.0}, {}) == (15.0, None)
    assert evaluate(parse_formula("2fa_latency / 2", known), {"2fa_latency": 3.0}, {}) == (1.5, None)


def test_an_eval_name_that_is_also_a_subtraction_of_its_parts_must_be_bracketed() -> None:
    known = {"a", "b", "a-b"}
    with pytest.raises(FormulaError, match="ambiguous"):
        parse_formula("a-b", known)
    assert parse_formula("[a-b]", known).names == {"a-b"}
    assert parse_formula("a - b", known).names == {"a", "b"}
    values = {"a": 5.0, "b": 2.0, "a-b": 1.0}
    assert evaluate(parse_formula("[a-b]", known), values, {}) == (1.0, None)
    assert evaluate(parse_formula("a - b", known), values, {}) == (3.0, None)


def test_hyphenated_text_inside_a_string_is_reported_as_written() -> None:
    with pytest.raises(FormulaError) as info:
        parse_formula("'critical-eval'", KNOWN)
    assert info.value.reason.startswith("the literal 'critical-eval' is not allowed")


def test_missing_values_without_a_reason() -> None:
    formula = parse_formula("x + y", None)
    assert evaluate(formula, {"x": 1.0}, {}) == (None, "no value for y: no value in this run")


def test_evaluate_does_not_raise_for_a_hand_made_formula() -> None:
    """A Formula not made by parse_formula (no validation) still gives a reason, never an exception."""
    bad = Formula("open('x')", frozenset())
    value, error = evaluate(bad, {}, {})
    assert value is None
    assert error is not None
    assert error.startswith("cannot evaluate \"open('x')\": FunctionNotDefined")


@pytest.mark.parametrize(
    "text", ["x * 2", "x > 0", "x == x", "x != x", "1 if x else 2", "min(1, x)", "0 * x", "1 / x"]
)
@pytest.mark.parametrize(
    ("value", "shown"), [(math.nan, "nan (not a number)"), (math.inf, "inf (not a finite number)")]
)
def test_a_variable_that_is_not_a_finite_number_is_named(text: str, value: float, shown: str) -> None:
    """nan compares false with everything (and inf hides in 1 / x): never a silent 0 or 1."""
    formula = parse_formula(text, None)
    assert evaluate(formula, {"x": value}, {}) == (None, f"x is {shown} in {text!r}")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1e400 - 1e400 > 0", "inf - inf reads inf (not a finite number)"),
        ("1e400 > 0", "inf > 0 reads inf (not a finite number)"),
        ("min(1, 1e400 - 1e400)", "inf - inf reads inf (not a finite number)"),
    ],
)
def test_a_hand_made_formula_reading_inf_gives_a_reason(text: str, reason: str) -> None:
    """A Formula not made by parse_formula (which refuses 1e400) still never compares nan."""
    assert evaluate(Formula(text, frozenset()), {}, {}) == (None, f"{reason} in {text!r}")


def test_evaluate_returns_float_for_integer_results() -> None:
    value, error = evaluate(parse_formula("2 + 2", None), {}, {})
    assert (value, error) == (4.0, None)
    assert type(value) is float


# --------------------------------------------------------------------------- property: never raises

NAMES_WITH_VALUES = ("success_pct", "passed", "failed", "avg_cost", "total_cost", "critical-eval")
ATOMS = st.one_of(
    st.sampled_from(["0", "0.0", "1", "2.5", "1e308", "1e-308", "10", "-0"]),
    st.integers(min_value=0, max_value=10**6).map(str),
    st.sampled_from(NAMES_WITH_VALUES),
)


def _extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(inner, st.sampled_from([" + ", " - ", " * ", " / ", "+", "*", "/"]), inner).map("".join),
        inner.map(lambda s: f"({s})"),
        inner.map(lambda s: f"-{s}"),
        inner.map(lambda s: f"-({s})"),
    )


FORMULAS = st.recursive(ATOMS, _extend, max_leaves=40)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FORMULAS)
def test_random_formulas_never_raise_and_evaluate_quickly(text: str) -> None:
    try:
        formula = parse_formula(text, KNOWN)
    except FormulaError as exc:
        assert exc.reason  # rejected at parse time with a reason: fine
        return
    value, error = evaluate(formula, VALUES, REASONS)
    assert best_time(lambda: evaluate(formula, VALUES, REASONS)) < 0.05
    if value is None:
        assert error
    else:
        assert error is None
        assert math.isfinite(value)
    if "total_cost" in formula.names:
        assert value is None
        assert error is not None
        assert "total_cost: no eval reported cost" in error
