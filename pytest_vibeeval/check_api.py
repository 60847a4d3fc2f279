"""What a check type is and what it sees: :class:`CheckType`, :class:`Response`, :class:`Verdict`.

Kept apart from :mod:`.checks` (the built-ins and the registry) so that modules of check types can
build on it without an import circle.
"""

from __future__ import annotations

import os
import re
import sysconfig
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, cached_property
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, StringConstraints, TypeAdapter
from pydantic_core import PydanticCustomError

from .patterns import canonical
from .quick import quick_init
from .results import JudgeRecord, ToolCallRecord

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
# The pydantic validation context key holding the suite's folder (files named by checks are in it).
SUITE_DIR_CONTEXT = "vibeeval_suite_dir"


def _no_flag(value: object) -> object:
    """pydantic reads ``true`` as the number 1; in a check's count it is a YAML slip."""
    if isinstance(value, bool):
        raise PydanticCustomError(
            "flag_count",
            "a count is a whole number, not {value} (YAML reads yes/no/on/off/true/false as booleans)",
            {"value": str(value).lower()},
        )
    return value


Count = Annotated[int, Field(ge=0), BeforeValidator(_no_flag)]  # of tokens, of tool calls
# A check's own name, spelled as eval names are (it is used in score formulas: `<name>_score`).
CheckName = Annotated[
    str,
    StringConstraints(pattern=r"^[A-Za-z0-9_-]+$"),
    Field(
        description="the check's name: its 0–1 score is the formula variable `<name>_score` (the mean "
        "over the evals that have a check of this name); default: it counts towards its eval's "
        "`<name>_score`"
    ),
]
TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Local token estimate: runs of word characters plus each punctuation mark (of the composed
    text: a combining accent is part of its letter's word, not a mark of its own)."""
    return _tokens_of(canonical(text))


def _tokens_of(canonical_text: str) -> int:
    return len(TOKEN.findall(canonical_text))


@quick_init
@dataclass(frozen=True)
class Response:
    """What checks look at: the answer and what the provider reported about it."""

    text: str
    output_tokens: int | None = None  # as reported by the provider
    # llm_judge: (the check's parsed value, response text) -> its verdict (passed None: undecided)
    judge: Callable[[Any, str], Verdict] | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()  # in the order they were made, where reported
    # False: the configuration cannot report tool calls (``tool_calls`` is empty, not known empty)
    tool_calls_reported: bool = True
    cost: float | None = None  # USD; None: unknown
    latency: float | None = None  # seconds
    input_tokens: int | None = None
    prompt: str | None = None  # the eval's prompt, templates filled
    workdir: Path | None = None  # the item's folder, where the answering agent ran

    @cached_property
    def canonical_text(self) -> str:
        """``text`` in the form the text checks compare (:func:`~pytest_vibeeval.patterns.canonical`:
        composed Unicode, ``\\n`` line ends), made once for all the checks of the answer."""
        return canonical(self.text)

    def tokens(self) -> tuple[int, str]:
        if self.output_tokens is not None:
            return self.output_tokens, "reported by the provider"
        return _tokens_of(self.canonical_text), "counted locally"


@quick_init
@dataclass(frozen=True)
class Verdict:
    """A check type's decision: passed (``None``: undecided here), why, and its 0–1 score."""

    passed: bool | None
    message: str
    score: float | None = None  # 0–1, for checks that grade rather than only pass or fail
    judges: tuple[JudgeRecord, ...] = ()  # llm_judge: each judge's answer


class CheckError(Exception):
    """A check could not run (e.g. a custom check raised): the eval errors with this message."""


class JudgeError(Exception):
    """The judge could not give a verdict (it failed, or answered something else)."""

    def __init__(self, message: str, judges: tuple[JudgeRecord, ...] = ()) -> None:
        super().__init__(message)
        self.judges = judges  # the check's judges' answers, the one that failed last if it answered


Evaluator = Callable[[Any, Response], Verdict]


@dataclass(frozen=True)
class CheckType:
    """A kind of check: the YAML key, the type of its value, and how it decides."""

    name: str
    value_type: Any
    evaluate: Evaluator | None
    description: str
    unavailable: str | None = None  # why it cannot be decided in this installation
    template_fields: bool = True  # whether templates in its strings are filled
    # Whether its function may use the item's folder (``Response.workdir``). An eval item's folder
    # is made only where something may use it: making and later removing one per item costs more
    # than a short eval's own work.
    uses_workdir: bool = True

    @cached_property
    def adapter(self) -> TypeAdapter[Any]:
        """The validator of its values, shared by the check types of one value type. Kept on the
        check type: looking it up by the value type hashed that (typing's hash, in Python) for
        every check of every eval collected."""
        return _adapter(self.value_type)


@cache
def _adapter(value_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(value_type)


def against_threshold(score: float, threshold: float) -> tuple[bool, str]:
    """Whether ``score`` passes (``>= threshold``) and ``0.83 >= threshold 0.80``: the threshold's
    own digits (at least 2, at most 6), and a failing score never printed equal to it."""
    ok = score >= threshold
    text = repr(threshold)
    digits = min(6, max(2, len(text.partition(".")[2]) if "e" not in text else 6))
    while not ok and digits < 6 and f"{score:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    return ok, f"{score:.{digits}f} {'>=' if ok else '<'} threshold {threshold:.{digits}f}"


def raised_at(exc: BaseException) -> str:
    """`` (at file:line)`` of the innermost frame of ``exc``, the user's code (nothing when it
    was raised right where it was caught)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if len(frames) > 1 else ""


PACKAGE_DIR = str(Path(__file__).resolve().parent) + os.sep  # where the plugin's own frames are
_STDLIB = sysconfig.get_paths()["stdlib"] + os.sep


def is_users_file(path: str) -> bool:
    """Whether a traceback frame in ``path`` is the user's code: outside pytest-vibeeval and the
    standard library."""
    return not path.startswith(PACKAGE_DIR) and not path.startswith(_STDLIB)


def users_frames(exc: BaseException, limit: int = 3) -> str:
    """The traceback of ``exc`` as Python prints it, with only the last ``limit`` of the user's
    frames (:func:`is_users_file`); empty when none is the user's (the call itself failed, e.g.
    the function takes other arguments)."""
    frames = [frame for frame in traceback.extract_tb(exc.__traceback__) if is_users_file(frame.filename)]
    if not frames:
        return ""
    shown = "".join(traceback.format_list(frames[-limit:]))
    return f"Traceback (most recent call last):\n{shown}{''.join(traceback.format_exception_only(exc))}"


def quote(text: str, limit: int = 60) -> str:
    """``text`` in quotes for a message, shortened to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
