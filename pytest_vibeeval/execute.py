"""The bodies of eval items: a prompt eval asks its provider and runs the checks; a coding-agent
eval runs its agent, build and grade steps in a workspace (:mod:`.coding_items`). Both end in
:func:`items.finish`.

The bodies take fixtures (``vibe_provider``; ``vibe_workspace``, ``vibe_commands``), so a conftest
can override how an item gets its provider or workspace. Providers come from the session's
:class:`ProviderPool`, one per file × configuration × role."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .answering import JudgeSource
from .checks import any_uses_workdir
from .items import EvalItem, finish, get_state, start_or_skip
from .models import Configuration
from .plan import PromptWork
from .providers import Provider, ProviderSpec
from .providers.base import uses_workdir
from .providers.pool import PoolKey, Role
from .pytest_private import tmp_path_factory
from .results import EvalRecord
from .runner import run_prompt_eval
from .scoring.assess import assess
from .state import VibeState

if TYPE_CHECKING:
    from .cache import ResponseCache  # the cache and the record stores: imported when an option asks
    from .workspace.sandbox import Sandbox


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
    --vibe-record/--vibe-replay (a cached answer is recorded too); ``provider`` itself without
    them, whose machinery is then not imported."""
    settings = state.settings
    if settings.cache is None and settings.record is None and settings.replay is None:
        return provider
    from .cache import with_cache
    from .recording import recorded

    model = configuration.model if configuration is not None else None
    cached = with_cache(provider, response_cache(state), config_id, model)
    redact = state.renderer.redactor()
    return recorded(
        cached, config_id, model, settings.record, settings.replay, redact, provider, state.recordings_used
    )


def response_cache(state: VibeState) -> ResponseCache | None:
    settings = state.settings
    if settings.cache is None:
        return None
    from .cache import session_cache

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


PROMPT_FIXTURES = ("vibe_provider", "vibe_workdir")
"""The fixtures a prompt-eval body takes; where a conftest overrides neither, the body takes none."""


def run_prompt_item(request: pytest.FixtureRequest, vibe_provider: Provider, vibe_workdir: Path) -> None:
    """The body of a prompt-eval item for which a conftest overrides ``vibe_provider`` or
    ``vibe_workdir``."""
    item = eval_item(request, "run_prompt_item")
    start_or_skip(item)
    _run_prompt(item, vibe_provider, _judge(item), vibe_workdir)


def run_prompt_item_direct(item: EvalItem) -> None:
    """The body of every other prompt-eval item: the same, with the fixtures' values made here.
    pytest's fixture machinery costs more than a short eval's own work, and the item's folder is
    made only where something may use it (its agent, its judge's, a custom check)."""
    start_or_skip(item)
    provider, judge = provider_for(item), _judge(item)
    needed = any_uses_workdir(_prompt_work(item).case.checks) or any(
        uses_workdir(answering) for answering in (provider, judge.provider if judge else None) if answering
    )
    _run_prompt(item, provider, judge, item_workdir(item, create=needed))


def item_workdir(item: pytest.Item, create: bool = True) -> Path:
    """A fresh folder for ``item``'s files (only reserved, not made, unless ``create``)."""
    factory = tmp_path_factory(item.config)
    return get_state(item.config).workdirs.new(lambda: factory.mktemp("vibeeval"), item.name, create)


def _judge(item: EvalItem) -> JudgeSource | None:
    work = _prompt_work(item)
    if work.judge is None:
        return None
    config_id, configuration = work.judge
    spend = get_state(item.config).budget.add  # --vibe-max-cost counts what judges cost too
    return JudgeSource(config_id, configuration, provider_for(item, "judge"), spend)


def _run_prompt(item: EvalItem, provider: Provider, judge: JudgeSource | None, workdir: Path) -> None:
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
        item.vibe_progress,
    )
    item.vibe_progress.so_far = functools.partial(_stopped_after, record)
    redact = state.renderer.redactor()
    record = assess(record, item.plan.configuration, workdir, work.case.rubric, False, redact)
    finish(item, record, verdict)


def _stopped_after(record: EvalRecord, message: str) -> EvalRecord:
    """The record of an eval stopped after it was answered and checked (in its assessment)."""
    return record.model_copy(update={"outcome": "error", "message": message})


def session_sandbox(state: VibeState) -> Sandbox:
    """The sandbox agents run in, chosen once per process (the probe runs a bwrap command)."""
    if state.sandbox is None:
        from .workspace.sandbox import choose_sandbox  # coding agents' only: not for prompt evals

        options = state.settings
        state.sandbox = choose_sandbox(options.sandbox_mode, options.sandbox_writable)
    return state.sandbox
