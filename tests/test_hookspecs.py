"""Plugins and conftest files add check types through the pytest_vibeeval_register_checks hook."""

from __future__ import annotations

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write

CONFTEST = """
from typing import Annotated

from pydantic import StringConstraints

from pytest_vibeeval import CheckType, Verdict


def _starts_with(prefix, response):
    ok = response.text.startswith(prefix)
    return Verdict(ok, f"response {'starts' if ok else 'does not start'} with {prefix!r}")


def pytest_vibeeval_register_checks(registry):
    registry.register(
        CheckType(
            "starts_with",
            Annotated[str, StringConstraints(min_length=1)],
            _starts_with,
            "the response starts with the text",
        )
    )
"""

SUITE = """
metadata: {name: custom, model: m}
evals:
  - {name: greets, prompt: hi, checks: [{starts_with: Hello}]}
  - {name: leaves, prompt: hi, checks: [{starts_with: Goodbye}]}
  - {name: either, prompt: hi, checks: [{or: [{starts_with: Goodbye}, {match: "*world*"}]}]}
configurations: {app: {python: "app:answer"}}
"""


@XDIST_MODES
def test_a_conftest_registers_a_check_type(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "conftest.py", CONFTEST)
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'Hello, world'\n")
    write(pytester.path / "custom.eval.yaml", SUITE)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(results), xdist=xdist, subprocess=bool(xdist))
    result.assert_outcomes(passed=2, failed=1)
    records = evals_by_nodeid(load_json(results))
    failed = records["custom.eval.yaml::leaves[app]"]
    assert failed["checks"][0] == {
        "type": "starts_with",
        "passed": False,
        "message": "response does not start with 'Goodbye'",
        "children": [],
        "score": None,  # a plain verdict: no 0-1 score
        "name": None,
        "judges": [],
        "error": False,
    }


def test_a_registered_check_validates_its_value_with_file_and_line(pytester: pytest.Pytester) -> None:
    write(pytester.path / "conftest.py", CONFTEST)
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'Hello'\n")
    write(pytester.path / "custom.eval.yaml", SUITE.replace("{starts_with: Hello}", '{starts_with: ""}'))
    result = run(pytester)
    result.stdout.fnmatch_lines(
        ["custom.eval.yaml:3: evals[0].checks[0].starts_with: `starts_with` must not be empty"]
    )


def test_registering_a_built_in_name_is_an_error(pytester: pytest.Pytester) -> None:
    write(pytester.path / "conftest.py", CONFTEST.replace('"starts_with",', '"match",'))
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'Hello'\n")
    write(pytester.path / "custom.eval.yaml", SUITE)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: pytest_vibeeval_register_checks: check type 'match' is already registered"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


RETURNS_A_LIST = """
from pytest_vibeeval import CheckType, Verdict


def pytest_vibeeval_register_checks(registry):
    return [CheckType("starts_with", str, lambda prefix, response: Verdict(True, "ok"), "starts with")]
"""


def test_a_register_hook_that_returns_its_entries_is_an_error(pytester: pytest.Pytester) -> None:
    """pluggy discards what a hook returns: returning the check types instead of registering them
    would leave the suite's checks unknown, with no word of why."""
    write(pytester.path / "conftest.py", RETURNS_A_LIST)
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'Hello'\n")
    write(pytester.path / "custom.eval.yaml", SUITE)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest_vibeeval_register_checks: an implementation returned [[]CheckType(*)],"
            " which is ignored: call registry.register(...) for each entry inside the hook, and return*"
        ]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


@XDIST_MODES
def test_a_conftest_met_during_collection_that_returns_entries_fails_its_folder(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A conftest.py below the start folders is registered during collection, where pluggy calls
    the historic hook for it: its folder is a collection error, without a traceback."""
    write(pytester.path / "suites" / "conftest.py", RETURNS_A_LIST)
    write(pytester.path / "suites" / "app.py", "def answer(prompt):\n    return 'Hello'\n")
    write(pytester.path / "suites" / "custom.eval.yaml", SUITE)
    result = run(pytester, xdist=xdist, subprocess=bool(xdist))
    assert result.ret in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED)  # xdist's: 1
    result.stdout.fnmatch_lines(
        ["*ERROR collecting suites*", "pytest_vibeeval_register_checks: an implementation returned *"]
    )
    assert "Traceback" not in result.stdout.str() and "plugin.py" not in result.stdout.str()
