"""Rendering errors about user input: data paths, and user text a terminal would not show as is."""

from __future__ import annotations

import pytest

from pytest_vibeeval.errors import InputError, Loc, Problem, escaped, format_loc


@pytest.mark.parametrize(
    ("loc", "shown"),
    [
        (("evals", 1, "checks", 0, "match"), "evals[1].checks[0].match"),
        (("configurations", "gpt-4.1 mini", "python"), "configurations.gpt-4.1 mini.python"),
        (("evals", 0, "שלום"), "evals[0].שלום"),  # printable, if right to left
        (("configurations", "safe\u202e.exe.sh", "python"), r"configurations['safe\u202e.exe.sh'].python"),
        (("configurations", "echo\nFAKE: 1"), r"configurations['echo\nFAKE: 1']"),
        (("a\u200bb",), r"['a\u200bb']"),
    ],
)
def test_format_loc_escapes_keys_a_terminal_would_not_show_as_is(loc: Loc, shown: str) -> None:
    assert format_loc(loc) == shown


def test_escaped_leaves_printable_text_alone() -> None:
    assert escaped("dir/שלום file.yaml") == "dir/שלום file.yaml"
    assert escaped("a\u202eb\u2066c\nd\te") == r"a\u202eb\u2066c\nd\te"


def test_a_problem_stays_on_one_line_whatever_its_key_and_path() -> None:
    problem = Problem("String should match pattern", line=3, loc=("configurations", "x\n1: y"))
    rendered = InputError("cases/\u202eevil\n/suite.eval.yaml", [problem]).render()
    assert (
        rendered
        == r"cases/\u202eevil\n/suite.eval.yaml:3: configurations['x\n1: y']: String should match pattern"
    )
