"""One item pipeline: YAML suites and unified-runner config folders both become :class:`EvalPlan`s
(eval × configuration × repeat), from which the collectors make items. The run info every report
carries is built here, in one function, for both."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from .checks import AnyOf, Check, CheckNode
from .errors import InputError, did_you_mean
from .limits import answer_limit_s, limit_of_answers
from .loading.configurations import ALL, IMPLICIT_ID, ConfigurationSet
from .loading.suite import EvalCase, Suite
from .models import Configuration, ScoreSpec
from .resume import files_digest, input_digests
from .scoring.formula import Formula, one_line
from .transport import RunInfo

if TYPE_CHECKING:  # eval-config.json's models: imported where a coding eval is planned
    from .loading.runner_config import ResolvedEval, RunnerConfig

GroupOf = Callable[[Configuration | None, str], str | None]
"""The xdist group an item's name ends in (``@group``) for a configuration, or None."""


@dataclass(frozen=True)
class PromptWork:
    """A prompt eval: ask the configuration, run the checks."""

    suite: Suite
    case: EvalCase
    config_dir: Path  # the folder of the file that defines the configuration
    judge: tuple[str, Configuration | None] | None  # the llm_judge configuration (None: no judge)


@dataclass(frozen=True)
class WorkspaceWork:
    """A coding-agent eval: copy the workspace, run the agent, then the build and grade steps."""

    runner: RunnerConfig
    evaluation: ResolvedEval


@dataclass(frozen=True)
class EvalPlan:
    """Everything one item needs, decided at collection."""

    name: str  # the item's name: eval[configuration], with -rN and @group where they apply
    info: RunInfo
    source_path: Path  # the file the eval is defined in (the provider pool's key)
    config_id: str
    configuration: Configuration | None  # None: the implicit HTTP configuration
    work: PromptWork | WorkspaceWork
    tags: tuple[str, ...]  # suite and eval tags: markers
    expected_failure: str | None  # the eval's or the configuration's xfail reason
    line: int | None  # of the eval in its file
    timeout_s: float  # the most the item's own limits allow it (the backstop adds a margin)
    # --vibe-resume: the digest results files of earlier versions have for ``info.input_digest``
    earlier_digest: str | None = None

    @property
    def keywords(self) -> tuple[str, str]:
        """What ``-k`` matches besides the name: the eval and the configuration."""
        return (self.info.eval_id, self.config_id)

    @property
    def group(self) -> str | None:
        """The configuration's xdist group (its items run on one worker, in turn)."""
        return self.configuration.group_name(self.config_id) if self.configuration else None


def run_infos(
    suite: str,
    source: str,
    selected: Mapping[str, Configuration | None],
    formula: Formula,
    score: ScoreSpec,
    suite_evals: int,
    digests: Mapping[str, tuple[str, str]],
) -> dict[str, Callable[..., RunInfo]]:
    """What makes the run info of each eval × configuration, whichever file it came from, for each
    selected configuration: the fields of the run bound once, each eval's (``eval_id``, ``named``,
    ``eval_index``, ``min_pass_rate``) given per call. Binding them per eval was a quarter of
    planning one."""
    return {
        config_id: functools.partial(
            RunInfo,
            suite=suite,
            source=source,
            configuration=config_id,
            configuration_name=configuration.name if configuration else None,
            score_formula=one_line(score.formula),
            suite_evals=suite_evals,
            score_min=score.min,
            score_max=score.max,
            score_canonical=formula.canonical or None,
            score_preset=formula.preset,
            input_digest=digests[config_id][0],
        )
        for config_id, configuration in selected.items()
    }


def repeated(info: RunInfo, repeats: int, group: str | None = None) -> list[tuple[str, RunInfo]]:
    """The items of one eval × configuration: one, or with ``--vibe-repeat N`` N items whose ids
    carry the repeat (``eval[config-r2]``), each its own run of the eval. ``group``: the
    configuration's xdist group under ``--dist loadgroup``, which the ids end in (``@group``)."""
    suffix = f"@{group}" if group else ""
    if repeats <= 1:
        return [(f"{info.eval_id}[{info.configuration}]{suffix}", info)]
    return [
        (f"{info.eval_id}[{info.configuration}-r{n}]{suffix}", replace(info, repeat=n, repeats=repeats))
        for n in range(1, repeats + 1)
    ]


def _digests(
    files: list[Path], configurations: Mapping[str, Configuration | None], variables: Mapping[str, str]
) -> dict[str, tuple[str, str]]:
    """The --vibe-resume input digests of each configuration: the files and its settings (and
    those earlier versions wrote)."""
    content = files_digest(files)
    return {
        cid: input_digests(content, configuration, variables) for cid, configuration in configurations.items()
    }


def suite_plans(
    suite: Suite,
    configs: ConfigurationSet,
    formula: Formula,
    config_ids: list[str],
    eval_ids: list[str],
    *,
    source: str,
    variables: Mapping[str, str],
    repeats: int,
    group_of: GroupOf,
) -> list[EvalPlan]:
    """The plans of a YAML suite: its selected evals × selected configurations × repeats; raises
    :class:`InputError` for a judge or coding-agent setup that cannot run."""
    config_dir = configs.source.parent if configs.source else suite.path.parent
    judge = None
    if uses_judge(suite):
        if suite.judge is not None and suite.judge not in configs.configurations:
            message = f"judge: configuration {suite.judge!r} is not defined" + did_you_mean(
                suite.judge, configs.configurations
            )
            raise InputError.single(suite.path, message, line=suite.judge_line)
        judge = (suite.judge or IMPLICIT_ID, configs.configurations.get(suite.judge or ""))
        pinned = judge[1].model if judge[1] is not None else None
        if pinned and uses_judge(suite, several=True):
            raise InputError.single(
                suite.path,
                f"judge: configuration {judge[0]!r} sets `model: {pinned}`, which would answer for "
                "every model an llm_judge check lists in `judges:`",
                line=suite.judge_line,
                hint="leave `model` unset on the judge configuration: each check's `judges:` names "
                "its models",
            )
    coding = None
    if any(case.coding for case in suite.evals):
        coding = coding_runner(suite, configs, config_dir, config_ids)
    selected = {cid: configs.configurations.get(cid) for cid in config_ids}
    files = [suite.path, *suite.datasets, *([configs.source] if configs.source else [])]
    digests = _digests(files, selected, variables)
    score = ScoreSpec(formula=suite.formula, min=suite.score_min, max=suite.score_max)
    groups = {cid: group_of(configuration, cid) for cid, configuration in selected.items()}
    # what the items of a configuration share: the most one answer (and one judge call) may take
    mcp = suite.mcp_server is not None
    answer_s = {cid: answer_limit_s(configuration, mcp) for cid, configuration in selected.items()}
    judge_s = answer_limit_s(judge[1] if judge is not None else None)
    wanted = set(eval_ids)
    infos = run_infos(suite.name, source, selected, formula, score, len(suite.evals), digests)
    plans: list[EvalPlan] = []
    for position, case in enumerate(suite.evals):  # a dataset eval's rows are evals of their own
        if case.id not in wanted:
            continue
        # what a prompt eval asks is the same under every configuration: one for all of them
        prompt = PromptWork(suite, case, config_dir, judge) if coding is None or case.coding is None else None
        for config_id, configuration in selected.items():
            info = infos[config_id](
                eval_id=case.id,
                named=case.name is not None,
                eval_index=position,
                min_pass_rate=case.min_pass_rate,
            )
            work: PromptWork | WorkspaceWork
            if prompt is None:
                assert coding is not None  # a coding eval of a suite with coding evals
                cli = coding.configurations[config_id]
                work = WorkspaceWork(coding, coding.evaluations[case.id])
                timeout = _workspace_timeout(coding, work.evaluation, cli)
            else:
                work = prompt
                timeout = limit_of_answers(len(case.turns), case.checks, answer_s[config_id], judge_s)
            named = repeated(info, repeats, groups[config_id])
            plan = EvalPlan(
                name=named[0][0],
                info=named[0][1],
                source_path=suite.path,
                config_id=config_id,
                configuration=configuration,
                work=work,
                tags=(*suite.tags, *case.tags),
                expected_failure=case.xfail or (configuration.xfail if configuration else None),
                line=case.line,
                timeout_s=timeout,
                earlier_digest=digests[config_id][1],
            )
            plans.extend(_with_repeats(plan, named))
    return plans


def selected_evals(suite: Suite, requested: Sequence[str] | None) -> list[str]:
    """The ids of the evals ``--vibe-eval`` selects (None: all): a dataset eval's name selects
    every row (``-k`` selects single rows)."""
    ids = [case.id for case in suite.evals]
    if requested is None or ALL in requested:
        return ids
    wanted = set(requested)
    return [case.id for case in suite.evals if (case.eval_name or case.id) in wanted]


def runner_plans(
    path: Path,
    runner: RunnerConfig,
    formula: Formula,
    config_ids: list[str],
    eval_ids: list[str],
    *,
    suite: str,
    source: str,
    files: list[Path],
    variables: Mapping[str, str],
    repeats: int,
    group_of: GroupOf,
) -> list[EvalPlan]:
    """The plans of a unified-runner config folder (``path``: its eval-config.json)."""
    selected = {cid: runner.configurations[cid] for cid in config_ids}
    digests = _digests(files, selected, variables)
    score = runner.score or ScoreSpec()
    groups = {cid: group_of(configuration, cid) for cid, configuration in selected.items()}
    wanted = set(eval_ids)
    infos = run_infos(suite, source, selected, formula, score, len(runner.evaluations), digests)
    plans: list[EvalPlan] = []
    for index, (eval_id, evaluation) in enumerate(runner.evaluations.items()):
        if eval_id not in wanted:
            continue
        for config_id, configuration in selected.items():
            info = infos[config_id](
                eval_id=eval_id, named=True, eval_index=index, min_pass_rate=evaluation.min_pass_rate
            )
            named = repeated(info, repeats, groups[config_id])
            plan = EvalPlan(
                name=named[0][0],
                info=named[0][1],
                source_path=path,
                config_id=config_id,
                configuration=configuration,
                work=WorkspaceWork(runner, evaluation),
                tags=(),
                expected_failure=configuration.xfail,
                line=None,
                timeout_s=_workspace_timeout(runner, evaluation, configuration),
                earlier_digest=digests[config_id][1],
            )
            plans.extend(_with_repeats(plan, named))
    return plans


def _with_repeats(first: EvalPlan, named: list[tuple[str, RunInfo]]) -> list[EvalPlan]:
    """``first`` (made with ``named[0]``) and a copy for each further repeat (see :func:`repeated`);
    a plan that runs once is not copied (the copy was about 5 % of collecting a prompt eval)."""
    return [first, *(replace(first, name=name, info=info) for name, info in named[1:])]


def _workspace_timeout(runner: RunnerConfig, evaluation: ResolvedEval, configuration: Configuration) -> float:
    """A coding item's own timeouts: the agent's and every build and grade step's."""
    steps = (*evaluation.build_steps, *evaluation.grade_steps)
    return configuration.timeout_s + sum(runner.registry[name].timeout_s for name in steps)


def coding_runner(
    suite: Suite, configs: ConfigurationSet, config_dir: Path, config_ids: list[str]
) -> RunnerConfig:
    """The coding-agent evals of a YAML suite as a unified-runner config (both formats share the
    run); every selected configuration must be a ``cli`` one."""
    from .loading.runner_config import RunnerConfig, resolve_suite_coding  # only for coding evals

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


def uses_judge(suite: Suite, several: bool = False) -> bool:
    """Whether any eval of ``suite`` has an llm_judge check (inside ``or`` too); ``several``: one
    that lists its ``judges``."""

    def judged(node: Check) -> bool:
        return node.type.name == "llm_judge" and (not several or bool(getattr(node.value, "judges", None)))

    def walk(nodes: tuple[CheckNode, ...]) -> bool:
        return any(walk(n.children) if isinstance(n, AnyOf) else judged(n) for n in nodes)

    return any(walk(case.checks) for case in suite.evals)
