"""Controller side: gather each item's result from its reports and build the runs (suite × configuration).

Totals come from reports, not only from results: an item whose worker crashed has no result and
still counts, as an error.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..budget import NOT_STARTED
from ..extensions import Extensions, builtin_extensions
from ..report.format import decimal
from ..results import NOT_FINISHED, EvalRecord, EvalStats, GateRecord, RunRecord
from ..text_input import first_line, text_lines
from ..transport import RunInfo
from .attempts import EarlierAttempts
from .formula import Formula, FormulaError, breakdown, evaluate, parse_formula, undefined_preset_reason
from .grades import grade
from .record_values import ran
from .repeats import aggregate_scores, mean_ci95, recency_order, run_counts, stats_from_counts, stats_json
from .spool import OnDemand, RecordSpool
from .variables import compute_run_values, compute_variables, eval_variable_names

_PHASES = ("setup", "call", "teardown")  # a report's `when`; xdist's crash reports have another


@dataclass(slots=True)
class _Item:
    """What the controller keeps of one item until the session's end (slots: one per item)."""

    info: RunInfo | None
    record: EvalRecord | int | None = None  # an int: its index in the aggregator's spool
    failed_phase: str | None = None
    failure: str | None = None
    skipped: str | None = None
    xfailed: bool = False
    earlier: EarlierAttempts | None = None  # a plugin reran it: its attempts before the last
    rerun: bool = False  # a setup report came after its record: the next record is a new attempt's


@dataclass
class Aggregator:
    """The controller's collection of item reports, turned into runs at the session's end with the
    session's run variables and formula presets (``extensions``; the built-ins by default). Records
    that arrive as JSON (from xdist workers) wait in a spool, not parsed, until their run is built."""

    extensions: Extensions = field(default_factory=builtin_extensions)
    items: dict[str, _Item] = field(default_factory=dict)
    spool: RecordSpool = field(default_factory=RecordSpool)
    # The eval items the session selected (after -k, -m, --lf…), as node ids; None: not known. An
    # item among them that never reported did not run: its run is partial.
    selected: frozenset[str] | None = None

    def add_report(
        self,
        nodeid: str,
        when: str,
        outcome: str,
        info: RunInfo | None,
        record: EvalRecord | str | None,
        longrepr: str | None,
        wasxfail: bool,
    ) -> None:
        """One report of an item; ``record``: its finished record, or that record's JSON."""
        item = self.items.get(nodeid)
        if item is None:
            item = self.items[nodeid] = _Item(info)
        item.info = item.info or info
        if when == "setup" and item.record is not None:  # it runs again (pytest-rerunfailures)
            item.rerun = True
        if outcome == "rerun" and when not in _PHASES:  # its worker was lost; it runs again elsewhere
            item.earlier = item.earlier or EarlierAttempts()
            item.earlier.add_lost()
        if record is not None and item.rerun:
            self._earlier_attempt(item)
            item.rerun = False
        if isinstance(record, str):
            item.record = self.spool.add(record)
        elif record is not None:
            item.record = record
        if wasxfail:
            item.xfailed = True
        if outcome == "failed" and item.failed_phase is None:
            item.failed_phase, item.failure = when, longrepr
        elif outcome == "skipped" and not wasxfail and item.skipped is None:
            item.skipped = longrepr or "skipped"

    def _earlier_attempt(self, item: _Item) -> None:
        """The item's record is an earlier attempt's: count what it cost (nothing when --vibe-resume
        reused it) before the next attempt's record replaces it. (Each attempt begins with a setup
        report and sends one record; a rerun held back by --vibe-max-cost sends none, and the
        earlier attempt's record stands.)"""
        earlier = self.spool.read(item.record) if isinstance(item.record, int) else item.record
        if earlier is not None and earlier.reused_from is None:
            item.earlier = item.earlier or EarlierAttempts()
            item.earlier.add(earlier)

    def info(self, nodeid: str) -> RunInfo | None:
        """The :class:`RunInfo` an earlier report of the item brought, if any."""
        item = self.items.get(nodeid)
        return item.info if item is not None else None

    def has_info(self, nodeid: str) -> bool:
        """Whether an earlier report of the item brought its :class:`RunInfo`."""
        item = self.items.get(nodeid)
        return item is not None and item.info is not None

    def runs(self, interrupted: bool = False, stopped: str | None = None) -> list[RunRecord]:
        """The runs of every item reported so far; ``interrupted``: items that started but left no
        verdict were cut short by the interruption (skipped, saying so), not failures; ``stopped``:
        why the session may have ended before every selected item ran (-x, --maxfail,
        --vibe-max-cost), said in each run where some did not run: that run is partial."""
        groups: dict[tuple[str, str], list[tuple[RunInfo, str, _Item]]] = {}
        for nodeid, item in self.items.items():
            info = item.info or _info_from_nodeid(nodeid, self._known_infos(), self.extensions)
            groups.setdefault(info.key(), []).append((info, nodeid, item))
        unreported: dict[tuple[str, str], set[str]] = {}
        for nodeid in self.unreported():
            key, eval_id = _run_key(nodeid, groups)
            unreported.setdefault(key, set()).add(eval_id)
        # The session's end reads each record of the runs again, several times (the results file,
        # the Run Summary, the writers): a session of one run keeps them parsed from their first
        # reading on, while the run is built. Its records are all in memory at once then anyway;
        # with several runs, no more than one run's are.
        self.spool.keep_read = len(groups) == 1
        return [
            self._run(items, interrupted, stopped, unreported.get(key, set()))
            for key, items in sorted(groups.items())
        ]

    def unreported(self) -> list[str]:
        """The selected items that never reported (the session ended before they started)."""
        return [nodeid for nodeid in self.selected or () if nodeid not in self.items]

    def cut_short(self, interrupted: bool, stopped: str | None) -> bool:
        """Whether a selected item did not run to a verdict: it never started, --vibe-max-cost held
        it back, or the session's end (``interrupted``, ``stopped``) cut it short."""
        return bool(self.unreported()) or any(
            _held(item, interrupted, stopped) for item in self.items.values()
        )

    def _known_infos(self) -> Iterable[RunInfo]:
        return (item.info for item in self.items.values() if item.info)

    @staticmethod
    def _final_record(
        nodeid: str,
        item: _Item,
        record: EvalRecord | None,
        info: RunInfo,
        interrupted: bool = False,
        stopped: str | None = None,
    ) -> EvalRecord:
        """The item's record as the results show it: ``record`` (the one it sent, parsed), or one
        that says why there is none, or that a phase after the call failed."""
        if record is None:
            record = EvalRecord(
                name=info.eval_id,
                named=info.named,
                nodeid=nodeid,
                outcome="skipped",
                repeat=info.repeat,
            )
            if interrupted and item.failed_phase and item.failed_phase not in _PHASES:
                # its worker went down with the session (a second Ctrl-C): cut short, not a failure
                return record.model_copy(update={"message": f"{NOT_FINISHED}was interrupted"})
            if item.failed_phase:
                phase = f" ({item.failed_phase} failed)" if item.failed_phase in _PHASES else ""
                return record.model_copy(
                    update={
                        "outcome": "error",
                        "message": _bounded(f"no result recorded{phase}: {item.failure or ''}"),
                    }
                )
            if item.skipped:
                return record.model_copy(update={"message": item.skipped})
            if stopped:
                return record.model_copy(update={"message": f"{NOT_FINISHED}{stopped}"})
            if interrupted:
                return record.model_copy(update={"message": f"{NOT_FINISHED}was interrupted"})
            return record.model_copy(update={"outcome": "error", "message": "no result recorded"})
        if item.earlier is not None:
            record = item.earlier.folded(record)
        if item.failed_phase not in (None, "call") and record.outcome == "passed":
            return record.model_copy(
                update={
                    "outcome": "error",
                    "message": _bounded(f"{item.failed_phase} failed: {item.failure or ''}"),
                }
            )
        return record

    def _run(
        self,
        items: list[tuple[RunInfo, str, _Item]],
        interrupted: bool,
        stopped: str | None,
        unreported: set[str],
    ) -> RunRecord:
        """One run, its records parsed for as long as it is built; its ``evals`` read them again
        from the spool when asked for (a record the end of the session made stays an object).
        ``unreported``: the evals of its selected items that never reported."""
        entries: list[tuple[RunInfo, EvalRecord, EvalRecord | int]] = []
        not_run = set(unreported)  # evals with an item that did not run to a verdict
        ran_names: set[str] = set()  # evals with an item that did
        for info, nodeid, item in items:
            sent = self.spool.read(item.record) if isinstance(item.record, int) else item.record
            record = self._final_record(nodeid, item, sent, info, interrupted, stopped)
            kept = item.record if isinstance(item.record, int) and record is sent else record
            entries.append((info, record, kept))
            (not_run if _held(item, interrupted, stopped) else ran_names).add(record.name)
        in_suite_order = sorted(
            entries, key=lambda e: (e[0].eval_index < 0, e[0].eval_index, e[1].repeat, e[1].nodeid)
        )
        info = in_suite_order[0][0]  # a collected item's info before one rebuilt for a crashed item
        records = [record for _, record, _ in in_suite_order]
        ext = self.extensions
        errors: dict[str, str] = {}
        values, reasons = compute_run_values(
            records, ext.run_variables.values(), errors, _formula_reads(info, ext.formula_presets)
        )
        notes = []
        names = {r.name for r in records}
        selected = len(names | unreported)
        why = stopped or ("was interrupted" if interrupted else None)
        partial = f"the session {why}" if not_run and why else None
        if partial:
            notes.append(
                f"{partial}: {len(ran_names)} of {selected} evals ran; "
                "success_pct and the score are over those only, and this run is no baseline"
            )
        if selected < info.suite_evals:
            notes.append(
                f"{selected} of {info.suite_evals} evals were selected; "
                "success_pct and the score are over the selected evals only"
            )
        skipped = [r for r in records if r.outcome == "skipped"]
        if skipped:
            notes.append(
                f"{len(skipped)} eval(s) skipped and not counted: "
                + "; ".join(sorted({first_line(r.message or "skipped") for r in skipped}))
            )
        score, score_error, shown = _score(info, values, reasons, ext, partial)
        stats = _eval_stats(in_suite_order)
        repeat_fields: dict[str, object] = {}
        if info.repeats > 1:
            score, score_error, repeat_fields = _repeated_score(info, records, notes, ext)
            shown = None  # the score is not the formula over one set of values
        counted = ran(records)
        metrics = {name: values[name] for name, variable in ext.run_variables.items() if variable.metric}
        metrics["errors"] = sum(1 for r in counted if r.outcome == "error")
        metrics["skipped"] = len(skipped)
        run = RunRecord(
            suite=info.suite,
            source=info.source,
            configuration=info.configuration,
            configuration_name=info.configuration_name,
            score=score,
            score_formula=info.score_formula,
            score_error=score_error,
            score_canonical=info.score_canonical,
            score_preset=info.score_preset,
            input_digest=info.input_digest,
            score_breakdown=shown,
            score_names=formula_names(info, values, ext.formula_presets),
            gate=gate_record(score, score_error, info.score_min, info.score_max, partial),
            metrics=metrics,
            variables={},
            variable_errors=errors,
            notes=notes,
            grade=grade(score) if info.score_preset == "rubric" else None,
            repeats=info.repeats,
            evals=[],
            **repeat_fields,  # type: ignore[arg-type]
        )
        evals = OnDemand([kept for _, _, kept in in_suite_order], self.spool.resolve)
        # Not validated: that would make every record and stats model, and copy the variables (13
        # per eval, every value a float or None already), kept a tuple of values per eval.
        return run.model_copy(update={"evals": evals, "eval_stats": stats, "variables": values})


def _score(
    info: RunInfo,
    values: Mapping[str, float | None],
    reasons: dict[str, str],
    ext: Extensions,
    partial: str | None = None,
) -> tuple[float | None, str | None, str | None]:
    """The run's score, why it is null, and its breakdown (``partial``: why not every selected
    eval ran, if so)."""
    try:
        formula = _parse(info, values, ext.formula_presets)
    except FormulaError as exc:
        return None, exc.reason, None
    absent = "the eval did not run in this run (deselected?)"
    if partial:
        absent = f"not in this run: {partial} before it ran"
    for name in {name for name in formula.names if name not in values}:
        reasons[name] = absent
    score, score_error = evaluate(formula, values, reasons)
    undefined = undefined_preset_reason(info.score_preset, values) if score is not None else None
    if undefined is not None:
        score, score_error = None, undefined
    return score, score_error, _breakdown(formula, values)


def _eval_stats(entries: list[tuple[RunInfo, EvalRecord, EvalRecord | int]]) -> OnDemand[EvalStats]:
    """Each eval over its runs (one, or its repeats), in suite order: made from its counts when
    asked for (:func:`repeats.eval_stats`), so that the controller keeps a few numbers per eval."""
    grouped: dict[str, tuple[RunInfo, list[EvalRecord]]] = {}
    for info, record, _ in entries:
        grouped.setdefault(record.name, (info, []))[1].append(record)
    # The names interned: the records are parsed anew each time, the stats keep their names.
    counts = [
        (sys.intern(name), *run_counts(records), info.min_pass_rate)
        for name, (info, records) in grouped.items()
    ]
    return OnDemand(counts, _stats, _stats_json)


def _stats(counts: tuple[str, int, int, float | None]) -> EvalStats:
    return stats_from_counts(*counts)


def _stats_json(counts: tuple[str, int, int, float | None]) -> str:
    return stats_json(*counts)


def _repeated_score(
    info: RunInfo, records: list[EvalRecord], notes: list[str], ext: Extensions
) -> tuple[float | None, str | None, dict[str, object]]:
    """With --vibe-repeat: the formula over each repeat alone, then the rubric document's
    aggregation of those scores (the latest repeat counts as the most recent), and their mean with
    a 95 % interval."""
    per_repeat: list[float | None] = []
    errors: list[str] = []
    for repeat in range(1, info.repeats + 1):
        values, reasons = compute_variables(
            [r for r in records if r.repeat == repeat], ext.run_variables.values()
        )
        score, error, _ = _score(info, values, reasons, ext)
        per_repeat.append(score)
        if score is None:
            errors.append(f"repeat {repeat}: {error}")
    if errors:
        notes.append(f"{len(errors)} of {info.repeats} repeat(s) have no score: " + "; ".join(errors[:3]))
    scored = [s for s in per_repeat if s is not None]
    interval = mean_ci95(scored)
    fields: dict[str, object] = {"repeat_scores": per_repeat}
    if interval is not None:
        fields["score_mean"] = interval.mean
        if interval.interval is not None:
            fields["score_ci95"] = list(interval.interval)
    score = aggregate_scores(recency_order(per_repeat))
    if score is None:
        return None, errors[-1] if errors else "no repeat ran", fields
    return score, None, fields


def _formula_reads(info: RunInfo, presets: Mapping[str, str]) -> frozenset[str] | None:
    """The variables the run's formula reads, when that does not depend on which evals ran (its
    canonical text; none when it cannot be read): the reasons worth giving. None: any."""
    if info.score_canonical is None:
        return None
    try:
        return frozenset(parse_formula(info.score_canonical, None, presets=presets).names)
    except FormulaError:
        return frozenset()


def _parse(info: RunInfo, values: Mapping[str, float | None], presets: Mapping[str, str]) -> Formula:
    """The run's formula, read as collection read it.

    With the canonical text (hyphenated names bracketed) the reading does not depend on which evals
    ran. Without it, the names of this run's variables decide whether ``a-b`` is one name; a
    hyphenated name that did not run is still one name (``allow_unknown``).
    """
    if info.score_canonical is not None:
        return parse_formula(info.score_canonical, None, presets=presets)
    return parse_formula(info.score_formula, set(values), allow_unknown=True, presets=presets)


def formula_names(info: RunInfo, values: Mapping[str, float | None], presets: Mapping[str, str]) -> list[str]:
    """The variables the run's formula reads, as collection read it; empty when it cannot be read
    (its score then is null with the reason). The outputs take these instead of reading it again."""
    try:
        return sorted(_parse(info, values, presets).names)
    except FormulaError:
        return []


def _breakdown(formula: Formula, values: Mapping[str, float | None]) -> str | None:
    """The formula with the run's values substituted; None if it cannot be shown (never raises)."""
    try:
        return breakdown(formula, values)
    except Exception:  # a display aid must never break the session
        return None


def _number(value: float) -> str:
    return f"{value:g}"


def _bounds(low: float | None, high: float | None) -> str:
    return " and ".join(
        f"{name} {_number(bound)}" for name, bound in (("min", low), ("max", high)) if bound is not None
    )


def _amount(value: float) -> str:
    """As the summary shows scores (2 decimals, exponent form from 1e9); 3 significant digits
    below 1 (scores per dollar are large, costs small)."""
    return decimal(value) if value == 0 or abs(value) >= 1 else f"{value:.3g}"


def _score_near(score: float, bound: float) -> str:
    """The score as :func:`_amount` shows it, or more precisely where that looks equal to ``bound``."""
    shown = _amount(score)
    return f"{score:.6g}" if float(shown) == bound else shown


def gate_record(
    score: float | None,
    score_error: str | None,
    low: float | None,
    high: float | None,
    partial: str | None = None,
) -> GateRecord | None:
    """Whether ``score`` passes the gate [low, high] (both inclusive, either optional); None when
    neither bound is set. A null score fails a gate: the run could not be judged; so does a partial
    run (``partial``: why not every selected eval ran), whose score covers only what ran."""
    if low is None and high is None:
        return None
    bounds = _bounds(low, high)
    if partial:
        message = f"not judged: {partial} before every selected eval ran; the gate ({bounds}) needs them all"
        return GateRecord(min=low, max=high, passed=False, message=message)
    if score is None:
        why = f" ({score_error})" if score_error else ""
        message = f"score is null{why}; the gate ({bounds}) needs a score"
        return GateRecord(min=low, max=high, passed=False, message=message)
    if low is not None and score < low:
        message = f"score {_score_near(score, low)} is below min {_number(low)} (by {_amount(low - score)})"
        return GateRecord(min=low, max=high, passed=False, message=message)
    if high is not None and score > high:
        message = (
            f"score {_score_near(score, high)} is above max {_number(high)} (by {_amount(score - high)})"
        )
        return GateRecord(min=low, max=high, passed=False, message=message)
    return GateRecord(min=low, max=high, passed=True, message=f"score {_amount(score)} meets {bounds}")


def _bounded(text: str, limit: int = 20) -> str:
    """At most ``limit`` lines: the first (what happened) and the last ones (where)."""
    lines = text_lines(text.strip())
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([lines[0], "…", *lines[-(limit - 2) :]])


def _split_nodeid(nodeid: str) -> tuple[str, str, str]:
    """``path::eval[config]`` → (path, eval, config); an xdist ``@group`` suffix is dropped. The
    configuration is the last bracket: a dataset row's eval is ``eval[row]``."""
    source, _, rest = nodeid.partition("::")
    rest = rest.partition("@")[0]
    eval_id, _, config = rest.rpartition("[")
    return source, eval_id, config.rstrip("]")


def _run_key(
    nodeid: str, runs: Mapping[tuple[str, str], list[tuple[RunInfo, str, _Item]]]
) -> tuple[tuple[str, str], str]:
    """The run (source, configuration) and the eval of an item known only by its node id; a
    repeated item's configuration part ``config-rN`` belongs to ``config``'s run when that run
    is repeated (else ``config-r1`` may be a configuration's own id)."""
    source, eval_id, config = _split_nodeid(nodeid)
    repeated = _REPEAT_SUFFIX.match(config)
    if (source, config) not in runs and repeated:
        base = runs.get((source, repeated[1]), ())
        if any(info.repeats > 1 for info, _, _ in base):
            config = repeated[1]
    return (source, config), eval_id


def _held(item: _Item, interrupted: bool, stopped: str | None) -> bool:
    """Whether a reported item did not run to a verdict: --vibe-max-cost held it back, or it left
    no result because the session ended (``interrupted``, ``stopped``) while it ran."""
    if item.record is not None or item.failed_phase is not None:
        return False
    if item.skipped is not None:
        return NOT_STARTED in item.skipped
    return interrupted or stopped is not None


def _info_from_nodeid(nodeid: str, known: Iterable[RunInfo], ext: Extensions) -> RunInfo:
    """The run of an item that left no RunInfo (its worker crashed), from its node id and its siblings'."""
    source, eval_id, config = _split_nodeid(nodeid)
    siblings = [info for info in known if info.source == source]
    if not siblings:
        return RunInfo(source, source, config, None, "success_pct", eval_id, False, 0)
    repeat = 0
    repeated = _REPEAT_SUFFIX.match(config)
    if repeated and any(i.repeats > 1 for i in siblings):
        config, repeat = repeated[1], int(repeated[2])
    info = next((i for i in siblings if i.configuration == config), siblings[0])
    same = info.configuration == config
    return RunInfo(
        info.suite,
        source,
        config,
        info.configuration_name if same else None,
        info.score_formula,
        eval_id,
        any(i.eval_id == eval_id and i.named for i in siblings) or _in_formula(eval_id, info, ext),
        info.suite_evals,
        score_min=info.score_min,
        score_max=info.score_max,
        score_canonical=info.score_canonical,
        score_preset=info.score_preset,
        repeat=repeat,
        repeats=info.repeats if repeat else 1,
        min_pass_rate=next((i.min_pass_rate for i in siblings if i.eval_id == eval_id), None),
        input_digest=info.input_digest if same else None,
    )


_REPEAT_SUFFIX = re.compile(r"^(.*)-r(\d+)$")  # a repeated item's configuration part: ``config-r2``


def _in_formula(eval_id: str, info: RunInfo, ext: Extensions) -> bool:
    """Whether the run's formula uses one of the eval's variables; only named evals' can be used,
    and a generated id never equals a name, so such an eval is named."""
    own = set(eval_variable_names(eval_id))
    try:
        if info.score_canonical is not None:
            names = parse_formula(info.score_canonical, None, presets=ext.formula_presets).names
        else:
            known = own | set(ext.run_variables)
            names = parse_formula(
                info.score_formula, known, allow_unknown=True, presets=ext.formula_presets
            ).names
    except FormulaError:
        return False
    return bool(names & own)
