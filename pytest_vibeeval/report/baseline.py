"""Compare a session's results with a baseline results file, and keep a JSONL history of sessions.

The decision follows the Scoring Rubric's ``should_apply_mutation`` with its coin flip replaced by a
rule: a slight regression (exploration) is accepted only when no eval went from pass to fail.
No pytest here: the plugin and ``python -m pytest_vibeeval compare`` both use it.
"""

from __future__ import annotations

import errno
import io
import json
import math
import os
import stat
import tokenize
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import ValidationError

from ..bounded_read import UnreadableFile, file_kind, read_bounded, read_end
from ..results import SCHEMA_VERSION, BaselineRecord, Decision, ResultsFile, RunRecord
from ..scoring.formula import show_formula
from .format import decimal, run_title, score, signed
from .resultsfile import DEFAULT_DIR

SIGNIFICANT = 5.0  # delta above this: significant_improvement
EXPLORATION_FLOOR = -3.0  # delta above this (and at most 0): exploration; at or below: regression
DELTA_DIGITS = 9  # deltas are rounded to this many decimals first, so 85.1 - 80.1 is exactly 5
SHOWN_ERRORS = 3  # validation errors quoted in a BaselineError
MAX_RESULTS_BYTES = 1024 * 2**20  # a results file read as a baseline or to resume
MAX_HISTORY_BYTES = 64 * 2**20  # of a history file, only the last this many bytes are read


class BaselineError(Exception):
    """A results file that cannot be used; the message names the file and says what is wrong."""


# --- loading -----------------------------------------------------------------------------------------


def resolve_baseline(spec: str, rootdir: Path, results: Path | None = None, partial_ok: bool = False) -> Path:
    """``latest``: the previous run's results: the newer of ``<rootdir>/.vibeeval/results/latest.json``
    and ``results`` (the configured --vibe-results path, which runs with it write instead), skipping
    a partial run's file (interrupted, -x); with ``partial_ok`` (for --vibe-resume) the newest file
    of the results folder too, partial or not. Anything else is a path (relative to cwd)."""
    if spec != "latest":
        return Path(spec).expanduser()
    folder = rootdir / DEFAULT_DIR
    default = folder / "latest.json"
    candidates = [path for path in (results, default) if path is not None and path.is_file()]
    if partial_ok:
        stamped = (
            [path for path in folder.glob("*.json") if path.name != default.name] if folder.is_dir() else []
        )
        candidates += stamped
    else:
        candidates = [path for path in candidates if not _holds_partial_run(path)]
    if not candidates:
        return results if results is not None else default
    return max(candidates, key=lambda path: path.stat().st_mtime)


def _holds_partial_run(path: Path) -> bool:
    """Whether ``path`` is the results of a partial run (a file that cannot be read is left for
    the caller's load to report)."""
    try:
        return load_baseline(path).partial
    except BaselineError:
        return False


def _location(loc: Sequence[int | str]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def _validation_message(error: ValidationError) -> str:
    errors = error.errors()
    shown = [f"{_location(e['loc'])}: {e['msg']}" for e in errors[:SHOWN_ERRORS]]
    more = len(errors) - SHOWN_ERRORS
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


SHOWN_IGNORED = 5  # unknown fields named in a note


class ReadResults(NamedTuple):
    """A results file as read, and the fields in it that this version does not know and ignored
    (``runs[].evals[].new_field``: once, however many records hold it)."""

    results: ResultsFile
    ignored: list[str]

    def note(self, shown: str) -> str | None:
        """What to tell the user about the ignored fields of the file ``shown``, or None."""
        if not self.ignored:
            return None
        names = ", ".join(self.ignored[:SHOWN_IGNORED])
        more = len(self.ignored) - SHOWN_IGNORED
        names += f" (and {more} more)" if more > 0 else ""
        return (
            f"{shown}: ignored {len(self.ignored)} field(s) this pytest-vibeeval does not know "
            f"(written by a newer release?): {names}"
        )


def load_baseline(path: Path) -> ResultsFile:
    """Read a results file (see :func:`read_results`), without saying which fields were ignored."""
    return read_results(path).results


def read_results(path: Path) -> ReadResults:
    """Read a results file; BaselineError when it is missing, not JSON, not a results file or of
    another schema_version. Fields this version does not know are ignored (a newer release may
    add fields without a new schema_version) and listed in ``ignored``."""
    try:
        text = read_bounded(path, MAX_RESULTS_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise BaselineError(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise BaselineError(f"{path}: not JSON (not UTF-8 text: {exc.reason})") from None
    except UnreadableFile as exc:
        raise BaselineError(f"{path}: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        from ..loading.syntax_hints import json_error  # a file that does not parse

        error = json_error(exc)
        where = f"line {error.lineno}, column {error.colno}"
        raise BaselineError(f"{path}: not JSON ({where}: {error.msg})") from None
    if not isinstance(data, dict):
        raise BaselineError(f"{path}: not a pytest-vibeeval results file (expected a JSON object)")
    version = data.get("schema_version")
    if isinstance(version, int):  # before the fields: another version's would only confuse
        _check_version(path, version)
    read = _validate(path, data)
    _check_version(path, read.results.schema_version)
    return read


def _check_version(path: Path, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise BaselineError(
            f"{path}: schema_version {version} is newer than this pytest-vibeeval reads "
            f"({SCHEMA_VERSION}); upgrade pytest-vibeeval"
        )
    if version != SCHEMA_VERSION:
        raise BaselineError(
            f"{path}: schema_version {version} is not one this pytest-vibeeval reads ({SCHEMA_VERSION})"
        )


def _validate(path: Path, data: dict[str, Any]) -> ReadResults:
    """The results in ``data``; a field the models forbid (they stay strict for what we write) is
    dropped and validation runs again, so only the other errors are reported."""
    try:
        return ReadResults(ResultsFile.model_validate(data), [])
    except ValidationError as exc:
        unknown = [error["loc"] for error in exc.errors() if error["type"] == "extra_forbidden"]
        if not unknown:
            raise BaselineError(
                f"{path}: not a pytest-vibeeval results file: {_validation_message(exc)}"
            ) from None
    for loc in unknown:
        _drop(data, loc)
    try:
        results = ResultsFile.model_validate(data)
    except ValidationError as exc:
        raise BaselineError(
            f"{path}: not a pytest-vibeeval results file: {_validation_message(exc)}"
        ) from None
    return ReadResults(results, sorted({_field_pattern(loc) for loc in unknown}))


def _drop(data: Any, loc: Sequence[int | str]) -> None:
    """Remove the value at ``loc`` (a validation error's location) from the JSON ``data``."""
    for part in loc[:-1]:
        data = data[part]
    del data[loc[-1]]


def _field_pattern(loc: Sequence[int | str]) -> str:
    """A field's location without the list indices: ``runs[].evals[].new_field``."""
    text = ""
    for part in loc:
        text += "[]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


# --- deciding ----------------------------------------------------------------------------------------


def decide(delta: float, pass_to_fail: bool) -> tuple[Decision, bool]:
    """The label and whether the change is accepted, from the score delta (new - baseline).

    Above +5: significant_improvement; above 0: marginal_improvement (both accepted); above -3:
    exploration, accepted only when no eval went from pass to fail (``pass_to_fail`` False); -3 or
    below: regression. Boundaries are exclusive as in the document: 5 is marginal, 0 is exploration,
    -3 is a regression.
    """
    if delta > SIGNIFICANT:
        return "significant_improvement", True
    if delta > 0:
        return "marginal_improvement", True
    if delta > EXPLORATION_FLOOR:
        return "exploration", not pass_to_fail
    return "regression", False


def eval_outcomes(run: RunRecord) -> dict[str, bool]:
    """Eval name → passed, over its repeats; evals that did not run are absent.

    An eval's ``eval_stats`` status decides when it has one (passed / failed; skipped: absent); else its
    records: passed when every one that ran passed.
    """
    outcomes: dict[str, bool] = {}
    for record in run.evals:
        if record.outcome != "skipped":
            outcomes[record.name] = outcomes.get(record.name, True) and record.outcome == "passed"
    for stats in run.eval_stats:
        if stats.status == "skipped":
            outcomes.pop(stats.name, None)
        else:
            outcomes[stats.name] = stats.status == "passed"
    return outcomes


def _flips(now: dict[str, bool], then: dict[str, bool]) -> tuple[list[str], list[str]]:
    common = now.keys() & then.keys()
    pass_to_fail = sorted(name for name in common if then[name] and not now[name])
    fail_to_pass = sorted(name for name in common if not then[name] and now[name])
    return pass_to_fail, fail_to_pass


def _other_evals(only_now: Collection[str], only_then: Collection[str]) -> str:
    """Why two runs' scores do not compare: the evals that ran in one of them only."""

    def shown(names: Collection[str]) -> str:
        ordered = sorted(names)
        return ", ".join(ordered[:3]) + (", …" if len(ordered) > 3 else "")

    parts = []
    if only_then:
        parts.append(f"{len(only_then)} eval(s) ran in the baseline only ({shown(only_then)})")
    if only_now:
        parts.append(f"{len(only_now)} eval(s) ran in this run only ({shown(only_now)})")
    return "the scores are over different evals: " + "; ".join(parts)


def _formula_tokens(formula: str) -> list[str]:
    """The formula's tokens: ``a*10`` and ``a * 10`` are one formula (text the tokenizer refuses:
    its words)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(formula).readline)
        return [token.string for token in tokens if token.string.strip()]
    except (tokenize.TokenError, SyntaxError):
        return formula.split()


def _formula_change(run: RunRecord, base: RunRecord) -> str | None:
    """Why the two runs' scores do not compare because their formulas differ, or None.

    The formulas are compared as read (``score_canonical``: a preset expanded, so a preset whose
    expansion changed differs too) when both files record that, else as written."""
    canonical = run.score_canonical is not None and base.score_canonical is not None
    now, then = (r.score_canonical if canonical else r.score_formula for r in (run, base))
    if _formula_tokens(now or "") == _formula_tokens(then or ""):
        return None
    shown = [show_formula(r.score_formula, r.score_canonical, r.score_preset) for r in (base, run)]
    return f"the score formula changed: {shown[0]} in the baseline, {shown[1]} in this run"


def _noscore(run: RunRecord) -> str:
    return run.score_error or "no score"


def _reason(label: Decision, delta: float, pass_to_fail: Sequence[str]) -> str:
    shown = f"delta {signed(delta)}"
    if label == "significant_improvement":
        return f"{shown} is above +{SIGNIFICANT:g}"
    if label == "marginal_improvement":
        return f"{shown} is above 0, at most +{SIGNIFICANT:g}"
    if label == "regression":
        return f"{shown} is {EXPLORATION_FLOOR:g} or below"
    window = f"{shown} is above {EXPLORATION_FLOOR:g}, at most 0"
    if pass_to_fail:
        return f"{window}, but {len(pass_to_fail)} eval(s) went from pass to fail: rejected"
    return f"{window} and no eval went from pass to fail: accepted"


def compare_run(run: RunRecord, base: RunRecord | None, baseline_path: str) -> BaselineRecord:
    """This run against the baseline's run of the same suite × configuration (None: the baseline has none)."""
    if base is None:
        return BaselineRecord(
            baseline=baseline_path,
            score=None,
            delta=None,
            label="new",
            accepted=None,
            reason=f"the baseline has no run of {run.source} against {run.configuration}",
        )
    now, then = eval_outcomes(run), eval_outcomes(base)
    pass_to_fail, fail_to_pass = _flips(now, then)
    delta: float | None = None
    label: Decision = "incomparable"
    accepted: bool | None = None
    if run.score is None or base.score is None:
        pairs = (("this run", run), ("the baseline", base))
        reason = "; ".join(f"{who} has no score ({_noscore(r)})" for who, r in pairs if r.score is None)
    elif formula_change := _formula_change(run, base):
        reason = formula_change
    elif now.keys() != then.keys():  # the scores are over different evals (-k, -m, a new eval)
        reason = _other_evals(now.keys() - then.keys(), then.keys() - now.keys())
    elif not math.isfinite(run.score - base.score):
        reason = f"the delta is not a number ({run.score} - {base.score})"
    else:
        # decided as shown: -2.999 shows as -3.00, a regression
        delta = float(decimal(round(run.score - base.score, DELTA_DIGITS)))
        label, accepted = decide(delta, bool(pass_to_fail))
        reason = _reason(label, delta, pass_to_fail)
    return BaselineRecord(
        baseline=baseline_path,
        score=base.score,
        delta=delta,
        label=label,
        accepted=accepted,
        reason=reason,
        pass_to_fail=pass_to_fail,
        fail_to_pass=fail_to_pass,
    )


def run_key(run: RunRecord) -> tuple[str, str]:
    """What pairs runs across files: (suite source, configuration)."""
    return run.source, run.configuration


@dataclass
class Comparison:
    """A results file against a baseline: each new run with its BaselineRecord, and the baseline's runs
    that the new file lacks (as ``suite × configuration``)."""

    baseline: str
    pairs: list[tuple[RunRecord, BaselineRecord]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def regressions(self) -> list[RunRecord]:
        """The new runs that regressed (see :func:`regressed`)."""
        return [run for run, record in self.pairs if regressed(record)]


def regressed(record: BaselineRecord) -> bool:
    """A run labelled ``regression``, or an ``incomparable`` one (other evals ran, the score formula
    changed, or a score is null) in which an eval both ran went from pass to fail: what
    --vibe-fail-on-regression fails."""
    return record.label == "regression" or (record.label == "incomparable" and bool(record.pass_to_fail))


def compare_results(new: ResultsFile, base: ResultsFile, baseline_path: str) -> Comparison:
    """Pair every run of ``new`` with the baseline's run of the same (source, configuration)."""
    by_key: dict[tuple[str, str], RunRecord] = {}
    for run in base.runs:
        by_key.setdefault(run_key(run), run)
    pairs = [(run, compare_run(run, by_key.get(run_key(run)), baseline_path)) for run in new.runs]
    present = {run_key(run) for run in new.runs}
    missing = [run_title(run) for key, run in by_key.items() if key not in present]
    return Comparison(baseline=baseline_path, pairs=pairs, missing=missing)


# --- showing -----------------------------------------------------------------------------------------


def run_line(run: RunRecord, record: BaselineRecord) -> str:
    """``suite × config: 82.10 → 78.00 (Δ -4.10) regression — pass→fail: a, b; fail→pass: c``."""
    head = f"{run_title(run)}: "
    if record.label == "new":
        return head + f"{score(run.score)} new (not in the baseline)"
    text = f"{head}{score(record.score)} → {score(run.score)} "
    if record.delta is None:
        text += f"incomparable: {record.reason}"
    else:
        verdict = "accepted" if record.accepted else "not accepted"
        text += f"(Δ {signed(record.delta)}) {record.label}, {verdict}"
    changes = (("pass→fail", record.pass_to_fail), ("fail→pass", record.fail_to_pass))
    flips = [f"{title}: {', '.join(names)}" for title, names in changes if names]
    return text + (" — " + "; ".join(flips) if flips else "")


def comparison_lines(comparison: Comparison) -> list[str]:
    """Human-readable lines: the baseline, one per run, the missing runs and the verdict."""
    lines = [f"baseline: {comparison.baseline}"]
    lines += [run_line(run, record) for run, record in comparison.pairs]
    lines += [f"{title}: missing from these results" for title in comparison.missing]
    regressions = comparison.regressions
    if regressions:
        lines.append(f"{len(regressions)} regression(s): {', '.join(run_title(run) for run in regressions)}")
    elif any(record.label != "new" for _, record in comparison.pairs):
        lines.append("no regression")
    else:  # "no regression" would read as a pass
        lines.append("no run in common with the baseline: nothing was compared")
    return lines


# --- history -----------------------------------------------------------------------------------------


def _finite(value: Any) -> Any:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def history_entry(results: ResultsFile, run: RunRecord, results_path: str | None) -> dict[str, Any]:
    """One history line: a run of a session, summarised."""
    metrics = run.metrics
    entry = {
        "started_at": results.started_at,
        "finished_at": results.finished_at,
        "results": results_path,
        "suite": run.suite,
        "source": run.source,
        "configuration": run.configuration,
        "score": run.score,
        "grade": run.grade,
        "score_mean": run.score_mean,
        "score_ci95": run.score_ci95,
        "repeats": run.repeats,
        "success_pct": metrics.get("success_pct"),
        "total_cost": metrics.get("total_cost"),
        "avg_latency": metrics.get("avg_latency"),
        "passed": metrics.get("passed"),
        "total": metrics.get("total"),
        "baseline_label": run.baseline.label if run.baseline else None,
    }
    return {key: _finite(value) for key, value in entry.items()}


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def append_history(path: Path, results: ResultsFile, results_path: str | None) -> None:
    """Append one JSON line per run of the session to ``path`` (created with its folders).

    All lines go in one ``os.write`` on an O_APPEND descriptor, so concurrent sessions do not interleave.
    A file whose last line was torn (no final newline) gets a newline first, so our lines stay whole;
    a short write (e.g. a full disk) is continued with further writes.
    """
    lines = [
        json.dumps(history_entry(results, run, results_path), ensure_ascii=False) for run in results.runs
    ]
    if not lines:
        return
    data = ("\n".join(lines) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    # O_NONBLOCK: a FIFO opens at once (and is refused below) instead of waiting for a reader.
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o666)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # a FIFO would swallow the lines or block, a device drop them
            raise OSError(errno.EINVAL, f"not a regular file but {file_kind(mode)}; point it at a file")
        os.set_blocking(fd, True)
        _write_all(fd, (b"\n" if _ends_torn(fd) else b"") + data)
    finally:
        os.close(fd)


class History(NamedTuple):
    """The entries of a history file, and its lines that could not be read (``file:line: what``)."""

    entries: list[dict[str, Any]]
    problems: list[str]


def _parse_lines(path: Path, lines: Iterable[tuple[int | None, str]]) -> History:
    history = History([], [])
    for number, line in lines:
        if not line.strip():
            continue
        where = f"{path}:{number}" if number is not None else f"{path} (a line near its end)"
        try:
            entry = json.loads(line)
        except json.JSONDecodeError as exc:
            from ..loading.syntax_hints import json_error  # a file that does not parse

            history.problems.append(f"{where}: not JSON ({json_error(exc).msg}); skipped")
            continue
        if isinstance(entry, dict):
            history.entries.append(entry)
        else:
            history.problems.append(f"{where}: not a JSON object; skipped")
    return history


def read_history(path: Path) -> History:
    """Read a history file; lines that are not JSON objects (e.g. a torn last line) are skipped and
    listed in ``problems``. A missing file is an empty history; of a larger file only the last
    :data:`MAX_HISTORY_BYTES` are read (and ``problems`` says so); anything but a regular file is
    not read (a problem too)."""
    try:
        data, cut = read_end(path, MAX_HISTORY_BYTES + 1)  # the byte before: does a line start?
    except FileNotFoundError:
        return History([], [])
    except UnreadableFile as exc:
        return History([], [f"{path}: {exc}; point --vibe-history at a regular file"])
    if not cut:
        text = data.decode("utf-8", errors="replace")
        return _parse_lines(path, enumerate(text.split("\n"), start=1))
    # Only the end was read: a partial first line is dropped; line numbers are unknown.
    text = data[data.find(b"\n") + 1 :].decode("utf-8", errors="replace")
    history = _parse_lines(path, ((None, line) for line in text.split("\n")))
    limit = MAX_HISTORY_BYTES
    shown = f"{limit // 2**20} MiB" if limit % 2**20 == 0 else f"{limit} bytes"
    history.problems.insert(0, f"{path}: larger than {shown}; only its last {shown} were read")
    return history
