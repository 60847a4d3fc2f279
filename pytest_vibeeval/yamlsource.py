"""Read YAML and JSON input files into plain data, remembering the line of every node."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import InputError, Loc, Problem

MAX_NODES = 200_000  # alias expansion beyond this is refused (YAML bombs)
MAX_DEPTH = 64
# libyaml's parser is ~10x faster and keeps the same node marks
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Document:
    """Parsed data plus the 1-based line of each node, keyed by its data path."""

    path: Path
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line_of(self, loc: Loc) -> int | None:
        """Line of the deepest node on ``loc`` that exists in the data (see :meth:`clean_loc`)."""
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


MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlSyntaxError(InputError):
    """The text is not YAML at all (as opposed to YAML this plugin refuses, e.g. duplicate keys)."""


class _Builder:
    def __init__(self, path: Path, loader: yaml.SafeLoader) -> None:
        self.path = path
        self.loader = loader
        self.lines: dict[Loc, int] = {}
        self.count = 0

    def _tick(self, node: yaml.Node) -> None:
        """Count one unit of work; refuse documents that expand beyond :data:`MAX_NODES`."""
        self.count += 1
        if self.count > MAX_NODES:
            raise InputError.single(
                self.path,
                f"document expands to more than {MAX_NODES} nodes (aliases referring to aliases?)",
                line=node.start_mark.line + 1,
                hint="write the data out plainly instead of nesting YAML aliases",
            )

    def _too_deep(self, node: yaml.Node) -> InputError:
        return InputError.single(
            self.path,
            f"nesting deeper than {MAX_DEPTH} levels (a recursive alias?)",
            line=node.start_mark.line + 1,
        )

    def _key(self, key_node: yaml.Node) -> str | int:
        if not isinstance(key_node, yaml.ScalarNode):
            raise InputError.single(
                self.path, "mapping keys must be plain scalars", line=key_node.start_mark.line + 1
            )
        constructed = self.loader.construct_object(key_node, deep=True)
        # `yes:`/`null:` keys stay the text the user wrote, not True/None
        if isinstance(constructed, str | int) and not isinstance(constructed, bool):
            return constructed
        return str(key_node.value)

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
            key = self._key(key_node)
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

    def build(self, node: yaml.Node, loc: Loc, depth: int) -> Any:
        self._tick(node)
        if depth > MAX_DEPTH:
            raise self._too_deep(node)
        self.lines.setdefault(loc, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            result: dict[Any, Any] = {}
            for key, key_node, value_node in self._entries(node, depth):
                self.lines[(*loc, key)] = key_node.start_mark.line + 1
                result[key] = self.build(value_node, (*loc, key), depth + 1)
            return result
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, (*loc, i), depth + 1) for i, child in enumerate(node.value)]
        return self.loader.construct_object(node, deep=True)


def parse_yaml(path: Path, text: str) -> Document:
    """Parse YAML text; every syntax error becomes an :class:`InputError` with its line."""
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()
        if node is None:
            hint = None if path.suffix.lower() == ".json" else "a suite needs `metadata` and `evals`"
            raise InputError.single(path, "the file is empty", hint=hint)
        builder = _Builder(path, loader)
        data = builder.build(node, (), 0)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or str(exc)
        context = f" ({exc.context})" if exc.context else ""
        raise YamlSyntaxError(
            str(path),
            [
                Problem(
                    f"invalid YAML: {problem}{context}",
                    line=line,
                    hint="check indentation, quoting and brackets near this line",
                )
            ],
        ) from None
    except yaml.YAMLError as exc:
        raise YamlSyntaxError(str(path), [Problem(f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    return Document(path, data, builder.lines)


def load_document(path: Path) -> Document:
    """Read a ``.yaml``/``.yml``/``.json`` file. JSON is read by the YAML parser for line numbers,
    falling back to the JSON parser for the few JSON texts YAML cannot parse. Problems found in
    parsed YAML (duplicate keys, alias bombs) are errors for JSON too, not reasons to fall back."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError.single(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from None
    except OSError as exc:
        raise InputError.single(path, f"cannot read the file: {exc.strerror}") from None
    if path.suffix.lower() != ".json":
        return parse_yaml(path, text)
    try:
        return parse_yaml(path, text)
    except YamlSyntaxError:
        try:
            return Document(path, json.loads(text))
        except json.JSONDecodeError as exc:
            raise InputError.single(path, f"invalid JSON: {exc.msg}", line=exc.lineno) from None
