"""Read an eval's dataset: a ``.csv`` file with a header, a ``.jsonl`` file of objects, a
``.yaml``/``.yml`` list of mappings, or the eval's inline ``rows:``. Every bad row is a
:class:`~pytest_vibeeval.errors.Problem` naming its line and row number; nothing is guessed."""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..bounded_read import UnreadableFile
from ..errors import InputError, Problem
from ..surrogates import LONE_ESCAPE_HINT, lone_escape
from ..text_input import NotUtf8, read_input_text
from .syntax_hints import TRAILING_COMMA_HINT, json_syntax
from .yamlsource import (
    Document,
    JsonProblem,
    no_json_constant,
    not_utf8,
    parse_yaml,
    unique_json_keys,
    yaml_kind,
)

MAX_DATASET_BYTES = 256 * 2**20  # far beyond any eval dataset; a mistaken path to a dump fails fast
MAX_ROWS = 100_000  # each row is an item on every worker: more is a mistake, not a benchmark
FORMATS = (".csv", ".jsonl", ".yaml", ".yml")


@dataclass(frozen=True)
class DataRow:
    """One row: its 1-based number among the rows, the line it starts on, and its values (JSON
    values: text from CSV, whatever JSON or YAML holds otherwise)."""

    number: int
    line: int | None
    values: Mapping[str, Any]


@dataclass(frozen=True)
class Dataset:
    """The rows of one eval and where they come from (``path`` None: inline ``rows:``)."""

    path: Path | None
    rows: tuple[DataRow, ...]

    def where(self, row: DataRow) -> str:
        """How a message names the row: ``row 3 (line 4)``."""
        return f"row {row.number}" + (f" (line {row.line})" if row.line else "")


class DatasetError(Exception):
    """Problems of one dataset file (or of the suite file, for inline rows)."""

    def __init__(self, path: Path, problems: list[Problem]) -> None:
        super().__init__(path)
        self.path, self.problems = path, problems


def read_dataset(path: Path) -> Dataset:
    """The rows of the dataset file at ``path``; raises :class:`DatasetError` naming each bad row
    and :class:`InputError` when the file cannot be read at all."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise InputError.single(
            path,
            f"unknown dataset format {path.suffix or '(no suffix)'!r}",
            hint="a dataset is a .csv file with a header line, a .jsonl file of objects or a "
            ".yaml/.yml list of mappings",
        )
    try:
        text = read_input_text(path, MAX_DATASET_BYTES)
    except FileNotFoundError:
        raise InputError.single(path, "dataset file not found") from None
    except UnreadableFile as exc:
        raise InputError.single(path, f"dataset {exc}") from None
    except NotUtf8 as exc:
        raise not_utf8(path, exc) from None
    problems: list[Problem] = []
    if suffix == ".csv":
        rows = list(_csv_rows(text, problems))
    elif suffix == ".jsonl":
        rows = list(_jsonl_rows(text, problems))
    else:
        rows = list(_yaml_rows(parse_yaml(path, text), problems))
    if problems:
        raise DatasetError(path, problems)
    if not rows:
        raise InputError.single(path, "the dataset has no rows", hint="add at least one row")
    return Dataset(path, tuple(rows))


def inline_rows(raw: list[Any], doc: Document, loc: tuple[str | int, ...]) -> tuple[Dataset, list[Problem]]:
    """An eval's inline ``rows:`` (at ``loc`` in the suite's ``doc``) and the problems of its rows."""
    problems: list[Problem] = []
    rows = list(_mapping_rows(raw, lambda i: doc.line_of((*loc, i)), problems))
    return Dataset(None, tuple(rows)), problems


def _too_many(line: int | None) -> Problem:
    return Problem(
        f"more than {MAX_ROWS} rows",
        line=line,
        hint="split the dataset over several evals or suites",
    )


def _csv_rows(text: str, problems: list[Problem]) -> Iterator[DataRow]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return
        columns = [name.strip() for name in header]
        empty = [i + 1 for i, name in enumerate(columns) if not name]
        repeated = sorted({name for name in columns if name and columns.count(name) > 1})
        if empty or repeated:
            what = f"empty column name(s) at position {', '.join(map(str, empty))}" if empty else ""
            what += ("; " if what else "") + (f"repeated column(s) {', '.join(repeated)}" if repeated else "")
            problems.append(Problem(f"the header line: {what}", line=1, hint="name each column once"))
            return
        line = reader.line_num + 1
        number = 0
        for fields in reader:
            start, line = line, reader.line_num + 1
            if not fields or fields == [""]:
                continue  # a blank line
            number += 1
            if number > MAX_ROWS:
                problems.append(_too_many(start))
                return
            if len(fields) != len(columns):
                problems.append(
                    Problem(
                        f"row {number}: {len(fields)} fields, but the header has {len(columns)} "
                        f"({', '.join(columns)})",
                        line=start,
                        hint='quote a field that holds a comma: "Paris, France"',
                    )
                )
                continue
            yield DataRow(number, start, dict(zip(columns, fields, strict=True)))
    except csv.Error as exc:
        problems.append(Problem(f"invalid CSV: {exc}", line=reader.line_num, hint="check the quoting"))


def _jsonl_rows(text: str, problems: list[Problem]) -> Iterator[DataRow]:
    number = 0
    for index, line_text in enumerate(text.split("\n")):  # JSON strings may hold U+2028, \x85
        if not line_text.strip():
            continue
        number += 1
        line = index + 1
        if number > MAX_ROWS:
            problems.append(_too_many(line))
            return
        try:
            value = json.loads(
                line_text,
                object_pairs_hook=unique_json_keys,
                parse_constant=no_json_constant,
                parse_float=_json_float,
            )
        except JsonProblem as exc:
            problems.append(Problem(f"row {number}: invalid JSON: {exc}", line=line))
            continue
        except json.JSONDecodeError as exc:
            syntax = json_syntax(exc)
            hint = (
                syntax.hint
                if syntax.hint == TRAILING_COMMA_HINT
                else "each line of a .jsonl file is one JSON object"
            )
            problems.append(Problem(f"row {number}: invalid JSON: {syntax.message}", line=line, hint=hint))
            continue
        except ValueError as exc:  # a number Python will not read: an integer of over 4 300 digits
            problems.append(Problem(f"row {number}: invalid JSON: {exc}", line=line))
            continue
        lone = lone_escape(line_text, value)
        if lone is not None:
            problems.append(
                Problem(f"row {number}: invalid JSON: {lone.message}", line=line, hint=LONE_ESCAPE_HINT)
            )
            continue
        if not isinstance(value, dict):
            problems.append(
                Problem(
                    f"row {number}: a row is a JSON object, not {_json_kind(value)}",
                    line=line,
                    hint='write each row as {"column": "value", ...}',
                )
            )
            continue
        yield DataRow(number, line, value)


def _yaml_rows(doc: Document, problems: list[Problem]) -> Iterator[DataRow]:
    if not isinstance(doc.data, list):
        problems.append(
            Problem(
                f"a YAML dataset is a list of mappings, not {yaml_kind(doc.data)}",
                line=doc.line_of(()),
                hint="write each row as `- column: value`",
            )
        )
        return
    yield from _mapping_rows(doc.data, lambda i: doc.line_of((i,)), problems)


def _mapping_rows(raw: list[Any], line_of: Any, problems: list[Problem]) -> Iterator[DataRow]:
    for index, value in enumerate(raw):
        number = index + 1
        if number > MAX_ROWS:
            problems.append(_too_many(line_of(index)))
            return
        if not isinstance(value, dict):
            problems.append(
                Problem(
                    f"row {number}: a row is a mapping of column: value, not {yaml_kind(value)}",
                    line=line_of(index),
                    hint="write each row as `- column: value`",
                )
            )
            continue
        yield DataRow(number, line_of(index), {str(key): _plain(v) for key, v in value.items()})


def _plain(value: Any) -> Any:
    """A YAML value as JSON holds it: dates and times become their ISO text, a number JSON cannot
    hold its text (:func:`_finite`)."""
    if isinstance(value, datetime.date | datetime.datetime):
        return value.isoformat()
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    return value


def _finite(value: float) -> float | str:
    """``value``, or when JSON cannot hold it (``.inf``, ``-.inf``, ``.nan``, ``1e999``) the text a
    template shows for it: ``inf``, ``-inf``, ``nan``. The results would write it as null."""
    return value if math.isfinite(value) else str(value)


def _json_float(text: str) -> float | str:
    return _finite(float(text))


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"
