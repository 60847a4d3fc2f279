"""What the rubric reads in an answer's text: its Markdown (code blocks and prose), how complete it
is for its task, and how accurate (code that does not parse, error messages it prints)."""

from __future__ import annotations

import ast
import json
import re
import textwrap
import warnings
from dataclasses import dataclass
from functools import lru_cache
from itertools import chain, islice
from typing import Literal

import yaml

from ..loading.yamlsource import LIBYAML_DEPTH_PROBLEM
from ..text_input import text_lines
from .transcripts import FAILURE_PATTERN

Task = Literal["coding", "general"]


# --- Markdown --------------------------------------------------------------------------------------

FENCE_OPEN = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})(?P<info>.*)")
"""An opening code fence (CommonMark): up to 3 spaces, 3+ backticks or tildes, an info string whose
first word is the block's language. A backtick fence's info string holds no backtick."""
FENCE_CLOSE = re.compile(r" {0,3}(?P<fence>`{3,}|~{3,})[ \t]*")
"""A closing fence: the opening's character, at least as many, nothing after but spaces."""


@dataclass(frozen=True)
class CodeBlock:
    """One fenced code block: its language (the info string's first word, lower case; ``""`` when
    untagged), its text, and whether a closing fence ends it (else it runs to the end)."""

    language: str
    text: str
    closed: bool = True


@dataclass(frozen=True)
class Markdown:
    """An output split into its prose (the lines outside fenced code blocks, fences excluded) and its
    fenced code blocks."""

    prose: str
    blocks: tuple[CodeBlock, ...]


# The readings of one answer are cached by its text, as the Markdown split is: the rubric reads
# an answer several times (its errors for accuracy and for error_rate), and answers often repeat.
CACHED_ANSWERS = 16


@lru_cache(maxsize=CACHED_ANSWERS)
def split_markdown(output: str) -> Markdown:
    """Split ``output`` into prose and fenced code blocks (an unclosed fence runs to the end)."""
    prose: list[str] = []
    blocks: list[CodeBlock] = []
    fence: str | None = None
    language = ""
    body: list[str] = []
    for line in output.split("\n"):
        line = line.removesuffix("\r")
        if fence is None:
            opening = FENCE_OPEN.fullmatch(line)
            if opening is None or (opening["fence"][0] == "`" and "`" in opening["info"]):
                prose.append(line)
                continue
            fence, body = opening["fence"], []
            words = opening["info"].split()
            language = words[0].lower() if words else ""
            continue
        closing = FENCE_CLOSE.fullmatch(line)
        if closing and closing["fence"][0] == fence[0] and len(closing["fence"]) >= len(fence):
            blocks.append(CodeBlock(language, "\n".join(body)))
            fence = None
        else:
            body.append(line)
    if fence is not None:
        blocks.append(CodeBlock(language, "\n".join(body), closed=False))
    return Markdown("\n".join(prose), tuple(blocks))


# --- Completeness ----------------------------------------------------------------------------------

WORD = re.compile(r"[^\W\d_][\w'\u2019-]*")
"""A word: a letter followed by letters, digits, ``_``, apostrophes or hyphens."""
ANSWER_CHAR = re.compile(r"[^\W_]")
"""What makes prose an answer: a letter or a digit (so a bare ``42`` answers)."""

REFUSAL = re.compile(
    r"\bI(?:\s+(?:cannot|can\s*not|can['\u2019]t|won['\u2019]t|will\s+not|am\s+(?:unable|not\s+able))"
    r"|['\u2019]m\s+(?:unable|not\s+able))\s+(?:to\s+)?(?:help|assist|do\s+that|provide|comply|complete|fulfil)"
    r"|\bas\s+an\s+AI(?:\s+language)?\s+model\b",
    re.IGNORECASE,
)
"""A refusal: "I cannot / can't / won't / will not / am unable to / am not able to / I'm unable to"
followed by help, assist, do that, provide, comply, complete or fulfil; or "as an AI (language) model"."""

SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")
"""Where one sentence ends and the next begins: whitespace after ``.``, ``!`` or ``?``."""
MIN_SENTENCE_WORDS = 3
"""A sentence: a piece of prose ending in ``.``, ``!`` or ``?`` (then whitespace or the end) that holds
at least this many words (so list numbers such as ``1.`` and abbreviations are not sentences)."""

CAUSAL = re.compile(
    r"\b(?:because|since|so\s+that|therefore|thus|hence|which\s+means|this\s+means|that\s+means"
    r"|this\s+is\s+why|that\s+is\s+why|that['\u2019]s\s+why|due\s+to|as\s+a\s+result|in\s+order\s+to|the\s+reason)\b",
    re.IGNORECASE,
)
"""A causal connective, any case: because, since, so that, therefore, thus, hence, which/this/that
means, this/that is why, that's why, due to, as a result, in order to, the reason."""

NEXT_STEPS = re.compile(
    r"\b(?:next\s+steps?|recommend\w*|suggest\w*|consider(?:ing)?|you\s+(?:can|could|should|may|might"
    r"|need\s+to)(?!['\u2019]t)|to\s+run|try(?:ing)?|make\s+sure|follow[- ]up)\b",
    re.IGNORECASE,
)
"""A next step or recommendation, any case: next step(s), recommend…, suggest…, consider(ing),
you can/could/should/may/might/need to (not "can't"), to run, try(ing), make sure, follow-up / follow up."""


def has_refusal(output: str) -> bool:
    """Whether the prose holds a :data:`REFUSAL` phrase."""
    return REFUSAL.search(split_markdown(output).prose) is not None


def has_direct_answer(output: str) -> bool:
    """Whether the prose holds a letter or digit (:data:`ANSWER_CHAR`) and no refusal phrase."""
    return ANSWER_CHAR.search(split_markdown(output).prose) is not None and not has_refusal(output)


def has_code_block(output: str) -> bool:
    """Whether the output holds a fenced code block with at least one non-blank line."""
    return any(block.text.strip() for block in split_markdown(output).blocks)


def count_sentences(prose: str, stop: int | None = None) -> int:
    """Sentences in ``prose`` (see :data:`MIN_SENTENCE_WORDS`), counting up to ``stop`` when given."""
    count = start = 0
    ends = chain((match.start() for match in SENTENCE_BREAK.finditer(prose)), [len(prose)])
    for end in ends:
        piece = prose[start:end].rstrip()
        start = end
        words = len(list(islice(WORD.finditer(piece), MIN_SENTENCE_WORDS)))
        if piece.endswith((".", "!", "?")) and words >= MIN_SENTENCE_WORDS:
            count += 1
            if stop is not None and count >= stop:
                break
    return count


def has_explanation(output: str) -> bool:
    """Whether the prose holds at least 2 sentences or a :data:`CAUSAL` connective."""
    prose = split_markdown(output).prose
    return count_sentences(prose, stop=2) >= 2 or CAUSAL.search(prose) is not None


def has_next_steps(output: str) -> bool:
    """Whether the prose holds a :data:`NEXT_STEPS` phrase."""
    return NEXT_STEPS.search(split_markdown(output).prose) is not None


@lru_cache(maxsize=CACHED_ANSWERS)
def completeness_tenths(output: str, task: Task) -> int:
    return (
        3 * has_direct_answer(output)
        + 3 * (task == "coding" and has_code_block(output))
        + 2 * has_explanation(output)
        + 2 * has_next_steps(output)
    )


def completeness(output: str, task: Task) -> float:
    """0–1: +0.3 a direct answer, +0.3 a code block (coding tasks only), +0.2 an explanation,
    +0.2 next steps or recommendations."""
    return completeness_tenths(output, task) / 10


# --- Accuracy --------------------------------------------------------------------------------------

PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})
JSON_TAGS = frozenset({"json"})
YAML_TAGS = frozenset({"yaml", "yml"})
MAX_BLOCK_CHARS = 200_000
"""Longer code blocks are not checked."""
MAX_CHECKED_CHARS = 1_000_000
"""At most this many characters of code are checked per output; later blocks are not."""
MAX_YAML_DEPTH = 100
"""YAML nested deeper is not checked (libyaml's composer recursion crashes on deep nesting, and its
parser slows quadratically)."""
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Unchecked(Exception):
    """A code block too costly to check: it counts as neither valid nor invalid."""


def _check_yaml(text: str) -> None:
    """Parse YAML to its event stream and check that each alias names an earlier anchor of its document:
    what composing checks, without building (or expanding) anything, so alias bombs cost nothing and
    custom tags such as ``!Ref`` are not errors. Raises ``yaml.YAMLError``, or :class:`_Unchecked`
    beyond :data:`MAX_YAML_DEPTH`."""
    try:
        _check_yaml_events(text)
    except yaml.MarkedYAMLError as exc:
        if exc.problem == LIBYAML_DEPTH_PROBLEM:
            raise _Unchecked from None
        raise


def _check_yaml_events(text: str) -> None:
    depth = 0
    anchors: set[str] = set()
    for event in yaml.parse(text, Loader=YAML_LOADER):
        if isinstance(event, yaml.DocumentStartEvent):
            anchors.clear()
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in anchors:
                where = f" (line {event.start_mark.line + 1})" if event.start_mark is not None else ""
                raise yaml.YAMLError(f"found undefined alias {event.anchor!r}{where}")
        elif isinstance(event, yaml.NodeEvent) and event.anchor is not None:
            anchors.add(event.anchor)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise _Unchecked
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _parse(language: str, text: str) -> None:
    """Parse ``text`` as ``language``; raises on a syntax error."""
    if language in PYTHON_TAGS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(textwrap.dedent(text))
    elif language in JSON_TAGS:
        json.loads(text)
    else:
        _check_yaml(text)


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        return f"{exc.problem} (line {mark.line + 1})" if mark is not None else exc.problem
    return str(exc).split("\n", 1)[0]


def _nul_error(text: str) -> str | None:
    """Why Python cannot read ``text``, which holds a NUL character, with its line (Python says it
    without one: a SyntaxError, or a ValueError on early 3.11 releases); None without one."""
    if "\x00" not in text:
        return None
    line = next(number for number, part in enumerate(text_lines(text), 1) if "\x00" in part)
    return f"a NUL character (\\x00) at line {line}, which Python source cannot hold"


def _block_error(block: CodeBlock) -> str | None:
    """Why the block does not parse; ``None`` when it does, or when it is too deep or large to parse."""
    if block.language in PYTHON_TAGS and (nul := _nul_error(block.text)):
        return nul
    try:
        _parse(block.language, block.text)
    except (_Unchecked, RecursionError, MemoryError):
        return None
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})" if exc.lineno is not None else exc.msg
    except yaml.YAMLError as exc:
        return _yaml_message(exc)
    except ValueError as exc:  # json.JSONDecodeError
        return str(exc)
    return None


def syntax_errors(output: str, cut: str | None = None) -> list[str]:
    """The fenced blocks tagged python/py/python3/py3, json, yaml/yml that do not parse, e.g.
    ``"python block 1: invalid syntax (line 2)"``. Other blocks, blank ones, blocks over
    :data:`MAX_BLOCK_CHARS` and those past :data:`MAX_CHECKED_CHARS` are not checked, nor, in an
    excerpt of a longer answer, a block holding ``cut`` (the excerpt's marker line): the cut
    left out part of it."""
    errors: list[str] = []
    budget = MAX_CHECKED_CHARS
    for number, block in enumerate(split_markdown(output).blocks, 1):
        if block.language not in PYTHON_TAGS | JSON_TAGS | YAML_TAGS or not block.text.strip():
            continue
        if cut is not None and cut in block.text:
            continue
        if len(block.text) > MAX_BLOCK_CHARS or len(block.text) > budget:
            continue
        budget -= len(block.text)
        error = _block_error(block)
        if error is not None:
            errors.append(f"{block.language} block {number}: {error}")
    return errors


def has_syntax_errors(output: str, cut: str | None = None) -> bool:
    """Whether a checked code block does not parse (see :func:`syntax_errors`)."""
    return bool(syntax_errors(output, cut))


@lru_cache(maxsize=CACHED_ANSWERS)
def count_output_errors(output: str) -> int:
    """Error lines in the prose: lines matching the tool log's ``FAILURE_PATTERN`` (a traceback header,
    ``<Name>Error:`` / ``<Name>Exception:``, ``error:`` / ``fatal:``). A Python traceback counts once: its
    indented frame lines and the exception line that ends it belong to its header."""
    count = 0
    in_traceback = False
    for line in split_markdown(output).prose.split("\n"):
        if line.lstrip().startswith("Traceback (most recent call last):"):
            count += 1
            in_traceback = True
            continue
        if in_traceback:
            if line[:1] in (" ", "\t"):
                continue
            in_traceback = False
            if FAILURE_PATTERN.match(line):
                continue
        count += FAILURE_PATTERN.match(line) is not None
    return count


def has_obvious_errors(output: str) -> bool:
    """Whether the prose holds an error line (:func:`count_output_errors`) or a refusal."""
    return count_output_errors(output) > 0 or has_refusal(output)


@lru_cache(maxsize=CACHED_ANSWERS)
def accuracy_tenths(output: str, passed: bool, cut: str | None = None) -> int:
    return 4 * (not has_syntax_errors(output, cut)) + 3 * (not has_obvious_errors(output)) + 3 * passed


def accuracy(output: str, passed: bool, cut: str | None = None) -> float:
    """0–1: +0.4 no syntax errors, +0.3 no obvious errors, +0.3 follows instructions (``passed``: the
    eval's own checks or grade steps passed). ``cut``: the marker line of an excerpt (see
    :func:`syntax_errors`)."""
    return accuracy_tenths(output, passed, cut) / 10
