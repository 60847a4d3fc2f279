"""The body of coding-agent items and what their default fixtures do: the workspace copy, the agent's
provider, the registry's commands. Imported when a coding-agent eval is collected or its fixtures
run, so that a run of prompt evals never imports the agent, workspace and sandbox machinery."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import pytest

from .cache import note_coding_eval
from .errors import terminal_safe
from .execute import eval_item, response_cache, session_sandbox
from .items import EvalItem, finish, get_state, rootdir_relative, start_or_skip
from .loading.runner_config import ResolvedEval
from .loading.templates import MissingValue
from .masking import mask_file
from .providers import Provider
from .providers.cli import CliProvider
from .providers.pool import PoolKey
from .runner import ItemVerdict
from .scoring.assess import assess
from .workspace.agent import agent_command, with_agent_report
from .workspace.copying import CopyError, copy_template, remove_tree
from .workspace.layout import COPY_IGNORE, temporary_root, workspace_beside
from .workspace.steps import LOGS_DIR, PROMPT_FILE, WORKSPACE_DIR, RegistryCommands, run_workspace_eval


def agent_provider(item: EvalItem) -> CliProvider:
    """The pooled CLI provider that runs the item's coding agent (with the process limit)."""
    state = get_state(item.config)
    work, configuration = item.workspace_work, item.plan.configuration
    assert work is not None and configuration is not None

    def make() -> Provider:
        note_coding_eval(response_cache(state), item.plan.config_id)
        return CliProvider(
            item.plan.config_id,
            configuration,
            state.renderer,
            work.runner.folder,
            state.settings.max_processes,
        )

    provider = state.providers.get(PoolKey(item.plan.source_path, item.plan.config_id, "agent"), make)
    assert isinstance(provider, CliProvider)
    return provider


def run_workspace_item(
    request: pytest.FixtureRequest,
    vibe_workdir: Path,
    vibe_workspace: Path,
    vibe_commands: RegistryCommands,
) -> None:
    """The body of every coding-agent item."""
    item = eval_item(request, "run_workspace_item", coding=True)
    # the item began with its workspace's preparation, the fixtures' time before this body
    started = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=item.setup_seconds)
    work, configuration = item.workspace_work, item.plan.configuration
    assert work is not None and configuration is not None
    state = get_state(item.config)
    start_or_skip(item)
    state.renderer.note_environment()  # a fixture may have exported a secret
    provider = agent_provider(item)
    reason = provider.unavailable_reason()
    if reason:
        pytest.skip(reason)
    agent = agent_command(
        provider,
        work,
        item.plan.config_id,
        configuration,
        item.plan.info.suite,
        item.config.rootpath,
        vibe_workspace,
    )
    evaluation = work.evaluation
    if evaluation.templated:
        try:
            evaluation = replace(evaluation, prompt=state.renderer.render(evaluation.prompt))
        except MissingValue as exc:
            pytest.skip(str(exc))
    record, verdict = run_workspace_eval(
        evaluation,
        vibe_commands,
        agent,
        vibe_workspace,
        vibe_workdir,
        item.nodeid,
        work.runner.shared_instructions,
        state.settings.subtask_globs,
        work.runner.layout,
        lambda grading: discard(grading, item.config),
    )
    redact = state.renderer.redactor()
    durations = {"workspace": item.setup_seconds, **record.phase_durations}
    kept = None
    if state.settings.keep_workspaces:  # in the repository layout the workspace is in the tree
        kept = temporary_root(vibe_workspace) if work.runner.layout == "repository" else vibe_workdir
    record = with_agent_report(record, configuration, redact, durations, kept, state.extensions.parsers)
    times = {"started_at": started, "finished_at": dt.datetime.now(dt.UTC)}
    update = {field: moment.isoformat(timespec="milliseconds") for field, moment in times.items()}
    record = record.model_copy(update={"repeat": item.plan.info.repeat, **update})
    record = assess(record, configuration, vibe_workspace, evaluation.rubric, True, redact)
    if record.outcome == "error" and verdict.outcome != "error":  # the agent reported its run failed
        verdict = ItemVerdict("error", record.message)
    elif verdict.outcome != "passed":
        verdict = ItemVerdict(verdict.outcome, record.message or verdict.outcome)
    finish(item, record, verdict)


def prepare_workspace(item: EvalItem, workdir: Path) -> Path:
    """The default ``vibe_workspace``: a copy of the evaluation's template, ``workdir/workspace``
    (or, in the unified runner's repository layout, ``<problem>/.tmp-workspace-<id>/workspace``)."""
    work = item.workspace_work
    assert work is not None
    ignore = get_state(item.config).settings.workspace_ignore
    template = work.evaluation.workspace
    copy: Path | None = None  # where the copy was to go (None: no folder for it could be made)
    if work.runner.layout == "repository":
        try:
            workspace = copy = workspace_beside(template)
        except OSError as exc:
            failure = f"cannot make a folder for the copy beside it: {exc.strerror or exc}"
        else:
            try:
                copy_template(template, workspace, (*ignore, *COPY_IGNORE))
                drop_grading_folders(work.runner.evaluations.values(), template, workspace)
                return workspace
            except BaseException as exc:
                remove_tree(temporary_root(workspace))
                if not isinstance(exc, CopyError):
                    raise
                failure = exc.reason
    else:
        workspace = copy = workdir / WORKSPACE_DIR
        try:
            copy_template(template, workspace, ignore)
            drop_grading_folders(work.runner.evaluations.values(), template, workspace)
            return workspace
        except CopyError as exc:
            failure = exc.reason
    _not_copied(item, template, failure, copy)  # outside the handler: no chained traceback


def drop_grading_folders(evaluations: Iterable[ResolvedEval], template: Path, copy: Path) -> None:
    """Remove from ``copy``, a fresh copy of the workspace ``template``, the grading folders of
    ``evaluations`` that lie inside the template (a workspace that is the rootdir, say): the hidden
    tests reach the grade steps' copy after the agent has exited, never the agent with its workspace.
    (A grading folder that is the template itself is the workspace the eval chose.)"""
    real_template = os.path.realpath(template)
    for evaluation in evaluations:
        real = os.path.realpath(evaluation.grading)
        if real != real_template and os.path.commonpath([real, real_template]) == real_template:
            remove_tree(copy / os.path.relpath(real, real_template))


def _not_copied(item: EvalItem, template: Path, reason: str, copy: Path | None) -> NoReturn:
    """Fail the item's setup saying what cannot be copied and why, where the eval is defined, and
    how to fix it (no traceback: the input, not the plugin, is at fault)."""
    where = rootdir_relative(item.path, item.config.rootpath)
    if item.plan.line:
        where += f":{item.plan.line}"
    assert item.workspace_work is not None
    name = item.workspace_work.evaluation.id
    message = f"{where}: eval {name!r}: its workspace folder {template} cannot be copied: {reason}"
    if copy is not None and copy.resolve().is_relative_to(template.resolve()):
        message += (
            f"\nthe copy would go to {copy}, inside the folder itself (a folder that holds pytest's "
            f"temporary folder, --basetemp, cannot be a workspace): give --basetemp a folder outside "
            f"{template}, or point the eval's workspace at a folder that does not hold it"
        )
    pytest.fail(terminal_safe(message), pytrace=False)


def discard(folder: Path, config: pytest.Config) -> None:
    """Remove an item's workspace or grading copy unless --vibe-keep-workspaces keeps them; a
    kept one's ``prompt.md`` (the agent has read it) is rewritten with its secrets masked."""
    state = get_state(config)
    if not state.settings.keep_workspaces:
        remove_tree(folder)
        return
    for prompt in (folder / PROMPT_FILE, folder / WORKSPACE_DIR / PROMPT_FILE):
        mask_file(prompt, state.renderer.used_secrets)


def registry_commands(item: EvalItem, workdir: Path) -> RegistryCommands:
    """The default ``vibe_commands``: the item's registry, logs in ``workdir/logs``, agents in the
    session's sandbox."""
    work = item.workspace_work
    assert work is not None
    state = get_state(item.config)
    return RegistryCommands(
        work.runner.registry,
        workdir / LOGS_DIR,
        session_sandbox(state),
        item.vibe_phases.enter,
        state.settings.max_processes,
    )
