"""Checks on a response: the built-in types, their registry, and three-valued evaluation.

A check's verdict is ``True`` (passed), ``False`` (failed) or ``None`` (could not be decided here,
e.g. a check type whose backend is not available). ``or`` tries its children in order and stops at
the first that passes; it fails only when every child fails. A list passes when every check passes
and fails when one fails. An eval whose verdict stays ``None`` is skipped with the reason, never
passed. A check that cannot run (a judge failed, a custom check raised) is an error result: it makes
the eval an error unless an earlier alternative of its ``or`` passed or a later one passes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from .check_api import (
    CheckError,
    CheckName,
    CheckType,
    Count,
    JudgeError,
    NonEmptyStr,
    Response,
    Verdict,
    against_threshold,
    count_tokens,
    quote,
    raised_at,
)
from .patterns import broken_regex, canonical, compile_pattern, is_regex_pattern, pattern_matches, regex_found
from .quick import quick_init
from .results import JudgeRecord

if TYPE_CHECKING:
    from .registry import CheckRegistry

__all__ = [
    "CheckError",
    "CheckType",
    "NonEmptyStr",
    "Response",
    "Verdict",
    "compile_pattern",
    "count_tokens",
    "is_regex_pattern",
    "pattern_matches",
]

TokenCount = Count


class SemanticArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    expected: NonEmptyStr = Field(description="the text the response should mean about the same as")
    threshold: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        description="the least cosine similarity (0–1) of the two embeddings that passes"
    )


Fraction = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
JUDGE_THRESHOLD = 0.7  # the rubric's anchor for "meets it with minor gaps" (see JUDGE_RUBRIC_PROMPT)


class JudgeArgs(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        defer_build=True,
        json_schema_extra={"oneOf": [{"required": ["criteria"]}, {"required": ["rubric"]}]},
    )
    criteria: NonEmptyStr | None = Field(
        default=None,
        description="what the response must meet, for a pass/fail verdict; the judge also sees the "
        "eval's prompt (give this or `rubric`)",
    )
    rubric: NonEmptyStr | None = Field(
        default=None,
        description="what the judge scores the response against, 0–1 (give this or `criteria`)",
    )
    threshold: Fraction | None = Field(
        default=None,
        description=f"with `rubric`: the least score that passes (default {JUDGE_THRESHOLD})",
    )
    judges: Annotated[list[NonEmptyStr], Field(min_length=1)] | None = Field(
        default=None,
        description="models asked through the judge configuration, each its own judge "
        "(default: the judge configuration's model)",
    )
    aggregate: Literal["mean", "majority"] | None = Field(
        default=None,
        description="how several judges decide: `mean` (the mean score passes the threshold; the "
        "default with `rubric`) or `majority` (more than half pass; the only way for `criteria`)",
    )
    name: CheckName | None = None

    @property
    def check_name(self) -> str | None:
        """The check's name, which makes its score ``<name>_score`` (see :attr:`Check.name`)."""
        return self.name

    @model_validator(mode="after")
    def _one_mode(self) -> JudgeArgs:
        if self.criteria is None and self.rubric is None:
            raise ValueError(
                "missing required key 'criteria' (a pass/fail verdict), or give `rubric` (a 0–1 score)"
            )
        if self.criteria is not None and self.rubric is not None:
            raise ValueError(
                "give either `criteria` (a pass/fail verdict) or `rubric` (a 0–1 score), not both"
            )
        if self.criteria is not None and self.threshold is not None:
            raise ValueError("`threshold` applies to `rubric` scores; `criteria` gives a pass/fail verdict")
        if self.criteria is not None and self.aggregate == "mean":
            raise ValueError(
                "`aggregate: mean` needs scores (`rubric`); verdicts on `criteria` combine by majority"
            )
        return self

    @property
    def pass_mark(self) -> float:
        return JUDGE_THRESHOLD if self.threshold is None else self.threshold

    @property
    def combine(self) -> Literal["mean", "majority"]:
        return self.aggregate or ("mean" if self.rubric is not None else "majority")


def _pattern_message(pattern: str, matched: bool, forbidden: bool = False) -> str:
    """What a ``match``/``not_match`` check says: a regex is found or not, a glob matches or not."""
    if is_regex_pattern(pattern):
        verb = "is found in" if matched else "is not found in"
        tail = " but must not be" if forbidden and matched else ""
    else:
        verb = "matches" if matched else "does not match"
        tail = " but must not" if forbidden and matched else ""
    return f"{'regex' if is_regex_pattern(pattern) else 'pattern'} {quote(pattern)} {verb} the response{tail}"


def _match(pattern: str, response: Response) -> Verdict:
    matched = pattern_matches(pattern, response.text, response.canonical_text)
    return Verdict(matched, _pattern_message(pattern, matched))


def _not_match(pattern: str, response: Response) -> Verdict:
    matched = pattern_matches(pattern, response.text, response.canonical_text)
    return Verdict(not matched, _pattern_message(pattern, matched, forbidden=True))


def _min_tokens(limit: int, response: Response) -> Verdict:
    count, how = response.tokens()
    ok = count >= limit
    return Verdict(ok, f"{count} tokens ({how}); min_tokens is {limit}")


def _max_tokens(limit: int, response: Response) -> Verdict:
    count, how = response.tokens()
    ok = count <= limit
    return Verdict(ok, f"{count} tokens ({how}); max_tokens is {limit}")


def _regex(pattern: str, response: Response) -> Verdict:
    found = regex_found(pattern, response.text, response.canonical_text)
    return Verdict(found, f"regex {quote(pattern)} {'found' if found else 'not found'} in the response")


def _equals(expected: str, response: Response) -> Verdict:
    ok = response.canonical_text.strip() == canonical(expected).strip()
    return Verdict(
        ok,
        f"response {'equals' if ok else 'does not equal'} {quote(expected)} (ignoring outer whitespace)",
    )


def _contains(needle: str, response: Response) -> Verdict:
    ok = canonical(needle).casefold() in response.canonical_text.casefold()
    return Verdict(
        ok,
        f"response {'contains' if ok else 'does not contain'} {quote(needle)} (case-insensitive)",
    )


def _semantic(args: SemanticArgs, response: Response) -> Verdict:
    from pytest_vibeeval import semantic  # the embeddings: only where a suite has a semantic check

    try:
        score = semantic.similarity(args.expected, response.text)
    except semantic.SemanticUnavailable as exc:
        return Verdict(None, str(exc))
    ok, compared = against_threshold(score, args.threshold)
    return Verdict(ok, f"similarity {compared} to {quote(args.expected)}")


def _llm_judge(args: JudgeArgs, response: Response) -> Verdict:
    if response.judge is None:
        return Verdict(None, "llm_judge: no judge configuration for this eval")
    return response.judge(args, response.text)


def _valid_regex(value: str) -> str:
    try:
        re.compile(value)
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return value


RegexStr = Annotated[NonEmptyStr, AfterValidator(_valid_regex)]


def _valid_pattern(value: str) -> str:
    problem = broken_regex(value)
    if problem:
        raise ValueError(
            f"reads as a regular expression but is not a valid one ({problem}); fix it, or write a "
            "glob without regex constructs (`*` for any text)"
        )
    return value


PatternStr = Annotated[NonEmptyStr, AfterValidator(_valid_pattern)]

NOT_YET = "is not available in this version of pytest-vibeeval; the eval is skipped instead of guessed"


def _in_memory(types: Sequence[CheckType]) -> tuple[CheckType, ...]:
    """Check types that decide from the response alone, never from the item's folder."""
    return tuple(replace(check_type, uses_workdir=False) for check_type in types)


# The check types of this module. The others are imported where a suite uses one (see
# register_builtin_checks): the JSON, tool-call, cost and latency checks, and `python:` checks.
CORE_CHECKS: tuple[CheckType, ...] = _in_memory(
    [
        CheckType(
            "match",
            PatternStr,
            _match,
            "the whole response matches a glob (`*` = any text), or a regex is found in it; case-insensitive",
        ),
        CheckType("not_match", PatternStr, _not_match, "the opposite of match"),
        CheckType("min_tokens", TokenCount, _min_tokens, "response has at least N tokens"),
        CheckType("max_tokens", TokenCount, _max_tokens, "response has at most N tokens"),
        CheckType(
            "regex",
            RegexStr,
            _regex,
            "a Python regular expression is found anywhere in the response (case-sensitive)",
        ),
        CheckType("equals", str, _equals, "response equals the text, ignoring surrounding whitespace"),
        CheckType("contains", NonEmptyStr, _contains, "response contains the text, case-insensitive"),
        CheckType(
            "semantic",
            SemanticArgs,
            _semantic,
            "embedding similarity to `expected` is at least `threshold`",
        ),
        CheckType(
            "llm_judge",
            JudgeArgs,
            _llm_judge,
            "a judge model decides whether the response meets `criteria`, or scores it 0–1 against "
            "`rubric` (passing at `threshold`); several `judges` decide by `aggregate`",
        ),
    ]
)
STRUCTURAL_CHECK_NAMES = (
    "json",
    "json_schema",
    "tool_called",
    "tool_not_called",
    "tool_sequence",
    "max_tool_calls",
    "max_cost",
    "max_latency",
)
CUSTOM_CHECK_NAMES = ("python",)


@functools.cache
def structural_checks() -> tuple[CheckType, ...]:
    """The checks on JSON, tool calls, cost and latency (named :data:`STRUCTURAL_CHECK_NAMES`)."""
    from .structural_checks import STRUCTURAL_CHECKS

    return _in_memory(STRUCTURAL_CHECKS)


def custom_checks() -> tuple[CheckType, ...]:
    """The ``python:`` check (named :data:`CUSTOM_CHECK_NAMES`): user code, given the folder."""
    from .custom_checks import CUSTOM_CHECKS

    return CUSTOM_CHECKS


def register_builtin_checks(registry: CheckRegistry) -> None:
    """Register the built-in check types in ``registry``, in :data:`BUILTIN_CHECKS`' order; those of
    other modules by name, imported at their first lookup."""
    for check_type in CORE_CHECKS:
        registry.register(check_type)
    registry.register_group(STRUCTURAL_CHECK_NAMES, structural_checks)
    registry.register_group(CUSTOM_CHECK_NAMES, custom_checks)


def __getattr__(name: str) -> tuple[CheckType, ...]:
    # BUILTIN_CHECKS, every built-in check type, imports the modules of them all: made on request.
    if name == "BUILTIN_CHECKS":
        builtin = (*CORE_CHECKS, *structural_checks(), *custom_checks())
        globals()[name] = builtin
        return builtin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Check:
    """One parsed check of a suite."""

    type: CheckType
    value: Any
    line: int | None = None

    @property
    def name(self) -> str | None:
        """The check's own name (its value's ``check_name``: llm_judge's and python's ``name``), or
        None. Not any ``name`` of a value: ``tool_called``'s names the tool."""
        name = getattr(self.value, "check_name", None)
        return name if isinstance(name, str) else None

    def run(self, response: Response) -> CheckResult:
        if self.type.evaluate is None:
            return CheckResult(self.type.name, None, self.type.unavailable or "not available", name=self.name)
        try:
            verdict = self.type.evaluate(self.value, response)
        except JudgeError as exc:
            return self._error(str(exc), exc.judges)
        except CheckError as exc:
            return self._error(str(exc))
        except (Exception, SystemExit) as exc:  # a plugin's check type (or a bug): the eval errors
            return self._error(f"check {self.type.name!r} raised {type(exc).__name__}: {exc}{raised_at(exc)}")
        if not isinstance(verdict, Verdict):
            return self._error(
                f"check {self.type.name!r} returned {verdict!r}; a check type's evaluate returns a "
                "pytest_vibeeval.Verdict(passed, message)"
            )
        return CheckResult(
            self.type.name,
            verdict.passed,
            verdict.message,
            score=verdict.score,
            name=self.name,
            judges=verdict.judges,
        )

    def _error(self, message: str, judges: tuple[JudgeRecord, ...] = ()) -> CheckResult:
        return CheckResult(self.type.name, None, message, name=self.name, judges=judges, error=True)


@dataclass(frozen=True)
class AnyOf:
    """``or: [...]``: passes when any child passes; the children after the first that passes are
    not run (their judges not asked), and not in the result."""

    children: tuple[CheckNode, ...]
    line: int | None = None

    def run(self, response: Response) -> CheckResult:
        results: list[CheckResult] = []
        for child in self.children:
            results.append(child.run(response))
            if results[-1].passed is True:
                ran, of = len(results), len(self.children)
                rest = "; the later ones were not run" if ran < of else ""
                return CheckResult("or", True, f"alternative {ran} of {of} passed{rest}", tuple(results))
        errors = sum(r.error for r in results)
        if errors:
            message = f"no alternative passed and {errors} could not run"
            return CheckResult("or", None, message, tuple(results), error=True)
        if all(r.passed is False for r in results):
            return CheckResult("or", False, "no alternative passed", tuple(results))
        return CheckResult("or", None, "no alternative passed and some could not be decided", tuple(results))


CheckNode = Check | AnyOf


@quick_init
@dataclass(frozen=True)
class CheckResult:
    """What one check (an ``or`` with its ``children``) decided about a response."""

    type: str
    passed: bool | None
    message: str
    children: tuple[CheckResult, ...] = field(default_factory=tuple)
    score: float | None = None  # 0–1, from a check that grades
    name: str | None = None  # the check's own name (its score is `<name>_score`)
    judges: tuple[JudgeRecord, ...] = ()  # llm_judge: each judge's answer
    error: bool = False  # it could not run (``message`` says why): the eval errors unless decided

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, "passed": self.passed, "message": self.message}
        if self.score is not None:
            data["score"] = self.score
        if self.name is not None:
            data["name"] = self.name
        if self.judges:
            data["judges"] = [judge.model_dump() for judge in self.judges]
        if self.error:
            data["error"] = True
        if self.children:
            data["children"] = [child.to_json() for child in self.children]
        return data

    def first_error(self) -> str | None:
        """Why the first check (alternatives included) that could not run did not, or None."""
        if not self.error:
            return None
        if not self.children:
            return self.message
        return next(filter(None, (child.first_error() for child in self.children)), None)

    def undecided_reasons(self) -> list[str]:
        if self.passed is not None or self.error:
            return []
        if not self.children:
            return [self.message]
        return [reason for child in self.children for reason in child.undecided_reasons()]


def named_checks(nodes: Sequence[CheckNode]) -> Iterator[Check]:
    """The checks of ``nodes`` (inside ``or`` too) that have a ``name`` of their own."""
    for node in nodes:
        if isinstance(node, AnyOf):
            yield from named_checks(node.children)
        elif node.name is not None:
            yield node


def any_uses_workdir(nodes: Sequence[CheckNode]) -> bool:
    """Whether a check of ``nodes`` (inside ``or`` too) may use the item's folder."""
    return any(
        any_uses_workdir(node.children) if isinstance(node, AnyOf) else node.type.uses_workdir
        for node in nodes
    )


class ChecksError(Exception):
    """A check could not run and nothing decided the eval without it: the eval errors with the
    message, keeping every check's ``results``."""

    def __init__(self, message: str, results: list[CheckResult]) -> None:
        super().__init__(message)
        self.results = results


def run_checks(checks: Sequence[CheckNode], response: Response) -> tuple[bool | None, list[CheckResult]]:
    """All checks must pass. Returns the overall verdict and each check's result; raises
    :class:`ChecksError` when one could not run."""
    results = [check.run(response) for check in checks]
    error = next(filter(None, (r.first_error() for r in results)), None)
    if error is not None:
        raise ChecksError(error, results)
    verdicts = [r.passed for r in results]
    if any(v is False for v in verdicts):
        return False, results
    if all(v is True for v in verdicts):
        return True, results
    return None, results
