"""What a score formula's check reports before the run: an unknown hyphenated name as written, with
carets under all of it, and a division by a sub-expression that is always zero."""

from __future__ import annotations

import pytest

from pytest_vibeeval.scoring.formula import FormulaError, evaluate, parse_formula
from pytest_vibeeval.scoring.formula_eval import run_source
from pytest_vibeeval.scoring.variables import eval_variable_names, run_variable_names

KNOWN = frozenset(run_variable_names()) | {
    v for name in ("critical-math", "a", "b") for v in eval_variable_names(name)
}
VALUES: dict[str, float | None] = {"passed": 4.0, "total": 5.0, "a": 1.0, "b": 0.0, "critical-math": 1.0}


def rejection(text: str) -> FormulaError:
    with pytest.raises(FormulaError) as info:
        parse_formula(text, KNOWN)
    return info.value


def underlined(error: FormulaError) -> str:
    """The part of the formula the rendered carets are under."""
    _reason, formula, carets = error.render().splitlines()
    start, end = carets.index("^"), len(carets)
    assert carets[start:] == "^" * (end - start)
    return formula[start:end]


# --------------------------------------------------------------------------- unknown hyphenated names


@pytest.mark.parametrize(
    ("formula", "name", "hint"),
    [
        ("critical-math + nonexistent-eval", "nonexistent-eval", ""),
        ("success_pct + bogus-thing", "bogus-thing", ""),
        ("(bogus-thing-2 + 1) * 2", "bogus-thing-2", ""),
        ("critical-maths * 3", "critical-maths", " (did you mean 'critical-math'?)"),
        ("succes-pct / 2", "succes-pct", " (did you mean 'success_pct'?)"),
        (
            "passed + critical-math-latency",
            "critical-math-latency",
            " (did you mean 'critical-math_latency'?)",
        ),
    ],
)
def test_an_unknown_hyphenated_name_is_reported_as_written(formula: str, name: str, hint: str) -> None:
    error = rejection(formula)
    assert error.reason == f"unknown variable {name!r}{hint}"
    assert underlined(error) == name


def test_known_parts_keep_the_subtraction_rules() -> None:
    """Without spaces a run of known parts is a subtraction; with an unknown part beside a known
    one, Python's reading (a subtraction) names the unknown operand; spaces always subtract."""
    assert parse_formula("passed-total", KNOWN).names == {"passed", "total"}
    assert parse_formula("a - b", KNOWN).names == {"a", "b"}
    assert parse_formula("critical-math - 1", KNOWN).names == {"critical-math"}
    error = rejection("success_pct-bananas")
    assert error.reason == "unknown variable 'bananas'"
    assert underlined(error) == "bananas"
    error = rejection("nonexistent - eval")
    assert error.reason == "unknown variable 'eval'"  # spaced: two names, each reported on its own
    assert underlined(error) == "eval"


def test_an_unknown_name_after_a_number_is_read_by_python() -> None:
    """A run that starts with a digit is not one name (``2-bogus`` is 2 minus bogus)."""
    error = rejection("2-bogus")
    assert error.reason == "unknown variable 'bogus'"
    assert underlined(error) == "bogus"


def test_unknown_names_of_every_spelling_are_underlined_whole() -> None:
    assert underlined(rejection("passed / avg_cots")) == "avg_cots"
    assert underlined(rejection("1 + [bogus-x]")) == "[bogus-x]"
    assert underlined(rejection("1 + [nope]")) == "[nope]"


def test_an_unknown_hyphenated_name_of_an_eval_that_did_not_run_is_still_one_name() -> None:
    formula = parse_formula("critical-math + nonexistent-eval", KNOWN, allow_unknown=True)
    assert formula.names == {"critical-math", "nonexistent-eval"}


# --------------------------------------------------------------------------- constant divisors


@pytest.mark.parametrize(
    ("formula", "divisor"),
    [
        ("passed / (2 - 2)", "2 - 2"),
        ("passed / (1 - 1.0) + 1", "1 - 1.0"),
        ("passed / -(max(1, 2) - 2)", "-(max(1, 2) - 2)"),
        ("passed / abs(3 * 0)", "abs(3 * 0)"),
        ("passed / round(0.4)", "round(0.4)"),
        ("passed / (3 > 4)", "3 > 4"),
        ("passed / (1 if 0 > 1 else 0)", "1 if 0 > 1 else 0"),
        ("passed / (1e-200 * 1e-200)", "1e-200 * 1e-200"),  # 0.0 once computed
        ("passed / (1 / (2 - 2))", "2 - 2"),  # the inner division is the one by zero
        ("0 if passed > 0 else passed / (2 - 2)", "2 - 2"),  # like `/ 0`, even in a branch
    ],
)
def test_a_divisor_that_is_always_zero_is_refused(formula: str, divisor: str) -> None:
    error = rejection(formula)
    assert error.reason == (
        f"division by zero: the divisor {divisor!r} is always 0; "
        "divide by an expression that uses a variable, or leave the division out"
    )
    assert underlined(error) == divisor


def test_a_literal_zero_divisor_keeps_its_message() -> None:
    error = rejection("passed / -0.0")
    assert error.reason == "division by the literal zero"
    assert underlined(error) == "-0.0"


@pytest.mark.parametrize(
    ("formula", "reason"),
    [
        ("passed / (total - passed - 1)", "division by zero in 'passed / (total - passed - 1)'"),
        ("passed / sqrt(-1)", "sqrt of the negative number -1"),  # not a zero: found when evaluated
        ("passed / log(0)", "log of 0, which is not positive"),
    ],
)
def test_divisors_that_are_not_a_constant_zero_are_checked_when_evaluated(formula: str, reason: str) -> None:
    value, error = evaluate(parse_formula(formula, KNOWN), VALUES, {})
    assert value is None
    assert error is not None and reason in error


@pytest.mark.parametrize(
    "formula",
    [
        "passed / (2 - 1)",
        "passed / (3 > 2) + 2 ** (1 + 1)",
        "passed / max(0, 0.5) - abs(-1)",
        "a / (b + 1e-9)",
    ],
)
def test_constant_sub_expressions_evaluate_as_before(formula: str) -> None:
    """Folding is only a check: the value is the one the formula's own source gives."""
    parsed = parse_formula(formula, KNOWN)
    names = {parsed.python_name(name): VALUES[name] for name in parsed.names}
    assert evaluate(parsed, VALUES, {}) == run_source(parsed.source, names)
    assert evaluate(parsed, VALUES, {})[1] is None


def test_a_constant_exponent_is_computed_with_its_functions() -> None:
    """The same folding bounds an exponent: exp(10) is beyond the ±100 limit."""
    error = rejection("passed ** exp(10)")
    assert error.reason.startswith("the exponent exp(10) is out of range (it is 22026.5)")
    assert underlined(error) == "exp(10)"


def test_carets_never_run_past_the_formula() -> None:
    assert FormulaError("a + b", "nope", 4, 10).render().splitlines()[2] == "          ^"
    assert FormulaError("a + b", "nope", 2, 0).width == 1
