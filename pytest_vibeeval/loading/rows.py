"""A dataset eval becomes one eval per row: ``capital[paris]``, its ``{{row.column}}`` templates
checked against every row at collection (a missing column or a check value a row makes invalid is
an error naming the row), and filled in when the item runs."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..check_api import SUITE_DIR_CONTEXT
from ..checks import CheckType
from ..errors import InputError, Loc, Problem, did_you_mean
from ..models import EvalSpec, SuiteFile
from ..registry import CheckRegistry
from .check_parsing import parse_checks, raw_check_lists
from .templates import fill_row, row_columns, row_text
from .yamlsource import Document

if TYPE_CHECKING:
    from .datasets import DataRow, Dataset  # the readers: imported for an eval that has rows
    from .suite import EvalCase  # which imports this module

_UNSAFE = re.compile(r"[^\w.-]+")  # \w: letters and digits of any script, and _


@dataclass(frozen=True)
class RowSource:
    """Where an eval's rows come from, read: its rows and the file they are in (the suite's own
    for inline ``rows:``)."""

    dataset: Dataset
    file: Path
    problems: list[Problem]


def eval_rows(spec: EvalSpec, suite_path: Path, doc: Document, loc: Loc) -> RowSource | None:
    """The rows of the eval at ``loc`` (None: it has neither ``dataset`` nor ``rows``); raises
    :class:`InputError` for a dataset file that cannot be read."""
    if spec.rows is None and spec.dataset is None:
        return None
    from .datasets import Dataset, DatasetError, inline_rows, read_dataset

    if spec.rows is not None:
        dataset, problems = inline_rows(spec.rows, doc, (*loc, "rows"))
        return RowSource(dataset, suite_path, problems)
    assert spec.dataset is not None  # (rows or a dataset, above)
    path = suite_path.parent / spec.dataset
    if not path.is_file():
        what = "is a folder" if path.is_dir() else "is not a regular file" if path.exists() else "not found"
        where: Loc = (*loc, "dataset")
        problem = Problem(
            f"dataset file {spec.dataset!r} {what}",
            line=doc.line_of(where),
            loc=where,
            hint="the path is relative to the suite file's folder",
        )
        raise InputError(str(suite_path), [problem])
    try:
        return RowSource(read_dataset(path), path, [])
    except DatasetError as exc:
        return RowSource(Dataset(path, ()), path, exc.problems)


def sanitized_id(text: str) -> str:
    """A row id as node ids and ``-k`` take it: letters and digits (any script), ``_``, ``.`` and
    ``-``; every other run of characters becomes one ``-`` (``New York`` → ``New-York``)."""
    return _UNSAFE.sub("-", unicodedata.normalize("NFC", text)).strip("-")


def _template_strings(node: Any, loc: Loc) -> Iterator[tuple[Loc, str]]:
    if isinstance(node, str):
        yield loc, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _template_strings(value, (*loc, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _template_strings(value, (*loc, index))


def _fill(node: Any, row: Mapping[str, Any]) -> Any:
    if isinstance(node, str):
        return fill_row(node, row)
    if isinstance(node, dict):
        return {key: _fill(value, row) for key, value in node.items()}
    if isinstance(node, list):
        return [_fill(value, row) for value in node]
    return node


def _row_checks(raw: Any, registry: CheckRegistry, loc: Loc) -> Iterator[tuple[Loc, Any, CheckType]]:
    """The checks (inside ``or`` too) whose values hold ``{{row.…}}``: where, value and type."""
    items = raw.get("or") if isinstance(raw, dict) else raw
    for index, item in enumerate(items if isinstance(items, list) else []):
        if not isinstance(item, dict) or len(item) != 1:
            continue
        ((key, value),) = item.items()
        where = (*loc, index, key)
        if key == "or":
            yield from _row_checks({"or": value}, registry, where)
            continue
        check_type = registry.get(str(key))
        if check_type is not None and any(row_columns(text) for _, text in _template_strings(value, where)):
            yield where, value, check_type


def _valid_with(checks: list[tuple[Loc, Any, CheckType]], row: Mapping[str, Any], suite_dir: Path) -> bool:
    """Whether every check value is still valid with ``row``'s values filled in."""
    try:
        for _, value, check_type in checks:
            check_type.adapter.validate_python(_fill(value, row), context={SUITE_DIR_CONTEXT: suite_dir})
    except ValidationError:
        return False
    return True


def expand_datasets(
    model: SuiteFile, doc: Document, evals: tuple[EvalCase, ...], registry: CheckRegistry
) -> tuple[tuple[EvalCase, ...], tuple[Path, ...]]:
    """Each dataset eval as one eval per row, and the dataset files read; raises
    :class:`InputError` naming the file (the suite, or a dataset) and line of every bad row."""
    if not any(spec.dataset is not None or spec.rows is not None for spec in model.evals):
        return evals, ()
    out: list[EvalCase] = []
    files: list[Path] = []
    problems: dict[Path, list[Problem]] = {}
    for case, spec in zip(evals, model.evals, strict=True):
        loc: Loc = ("evals", case.index)
        source = eval_rows(spec, doc.path, doc, loc)
        if source is None:
            out.append(case)
            continue
        if source.file != doc.path:
            files.append(source.file)
        suite_problems = problems.setdefault(doc.path, [])
        rows, found = expand_rows(
            case, spec, source, doc.data["evals"][case.index], doc, registry, suite_problems
        )
        problems.setdefault(source.file, []).extend(found)
        out.extend(rows)
    if problems.get(doc.path):
        raise dataset_error(doc.path, problems[doc.path])
    for file, found in problems.items():
        if found:
            raise dataset_error(file, found)
    return tuple(out), tuple(dict.fromkeys(files))


def expand_rows(
    case: EvalCase,
    spec: EvalSpec,
    source: RowSource,
    raw_eval: Mapping[str, Any],
    doc: Document,
    registry: CheckRegistry,
    problems: list[Problem],
) -> tuple[list[EvalCase], list[Problem]]:
    """One :class:`~pytest_vibeeval.loading.suite.EvalCase` per row of ``source``, and the problems
    found in the rows (in ``source.file``). Problems of the suite file itself (a check type that
    does not fill templates, an ``id`` column no row has) go to ``problems``."""
    loc: Loc = ("evals", case.index)
    label = f"evals[{case.index}] ({case.id})"
    found: list[Problem] = list(source.problems)
    check_lists = list(raw_check_lists(raw_eval, loc))  # the eval's, or each turn's
    row_checks = [
        found_check for where, raw in check_lists for found_check in _row_checks(raw, registry, where)
    ]
    for where, _, check_type in row_checks:
        if check_type.template_fields:
            continue
        problems.append(
            Problem(
                f"`{check_type.name}` does not fill templates, so {{{{row.…}}}} would stay as written",
                line=doc.line_of(where),
                loc=where,
                hint="use the row's values in the prompt or in checks that fill templates (equals, …)",
            )
        )
    templated = {key: raw_eval[key] for key in ("prompt", "checks", "turns") if key in raw_eval}
    used = {name: where for where, text in _template_strings(templated, loc) for name in row_columns(text)}
    id_spec = spec.id
    id_columns = row_columns(id_spec) if id_spec and "{{" in id_spec else [id_spec] if id_spec else []
    for column in id_columns:
        used.setdefault(column, (*loc, "id"))
    validated = [check for check in row_checks if check[2].template_fields]
    out: list[EvalCase] = []
    ids: dict[str, DataRow] = {}
    for row in source.dataset.rows:
        at = f"row {row.number}"  # the message leads with the row's line
        missing = [name for name in used if name not in row.values]
        if missing:
            found.extend(_missing_column(name, used[name], row, label, doc) for name in missing)
            continue
        row_id = _row_id(id_spec, row)
        safe = sanitized_id(row_id)
        if not safe:
            found.append(
                Problem(
                    f"{at}: {label}: the row's id {row_id!r} has no letter or digit",
                    line=row.line,
                    hint="give the row an `id` value, or the eval an `id:` column or template",
                )
            )
            continue
        if safe in ids:
            first = ids[safe]
            found.append(
                Problem(
                    f"{at}: {label}: duplicate row id {safe!r}, also the id of {source.dataset.where(first)}",
                    line=row.line,
                    hint="row ids must be unique within an eval: add an `id` column, or set the eval's "
                    '`id:` to a column or template that differs per row (id: "{{row.country}}-{{row.n}}")',
                )
            )
            continue
        ids[safe] = row
        if validated and not _valid_with(validated, row.values, doc.path.parent):
            bad: list[Problem] = []  # parsed again for the messages, with their keys
            for where, raw in check_lists:
                parse_checks(_fill(raw, row.values), where, doc, registry, bad)
            found.extend(
                Problem(f"{at}: {label}: with this row's values, {p.message}", line=row.line, hint=p.hint)
                for p in bad
            )
            if bad:
                continue
        out.append(
            replace(
                case,
                id=f"{case.id}[{safe}]",
                name=None,  # a row is no formula variable (see loading.suite.suite_formula)
                eval_name=case.id,
                row_id=safe,
                row=row.values,
                row_number=row.number,
                dataset=source.dataset.path,
            )
        )
    return out, found


def _row_id(id_spec: str | None, row: DataRow) -> str:
    if id_spec is None:
        return row_text(row.values["id"]) if "id" in row.values else str(row.number)
    if "{{" in id_spec:
        return fill_row(id_spec, row.values)
    return row_text(row.values[id_spec])


def _missing_column(name: str, where: Loc, row: DataRow, label: str, doc: Document) -> Problem:
    columns = list(row.values)
    used_in = ".".join(str(part) for part in where[2:]) or "id"
    line_in_suite = doc.line_of(where)
    suite_where = f" (line {line_in_suite} of {doc.path.name})" if line_in_suite else ""
    return Problem(
        f"row {row.number}: {label} uses the column {name!r} in `{used_in}`{suite_where}, which the "
        f"row does not have{did_you_mean(name, columns)}; its columns: {', '.join(columns) or 'none'}",
        line=row.line,
        hint="add the column to the dataset or fix the name in the template",
    )


def dataset_error(path: Path, problems: list[Problem]) -> InputError:
    """The problems of a dataset file, by line, as one error naming that file (at most 20 listed)."""
    ordered = sorted(problems, key=lambda p: p.line or 0)
    if len(ordered) > 20:
        ordered = [*ordered[:20], Problem(f"… and {len(ordered) - 20} more problems in this file")]
    return InputError(str(path), ordered)


__all__ = ["expand_datasets", "sanitized_id"]
