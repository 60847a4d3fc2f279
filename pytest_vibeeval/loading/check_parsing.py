"""Parse an eval's ``checks`` (a list, all must pass, or ``{or: [...]}``) into check nodes,
adding a :class:`Problem` with its line for each check that is not valid."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any

from pydantic import ValidationError

from ..check_api import SUITE_DIR_CONTEXT
from ..checks import AnyOf, Check, CheckNode, named_checks
from ..errors import Loc, Problem, did_you_mean
from ..registry import CheckRegistry
from ..scoring.variables import EVAL_VARIABLES, check_variable_names
from .yamlsource import Document, yaml_kind

LEGACY_CHECK_HINT = (
    "checks are a list of single-key items, e.g.\n"
    "      checks:\n"
    '        - match: "*4*"\n'
    "        - max_tokens: 50\n"
    "    or `checks: {or: [...]}` when any one may pass"
)


def raw_check_lists(raw: Any, loc: Loc) -> Iterator[tuple[Loc, Any]]:
    """The raw ``checks`` of the eval ``raw`` at ``loc``, and those of each of its ``turns``,
    each with where it is."""
    if not isinstance(raw, dict):
        return
    if "checks" in raw:
        yield (*loc, "checks"), raw["checks"]
    turns = raw.get("turns")
    for number, turn in enumerate(turns if isinstance(turns, list) else []):
        if isinstance(turn, dict) and "checks" in turn:
            yield (*loc, "turns", number, "checks"), turn["checks"]


def parse_checks(
    raw: Any, loc: Loc, doc: Document, registry: CheckRegistry, problems: list[Problem]
) -> list[CheckNode]:
    """Parse an eval's ``checks``: a list (all must pass) or ``{or: [...]}``."""
    if isinstance(raw, dict):
        if set(raw) == {"or"}:
            node = _parse_or(raw["or"], (*loc, "or"), doc, registry, problems)
            return [node] if node else []
        message = "object-form `checks:` is the legacy format and is no longer supported"
    elif not isinstance(raw, list):
        message = f"`checks` must be a list or {{or: [...]}}, not {yaml_kind(raw)}"
    elif not raw:
        message = "`checks` is empty; an eval needs at least one check"
    else:
        nodes = [_parse_one(item, (*loc, i), doc, registry, problems) for i, item in enumerate(raw)]
        return [node for node in nodes if node is not None]
    problems.append(Problem(message, line=doc.line_of(loc), loc=loc, hint=LEGACY_CHECK_HINT))
    return []


def _parse_or(
    raw: Any, loc: Loc, doc: Document, registry: CheckRegistry, problems: list[Problem]
) -> AnyOf | None:
    if not isinstance(raw, list) or not raw:
        problems.append(Problem("`or` needs a non-empty list of checks", line=doc.line_of(loc), loc=loc))
        return None
    children = [_parse_one(item, (*loc, i), doc, registry, problems) for i, item in enumerate(raw)]
    if any(child is None for child in children):
        return None
    return AnyOf(tuple(c for c in children if c is not None), line=doc.line_of(loc))


def _parse_one(
    raw: Any, loc: Loc, doc: Document, registry: CheckRegistry, problems: list[Problem]
) -> CheckNode | None:
    line = doc.line_of(loc)
    if not isinstance(raw, dict) or len(raw) != 1:
        found = ", ".join(map(str, raw)) if isinstance(raw, dict) else yaml_kind(raw)
        problems.append(
            Problem(
                f"a check is a mapping with exactly one key (found {found or 'nothing'})",
                line=line,
                loc=loc,
                hint=LEGACY_CHECK_HINT,
            )
        )
        return None
    ((key, value),) = raw.items()
    if key == "or":
        return _parse_or(value, (*loc, "or"), doc, registry, problems)
    check_type = registry.get(str(key))
    if check_type is None:
        known = [*registry.names(), "or"]
        problems.append(
            Problem(
                f"unknown check {key!r}{did_you_mean(str(key), known)}",
                line=doc.line_of((*loc, key)),
                loc=loc,
                hint=f"known checks: {', '.join(known)}",
            )
        )
        return None
    try:
        parsed = check_type.adapter.validate_python(value, context={SUITE_DIR_CONTEXT: doc.folder})
    except ValidationError as exc:
        from .validation_messages import describe, other_kinds_left_out  # input that does not validate

        for error in other_kinds_left_out(exc.errors(include_url=False), doc.clean_loc, (*loc, key)):
            sub: Loc = (*loc, key, *error["loc"])
            message = error["msg"].removeprefix("Value error, ")
            hint = None
            clean = doc.clean_loc(sub)
            unquoted = clean in doc.numbers_as_text
            described = describe(error, clean[-1] if clean else None, json_file=False, unquoted=unquoted)
            if described is not None:
                message, hint = described
            if error["type"] == "string_too_short":
                message = f"`{key}` must not be empty"
            elif error["type"] == "missing":
                message = f"missing required key {error['loc'][-1]!r}"
            elif error["type"] == "extra_forbidden":
                message = f"unknown key {error['loc'][-1]!r} in `{key}`"
            problems.append(Problem(message, line=doc.line_of(sub), loc=clean, hint=hint))
        return None
    return Check(check_type, parsed, line=doc.line_of((*loc, key)))


def check_name_problems(
    evals: Iterable[tuple[int, str | None, Sequence[CheckNode]]], doc: Document, run_names: Collection[str]
) -> Iterator[Problem]:
    """Check names whose ``<name>_score`` would be another variable too: a run-wide one, or one of a
    named eval's (``tone`` beside an eval ``tone``, whose own score is ``tone_score``), or that name
    two checks of one eval. ``evals``: each eval's index, ``name`` and checks."""
    cases = list(evals)
    if not any(True for _, _, checks in cases for _ in named_checks(checks)):
        return  # nothing named: nothing can clash (and a large suite is spared the table below)
    suffixes = [v.suffix for v in EVAL_VARIABLES]
    owners: dict[str, tuple[int, str, str]] = {}  # variable -> (eval index, eval name, suffix)
    for index, name, _ in cases:
        for suffix in suffixes if name else []:
            owners.setdefault(f"{name}{suffix}", (index, name or "", suffix))
    for index, _, checks in cases:
        seen: dict[str, int | None] = {}
        for check in named_checks(checks):
            name = check.name or ""
            [score_name] = check_variable_names([name])
            message = None
            if name in seen:
                message = f"two checks of this eval are named {name!r} (also line {seen[name]})"
            elif score_name in run_names:
                message = f"check name {name!r} would define {score_name!r}, which is a run-wide variable"
            elif score_name in owners:
                other, eval_name, suffix = owners[score_name]
                line = doc.line_of(("evals", other, "name"))
                where = f"evals[{other}]" + (f", line {line}" if line else "")
                message = (
                    f"check name {name!r} would define {score_name!r}, which is eval {eval_name!r}'s "
                    f"`<name>{suffix}` variable ({where})"
                )
            seen.setdefault(name, check.line)
            if message:
                yield Problem(
                    message,
                    line=check.line,
                    loc=("evals", index, "checks"),
                    hint="a check's `name` makes the score formula variable `<name>_score`; choose another",
                )
