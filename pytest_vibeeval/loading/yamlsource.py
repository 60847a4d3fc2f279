"""Read YAML and JSON input files into plain data, remembering the line of every node."""

from __future__ import annotations

import contextlib
import datetime
import functools
import json
import operator
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import yaml

from ..bounded_read import UnreadableFile
from ..errors import InputError, Loc, Problem
from ..surrogates import LONE_ESCAPE_HINT, lone_escape
from ..text_input import NotUtf8, read_input_text
from .parse_cache import ParseStore, parser_fingerprint, text_digest

MAX_NODES = 200_000  # nodes reached again through aliases beyond this are refused (YAML bombs)
MAX_DEPTH = 64
MAX_INPUT_BYTES = 64 * 2**20  # a suite, config or prompt file larger than this is refused unread
INPUT_HINT = "suites, configs and the files they name are read from regular files of at most 64 MiB"
# libyaml's parser is ~10x faster and keeps the same node marks
_BASE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class FastResolving(yaml.resolver.BaseResolver):
    """Makes a safe loader (libyaml's or the pure-Python one: put it first among the bases)
    cheaper where no path resolver is registered (PyYAML's experimental ``add_path_resolver``; see
    :func:`_loader_class`). Composing calls three resolver methods in Python for every node, about
    a fifth of reading a suite:

    - ``descend_resolver`` and ``ascend_resolver`` do nothing without path resolvers: here they are
      C functions that take the same arguments and do nothing, costing a tenth of a Python call;
    - ``resolve`` gives the nodes no implicit resolver can claim their default tag without building
      and walking a list of resolvers per scalar; any other node takes PyYAML's own path."""

    # (node, index) and (): C callables are called as plain functions, not bound as methods
    descend_resolver = operator.is_  # type: ignore[assignment]
    ascend_resolver = tuple  # type: ignore[assignment]

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode:
            claimable = self.yaml_implicit_resolvers
            if not implicit[0] or (value and value[0] not in claimable and None not in claimable):
                return self.DEFAULT_SCALAR_TAG
        elif kind is yaml.MappingNode:
            return self.DEFAULT_MAPPING_TAG
        elif kind is yaml.SequenceNode:
            return self.DEFAULT_SEQUENCE_TAG
        return super().resolve(kind, value, implicit)  # type: ignore[no-untyped-call]


class _FastResolvingLoader(FastResolving, _BASE_LOADER):  # type: ignore[valid-type,misc]  # either loader class
    """The safe loader this process reads with, made cheaper by :class:`FastResolving`."""


_LOADER: type[yaml.SafeLoader] = _FastResolvingLoader


def _loader_class() -> type[yaml.SafeLoader]:
    """:data:`_LOADER`, or the loader it refines once a path resolver is registered (its shortcuts
    hold only without one)."""
    if _LOADER is _FastResolvingLoader and _FastResolvingLoader.yaml_path_resolvers:
        return _BASE_LOADER
    return _LOADER


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


# libyaml as PyYAML 6.0.4 and later build it refuses nesting past 1 000 levels while scanning, so
# its composer's recursion in C cannot overflow the stack: the event scan before composing (which
# costs a third of the parse) is needed only with older ones and the pure-Python composer.
_LIBYAML_BOUNDS_DEPTH = _version(yaml.__version__) >= (6, 0, 4)
STANDARD_TAG = "tag:yaml.org,2002:"
STR_TAG = STANDARD_TAG + "str"
VALUE_TAG = "tag:yaml.org,2002:value"
_SAFE_TAGS = frozenset(tag for tag in yaml.SafeLoader.yaml_constructors if tag)  # str, int, seq, map, …


@dataclass
class Document:
    """Parsed data plus the 1-based line of each node, keyed by its data path."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)
    # the unquoted values YAML 1.1 read as text that Python reads as numbers (`1e305`: YAML wants
    # `1.0e+305`), so that a message does not say to drop quotes that are not there
    numbers_as_text: set[Loc] = field(default_factory=set)
    # the text values that hold "{{" (where a template may be), with their paths, in document
    # order; None where the parser did not note them (then the data is walked)
    templated: list[tuple[Loc, str]] | None = None

    @functools.cached_property
    def folder(self) -> Path:
        """The folder of the file (the one relative paths in it start from): made once, not per check."""
        return self.path.parent

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest node on ``loc`` that exists in the data (see :meth:`clean_loc`)."""
        line = self.lines.get(loc)  # a node's own path (every key of ``lines`` is one): no walk
        if line is not None:
            return line
        path = self.clean_loc(loc)
        for depth in range(len(path), -1, -1):
            if path[:depth] in self.lines:
                return self.lines[path[:depth]]
        return None

    def clean_loc(self, loc: Loc) -> Loc:
        """``loc`` without the segments that are not keys of the data (pydantic adds union tags
        and model names), so any validation location maps to a real node."""
        node: Any = self.data
        out: Loc = ()
        for part in loc:
            child = _child(node, part)
            if child is _ABSENT:
                continue
            node = child
            out = (*out, part)
        return out


_ABSENT = object()


def _child(node: Any, part: str | int) -> Any:
    if isinstance(node, dict) and part in node:
        return node[part]
    if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
        return node[part]
    return _ABSENT


_SCALAR = yaml.ScalarNode
MERGE_TAG = "tag:yaml.org,2002:merge"
INT_TAG = "tag:yaml.org,2002:int"
_STARTS = frozenset({yaml.SequenceStartEvent, yaml.MappingStartEvent})
_ENDS = frozenset({yaml.SequenceEndEvent, yaml.MappingEndEvent})
# how a finite number Python reads in a text starts (a text that starts otherwise is none)
_NUMBER_STARTS = frozenset("0123456789+-.")
# what YAML counts as a line break, as the parser's marks do (CRLF is one)
_LINE_BREAK = re.compile(r"\r\n|[\r\n\x85\u2028\u2029]")


class YamlSyntaxError(InputError):
    """The text is not YAML at all (as opposed to YAML this plugin refuses, e.g. duplicate keys)."""


class _Builder:
    def __init__(self, path: Path, loader: yaml.SafeLoader, aliases: bool) -> None:
        self.path = path
        self.loader = loader
        self.lines: dict[Loc, int] = {}
        # without aliases no node is reached twice: nothing to count
        self.built: set[yaml.Node] | None = set() if aliases else None
        self.count = 0
        self.numbers_as_text: set[Loc] = set()
        self.templated: list[tuple[Loc, str]] = []

    def _tick(self, node: yaml.Node) -> None:
        """Count ``node`` if it was built before (reached again through an alias or a merge key), and
        refuse documents whose aliases expand to more than :data:`MAX_NODES` such nodes."""
        if self.built is None:
            return
        if node not in self.built:
            self.built.add(node)
            return
        self.count += 1
        if self.count > MAX_NODES:
            raise InputError.single(
                self.path,
                f"document expands to more than {MAX_NODES} nodes (aliases referring to aliases?)",
                line=node.start_mark.line + 1,
                hint="write the data out plainly instead of nesting YAML aliases",
            )

    def _too_deep(self, node: yaml.Node) -> InputError:
        line = node.start_mark.line + 1
        if not self.count:  # no node was reached twice: written this deep, not through an alias
            return _nested_too_deep(self.path, line)
        return InputError.single(
            self.path, f"nesting deeper than {MAX_DEPTH} levels (a recursive alias?)", line=line
        )

    def _key(self, key_node: yaml.Node) -> str | int:
        if not isinstance(key_node, yaml.ScalarNode):
            raise InputError.single(
                self.path, "mapping keys must be plain scalars", line=key_node.start_mark.line + 1
            )
        constructed = self._construct(key_node)
        # `yes:`/`null:` keys stay the text the user wrote, not True/None
        if isinstance(constructed, str | int) and not isinstance(constructed, bool):
            return constructed
        return str(key_node.value)

    def _construct(self, node: yaml.Node) -> Any:
        """The scalar's value; one Python cannot make (an integer of 5000 digits, `2024-02-30`, an
        explicit `!!bool maybe`) is an error on its line."""
        if node.tag == STR_TAG and isinstance(node, yaml.ScalarNode):
            return node.value  # what the constructor returns, without its machinery
        try:
            return self.loader.construct_object(node, deep=True)
        # PyYAML's constructors let Python's own errors out; KeyError and AttributeError come from
        # explicitly tagged text (`!!bool maybe`, `!!timestamp x`)
        except (ValueError, KeyError, AttributeError) as exc:
            raise InputError.single(
                self.path,
                _unreadable(node, exc),
                line=node.start_mark.line + 1,
                hint="quote the value to keep it as text",
            ) from None

    def _entries(self, node: yaml.MappingNode, depth: int) -> list[tuple[str | int, yaml.Node, yaml.Node]]:
        """The mapping's (key, key node, value node) entries with ``<<`` merge keys resolved.

        Keys written in the mapping win over merged ones, and earlier merge sources win over later
        ones (YAML merge-key semantics). A key written twice in the mapping itself is an error.
        """
        if depth > MAX_DEPTH:
            raise self._too_deep(node)
        own: list[tuple[str | int, yaml.Node, yaml.Node]] = []
        seen: dict[str | int, yaml.Node] = {}
        sources: list[yaml.MappingNode] = []
        for key_node, value_node in node.value:
            if self.built is not None:
                self._tick(key_node)
            if key_node.tag == MERGE_TAG:
                items = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for item in items:
                    if not isinstance(item, yaml.MappingNode):
                        raise InputError.single(
                            self.path,
                            "`<<` (YAML merge key) needs a mapping or a list of mappings",
                            line=item.start_mark.line + 1,
                        )
                    sources.append(item)
                continue
            # most keys are plain text: its value, as _key would return it, without two calls
            plain = key_node.tag == STR_TAG and type(key_node) is _SCALAR
            key = key_node.value if plain else self._key(key_node)
            if key in seen:
                raise InputError.single(
                    self.path,
                    f"duplicate key {key!r} (first defined on line {seen[key].start_mark.line + 1})",
                    line=key_node.start_mark.line + 1,
                    hint="each key may appear once in a mapping; remove or rename one of them",
                )
            seen[key] = key_node
            own.append((key, key_node, value_node))
        for source in sources:
            for key, key_node, value_node in self._entries(source, depth + 1):
                if key not in seen:
                    seen[key] = key_node
                    own.append((key, key_node, value_node))
        return own

    def _note_number(self, node: yaml.ScalarNode, loc: Loc) -> None:
        """Note ``loc`` if ``node`` is a number written without quotes that YAML 1.1 reads as text."""
        if node.style:
            return
        try:
            float(node.value)
        except ValueError:
            return
        self.numbers_as_text.add(loc)

    def build(self, node: yaml.Node, loc: Loc, depth: int) -> Any:
        if self.built is not None:
            self._tick(node)
        if depth > MAX_DEPTH:
            raise self._too_deep(node)
        if node.tag == VALUE_TAG and isinstance(node, yaml.ScalarNode):
            node.tag = STR_TAG  # YAML 1.1 resolves a plain `=` to this tag by itself: it is the text "="
        if node.tag not in _SAFE_TAGS:
            raise InputError.single(
                self.path,
                f"the YAML tag {_written_tag(node.tag)} is not accepted",
                line=node.start_mark.line + 1,
                hint="remove the tag: inputs hold plain data (text, numbers, booleans, lists and mappings)",
            )
        lines = self.lines
        if loc not in lines:  # a mapping's value: its key's line is there already
            lines[loc] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            result: dict[Any, Any] = {}
            for key, key_node, value_node in self._entries(node, depth):
                child = (*loc, key)
                lines[child] = key_node.start_mark.line + 1
                result[key] = self.build(value_node, child, depth + 1)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, (*loc, i), depth + 1) for i, child in enumerate(node.value)]
        if node.tag == STR_TAG:  # most scalars: the text itself (see _construct)
            value = node.value
            if value[:1] in _NUMBER_STARTS:
                self._note_number(cast(yaml.ScalarNode, node), loc)
            if "{{" in value:  # every template starts so
                self.templated.append((loc, value))
            return value
        return self._construct(node)


def _written_tag(tag: str) -> str:
    """``tag`` as it is usually written: ``!!python/name:x`` for ``tag:yaml.org,2002:python/name:x``."""
    return f"`!!{tag.removeprefix(STANDARD_TAG)}`" if tag.startswith(STANDARD_TAG) else f"`{tag}`"


def _unreadable(node: yaml.Node, exc: Exception) -> str:
    """Why ``node``'s value cannot be read, without Python's advice to raise its digit limit."""
    limit = sys.get_int_max_str_digits()
    digits = sum(char.isdigit() for char in str(node.value))
    if node.tag == INT_TAG and limit and digits > limit:
        return f"an integer of {digits} digits is too long (at most {limit} digits)"
    kind = str(node.tag).rsplit(":", 1)[-1]
    return f"not a valid {kind} value" + (f": {exc}" if isinstance(exc, ValueError) else "")


def _scan_events(path: Path, text: str) -> bool:
    """Refuse collections nested deeper than :data:`MAX_DEPTH` before the document is composed, at the
    first one too deep; return whether the document holds aliases.

    libyaml composes recursively in C: 100 000 nested lists overflow the stack and kill the interpreter
    before :class:`_Builder` could check the depth. Reading the events stops at the first collection
    too deep, which also spares libyaml's scanner its time quadratic in the flow depth.
    """
    depth = 0  # collections open around the next node; the root is at depth 0
    aliases = False
    for event in yaml.parse(text, Loader=_LOADER):
        kind = type(event)
        if kind in _STARTS:
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise _nested_too_deep(path, mark.line + 1 if mark else None)
            depth += 1
        elif kind in _ENDS:
            depth -= 1
        elif kind is yaml.AliasEvent:
            aliases = True
        elif kind is yaml.DocumentEndEvent:
            break  # a second document is the composer's error to report
    return aliases


LIBYAML_DEPTH_PROBLEM = "exceeded maximum nesting depth"
"""What libyaml's scanner (PyYAML 6.0.4 and later) says past its own limit of 1 000 levels, which it
can reach before :func:`_scan_events` sees the first event too deep."""


def _nested_too_deep(path: Path, line: int | None) -> InputError:
    return InputError.single(
        path,
        f"nesting deeper than {MAX_DEPTH} levels",
        line=line,
        hint="flatten the data: no suite or config needs lists and mappings nested this deep",
    )


def _reader_error(path: Path, text: str, exc: yaml.reader.ReaderError) -> YamlSyntaxError:
    """The error for a character YAML does not allow anywhere (NUL, BEL...), on its line and column.

    The reader reports an offset (in bytes for libyaml, characters for PyYAML), not a line; the
    character's first occurrence in the text is where the reader stopped."""
    if not isinstance(exc.character, int):
        return YamlSyntaxError(str(path), [Problem(f"invalid YAML: {exc}")])
    code: int = exc.character
    offset = text.find(chr(code))
    line = column = None
    if offset >= 0:
        breaks = [match.end() for match in _LINE_BREAK.finditer(text, 0, offset)]
        line = len(breaks) + 1
        column = offset - (breaks[-1] if breaks else 0) + 1
    where = f" in column {column}" if column else ""
    escape = f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"
    return YamlSyntaxError(
        str(path),
        [
            Problem(
                f"invalid YAML: unacceptable character #x{code:04x} (U+{code:04X}){where}: {exc.reason}",
                line=line,
                hint=f'remove it, or write it as the escape "{escape}" inside a double-quoted string',
            )
        ],
    )


def parse_yaml(path: Path, text: str) -> Document:
    """Parse YAML text; every syntax error becomes an :class:`InputError` with its line."""
    try:
        bounded = _LIBYAML_BOUNDS_DEPTH and not issubclass(_LOADER, yaml.SafeLoader)
        # An alias names an anchor (``&name``) defined before it: without a "&" there is none.
        aliases = "&" in text if bounded else _scan_events(path, text)
        loader = _loader_class()(text)
        try:
            node = loader.get_single_node()
            if node is None:
                hint = None if path.suffix.lower() == ".json" else "a suite needs `metadata` and `evals`"
                raise InputError.single(path, "the file is empty", hint=hint)
            builder = _Builder(path, loader, aliases)
            data = builder.build(node, (), 0)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # At the end of a text without a final line break the parser's mark is one line past it.
        last = sum(1 for _ in _LINE_BREAK.finditer(text)) + 1
        line = min(mark.line + 1, last) if mark else None
        if exc.problem == LIBYAML_DEPTH_PROBLEM:
            with contextlib.suppress(yaml.YAMLError):
                _scan_events(path, text)  # raises at the first collection too deep, not the 1 000th
            raise _nested_too_deep(path, line) from None
        problem = exc.problem or str(exc)
        context = f" ({exc.context})" if exc.context else ""
        lines = _LINE_BREAK.split(text)
        line_text = lines[line - 1] if line and line <= len(lines) else ""
        from .syntax_hints import yaml_syntax_hint  # a file that does not parse

        raise YamlSyntaxError(
            str(path),
            [Problem(f"invalid YAML: {problem}{context}", line=line, hint=yaml_syntax_hint(line_text))],
        ) from None
    except yaml.reader.ReaderError as exc:
        raise _reader_error(path, text, exc) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(path), [Problem(f"invalid YAML: {exc}")]) from None
    return Document(path, data, builder.lines, builder.numbers_as_text, builder.templated)


def load_document(path: Path, kept: ParseStore | None = None) -> Document:
    """Read a ``.yaml``/``.yml``/``.json`` file. A JSON file's values are the JSON parser's (YAML 1.1
    would read ``1e3`` as text, and accept a trailing comma); the YAML parser reads it too, for
    its line numbers and duplicate keys, unless it cannot (``\\/``): then it has no line numbers.
    ``kept``: where the parse of the same text by the same parser is taken from, and kept."""
    try:
        text = read_input_text(path, MAX_INPUT_BYTES)
    except NotUtf8 as exc:
        raise not_utf8(path, exc) from None
    except OSError as exc:
        raise InputError.single(path, f"cannot read the file: {exc.strerror}") from None
    except UnreadableFile as exc:
        raise InputError.single(path, str(exc), hint=INPUT_HINT) from None
    if text.startswith("\ufeff"):  # one byte-order mark was dropped; the parser stumbles on another
        raise InputError.single(
            path,
            "the file starts with more than one byte-order mark (U+FEFF)",
            line=1,
            hint='save the file as UTF-8 with at most one BOM (an editor\'s "UTF-8" without BOM is best)',
        )
    if kept is None:
        return _parse_document(path, text)
    fingerprint = parser_fingerprint(_loader_class(), (MAX_NODES, MAX_DEPTH))
    digest = text_digest(text)
    parsed = kept.read(path, fingerprint, digest)
    if parsed is not None:
        return Document(path, *parsed)
    document = _parse_document(path, text)
    parsed = (document.data, document.lines, document.numbers_as_text, document.templated)
    kept.write(path, fingerprint, digest, parsed)
    return document


def _parse_document(path: Path, text: str) -> Document:
    """The document of ``text``, read from ``path`` (see :func:`load_document`)."""
    if path.suffix.lower() != ".json" or not text.strip():
        return parse_yaml(path, text)
    try:
        data = json.loads(text, object_pairs_hook=unique_json_keys, parse_constant=no_json_constant)
    except json.JSONDecodeError as exc:
        from .syntax_hints import json_syntax  # a file that does not parse

        syntax = json_syntax(exc)
        message = f"invalid JSON: {syntax.message}"
        raise InputError.single(path, message, line=syntax.line, hint=syntax.hint) from None
    except JsonProblem as exc:
        with contextlib.suppress(YamlSyntaxError):
            parse_yaml(path, text)  # says the same with the line, where it can read the file
        raise InputError.single(path, f"invalid JSON: {exc}") from None
    lone = lone_escape(text, data)
    if lone is not None:
        line = text.count("\n", 0, lone.offset) + 1
        raise InputError.single(path, f"invalid JSON: {lone.message}", line=line, hint=LONE_ESCAPE_HINT)
    try:
        located = parse_yaml(path, text)
    except YamlSyntaxError:
        return Document(path, data)
    return Document(path, data, located.lines)


def not_utf8(path: Path, exc: NotUtf8) -> InputError:
    """The error for a file that is not UTF-8, on the line of its first byte that is not."""
    return InputError.single(path, exc.message, line=exc.line, hint=exc.hint)


class JsonProblem(ValueError):
    """What the JSON parser accepts but a JSON file must not hold."""


def unique_json_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise JsonProblem(f"duplicate key {key!r}")
        seen[key] = value
    return seen


def no_json_constant(name: str) -> Any:
    raise JsonProblem(f"{name} is not a JSON value")


def yaml_kind(value: Any) -> str:
    """How a message names the kind of a parsed YAML value: "a mapping", "a list", "text", …"""
    return {
        dict: "a mapping",
        list: "a list",
        str: "text",
        type(None): "empty",
        int: "int",
        float: "float",
        bool: "bool",
        datetime.date: "a date (YAML reads 2024-01-01 as one)",
        datetime.datetime: "a date and time (YAML reads 2024-01-01 10:00:00 as one)",
    }.get(type(value), type(value).__name__)
