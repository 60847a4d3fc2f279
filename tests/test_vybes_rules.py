"""The unified runner's vybes rules, one record at a time (the numbers are the runner's own)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_vibeeval.results import EvalRecord, StepRecord
from pytest_vibeeval.scoring.vybes import GENERAL_RULE, TaskRule, task_rule, vybes_points


def step(phase: str, argv: list[str], exit_code: int | None = 0, duration: float = 1.0) -> StepRecord:
    return StepRecord(
        phase=phase,
        name=argv[-1],
        argv=argv,
        cwd=".",
        exit_code=exit_code,
        duration=duration,
        timed_out=False,
    )  # type: ignore[arg-type]


def record(
    name: str = "calc", outcome: str = "passed", steps: list[StepRecord] | None = None, **extra: Any
) -> EvalRecord:
    steps = [step("agent", ["agent"], duration=30.0)] if steps is None else steps
    return EvalRecord(name=name, named=True, nodeid=f"x::{name}[c]", outcome=outcome, steps=steps, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("base64-fix", TaskRule(1, 2)),
        ("regex-challenge", TaskRule(3, 6)),
        ("report-builder", TaskRule(4, 8)),
        ("form-capture", TaskRule(5, 10)),
        ("pagination", TaskRule(5, 10)),
        ("react-evaluation", TaskRule(5, 10)),
        ("my-Pagination-v2", TaskRule(5, 10)),  # contains the name, any case
        ("calc", GENERAL_RULE),
    ],
)
def test_without_a_vybes_block_the_defaults_go_by_name(name: str, rule: TaskRule) -> None:
    found = task_rule(record(name))
    assert (found.multiplier, found.time_limit_minutes) == (rule.multiplier, rule.time_limit_minutes)
    assert found.description and found.category
    assert (GENERAL_RULE.multiplier, GENERAL_RULE.time_limit_minutes) == (3, 6)


def test_a_vybes_block_wins_over_the_defaults() -> None:
    assert task_rule(record("base64-fix", vybes_multiplier=2, vybes_time_limit_minutes=None)) == TaskRule(
        2, None
    )


def test_a_failing_lint_or_typecheck_step_zeroes_the_fraction() -> None:
    full = {"subtasks_passed": 3, "subtasks_total": 3}
    agent = step("agent", ["agent"], duration=30.0)
    lint = step("grade", ["npm", "run", "lint"], exit_code=1)
    typecheck = step("build", ["npm", "run", "TypeCheck"], exit_code=2)
    build = step("build", ["npm", "run", "build"], exit_code=1)
    passing_lint = step("grade", ["npm", "run", "lint"], exit_code=0)
    assert vybes_points(record(steps=[agent, lint], **full)) == 0.0
    assert vybes_points(record(steps=[agent, typecheck], **full)) == 0.0
    # any other failing step leaves the subtask fraction alone: 100 × 3 × 3/3 × 1
    assert vybes_points(record("calc", "failed", steps=[agent, build, passing_lint], **full)) == 300.0


def test_time_penalty_and_rounding() -> None:
    third = {"subtasks_passed": 1, "subtasks_total": 3}
    # 100 × 3 × 1/3 × 1 = 100; rounded to 2 decimals: 100 × 1 × 2/3 = 66.67
    assert vybes_points(record(**third)) == 100.0
    assert vybes_points(record(subtasks_passed=2, subtasks_total=3, vybes_multiplier=1)) == 66.67
    # 12 minutes for a 6-minute task: × 0.5; an hour: clamped at 0.2
    assert vybes_points(record(steps=[step("agent", ["a"], duration=720.0)])) == 150.0
    assert vybes_points(record(steps=[step("agent", ["a"], duration=3600.0)])) == 60.0
    # an agent that took no time at all gets the smallest factor, as in the runner
    assert vybes_points(record(steps=[step("agent", ["a"], duration=0.0)])) == 60.0
    # no subtasks: 1 or 0 from the outcome
    assert vybes_points(record(outcome="failed")) == 0.0
