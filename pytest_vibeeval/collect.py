"""Suite files become collectors; each eval × selected configuration becomes a ``pytest.Function``
(so fixtures, markers, ``-k`` and xdist behave as for any test)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .aggregate import RESULT_PROPERTY, RUN_PROPERTY, RunInfo
from .configurations import configurations_for, select
from .errors import InputError
from .models import DEFAULT_TIMEOUT_MS, Configuration
from .providers import Provider, make_provider
from .providers.python_callable import module_name_clash
from .runner import run_prompt_eval
from .state import VibeState
from .suite import EvalCase, Suite, load_suite, suite_formula

TIMEOUT_MARGIN_S = 30.0
STATE_KEY = pytest.StashKey[VibeState]()


def rootdir_relative(path: Path, rootdir: Path) -> str:
    """``path`` as the results and node ids show it: relative to the rootdir when inside it."""
    return path.relative_to(rootdir).as_posix() if path.is_relative_to(rootdir) else str(path)


def shared_fixtureinfo(collector: pytest.File, func: Callable[..., None]) -> Any:
    """The fixture closure of ``func`` for every item of ``collector``'s file.

    Items of one file share it, as pytest's own parametrized items do; computing it per item
    dominated collection time. The file node stands in for the items: the closure depends only
    on the node id (conftest visibility) and usefixtures marks."""
    fixturemanager = collector.session._fixturemanager
    return fixturemanager.getfixtureinfo(node=collector, func=func, cls=None)  # type: ignore[arg-type]


def get_state(config: pytest.Config) -> VibeState:
    return config.stash[STATE_KEY]


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
        fixtureinfo = shared_fixtureinfo(self, run_eval_item)
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
                )
                yield EvalItem.from_parent(
                    self,
                    name=f"{case.id}[{config_id}]",
                    callobj=run_eval_item,
                    fixtureinfo=fixtureinfo,
                    suite=suite,
                    case=case,
                    config_id=config_id,
                    configuration=configuration,
                    config_dir=configs.source.parent if configs.source else self.path.parent,
                    info=info,
                )


def mark_item(
    item: pytest.Function, keywords: tuple[str, ...], tags: tuple[str, ...], timeout_s: float, info: RunInfo
) -> None:
    """What every eval item carries: its ids as keywords, markers, the timeout backstop (the item's
    own timeouts plus a margin) and its :class:`RunInfo` on the reports."""
    item.extra_keyword_matches.update(keywords)
    item.add_marker(pytest.mark.vibeeval)
    for tag in tags:
        item.add_marker(getattr(pytest.mark, tag))
    item.add_marker(pytest.mark.timeout(timeout_s + TIMEOUT_MARGIN_S))
    item.user_properties.append((RUN_PROPERTY, json.dumps(vars(info))))


class EvalItem(pytest.Function):
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
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.suite, self.case, self.config_id = suite, case, config_id
        self.configuration, self.config_dir, self.info = configuration, config_dir, info
        timeout = configuration.timeout_s if configuration else DEFAULT_TIMEOUT_MS / 1000
        mark_item(self, (case.id, config_id), (*suite.tags, *case.tags), timeout, info)
        if case.xfail:
            self.add_marker(pytest.mark.xfail(reason=case.xfail, strict=True))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.case.line - 1 if self.case.line else None
        return self.path, line, f"{self.case.id}[{self.config_id}]"


def run_eval_item(request: pytest.FixtureRequest, vibe_provider: Provider, vibe_workdir: Path) -> None:
    """The body of every prompt-eval item."""
    item = request.node
    assert isinstance(item, EvalItem)
    state = get_state(item.config)
    record, verdict = run_prompt_eval(
        item.suite, item.case, item.config_id, vibe_provider, state.renderer, vibe_workdir, item.nodeid
    )
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
        state.providers[key] = make_provider(
            item.config_id, item.configuration, item.suite.path.parent, item.config_dir, state.renderer
        )
    return state.providers[key]
