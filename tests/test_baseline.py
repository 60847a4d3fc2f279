"""Comparing results with a baseline (labels, flips, the CLI) and the JSONL history."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from helpers import c_locale
from pydantic import ValidationError

from pytest_vibeeval.report.baseline import (
    BaselineError,
    append_history,
    compare_results,
    compare_run,
    comparison_lines,
    decide,
    eval_outcomes,
    load_baseline,
    read_history,
    read_results,
    regressed,
    resolve_baseline,
)
from pytest_vibeeval.results import (
    SCHEMA_VERSION,
    BaselineRecord,
    EvalRecord,
    EvalStats,
    Outcome,
    ResultsFile,
    RunRecord,
)
from pytest_vibeeval.scoring.repeats import eval_stats


def evals(outcomes: dict[str, Outcome | Sequence[Outcome]]) -> list[EvalRecord]:
    """Eval records by name; a sequence of outcomes is one record per repeat."""
    out: list[EvalRecord] = []
    for name, given in outcomes.items():
        repeats = [given] if isinstance(given, str) else list(given)
        for i, outcome in enumerate(repeats, start=1):
            repeat = i if len(repeats) > 1 else 0
            out.append(EvalRecord(name=name, nodeid=f"s.yaml::{name}#{i}", outcome=outcome, repeat=repeat))
    return out


def run_record(
    suite: str,
    score: float | None,
    outcomes: dict[str, Outcome | Sequence[Outcome]] | None = None,
    *,
    configuration: str = "cfg",
    score_error: str | None = None,
    stats: Sequence[EvalStats] = (),
    metrics: dict[str, float] | None = None,
    formula: str = "success_pct",
    canonical: str | None = None,
) -> RunRecord:
    return RunRecord(
        suite=suite,
        source=f"evals/{suite}.yaml",
        configuration=configuration,
        score=score,
        score_formula=formula,
        score_canonical=canonical,
        score_error=score_error,
        metrics=metrics or {},
        variables={},
        eval_stats=list(stats),
        evals=evals(outcomes or {"a": "passed"}),
    )


def results_file(*runs: RunRecord) -> ResultsFile:
    return ResultsFile(
        started_at="2025-01-01T00:00:00+00:00", finished_at="2025-01-01T00:01:00+00:00", runs=list(runs)
    )


def save(path: Path, results: ResultsFile) -> Path:
    path.write_text(results.model_dump_json(indent=2), encoding="utf-8")
    return path


# --- decide ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("delta", "label", "accepted"),
    [
        (6, "significant_improvement", True),
        (5.000001, "significant_improvement", True),
        (5, "marginal_improvement", True),
        (0.5, "marginal_improvement", True),
        (0, "exploration", True),
        (-2.9, "exploration", True),
        (-3, "regression", False),
        (-10, "regression", False),
    ],
)
def test_decide_boundaries(delta: float, label: str, accepted: bool) -> None:
    assert decide(delta, False) == (label, accepted)


def test_exploration_is_accepted_only_without_pass_to_fail() -> None:
    assert decide(-1, False) == ("exploration", True)
    assert decide(-1, True) == ("exploration", False)
    assert decide(0, True) == ("exploration", False)
    # Improvements and regressions do not depend on the flips.
    assert decide(6, True) == ("significant_improvement", True)
    assert decide(1, True) == ("marginal_improvement", True)
    assert decide(-4, False) == ("regression", False)


# --- compare -----------------------------------------------------------------------------------------

# suite → (baseline score, new score, expected label, accepted)
CASES = {
    "plus6": (80.0, 86.0, "significant_improvement", True),
    "plus5": (80.1, 85.1, "marginal_improvement", True),  # 85.1 - 80.1 is 5 after rounding the delta
    "plus05": (80.0, 80.5, "marginal_improvement", True),
    "zero": (80.0, 80.0, "exploration", True),
    "minus29": (80.0, 77.1, "exploration", True),
    "minus3": (80.0, 77.0, "regression", False),
    "minus10": (80.0, 70.0, "regression", False),
}


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """A baseline and a new results file covering every label, written to disk."""
    base_runs = [run_record(name, old) for name, (old, _, _, _) in CASES.items()]
    new_runs = [run_record(name, new) for name, (_, new, _, _) in CASES.items()]
    base_runs += [
        run_record(
            "flips", 80.0, {"a": "passed", "b": "passed", "c": "failed", "d": "passed", "e": "skipped"}
        ),
        run_record("noscore", 70.0),
        run_record("gone", 50.0),
    ]
    new_runs += [
        run_record(
            "flips", 79.0, {"a": "failed", "b": "error", "c": "passed", "d": "passed", "e": "skipped"}
        ),
        run_record("noscore", None, score_error="division by zero in success_pct / total"),
        run_record("fresh", 90.0),
        run_record("plus6", 50.0, configuration="other"),  # same suite, a configuration the baseline lacks
    ]
    base = save(tmp_path / "base.json", results_file(*base_runs))
    new = save(tmp_path / "new.json", results_file(*new_runs))
    return base, new


def test_compare_results_labels(files: tuple[Path, Path]) -> None:
    base, new = files
    comparison = compare_results(load_baseline(new), load_baseline(base), str(base))
    records = {(run.suite, run.configuration): record for run, record in comparison.pairs}
    for suite, (old, now, label, accepted) in CASES.items():
        record = records[suite, "cfg"]
        assert (record.label, record.accepted) == (label, accepted), suite
        assert record.score == old
        assert record.delta == pytest.approx(now - old)
        assert record.baseline == str(base)
    assert records["plus5", "cfg"].delta == 5.0
    assert records["minus29", "cfg"].delta == -2.9
    assert comparison.missing == ["gone × cfg"]
    assert [run.suite for run in comparison.regressions] == ["minus3", "minus10"]


def test_compare_results_flips_and_exploration(files: tuple[Path, Path]) -> None:
    base, new = files
    comparison = compare_results(load_baseline(new), load_baseline(base), str(base))
    record = next(r for run, r in comparison.pairs if run.suite == "flips")
    # a and b passed and now fail (error counts as a failure); c failed and now passes; e is skipped.
    assert record.pass_to_fail == ["a", "b"]
    assert record.fail_to_pass == ["c"]
    # delta -1 is exploration, rejected because evals broke.
    assert (record.label, record.accepted) == ("exploration", False)
    assert "2 eval(s) went from pass to fail" in record.reason


def test_compare_results_new_and_incomparable(files: tuple[Path, Path]) -> None:
    base, new = files
    comparison = compare_results(load_baseline(new), load_baseline(base), str(base))
    records = {(run.suite, run.configuration): record for run, record in comparison.pairs}
    for key in [("fresh", "cfg"), ("plus6", "other")]:
        assert records[key].label == "new"
        assert (records[key].accepted, records[key].delta, records[key].score) == (None, None, None)
    assert records["fresh", "cfg"].reason == "the baseline has no run of evals/fresh.yaml against cfg"
    incomparable = records["noscore", "cfg"]
    assert (incomparable.label, incomparable.accepted, incomparable.delta) == ("incomparable", None, None)
    assert incomparable.score == 70.0
    assert incomparable.reason == "this run has no score (division by zero in success_pct / total)"


def test_incomparable_when_the_scores_are_over_different_evals() -> None:
    """A baseline run with -k (or before an eval was added, or with an eval skipped) scored other
    evals: its score is no yardstick, whatever the delta."""
    full = run_record("s", 60.0, {"a": "passed", "b": "passed", "c": "failed", "d": "failed", "e": "passed"})
    subset = run_record("s", 100.0, {"a": "passed", "b": "passed"})
    record = compare_run(full, subset, "b")
    assert (record.label, record.accepted, record.delta) == ("incomparable", None, None)
    assert record.reason == "the scores are over different evals: 3 eval(s) ran in this run only (c, d, e)"
    assert (record.pass_to_fail, record.fail_to_pass) == ([], [])  # the evals both ran still compare
    back = compare_run(subset, full, "b")
    assert back.reason == "the scores are over different evals: 3 eval(s) ran in the baseline only (c, d, e)"
    assert not regressed(record) and not regressed(back)
    broke = compare_run(run_record("s", 60.0, {"a": "failed", "c": "passed"}), subset, "b")
    assert (broke.label, broke.pass_to_fail) == ("incomparable", ["a"]) and regressed(broke)
    skipped = run_record(
        "s", 100.0, {"a": "passed", "b": "passed", "c": "skipped", "d": "skipped", "e": "skipped"}
    )
    assert compare_run(full, skipped, "b").label == "incomparable"


def test_incomparable_when_both_lack_a_score() -> None:
    record = compare_run(run_record("s", None, score_error="x"), run_record("s", None, score_error="y"), "b")
    assert record.label == "incomparable"
    assert record.reason == "this run has no score (x); the baseline has no score (y)"
    only_base = compare_run(run_record("s", 50.0), run_record("s", None), "b")
    assert only_base.reason == "the baseline has no score (no score)"


def test_incomparable_when_the_score_formula_changed() -> None:
    """Scores of two formulas are not on one scale: every eval passing under `a * 10` (10) after
    `success_pct` (100) is no regression, and evals failing under `success_pct * 2` at the same
    score is no exploration; the flips still count."""
    four = {"a": "passed", "b": "passed", "c": "passed", "d": "passed"}
    base = run_record("s", 100.0, four, formula="success_pct", canonical="success_pct")
    lower = compare_run(run_record("s", 10.0, four, formula="a * 10", canonical="a * 10"), base, "b")
    assert (lower.label, lower.accepted, lower.delta, lower.score) == ("incomparable", None, None, 100.0)
    assert lower.reason == "the score formula changed: success_pct in the baseline, a * 10 in this run"
    assert not regressed(lower)
    broken = {"a": "passed", "b": "passed", "c": "failed", "d": "failed"}
    doubled = run_record("s", 100.0, broken, formula="success_pct * 2", canonical="success_pct * 2")
    hidden = compare_run(doubled, base, "b")
    assert (hidden.label, hidden.pass_to_fail) == ("incomparable", ["c", "d"]) and regressed(hidden)
    lines = comparison_lines(compare_results(results_file(doubled), results_file(base), "b"))
    assert lines[1] == (
        "s × cfg: 100.00 → 100.00 incomparable: the score formula changed: success_pct in the "
        "baseline, success_pct * 2 in this run — pass→fail: c, d"
    )
    assert lines[-1] == "1 regression(s): s × cfg"


def test_a_formula_compares_as_read() -> None:
    """Spacing is no change; a preset and its expansion read the same; without the canonical text on
    both sides (a file written before it was recorded) the formulas compare as written."""
    base = run_record("s", 80.0, formula="success_pct*2", canonical="success_pct*2")
    spaced = run_record("s", 80.0, formula="success_pct  *  2", canonical="success_pct * 2")
    assert compare_run(spaced, base, "b").label == "exploration"
    preset = run_record("s", 80.0, formula="doubled", canonical="success_pct * 2")
    assert compare_run(preset, base, "b").label == "exploration"
    old = run_record("s", 80.0, formula="success_pct*2")
    assert compare_run(spaced, old, "b").label == "exploration"
    assert compare_run(preset, old, "b").label == "incomparable"
    # `x-y` read as the eval x-y's variable, then (no such eval any more) as x minus y
    name = run_record("s", 80.0, formula="x-y", canonical="[x-y]")
    minus = run_record("s", 80.0, formula="x-y", canonical="x-y")
    assert compare_run(minus, name, "b").label == "incomparable"


def test_flips_follow_eval_stats_over_repeats() -> None:
    # Three repeats of "flaky": 2 of 3 passed. With min_pass_rate 0.6 it passes; the records alone fail it.
    outcomes: dict[str, Outcome | Sequence[Outcome]] = {
        "flaky": ["passed", "failed", "passed"],
        "ok": "passed",
    }
    strict = run_record("s", 80.0, outcomes)
    assert eval_outcomes(strict) == {"flaky": False, "ok": True}
    stats = [eval_stats("flaky", [r for r in strict.evals if r.name == "flaky"], 0.6)]
    lenient = run_record("s", 80.0, outcomes, stats=stats)
    assert eval_outcomes(lenient) == {"flaky": True, "ok": True}
    record = compare_run(strict, lenient, "b")
    assert (record.pass_to_fail, record.fail_to_pass) == (["flaky"], [])
    # A skipped status leaves the eval out.
    skipped = [EvalStats(name="ok", runs=0, passed=0, pass_rate=None, status="skipped")]
    assert eval_outcomes(run_record("s", 1.0, outcomes, stats=skipped)) == {"flaky": False}


def test_comparison_lines(files: tuple[Path, Path]) -> None:
    base, new = files
    lines = comparison_lines(compare_results(load_baseline(new), load_baseline(base), str(base)))
    assert lines[0] == f"baseline: {base}"
    assert "plus6 × cfg: 80.00 → 86.00 (Δ +6.00) significant_improvement, accepted" in lines
    assert "minus10 × cfg: 80.00 → 70.00 (Δ -10.00) regression, not accepted" in lines
    assert (
        "flips × cfg: 80.00 → 79.00 (Δ -1.00) exploration, not accepted — pass→fail: a, b; fail→pass: c"
        in lines
    )
    assert "fresh × cfg: 90.00 new (not in the baseline)" in lines
    assert (
        "noscore × cfg: 70.00 → null incomparable: this run has no score "
        "(division by zero in success_pct / total)" in lines
    )
    assert "gone × cfg: missing from these results" in lines
    assert lines[-1] == "2 regression(s): minus3 × cfg, minus10 × cfg"


@pytest.mark.parametrize(
    ("now", "delta", "label", "reason"),
    [
        (77.001, -3.0, "regression", "delta -3.00 is -3 or below"),
        (85.0049, 5.0, "marginal_improvement", "delta +5.00 is above 0, at most +5"),
        (80.0015, 0.0015, "marginal_improvement", "delta +0.0015 is above 0, at most +5"),
    ],
)
def test_the_label_is_decided_on_the_delta_as_shown(
    now: float, delta: float, label: str, reason: str
) -> None:
    record = compare_run(run_record("s", now), run_record("s", 80.0), "b")
    assert (record.delta, record.label, record.reason) == (delta, label, reason)
    line = comparison_lines(
        compare_results(results_file(run_record("s", now)), results_file(run_record("s", 80.0)), "b")
    )[1]
    assert f"(Δ {reason.split()[1]}) {label}" in line


def test_comparison_lines_without_regression() -> None:
    same = results_file(run_record("s", 80.0))
    lines = comparison_lines(compare_results(same, same, "b.json"))
    assert lines == [
        "baseline: b.json",
        "s × cfg: 80.00 → 80.00 (Δ +0.00) exploration, accepted",
        "no regression",
    ]


# --- loading -----------------------------------------------------------------------------------------


def test_load_baseline_errors(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match=r"missing\.json: no such file"):
        load_baseline(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "runs": [,]\n}', encoding="utf-8")
    with pytest.raises(BaselineError, match=r"broken\.json: not JSON \(line 2, column 12: Expecting value\)"):
        load_baseline(broken)
    listed = tmp_path / "list.json"
    listed.write_text("[]", encoding="utf-8")
    with pytest.raises(BaselineError, match="expected a JSON object"):
        load_baseline(listed)
    data = json.loads(results_file(run_record("s", 80.0)).model_dump_json())
    del data["runs"][0]["score"]
    data["runs"][0]["evals"][0]["outcome"] = "maybe"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        load_baseline(wrong)
    message = str(info.value)
    assert message.startswith(f"{wrong}: not a pytest-vibeeval results file: runs[0].score: Field required")
    assert "runs[0].evals[0].outcome: Input should be" in message
    data = json.loads(results_file().model_dump_json())
    data["schema_version"] = SCHEMA_VERSION + 1
    data["new_field"] = 1
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BaselineError, match=f"schema_version {SCHEMA_VERSION + 1} is newer"):
        load_baseline(newer)
    with pytest.raises(BaselineError, match="cannot read it"):
        load_baseline(tmp_path)


def test_fields_a_newer_release_added_are_ignored_when_read(tmp_path: Path) -> None:
    """A release may add fields without a new schema_version: reading skips them and names each once;
    a wrong value beside them is still an error, and our own records still refuse a field they lack."""
    results = results_file(run_record("s", 80.0, {"a": "passed", "b": "failed"}))
    data = json.loads(results.model_dump_json())
    data["host"] = "ci-7"
    data["runs"][0]["energy"] = 1.5
    for record in data["runs"][0]["evals"]:
        record["carbon"] = 0.1
    newer = tmp_path / "newer.json"
    newer.write_text(json.dumps(data), encoding="utf-8")
    read = read_results(newer)
    assert read.results == results
    assert read.ignored == ["host", "runs[].energy", "runs[].evals[].carbon"]
    assert read.note("newer.json") == (
        "newer.json: ignored 3 field(s) this pytest-vibeeval does not know (written by a newer "
        "release?): host, runs[].energy, runs[].evals[].carbon"
    )
    assert load_baseline(newer) == results
    assert read_results(save(tmp_path / "ours.json", results)).note("ours.json") is None

    data["runs"][0]["score"] = "high"
    newer.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(BaselineError) as info:
        load_baseline(newer)
    assert str(info.value) == (
        f"{newer}: not a pytest-vibeeval results file: runs[0].score: Input should be a valid number, "
        "unable to parse string as a number"
    )
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        EvalRecord(name="a", nodeid="n", outcome="passed", carbon=0.1)  # type: ignore[call-arg]


@pytest.mark.parametrize("version", [0, -1, SCHEMA_VERSION + 1, str(SCHEMA_VERSION + 1)])
def test_another_schema_version_is_refused(tmp_path: Path, version: int | str) -> None:
    data = json.loads(results_file(run_record("s", 80.0)).model_dump_json())
    data["schema_version"] = version
    other = save_json(tmp_path / "other.json", data)
    with pytest.raises(BaselineError, match=f"other.json: schema_version {int(version)} is "):
        load_baseline(other)


def save_json(path: Path, data: dict[str, object]) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_load_baseline_reads_a_results_file(tmp_path: Path) -> None:
    results = results_file(run_record("s", 80.0))
    assert load_baseline(save(tmp_path / "r.json", results)) == results


def test_resolve_baseline(tmp_path: Path) -> None:
    assert resolve_baseline("latest", tmp_path) == tmp_path / ".vibeeval" / "results" / "latest.json"
    assert resolve_baseline("old/r.json", tmp_path) == Path("old/r.json")


# --- the CLI -----------------------------------------------------------------------------------------


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "compare", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_cli_compare_exit_codes(files: tuple[Path, Path], tmp_path: Path) -> None:
    base, new = files
    shown = cli(base, new, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.splitlines() == comparison_lines(
        compare_results(load_baseline(new), load_baseline(base), str(base))
    )
    assert "minus3 × cfg: 80.00 → 77.00 (Δ -3.00) regression, not accepted" in shown.stdout
    failing = cli(base, new, "--fail-on-regression", cwd=tmp_path)
    assert failing.returncode == 1
    assert failing.stdout == shown.stdout
    # Against itself: no regression, so the flag does not fail.
    same = cli(base, base, "--fail-on-regression", cwd=tmp_path)
    assert same.returncode == 0
    assert same.stdout.splitlines()[-1] == "no regression"


def test_cli_compare_in_the_c_locale_escapes_what_it_cannot_print(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without Python's UTF-8 mode the C locale's output is ASCII: the run title's ``×`` is shown
    escaped, as pytest shows it, instead of ending the command in UnicodeEncodeError."""
    base, new = files
    c_locale(monkeypatch)
    shown = cli(base, new, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "minus3 \\xd7 cfg: 80.00 \\u2192 77.00 (\\u0394 -3.00) regression, not accepted" in shown.stdout


def test_cli_compare_latest(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, new = files
    latest = tmp_path / ".vibeeval" / "results" / "latest.json"
    latest.parent.mkdir(parents=True)
    latest.write_bytes(new.read_bytes())
    done = cli("base.json", "latest", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "baseline: base.json"


def test_cli_compare_bad_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    base, _ = files
    (tmp_path / "bad.json").write_text("{oops", encoding="utf-8")
    pairs: list[tuple[str | Path, str | Path]] = [(base, "bad.json"), ("nothing.json", base)]
    for args in pairs:
        done = cli(*args, "--fail-on-regression", cwd=tmp_path)
        assert done.returncode == 2
        assert done.stdout == ""
        assert "Traceback" not in done.stderr
        assert len(done.stderr.splitlines()) == 1
    assert cli(base, "bad.json", cwd=tmp_path).stderr == (
        "error: bad.json: not JSON (line 1, column 2: Expecting property name enclosed in double quotes)\n"
    )


def test_cli_compare_reports_every_bad_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    """Both files unusable: both are named, not only the first (one fix, then the next error)."""
    (tmp_path / "bad.json").write_text("{oops", encoding="utf-8")
    partial = results_file(run_record("s", 80.0)).model_copy(update={"stopped_early": "-x"})
    save(tmp_path / "partial.json", partial)
    done = cli("partial.json", "bad.json", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "error: partial.json holds a partial run (-x): it is no baseline",
        "error: bad.json: not JSON (line 1, column 2: Expecting property name enclosed in double quotes)",
    ]
    done = cli("nothing.json", "bad.json", cwd=tmp_path)
    assert done.stderr.splitlines()[0] == "error: nothing.json: no such file"
    assert len(done.stderr.splitlines()) == 2


def test_cli_compare_says_when_the_new_file_is_partial(tmp_path: Path) -> None:
    """A partial new file is compared (its runs are what they are), but not silently: its scores
    cover only the evals that ran."""
    save(tmp_path / "base.json", results_file(run_record("s", 100.0, {"a": "passed", "b": "passed"})))
    cut = results_file(run_record("s", 100.0, {"a": "passed"}))
    save(tmp_path / "new.json", cut.model_copy(update={"stopped_early": "the session stopped after -x"}))
    done = cli("base.json", "new.json", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stderr.splitlines() == [
        "warning: new.json holds a partial run (the session stopped after -x): its scores are over the "
        "evals that ran"
    ]
    assert "incomparable: the scores are over different evals" in done.stdout


def test_cli_compare_without_a_run_in_common(tmp_path: Path) -> None:
    """Different suites or configurations: nothing was compared, which is not "no regression"; with
    --fail-on-regression it fails, since the check it asks for could not be made."""
    save(tmp_path / "base.json", results_file(run_record("s", 80.0)))
    save(tmp_path / "new.json", results_file(run_record("s", 20.0, configuration="other")))
    done = cli("base.json", "new.json", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.splitlines() == [
        "baseline: base.json",
        "s × other: 20.00 new (not in the baseline)",
        "s × cfg: missing from these results",
        "no run in common with the baseline: nothing was compared",
    ]
    failing = cli("base.json", "new.json", "--fail-on-regression", cwd=tmp_path)
    assert (failing.returncode, failing.stdout) == (1, done.stdout)
    assert failing.stderr == "--fail-on-regression: no run is in both files, so nothing was compared\n"


def test_cli_compare_help_says_what_fails() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "compare", "--help"],
        capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert (
        "exit 1 when a run regressed (labelled regression, or incomparable with an eval that passed in "
        "BASELINE and fails in NEW), or when no run is in both files (nothing compared)"
    ) in text


def test_cli_schema_still_works() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "--help"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0
    assert "schema" in done.stdout and "compare" in done.stdout


# --- history -----------------------------------------------------------------------------------------


def test_history_append_and_read(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "history.jsonl"
    metrics = {"success_pct": 50.0, "total_cost": 0.02, "avg_latency": 1.5, "passed": 1, "total": 2}
    first = run_record("s", 50.0, metrics=metrics)
    first.baseline = BaselineRecord(
        baseline="b.json", score=40.0, delta=10.0, label="significant_improvement", accepted=True, reason="r"
    )
    first.score_mean, first.score_ci95, first.repeats, first.grade = 50.0, [40.0, 60.0], 3, "F"
    append_history(path, results_file(first, run_record("t", None, configuration="other")), "r1.json")
    append_history(path, results_file(run_record("s", 60.0)), None)
    assert path.read_text(encoding="utf-8").count("\n") == 3
    history = read_history(path)
    assert history.problems == []
    assert [(e["suite"], e["configuration"], e["score"]) for e in history.entries] == [
        ("s", "cfg", 50.0),
        ("t", "other", None),
        ("s", "cfg", 60.0),
    ]
    assert history.entries[0] == {
        "started_at": "2025-01-01T00:00:00+00:00",
        "finished_at": "2025-01-01T00:01:00+00:00",
        "results": "r1.json",
        "suite": "s",
        "source": "evals/s.yaml",
        "configuration": "cfg",
        "score": 50.0,
        "grade": "F",
        "score_mean": 50.0,
        "score_ci95": [40.0, 60.0],
        "repeats": 3,
        "success_pct": 50.0,
        "total_cost": 0.02,
        "avg_latency": 1.5,
        "passed": 1,
        "total": 2,
        "baseline_label": "significant_improvement",
    }
    assert history.entries[2]["results"] is None
    assert history.entries[2]["baseline_label"] is None


def test_history_without_runs_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    append_history(path, results_file(), None)
    assert not path.exists()
    assert read_history(path) == ([], [])


def test_history_torn_lines(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    append_history(path, results_file(run_record("s", 1.0)), None)
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"suite": "torn", "sco')  # a session that died mid-write
    history = read_history(path)
    assert [e["suite"] for e in history.entries] == ["s"]
    assert len(history.problems) == 1
    assert history.problems[0].startswith(f"{path}:2: not JSON")
    # The next append starts on a line of its own, so only the torn line is lost.
    append_history(path, results_file(run_record("u", 2.0)), None)
    history = read_history(path)
    assert [e["suite"] for e in history.entries] == ["s", "u"]
    assert [p.split(": ")[0] for p in history.problems] == [f"{path}:2"]
    with path.open("a", encoding="utf-8") as handle:
        handle.write("[1, 2]\n")
    assert read_history(path).problems[-1] == f"{path}:4: not a JSON object; skipped"
