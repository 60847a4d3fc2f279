"""Partial credit: count the subtasks in the results files (JUnit XML, results JSON) that an eval's
grade steps wrote, ignoring files the agent planted and those of dependencies."""

from __future__ import annotations

import codecs
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..bounded_read import UnreadableFile, read_bounded
from ..file_stamp import Stamp, file_stamp
from ..loading.syntax_hints import json_error
from ..text_input import NotUtf8, decode_text
from .options import DEFAULT_SUBTASK_GLOBS as DEFAULT_SUBTASK_GLOBS
from .options import subtask_glob as subtask_glob

if TYPE_CHECKING:
    from ..results import SubtaskModule

MAX_RESULTS_BYTES = 20 * 1024 * 1024  # a grade step's results file larger than this is ignored, with a note


@dataclass(frozen=True)
class Subtasks:
    """What the grade steps' results files say: ``passed``/``total`` are None when no file counted."""

    passed: int | None
    total: int | None
    notes: tuple[str, ...] = ()


class ResultsFileError(ValueError):
    """A file matched a results pattern but is not a JUnit XML or results JSON file."""


# The encoding an XML declaration names, in a document whose bytes are ASCII's where it is.
_DECLARED_ENCODING = re.compile(rb"""<\?xml\s[^>]*?\bencoding\s*=\s*["']([^"']*)["']""")


def _xml_text(data: bytes) -> str | bytes:
    """A JUnit document's bytes as its text, for ElementTree, whose own decoding knows only UTF-8,
    UTF-16 and one-byte encodings (it raises ValueError for Shift_JIS, GBK, EUC-JP): UTF-8 after a
    byte-order mark, in the encoding its declaration names with Python's codec of it; without
    either, the bytes (UTF-8, or UTF-16, which ElementTree tells by their start)."""
    if data.startswith(codecs.BOM_UTF8):
        try:
            return decode_text(data)
        except NotUtf8 as exc:
            raise ResultsFileError(f"{exc}, though it starts with UTF-8's byte-order mark") from None
    declared = _DECLARED_ENCODING.match(data)
    if declared is None:
        return data
    encoding = declared.group(1).decode("ascii", "replace")
    try:
        return data.decode(encoding)
    except LookupError:
        raise ResultsFileError(
            f"its XML declaration names the encoding {encoding!r}, which is no text encoding "
            "Python knows; write the file in UTF-8"
        ) from None
    except UnicodeError as exc:
        at = f": {exc.reason} at byte {exc.start}" if isinstance(exc, UnicodeDecodeError) else ""
        raise ResultsFileError(f"not {encoding} text, as its XML declaration says{at}") from None


def parse_junit(text: str | bytes) -> tuple[int, int]:
    """(passed, total) of a JUnit XML document (bytes: in the encoding its declaration names, UTF-8
    without one): every ``testcase`` counts; it passes unless it has a ``failure``, ``error`` or
    ``skipped`` child."""
    document = _xml_text(text) if isinstance(text, bytes) else text
    try:
        root = ET.fromstring(document)
    except ET.ParseError as exc:
        raise ResultsFileError(f"not XML: {exc}") from None
    except (ValueError, LookupError) as exc:  # an encoding ElementTree cannot read, declared in UTF-16
        raise ResultsFileError(f"its encoding cannot be read: {exc}") from None
    if root.tag not in ("testsuites", "testsuite"):
        raise ResultsFileError(f"root element <{root.tag}> is not <testsuites> or <testsuite>")
    passed = total = 0
    for case in root.iter("testcase"):
        total += 1
        if not any(child.tag in ("failure", "error", "skipped") for child in case):
            passed += 1
    return passed, total


def parse_results_json(text: str | bytes) -> tuple[int, int]:
    """(passed, total) of ``[{"taskId": ..., "passed": bool}, ...]`` or ``{"results": [...]}``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        problem = json_error(exc) if isinstance(exc, json.JSONDecodeError) else exc
        raise ResultsFileError(f"not JSON: {problem}") from None
    if isinstance(data, dict) and "results" in data:
        data = data["results"]
    if not isinstance(data, list):
        raise ResultsFileError('expected a list of {"taskId", "passed"} entries or {"results": [...]}')
    passed = 0
    for index, entry in enumerate(data):
        if not isinstance(entry, dict) or not isinstance(entry.get("passed"), bool):
            raise ResultsFileError(f'entry {index} has no boolean "passed"')
        passed += entry["passed"]
    return passed, len(data)


def parse_results_file(path: Path) -> tuple[int, int]:
    """(passed, total) of one results file, by its suffix (``.xml`` JUnit, else results JSON). Both
    parsers read the bytes: a byte-order mark (test tools on .NET write one) or an XML declaration's
    encoding is theirs to read."""
    try:
        data = read_bounded(path, MAX_RESULTS_BYTES)
    except OSError as exc:
        raise ResultsFileError(f"unreadable: {exc}") from None
    except UnreadableFile as exc:
        raise ResultsFileError(str(exc)) from None
    return parse_junit(data) if path.suffix.lower() == ".xml" else parse_results_json(data)


def snapshot_results(grading: Path, patterns: Sequence[str]) -> dict[Path, Stamp | None]:
    """The results files present before the grade steps run (the agent's files included)."""
    return {path: file_stamp(path) for pattern in patterns for path in grading.glob(pattern)}


def _not_a_file(path: Path) -> bool:
    """A folder or a dangling link: passed over. A FIFO or a device is read (and refused, with a
    note), so that a grade step's bad results file is not silently left out."""
    return path.is_dir() or not path.exists()


SKIPPED_RESULT_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages"})


def _in_skipped_folder(path: Path, root: Path) -> bool:
    """Results files of dependencies and caches (``node_modules``, dot folders) are not the grade
    steps' own."""
    folders = path.relative_to(root).parts[:-1]
    return any(part in SKIPPED_RESULT_FOLDERS or part.startswith(".") for part in folders)


def collect_subtasks(
    grading: Path, patterns: Sequence[str], before: Mapping[Path, Stamp | None] | None = None
) -> Subtasks:
    """Sum the subtasks of the files matching ``patterns`` under ``grading`` that the grade steps
    wrote (files unchanged since ``before`` are ignored, so an agent cannot plant results). A file
    that cannot be read is ignored with a note."""
    before = before or {}
    seen: set[Path] = set()
    passed = total = 0
    found = False
    notes: list[str] = []
    for pattern in patterns:
        for path in sorted(grading.glob(pattern)):
            if path in seen or _not_a_file(path) or _in_skipped_folder(path, grading):
                continue
            seen.add(path)
            if path in before and before[path] == file_stamp(path):
                continue
            try:
                file_passed, file_total = parse_results_file(path)
            except ResultsFileError as exc:
                notes.append(f"results file {path.relative_to(grading)} ignored: {exc}")
                continue
            found = True
            passed += file_passed
            total += file_total
    return Subtasks(passed if found else None, total if found else None, tuple(notes))


MODULE_RESULTS_GLOB = "*.json"
MODULE_RESULTS_SKIPPED = "results.json"  # the run's own summary, not a module


def _module_of(path: Path) -> SubtaskModule | str:
    """One module file: a JSON list whose entries with a string ``taskId`` count, passing when
    ``passed`` is true (why not, when it is not such a list)."""
    not_module = "not a JSON list of taskId/passed entries"
    try:
        data = json.loads(read_bounded(path, MAX_RESULTS_BYTES))  # bytes: a byte-order mark is read
    except UnreadableFile as exc:
        return str(exc)
    except (OSError, ValueError):
        return not_module
    if not isinstance(data, list):
        return not_module
    tasks = [entry for entry in data if isinstance(entry, dict) and isinstance(entry.get("taskId"), str)]
    passed = [entry["taskId"] for entry in tasks if entry.get("passed")]
    failed = [entry["taskId"] for entry in tasks if not entry.get("passed")]
    from ..results import SubtaskModule  # the records' models: only when a grade step left results

    return SubtaskModule(passed=len(passed), total=len(tasks), passed_tasks=passed, failed_tasks=failed)


def collect_modules(
    folder: Path, before: Mapping[Path, Stamp | None] | None = None
) -> tuple[Subtasks, dict[str, SubtaskModule] | None]:
    """The unified runner's rule: every ``*.json`` file in ``folder`` but ``results.json`` is a module
    of ``{"taskId", "passed"}`` entries; files unchanged since ``before`` (the agent's) and files that
    are not such lists are ignored, the latter with a note. No subtasks at all: (None, None)."""
    before = before or {}
    modules: dict[str, SubtaskModule] = {}
    notes: list[str] = []
    for path in sorted(folder.glob(MODULE_RESULTS_GLOB)):
        if path.name == MODULE_RESULTS_SKIPPED or _not_a_file(path):
            continue
        if path in before and before[path] == file_stamp(path):
            continue
        module = _module_of(path)
        if isinstance(module, str):
            notes.append(f"results file {path.name} ignored: {module}")
            continue
        modules[path.stem] = module
    total = sum(m.total for m in modules.values())
    if total == 0:
        return Subtasks(None, None, tuple(notes)), None
    return Subtasks(sum(m.passed for m in modules.values()), total, tuple(notes)), modules
