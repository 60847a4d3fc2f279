"""Errors about user input: each names the file, the line if there is one, what is wrong, how to fix it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

Loc = tuple[str | int, ...]


def format_loc(loc: Loc) -> str:
    """Render a data path the way users read it: ``evals[1].checks[0].match``; a key a terminal would
    not show as is (a newline, a bidi control) is quoted and escaped: ``configurations['a\\nb']``."""
    out = ""
    for part in loc:
        if isinstance(part, int) or not part.isprintable():
            out += f"[{part!r}]"
        else:
            out += f".{part}" if out else part
    return out


def escaped(text: str) -> str:
    """``text`` with each character a terminal would not show as is (newlines, bidi controls,
    zero-width spaces) escaped as Python does: ``a\\u202eb``."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def terminal_safe(text: str) -> str:
    """``text`` for a terminal: its lines kept, every other character a terminal would act on (ANSI
    and OSC escape sequences, NUL, bidi controls) escaped as :func:`escaped` does."""
    return "\n".join(escaped(line) for line in text.split("\n"))


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``word``, when one is close enough, else None."""
    matches = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return matches[0] if matches else None


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` when a candidate is close to ``word``, else an empty string."""
    match = closest(word, candidates)
    return f" (did you mean {match!r}?)" if match else ""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input file."""

    message: str
    line: int | None = None
    loc: Loc = ()
    hint: str | None = None

    def render(self, path: str) -> str:
        where = f"{escaped(path)}:{self.line}" if self.line else escaped(path)
        what = f"{format_loc(self.loc)}: {self.message}" if self.loc else self.message
        text = f"{where}: {what}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


@dataclass
class InputError(Exception):
    """One or more problems with one input file; rendered without a traceback."""

    path: str
    problems: Sequence[Problem] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.render())

    def __reduce__(self) -> tuple[type[InputError], tuple[str, list[Problem]]]:
        # Exception pickling would rebuild the error from its rendered text alone
        return (type(self), (self.path, list(self.problems)))

    def render(self, root: Path | None = None) -> str:
        """The problems, one per line; the path relative to ``root`` when it is inside it."""
        path = self.path
        if root is not None and Path(path).is_absolute() and Path(path).is_relative_to(root):
            path = Path(path).relative_to(root).as_posix()
        return "\n".join(problem.render(path) for problem in self.problems)

    @classmethod
    def single(
        cls, path: str | Path, message: str, *, line: int | None = None, hint: str | None = None
    ) -> InputError:
        return cls(str(path), [Problem(message, line=line, hint=hint)])
