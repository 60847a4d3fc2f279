"""The files a ``json_schema`` check's schema refers to with ``$ref``, read when the suite loads.

A ``$ref`` to another file (``other.json``, ``defs/common.yaml#/Item``) is resolved relative to the
folder of the schema that holds it, as JSON Schema resolves a relative reference against its base
URI, and must stay inside the suite's folder. Remote references (``https://…``) are never fetched:
a check must decide the same offline, on every run. Every file is read once, up front, so that a
missing or broken one is a collection error, and the checks themselves read no file. No pytest
here; ``jsonschema`` and ``referencing`` are imported by the caller's first use.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

import yaml

from .bounded_read import UnreadableFile
from .loading.syntax_hints import json_error
from .loading.yamlsource import MAX_INPUT_BYTES
from .text_input import NotUtf8, read_input_text

__all__ = ["SchemaFiles", "read_schema_file", "referenced_files"]

SchemaFiles = Mapping[str, Any]  # a referenced file's URI (relative to the root schema) → its content


def read_schema_file(file: Path, shown: str) -> Any:
    """The parsed content of a schema file (JSON, or YAML unless it ends in ``.json``); raises
    ValueError naming it as ``shown``."""
    try:
        text = read_input_text(file, MAX_INPUT_BYTES)
    except NotUtf8 as exc:
        raise ValueError(f"the JSON Schema {shown!r}, {exc}; {exc.hint}") from None
    except OSError as exc:
        raise ValueError(f"cannot read the JSON Schema {shown!r}: {exc.strerror or exc}") from None
    except UnreadableFile as exc:
        raise ValueError(f"cannot read the JSON Schema {shown!r}: {exc}") from None
    try:
        return json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
        raise ValueError(f"the JSON Schema {shown!r} cannot be parsed: {problem}") from None


def _refs(node: Any) -> Iterator[str]:
    """Every ``$ref`` string in a schema, however nested."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs(item)


def referenced_files(schema: Any, base: Path, suite_dir: Path, where: str) -> dict[str, Any]:
    """The files ``schema`` (whose folder is ``base``) refers to, directly or through one another:
    their URIs relative to ``base`` → their content. Raises ValueError for a remote reference, a
    path out of ``suite_dir``, or a file that cannot be read (``where`` names the schema: "the
    inline schema", "the JSON Schema 'order.json'")."""
    files: dict[str, Any] = {}
    pending = [("", schema)]
    while pending:
        here, node = pending.pop()
        for ref in _refs(node):
            uri = urldefrag(urljoin(here, ref)).url
            if not uri or uri in files:
                continue  # within the same document, or read already
            if urlsplit(uri).scheme or uri.startswith("/"):
                raise ValueError(
                    f"{where} refers to {ref!r}: only files relative to the schema can be referred to "
                    "(remote schemas are not fetched)"
                )
            file = (base / PurePosixPath(uri)).resolve()
            if not file.is_relative_to(suite_dir.resolve()):
                raise ValueError(f"{where} refers to {ref!r}, outside the suite's folder")
            try:
                files[uri] = read_schema_file(file, uri)
            except ValueError as exc:
                raise ValueError(f"{where} refers to {ref!r}: {exc}") from None
            pending.append((uri, files[uri]))
    return files
