"""The time-penalised ``vybes`` score of one coding-agent eval, by the unified runner's rules:

``100 × multiplier × fraction × clamp(time limit / agent minutes, 0.2, 1)``, rounded to 2 decimals,
where ``fraction`` is subtasks passed / total (else 1 or 0 from the outcome) and is 0 when a failing
build or grade step's command mentions ``lint`` or ``typecheck``; an agent time of 0 gets the
smallest factor, 0.2. An eval without a ``vybes`` block takes the runner's defaults for its name,
else multiplier 3 and 6 minutes. No pytest here.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..results import EvalRecord, StepRecord

MIN_TIME_FACTOR = 0.2
QUALITY_WORDS = ("lint", "typecheck")


@dataclass(frozen=True)
class TaskRule:
    """How the time-penalised score treats the evals a rule matches."""

    multiplier: float
    time_limit_minutes: float | None  # None: no time penalty (a vybes block without a limit)
    description: str | None = None
    category: str | None = None


# The runner's defaults, matched in this order against the lower-cased eval name (contains).
DEFAULT_RULES: tuple[tuple[str, TaskRule], ...] = (
    ("base64-fix", TaskRule(1, 2, "Base64 encoder/decoder utilities", "utilities")),
    ("regex-challenge", TaskRule(3, 6, "Regex validation and transformation toolkit", "utilities")),
    ("report-builder", TaskRule(4, 8, "Spreadsheet → HTML report rendering", "integrations")),
    ("form-capture", TaskRule(5, 10, "Full-stack contact form application", "full-stack")),
    ("pagination", TaskRule(5, 10, "Server + client pagination repair", "full-stack")),
    ("react-evaluation", TaskRule(5, 10, "Reactive programming primitives", "foundations")),
)
GENERAL_RULE = TaskRule(3, 6, "General evaluation task", "general")


def task_rule(record: EvalRecord) -> TaskRule:
    """The record's own ``vybes`` block, else the default for its name, else :data:`GENERAL_RULE`."""
    if record.vybes_multiplier is not None:
        return TaskRule(
            record.vybes_multiplier,
            record.vybes_time_limit_minutes,
            record.vybes_description,
            record.vybes_category,
        )
    name = record.name.lower()
    return next((rule for key, rule in DEFAULT_RULES if key in name), GENERAL_RULE)


def quality_failed(steps: Iterable[StepRecord]) -> bool:
    """A build or grade step failed and its command mentions lint or typecheck."""
    for step in steps:
        if step.phase == "agent" or (step.exit_code == 0 and not step.timed_out):
            continue
        command = " ".join(step.argv).lower()
        if any(word in command for word in QUALITY_WORDS):
            return True
    return False


def agent_seconds(record: EvalRecord) -> float | None:
    """The agent step's duration (None when the eval has no agent step)."""
    durations = [step.duration for step in record.steps if step.phase == "agent"]
    return sum(durations) if durations else None


def time_factor(seconds: float, limit_minutes: float | None) -> float:
    """clamp(limit / minutes, 0.2, 1); 0.2 for no time at all; 1 without a limit."""
    if limit_minutes is None:
        return 1.0
    if seconds <= 0:
        return MIN_TIME_FACTOR
    return min(1.0, max(MIN_TIME_FACTOR, limit_minutes / (seconds / 60)))


def success_fraction(record: EvalRecord) -> float:
    """Subtasks passed / total, else 1 or 0 from the outcome; 0 after a failed lint or typecheck."""
    if quality_failed(record.steps):
        return 0.0
    if record.subtasks_total and record.subtasks_passed is not None:
        return record.subtasks_passed / record.subtasks_total
    return 1.0 if record.outcome == "passed" else 0.0


def vybes_points(record: EvalRecord) -> float:
    """The eval's score, rounded to 2 decimals."""
    rule = task_rule(record)
    factor = time_factor(agent_seconds(record) or 0.0, rule.time_limit_minutes)
    return round(100.0 * rule.multiplier * success_fraction(record) * factor, 2)


def vybes_result(record: EvalRecord, config_id: str) -> dict[str, Any]:
    """The eval's score as the unified runner's ``results.json`` holds it under ``vybes``."""
    rule = task_rule(record)
    seconds = agent_seconds(record) or 0.0
    fraction = success_fraction(record)
    factor = time_factor(seconds, rule.time_limit_minutes)
    modules = record.subtask_modules or {}
    result: dict[str, Any] = {
        "taskName": record.name,
        "configId": config_id,
        "complexityMultiplier": rule.multiplier,
        "timeLimitMinutes": rule.time_limit_minutes,
        "baseScore": 100 * rule.multiplier,
        "successPercentage": round(fraction, 4),
        "timePenaltyMultiplier": round(factor, 4),
        "finalScore": vybes_points(record),
        "actualTimeMinutes": round(seconds / 60, 3),
        "description": rule.description,
        "category": rule.category,
        "breakdown": {
            "subtasksPassed": record.subtasks_passed or 0,
            "subtasksTotal": record.subtasks_total or 0,
            "modulesCompleted": [name for name, m in modules.items() if m.total and m.passed == m.total],
            "modulesIncomplete": [name for name, m in modules.items() if m.total and m.passed < m.total],
            "modules": {
                name: {
                    "passed": m.passed,
                    "total": m.total,
                    "passedTasks": m.passed_tasks,
                    "failedTasks": m.failed_tasks,
                }
                for name, m in modules.items()
            },
        },
    }
    if quality_failed(record.steps):
        result["error"] = "lint/typecheck failed"
    return result
