"""What a check type is and what it sees: :class:`CheckType`, :class:`Response`, :class:`Verdict`.

Kept apart from :mod:`.checks` (the built-ins and the registry) so that modules of check types can
build on it without an import circle.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import StringConstraints, TypeAdapter

from .results import ToolCallRecord

NonEmptyStr = Annotated[str, StringConstraints(min_length=1)]
TOKEN = re.compile(r"\w+|[^\w\s]")


def count_tokens(text: str) -> int:
    """Local token estimate: runs of word characters plus each punctuation mark."""
    return len(TOKEN.findall(text))


@dataclass(frozen=True)
class Response:
    """What checks look at: the answer and what the provider reported about it."""

    text: str
    output_tokens: int | None = None  # as reported by the provider
    # llm_judge: (criteria, response text) -> (passed or None when undecided, message)
    judge: Callable[[str, str], tuple[bool | None, str]] | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()  # in the order they were made, where reported
    cost: float | None = None  # USD; None: unknown
    latency: float | None = None  # seconds
    input_tokens: int | None = None
    prompt: str | None = None  # the eval's prompt, templates filled
    workdir: Path | None = None  # the item's folder, where the answering agent ran

    def tokens(self) -> tuple[int, str]:
        if self.output_tokens is not None:
            return self.output_tokens, "reported by the provider"
        return count_tokens(self.text), "counted locally"


@dataclass(frozen=True)
class Verdict:
    passed: bool | None
    message: str
    score: float | None = None  # 0–1, for checks that grade rather than only pass or fail


class CheckError(Exception):
    """A check could not run (e.g. a custom check raised): the eval errors with this message."""


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

    @property
    def adapter(self) -> TypeAdapter[Any]:
        return _adapter(self.value_type)


@cache
def _adapter(value_type: Any) -> TypeAdapter[Any]:
    return TypeAdapter(value_type)


def quote(text: str, limit: int = 60) -> str:
    """``text`` in quotes for a message, shortened to ``limit`` characters."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
