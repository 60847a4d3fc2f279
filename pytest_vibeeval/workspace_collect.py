"""A unified-runner config folder (``eval-config.json`` beside ``cli-config.json`` and
``command-registry.json``) becomes a collector: one item per evaluation × selected configuration."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RESULT_PROPERTY, RunInfo
from .assess import assess
from .configurations import CLI_CONFIG_NAME, select
from .copying import copy_template, remove_tree
from .errors import InputError
from .items import (
    ReusableItem,
    get_state,
    loadgroup_name,
    mark_item,
    phases_of,
    repeated,
    rootdir_relative,
    shared_fixtureinfo,
    start_or_skip,
)
from .models import Configuration, ScoreSpec
from .providers import PromptRequest
from .providers.cli import CliProvider
from .resume import files_digest, input_digest
from .runner import redact_steps
from .runner_config import REGISTRY_NAME, ResolvedEval, RunnerConfig, load_config_dir
from .sandbox import Sandbox, choose_sandbox
from .state import VibeState
from .suite import check_formula
from .templates import MissingValue, Redactor
from .workspace import (
    GRADING_DIR,
    INSTRUCTION,
    LOGS_DIR,
    WORKSPACE_DIR,
    AgentCommand,
    RegistryCommands,
    agent_report,
    run_workspace_eval,
)


class WorkspaceConfigFile(pytest.File):
    """``eval-config.json``: the config folder it lives in, read with :func:`load_config_dir`."""

    def collect(self) -> Iterator[pytest.Item]:
        state = get_state(self.config)
        rootpath = self.config.rootpath
        try:
            runner = load_config_dir(self.path.parent, os.environ)
        except InputError as exc:
            raise self.CollectError(exc.render(rootpath)) from None
        score = runner.score or ScoreSpec()
        try:
            check_cli_configurations(self.path.parent / CLI_CONFIG_NAME, dict(runner.configurations))
            formula = check_formula(self.path, score.formula, runner.score_line, runner.evaluations)
        except InputError as exc:
            raise self.CollectError(exc.render(rootpath)) from None
        state.suites_collected += 1
        state.known_configs.update(runner.configurations)
        state.known_evals.update(runner.evaluations)
        config_ids = select(list(runner.configurations), runner.default_configurations, state.options.configs)
        eval_ids = select(list(runner.evaluations), None, state.options.evals)
        source = rootdir_relative(self.path, rootpath)
        fixtureinfo = shared_fixtureinfo(self, run_workspace_item)
        files = files_digest(
            [self.path, self.path.parent / CLI_CONFIG_NAME, self.path.parent / REGISTRY_NAME]
        )
        variables = state.renderer.values.variables()
        digests = {cid: input_digest(files, runner.configurations[cid], variables) for cid in config_ids}
        for index, (eval_id, evaluation) in enumerate(runner.evaluations.items()):
            if eval_id not in eval_ids:
                continue
            for config_id in config_ids:
                configuration = runner.configurations[config_id]
                info = RunInfo(
                    suite=rootdir_relative(self.path.parent, self.config.rootpath),  # unique, unlike "config"
                    source=source,
                    configuration=config_id,
                    configuration_name=configuration.name,
                    score_formula=score.formula,
                    eval_id=eval_id,
                    named=True,
                    suite_evals=len(runner.evaluations),
                    eval_index=index,
                    score_canonical=formula.canonical or None,
                    score_preset=formula.preset,
                    score_min=score.min,
                    score_max=score.max,
                    min_pass_rate=evaluation.min_pass_rate,
                    input_digest=digests[config_id],
                )
                for name, repeat_info in repeated(
                    info, state.options.repeats, loadgroup_name(self.config, configuration, config_id)
                ):
                    yield WorkspaceItem.from_parent(
                        self,
                        name=name,
                        callobj=run_workspace_item,
                        fixtureinfo=fixtureinfo,
                        runner=runner,
                        evaluation=evaluation,
                        config_id=config_id,
                        configuration=configuration,
                        info=repeat_info,
                    )


def check_cli_configurations(source: Path, configurations: Mapping[str, Configuration | None]) -> None:
    """Coding agents are CLIs: raise :class:`InputError` naming ``source`` for any configuration
    (None: the implicit HTTP one) that has no ``cli``."""
    for config_id, configuration in configurations.items():
        if configuration is None or not configuration.cli:
            kind = "the implicit OpenRouter configuration" if configuration is None else f"{config_id!r}"
            raise InputError.single(
                source,
                f"configuration {kind}: coding-agent evals need a `cli` configuration",
                hint="give the suite `configurations:` (or a cli-config.json) with a `cli` agent",
            )


class WorkspaceItem(ReusableItem):
    """One coding-agent evaluation against one configuration."""

    def __init__(
        self,
        *,
        runner: RunnerConfig,
        evaluation: ResolvedEval,
        config_id: str,
        configuration: Configuration,
        info: RunInfo,
        tags: tuple[str, ...] = (),
        xfail: str | None = None,
        line: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.runner, self.evaluation, self.config_id = runner, evaluation, config_id
        self.configuration, self.info, self.line = configuration, info, line
        self.setup_seconds = 0.0
        steps = (*evaluation.build_steps, *evaluation.grade_steps)
        timeout = configuration.timeout_s + sum(runner.registry[name].timeout_s for name in steps)
        self.expected_failure = xfail or configuration.xfail
        group = configuration.group_name(config_id)
        mark_item(self, (evaluation.id, config_id), tags, timeout, info, self.expected_failure, group)

    def setup(self) -> None:
        """Skip when a required command is missing; time the fixtures (the workspace's preparation)."""
        if self.reused is not None:
            return  # --vibe-resume answers it: no workspace
        missing = [name for name in self.evaluation.requires if shutil.which(name) is None]
        if missing:
            pytest.skip(f"{self.evaluation.id} requires {', '.join(missing)} on PATH (not found)")
        phases = phases_of(self)
        if phases is not None:
            phases.enter("workspace", self.evaluation.id)
        started = time.perf_counter()
        super().setup()
        self.setup_seconds = time.perf_counter() - started

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.line - 1 if self.line else None, self.name


def agent_command(item: WorkspaceItem, workspace_hint: Path) -> AgentCommand:
    """The configuration's CLI as :class:`CliProvider` would run it, with the fixed instruction as
    the prompt; skips the item when the CLI cannot run here."""
    state = get_state(item.config)
    key = (item.path, item.config_id)
    if key not in state.providers:  # one per configuration: its availability is checked once
        state.providers[key] = CliProvider(
            item.config_id,
            item.configuration,
            state.renderer,
            item.runner.folder,
            state.options.max_processes,
        )
    provider = state.providers[key]
    assert isinstance(provider, CliProvider)
    reason = provider.unavailable_reason()
    if reason:
        pytest.skip(reason)
    request = PromptRequest(
        INSTRUCTION,
        item.configuration.model or "",
        None,
        item.info.suite,
        item.evaluation.id,
        item.config_id,
        workspace_hint,
    )
    stdin = INSTRUCTION if item.configuration.prompt_via == "stdin" else None
    runner = item.runner
    argv = provider.argv(request)
    # What the agent needs to see in a sandbox's private /tmp: the project, Python, the config
    # folders, and the folders of the files its command line names (and of their link targets).
    named = [
        folder
        for arg in argv
        if os.path.isabs(arg) and os.path.exists(arg)
        for folder in {Path(arg).parent, Path(os.path.realpath(arg)).parent}
    ]
    visible = (item.config.rootpath, Path(sys.prefix), Path(sys.base_prefix), runner.folder, runner.eval_root)
    return AgentCommand(
        item.config_id,
        argv,
        provider.request_environment(workspace_hint),
        item.configuration.timeout_s,
        stdin,
        visible=tuple(dict.fromkeys((*visible, *named))),
        hidden=(item.evaluation.grading,),
    )


def workspace_item(request: pytest.FixtureRequest, fixture: str) -> WorkspaceItem:
    """The coding-agent item ``request`` belongs to; a usage error for any other item."""
    item = request.node
    if not isinstance(item, WorkspaceItem):
        raise pytest.UsageError(f"{fixture} is only available to pytest-vibeeval coding-agent items")
    return item


def prepare_workspace(item: WorkspaceItem, workdir: Path) -> Path:
    """The default ``vibe_workspace``: ``workdir/workspace``, a copy of the evaluation's template."""
    workspace = workdir / WORKSPACE_DIR
    copy_template(item.evaluation.workspace, workspace, get_state(item.config).options.workspace_ignore)
    return workspace


def discard(folder: Path, config: pytest.Config) -> None:
    """Remove an item's workspace or grading copy unless --vibe-keep-workspaces keeps them."""
    if not get_state(config).options.keep_workspaces:
        remove_tree(folder)


def registry_commands(item: WorkspaceItem, workdir: Path) -> RegistryCommands:
    """The default ``vibe_commands``: the item's registry, logs in ``workdir/logs``, agents in the
    session's sandbox."""
    state = get_state(item.config)
    phases = phases_of(item)
    return RegistryCommands(
        item.runner.registry,
        workdir / LOGS_DIR,
        session_sandbox(state),
        phases.enter if phases else None,
        state.options.max_processes,
    )


def session_sandbox(state: VibeState) -> Sandbox:
    """The sandbox agents run in, chosen once per process (the probe runs a bwrap command)."""
    if state.sandbox is None:
        options = state.options
        state.sandbox = choose_sandbox(options.sandbox_mode, options.sandbox_writable)
    return state.sandbox


def run_workspace_item(
    request: pytest.FixtureRequest,
    vibe_workdir: Path,
    vibe_workspace: Path,
    vibe_commands: RegistryCommands,
) -> None:
    """The body of every coding-agent item."""
    item = workspace_item(request, "run_workspace_item")
    state = get_state(item.config)
    start_or_skip(state)
    agent = agent_command(item, vibe_workspace)
    evaluation = item.evaluation
    if evaluation.templated:
        try:
            evaluation = replace(evaluation, prompt=state.renderer.render(evaluation.prompt))
        except MissingValue as exc:
            pytest.skip(str(exc))
    try:
        record, verdict = run_workspace_eval(
            evaluation,
            vibe_commands,
            agent,
            vibe_workspace,
            vibe_workdir,
            item.nodeid,
            item.runner.shared_instructions,
            state.options.subtask_globs,
        )
    finally:
        discard(vibe_workdir / GRADING_DIR, item.config)
    redact = Redactor(state.renderer.used_secrets)
    reported, note = agent_report(
        record.steps, item.configuration.output, item.configuration.max_output_bytes
    )
    message = redact("\n".join(part for part in (record.message, note) if part) or None)
    if reported:
        reported["response"] = redact(reported["response"])
        reported["tool_calls"] = [
            c.model_copy(update={"error": redact(c.error)}) for c in reported["tool_calls"]
        ]
    durations = {"workspace": item.setup_seconds, **record.phase_durations}
    update: dict[str, Any] = {
        **reported,
        "message": message,
        "steps": redact_steps(record.steps, redact),
        "phase_durations": durations,
        "workspace": str(vibe_workdir) if state.options.keep_workspaces else None,
        "xfail": item.expected_failure is not None,
        "repeat": item.info.repeat,
    }
    record = assess(
        record.model_copy(update=update), item.configuration, vibe_workspace, evaluation.rubric, True, redact
    )
    state.budget.add(record.cost)
    item.user_properties.append((RESULT_PROPERTY, record.model_dump_json()))
    if verdict.outcome != "passed":
        pytest.fail(message or verdict.outcome, pytrace=False)
