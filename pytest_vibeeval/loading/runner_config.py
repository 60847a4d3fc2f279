"""The unified runner's config folder: ``eval-config.json``, ``cli-config.json``, ``command-registry.json``.

:func:`load_config_dir` reads the three files, substitutes ``${VAR}`` in paths and checks every
cross-reference (step names, folders, prompt files, default configurations). Each file's problems
are collected together, each with the file, the key and the line.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from ..bounded_read import UnreadableFile
from ..errors import InputError, Loc, Problem, did_you_mean
from ..extensions import Extensions, builtin_extensions
from ..models import (
    RUN_VARIABLES_CONTEXT,
    CliConfigFile,
    CodingFields,
    CommandDefinition,
    Configuration,
    RubricSpec,
    ScoreSpec,
    Vybes,
)
from ..models.eval_config import DEFAULT_PROMPTS_DIR, EvalConfigFile, WorkspaceEval, _check_eval_id
from ..pseudo_fs import pseudo_filesystem
from ..text_input import NotUtf8, read_input_text
from .command_registry import load_registry
from .configurations import CLI_CONFIG_NAME, EVAL_CONFIG_NAME, REGISTRY_NAME
from .eval_root import EVAL_ROOT, Layout, absolute, config_eval_root, from_environment, named_paths
from .substitution import SubstitutionError, substitute
from .suite import Suite, pydantic_problems
from .yamlsource import INPUT_HINT, MAX_INPUT_BYTES, Document, load_document

# The document's writePrompt reads `<evals>/../prompts/problems/<prompt>` and
# `<evals>/../prompts/shared/evaluation-instructions.md`, where <evals> is what ${EVAL_ROOT} stands for
# in its text and the folder holding `config/` in the runner as shipped: either is where they are.
DEFAULT_SHARED_INSTRUCTIONS = "${EVAL_ROOT}/../prompts/shared/evaluation-instructions.md"
PROMPTS_FROM_CONFIG = ("..", "..", "prompts")  # the runner's own spelling, from the config folder


@dataclass(frozen=True)
class ResolvedEval:
    """An evaluation with every path substituted, absolute and checked to exist."""

    id: str
    workspace: Path
    grading: Path
    prompt: str  # the problem prompt's text (from its file, or inline in a YAML suite)
    build_steps: tuple[str, ...]
    grade_steps: tuple[str, ...]
    vybes: Vybes | None
    requires: tuple[str, ...] = ()
    templated: bool = False  # a YAML suite's prompt: {{var()}} and {{secret()}} are filled in
    prompt_file: Path | None = None  # where the prompt was read from (None: inline in a YAML suite)
    rubric: RubricSpec = field(default_factory=RubricSpec)
    min_pass_rate: float | None = None


@dataclass(frozen=True)
class RunnerConfig:
    folder: Path
    eval_root: Path
    evaluations: dict[str, ResolvedEval]
    configurations: dict[str, Configuration]
    default_configurations: tuple[str, ...] | None
    registry: dict[str, CommandDefinition]
    shared_instructions: Path | None  # None: the default file is absent
    score: ScoreSpec | None = None
    score_line: int | None = None  # of score.formula in eval-config.json
    layout: Layout = "seed"  # where workspaces and grading copies go (see eval_root)


class ConfigDirError(InputError):
    """Problems in several files of one config folder; ``path``/``problems`` are the first file's."""

    def __init__(self, errors: list[InputError]) -> None:
        self.errors = errors
        super().__init__(errors[0].path, errors[0].problems)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.errors,))

    def render(self, root: Path | None = None) -> str:
        return "\n".join(err.render(root) for err in getattr(self, "errors", ()))


class _Checker:
    """Collects one file's problems."""

    def __init__(self, doc: Document, variables: Mapping[str, str], base: Path) -> None:
        self.doc, self.variables, self.base = doc, variables, base
        self.problems: list[Problem] = []

    def add(self, loc: Loc, message: str, hint: str | None = None) -> None:
        self.problems.append(Problem(message, line=self.doc.line_of(loc), loc=loc, hint=hint))

    def path(self, loc: Loc, raw: str, base: Path | None = None) -> Path | None:
        try:
            text = substitute(raw, self.variables)
        except SubstitutionError as exc:
            self.add(loc, exc.message, exc.hint)
            return None
        return absolute(text, base or self.base)

    def existing(
        self, loc: Loc, raw: str, what: str, hint: str | None = None, base: Path | None = None
    ) -> Path | None:
        """The path ``raw`` names if it is an existing ``what`` (ending in "folder" or "file")."""
        path = self.path(loc, raw, base)
        if path is None or (path.is_dir() if what.endswith("folder") else path.is_file()):
            return path
        state = f"is not a {what.split()[-1]}" if path.exists() else "does not exist"
        if hint is None and f"${{{EVAL_ROOT}}}" in raw:
            hint = (
                f"EVAL_ROOT is {self.variables[EVAL_ROOT]}; set the environment variable EVAL_ROOT to move it"
            )
        self.add(loc, f"{what} {path} {state} (from {raw!r})", hint)
        return None

    def template(self, loc: Loc, raw: str, what: str) -> Path | None:
        """The existing folder ``raw`` names, unless it is on a pseudo filesystem (copying
        ``/proc/self`` never ends)."""
        path = self.existing(loc, raw, what)
        where = pseudo_filesystem(path) if path is not None else None
        if path is None or where is None:
            return path
        self.add(
            loc,
            f"{what} {path} is {where}, a pseudo filesystem, not a folder of files (from {raw!r})",
            "a template is copied for every item: name a folder of ordinary files, "
            "not one under /proc, /sys or /dev",
        )
        return None

    def text(self, loc: Loc, path: Path) -> str | None:
        """The UTF-8 text of the file ``path``, or None (with a problem)."""
        try:
            return read_input_text(path, MAX_INPUT_BYTES)
        except NotUtf8 as exc:
            self.add(loc, f"{path}: {exc}", exc.hint)
        except OSError as exc:
            self.add(loc, f"cannot read {path}: {exc}", "a prompt file is UTF-8 text")
        except UnreadableFile as exc:
            self.add(loc, f"{path}: {exc}", INPUT_HINT)
        return None


def _key(raw: Mapping[str, Any], name: str, alias: str) -> str:
    """The spelling of a key as the file wrote it (JSON camelCase or YAML snake_case)."""
    return alias if alias in raw else name


def _validated(
    doc: Document, model: Any, data: Any, context: dict[str, Any] | None = None
) -> tuple[Any, list[Problem]]:
    try:
        return model.validate_python(data, context=context), []
    except ValidationError as exc:
        return None, pydantic_problems(exc, doc)


def _default_path(check: _Checker, raw: str, folder: Path, *parts: str) -> Path | None:
    """The default ``raw`` (a ``${EVAL_ROOT}`` spelling) if it exists, else the same file or
    folder spelled from the config ``folder`` as the runner does, if that exists, else ``raw``'s."""
    path = check.path((), raw)
    fallback = absolute(os.path.join(*PROMPTS_FROM_CONFIG, *parts), folder)
    if (path is None or not path.exists()) and fallback.exists():
        return fallback
    return path


def _check_evals(
    doc: Document,
    variables: Mapping[str, str],
    registry: Mapping[str, Any] | None,
    context: dict[str, Any],
    folder: Path,
) -> tuple[dict[str, ResolvedEval], Path | None, list[Problem]]:
    root = Path(variables[EVAL_ROOT])
    parsed, problems = _validated(doc, TypeAdapter(EvalConfigFile), doc.data, context)
    check = _Checker(doc, variables, root)
    raw = doc.data if isinstance(doc.data, dict) else {}
    # the entries that are valid on their own are cross-checked even when others are not
    entries: dict[str, WorkspaceEval] = {}
    if parsed is not None:
        entries = parsed.evaluations
    elif isinstance(raw.get("evaluations"), dict):
        for eval_id, entry in raw["evaluations"].items():
            try:
                checked = _check_eval_id(str(eval_id), context.get(RUN_VARIABLES_CONTEXT))
                entries[checked] = WorkspaceEval.model_validate(entry, context=context)
            except (ValidationError, PydanticCustomError):
                continue
    prompts_raw = parsed.promptsDir if parsed else raw.get("promptsDir", DEFAULT_PROMPTS_DIR)
    where = f"set `promptsDir` in {EVAL_CONFIG_NAME} to read prompts from another folder"
    prompts = None
    if prompts_raw == DEFAULT_PROMPTS_DIR:
        found = _default_path(check, prompts_raw, folder, "problems")
        prompts_raw = str(found) if found is not None else prompts_raw
    if isinstance(prompts_raw, str):
        prompts = check.existing(("promptsDir",), prompts_raw, "prompts folder", where)
    shared: Path | None = None
    shared_raw = parsed.sharedInstructions if parsed else raw.get("sharedInstructions")
    if isinstance(shared_raw, str):
        shared = check.existing(("sharedInstructions",), shared_raw, "shared instructions file")
    elif shared_raw is None:
        default = _default_path(
            check, DEFAULT_SHARED_INSTRUCTIONS, folder, "shared", "evaluation-instructions.md"
        )
        shared = default if default is not None and default.is_file() else None
    resolved: dict[str, ResolvedEval] = {}
    steps_where = f"steps are defined in {REGISTRY_NAME}"
    for eval_id, spec in entries.items():
        loc: Loc = ("evaluations", eval_id)
        prompt = path = None
        if prompts is not None:
            hint = f"prompts are read from {prompts}; {where}"
            path = check.existing((*loc, "prompt"), spec.prompt, "prompt file", hint, prompts)
            prompt = check.text((*loc, "prompt"), path) if path else None
        evaluation = _resolve_coding(
            check, loc, raw["evaluations"][eval_id], eval_id, spec, spec.workspace, spec.grading,
            prompt, registry, steps_where,
        )  # fmt: skip
        if evaluation is not None:
            resolved[eval_id] = replace(evaluation, prompt_file=path)
    return resolved, shared, problems + check.problems


def _resolve_coding(
    check: _Checker,
    loc: Loc,
    raw_entry: Any,
    eval_id: str,
    spec: CodingFields,
    workspace_raw: str,
    grading_raw: str,
    prompt: str | None,
    registry: Mapping[str, Any] | None,
    registry_where: str,
) -> ResolvedEval | None:
    """One coding-agent eval with its paths resolved and its steps checked against the registry
    (None, with problems in ``check``, when something is wrong)."""
    for name, alias in (("build_steps", "buildSteps"), ("grade_steps", "gradeSteps")):
        for i, step in enumerate(getattr(spec, name)):
            if registry is not None and step not in registry:
                check.add(
                    (*loc, _key(raw_entry, name, alias), i),
                    f"unknown step {step!r}{did_you_mean(step, registry)}",
                    f"{registry_where}: {', '.join(registry) or 'none'}",
                )
    workspace = check.template((*loc, "workspace"), workspace_raw, "workspace folder")
    grading = check.template((*loc, "grading"), grading_raw, "grading folder")
    if workspace is None or grading is None or prompt is None:
        return None
    return ResolvedEval(
        eval_id,
        workspace,
        grading,
        prompt,
        tuple(spec.build_steps),
        tuple(spec.grade_steps),
        spec.vybes,
        tuple(spec.requires),
        rubric=spec.rubric,
        min_pass_rate=spec.min_pass_rate,
    )


def load_config_dir(
    folder: Path, environ: Mapping[str, str], extensions: Extensions | None = None
) -> RunnerConfig:
    """Read and check a config folder; raise :class:`InputError` (every file's problems) if any.
    ``extensions``: the session's parsers and run variables the files are checked against."""
    folder = folder.absolute()
    context = (extensions or builtin_extensions()).validation_context()
    errors: list[InputError] = []
    root = config_eval_root(folder, named_paths(folder / EVAL_CONFIG_NAME), environ)
    if root.problem is not None:
        raise InputError(str(folder / EVAL_CONFIG_NAME), [root.problem])
    variables = root.variables

    def load(name: str, adapter: Any) -> tuple[Document | None, Any]:
        try:
            doc = load_document(folder / name)
        except InputError as exc:
            errors.append(exc)
            return None, None
        if adapter is None:
            parsed, problems = load_registry(doc)
        else:
            parsed, problems = _validated(doc, adapter, doc.data, context)
        if problems:
            errors.append(InputError(str(doc.path), problems))
        return doc, parsed

    _, registry = load(REGISTRY_NAME, None)
    cli_doc, cli = load(CLI_CONFIG_NAME, TypeAdapter(CliConfigFile))
    if cli_doc is not None and cli is not None:
        problems = [
            Problem(
                f"default configuration {cid!r} is not defined{did_you_mean(cid, cli.configurations)}",
                line=cli_doc.line_of(("defaultConfigurations", i)),
                loc=("defaultConfigurations", i),
                hint=f"defined configurations: {', '.join(cli.configurations)}",
            )
            for i, cid in enumerate(cli.defaultConfigurations or ())
            if cid not in cli.configurations
        ]
        if problems:
            errors.append(InputError(str(cli_doc.path), problems))
    evals: dict[str, ResolvedEval] = {}
    shared = None
    score: ScoreSpec | None = None
    score_line = None
    try:
        eval_doc = load_document(folder / EVAL_CONFIG_NAME)
    except InputError as exc:
        errors.append(exc)
    else:
        evals, shared, problems = _check_evals(eval_doc, variables, registry, context, folder)
        if problems:
            errors.append(InputError(str(eval_doc.path), problems))
        elif isinstance(eval_doc.data, dict) and eval_doc.data.get("score") is not None:
            score = ScoreSpec.model_validate(eval_doc.data["score"])  # validated with the file above
            score_line = eval_doc.line_of(("score", "formula"))
    if errors:
        raise errors[0] if len(errors) == 1 else ConfigDirError(errors)
    defaults = cli.defaultConfigurations
    return RunnerConfig(
        folder=folder,
        eval_root=Path(variables[EVAL_ROOT]),
        evaluations=evals,
        configurations=dict(cli.configurations),
        default_configurations=tuple(defaults) if defaults else None,
        registry=dict(registry),
        shared_instructions=shared,
        score=score,
        score_line=score_line,
        layout=root.layout,
    )


@dataclass(frozen=True)
class SuiteCoding:
    """A YAML suite's coding-agent evals, resolved, with the registry their steps come from."""

    evaluations: dict[str, ResolvedEval]
    registry: dict[str, CommandDefinition]
    shared_instructions: Path | None
    eval_root: Path


def _nearest_registry(folders: Sequence[Path]) -> Path | None:
    for folder in folders:
        candidate = folder / REGISTRY_NAME
        if candidate.is_file():
            return candidate
    return None


def resolve_suite_coding(suite: Suite, config_dir: Path, environ: Mapping[str, str]) -> SuiteCoding:
    """Resolve the coding-agent evals of a YAML suite: paths relative to the suite's folder (and
    ``${VAR}``, EVAL_ROOT defaulting to that folder), steps from the suite's ``commands`` or else
    the ``command-registry.json`` beside its configurations or the suite. Raises
    :class:`InputError` with every problem, each with its line."""
    doc = suite.document
    assert doc is not None  # kept by load_suite for suites with coding-agent evals
    folder = suite.path.parent.absolute()
    variables, root_problem = from_environment(folder, environ)
    if root_problem is not None:
        raise InputError(str(suite.path), [root_problem])
    check = _Checker(doc, variables, folder)
    registry: dict[str, CommandDefinition] | None = suite.commands
    where = "steps are defined in the suite's `commands`"
    if registry is None:
        found = _nearest_registry((config_dir, folder))
        if found is not None:
            registry_doc = load_document(found)
            registry, problems = load_registry(registry_doc)
            if problems:
                raise InputError(str(found), problems)
            where = f"steps are defined in {found}"
    shared = None
    if suite.instructions is not None:
        shared = check.existing(("instructions",), suite.instructions, "instructions file")
    raw_evals = doc.data.get("evals", []) if isinstance(doc.data, dict) else []
    resolved: dict[str, ResolvedEval] = {}
    for case in suite.evals:
        spec = case.coding
        if spec is None or spec.workspace is None or spec.grading is None:
            continue
        loc: Loc = ("evals", case.index)
        if registry is None and (spec.build_steps or spec.grade_steps):
            check.add(
                loc,
                "this coding-agent eval names steps but no command registry defines them",
                f"add `commands:` to the suite, or a {REGISTRY_NAME} beside it",
            )
            continue
        evaluation = _resolve_coding(
            check, loc, raw_evals[case.index], case.id, spec, spec.workspace, spec.grading,
            spec.first_prompt, registry, where,
        )  # fmt: skip
        if evaluation is not None:
            resolved[case.id] = replace(evaluation, templated=True)
    if check.problems:
        raise InputError(str(suite.path), sorted(check.problems, key=lambda p: p.line or 0))
    return SuiteCoding(resolved, dict(registry or {}), shared, Path(variables[EVAL_ROOT]))
