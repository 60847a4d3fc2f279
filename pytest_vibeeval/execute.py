"""The bodies of eval items: a prompt eval asks its provider and runs the checks; a coding-agent
eval runs its agent, build and grade steps in a workspace. Both end in :func:`items.finish`.

The bodies take fixtures (``vibe_provider``; ``vibe_workspace``, ``vibe_commands``), so a conftest
can override how an item gets its provider or workspace. Providers come from the session's
:class:`ProviderPool`, one per file × configuration × role."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import NoReturn

import pytest

from .cache import ResponseCache, note_coding_eval, session_cache, with_cache
from .checks import any_uses_workdir
from .errors import terminal_safe
from .items import EvalItem, finish, get_state, rootdir_relative, start_or_skip
from .loading.runner_config import ResolvedEval
from .loading.templates import MissingValue
from .masking import mask_file
from .models import Configuration
from .plan import PromptWork
from .providers import Provider, ProviderSpec
from .providers.base import uses_workdir
from .providers.cli import CliProvider
from .providers.pool import PoolKey, Role
from .pytest_private import tmp_path_factory
from .recording import recorded
from .runner import ItemVerdict, run_prompt_eval
from .scoring.assess import assess
from .state import VibeState
from .workspace.agent import agent_command, with_agent_report
from .workspace.copying import CopyError, copy_template, remove_tree
from .workspace.layout import COPY_IGNORE, temporary_root, workspace_beside
from .workspace.sandbox import Sandbox, choose_sandbox
from .workspace.steps import LOGS_DIR, PROMPT_FILE, WORKSPACE_DIR, RegistryCommands, run_workspace_eval


def _prompt_work(item: EvalItem) -> PromptWork:
    work = item.plan.work
    assert isinstance(work, PromptWork), "a prompt-eval body on a coding-agent item"
    return work


def eval_item(request: pytest.FixtureRequest, fixture: str, coding: bool = False) -> EvalItem:
    """The eval item ``request`` belongs to; a usage error for any other item (or, with ``coding``,
    for an item that is not a coding-agent eval)."""
    item = request.node
    if not isinstance(item, EvalItem) or (coding and item.workspace_work is None):
        kind = "coding-agent" if coding else "eval"
        raise pytest.UsageError(f"{fixture} is only available to pytest-vibeeval {kind} items")
    return item


def _answering(
    state: VibeState, config_id: str, configuration: Configuration | None, provider: Provider
) -> Provider:
    """``provider`` as it answers prompts (an eval's or a judge's), under --vibe-cache and
    --vibe-record/--vibe-replay (a cached answer is recorded too)."""
    settings = state.settings
    model = configuration.model if configuration is not None else None
    provider = with_cache(provider, _cache(state), config_id, model)
    redact = state.renderer.redactor()
    return recorded(provider, config_id, model, settings.record, settings.replay, redact)


def _cache(state: VibeState) -> ResponseCache | None:
    settings = state.settings
    return session_cache(settings.cache, settings.repeats, settings.replay, state.renderer.redactor())


def provider_for(item: EvalItem, role: Role = "answer") -> Provider:
    """The pooled provider of the item's configuration in ``role`` (``answer`` or ``judge``)."""
    state = get_state(item.config)
    work = _prompt_work(item)
    if role == "judge":
        assert work.judge is not None
        config_id, configuration = work.judge
    else:
        config_id, configuration = item.plan.config_id, item.plan.configuration

    def make() -> Provider:
        spec = ProviderSpec(
            config_id,
            configuration,
            work.suite.path.parent,
            work.config_dir,
            state.renderer,
            state.lock_dir,
            parsers=state.extensions.parsers,
        )
        provider: Provider = item.config.hook.pytest_vibeeval_make_provider(spec=spec)
        return _answering(state, config_id, configuration, provider)

    return state.providers.get(PoolKey(item.plan.source_path, config_id, role), make)


def agent_provider(item: EvalItem) -> CliProvider:
    """The pooled CLI provider that runs the item's coding agent (with the process limit)."""
    state = get_state(item.config)
    work, configuration = item.workspace_work, item.plan.configuration
    assert work is not None and configuration is not None

    def make() -> Provider:
        note_coding_eval(_cache(state), item.plan.config_id)
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


JudgeProvider = tuple[str, Provider]  # the judge configuration's id and its provider

PROMPT_FIXTURES = ("vibe_provider", "vibe_workdir")
"""The fixtures a prompt-eval body takes; where a conftest overrides neither, the body takes none."""


def run_prompt_item(request: pytest.FixtureRequest, vibe_provider: Provider, vibe_workdir: Path) -> None:
    """The body of a prompt-eval item for which a conftest overrides ``vibe_provider`` or
    ``vibe_workdir``."""
    item = eval_item(request, "run_prompt_item")
    start_or_skip(get_state(item.config))
    _run_prompt(item, vibe_provider, _judge(item), vibe_workdir)


def run_prompt_item_direct(item: EvalItem) -> None:
    """The body of every other prompt-eval item: the same, with the fixtures' values made here.
    pytest's fixture machinery costs more than a short eval's own work, and the item's folder is
    made only where something may use it (its agent, its judge's, a custom check)."""
    start_or_skip(get_state(item.config))
    provider, judge = provider_for(item), _judge(item)
    needed = any_uses_workdir(_prompt_work(item).case.checks) or any(
        uses_workdir(answering) for answering in (provider, judge[1] if judge else None) if answering
    )
    _run_prompt(item, provider, judge, item_workdir(item, create=needed))


def item_workdir(item: pytest.Item, create: bool = True) -> Path:
    """A fresh folder for ``item``'s files (only reserved, not made, unless ``create``)."""
    factory = tmp_path_factory(item.config)
    return get_state(item.config).workdirs.new(lambda: factory.mktemp("vibeeval"), item.name, create)


def _judge(item: EvalItem) -> JudgeProvider | None:
    work = _prompt_work(item)
    return (work.judge[0], provider_for(item, "judge")) if work.judge is not None else None


def _run_prompt(
    item: EvalItem, provider: Provider, judge: tuple[str, Provider] | None, workdir: Path
) -> None:
    work = _prompt_work(item)
    state = get_state(item.config)
    state.renderer.note_environment()  # a fixture (a server it started) may have exported a secret
    record, verdict = run_prompt_eval(
        work.suite,
        work.case,
        item.plan.config_id,
        provider,
        state.renderer.with_row(work.case.row),  # a dataset row fills {{row.column}}
        workdir,
        item.nodeid,
        item.plan.configuration,
        judge,
        item.plan.info.repeat,
        item.vibe_phases.enter,
    )
    redact = state.renderer.redactor()
    record = assess(record, item.plan.configuration, workdir, work.case.rubric, False, redact)
    finish(item, record, verdict)


def run_workspace_item(
    request: pytest.FixtureRequest,
    vibe_workdir: Path,
    vibe_workspace: Path,
    vibe_commands: RegistryCommands,
) -> None:
    """The body of every coding-agent item."""
    item = eval_item(request, "run_workspace_item", coding=True)
    work, configuration = item.workspace_work, item.plan.configuration
    assert work is not None and configuration is not None
    state = get_state(item.config)
    start_or_skip(state)
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
    record = record.model_copy(update={"repeat": item.plan.info.repeat})
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


def session_sandbox(state: VibeState) -> Sandbox:
    """The sandbox agents run in, chosen once per process (the probe runs a bwrap command)."""
    if state.sandbox is None:
        options = state.settings
        state.sandbox = choose_sandbox(options.sandbox_mode, options.sandbox_writable)
    return state.sandbox
