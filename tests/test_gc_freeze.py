"""``vibe_gc_freeze``: the garbage collector is paused while eval files are collected; then what
collection made leaves its scans while the evals run (``gc.freeze``), and is thawed, the collector
running again, when the session ends."""

from __future__ import annotations

import functools
import gc
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
from helpers import FAST_ARGS, XDIST_MODES, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.loading import suite as suite_module
from pytest_vibeeval.loading.parse_cache import ParseStore
from pytest_vibeeval.loading.yamlsource import Document, load_document

SUITE = """
metadata: {name: frozen, model: test/model}
evals:
  - name: first
    prompt: Is the heap frozen?
    checks: [{match: "*"}]
  - name: second
    prompt: Is the heap frozen?
    checks: [{match: "*"}]
configurations:
  app: {python: "gc_app:answer"}
"""

APP = """
import gc


def answer(prompt):
    assert gc.isenabled(), "the collector is off while an eval runs"
    return f"frozen objects: {gc.get_freeze_count()}"
"""

# Records, while collection is still going on (modifyitems runs after every file was collected),
# whether the collector was on.
COLLECTING_CONFTEST = """
import gc


def pytest_collection_modifyitems(config, items):
    print("collector on while collecting:", gc.isenabled())
"""


@functools.cache
def frozen_at_start() -> int:
    """How many objects this Python reports frozen before any code ran: none on 3.11 and 3.13, a few
    hundred on 3.12. "Nothing frozen" means that many."""
    probe = [sys.executable, "-I", "-c", "import gc; print(gc.get_freeze_count())"]
    return int(subprocess.run(probe, capture_output=True, text=True, check=True).stdout)


def frozen_counts(pytester: pytest.Pytester, *args: str, xdist: list[str] | None = None) -> list[int]:
    """Run the suite; how many objects were frozen while each eval ran."""
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(results), *args, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=2)
    records = evals_by_nodeid(load_json(results)).values()
    return [int(record["response"].rsplit(" ", 1)[1]) for record in records]


@XDIST_MODES
def test_what_collection_made_is_frozen_while_the_evals_run(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    counts = frozen_counts(pytester, xdist=xdist)
    # the items, suites and modules of the session: tens of thousands of objects in each process
    assert all(count > 10_000 for count in counts), counts


@XDIST_MODES
def test_vibe_gc_freeze_false_keeps_pythons_default(pytester: pytest.Pytester, xdist: list[str]) -> None:
    assert frozen_counts(pytester, "-o", "vibe_gc_freeze=false", xdist=xdist) == [frozen_at_start()] * 2


# Records, in the process that gathers the results (the xdist controller, or the one serial
# process), how many objects were frozen as each eval's report reached it.
REPORTS_CONFTEST = """
import gc

gathers = []


def pytest_configure(config):
    gathers.append(not hasattr(config, "workerinput"))


def pytest_runtest_logreport(report):
    if report.when == "call" and gathers[0]:
        with open("frozen-at-reports", "a") as out:
            out.write(f"{gc.get_freeze_count()}\\n")
"""


@XDIST_MODES
@pytest.mark.parametrize(("setting", "frozen"), [("true", True), ("false", False)])
def test_the_results_process_has_its_heap_frozen_while_the_reports_arrive(
    pytester: pytest.Pytester, xdist: list[str], setting: str, frozen: bool
) -> None:
    """The xdist controller collects no eval file: its heap (pytest, xdist, the scoring machinery)
    is frozen once its workers collected evals, as a serial run's is after collection, so the
    collector's scans while the reports arrive (and pytest's own at the end) skip it."""
    write(pytester.path / "conftest.py", REPORTS_CONFTEST)
    frozen_counts(pytester, "-o", f"vibe_gc_freeze={setting}", xdist=xdist)
    counts = [int(line) for line in (pytester.path / "frozen-at-reports").read_text().split()]
    assert len(counts) == 2
    if frozen:
        assert all(count > 10_000 for count in counts), counts
    else:
        assert counts == [frozen_at_start()] * 2


@pytest.mark.parametrize(("setting", "paused"), [("true", True), ("false", False)])
def test_the_collector_is_paused_while_eval_files_are_collected(
    pytester: pytest.Pytester, setting: str, paused: bool
) -> None:
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    write(pytester.path / "conftest.py", COLLECTING_CONFTEST)
    result = run(pytester, "-s", "-o", f"vibe_gc_freeze={setting}", subprocess=True)
    result.assert_outcomes(passed=2)  # and the app asserted the collector was on again
    result.stdout.fnmatch_lines([f"collector on while collecting: {not paused}"])


# Counts the collector's runs while a module of the plugin is being imported after start-up (the
# machinery the first eval file brings in), and writes the count where the test finds it.
IMPORTING_CONFTEST = """
import gc
import os
import sys

runs = []
collecting = []


def count(phase, info):
    frame = sys._getframe().f_back
    while phase == "start" and collecting and frame is not None:
        module = frame.f_globals.get("__name__", "")
        if frame.f_code.co_name == "<module>" and module.startswith("pytest_vibeeval."):
            runs.append(module)
            return
        frame = frame.f_back


gc.callbacks.append(count)


def pytest_collection(session):  # start-up imports (the plugin's own, at configure) are not counted
    collecting.append(True)


def pytest_collection_modifyitems(config, items):
    name = os.environ.get("PYTEST_XDIST_WORKER", "serial")
    with open(f"gc-runs-{name}.txt", "w") as out:
        out.write(str(len(runs)))
"""


@XDIST_MODES
@pytest.mark.parametrize(("setting", "paused"), [("true", True), ("false", False)])
def test_the_collector_is_paused_while_the_first_eval_file_imports_the_machinery(
    pytester: pytest.Pytester, xdist: list[str], setting: str, paused: bool
) -> None:
    """Importing what collecting and running evals needs (pydantic, the models, the checks) makes
    objects that live until the session ends: the collector is paused from the first eval file on,
    before that import, not after it."""
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    write(pytester.path / "conftest.py", IMPORTING_CONFTEST)
    result = run(pytester, "-o", f"vibe_gc_freeze={setting}", xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=2)
    counts = [int(path.read_text()) for path in sorted(pytester.path.glob("gc-runs-*.txt"))]
    assert len(counts) == (2 if xdist else 1)
    # without the pause, the collector runs during that import (the probe sees it)
    assert all(count == 0 for count in counts) if paused else all(count > 0 for count in counts), counts


# A run variable computed at the session's end, which says whether the collector was on then.
SCORING_CONFTEST = """
import gc

from pytest_vibeeval.scoring.variables import RunVariable


def pytest_vibeeval_register_run_variables(registry):
    registry.register(RunVariable("collector_on", "1 or 0", "", lambda records: float(gc.isenabled())))
"""


@XDIST_MODES
@pytest.mark.parametrize(("setting", "paused"), [("true", True), ("false", False)])
def test_the_collector_is_paused_while_the_session_end_scores_the_runs(
    pytester: pytest.Pytester, xdist: list[str], setting: str, paused: bool
) -> None:
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    write(pytester.path / "conftest.py", SCORING_CONFTEST)
    results = pytester.path / "results.json"
    args = ("--vibe-results", str(results), "-o", f"vibe_gc_freeze={setting}")
    result = run(pytester, *args, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=2)
    assert load_json(results)["runs"][0]["variables"]["collector_on"] == (0.0 if paused else 1.0)


def test_a_session_without_eval_files_keeps_the_collector_on(pytester: pytest.Pytester) -> None:
    write(pytester.path / "conftest.py", COLLECTING_CONFTEST)
    write(pytester.path / "test_plain.py", "def test_one():\n    pass\n")
    result = run(pytester, "-s", subprocess=True)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["collector on while collecting: True"])


def test_an_in_process_run_leaves_its_callers_collector_as_it_found_it(pytester: pytest.Pytester) -> None:
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    before = gc.get_freeze_count()
    if before:  # gc.unfreeze() thaws all or nothing (documented for vibe_gc_freeze)
        pytest.skip(f"{before} objects were frozen before the run (Python 3.12 freezes some itself)")
    result = run(pytester)
    result.assert_outcomes(passed=2)
    assert gc.get_freeze_count() == before and gc.isenabled()


# The xdist controller freezes its heap once its workers collected evals; run in-process, that heap
# is the caller's. How the controller's session ends: normally, interrupted by Ctrl-C as the first
# report arrives, a hook's error there, or with no eval collected (nothing frozen at all).
CONTROLLER_ENDS = """
import gc

controller = []


def pytest_configure(config):
    controller.append(not hasattr(config, "workerinput"))


def pytest_runtest_logreport(report):
    if report.when != "call" or not controller[0]:
        return
    with open("frozen-at-reports", "a") as out:
        out.write(f"{gc.get_freeze_count()}\\n")
    if "{end}" == "ctrl-c":
        raise KeyboardInterrupt
    if "{end}" == "error":
        raise RuntimeError("a hook failed")
"""


@pytest.mark.parametrize("end", ["passed", "ctrl-c", "error", "no-evals"])
def test_an_in_process_xdist_run_leaves_its_callers_heap_as_it_found_it(
    pytester: pytest.Pytester, end: str
) -> None:
    """However the controller's session ends, its last cleanup thaws what it froze and the caller
    (here, this test's process) gets its collector back as it was."""
    if end != "no-evals":
        write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    write(pytester.path / "test_plain.py", "def test_one():\n    pass\n")
    write(pytester.path / "conftest.py", CONTROLLER_ENDS.replace("{end}", end))
    before = gc.get_freeze_count()
    if before:  # gc.unfreeze() thaws all or nothing (documented for vibe_gc_freeze)
        pytest.skip(f"{before} objects were frozen before the run (Python 3.12 freezes some itself)")
    try:
        pytester.runpytest_inprocess(*FAST_ARGS, "-n", "2")
    except KeyboardInterrupt:  # pytester lets the session's Ctrl-C through to its caller
        assert end == "ctrl-c"
    counts = [int(line) for line in (pytester.path / "frozen-at-reports").read_text().split()]
    # frozen while the reports arrived (the caller's heap included), but not once it was over
    assert all(count > 10_000 for count in counts) if end != "no-evals" else counts == [0], counts
    assert gc.get_freeze_count() == before and gc.isenabled()


def test_a_collection_error_leaves_the_collector_on(pytester: pytest.Pytester) -> None:
    write(pytester.path / "gc.eval.yaml", "metadata: {name: broken}\nevals: [{prompt: p, nope: 1}]\n")
    write(pytester.path / "test_after.py", "import gc\n\ndef test_on():\n    assert gc.isenabled()\n")
    result = run(pytester, "--continue-on-collection-errors", subprocess=True)
    result.assert_outcomes(passed=1, errors=1)


# Says, at the session's end, whether the collector runs.
SESSION_END_CONFTEST = """
import gc

import pytest


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    print("collector on at the session's end:", gc.isenabled())
"""


@XDIST_MODES
def test_a_collection_refused_at_its_end_leaves_the_collector_on(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A hook at the end of collection refuses the run (here the results folder cannot be made: a
    file is where it goes): the collector paused for the eval files runs again all the same."""
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    write(pytester.path / "conftest.py", SESSION_END_CONFTEST)
    write(pytester.path / ".vibeeval", "a file where the results folder goes\n")
    result = run(pytester, "-s", xdist=xdist, subprocess=True)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
    lines = [line for line in result.outlines if line.startswith("collector on at the session's end:")]
    assert lines and all(line.endswith("True") for line in lines), result.stdout.str()


def test_collect_only_freezes_nothing(pytester: pytest.Pytester) -> None:
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    # pytest_unconfigure runs before the cleanup that thaws: a frozen session still shows it here
    write(
        pytester.path / "conftest.py",
        "import gc\n\ndef pytest_unconfigure(config):\n    print('frozen:', gc.get_freeze_count())\n",
    )
    result = run(pytester, "--collect-only", subprocess=True)
    nothing = f"frozen: {frozen_at_start()}"
    result.stdout.fnmatch_lines([nothing])
    assert run(pytester, "-q", subprocess=True).stdout.str().count(nothing) == 0


# Registered when the conftest is imported, before the plugin's exit collection: runs after it.
# Writes, per process, what the exit found frozen; the garbage made at unconfigure must still be
# finalised.
EXIT_CONFTEST = """
import atexit
import gc
import os
from pathlib import Path

HERE = Path(__file__).parent


class Cycle:
    def __init__(self):
        self.me = self

    def __del__(self):
        (HERE / f"finalised-{os.getpid()}").write_text("yes")


def _report():
    (HERE / f"exit-{os.getpid()}").write_text(str(gc.get_freeze_count()))


atexit.register(_report)


def pytest_unconfigure(config):
    Cycle()
"""


def frozen_at_exit(pytester: pytest.Pytester, *args: str, xdist: list[str] | None = None) -> list[int]:
    """Run pytest in a process of its own; how many objects each of its processes (the
    controller and any workers) had frozen at exit, after the plugin's exit collection."""
    write(pytester.path / "conftest.py", EXIT_CONFTEST)
    result = run(pytester, *args, xdist=xdist, subprocess=True)
    assert result.ret == 0, result.stdout.str()
    exits = sorted(pytester.path.glob("exit-*"))
    finalised = {path.name.split("-", 1)[1] for path in pytester.path.glob("finalised-*")}
    assert finalised == {path.name.split("-", 1)[1] for path in exits}  # the garbage's finalisers ran
    return [int(path.read_text()) for path in exits]


@XDIST_MODES
def test_at_exit_the_garbage_is_collected_once_and_the_rest_frozen(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    counts = frozen_at_exit(pytester, xdist=xdist)
    assert len(counts) == (3 if xdist else 1)  # the controller and both workers
    assert all(count > 10_000 for count in counts), counts


def test_at_exit_nothing_is_frozen_without_vibe_gc_freeze_or_evals(pytester: pytest.Pytester) -> None:
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    assert frozen_at_exit(pytester, "-o", "vibe_gc_freeze=false") == [frozen_at_start()]
    (pytester.path / "gc.eval.yaml").unlink()
    for path in [*pytester.path.glob("exit-*"), *pytester.path.glob("finalised-*")]:
        path.unlink()
    write(pytester.path / "test_plain.py", "def test_one():\n    pass\n")
    assert frozen_at_exit(pytester) == [frozen_at_start()]


def test_a_loaded_suite_leaves_no_garbage_for_the_collector(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the collector paused, what loading a suite no longer needs (the parsed file) is freed
    at once, not kept alive by a reference cycle until the collection that ends the pause."""
    parsed: list[weakref.ref[Document]] = []

    def load(path: Path, kept: ParseStore | None = None) -> Document:
        document = load_document(path, kept)
        parsed.append(weakref.ref(document))
        return document

    monkeypatch.setattr(suite_module, "load_document", load)
    path = tmp_path / "frozen.eval.yaml"
    path.write_text(SUITE.replace('"*"', "\"*{{var('x')}}*\""))
    gc.disable()
    try:
        suite_module.load_suite(path)
        assert parsed and parsed[0]() is None
    finally:
        gc.enable()


# Counts the collections the plugin's garbage-collector module itself asks for (an automatic one
# runs from whatever code allocated), and writes the count where the test finds it.
EXPLICIT_CONFTEST = """
import gc
import os
import sys

runs = []


def count(phase, info):
    caller = sys._getframe().f_back
    module = caller.f_globals.get("__name__") if caller is not None else None
    if phase == "start" and module == "pytest_vibeeval.collection_gc":
        runs.append(caller.f_code.co_name)


gc.callbacks.append(count)


def pytest_runtest_setup(item):
    name = os.environ.get("PYTEST_XDIST_WORKER", "serial")
    with open(f"gc-explicit-{name}.txt", "w") as out:
        out.write(" ".join(runs))
"""


@XDIST_MODES
def test_freezing_after_collection_does_not_collect_first(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """Collecting evals makes no garbage cycles: a collection before the freeze would only scan
    everything made since the pause (the imports' objects too)."""
    write(pytester.path / "gc.eval.yaml", SUITE)
    write(pytester.path / "gc_app.py", APP)
    write(pytester.path / "conftest.py", EXPLICIT_CONFTEST)
    result = run(pytester, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=2)
    files = sorted(pytester.path.glob("gc-explicit-*.txt"))
    assert len(files) == (2 if xdist else 1)
    assert [path.read_text() for path in files] == [""] * len(files)
