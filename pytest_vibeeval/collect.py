"""The two kinds of eval file become collectors: a YAML suite (:class:`SuiteCollector`) and a
unified-runner config folder's ``eval-config.json`` (:class:`EvalConfigCollector`). Both read their
file, make :class:`~pytest_vibeeval.plan.EvalPlan`s and turn them into the one item class, so
fixtures, markers, ``-k`` and xdist behave as for any test."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from .errors import InputError
from .execute import PROMPT_FIXTURES, run_prompt_item, run_prompt_item_direct
from .items import EvalItem, get_state, loadgroup_name, rootdir_relative
from .loading.configurations import CLI_CONFIG_NAME, REGISTRY_NAME, configurations_for, select
from .loading.suite import check_formula, load_suite, suite_formula, with_mcp_urls
from .models import ScoreSpec
from .plan import EvalPlan, PromptWork, check_cli_configurations, runner_plans, selected_evals, suite_plans
from .providers.python_callable import module_name_clash
from .pytest_private import overridden_fixtures, shared_fixtureinfo

if TYPE_CHECKING:
    from _pytest._code.code import TerminalRepr

    from .state import VibeState


def make_items(collector: pytest.File, plans: Sequence[EvalPlan]) -> Iterator[EvalItem]:
    """One item per plan; items of one kind share their body and fixture closure."""
    bodies: dict[bool, tuple[Callable[..., None], Any]] = {}
    narrow = sys.getfilesystemencoding().lower().replace("-", "") != "utf8"
    for plan in plans:
        prompt = isinstance(plan.work, PromptWork)
        if prompt not in bodies:
            bodies[prompt] = _body(collector, prompt)
        body, fixtureinfo = bodies[prompt]
        item = EvalItem.from_parent(
            collector, name=plan.name, callobj=body, fixtureinfo=fixtureinfo, plan=plan
        )
        if narrow:
            _check_environment_holds(collector, item.nodeid)
        yield item


def _check_environment_holds(collector: pytest.File, nodeid: str) -> None:
    """pytest puts each item's node id in the environment (``PYTEST_CURRENT_TEST``), which this
    Python encodes in its file system encoding: in the C locale without Python's UTF-8 mode that is
    ASCII, and a row id such as ``café`` would error every phase of its item in pytest's code."""
    try:
        os.fsencode(nodeid)
    except UnicodeEncodeError as exc:
        shown = nodeid.encode("ascii", "backslashreplace").decode()  # this terminal shows no more
        message = (
            f"the item {shown} cannot run in this Python: pytest puts each item's node id in the "
            f"environment, which it encodes as {sys.getfilesystemencoding()} (the C or POSIX locale "
            f"without Python's UTF-8 mode), and {exc.object[exc.start]!a} is not in it"
        )
        hint = "run pytest with PYTHONUTF8=1, or in a UTF-8 locale (LC_ALL=C.UTF-8)"
        error = InputError.single(collector.path, message, hint=hint)
        raise collector.CollectError(error.render(collector.config.rootpath)) from None


FIXTURES_MODULE = f"{__package__}.fixtures"  # named, not imported: pytest imports it as a plugin


def _body(collector: pytest.File, prompt: bool) -> tuple[Callable[..., None], Any]:
    """The body of the file's items of one kind and its fixture closure. A prompt eval's body
    takes no fixtures (the item calls it, see ``itemhooks.pytest_pyfunc_call``) unless a conftest
    overrides one it would take."""
    if not prompt:
        from .coding_items import run_workspace_item  # the agent and workspace machinery: when used

        return run_workspace_item, shared_fixtureinfo(collector, run_workspace_item)
    fixtureinfo = shared_fixtureinfo(collector, run_prompt_item)
    if overridden_fixtures(fixtureinfo, PROMPT_FIXTURES, FIXTURES_MODULE):
        return run_prompt_item, fixtureinfo
    return run_prompt_item_direct, shared_fixtureinfo(collector, _takes_no_fixtures)


def _takes_no_fixtures() -> None:
    """Stands for the direct prompt body when pytest computes its fixture closure (autouse only)."""


class _EvalFile(pytest.File):
    """An eval file whose collection error shows with its secrets masked: a placeholder such as
    ``${MYAPP_API_KEY}`` in a path puts its value in the message."""

    def repr_failure(  # type: ignore[override]  # as pytest.Collector's own
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> str | TerminalRepr:
        shown = super().repr_failure(excinfo)
        state = get_state(self.config)
        state.renderer.note_environment()  # a conftest may have exported one since the last look
        text = str(shown)
        masked = state.renderer.redactor()(text)
        return shown if masked == text or masked is None else masked


def not_run(state: VibeState, listed: Iterable[str], selected: Iterable[str], source: str) -> None:
    """Note the configurations the suite ``source`` lists but does not run: its recordings in their
    folders may be used by a session that runs them, so none of them is told obsolete."""
    for config_id in set(listed).difference(selected):
        state.configs_not_run.setdefault(config_id, set()).add(source)


class SuiteCollector(_EvalFile):
    """A YAML suite: one item per eval × selected configuration."""

    def collect(self) -> Iterator[pytest.Item]:
        state = get_state(self.config)
        rootpath = self.config.rootpath
        try:
            loaded = load_suite(self.path, state.extensions, state.parses)
            suite = with_mcp_urls(loaded, dict(state.settings.mcp_urls))
            formula = suite_formula(suite, state.extensions)
            configs = configurations_for(suite, rootpath, state.config_files)
        except InputError as exc:
            raise self.CollectError(exc.render(rootpath)) from None
        config_ids = select(configs.ids(), configs.defaults, state.settings.configs)
        not_run(state, configs.ids(), config_ids, rootdir_relative(self.path, rootpath))
        state.suites_collected += 1
        state.known_configs.update(configs.ids())
        state.known_evals.update(case.eval_name or case.id for case in suite.evals)
        for tag in {*suite.tags, *(t for case in suite.evals for t in case.tags)} - state.registered_tags:
            self.config.addinivalue_line("markers", f"{tag}: a pytest-vibeeval suite tag")
            state.registered_tags.add(tag)
        try:
            plans = suite_plans(
                suite,
                configs,
                formula,
                config_ids,
                selected_evals(suite, state.settings.evals),
                source=rootdir_relative(self.path, rootpath),
                variables=state.renderer.values.variables(),
                repeats=state.settings.repeats,
                group_of=lambda configuration, cid: loadgroup_name(self.config, configuration, cid),
            )
        except InputError as exc:
            raise self.CollectError(exc.render(rootpath)) from None
        # --vibe-replay answers from its store: a machine without the application replays too
        for config_id in config_ids if state.settings.replay is None else ():
            python = configs.configurations[config_id].python if config_id in configs.configurations else None
            clash = module_name_clash(state.python_modules, python, self.path.parent) if python else None
            if clash:
                source, line = configs.where(config_id)
                message = f"configuration {config_id!r}: {clash}"
                error = InputError.single(source or self.path, message, line=line)
                raise self.CollectError(error.render(rootpath))
        yield from make_items(self, plans)


class EvalConfigCollector(_EvalFile):
    """``eval-config.json``: the unified-runner config folder it lives in, one item per evaluation ×
    selected configuration."""

    def collect(self) -> Iterator[pytest.Item]:
        from .loading.runner_config import load_config_dir  # its models: only for such a folder

        state = get_state(self.config)
        rootpath = self.config.rootpath
        folder = self.path.parent
        try:
            runner = load_config_dir(folder, os.environ, state.extensions)
            score = runner.score or ScoreSpec()
            check_cli_configurations(folder / CLI_CONFIG_NAME, dict(runner.configurations))
            formula = check_formula(
                self.path, score.formula, runner.score_line, runner.evaluations, extensions=state.extensions
            )
        except InputError as exc:
            raise self.CollectError(exc.render(rootpath)) from None
        state.suites_collected += 1
        state.known_configs.update(runner.configurations)
        state.known_evals.update(runner.evaluations)
        listed = list(runner.configurations)
        config_ids = select(listed, runner.default_configurations, state.settings.configs)
        not_run(state, listed, config_ids, rootdir_relative(self.path, rootpath))
        plans = runner_plans(
            self.path,
            runner,
            formula,
            config_ids,
            select(list(runner.evaluations), None, state.settings.evals),
            suite=rootdir_relative(folder, rootpath),  # unique, unlike the folder's name "config"
            source=rootdir_relative(self.path, rootpath),
            files=[self.path, folder / CLI_CONFIG_NAME, folder / REGISTRY_NAME],
            variables=state.renderer.values.variables(),
            repeats=state.settings.repeats,
            group_of=lambda configuration, cid: loadgroup_name(self.config, configuration, cid),
        )
        yield from make_items(self, plans)
