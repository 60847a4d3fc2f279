"""``${NAME}`` references in the unified runner's paths: expanded from the environment and
``EVAL_ROOT``, each at most once (memoized), with loops and over-long expansions refused."""

from __future__ import annotations

import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$\{([^{}]*)\}")
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# The most characters the ${NAME} references in one text or value may expand to together: far more
# than any path needs, and small enough that variables doubling each other fail at once.
MAX_EXPANSION = 64 * 1024


class SubstitutionError(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message, self.hint = message, hint


def substitute(text: str, variables: Mapping[str, str]) -> str:
    """``text`` with each ``${NAME}`` replaced; values may hold references themselves (loops refused,
    and no expansion longer than :data:`MAX_EXPANSION`)."""
    return _expand(text, variables, (), {})


def _expand(text: str, variables: Mapping[str, str], stack: tuple[str, ...], done: dict[str, str]) -> str:
    """:func:`substitute` inside the variables ``stack`` (outermost first); ``done`` holds the values
    already expanded, so that a variable used many times is expanded once."""
    if "${" in _REFERENCE.sub("", text):
        raise SubstitutionError(
            f"malformed reference in {text!r}: '${{' without a matching '}}'", "write ${NAME}"
        )
    size = 0  # of the values substituted so far

    def replace(match: re.Match[str]) -> str:
        nonlocal size
        name = match.group(1)
        if not _VAR_NAME.fullmatch(name):
            raise SubstitutionError(
                f"malformed reference ${{{name}}}", "a variable name holds only letters, digits and '_'"
            )
        if name in stack:
            loop = " → ".join((*stack[stack.index(name) :], name))
            raise SubstitutionError(f"variable loop: {loop}", "give one of these variables a plain value")
        value = variables.get(name)
        if not value:
            state = "is empty" if value == "" else "is not set"
            raise SubstitutionError(
                f"variable {name} {state}", f"set the environment variable {name} or remove ${{{name}}}"
            )
        if name not in done:
            done[name] = _expand(value, variables, (*stack, name), done)
        size += len(done[name])
        if size > MAX_EXPANSION:
            raise _too_long(stack)
        return done[name]

    return _REFERENCE.sub(replace, text)


def _too_long(stack: tuple[str, ...]) -> SubstitutionError:
    """The error for an expansion of more than :data:`MAX_EXPANSION` characters inside ``stack``."""
    if not stack:
        return SubstitutionError(
            f"the ${{NAME}} references expand to more than {MAX_EXPANSION} characters",
            "refer to variables with shorter values",
        )
    where = f" (used by ${{{stack[0]}}})" if len(stack) > 1 else ""
    return SubstitutionError(
        f"variable {stack[-1]}{where} expands to more than {MAX_EXPANSION} characters",
        f"give {stack[-1]} a shorter value: one that repeats other variables grows fast",
    )
