"""Suite files become collectors; each eval × selected configuration becomes a ``pytest.Function``
(so fixtures, markers, ``-k`` and xdist behave as for any test)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RESULT_PROPERTY, RunInfo
from .assess import assess
from .checks import AnyOf, CheckNode
from .configurations import IMPLICIT_ID, ConfigurationSet, configurations_for, select
from .errors import InputError, did_you_mean
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
from .models import DEFAULT_TIMEOUT_MS, Configuration
from .providers import Provider, make_provider
from .providers.python_callable import module_name_clash
from .recording import recorded
from .resume import files_digest, input_digest
from .runner import run_prompt_eval
from .runner_config import RunnerConfig, resolve_suite_coding
from .state import VibeState
from .suite import EvalCase, Suite, load_suite, suite_formula
from .templates import Redactor
from .workspace_collect import WorkspaceItem, check_cli_configurations, run_workspace_item


class SuiteFile(pytest.File):
    """A YAML suite: one item per eval × selected configuration."""

    def collect(self) -> Iterator[pytest.Item]:
        state = get_state(self.config)
        try:
            suite = load_suite(self.path, state.registry)
            formula = suite_formula(suite)
            configs = configurations_for(suite, self.config.rootpath, state.config_files)
        except InputError as exc:
            raise self.CollectError(exc.render(self.config.rootpath)) from None
        config_ids = select(configs.ids(), configs.defaults, state.options.configs)
        for config_id in config_ids:
            python = configs.configurations[config_id].python if config_id in configs.configurations else None
            clash = module_name_clash(state.python_modules, python, self.path.parent) if python else None
            if clash:
                raise self.CollectError(
                    InputError.single(self.path, f"configuration {config_id!r}: {clash}").render(
                        self.config.rootpath
                    )
                )
        state.suites_collected += 1
        state.known_configs.update(configs.ids())
        state.known_evals.update(case.id for case in suite.evals)
        eval_ids = select([c.id for c in suite.evals], None, state.options.evals)
        source = rootdir_relative(self.path, self.config.rootpath)
        for tag in {*suite.tags, *(t for case in suite.evals for t in case.tags)} - state.registered_tags:
            self.config.addinivalue_line("markers", f"{tag}: a pytest-vibeeval suite tag")
            state.registered_tags.add(tag)
        config_dir = configs.source.parent if configs.source else self.path.parent
        judge = None
        if uses_judge(suite):
            if suite.judge is not None and suite.judge not in configs.configurations:
                message = f"judge: configuration {suite.judge!r} is not defined" + did_you_mean(
                    suite.judge, configs.configurations
                )
                error = InputError.single(self.path, message, line=suite.judge_line)
                raise self.CollectError(error.render(self.config.rootpath))
            judge = (suite.judge or IMPLICIT_ID, configs.configurations.get(suite.judge or ""))
        coding: RunnerConfig | None = None
        if any(case.coding for case in suite.evals):
            try:
                coding = coding_runner(suite, configs, config_dir, config_ids)
            except InputError as exc:
                raise self.CollectError(exc.render(self.config.rootpath)) from None
        files = files_digest([self.path, *([configs.source] if configs.source else [])])
        variables = state.renderer.values.variables()
        digests = {cid: input_digest(files, configs.configurations.get(cid), variables) for cid in config_ids}
        fixtureinfo = shared_fixtureinfo(self, run_eval_item)
        coding_fixtureinfo = shared_fixtureinfo(self, run_workspace_item) if coding else None
        for case in suite.evals:
            if case.id not in eval_ids:
                continue
            for config_id in config_ids:
                configuration = configs.configurations.get(config_id)
                info = RunInfo(
                    suite=suite.name,
                    source=source,
                    configuration=config_id,
                    configuration_name=configuration.name if configuration else None,
                    score_formula=suite.formula,
                    eval_id=case.id,
                    named=case.name is not None,
                    suite_evals=len(suite.evals),
                    eval_index=case.index,
                    score_min=suite.score_min,
                    score_max=suite.score_max,
                    score_canonical=formula.canonical or None,
                    score_preset=formula.preset,
                    min_pass_rate=case.min_pass_rate,
                    input_digest=digests[config_id],
                )
                for name, repeat_info in repeated(
                    info, state.options.repeats, loadgroup_name(self.config, configuration, config_id)
                ):
                    if coding is not None and case.coding is not None:
                        yield WorkspaceItem.from_parent(
                            self,
                            name=name,
                            callobj=run_workspace_item,
                            fixtureinfo=coding_fixtureinfo,
                            runner=coding,
                            evaluation=coding.evaluations[case.id],
                            config_id=config_id,
                            configuration=coding.configurations[config_id],
                            info=repeat_info,
                            tags=(*suite.tags, *case.tags),
                            xfail=case.xfail,
                            line=case.line,
                        )
                        continue
                    yield EvalItem.from_parent(
                        self,
                        name=name,
                        callobj=run_eval_item,
                        fixtureinfo=fixtureinfo,
                        suite=suite,
                        case=case,
                        config_id=config_id,
                        configuration=configuration,
                        config_dir=config_dir,
                        info=repeat_info,
                        judge=judge,
                    )


def coding_runner(
    suite: Suite, configs: ConfigurationSet, config_dir: Path, config_ids: list[str]
) -> RunnerConfig:
    """The coding-agent evals of a YAML suite as a unified-runner config (both formats share the
    run); every selected configuration must be a ``cli`` one."""
    resolved = resolve_suite_coding(suite, config_dir, os.environ)
    check_cli_configurations(
        configs.source or suite.path, {cid: configs.configurations.get(cid) for cid in config_ids}
    )
    return RunnerConfig(
        folder=config_dir,
        eval_root=resolved.eval_root,
        evaluations=resolved.evaluations,
        configurations=dict(configs.configurations),
        default_configurations=configs.defaults,
        registry=resolved.registry,
        shared_instructions=resolved.shared_instructions,
    )


class EvalItem(ReusableItem):
    """One eval against one configuration."""

    def __init__(
        self,
        *,
        suite: Suite,
        case: EvalCase,
        config_id: str,
        configuration: Configuration | None,
        config_dir: Path,
        info: RunInfo,
        judge: tuple[str, Configuration | None] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.suite, self.case, self.config_id = suite, case, config_id
        self.judge = judge  # the llm_judge configuration (None: the suite has no llm_judge check)
        self.configuration, self.config_dir, self.info = configuration, config_dir, info
        timeout = configuration.timeout_s if configuration else DEFAULT_TIMEOUT_MS / 1000
        self.expected_failure = case.xfail or (configuration.xfail if configuration else None)
        group = configuration.group_name(config_id) if configuration else None
        keywords, tags = (case.id, config_id), (*suite.tags, *case.tags)
        mark_item(self, keywords, tags, timeout, info, self.expected_failure, group)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.case.line - 1 if self.case.line else None
        return self.path, line, self.name


def run_eval_item(request: pytest.FixtureRequest, vibe_provider: Provider, vibe_workdir: Path) -> None:
    """The body of every prompt-eval item."""
    item = request.node
    assert isinstance(item, EvalItem)
    state = get_state(item.config)
    start_or_skip(state)
    record, verdict = run_prompt_eval(
        item.suite,
        item.case,
        item.config_id,
        vibe_provider,
        state.renderer,
        vibe_workdir,
        item.nodeid,
        item.configuration,
        judge_for(item),
        item.info.repeat,
        phases.enter if (phases := phases_of(item)) else None,
    )
    redact = Redactor(state.renderer.used_secrets)
    record = assess(record, item.configuration, vibe_workdir, item.case.rubric, False, redact)
    state.budget.add(record.cost)
    if item.expected_failure and not record.xfail:  # the configuration's xfail
        record = record.model_copy(update={"xfail": True})
    item.user_properties.append((RESULT_PROPERTY, record.model_dump_json()))
    if verdict.outcome == "skipped":
        skip = pytest.skip.Exception(verdict.message or "skipped")
        # Report the eval's line in the suite (as skip marks do), not this line of the plugin.
        skip._use_item_location = item.case.line is not None
        raise skip
    if verdict.outcome != "passed":
        pytest.fail(verdict.message or verdict.outcome, pytrace=False)


def provider_for(item: EvalItem) -> Provider:
    """The (cached) provider that answers this item's configuration."""
    state = get_state(item.config)
    key = (item.suite.path, item.config_id)
    if key not in state.providers:
        provider = make_provider(
            item.config_id,
            item.configuration,
            item.suite.path.parent,
            item.config_dir,
            state.renderer,
            state.lock_dir,
        )
        state.providers[key] = _recorded(provider, item.config_id, item.configuration, state)
    return state.providers[key]


def _recorded(
    provider: Provider, config_id: str, configuration: Configuration | None, state: VibeState
) -> Provider:
    options = state.options
    model = configuration.model if configuration is not None else None
    return recorded(
        provider, config_id, model, options.record, options.replay, Redactor(state.renderer.used_secrets)
    )


def uses_judge(suite: Suite) -> bool:
    """Whether any eval of ``suite`` has an llm_judge check (inside ``or`` too)."""

    def walk(nodes: tuple[CheckNode, ...]) -> bool:
        return any(walk(n.children) if isinstance(n, AnyOf) else n.type.name == "llm_judge" for n in nodes)

    return any(walk(case.checks) for case in suite.evals)


def judge_for(item: EvalItem) -> tuple[str, Provider] | None:
    """The (cached) provider of the item's judge configuration, with its id."""
    if item.judge is None:
        return None
    judge_id, configuration = item.judge
    state = get_state(item.config)
    key = (item.suite.path, f"judge:{judge_id}")
    if key not in state.providers:
        provider = make_provider(
            judge_id, configuration, item.suite.path.parent, item.config_dir, state.renderer, state.lock_dir
        )
        state.providers[key] = _recorded(provider, judge_id, configuration, state)
    return judge_id, state.providers[key]
