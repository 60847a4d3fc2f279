"""Run one coding-agent eval: copy the workspace, write ``prompt.md``, run the agent, the build steps
and (in a fresh copy of the grading folder holding the agent's files) the grade steps.

No pytest here: :func:`run_workspace_eval` returns the record and the verdict for the item.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from .process import CommandNotFound, read_tail, run_command
from .results import EvalRecord, StepRecord
from .runner import Verdict
from .runner_config import CommandDefinition, ResolvedEval

INSTRUCTION = "Execute the instructions in ./prompt.md"
PROMPT_FILE = "prompt.md"
PROBLEM_FILE = "problem.md"
TAIL_LINES = 40


@dataclass(frozen=True)
class AgentCommand:
    """How to start the configuration's agent: ``argv`` holds the instruction unless it goes on
    stdin (``stdin_text``)."""

    name: str
    argv: list[str]
    env: Mapping[str, str] | None
    timeout_s: float
    stdin_text: str | None


def copy_tree(source: Path, target: Path) -> None:
    """Copy ``source``'s contents into ``target`` (created if needed): real copies, symlinks kept
    as symlinks, never hardlinks; ``source`` is only read."""
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)


def write_prompt(evaluation: ResolvedEval, shared_instructions: Path | None, workspace: Path) -> Path:
    """``prompt.md``: the problem prompt, the workspace's ``problem.md`` and the shared
    instructions (those present), separated by blank lines."""
    parts = [evaluation.prompt.read_text(encoding="utf-8")]
    problem = workspace / PROBLEM_FILE
    if problem.is_file():
        parts.append(problem.read_text(encoding="utf-8"))
    if shared_instructions is not None:
        parts.append(shared_instructions.read_text(encoding="utf-8"))
    path = workspace / PROMPT_FILE
    path.write_text("\n\n".join(part.strip("\n") for part in parts) + "\n", encoding="utf-8")
    return path


class _StepFailed(Exception):
    def __init__(self, step: StepRecord, message: str) -> None:
        super().__init__(message)
        self.step, self.message = step, message


def _log_stem(index: int, phase: str, name: str) -> str:
    return f"{index:02d}-{phase}-" + re.sub(r"[^A-Za-z0-9._+-]+", "_", name)


def _run_step(
    phase: Literal["agent", "build", "grade"],
    name: str,
    argv: Sequence[str],
    cwd: Path,
    logs: Path,
    index: int,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    stdin_text: str | None = None,
    shown_argv: Sequence[str] | None = None,
) -> StepRecord:
    """Run one command; return its record, or raise :class:`_StepFailed` (record included)."""
    stem = _log_stem(index, phase, name)
    try:
        result = run_command(
            argv, cwd=cwd, output_dir=logs, name=stem, env=env, timeout=timeout_s, stdin_text=stdin_text
        )
    except CommandNotFound as exc:
        step = StepRecord(
            phase=phase,
            name=name,
            argv=list(shown_argv or argv),
            cwd=str(cwd),
            exit_code=None,
            duration=0.0,
            timed_out=False,
            log=None,
        )
        raise _StepFailed(step, f"{phase} step {name!r} could not start: {exc}") from None
    step = StepRecord(
        phase=phase,
        name=name,
        argv=list(shown_argv or argv),
        cwd=str(cwd),
        exit_code=result.exit_code,
        duration=result.duration,
        timed_out=result.timed_out,
        log=str(result.stdout_path),
    )
    if result.timed_out or result.exit_code != 0:
        what = (
            f"timed out after {timeout_s:g} s" if result.timed_out else f"exited with code {result.exit_code}"
        )
        lines = [f"{phase} step {name!r} {what}"]
        for label, path in (("stdout", result.stdout_path), ("stderr", result.stderr_path)):
            tail = read_tail(path, TAIL_LINES)
            if tail:
                lines.append(f"last {TAIL_LINES} lines of {label} ({path}):")
                lines.append(tail.rstrip("\n"))
        raise _StepFailed(step, "\n".join(lines))
    return step


def run_workspace_eval(
    evaluation: ResolvedEval,
    registry: Mapping[str, CommandDefinition],
    shared_instructions: Path | None,
    agent: AgentCommand,
    workdir: Path,
    nodeid: str,
) -> tuple[EvalRecord, Verdict]:
    """Run the eval in ``workdir`` (``workspace/``, ``grading/``, ``logs/``); stop at the first
    failing step. The item passes only if every step exits 0."""
    workspace, grading, logs = workdir / "workspace", workdir / "grading", workdir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    copy_tree(evaluation.workspace, workspace)
    write_prompt(evaluation, shared_instructions, workspace)
    steps: list[StepRecord] = []
    latency: float | None = None
    try:
        step = _run_step(
            "agent", agent.name, agent.argv, workspace, logs, 0, agent.timeout_s, agent.env, agent.stdin_text
        )
        steps.append(step)
        latency = step.duration
        index = 1
        for name in evaluation.build_steps:
            command = registry[name]
            argv = [command.command, *command.args]
            steps.append(_run_step("build", name, argv, workspace, logs, index, command.timeout_s))
            index += 1
        copy_tree(evaluation.grading, grading)
        copy_tree(workspace, grading)
        for name in evaluation.grade_steps:
            command = registry[name]
            argv = [command.command, *command.args]
            steps.append(_run_step("grade", name, argv, grading, logs, index, command.timeout_s))
            index += 1
    except _StepFailed as exc:
        steps.append(exc.step)
        if exc.step.phase == "agent":
            latency = exc.step.duration
        record = EvalRecord(
            name=evaluation.id,
            nodeid=nodeid,
            outcome="failed",
            message=exc.message,
            latency=latency,
            steps=steps,
        )
        return record, Verdict("failed", exc.message)
    record = EvalRecord(name=evaluation.id, nodeid=nodeid, outcome="passed", latency=latency, steps=steps)
    return record, Verdict("passed", None)
