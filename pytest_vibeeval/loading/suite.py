"""Turn a YAML suite file into a validated :class:`Suite`, or an :class:`InputError` listing every problem."""

from __future__ import annotations

import functools
import hashlib
import itertools
import operator
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..checks import CheckNode, named_checks
from ..errors import InputError, Loc, Problem
from ..extensions import Extensions, builtin_extensions
from ..models import (
    CommandDefinition,
    Configuration,
    EvalSpec,
    McpServer,
    OutputSpec,
    RubricSpec,
    ScoreSpec,
    SuiteFile,
    protected_name_problem,
)
from ..registry import CheckRegistry
from ..scoring.formula import Formula, FormulaError, parse_formula
from ..scoring.variables import (
    check_variable_names,
    eval_name_clash,
    eval_name_clashes,
    eval_variable_names,
    variable_clash,
)
from .check_parsing import check_name_problems, parse_checks, raw_check_lists
from .parse_cache import ParseStore
from .rows import expand_datasets
from .templates import ANY_TEMPLATE, row_columns, template_problems
from .yamlsource import Document, load_document


@dataclass(frozen=True)
class Turn:
    """One user message of a conversation eval, with the checks on its answer."""

    prompt: str
    checks: tuple[CheckNode, ...]
    line: int | None


@dataclass(frozen=True)
class EvalCase:
    """One eval of a suite. A conversation has ``turns``; its ``prompt`` is then the first turn's
    and its ``checks`` are every turn's, in order (for named checks and their formula variables)."""

    id: str  # the eval's name, or a stable id generated from its prompt
    name: str | None  # the explicit `name`, the only one formulas may reference
    index: int
    prompt: str
    checks: tuple[CheckNode, ...]
    line: int | None
    tags: tuple[str, ...] = ()
    xfail: str | None = None
    coding: EvalSpec | None = None  # a coding-agent eval: workspace, grading, steps (unresolved)
    rubric: RubricSpec = field(default_factory=RubricSpec)
    min_pass_rate: float | None = None
    # One row of a dataset eval (see loading.rows): id is then ``<eval>[<row_id>]``.
    eval_name: str | None = None  # the dataset eval's name or generated id
    row_id: str | None = None
    row: Mapping[str, Any] | None = None  # the row's values, filling {{row.column}} as the item runs
    row_number: int | None = None  # 1-based, among the dataset's rows
    dataset: Path | None = None  # the file the row is in (None: the eval's inline `rows:`)
    turns: tuple[Turn, ...] = ()  # a conversation's user messages (empty: a single prompt)


@dataclass(frozen=True)
class Suite:
    """A loaded suite file: its evals, configurations and scoring, ready to plan."""

    path: Path
    name: str
    model: str
    system_prompt: str | None
    mcp_server: McpServer | None
    evals: tuple[EvalCase, ...]
    formula: str
    formula_line: int | None
    configurations: dict[str, Configuration] | None
    default_configurations: tuple[str, ...] | None
    tags: tuple[str, ...]
    score_min: float | None = None  # the score gate (score.min / score.max)
    score_max: float | None = None
    commands: dict[str, CommandDefinition] | None = None  # the steps of its coding-agent evals
    instructions: str | None = None  # as written; resolved with the coding-agent evals
    document: Document | None = None  # the parsed file, for the lines of later checks
    judge: str | None = None  # the configuration answering llm_judge checks (None: implicit)
    judge_line: int | None = None
    datasets: tuple[Path, ...] = ()  # the dataset files of its evals (their content is an input too)
    configuration_lines: Mapping[str, int] = field(default_factory=dict)  # id → line of its `python`/`cli`


def with_mcp_urls(suite: Suite, urls: Mapping[str, str]) -> Suite:
    """``suite`` with its ``mcp_server`` URL replaced when ``urls`` has one for its name
    (``--vibe-mcp-url``)."""
    server = suite.mcp_server
    if server is None or server.name not in urls:
        return suite
    return replace(suite, mcp_server=server.model_copy(update={"url": urls[server.name]}))


@functools.cache
def _build_models() -> None:
    """Build the models a suite holds that are also validated or dumped on their own before the
    suite's: pydantic then reuses their schemas in SuiteFile's instead of generating each twice."""
    for model in (RubricSpec, ScoreSpec, OutputSpec, Configuration):
        model.model_rebuild()


def load_suite(path: Path, extensions: Extensions | None = None, kept: ParseStore | None = None) -> Suite:
    """Read and validate a suite file; raises :class:`InputError` with every problem found.
    ``extensions``: the session's check types, parsers and run variables (the built-ins by default);
    ``kept``: where parsed suites are kept across sessions (see :mod:`.parse_cache`)."""
    extensions = extensions or builtin_extensions()
    registry = extensions.checks
    doc = load_document(path, kept)
    if not isinstance(doc.data, dict):
        raise InputError.single(
            path, "a suite is a mapping with `metadata` and `evals`", line=doc.line_of(())
        )
    legacy = _legacy_problem(doc)
    if legacy:
        raise InputError(str(path), [legacy])
    _build_models()
    try:
        model = SuiteFile.model_validate(doc.data, context=extensions.validation_context())
    except ValidationError as exc:
        found = pydantic_problems(exc, doc)
        evals_raw = doc.data.get("evals")
        for index, raw in enumerate(evals_raw if isinstance(evals_raw, list) else []):
            for where, raw_checks in raw_check_lists(raw, ("evals", index)):
                parse_checks(raw_checks, where, doc, registry, found)
        found.extend(_template_problems(doc))
        raise InputError(str(path), _by_line(found)) from None
    problems: list[Problem] = []
    evals = list(_build_evals(model, doc, registry, problems, extensions.run_variables))
    problems.extend(_name_clash_problems(evals, doc))
    problems.extend(
        check_name_problems(((c.index, c.name, c.checks) for c in evals), doc, extensions.run_variables)
    )
    problems.extend(_template_problems(doc))
    if problems:
        raise InputError(str(path), _by_line(problems))
    cases, datasets = expand_datasets(model, doc, assign_eval_ids(tuple(evals)), registry)
    score_line = doc.line_of(("score", "formula"))
    return Suite(
        path=path,
        name=model.metadata.name,
        model=model.metadata.model,
        system_prompt=model.metadata.system_prompt,
        mcp_server=model.metadata.mcp_server,
        evals=cases,
        formula=model.score.formula if model.score else "success_pct",
        formula_line=score_line if model.score else None,
        configurations=model.configurations,
        default_configurations=tuple(model.default_configurations) if model.default_configurations else None,
        tags=tuple(model.metadata.tags),
        score_min=model.score.min if model.score else None,
        score_max=model.score.max if model.score else None,
        commands=model.commands,
        instructions=model.instructions,
        document=doc if any(case.coding for case in evals) else None,
        judge=model.judge,
        judge_line=doc.line_of(("judge",)) if model.judge else None,
        datasets=datasets,
        configuration_lines=configuration_lines(doc, model.configurations or {}),
    )


def configuration_lines(doc: Document, configurations: Mapping[str, object]) -> dict[str, int]:
    """The line of each configuration's definition in ``doc`` (a suite or a cli-config.json)."""
    lines = {cid: doc.line_of(("configurations", cid)) for cid in configurations}
    return {cid: line for cid, line in lines.items() if line is not None}


def _by_line(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: p.line or 0)


def pydantic_problems(exc: ValidationError, doc: Document) -> list[Problem]:
    """Translate pydantic errors into problems with the YAML line of each."""
    from .validation_messages import describe, other_kinds_left_out  # input that does not validate

    problems = []
    for error in other_kinds_left_out(exc.errors(include_url=False), doc.clean_loc):
        loc: Loc = tuple(error["loc"])
        ctx = error.get("ctx") or {}
        kind = error["type"]
        if kind == "eval_name_clash":  # raised for the whole mapping: the line of the clashing key
            key_loc = (*doc.clean_loc(loc), ctx["key"])
            problems.append(Problem(error["msg"], line=doc.line_of(key_loc), loc=key_loc))
            continue
        if kind == "unknown_key":
            key_loc = (*doc.clean_loc(loc), ctx["bad_key"])
            problems.append(Problem(error["msg"], line=doc.line_of(key_loc), loc=doc.clean_loc(loc)))
            continue
        clean = doc.clean_loc(loc)
        if kind == "missing":
            hint = None
            if loc[0] == "configurations" and loc[-1] == "name":
                hint = 'give each configuration a human-readable label, e.g. "name": "Claude Code, Sonnet"'
            problems.append(
                Problem(f"missing required key {loc[-1]!r}", line=doc.line_of(clean), loc=clean, hint=hint)
            )
            continue
        message, hint = error["msg"], None
        json_file = doc.path.suffix.lower() == ".json"
        described = describe(error, clean[-1] if clean else None, json_file, clean in doc.numbers_as_text)
        if described is not None:
            message, hint = described
        if kind == "too_short" and clean == ("evals",):
            message = "`evals` is empty; a suite needs at least one eval"
        elif kind == "string_pattern_mismatch" and "evals" in loc and loc[-1] == "name":
            message = "eval name may contain only ASCII letters, digits, '-' and '_' (it is used in formulas)"
        elif kind == "string_pattern_mismatch" and "tags" in loc:
            message = (
                f"tag {error.get('input')!r} must start with a letter and hold only ASCII letters, digits"
                " and '_' (it becomes a pytest marker)"
            )
        elif kind == "string_pattern_mismatch" and loc[0] == "configurations" and loc[-1] == "[key]":
            message = (
                f"configuration id {error.get('input')!r} must start with an ASCII letter or digit and hold"
                " only ASCII letters, digits and _.:+- (it is part of each item's node id)"
            )
        elif kind == "string_pattern_mismatch":
            message = f"{message}: got {error.get('input')!r}"
        elif message.startswith("Value error, "):
            message = message[len("Value error, ") :]
        problems.append(Problem(message, line=doc.line_of(loc), loc=clean, hint=hint))
    return problems


def _legacy_problem(doc: Document) -> Problem | None:
    evals = doc.data.get("evals")
    if not isinstance(evals, list):
        return None
    for i, item in enumerate(evals):
        if not isinstance(item, dict):
            continue
        checks = item.get("checks")
        if isinstance(checks, list):
            for j, check in enumerate(checks):
                if isinstance(check, dict) and "type" in check:
                    return Problem(
                        f"legacy check format (`type: {check.get('type')}`) is no longer supported",
                        line=doc.line_of(("evals", i, "checks", j)),
                        loc=("evals", i, "checks", j),
                        hint='migrate: `type: string_contains, value: X` becomes `- match: "*X*"`; '
                        "`type: token_length, min_tokens/max_tokens` become `- min_tokens: N` / "
                        "`- max_tokens: N`",
                    )
    return None


def _build_evals(
    model: SuiteFile,
    doc: Document,
    registry: CheckRegistry,
    problems: list[Problem],
    run_names: Collection[str],
) -> Iterator[EvalCase]:
    names: dict[str, int] = {}
    run_names = frozenset(run_names)
    for index, spec in enumerate(model.evals):
        loc: Loc = ("evals", index)
        line = doc.line_of(loc)
        if spec.name is not None:
            name_line = doc.line_of((*loc, "name"))
            protected = protected_name_problem(spec.name) or variable_clash(spec.name, run_names)
            if protected:
                problems.append(
                    Problem(
                        protected,
                        line=name_line,
                        loc=(*loc, "name"),
                        hint="choose another name for this eval",
                    )
                )
            elif spec.name in names:
                problems.append(
                    Problem(
                        f"duplicate eval name {spec.name!r} (also used by evals[{names[spec.name]}] "
                        f"on line {doc.line_of(('evals', names[spec.name], 'name'))})",
                        line=name_line,
                        loc=(*loc, "name"),
                        hint="eval names must be unique within a suite",
                    )
                )
            else:
                names[spec.name] = index
        checks = []
        turns = []
        for number, turn in enumerate(spec.turns or ()):
            where: Loc = (*loc, "turns", number)
            parsed = []
            if "checks" in turn.model_fields_set:  # without: the turn only sets the conversation up
                parsed = parse_checks(turn.checks, (*where, "checks"), doc, registry, problems)
            turns.append(Turn(turn.prompt, tuple(parsed), doc.line_of(where)))
            checks.extend(parsed)
        if not spec.is_coding and spec.turns is None:
            checks = parse_checks(spec.checks, (*loc, "checks"), doc, registry, problems)
        yield EvalCase(
            id=spec.name or "",
            name=spec.name,
            index=index,
            prompt=spec.first_prompt,
            checks=tuple(checks),
            turns=tuple(turns),
            line=line,
            tags=tuple(spec.tags),
            xfail=spec.xfail,
            coding=spec if spec.is_coding else None,
            rubric=spec.rubric,
            min_pass_rate=spec.min_pass_rate,
        )


def _name_clash_problems(evals: list[EvalCase], doc: Document) -> Iterator[Problem]:
    """An eval named like another eval's per-eval variable (``x_cost`` beside ``x``)."""
    first: dict[str, int] = {}
    for case in evals:
        if case.name:
            first.setdefault(case.name, case.index)
    for name, owner, variable in eval_name_clashes(first):
        index, other = first[name], first[owner]
        line = doc.line_of(("evals", other, "name"))
        where = f" (evals[{other}], line {line})" if line else f" (evals[{other}])"
        loc: Loc = ("evals", index, "name")
        yield Problem(eval_name_clash(name, owner, variable, where=where), line=doc.line_of(loc), loc=loc)


def _template_problems(doc: Document) -> list[Problem]:
    """Malformed templates anywhere, and ``{{row.column}}`` outside the prompt, checks and ``id``
    of an eval with a ``dataset`` or ``rows`` (inline rows are data: not looked into)."""
    problems: list[Problem] = []
    if doc.templated is None:
        _walk_templates(doc, doc.data, (), problems)
        return problems
    for loc, text in doc.templated:  # the walk's finds, noted by the parser
        if not (len(loc) > 2 and loc[0] == "evals" and loc[2] == "rows"):
            problems.extend(_string_template_problems(doc, text, loc))
    return problems


def _walk_templates(doc: Document, node: Any, loc: Loc, problems: list[Problem]) -> None:
    """:func:`_template_problems` of ``node`` at ``loc``. A function of its own, not a closure: a
    recursive closure is a reference cycle, which kept the whole parsed file alive until the
    garbage collector's next full pass."""
    if isinstance(node, str):
        if "{{" in node:  # every template starts so
            problems.extend(_string_template_problems(doc, node, loc))
    elif isinstance(node, dict):
        for key, value in node.items():
            if len(loc) == 2 and loc[0] == "evals" and key == "rows":
                continue
            _walk_templates(doc, value, (*loc, key), problems)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _walk_templates(doc, value, (*loc, i), problems)


def _string_template_problems(doc: Document, text: str, loc: Loc) -> Iterator[Problem]:
    for message in template_problems(text):
        yield Problem(message, line=doc.line_of(loc), loc=loc)
    columns = row_columns(text)
    if columns and not _with_rows(doc, loc):
        yield Problem(
            f"{{{{row.{columns[0]}}}}} has no row here: row templates belong in the prompt, "
            "turns, checks and `id` of an eval with a `dataset` or `rows`",
            line=doc.line_of(loc),
            loc=loc,
            hint="give the eval a `dataset: cases.csv` or inline `rows:`",
        )


def _with_rows(doc: Document, loc: Loc) -> bool:
    """Whether ``loc`` is in the prompt, turns, checks or ``id`` of an eval with rows."""
    if len(loc) < 3 or loc[0] != "evals" or loc[2] not in ("prompt", "checks", "id", "turns"):
        return False
    evals = doc.data.get("evals") if isinstance(doc.data, dict) else None
    raw = evals[loc[1]] if isinstance(evals, list) and isinstance(loc[1], int) else None
    return isinstance(raw, dict) and ("dataset" in raw or "rows" in raw)


def assign_eval_ids(evals: tuple[EvalCase, ...]) -> tuple[EvalCase, ...]:
    """Give evals without a name a stable id made from their prompt, unique within the suite."""
    taken = {case.name for case in evals if case.name}
    out = []
    for case in evals:
        if case.name:
            out.append(case)
            continue
        base = prompt_slug(case.prompt)
        candidate, n = base, 2
        while candidate in taken:
            candidate, n = f"{base}-{n}", n + 1
        taken.add(candidate)
        out.append(replace(case, id=candidate))
    return tuple(out)


def prompt_slug(prompt: str, max_len: int = 40) -> str:
    """``What is 2 + 2?`` → ``what-is-2-2``; prompts with too few ASCII letters get ``eval-<hash>``."""
    prompt = ANY_TEMPLATE.sub(" ", prompt)
    ascii_text = unicodedata.normalize("NFKD", prompt).encode("ascii", "ignore").decode()
    words = re.findall(r"[a-z0-9]+", ascii_text.lower())
    slug = ""
    for word in words:
        if len(slug) + len(word) + 1 > max_len:
            break
        slug = f"{slug}-{word}" if slug else word
    if len(slug) < 3 or len(ascii_text) < len(prompt) / 2:
        return "eval-" + hashlib.sha1(prompt.encode()).hexdigest()[:8]
    return slug


class _KnownNames(Collection[str]):
    """The variables a formula may use: the run variables, every eval's (``<name>``,
    ``<name>_cost``, …) and those of named checks (``<name>_score``). A formula names a few of
    them: each is looked up by its eval name and suffix, and the whole set (an eval's variables for
    every eval of the suite) is made only if something lists it (a suggestion for a name not
    known, a hyphenated name of three parts or more), as it was before, in the same order."""

    def __init__(self, run: Iterable[str], eval_names: list[str], check_variables: list[str]) -> None:
        self._run, self._eval_names, self._checks = list(run), eval_names, check_variables
        self._evals = frozenset(eval_names)
        self._suffixes = [suffix for suffix in eval_variable_names("") if suffix]
        self._run_or_checks = {*self._run, *check_variables}

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        if name in self._run_or_checks or name in self._evals:
            return True
        return any(name.endswith(s) and name[: -len(s)] in self._evals for s in self._suffixes)

    @functools.cached_property
    def _all(self) -> set[str]:
        known = set(self._run)
        names = self._eval_names
        for suffix in eval_variable_names(""):  # a suffix at a time (no loop in Python)
            known.update(map(operator.add, names, itertools.repeat(suffix, len(names))))
        known.update(self._checks)
        return known

    def __iter__(self) -> Iterator[str]:
        return iter(self._all)

    def __len__(self) -> int:
        return len(self._all)

    def __bool__(self) -> bool:
        return bool(self._run or self._eval_names or self._checks)


def check_formula(
    path: Path,
    text: str,
    line: int | None,
    eval_names: Iterable[str],
    explain: Callable[[FormulaError], FormulaError | None] = lambda error: None,
    extensions: Extensions | None = None,
    check_names: Iterable[str] = (),
) -> Formula:
    """Check a score formula against the variables of evals named ``eval_names`` and the session's
    run variables and presets (``extensions``; the built-ins by default); raises
    :class:`InputError` naming ``path`` and ``line``. ``explain`` may offer a clearer error.

    The controller later evaluates the returned formula's ``canonical`` text."""
    extensions = extensions or builtin_extensions()
    known = _KnownNames(extensions.run_variables, list(eval_names), check_variable_names(check_names))
    try:
        return parse_formula(text, known, presets=extensions.formula_presets)
    except FormulaError as exc:
        raise InputError.single(path, f"score.formula: {(explain(exc) or exc).render()}", line=line) from None


def suite_formula(suite: Suite, extensions: Extensions | None = None) -> Formula:
    """Check a YAML suite's score formula (see :func:`check_formula`)."""
    names = [case.name for case in suite.evals if case.name]
    return check_formula(
        suite.path,
        suite.formula,
        suite.formula_line,
        names,
        lambda error: _unnamed_reference(suite, error),
        extensions,
        [check.name or "" for case in suite.evals for check in named_checks(case.checks)],
    )


def _unnamed_reference(suite: Suite, error: FormulaError) -> FormulaError | None:
    """A clearer error when the formula uses a dataset eval, or the generated id of an eval that
    has no ``name`` (alone or as one of its variables: ``ds``, ``ds_cost``)."""
    for case in suite.evals:
        if case.eval_name is not None:
            found = _used(error.formula, case.eval_name)
            if found:
                return FormulaError(
                    error.formula,
                    f"{case.eval_name!r} is a dataset eval: each of its rows is an eval of its own "
                    f"({case.id}, …) counted by the run-wide variables (success_pct, passed, total, "
                    f"…); it has no per-eval variables{_such_as(found.group(), case.eval_name)}",
                    found.start(),
                    len(found.group()),
                )
            continue
        if case.name:
            continue
        found = _used(error.formula, case.id)
        if found:
            where = f" (line {case.line})" if case.line else ""
            return FormulaError(
                error.formula,
                f"{case.id!r} is the generated id of evals[{case.index}]{where}, which has no `name`; "
                f"only named evals can be used in a formula: add `name: {case.id}` to that eval",
                found.start(),
                len(found.group()),
            )
    return None


def _such_as(used: str, eval_name: str) -> str:
    return f" such as {used!r}" if used != eval_name else ""


def _used(formula: str, eval_name: str) -> re.Match[str] | None:
    """Where ``formula`` names ``eval_name`` or one of its per-eval variables (the longest first)."""
    names = sorted(eval_variable_names(eval_name), key=len, reverse=True)
    return re.search(rf"(?<![\w\[-])(?:{'|'.join(map(re.escape, names))})(?![\w-])", formula)
