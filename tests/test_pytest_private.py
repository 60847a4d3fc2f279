"""The private pytest API that ``pytest_vibeeval.pytest_private`` relies on is still there: a pytest
upgrade that removes or renames one of these fails here, by name, instead of somewhere odd."""

from __future__ import annotations

import json

import pytest
from helpers import XDIST_MODES, needs_plugin, run, write

PROBE = """
import json, pathlib
import pytest
from pytest_vibeeval import pytest_private

def pytest_collection_finish(session):
    found = {}
    item = session.items[0]
    found["id_matches_parse"] = (
        not pytest_private.node_ids_are_structured()
        or item.id == type(item.id).parse(item.nodeid)
    )
    found["fixturemanager"] = hasattr(session, "_fixturemanager")
    writer = pytest_private.terminal_writer(session.config)
    found["writer"] = writer is not None
    found["writer_file"] = pytest_private.writer_file(writer) is not None
    found["current_line"] = hasattr(writer, "_current_line")
    found["fullwidth"] = isinstance(writer.fullwidth, int)
    capman = session.config.pluginmanager.get_plugin("capturemanager")
    found["capture"] = isinstance(capman._global_capturing.out.targetfd_save, int)
    pathlib.Path("probe.json").write_text(json.dumps(found))
"""


def test_the_private_api_the_plugin_uses_is_there(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(PROBE)
    pytester.makefile(
        ".eval.yaml",
        probe="""
        metadata: {name: probe, model: m}
        configurations: {my-app: {python: "probe_app:answer"}}
        evals:
          - {name: essay, prompt: hello, checks: [{match: "*"}]}
        """,
    )
    pytester.makepyfile(probe_app="def answer(prompt, context):\n    return 'hi'\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "--collect-only", "-q")
    found = json.loads((pytester.path / "probe.json").read_text())
    assert found == dict.fromkeys(found, True) and len(found) == 7, found


XDIST_PROBE = """
import json, os, pathlib, queue


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller
        dsession = session.config.pluginmanager.getplugin("dsession")
        found = {"queue": isinstance(getattr(dsession, "queue", None), queue.Queue)}
        pathlib.Path("probe.json").write_text(json.dumps(found))


def pytest_configure_node(node):
    from pytest_vibeeval.pytest_private import worker_pid

    path = pathlib.Path("worker-pids.json")
    pids = json.loads(path.read_text()) if path.exists() else []
    path.write_text(json.dumps([*pids, worker_pid(node)]))


def pytest_configure(config):
    if hasattr(config, "workerinput"):
        pathlib.Path(f"worker-{os.getpid()}").touch()
"""


def test_the_private_xdist_api_the_plugin_uses_is_there(pytester: pytest.Pytester) -> None:
    """xdist's controller keeps its workers' events in ``DSession.queue`` (read on an interrupt)
    and their pids in their gateways' ``_rinfo()`` (a lost worker's agents are found by it)."""
    pytester.makeconftest(XDIST_PROBE)
    pytester.makepyfile(test_probe="def test_probe():\n    pass\n")
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2", "-q")
    found = json.loads((pytester.path / "probe.json").read_text())
    assert found == {"queue": True}, found
    pids = json.loads((pytester.path / "worker-pids.json").read_text())
    assert sorted(f"worker-{pid}" for pid in pids) == sorted(
        p.name for p in pytester.path.glob("worker-*[0-9]")
    )


PHASE_PROBE = """
import json, pathlib, sys
import pytest
from pytest_vibeeval.pytest_private import in_runtest_phase

SEEN = {}

@pytest.fixture
def phases():
    SEEN["setup"] = in_runtest_phase(sys._getframe(), None)
    yield
    SEEN["teardown"] = in_runtest_phase(sys._getframe(), None)

def pytest_runtest_logreport(report):
    SEEN["logreport"] = SEEN.get("logreport", False) or in_runtest_phase(sys._getframe(), None)

def pytest_runtest_logfinish():
    SEEN["logfinish"] = in_runtest_phase(sys._getframe(), None)
    pathlib.Path("probe.json").write_text(json.dumps(SEEN))
"""


def test_where_an_items_phases_run_can_be_told(pytester: pytest.Pytester) -> None:
    """pytest runs each phase of an item through ``CallInfo.from_call``, called by the private
    ``runtestprotocol``: the timeout backstop raises only inside a phase."""
    pytester.makeconftest(PHASE_PROBE)
    pytester.makepyfile(
        test_probe="""
        import sys
        from conftest import SEEN
        from pytest_vibeeval.pytest_private import in_runtest_phase

        def test_probe(phases):
            SEEN["call"] = in_runtest_phase(sys._getframe(), None)
        """
    )
    pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q")
    found = json.loads((pytester.path / "probe.json").read_text())
    assert found == {"setup": True, "call": True, "teardown": True, "logreport": False, "logfinish": False}


RERUN_PROBE = """
import json, pathlib
import pytest
from pytest_vibeeval.pytest_private import reruns_left, stop_reruns

SEEN = []

@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if call.when == "call":
        SEEN.append(reruns_left(item))
        if "stop" in item.name:
            stop_reruns(item)
    return report

def pytest_sessionfinish():
    pathlib.Path("probe.json").write_text(json.dumps(SEEN))
"""


@needs_plugin("pytest_rerunfailures", "pytest-rerunfailures")
def test_pytest_rerunfailures_can_be_told_to_rerun_no_more(pytester: pytest.Pytester) -> None:
    """pytest-rerunfailures' ``execution_count`` and ``_terminal_errors``, through which the plugin
    sees whether a failed eval will be rerun and ends its reruns (--vibe-max-cost spent)."""
    pytester.makeconftest(RERUN_PROBE)
    pytester.makepyfile(test_probe="def test_stop():\n    assert False\n\ndef test_go():\n    assert False\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "--reruns", "2")
    result.assert_outcomes(failed=2)
    assert result.parseoutcomes()["rerun"] == 2  # test_go's; test_stop's first attempt is its last
    seen = json.loads((pytester.path / "probe.json").read_text())
    assert seen == [True, True, True, False], seen  # test_stop once; test_go thrice, the last with none left


SUITE_CONFTEST = """
from pytest_vibeeval import RunVariable


def pytest_vibeeval_register_run_variables(registry):
    registry.register(RunVariable("answers", "evals", "the evals answered", lambda records: len(records)))
"""


@XDIST_MODES
def test_a_suites_conftest_is_loaded_where_its_runs_are_scored(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """The controller loads a suite folder's conftest.py through pytest's private
    ``_loadconftestmodules`` (under xdist it collects nothing): its run variable scores the run, on
    every pytest the package supports (8.0 has no ``consider_namespace_packages``)."""
    write(pytester.path / "suites" / "conftest.py", SUITE_CONFTEST)
    write(
        pytester.path / "suites" / "probe.eval.yaml",
        """
        metadata: {name: probe, model: m}
        configurations: {my-app: {python: "probe_app:answer"}}
        score: {formula: answers * 10}
        evals:
          - {name: essay, prompt: hello, checks: [{match: "*"}]}
        """,
    )
    write(pytester.path / "suites" / "probe_app.py", "def answer(prompt, context):\n    return 'hi'\n")
    result = run(pytester, "--vibe-results", "results.json", xdist=xdist)
    result.assert_outcomes(passed=1)
    assert "could not be loaded" not in result.stdout.str()
    (run_record,) = json.loads((pytester.path / "results.json").read_text())["runs"]
    assert run_record["score"] == 10.0, run_record


PYTEST_9 = int(pytest.__version__.split(".")[0]) >= 9
LAYOUTS = {
    "pytest.ini": ("pytest.ini", "[pytest]\nvibe_cache = answers\n"),
    "pyproject-ini-options": ("pyproject.toml", '[tool.pytest.ini_options]\nvibe_cache = "answers"\n'),
    "tox.ini-unset": ("tox.ini", "[pytest]\naddopts = -q\n"),
    "none": (None, ""),
}


@pytest.mark.parametrize(("name", "text"), LAYOUTS.values(), ids=LAYOUTS.keys())
def test_the_rootdir_and_ini_value_the_cache_command_finds_are_pytests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, name: str | None, text: str
) -> None:
    """``python -m pytest_vibeeval cache`` finds the cache a session started in the same folder
    uses: pytest's rootdir and its ini value ``vibe_cache``, through the private ``determine_setup``."""
    from pytest_vibeeval.pytest_private import rootdir_and_ini

    if name is not None:
        (pytester.path / name).write_text(text)
    sub = pytester.mkdir("sub")
    monkeypatch.chdir(sub)
    config = pytester.parseconfig()
    rootdir, value = rootdir_and_ini(sub, "vibe_cache")
    assert rootdir == config.rootpath
    assert name is None or rootdir == pytester.path  # the ini file's folder, above the current one
    assert value == (str(config.getini("vibe_cache")) or None)
    assert value == ("answers" if "vibe_cache" in text else None)


@pytest.mark.skipif(not PYTEST_9, reason="pytest 9 reads [tool.pytest] as native TOML")
def test_a_native_toml_setting_is_found_too(pytester: pytest.Pytester) -> None:
    from pytest_vibeeval.pytest_private import rootdir_and_ini

    (pytester.path / "pyproject.toml").write_text('[tool.pytest]\nvibe_cache = "answers"\n')
    assert rootdir_and_ini(pytester.path, "vibe_cache") == (pytester.path, "answers")


def test_an_ini_file_pytest_cannot_read_is_a_value_error(pytester: pytest.Pytester) -> None:
    from pytest_vibeeval.pytest_private import rootdir_and_ini

    (pytester.path / "pyproject.toml").write_text("[tool.pytest.ini_options\n")
    with pytest.raises(ValueError, match=r"pytest cannot read its configuration here: .*pyproject\.toml"):
        rootdir_and_ini(pytester.path, "vibe_cache")
