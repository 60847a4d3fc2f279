"""Run one coding-agent eval in a prepared workspace: write ``prompt.md``, run the agent, the build
steps and (in a fresh copy of the grading folder holding the agent's files) the grade steps.

No pytest here: :func:`run_workspace_eval` returns the record and the verdict for the item;
:class:`RegistryCommands` runs and records the commands.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ..bounded_read import UnreadableFile
from ..filenames import NAME_MAX, name_part
from ..loading.eval_root import Layout
from ..loading.runner_config import ResolvedEval
from ..loading.yamlsource import MAX_INPUT_BYTES
from ..models import CommandDefinition, OutputSpec
from ..presets import NETWORK_ENV
from ..process import CommandNotFound, resolve_executable, run_command, tail_lines
from ..providers.agent_env import BASE_ENV, allowed_environment
from ..providers.output import OutputError
from ..providers.parse_codex import own_sandbox_problem
from ..providers.parsers import Parser, parse_agent_output
from ..reaping import marked
from ..results import EvalRecord, StepRecord, SubtaskModule
from ..runner import ItemVerdict
from ..text_input import NotUtf8, read_input_text
from .copying import copy_template, copy_tree
from .layout import RESULTS_IN_WORKSPACE, WORKSPACE_IN_GRADING, grading_beside
from .sandbox import Sandbox, folders_of
from .step_network import step_network, writable_caches
from .subtasks import (
    DEFAULT_SUBTASK_GLOBS,
    MODULE_RESULTS_GLOB,
    Subtasks,
    collect_modules,
    collect_subtasks,
    snapshot_results,
)

INSTRUCTION = "Execute the instructions in ./prompt.md"
PROMPT_FILE = "prompt.md"
WORKSPACE_DIR, GRADING_DIR, LOGS_DIR = "workspace", "grading", "logs"  # in the item's folder
PROBLEM_FILE = "problem.md"
TAIL_LINES = 40
# What a sandboxed step gets of the environment beside its registry entry's env_passthrough.
STEP_ENV = (*BASE_ENV, *NETWORK_ENV, "CI")


@dataclass(frozen=True)
class AgentCommand:
    """How to start the configuration's agent: ``argv`` holds the instruction unless it goes on
    stdin (``stdin_text``)."""

    name: str
    argv: list[str]
    env: Mapping[str, str] | None
    timeout_s: float
    stdin_text: str | None
    visible: tuple[Path, ...] = ()  # folders a sandboxed agent must see (the project, its Python)
    hidden: tuple[Path, ...] = ()  # folders it must not see (the hidden tests)


class AgentReport(NamedTuple):
    """What a coding agent's stdout gave: EvalRecord fields, a note when it could not be read, and
    whether the agent itself reported that its run failed (an API error: the note says which)."""

    fields: dict[str, Any]
    note: str | None = None
    failed: bool = False


def agent_report(
    steps: Sequence[StepRecord],
    output: OutputSpec,
    max_bytes: int,
    parsers: Mapping[str, Parser] | None = None,
) -> AgentReport:
    """What a coding agent reported on stdout, read as its configuration's ``output`` says (an
    agent preset's parser, JSON paths): response, cost, tokens, tool calls and, when it reported
    one, its latency (which replaces the measured wall time, as for prompt evals), or why not.
    Plain-text agents report nothing."""
    agent = next((step for step in steps if step.phase == "agent" and step.log), None)
    log = Path(agent.log) if agent is not None and agent.log else None
    if agent is not None and log is not None and output.parser == "codex":
        problem = own_sandbox_problem(agent.argv, log.with_suffix(".stderr"), log)
        if problem:  # the build and grade steps will fail: say why
            return AgentReport({}, problem, failed=True)
    if log is None or (output.format == "text" and not output.parser):
        return AgentReport({})
    try:
        size = log.stat().st_size
    except OSError:
        return AgentReport({})
    if size > max_bytes:
        return AgentReport(
            {}, f"agent output not read: {size} bytes, more than max_output_bytes ({max_bytes})"
        )
    try:
        parsed = parse_agent_output(log, output, parsers)
    except OutputError as exc:
        if exc.agent_reported:
            return AgentReport({}, f"the agent reported its run failed: {exc}", failed=True)
        return AgentReport({}, f"agent output not read: {exc}")
    fields: dict[str, Any] = {
        "response": parsed.text,
        "cost": parsed.cost,
        "cost_source": "reported" if parsed.cost is not None else None,
        "input_tokens": parsed.input_tokens,
        "output_tokens": parsed.output_tokens,
        "cached_input_tokens": parsed.cached_input_tokens,
        "cache_write_tokens": parsed.cache_write_tokens,
        "tool_calls": list(parsed.tool_calls),
        "api_retries": parsed.api_retries,
    }
    if parsed.latency is not None:  # the agent step's record keeps the measured duration
        fields["latency"] = parsed.latency
    return AgentReport(fields)


def write_prompt(evaluation: ResolvedEval, shared_instructions: Path | None, workspace: Path) -> Path:
    """``prompt.md``: the problem prompt, the workspace's ``problem.md`` and the shared
    instructions (those present), separated by blank lines; PromptFileError when one of them
    cannot be read or the prompt cannot be written. A ``prompt.md`` the template holds is replaced,
    never written through (a link to a file outside would get the prompt, secrets unmasked)."""
    parts = [evaluation.prompt]
    problem = workspace / PROBLEM_FILE
    if problem.exists() and not problem.is_dir():
        parts.append(_prompt_part(problem))
    if shared_instructions is not None:
        parts.append(_prompt_part(shared_instructions))
    path = workspace / PROMPT_FILE
    text = "\n\n".join(part.strip("\n") for part in parts) + "\n"
    try:
        path.unlink(missing_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
    except IsADirectoryError:
        raise PromptFileError(
            f"the prompt is not written: {evaluation.workspace / PROMPT_FILE} is a folder; the prompt "
            f"goes to {PROMPT_FILE} in the workspace: rename or remove that folder in the template"
        ) from None
    except OSError as exc:
        raise PromptFileError(f"the prompt is not written: {path}: {exc.strerror or exc}") from None
    return path


class PromptFileError(Exception):
    """A file the prompt is made of cannot be read; the message names it."""


def _prompt_part(path: Path) -> str:
    try:
        return read_input_text(path, MAX_INPUT_BYTES)
    except (OSError, NotUtf8, UnreadableFile) as exc:
        raise PromptFileError(
            f"the prompt is not written: {path}: {exc}; it must be a UTF-8 regular file of at most "
            f"{MAX_INPUT_BYTES // 2**20} MiB"
        ) from None


class StepFailed(Exception):
    """A step failed (non-zero exit, timeout, or could not start); ``step`` is its record."""

    def __init__(self, step: StepRecord, message: str) -> None:
        super().__init__(message)
        self.step, self.message = step, message


def _log_stem(index: int, phase: str, name: str) -> str:
    # Room for the longest suffix (.stdout, .stderr, .stdin) within a file name's 255 bytes.
    return f"{index:02d}-{phase}-" + name_part(name, NAME_MAX - 20)


Phase = Literal["agent", "build", "grade"]


class RegistryCommands:
    """Runs the agent and the registry's steps by name, one after another, each under its
    timeout with its output in ``logs`` and, in a bwrap ``sandbox``, confined (the steps run the
    agent's files too); :attr:`steps` records every command run so far.

    This is the default value of the ``vibe_commands`` fixture: override the fixture to run the
    steps some other way (in a container, say), keeping :meth:`run`'s contract.
    """

    def __init__(
        self,
        registry: Mapping[str, CommandDefinition],
        logs: Path,
        sandbox: Sandbox | None = None,
        on_step: Callable[[str, str], None] | None = None,
        max_processes: int = 0,
    ) -> None:
        self.registry, self.logs = registry, logs
        self.sandbox = sandbox or Sandbox("none")
        self.steps: list[StepRecord] = []
        self.on_step = on_step  # told (phase, step name) as each command starts
        self.max_processes = max_processes  # the agent's process limit (0: none), see cgroups
        self.agent: AgentCommand | None = None  # the last agent run: what its steps may see

    def step_command(
        self, phase: Literal["build", "grade"], command: CommandDefinition, cwd: Path
    ) -> tuple[list[str], dict[str, str] | None]:
        """The argv and environment of a registry step: unchanged without a sandbox (your
        environment); in bwrap the wrapped argv (see :meth:`Sandbox.wrap_step`: a build step sees
        what the agent saw, a grade step the whole tree read-only; the network and the package
        caches as :mod:`.step_network` decides) and the allowlisted environment (:data:`STEP_ENV`
        and the entry's ``env_passthrough``). Raises CommandNotFound when the command cannot be
        found."""
        argv = [command.command, *command.args]
        if self.sandbox.kind == "none":
            return argv, None
        env = allowed_environment(os.environ, (*STEP_ENV, *command.env_passthrough))
        target = command.command
        if "/" in target and not os.path.isabs(target):
            target = str(cwd / target)
        executable = resolve_executable(target, env)
        if executable is None:
            raise CommandNotFound(
                command.command, "not an executable file" if "/" in target else "looked in PATH"
            )
        agent = self.agent
        visible = (*(agent.visible if agent is not None else ()), *folders_of([executable]))
        # A build step sees what the agent saw. A grade step is the grader's: it reads the whole
        # tree read-only, as the runner's grading packages reach into the repository by relative
        # paths (../../problems/<id>/...); it still writes only in its grading copy.
        hidden = agent.hidden if agent is not None and phase == "build" else ()
        network = step_network(argv, command.network)
        home = Path(env.get("HOME") or Path.home())
        wrapped = self.sandbox.wrap_step(
            argv,
            cwd,
            visible,
            hidden,
            network,
            writable_caches(home, argv) if network else (),
        )
        return wrapped, env

    def run(self, phase: Literal["build", "grade"], name: str, cwd: Path) -> StepRecord:
        """Run the registry's step ``name`` in ``cwd``; raise :class:`StepFailed` unless it exits 0."""
        command = self.registry.get(name)
        if command is None:
            raise self._not_started(phase, name, [], cwd, "is not in the command registry")
        argv = [command.command, *command.args]
        try:
            wrapped, env = self.step_command(phase, command, cwd)
        except CommandNotFound as exc:
            raise self._not_started(phase, name, argv, cwd, f"could not start: {exc}") from None
        return self.run_argv(phase, name, wrapped, cwd, command.timeout_s, env, shown_argv=argv)

    def _not_started(self, phase: Phase, name: str, argv: list[str], cwd: Path, why: str) -> StepFailed:
        """Record a step that did not start; the StepFailed to raise, ``why`` in its message."""
        step = StepRecord(phase=phase, name=name, argv=argv, cwd=str(cwd), exit_code=None, duration=0.0,
                          timed_out=False)  # fmt: skip
        self.steps.append(step)
        return StepFailed(step, f"{phase} step {name!r} {why}")

    def run_agent(self, agent: AgentCommand, workspace: Path) -> StepRecord:
        """Run the agent in ``workspace``, inside the sandbox."""
        self.agent = agent
        argv = self.sandbox.wrap(agent.argv, workspace, agent.visible, agent.hidden)
        return self.run_argv(
            "agent", agent.name, argv, workspace, agent.timeout_s, agent.env, agent.stdin_text, agent.argv,
            self.max_processes,
        )  # fmt: skip

    def run_argv(
        self,
        phase: Phase,
        name: str,
        argv: Sequence[str],
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        stdin_text: str | None = None,
        shown_argv: Sequence[str] | None = None,
        max_processes: int = 0,
    ) -> StepRecord:
        """Run one command and record it; raise :class:`StepFailed` (recorded too) unless it exits 0."""
        self.logs.mkdir(parents=True, exist_ok=True)
        stem = _log_stem(len(self.steps), phase, name)
        if self.on_step is not None:
            self.on_step(phase, name)
        shown = list(shown_argv or argv)
        try:
            if not cwd.is_dir():  # e.g. an agent removed its own workspace
                raise CommandNotFound(f"its working folder {cwd} is gone")
            result = run_command(
                argv, cwd=cwd, output_dir=self.logs, name=stem, env=marked(env), timeout=timeout_s,
                stdin_text=stdin_text, max_processes=max_processes,
            )  # fmt: skip
        except CommandNotFound as exc:
            raise self._not_started(phase, name, shown, cwd, f"could not start: {exc}") from None
        step = StepRecord(
            phase=phase,
            name=name,
            argv=shown,
            cwd=str(cwd),
            exit_code=result.exit_code,
            duration=result.duration,
            timed_out=result.timed_out,
            log=str(result.stdout_path),
        )
        self.steps.append(step)
        if result.timed_out or result.exit_code != 0:
            what = (
                f"timed out after {timeout_s:g} s"
                if result.timed_out
                else f"exited with code {result.exit_code}"
            )
            lines = [f"{phase} step {name!r} {what}"]
            lines += tail_lines((("stdout", result.stdout_path), ("stderr", result.stderr_path)), TAIL_LINES)
            raise StepFailed(step, "\n".join(lines))
        return step


class _NotGradable(Exception):
    """The grading folder could not be prepared from what the agent left."""


def _first_of(failures: Sequence[StepFailed]) -> StepFailed:
    """The first failed step, its message naming the others that failed too, by phase."""
    first = failures[0]
    if len(failures) == 1:
        return first
    others: dict[str, list[str]] = {}
    for failure in failures[1:]:
        others.setdefault(failure.step.phase, []).append(repr(failure.step.name))
    named = "; ".join(f"{phase} steps {', '.join(names)}" for phase, names in others.items())
    return StepFailed(first.step, f"{first.message}\n({named} failed too)")


def _merged_grading(evaluation: ResolvedEval, workspace: Path, workdir: Path) -> Path:
    """The seed's grading: ``workdir/grading``, the agent's files with the grading folder's over them
    (the grading folder's win: an agent cannot replace hidden tests)."""
    grading = workdir / GRADING_DIR
    copy_tree(workspace, grading)
    copy_template(evaluation.grading, grading)
    return grading


def run_workspace_eval(
    evaluation: ResolvedEval,
    commands: RegistryCommands,
    agent: AgentCommand,
    workspace: Path,
    workdir: Path,
    nodeid: str,
    shared_instructions: Path | None = None,
    subtask_globs: Sequence[str] = DEFAULT_SUBTASK_GLOBS,
    layout: Layout = "seed",
    discard: Callable[[Path], None] | None = None,
) -> tuple[EvalRecord, ItemVerdict]:
    """Write ``prompt.md`` into the prepared ``workspace``, run the agent and then every build step
    there, then every grade step in a grading copy: in the ``seed`` layout ``workdir/grading`` (the
    grading folder copied over the workspace), in the ``repository`` layout a copy of the grading
    folder beside it with the workspace in its ``workspace/`` (see :mod:`.layout`). A failing or
    timed-out agent, like a failing build step, does not stop the build and grading (the runner
    grades what it left, for partial credit); the item passes only if every step exits 0. After
    the grade steps the results files they wrote give the subtask counts (``subtask_globs``; in
    the repository layout the modules of ``workspace/results/``).
    ``discard`` is given the grading copy once it is done with."""
    latency: float | None = None
    durations: dict[str, float] = {}
    subtasks = Subtasks(None, None)
    modules: dict[str, SubtaskModule] | None = None
    grading: Path | None = None
    before: dict[Path, tuple[int, int] | None] | None = None
    results_globs: tuple[str, ...] = (f"{WORKSPACE_IN_GRADING}/{RESULTS_IN_WORKSPACE}/{MODULE_RESULTS_GLOB}",)
    if layout == "seed":
        results_globs = tuple(subtask_globs)
    failure: str | None = None
    phase = "agent"
    started = time.perf_counter()
    try:
        write_prompt(evaluation, shared_instructions, workspace)
        failures: list[StepFailed] = []
        try:
            latency = commands.run_agent(agent, workspace).duration
        except StepFailed as exc:  # the runner grades what a failed or timed-out agent left too
            latency = exc.step.duration
            failures.append(exc)
        durations["agent"] = time.perf_counter() - started
        phase, started = "build", time.perf_counter()
        for name in evaluation.build_steps:
            try:
                commands.run("build", name, workspace)
            except StepFailed as exc:
                failures.append(exc)
        durations["build"] = time.perf_counter() - started
        phase, started = "grade", time.perf_counter()
        try:
            if layout == "repository":
                grading = grading_beside(evaluation.grading, workspace)
            else:
                grading = _merged_grading(evaluation, workspace, workdir)
        except OSError as exc:  # what the agent left cannot be copied (or be overwritten)
            raise _NotGradable(f"cannot prepare the grading folder: {exc}") from None
        before = snapshot_results(grading, results_globs)
        for name in evaluation.grade_steps:  # all of them: each may add subtasks
            try:
                commands.run("grade", name, grading)
            except StepFailed as exc:
                failures.append(exc)
        durations["grade"] = time.perf_counter() - started
        if failures:
            raise _first_of(failures)
    except StepFailed as exc:
        durations.setdefault(phase, time.perf_counter() - started)
        if exc.step.phase == "agent":
            latency = exc.step.duration
        failure = exc.message
    except (_NotGradable, PromptFileError) as exc:
        durations.setdefault(phase, time.perf_counter() - started)
        failure = str(exc)
    finally:
        if before is not None and grading is not None:
            if layout == "repository":
                subtasks, modules = collect_modules(
                    grading / WORKSPACE_IN_GRADING / RESULTS_IN_WORKSPACE, before
                )
            else:
                subtasks = collect_subtasks(grading, subtask_globs, before)
        if discard is not None:
            discard(grading if grading is not None else workdir / GRADING_DIR)
    vybes = evaluation.vybes
    notes = "\n".join(subtasks.notes) or None
    message = notes
    if failure is not None:
        message = failure + ("\n" + notes if notes else "")
    record = EvalRecord(
        name=evaluation.id,
        named=True,  # an evaluation's id is its explicit name
        nodeid=nodeid,
        outcome="passed" if failure is None else "failed",
        message=message,
        latency=latency,
        steps=list(commands.steps),
        phase_durations=durations,
        sandbox=commands.sandbox.kind,
        subtasks_passed=subtasks.passed,
        subtasks_total=subtasks.total,
        subtask_modules=modules,
        vybes_multiplier=vybes.multiplier if vybes else None,
        vybes_time_limit_minutes=vybes.timeLimitMinutes if vybes else None,
        vybes_description=vybes.description if vybes else None,
        vybes_category=vybes.category if vybes else None,
    )
    return record, ItemVerdict(record.outcome, None if failure is None else message)
