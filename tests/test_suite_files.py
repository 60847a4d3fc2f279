"""YAML files that are not collected: a folder of vibecheck ``*.yaml`` suites that collects nothing
says why and how to collect them; a broad ``vibe_patterns`` skips YAML files that are no suites."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import XDIST_MODES, run, write

from pytest_vibeeval.loading.suite_files import has_evals, looks_like_suite, suite_like_files

SUITE = """
metadata: {name: hello, model: m}
configurations:
  app: {python: "hello_app:answer"}
evals:
  - {name: hi, prompt: hi, checks: [{contains: hello}]}
"""
COMPOSE = """
services:
  web: {image: nginx}
"""


def make_tree(path: Path) -> None:
    write(path / "suites" / "hello_app.py", "def answer(prompt):\n    return 'hello'\n")
    write(path / "suites" / "hello.yaml", SUITE)
    write(path / "suites" / "strawberry.yml", SUITE.replace("name: hello", "name: strawberry"))
    write(path / "docker-compose.yaml", COMPOSE)
    write(path / "node_modules" / "pkg" / "suite.yaml", SUITE)  # never looked at


def test_what_looks_like_a_suite(tmp_path: Path) -> None:
    make_tree(tmp_path)
    assert looks_like_suite(tmp_path / "suites" / "hello.yaml")
    assert has_evals(tmp_path / "suites" / "hello.yaml")
    assert not has_evals(tmp_path / "docker-compose.yaml")
    found = suite_like_files([tmp_path], (".yaml", ".yml"), (".eval.yaml",))
    assert found == [tmp_path / "suites" / "hello.yaml", tmp_path / "suites" / "strawberry.yml"]


@XDIST_MODES
def test_a_run_that_collects_nothing_names_the_suites_it_missed(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_tree(pytester.path)
    result = run(pytester, *xdist)
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "hint: 2 YAML file(s) look like eval suites but were not collected: "
            "suites/hello.yaml, suites/strawberry.yml",
            "  suites are collected when named *.eval.yaml, when given as arguments "
            "(pytest suites/hello.yaml), or with an ini line vibe_patterns = *.yaml",
        ]
    )
    assert "docker-compose" not in result.stdout.str()


@XDIST_MODES
def test_a_broad_pattern_skips_yaml_files_that_are_no_suites(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_tree(pytester.path)
    pytester.makeini("[pytest]\nvibe_patterns = *.yaml\n    *.yml\n")
    result = run(pytester, *xdist, "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    assert "ERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*docker-compose.yaml matches vibe_patterns but has no top-level `evals:`: not a suite, not coll*"]
    )
