"""A ``command-registry.json``: its steps checked, with a message for an entry (or a file) that
is not written as the object a step is."""

from __future__ import annotations

import json
import shlex
from typing import Any

from pydantic import ValidationError

from ..errors import Problem
from ..models import CommandDefinition
from ..models.eval_config import REGISTRY
from .suite import pydantic_problems
from .validation_messages import given
from .yamlsource import Document, yaml_kind

_EXAMPLE = ["npm", "run", "build"]


def load_registry(doc: Document) -> tuple[dict[str, CommandDefinition] | None, list[Problem]]:
    """The registry ``doc`` holds, or None and every problem, in the file's order."""
    data = doc.data
    if not isinstance(data, dict):
        return None, [_file_problem(data)]
    problems = [
        _entry_problem(doc, str(name), value) for name, value in data.items() if not isinstance(value, dict)
    ]
    try:
        registry = REGISTRY.validate_python({k: v for k, v in data.items() if isinstance(v, dict)})
    except ValidationError as exc:
        problems += pydantic_problems(exc, doc)
    if problems:
        return None, sorted(problems, key=lambda problem: problem.line or 0)
    return registry, []


def _step(name: str, words: list[str]) -> str:
    command, *args = words or _EXAMPLE
    return f"{json.dumps(name)}: {json.dumps({'command': command, 'args': args})}"


def _file_problem(data: Any) -> Problem:
    names = [item for item in data if isinstance(item, str)] if isinstance(data, list) else []
    example = _step(names[0], ["npm", "run", names[0]]) if names else _step("build", _EXAMPLE)
    listed = " (a list of step names: each needs its command)" if names else ""
    kind = f"{yaml_kind(data)}{listed}"
    return Problem(
        f"the registry must be an object mapping each step's name to its command, not {kind}",
        line=1,
        hint=f"write {{{example}, …}}",
    )


def _entry_problem(doc: Document, name: str, value: Any) -> Problem:
    words: list[str] = []
    if isinstance(value, str):
        try:
            words = shlex.split(value)
        except ValueError:  # an unclosed quote
            words = value.split()
    elif isinstance(value, list) and all(isinstance(word, str) for word in value):
        words = list(value)
    return Problem(
        f"must be an object holding the step's command, not {given(value)}",
        line=doc.line_of((name,)),
        loc=(name,),
        hint=f'write {_step(name, words)} (and a "timeout" in milliseconds if it needs one)',
    )
