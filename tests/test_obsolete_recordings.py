"""Obsolete recordings: after a run of the whole selection with --vibe-record / --vibe-replay the Run
Summary says how many recordings in the store no eval used; --vibe-prune-recordings removes them
(=dry-run lists them), never after a narrowed run; a store that cannot be read is said, never a
traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import XDIST_MODES, run, run_summary, write
from test_cache_command import APP, SUITE

from pytest_vibeeval.recording_prune import StoreError, cannot_tell, narrowing, obsolete


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The response cache's suite (two evals, one judged) and its application."""
    monkeypatch.setenv("APP_CALLS", str(pytester.path / "calls.txt"))
    write(pytester.path / "cache_app.py", APP)
    return write(pytester.path / "app.eval.yaml", SUITE)


def recordings_lines(result: pytest.RunResult) -> list[str]:
    """The Run Summary's lines on the store's recordings."""
    return [
        line
        for line in run_summary(result)
        if line.startswith(("recordings:", "--vibe-prune-recordings", "would remove ", "removed "))
    ]


# the judge's configuration: the suite lists it but runs it only as its judge
GRADER = (
    "recordings: the folder of configuration grader is not looked at: app.eval.yaml lists it but did "
    "not run it (its recordings there may be used); run every configuration (--vibe-config ALL) to look at it"
)


def pruning_lines(result: pytest.RunResult) -> list[str]:
    """The lines of a prune of one recording in the suite's run, after the judge's line."""
    result.assert_outcomes(passed=3)
    grader, *lines = recordings_lines(result)
    assert grader == GRADER
    assert len(lines) == 2
    return lines


def stored(store: Path) -> list[str]:
    return sorted(path.relative_to(store).as_posix() for path in store.rglob("*.json"))


@XDIST_MODES
def test_a_changed_prompt_leaves_a_recording_reported_then_pruned_on_request(
    pytester: pytest.Pytester, suite: Path, xdist: list[str]
) -> None:
    store = pytester.path / "store"
    first = run(pytester, "--vibe-record", store, "--vibe-history=", xdist=xdist)
    first.assert_outcomes(passed=3)
    assert recordings_lines(first) == []  # every recording was this run's
    recorded = stored(store)
    assert len(recorded) == 4  # three answers and the judge's verdict

    suite.write_text(SUITE.replace("beta", "bets"))
    second = run(pytester, "--vibe-record", store, "--vibe-history=", xdist=xdist)
    second.assert_outcomes(passed=3)
    [old] = [name for name in recorded if json.loads((store / name).read_text())["prompt"] == "beta"]
    assert len(stored(store)) == 5  # the answer to the new prompt beside the old one
    assert recordings_lines(second) == [
        GRADER,
        "recordings: 1 recording ("
        + f"{(store / old).stat().st_size} B) in store no eval of this run used (recorded for a prompt, "
        "configuration or request settings that changed, or an eval that is gone); rerun with "
        "--vibe-prune-recordings to remove them (--vibe-prune-recordings=dry-run lists them)",
    ]

    replayed = run(pytester, "--vibe-replay", store, "--vibe-history=", xdist=xdist)
    replayed.assert_outcomes(passed=3)
    assert recordings_lines(replayed) == recordings_lines(second)

    # a narrowed run cannot tell: it says nothing, and a prune it was asked removes nothing
    narrowed = run(pytester, "--vibe-replay", store, "--vibe-history=", "-k", "c", xdist=xdist)
    narrowed.assert_outcomes(passed=1)
    assert recordings_lines(narrowed) == []
    asked = run(
        pytester, "--vibe-replay", store, "--vibe-history=", "-k", "c", "--vibe-prune-recordings", xdist=xdist
    )
    assert recordings_lines(asked) == [
        "--vibe-prune-recordings: nothing removed from store: the selection was narrowed (-k), so a "
        "recording no eval used cannot be told from one an eval left out did not reach; run the whole "
        "selection to prune"
    ]
    assert (store / old).exists()

    before = stored(store)
    dry = run(
        pytester, "--vibe-replay", store, "--vibe-history=", "--vibe-prune-recordings=dry-run", xdist=xdist
    )
    listed, said = pruning_lines(dry)
    assert listed == f"would remove {old}"
    assert said.startswith("--vibe-prune-recordings: would remove 1 recording (")
    assert said.endswith(") from store; 4 kept (dry run: nothing was removed)")
    assert stored(store) == before

    pruned = run(pytester, "--vibe-replay", store, "--vibe-history=", "--vibe-prune-recordings", xdist=xdist)
    listed, said = pruning_lines(pruned)
    assert listed == f"removed {old}"
    assert said.startswith("--vibe-prune-recordings: removed 1 recording (")
    assert said.endswith(") from store; 4 kept")
    assert old not in stored(store) and len(stored(store)) == 4

    again = run(pytester, "--vibe-replay", store, "--vibe-history=", "--vibe-prune-recordings", xdist=xdist)
    again.assert_outcomes(passed=3)
    assert recordings_lines(again) == [GRADER, "--vibe-prune-recordings: nothing to remove in store"]


def test_an_eval_that_may_not_have_asked_leaves_the_count_untold() -> None:
    miss = "no recorded answer for configuration 'app', model 'm' and this prompt in store"
    assert cannot_tell([], None, [("passed", None, False), ("failed", "no", False)]) is None
    assert cannot_tell([], None, [("error", miss, False)]) is None  # it reached the store: none there
    assert cannot_tell(["-k"], None, []) == "the selection was narrowed (-k)"
    assert cannot_tell([], "failure (-x)", []) == "the run is partial (failure (-x))"
    for unasked in [
        ("skipped", "no key", False),
        ("error", "agent crashed", False),
        ("failed", "turn 1", True),
    ]:
        assert cannot_tell([], None, [unasked]) == (
            "1 eval(s) skipped, errored or stopped before all their prompts were answered (their "
            "recordings may be unused)"
        )


def test_only_the_folders_of_configurations_run_or_used_are_looked_at(tmp_path: Path) -> None:
    for name in ("app/1-aaaa.json", "grader/2-bbbb.json", "other/3-cccc.json", "app/.x.json.tmp"):
        write(tmp_path / name, "{}")
    found = obsolete(tmp_path, {"grader/2-bbbb.json"}, ["app"])
    # app's file is unused (a damaged one too: no key); other's folder is another configuration's
    assert [file.path.name for file in found.unused] == ["1-aaaa.json"]
    assert found.unchecked == {"other": "not run"}


def test_a_store_that_cannot_be_read_is_named(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match=f"^the record store {tmp_path / 'gone'} is gone"):
        obsolete(tmp_path / "gone", set(), ["app"])
    write(tmp_path / "file", "")
    with pytest.raises(StoreError, match="is not a folder"):
        obsolete(tmp_path / "file", set(), ["app"])
    if os.geteuid() == 0:
        return  # root reads any folder
    store = tmp_path / "store"
    store.mkdir(mode=0)
    try:
        with pytest.raises(StoreError, match=f"cannot read {store}: .*; make the record store readable"):
            obsolete(store, set(), ["app"])
    finally:
        store.chmod(0o755)


@XDIST_MODES
def test_the_store_gone_by_the_end_of_the_run_is_said_not_a_traceback(
    pytester: pytest.Pytester, suite: Path, xdist: list[str]
) -> None:
    store = pytester.path / "store"
    write(
        pytester.path / "conftest.py",
        f"import shutil\n\ndef pytest_runtest_teardown():\n    shutil.rmtree({str(store)!r}, True)\n",
    )
    result = run(pytester, "--vibe-record", store, "--vibe-history=", xdist=xdist)
    result.assert_outcomes(passed=3)
    assert recordings_lines(result) == [
        f"recordings: the record store {store} is gone (no such folder): the recordings no eval used "
        "cannot be told"
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vibe-prune-recordings"], "--vibe-prune-recordings needs --vibe-record DIR or --vibe-replay DIR"),
        (
            ["--vibe-record", "store", "--vibe-prune-recordings=all"],
            "--vibe-prune-recordings=all: give the option alone",
        ),
    ],
)
@XDIST_MODES
def test_a_prune_without_a_store_or_of_an_unknown_kind_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], message: str, xdist: list[str]
) -> None:
    write(pytester.path / "app.eval.yaml", SUITE)
    result = run(pytester, *args, xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


@XDIST_MODES
def test_a_replay_miss_still_counts_and_an_eval_that_errored_before_asking_leaves_it_untold(
    pytester: pytest.Pytester, suite: Path, xdist: list[str]
) -> None:
    store = pytester.path / "store"
    run(pytester, "--vibe-record", store, "--vibe-history=", xdist=xdist).assert_outcomes(passed=3)
    suite.write_text(SUITE.replace("beta", "bets"))
    # b misses (its prompt changed, never recorded): it reached the store, so the count is known
    missed = run(pytester, "--vibe-replay", store, "--vibe-history=", xdist=xdist)
    missed.assert_outcomes(passed=2, failed=1)
    grader, line = recordings_lines(missed)
    assert grader == GRADER
    assert line.startswith("recordings: 1 recording (")
    # an eval that errored before it asked (a variable not set): its recording may be unused
    suite.write_text(SUITE.replace("prompt: alpha,", "prompt: \"alpha {{var('UNSET')}}\","))
    skipped = run(pytester, "--vibe-replay", store, "--vibe-history=", "--vibe-prune-recordings", xdist=xdist)
    skipped.assert_outcomes(passed=2, failed=1)
    assert recordings_lines(skipped) == [
        "--vibe-prune-recordings: nothing removed from store: 1 eval(s) skipped, errored or stopped "
        "before all their prompts were answered (their recordings may be unused), so a recording no "
        "eval used cannot be told from one an eval left out did not reach; run the whole selection to prune"
    ]
    assert len(stored(store)) == 4


TWO_SUITES = """
metadata: {{name: {name}, model: m}}
configurations:
  x: {{python: "cache_app:answer"}}
  y: {{python: "cache_app:answer"}}
default_configurations: [{default}]
evals:
  - {{name: e, prompt: {prompt}, checks: [{{match: "*{prompt}"}}]}}
"""


@pytest.fixture
def two_suites(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two suite files listing the configurations x and y (one runs x by default, the other y),
    their answers recorded into one store by a run of every configuration."""
    monkeypatch.setenv("APP_CALLS", str(pytester.path / "calls.txt"))
    write(pytester.path / "cache_app.py", APP)
    write(pytester.path / "a.eval.yaml", TWO_SUITES.format(name="a", default="x", prompt="alpha"))
    write(pytester.path / "b.eval.yaml", TWO_SUITES.format(name="b", default="y", prompt="beta"))
    store = pytester.path / "store"
    run(pytester, "--vibe-record", store, "--vibe-history=", "--vibe-config", "ALL").assert_outcomes(passed=4)
    assert len(stored(store)) == 4
    return store


@XDIST_MODES
def test_path_arguments_or_another_folder_leave_the_count_untold(
    pytester: pytest.Pytester, two_suites: Path, xdist: list[str]
) -> None:
    store = two_suites
    every = ("--vibe-replay", store, "--vibe-history=", "--vibe-config", "ALL", "--vibe-prune-recordings")
    # b.eval.yaml was not collected: its recordings, filed beside a's, are not unused
    one = run(pytester, "a.eval.yaml", *every, xdist=xdist)
    one.assert_outcomes(passed=2)
    assert recordings_lines(one) == [
        "--vibe-prune-recordings: nothing removed from store: the selection was narrowed (path arguments "
        "given); only a run from the rootdir with no path arguments collects every suite, so a "
        "recording no eval used cannot be told from one an eval left out did not reach; run the whole "
        "selection to prune"
    ]
    assert len(stored(store)) == 4
    # nor one from a folder below the rootdir (found by its pytest.ini), which collects that folder
    write(pytester.path / "pytest.ini", "[pytest]\n")
    below = pytester.mkdir("below")
    (pytester.path / "b.eval.yaml").rename(below / "b.eval.yaml")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(below)
        elsewhere = run(pytester, *every, xdist=xdist)
    elsewhere.assert_outcomes(passed=2)
    assert recordings_lines(elsewhere)[0].startswith(
        "--vibe-prune-recordings: nothing removed from store: the selection was narrowed (not run from "
        "the rootdir); only a run"
    )
    assert len(stored(store)) == 4
    # the whole project, from its rootdir: every recording was used
    whole = run(pytester, *every, xdist=xdist)
    whole.assert_outcomes(passed=4)
    assert recordings_lines(whole) == ["--vibe-prune-recordings: nothing to remove in store"]


@XDIST_MODES
def test_a_configuration_a_suite_lists_but_did_not_run_is_not_looked_at(
    pytester: pytest.Pytester, two_suites: Path, xdist: list[str]
) -> None:
    store = two_suites
    # a runs x only, b y only: b's recordings for x (and a's for y) may be used by a run of them
    result = run(pytester, "--vibe-replay", store, "--vibe-history=", "--vibe-prune-recordings", xdist=xdist)
    result.assert_outcomes(passed=2)
    assert recordings_lines(result) == [
        "recordings: the folder of configuration x is not looked at: b.eval.yaml lists it but did not run "
        "it (its recordings there may be used); run every configuration (--vibe-config ALL) to look at it",
        "recordings: the folder of configuration y is not looked at: a.eval.yaml lists it but did not run "
        "it (its recordings there may be used); run every configuration (--vibe-config ALL) to look at it",
        "--vibe-prune-recordings: nothing to remove in store",
    ]
    assert len(stored(store)) == 4
    # --vibe-config leaves a configuration out of every suite: its folder is not looked at either
    only_x = run(pytester, "--vibe-replay", store, "--vibe-history=", "--vibe-config", "x", xdist=xdist)
    only_x.assert_outcomes(passed=2)
    assert recordings_lines(only_x) == []


def test_a_pytest_that_does_not_say_where_it_collected_from_leaves_the_count_untold(tmp_path: Path) -> None:
    class Older:  # a pytest config without args_source (and so without Config.ArgsSource)
        args = ()
        rootpath = tmp_path
        invocation_params = type("Params", (), {"dir": tmp_path})()

        def getoption(self, name: str, default: object = None) -> object:
            return default

    assert narrowing(Older(), None, False) == ["pytest does not say where it collected from"]
