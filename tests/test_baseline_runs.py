"""Baselines through real pytest runs: --vibe-baseline PATH|latest labels every run against an
earlier results file with its flips, --vibe-fail-on-regression fails the session on a regression,
the history file gets one line per run, and `compare` says the same without running anything."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import XDIST_MODES, load_json, run, run_of, run_summary, write

# The app's behaviour comes from state.json: each eval's cost, and which evals answer wrongly.
APP = """
import json, pathlib

def answer(prompt):
    state = json.loads((pathlib.Path(__file__).parent / "state.json").read_text())
    text = "wrong" if prompt in state["fail"] else "right"
    return {"response": text, "cost": state["cost"]}
"""


def make_suite(pytester: pytest.Pytester) -> None:
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "base.eval.yaml",
        """
        metadata: {name: base, model: m}
        configurations:
          app: {python: "app:answer"}
        score: {formula: "success_pct - total_cost * 100"}
        evals:
          - {name: a, prompt: a, checks: [{match: right}]}
          - {name: b, prompt: b, checks: [{match: right}]}
          - {name: c, prompt: c, checks: [{match: right}]}
        """,
    )


def set_state(pytester: pytest.Pytester, cost: float, fail: tuple[str, ...] = ()) -> None:
    (pytester.path / "state.json").write_text(json.dumps({"cost": cost, "fail": list(fail)}))


def session(
    pytester: pytest.Pytester, out: str, *args: str, xdist: list[str] | None = None
) -> pytest.RunResult:
    return run(pytester, "--vibe-results", str(pytester.path / out), *args, xdist=xdist)


@XDIST_MODES
def test_labels_flips_and_fail_on_regression(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01, fail=("b",))  # score 66.67 - 3 = 63.67
    assert session(pytester, "first.json", xdist=xdist).ret == 1

    set_state(pytester, 0.01)  # all pass: 100 - 3 = 97, Δ +33.33
    result = session(pytester, "second.json", "--vibe-baseline", "first.json", xdist=xdist)
    assert result.ret == 0
    compared = run_of(load_json(pytester.path / "second.json"), "app")["baseline"]
    assert compared["label"] == "significant_improvement" and compared["accepted"] is True
    assert compared["delta"] == 33.33  # as shown
    assert (compared["fail_to_pass"], compared["pass_to_fail"]) == (["b"], [])
    assert compared["baseline"] == "first.json"
    summary = "\n".join(run_summary(result))
    assert "Baseline: 63.67 → 97.00 (Δ +33.33) significant_improvement; fail→pass: b" in summary

    set_state(pytester, 0.015)  # 100 - 4.5 = 95.5: Δ -1.5, no flips: exploration, kept
    result = session(pytester, "third.json", "--vibe-baseline", "second.json", xdist=xdist)
    compared = run_of(load_json(pytester.path / "third.json"), "app")["baseline"]
    assert (compared["label"], compared["accepted"]) == ("exploration", True)
    assert "(Δ -1.50) exploration (kept)" in "\n".join(run_summary(result))

    set_state(pytester, 0.05)  # 100 - 15 = 85: Δ -12 against second.json, every eval still passes
    result = session(pytester, "fourth.json", "--vibe-baseline", "second.json", xdist=xdist)
    assert result.ret == 0  # a regression alone is reported, not a failure ...
    assert run_of(load_json(pytester.path / "fourth.json"), "app")["baseline"]["label"] == "regression"
    result = session(
        pytester, "fifth.json", "--vibe-baseline", "second.json", "--vibe-fail-on-regression", xdist=xdist
    )
    assert result.ret == 1  # ... unless asked
    assert result.parseoutcomes()["passed"] == 3
    assert "--vibe-fail-on-regression: 1 run(s) regressed against the baseline (base × app)" in (
        "\n".join(run_summary(result))
    )

    # the same comparison without running anything
    compare = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_vibeeval",
            "compare",
            "second.json",
            "fourth.json",
            "--fail-on-regression",
        ],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert compare.returncode == 1, compare.stderr
    assert "regression" in compare.stdout

    # the history: one line per run of every session that ran, in order
    lines = (pytester.path / ".vibeeval" / "history.jsonl").read_text().splitlines()
    history = [json.loads(line) for line in lines]
    assert len(history) == 5
    assert [h["baseline_label"] for h in history] == [
        None, "significant_improvement", "exploration", "regression", "regression",
    ]  # fmt: skip
    assert history[0]["score"] == pytest.approx(200 / 3 - 3)
    assert history[1]["results"] == "second.json" and history[1]["configuration"] == "app"


def test_latest_is_the_previous_run(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01)
    assert run(pytester).ret == 0  # writes .vibeeval/results/latest.json
    set_state(pytester, 0.01, fail=("a", "c"))
    out = pytester.path / "now.json"
    result = run(pytester, "--vibe-baseline", "latest", "--vibe-results", str(out))
    compared = run_of(load_json(out), "app")["baseline"]
    # the timestamped file latest.json copied: latest.json itself is what this session replaced
    (first,) = (pytester.path / ".vibeeval" / "results").glob("2*.json")
    assert compared["baseline"] == f".vibeeval/results/{first.name}"
    assert (compared["label"], compared["pass_to_fail"]) == ("regression", ["a", "c"])
    assert f"baseline: .vibeeval/results/{first.name}" in result.stdout.str()


def test_a_run_missing_from_the_baseline_is_new(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01)
    baseline = pytester.path / "empty.json"
    baseline.write_text(
        json.dumps({"schema_version": 1, "started_at": "x", "finished_at": "y", "runs": []}), encoding="utf-8"
    )
    out = pytester.path / "now.json"
    run(pytester, "--vibe-baseline", str(baseline), "--vibe-fail-on-regression", "--vibe-results", str(out))
    assert run_of(load_json(out), "app")["baseline"]["label"] == "new"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vibe-baseline", "nowhere.json"], "--vibe-baseline: nowhere.json: no such file"),
        (
            ["--vibe-baseline", "latest"],
            "`latest` is the previous complete run's results file: run once without",
        ),
        (["--vibe-baseline", "app.py"], "app.py: not JSON (line 1"),
        (["--vibe-fail-on-regression"], "--vibe-fail-on-regression needs --vibe-baseline PATH|latest"),
    ],
)
def test_bad_baselines_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01)
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


def test_history_can_be_moved_or_turned_off(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01)
    run(pytester, "--vibe-history", "hist/runs.jsonl")
    assert len((pytester.path / "hist" / "runs.jsonl").read_text().splitlines()) == 1
    run(pytester, "--vibe-history", "")
    assert not (pytester.path / ".vibeeval" / "history.jsonl").exists()
    assert len(Path(pytester.path / "hist" / "runs.jsonl").read_text().splitlines()) == 1


def test_latest_is_the_configured_results_file_when_there_is_one(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01)
    write(pytester.path / "pytest.ini", "[pytest]\nvibe_results = out/r.json\n")
    assert run(pytester).ret == 0
    set_state(pytester, 0.01, fail=("c",))
    result = run(pytester, "--vibe-baseline", "latest")
    compared = run_of(load_json(pytester.path / "out" / "r.json"), "app")["baseline"]
    assert (compared["baseline"], compared["pass_to_fail"]) == ("out/r.json", ["c"])
    assert "baseline: out/r.json" in result.stdout.str()


def test_a_report_path_that_cannot_be_written_is_a_usage_error_before_the_run(
    pytester: pytest.Pytester,
) -> None:
    make_suite(pytester)
    set_state(pytester, 0.01)
    (pytester.path / "taken").mkdir()
    result = run(pytester, "--vibe-html", "taken")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert "--vibe-html" in result.stderr.str()


@XDIST_MODES
def test_a_baseline_over_other_evals_is_incomparable_and_a_broken_suite_is_no_baseline(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A run of some evals (-k, --vibe-eval) is no yardstick for the full run after it. A session whose
    suite did not load leaves latest.json alone (its file of no runs would make every run "new")."""
    make_suite(pytester)
    set_state(pytester, 0.0, fail=("c",))
    assert run(pytester, "--vibe-eval", "a,b", xdist=xdist).ret == 0  # 100: latest.json
    result = run(pytester, "--vibe-baseline", "latest", "--vibe-fail-on-regression", xdist=xdist)
    assert result.ret == 1  # c fails: the failure, not a regression, fails the session
    summary = "\n".join(run_summary(result))
    assert "incomparable: the scores are over different evals: 1 eval(s) ran in this run only (c)" in summary
    assert "regressed" not in summary
    latest = pytester.path / ".vibeeval" / "results" / "latest.json"
    before = latest.read_text()

    (pytester.path / "base.eval.yaml").write_text("metadata: {name: base\n", encoding="utf-8")
    broken = run(pytester, xdist=xdist)
    assert broken.ret != pytest.ExitCode.OK
    assert (
        "latest.json not replaced: this run is partial (1 suite file(s) failed to load)"
        in broken.stdout.str()
    )
    assert latest.read_text() == before


def set_formula(pytester: pytest.Pytester, formula: str) -> None:
    suite = pytester.path / "base.eval.yaml"
    text = suite.read_text(encoding="utf-8")
    suite.write_text(text.replace('"success_pct - total_cost * 100"', f'"{formula}"'), encoding="utf-8")


def compare_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "compare", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


@XDIST_MODES
def test_a_changed_score_formula_is_incomparable(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """A score from another formula is on another scale: no regression when every eval still passes
    (97 → 10), and no improvement hiding an eval that broke (97 → 133.33)."""
    make_suite(pytester)
    set_state(pytester, 0.01)
    assert session(pytester, "base.json", xdist=xdist).ret == 0  # 100 - 3 = 97
    set_formula(pytester, "a * 10")
    result = session(
        pytester, "lower.json", "--vibe-baseline", "base.json", "--vibe-fail-on-regression", xdist=xdist
    )
    assert result.ret == 0, result.stdout.str()
    compared = run_of(load_json(pytester.path / "lower.json"), "app")["baseline"]
    reason = "the score formula changed: success_pct - total_cost * 100 in the baseline, a * 10 in this run"
    assert (compared["label"], compared["delta"], compared["reason"]) == ("incomparable", None, reason)
    assert f"Baseline: 97.00 → 10.00 incomparable: {reason}" in run_summary(result)

    set_formula(pytester, "success_pct * 2")
    set_state(pytester, 0.01, fail=("b",))
    result = session(
        pytester, "higher.json", "--vibe-baseline", "base.json", "--vibe-fail-on-regression", xdist=xdist
    )
    assert result.ret == 1
    compared = run_of(load_json(pytester.path / "higher.json"), "app")["baseline"]
    assert (compared["label"], compared["pass_to_fail"]) == ("incomparable", ["b"])
    assert "--vibe-fail-on-regression: 1 run(s) regressed against the baseline (base × app)" in (
        run_summary(result)
    )
    lower = compare_cli(pytester.path, "base.json", "lower.json", "--fail-on-regression")
    assert (lower.returncode, lower.stdout.splitlines()[-1]) == (0, "no regression")
    higher = compare_cli(pytester.path, "base.json", "higher.json", "--fail-on-regression")
    assert higher.returncode == 1, higher.stdout + higher.stderr
    assert "incomparable: the score formula changed" in higher.stdout and "pass→fail: b" in higher.stdout


def add_unknown_fields(path: Path) -> None:
    """Make ``path`` look written by a newer release: fields this version does not know."""
    data = load_json(path)
    data["host"] = "ci-7"
    for record in data["runs"][0]["evals"]:
        record["carbon"] = 0.1
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_baseline_from_a_newer_release_is_read(pytester: pytest.Pytester) -> None:
    """Fields may be added in any release: a baseline holding some this version lacks compares, and
    the summary (or compare's stderr) names them once."""
    make_suite(pytester)
    set_state(pytester, 0.01)
    assert session(pytester, "base.json").ret == 0
    add_unknown_fields(pytester.path / "base.json")
    set_state(pytester, 0.01, fail=("c",))
    result = session(pytester, "new.json", "--vibe-baseline", "base.json")
    assert result.ret == 1, result.stderr.str()  # c fails
    assert run_of(load_json(pytester.path / "new.json"), "app")["baseline"]["pass_to_fail"] == ["c"]
    note = (
        "base.json: ignored 2 field(s) this pytest-vibeeval does not know (written by a newer release?): "
        "host, runs[].evals[].carbon"
    )
    assert f"note: --vibe-baseline {note}" in run_summary(result)
    compared = compare_cli(pytester.path, "base.json", "new.json")
    assert compared.returncode == 0, compared.stderr
    assert compared.stderr == f"note: {note}\n"
    assert "pass→fail: c" in compared.stdout
