"""--vibe-resume: after an interrupted run only the unfinished items run (counted by the agent
itself), the finished ones keep their earlier records, and a changed suite reuses nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import (
    PYTHON,
    XDIST_MODES,
    evals_by_nodeid,
    interrupt_when,
    load_json,
    run,
    run_summary,
    run_with_file_limit,
    write,
)

from pytest_vibeeval.report.resultsfile import build_results, results_json
from pytest_vibeeval.results import EvalRecord, RunRecord
from pytest_vibeeval.resume import MAX_FILES, load_resume

# Counts its runs in runs.log; on the prompt "slow" it says it started and waits, unless told not to.
AGENT = """
import pathlib, sys, time
here = pathlib.Path(sys.argv[1])
prompt = sys.stdin.read()
with open(here / "runs.log", "a") as log:
    log.write(prompt + "\\n")
if prompt == "slow" and not (here / "fast").exists():
    (here / "started").write_text("x")
    time.sleep(120)
print(prompt)
"""


THREE = (("a", "one", "*one*"), ("b", "two", "*nope*"), ("c", "slow", "*slow*"))


def make_suite(
    pytester: pytest.Pytester, extra: str = "", evals: Sequence[tuple[str, str, str]] = THREE
) -> None:
    """The suite of ``evals`` (name, prompt, the pattern its answer must match), run by AGENT."""
    agent = write(pytester.path / "agent.py", AGENT)
    rows = "\n          ".join(
        f'- {{name: {name}, prompt: {prompt}, checks: [{{match: "{pattern}"}}]}}'
        for name, prompt, pattern in evals
    )
    write(
        pytester.path / "res.eval.yaml",
        f"""
        metadata: {{name: res, model: m}}
        configurations:
          agent: {{cli: "{PYTHON}", args: ["{agent}", "{pytester.path}"]}}
        evals:
          {rows}
        {extra}
        """,
    )


def runs_logged(pytester: pytest.Pytester) -> list[str]:
    log = pytester.path / "runs.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_resume_runs_only_what_did_not_finish(pytester: pytest.Pytester, workers: list[str]) -> None:
    make_suite(pytester)
    first = pytester.path / "first.json"
    # With -n 2, c (slow) may start before b is reported: interrupt once a and b are.
    code, output = interrupt_when(
        pytester,
        pytester.path / "started",
        *workers,
        "-v",
        "-p",
        "no:randomly",
        "--vibe-results",
        str(first),
        after_lines=(("res.eval.yaml::a[agent]", "PASSED"), ("res.eval.yaml::b[agent]", "FAILED")),
    )
    assert code == pytest.ExitCode.INTERRUPTED, output
    assert sorted(runs_logged(pytester)) == ["one", "slow", "two"]
    (pytester.path / "fast").write_text("x")

    second = pytester.path / "second.json"
    result = run(
        pytester, *workers, "--vibe-resume", str(first), "--vibe-results", str(second), subprocess=True
    )
    assert runs_logged(pytester) == ["slow"]  # a (passed) and b (failed) finished before: not run again
    result.assert_outcomes(passed=2, failed=1)
    records = evals_by_nodeid(load_json(second))
    assert records["res.eval.yaml::a[agent]"]["reused_from"] == "first.json"
    assert records["res.eval.yaml::b[agent]"]["outcome"] == "failed"  # as it was
    assert records["res.eval.yaml::b[agent]"]["reused_from"] == "first.json"
    assert records["res.eval.yaml::c[agent]"]["reused_from"] is None
    assert records["res.eval.yaml::c[agent]"]["outcome"] == "passed"
    assert "Resumed: 2 eval(s) reused from first.json, 1 run in this session (--vibe-resume)" in (
        "\n".join(run_summary(result))
    )


def test_a_changed_suite_reuses_nothing(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    (pytester.path / "fast").write_text("x")
    run(pytester)  # writes .vibeeval/results/latest.json
    assert len(runs_logged(pytester)) == 3
    run(pytester, "--vibe-resume")  # latest: everything finished, nothing runs
    assert runs_logged(pytester) == []
    make_suite(pytester, extra="score: {formula: success_pct}")
    run(pytester, "--vibe-resume", "latest")
    assert len(runs_logged(pytester)) == 3


def test_a_missing_resume_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    result = run(pytester, "--vibe-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--vibe-resume: " in result.stderr.str() and "no run wrote it yet" in result.stderr.str()


def test_changed_template_values_reuse_nothing(pytester: pytest.Pytester) -> None:
    make_suite(pytester)
    (pytester.path / "fast").write_text("x")
    run(pytester, "--vibe-var", "x=1")
    assert len(runs_logged(pytester)) == 3
    run(pytester, "--vibe-var", "x=2", "--vibe-resume")  # a prompt may say {{var('x')}}
    assert len(runs_logged(pytester)) == 3
    run(pytester, "--vibe-var", "x=2", "--vibe-resume")
    assert runs_logged(pytester) == []


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_results_file_from_a_newer_release_is_resumed(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    """Its fields this version does not know are left out of the reused records (which are written
    strictly again) and named once in the summary."""
    make_suite(pytester)
    (pytester.path / "fast").write_text("x")
    first = pytester.path / "first.json"
    run(pytester, "--vibe-results", str(first))
    runs_logged(pytester)
    data = load_json(first)
    data["runs"][0]["energy"] = 1.5
    for record in data["runs"][0]["evals"]:
        record["carbon"] = 0.1
    first.write_text(json.dumps(data), encoding="utf-8")

    second = pytester.path / "second.json"
    result = run(pytester, *workers, "--vibe-resume", str(first), "--vibe-results", str(second))
    assert runs_logged(pytester) == [], result.stdout.str()
    records = evals_by_nodeid(load_json(second))
    assert all(r["reused_from"] == "first.json" and "carbon" not in r for r in records.values())
    assert (
        "note: --vibe-resume first.json: ignored 2 field(s) this pytest-vibeeval does not know "
        "(written by a newer release?): runs[].energy, runs[].evals[].carbon"
    ) in run_summary(result)


def make_priced_suite(pytester: pytest.Pytester, evals: int) -> None:
    write(pytester.path / "priced.py", 'def answer(prompt):\n    return {"response": "ok", "cost": 0.01}\n')
    rows = "\n".join(f"  - {{name: e{i}, prompt: p{i}, checks: [{{match: ok}}]}}" for i in range(evals))
    suite = "metadata: {name: priced, model: m}\nconfigurations:\n  app: {python: 'priced:answer'}\n"
    (pytester.path / "priced.eval.yaml").write_text(suite + "evals:\n" + rows + "\n", encoding="utf-8")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_resumed_run_under_a_budget_counts_this_session(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    """10 evals of $0.01, --vibe-max-cost 0.02 twice: the second session reuses the first's, runs a
    few more and holds the rest back; the summary's counts and its spending are this session's, as
    its skips say (`spent $0.0200`), not the reused records' too."""
    make_priced_suite(pytester, 10)
    budget = ("--vibe-max-cost", "0.02", "-p", "no:randomly")
    run(pytester, *workers, *budget, "--vibe-results", "first.json")
    result = run(pytester, *workers, *budget, "--vibe-resume", "first.json", "--vibe-results", "second.json")
    records = evals_by_nodeid(load_json(pytester.path / "second.json")).values()
    reused = sum(1 for r in records if r["reused_from"] == "first.json")
    ran = sum(1 for r in records if r["reused_from"] is None and r["outcome"] != "skipped")
    held = 10 - reused - ran
    if workers:  # the workers' items in flight when the budget ran out finish too
        assert reused >= 2 and ran >= 2 and held > 0
    else:
        assert (reused, ran, held) == (2, 2, 6)
    summary = run_summary(result)
    resumed = (
        f"Resumed: {reused} eval(s) reused from first.json, {ran} run in this session, {held} not started"
    )
    assert f"{resumed} (--vibe-resume)" in summary
    spent = f"${ran * 0.01:.4f}"
    assert (
        f"Budget: {spent} spent of $0.02 (--vibe-max-cost; evals and their llm_judge judges); "
        f"{held} eval(s) not started; {reused} reused eval(s) (${reused * 0.01:.4f}) not counted"
    ) in summary
    if not workers:
        assert all(f"(spent {spent})" in r["message"] for r in records if r["outcome"] == "skipped")


def test_reused_records_name_the_file_latest_copied(pytester: pytest.Pytester) -> None:
    """`--vibe-resume` (latest) reads latest.json, which this session replaces: `reused_from`
    names the timestamped file it was a copy of, which stays."""
    make_suite(pytester)
    (pytester.path / "fast").write_text("x")
    run(pytester)
    assert len(runs_logged(pytester)) == 3
    folder = pytester.path / ".vibeeval" / "results"
    (stamped,) = [path.name for path in folder.glob("2*.json")]
    result = run(pytester, "--vibe-resume")
    assert runs_logged(pytester) == []
    shown = f".vibeeval/results/{stamped}"
    latest = evals_by_nodeid(load_json(folder / "latest.json"))
    assert {record["reused_from"] for record in latest.values()} == {shown}
    assert f"Resumed: 3 eval(s) reused from {shown}, 0 run in this session (--vibe-resume)" in (
        run_summary(result)
    )


DAMAGED = {
    "truncated": b'{"schema_version": 1, "runs": [',
    "empty": b"",
    "garbage": b"\x00\xff\xfe\x80 PK\x03\x04",
}


@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_latest_results_file_is_named_with_what_to_do(
    pytester: pytest.Pytester, content: bytes
) -> None:
    """latest.json damaged (by hand, a disk that failed, another tool): --vibe-resume names it, says
    what is wrong, and how to resume from the run's own timestamped file instead; nothing runs."""
    make_suite(pytester)
    (pytester.path / "fast").write_text("x")
    run(pytester)
    runs_logged(pytester)
    latest = pytester.path / ".vibeeval" / "results" / "latest.json"
    latest.write_bytes(content)
    result = run(pytester, "--vibe-resume")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --vibe-resume: {latest}: not *(`latest` is the newest results file: "
            "name the one to resume, --vibe-resume .vibeeval/results/<timestamp>.json)"
        ]
    )
    assert runs_logged(pytester) == []


# The next release, as this conftest makes it: a new setting with a default, in `pricing` (as
# `cache_write_per_mtok` was added) and on every configuration.
UPGRADE = """
import os

if os.environ.get("VIBE_TEST_UPGRADED"):
    from pydantic.fields import FieldInfo

    from pytest_vibeeval.models import Configuration
    from pytest_vibeeval.models.configuration import Pricing

    Pricing.model_fields["batch_per_mtok"] = FieldInfo(annotation=float | None, default=None)
    Configuration.model_fields["retry_on"] = FieldInfo(annotation=list[str], default_factory=list)
    Pricing.model_rebuild(force=True)
    Configuration.model_rebuild(force=True)
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_run_resumes_after_an_upgrade_that_adds_settings(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: list[str]
) -> None:
    """Paid answers are not asked again because the plugin was upgraded mid-suite: what a release
    fills in for settings the suite does not write (a new one's default) is no part of what resume
    compares; an edit of the suite still is."""
    write(pytester.path / "conftest.py", UPGRADE)
    write(pytester.path / "counted.py", COUNTED)
    suite = write(
        pytester.path / "up.eval.yaml",
        """
        metadata: {name: up, model: m}
        configurations:
          priced: {python: "counted:answer", pricing: {input_per_mtok: 1, output_per_mtok: 2}}
          plain: {python: "counted:answer", timeout: 60000}
        evals:
          - {name: a, prompt: one, checks: [{equals: ok}]}
          - {name: b, prompt: two, checks: [{equals: ok}]}
        """,
    )
    run(pytester, *workers, "--vibe-results", "first.json", subprocess=True).assert_outcomes(passed=4)
    assert len(runs_logged(pytester)) == 4
    monkeypatch.setenv("VIBE_TEST_UPGRADED", "1")
    result = run(
        pytester, *workers, "--vibe-resume", "first.json", "--vibe-results", "second.json", subprocess=True
    )
    result.assert_outcomes(passed=4)
    assert runs_logged(pytester) == []
    assert "Resumed: 4 eval(s) reused from first.json, 0 run in this session (--vibe-resume)" in (
        run_summary(result)
    )
    suite.write_text(suite.read_text().replace("output_per_mtok: 2", "output_per_mtok: 3"))
    run(pytester, *workers, "--vibe-resume", "second.json", subprocess=True).assert_outcomes(passed=4)
    assert sorted(runs_logged(pytester)) == ["one", "one", "two", "two"]  # the file changed: both run


COUNTED = """
import pathlib


def answer(prompt):
    with open(pathlib.Path(__file__).parent / "runs.log", "a") as log:
        log.write(prompt + "\\n")
    return {"response": "ok", "input_tokens": 1000, "output_tokens": 100}
"""


EARLIER_RESULTS = Path(__file__).parent / "resume_earlier_results"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_results_file_of_the_version_before_resumes(pytester: pytest.Pytester, workers: list[str]) -> None:
    """A run interrupted before the upgrade to this version resumes: its digest, of every setting,
    is matched too."""
    shutil.copy(EARLIER_RESULTS / "suite.yaml", pytester.path / "resumed.eval.yaml")
    shutil.copy(EARLIER_RESULTS / "counted.py", pytester.path)
    shutil.copy(EARLIER_RESULTS / "results.json", pytester.path)
    result = run(pytester, *workers, "--vibe-resume", "results.json")
    result.assert_outcomes(passed=4)
    assert runs_logged(pytester) == []
    assert "Resumed: 4 eval(s) reused from results.json, 0 run in this session (--vibe-resume)" in (
        run_summary(result)
    )


def test_what_resume_compares_of_a_configuration_is_what_it_writes() -> None:
    """Not a preset's command line, nor a default: a release may change either."""
    from pytest_vibeeval.models import Configuration

    preset = Configuration.model_validate({"preset": "claude-code", "model": "m", "pricing": PRICES})
    assert preset.cli and preset.args  # filled in by the preset
    assert preset.written_settings() == {"preset": "claude-code", "model": "m", "pricing": PRICES}


def test_a_configuration_given_to_another_model_keeps_what_it_was_written_with() -> None:
    """Validated again as a field of another model (as it is, or copied by a model that
    revalidates), a configuration still compares what it was written with, not its preset's."""
    from pydantic import BaseModel, ConfigDict

    from pytest_vibeeval.models import Configuration

    class Revalidated(Configuration):
        model_config = ConfigDict(revalidate_instances="always")

    class Holder(BaseModel):
        configurations: dict[str, Configuration]
        copied: dict[str, Revalidated] = {}

    written = {"preset": "claude-code", "model": "m"}
    preset = Configuration.model_validate(written)
    copied = Revalidated.model_validate(written)
    holder = Holder(configurations={"x": preset}, copied={"x": copied})
    assert holder.copied["x"] is not copied  # a copy, validated from the instance
    for each in (preset, holder.configurations["x"], copied, holder.copied["x"]):
        assert each.written_settings() == written


PRICES = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}


# --- chains of resumed sessions ---------------------------------------------------------------------


# Names no folder of pytester's holds, for -k.
FOUR = (
    ("alpha", "one", "*one*"),
    ("bravo", "two", "*nope*"),
    ("charlie", "three", "*three*"),
    ("delta", "four", "*four*"),
)


def make_four(pytester: pytest.Pytester, extra: str = "") -> None:
    """alpha passes, bravo fails, charlie and delta pass; the agent never waits."""
    make_suite(pytester, extra, FOUR)
    (pytester.path / "fast").write_text("x")


def run_writing(pytester: pytest.Pytester, *args: str, xdist: list[str] | None = None) -> tuple[str, Any]:
    """Run pytest; the timestamped results file it wrote (as results name it) and the run."""
    folder = pytester.path / ".vibeeval" / "results"
    before = set(folder.glob("2*.json")) if folder.is_dir() else set()
    result = run(pytester, *args, xdist=xdist)
    (written,) = set(folder.glob("2*.json")) - before
    return f".vibeeval/results/{written.name}", result


def stopped_after_b(pytester: pytest.Pytester) -> str:
    """A partial run (P1): alpha passed and bravo failed, then -x stopped it; charlie and delta never ran."""
    first, _ = run_writing(pytester, "-p", "no:randomly", "-x")
    assert sorted(runs_logged(pytester)) == ["one", "two"]
    assert load_json(pytester.path / first)["stopped_early"]
    return first


def files_read_and_reused_from(path: Path) -> tuple[list[str], list[str | None]]:
    """A results file's ``resumed_from`` and the ``reused_from`` of alpha, bravo, charlie, delta."""
    data = load_json(path)
    records = evals_by_nodeid(data)
    return data["resumed_from"], [records[f"res.eval.yaml::{e}[agent]"]["reused_from"] for e, *_ in FOUR]


@XDIST_MODES
def test_resuming_a_resumed_subset_keeps_the_earlier_files_results(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """P1 stops after alpha and bravo; `--vibe-resume -k "bravo or charlie"` reuses bravo and runs
    charlie (P2, now latest.json); a plain `--vibe-resume` then reads P2 and the file it resumed
    from, P1: only delta runs."""
    make_four(pytester)
    first = stopped_after_b(pytester)
    second, _ = run_writing(pytester, "--vibe-resume", "-k", "bravo or charlie", xdist=xdist)
    assert runs_logged(pytester) == ["three"]

    third, result = run_writing(pytester, "--vibe-resume", xdist=xdist)
    assert runs_logged(pytester) == ["four"]  # alpha, bravo (P1) and charlie (P2) were paid for already
    assert load_json(pytester.path / second)["resumed_from"] == [first]
    assert files_read_and_reused_from(pytester.path / third) == (
        [second, first],
        [first, first, second, None],
    )
    assert (
        f"Resumed: 3 eval(s) reused from 2 files ({first}: 2, {second}: 1), 1 run in this session "
        "(--vibe-resume)"
    ) in run_summary(result)
    result.assert_outcomes(passed=3, failed=1)


@XDIST_MODES
def test_a_deleted_file_of_the_chain_is_named_and_the_rest_reused(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """P1 (alpha, bravo), P2 (charlie, resumed from P1), P3 (delta, resumed from P2 and P1); P2
    deleted: resuming P3 says P2 cannot be read, still reuses P1's alpha and bravo through P3's
    list, and runs nothing."""
    make_four(pytester)
    first = stopped_after_b(pytester)
    second, _ = run_writing(pytester, "--vibe-resume", "-k", "bravo or charlie", xdist=xdist)
    third, _ = run_writing(pytester, "--vibe-resume", "-k", "charlie or delta", xdist=xdist)
    assert runs_logged(pytester) == ["three", "four"]
    (pytester.path / second).unlink()

    fourth, result = run_writing(pytester, "--vibe-resume", third, xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # bravo, as it was
    assert runs_logged(pytester) == []
    assert files_read_and_reused_from(pytester.path / fourth) == (
        [third, first],
        [first, first, second, third],
    )
    summary = "\n".join(run_summary(result))
    assert f"note: --vibe-resume: {second}, which {third} resumed from, cannot be read" in summary
    assert "Resumed: 4 eval(s) reused from 3 files" in summary


def test_an_edited_suite_reuses_nothing_of_the_chain(pytester: pytest.Pytester) -> None:
    make_four(pytester)
    stopped_after_b(pytester)
    run_writing(pytester, "--vibe-resume", "-k", "bravo or charlie")
    assert runs_logged(pytester) == ["three"]
    make_four(pytester, extra="score: {formula: success_pct}")
    run_writing(pytester, "--vibe-resume")
    assert sorted(runs_logged(pytester)) == ["four", "one", "three", "two"]


UNSCORED = {
    "score": None,
    "score_formula": "success_pct",
    "score_error": None,
    "metrics": {},
    "variables": {},
}


def chain_file(folder: Path, name: str, outcomes: dict[str, str], resumed_from: list[str]) -> str:
    """A results file ``name`` in ``folder`` of one run whose evals ended as ``outcomes``."""
    evals = [
        EvalRecord(name=eval_id, nodeid=f"s.eval.yaml::{eval_id}[app]", outcome=outcome)  # type: ignore[arg-type]
        for eval_id, outcome in outcomes.items()
    ]
    where = {"suite": "s", "source": "s.eval.yaml", "configuration": "app", "input_digest": "d"}
    run = RunRecord.model_validate({**where, **UNSCORED, "evals": evals})
    results = build_results([run], "2026-01-01T00:00:00+00:00", False, resumed_from=resumed_from)
    (folder / name).write_text("".join(results_json(results)), encoding="utf-8")
    return name


def test_the_newest_file_of_a_chain_wins_and_a_cycle_is_read_once(tmp_path: Path) -> None:
    """new.json resumed from old.json, which names new.json back (a session that wrote the file it
    resumed): each is read once; an eval finished in both keeps new.json's record, one that only
    old.json finished is old.json's."""
    chain_file(tmp_path, "old.json", {"e1": "passed", "e2": "passed", "e3": "error"}, ["new.json"])
    chain_file(tmp_path, "new.json", {"e1": "failed", "e2": "error"}, ["old.json", "new.json"])
    index = load_resume(tmp_path / "new.json", "new.json", tmp_path.joinpath)
    assert (index.files, index.notes) == (["new.json", "old.json"], [])
    found = {e: index.find("s.eval.yaml", ["d"], "app", e, 0) for e in ("e1", "e2", "e3")}
    assert {e: (r.outcome, r.reused_from) if r else None for e, r in found.items()} == {
        "e1": ("failed", "new.json"),
        "e2": ("passed", "old.json"),
        "e3": None,
    }


def test_a_chain_longer_than_the_bound_is_read_to_it_and_says_so(tmp_path: Path) -> None:
    names = [f"r{i:02}.json" for i in range(MAX_FILES + 3)]
    for i, name in enumerate(names):
        chain_file(tmp_path, name, {f"e{i}": "passed"}, names[i - 1 : i])
    index = load_resume(tmp_path / names[-1], names[-1], tmp_path.joinpath)
    assert index.files == names[::-1][:MAX_FILES]
    assert len(index.records) == MAX_FILES
    assert index.notes == [
        f"--vibe-resume: {names[-1]} resumes a chain of more than {MAX_FILES} results files; the 1 "
        "earliest were not read (the evals only they held run again)"
    ]


@XDIST_MODES
def test_resuming_under_record_says_the_reused_evals_were_not_recorded(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A reused eval asks no provider, so --vibe-record stores no answer of it: the summary says
    so, and what to do, rather than leave a store that a replay finds incomplete."""
    make_priced_suite(pytester, 3)
    run(pytester, "--vibe-results", "first.json", "-k", "e0 or e1")
    result = run(pytester, "--vibe-resume", "first.json", "--vibe-record", "rec", xdist=xdist)
    assert "Resumed: 2 eval(s) reused from first.json, 1 run in this session (--vibe-resume)" in (
        run_summary(result)
    )
    assert (
        "note: --vibe-record rec: the 2 eval(s) reused by --vibe-resume asked no provider, so this "
        "session recorded no answer of theirs; run them without --vibe-resume to record them"
    ) in run_summary(result)
    assert len(list((pytester.path / "rec").rglob("*.json"))) == 1  # e2's answer


def test_the_keys_of_results_journals_and_reused_records_are_one(tmp_path: Path) -> None:
    """A record is found under the same key whether a results file or a journal held it, and the
    session that reused every record of a journal sees that journal as carried over: the index and
    the session's end match records by one key."""
    from pytest_vibeeval.resume import load_journal, resume_key
    from pytest_vibeeval.session_finish import reused_keys

    chain_file(tmp_path, "old.json", {"e1": "passed"}, [])
    record = EvalRecord(name="e2", nodeid="s.eval.yaml::e2[app]", outcome="passed", repeat=1)
    line = {
        "source": "s.eval.yaml",
        "input_digest": "d",
        "configuration": "app",
        "record": record.model_dump(),
    }
    header = {"journal": 1, "resumed_from": ["old.json"]}
    (tmp_path / "x.journal.jsonl").write_text(f"{json.dumps(header)}\n{json.dumps(line)}\n", encoding="utf-8")
    index = load_journal(tmp_path / "x.journal.jsonl", "x.journal.jsonl", tmp_path.joinpath)
    e1 = index.find("s.eval.yaml", ["d"], "app", "e1", 0)
    e2 = index.find("s.eval.yaml", ["d"], "app", "e2", 1)
    assert e1 is not None and e2 is not None
    assert set(index.records) == {resume_key("s.eval.yaml", "d", "app", r) for r in (e1, e2)}
    where = {"suite": "s", "source": "s.eval.yaml", "configuration": "app", "input_digest": "d"}
    run = RunRecord.model_validate({**where, **UNSCORED, "evals": [e1, e2]})
    assert index.carried_over(reused_keys([run])) == ["x.journal.jsonl"]
    assert index.carried_over(reused_keys([run.model_copy(update={"evals": [e1]})])) == []


def resumed_into_out_json(pytester: pytest.Pytester, xdist: list[str]) -> str:
    """P1 stops after alpha and bravo; `--vibe-resume P1 --vibe-results out.json -k "not delta"`
    reuses them and runs charlie. P1's name."""
    make_four(pytester)
    first = stopped_after_b(pytester)
    run(pytester, "--vibe-resume", first, "--vibe-results", "out.json", "-k", "not delta", xdist=xdist)
    assert runs_logged(pytester) == ["three"]
    assert load_json(pytester.path / "out.json")["resumed_from"] == [first]
    return first


@XDIST_MODES
def test_resuming_into_the_file_resumed_from_never_names_itself(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """`--vibe-resume out.json --vibe-results out.json` (and `--vibe-resume` with `--vibe-results
    out.json`, whose `latest` is out.json): the session replaces the file it resumed from, so its
    `resumed_from` names the files that one resumed from, never out.json itself."""
    first = resumed_into_out_json(pytester, xdist)
    out = pytester.path / "out.json"
    for args, ran, delta in (
        (["--vibe-resume", "out.json"], ["four"], None),
        (["--vibe-resume"], [], "out.json"),
    ):
        result = run(pytester, *args, "--vibe-results", "out.json", xdist=xdist)
        assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()  # bravo, as it was
        assert runs_logged(pytester) == ran
        assert files_read_and_reused_from(out) == ([first], [first, first, "out.json", delta])
        assert "out.json replaces" not in result.stdout.str()  # every eval it finished is in it again
    assert sorted(p.name for p in (pytester.path / ".vibeeval" / "results").glob("*.json")) == [
        Path(first).name
    ]


@XDIST_MODES
def test_a_subset_resumed_into_its_own_file_keeps_the_rest(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """`--vibe-resume out.json --vibe-results out.json -k delta` replaces out.json, which finished
    alpha, bravo and charlie: out.json as it was is kept in the results folder first and named in
    `resumed_from`, so that a resume of the new out.json runs nothing."""
    first = resumed_into_out_json(pytester, xdist)
    out = pytester.path / "out.json"
    result = run(
        pytester, "--vibe-resume", "out.json", "--vibe-results", "out.json", "-k", "delta", xdist=xdist
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert runs_logged(pytester) == ["four"]
    kept, earlier = load_json(out)["resumed_from"]
    assert (kept.startswith(".vibeeval/results/2"), earlier) == (True, first)
    assert load_json(pytester.path / kept)["resumed_from"] == [first]
    assert (
        f"--vibe-results out.json replaces the file this session resumed from: it is kept as {kept} first "
        "(named in resumed_from), for the 3 eval(s) it finished that this session did not reuse"
    ) in run_summary(result)
    result = run(pytester, "--vibe-resume", "out.json", "--vibe-results", "out.json", xdist=xdist)
    assert runs_logged(pytester) == []
    assert files_read_and_reused_from(out) == ([kept, first], [first, first, kept, "out.json"])


@XDIST_MODES
def test_records_reused_from_the_file_replaced_name_its_copy(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """`-k "charlie or delta"` into out.json reuses charlie from out.json and replaces it: charlie
    names the copy of out.json kept first, where its record is, not the new out.json."""
    resumed_into_out_json(pytester, xdist)
    out = pytester.path / "out.json"
    args = ("--vibe-resume", "out.json", "--vibe-results", "out.json", "-k", "charlie or delta")
    result = run(pytester, *args, xdist=xdist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert runs_logged(pytester) == ["four"]
    kept, _ = load_json(out)["resumed_from"]
    records = evals_by_nodeid(load_json(out))
    assert sorted(records) == ["res.eval.yaml::charlie[agent]", "res.eval.yaml::delta[agent]"]
    reused = {nodeid: record["reused_from"] for nodeid, record in records.items()}
    assert reused == {"res.eval.yaml::charlie[agent]": kept, "res.eval.yaml::delta[agent]": None}
    charlie = evals_by_nodeid(load_json(pytester.path / kept))["res.eval.yaml::charlie[agent]"]
    assert charlie["reused_from"] is None  # run in the session that wrote out.json: its record is there
    assert f"Resumed: 1 eval(s) reused from {kept}" in " ".join(run_summary(result))


@XDIST_MODES
def test_a_subset_resumed_into_its_own_file_keeps_it_beside_it_without_the_results_folder(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Where the results folder cannot be made (`.vibeeval` is a file), out.json as it was is kept
    beside it (its folder is written anyway) rather than lost."""
    resumed_into_out_json(pytester, xdist)
    out = pytester.path / "out.json"
    before = out.read_bytes()
    shutil.move(pytester.path / ".vibeeval", pytester.path / "moved")
    write(pytester.path / ".vibeeval", "a file, not a folder\n")
    result = run(
        pytester, "--vibe-resume", "out.json", "--vibe-results", "out.json", "-k", "delta", xdist=xdist
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert runs_logged(pytester) == ["four"]
    (kept,) = load_json(out)["resumed_from"]  # first went with the folder: unreadable, not named
    assert kept.endswith(".json") and "/" not in kept
    assert (pytester.path / kept).read_bytes() == before
    assert f"it is kept as {kept} first" in " ".join(run_summary(result))


@XDIST_MODES
def test_a_subset_resumed_into_its_own_file_leaves_it_when_no_copy_can_be_kept(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """When out.json cannot be copied anywhere (here: no file may grow to its size), it is not
    replaced: the results go to out-2.json, which resumes from it, and the summary says so."""
    first = resumed_into_out_json(pytester, xdist)
    out = pytester.path / "out.json"
    before = out.read_bytes()
    args = ("--vibe-resume", "out.json", "--vibe-results", "out.json", "-k", "delta")
    result = run_with_file_limit(pytester, len(before) - 1, *args, xdist=xdist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert runs_logged(pytester) == ["four"]
    assert out.read_bytes() == before
    written = load_json(pytester.path / "out-2.json")
    assert written["resumed_from"] == ["out.json", first]
    assert [r["name"] for run in written["runs"] for r in run["evals"]] == ["delta"]
    summary = " ".join(" ".join(run_summary(result)).split())
    assert "results not written to " in summary and "holds 3 finished eval(s) this session did not" in summary
    assert "out-2.json instead" in summary


@pytest.mark.parametrize("started_at", ["../../escaped", "/planted", "2026-01-01T00:00:00+00:00/x"])
def test_a_copy_kept_is_named_in_the_results_folder_whatever_started_at_says(
    tmp_path: Path, started_at: str
) -> None:
    """``started_at`` edited by hand never names a file outside the results folder: the copy is
    named by the time it is made instead."""
    from pytest_vibeeval.report.resultsfile import keep_copy

    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    out = root / "sub" / "out.json"
    out.write_text("{}")
    started_at = str(tmp_path / "planted") if started_at == "/planted" else started_at
    kept = keep_copy(out, root, started_at)
    assert kept.parent == root / ".vibeeval" / "results"
    assert re.fullmatch(r"\d{8}T\d{6}Z\.json", kept.name) and kept.read_text() == "{}"
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json")) == [
        f"root/.vibeeval/results/{kept.name}",
        "root/sub/out.json",
    ]


def test_a_self_reference_or_cycle_made_by_hand_is_read_once(tmp_path: Path) -> None:
    """A file naming itself (under another spelling too) or a cycle through a journal (a.json names
    b.journal.jsonl, which names a.json) is read once: no loop, no error."""
    chain_file(tmp_path, "a.json", {"e1": "passed"}, ["a.json", "./a.json", "b.journal.jsonl"])
    (tmp_path / "b.journal.jsonl").write_text(
        '{"journal": 1, "resumed_from": ["a.json", "b.journal.jsonl"]}\n'
    )
    index = load_resume(tmp_path / "a.json", "a.json", tmp_path.joinpath)
    assert (index.files, index.notes) == (["a.json", "b.journal.jsonl"], [])
    assert index.find("s.eval.yaml", ["d"], "app", "e1", 0) is not None


@XDIST_MODES
@pytest.mark.parametrize("kind", ["dangling", "looping"])
def test_a_resume_link_to_nothing_is_a_missing_file_without_the_hint(
    pytester: pytest.Pytester, xdist: list[str], kind: str
) -> None:
    """A link leading nowhere (to nothing, or round in a loop) is a file that is missing: the hint
    for a folder or a FIFO would name the wrong trouble."""
    make_four(pytester)
    link = pytester.path / "dang.json"
    link.symlink_to("nothing.json" if kind == "dangling" else "dang.json")
    result = run(pytester, "--vibe-resume", "dang.json", xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert "ERROR: --vibe-resume: dang.json" in errors and "name the results file" not in errors
    assert runs_logged(pytester) == []


@XDIST_MODES
@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["folder", "fifo"])
@pytest.mark.parametrize("name", ["x.json", "x.journal.jsonl"])
def test_a_resume_path_that_is_no_file_says_what_to_name(
    pytester: pytest.Pytester, xdist: list[str], kind: str, name: str
) -> None:
    """A folder or a FIFO given to --vibe-resume (as a results file or as a journal) is a usage
    error naming it, what it is, and what to name instead; nothing runs, and nothing hangs."""
    make_four(pytester)
    path = pytester.path / name
    path.mkdir() if kind == "folder" else os.mkfifo(path)
    result = run(pytester, "--vibe-resume", name, xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    what = "a folder" if kind == "folder" else "a FIFO"
    assert (
        f"ERROR: --vibe-resume: {name}: cannot read it: not a regular file but {what} (name the results "
        "file of the run to resume, --vibe-resume .vibeeval/results/<timestamp>.json, or the journal of a "
        "session that did not finish, .vibeeval/results/<timestamp>.journal.jsonl; --vibe-resume alone "
        "takes the newest)"
    ) in result.stderr.str()
    assert runs_logged(pytester) == []
