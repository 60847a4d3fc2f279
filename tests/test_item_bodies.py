"""How a prompt eval's body gets its provider and folder: directly, or through the ``vibe_provider``
and ``vibe_workdir`` fixtures when a conftest overrides one; and the item's folder is made only
where something may use it."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from chat_server import ChatServer
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write

SUITE = """
metadata: {name: bodies, model: test/model}
evals:
  - name: plain
    prompt: Say 42.
    checks: [{match: "*42*"}]
configurations:
  %s
"""

APP = """
import os
from pathlib import Path


def bare(prompt):
    return "The answer is 42."


def with_context(prompt, context):
    # the context's folder exists and is this item's own
    assert context.workdir.is_dir(), context.workdir
    (context.workdir / "note.txt").write_text(prompt)
    return "The answer is 42, from " + context.workdir.name


def from_fixture(prompt):
    return "The answer is 42 and " + os.environ.get("SET_BY_AUTOUSE", "no autouse fixture ran")
"""


AGENT = "import os, sys\nsys.stdin.read()\nprint('42 in', os.getcwd())\n"
MY_CHECKS = """
def folder_exists(response):
    return response.workdir is not None and response.workdir.is_dir(), str(response.workdir)
"""
CUSTOM_EVAL = """
  - name: custom
    prompt: "ANSWER: 42"
    checks: [{python: "my_checks:folder_exists"}]
"""


def _folders(basetemp: Path) -> list[Path]:
    """The item folders the run made (under pytest's basetemp, ``vibeeval*/NNNNN-name``)."""
    bases = [base for base in basetemp.rglob("vibeeval*") if base.is_dir() and not base.is_symlink()]
    return sorted(p for base in bases for p in base.iterdir())


def _project(pytester: pytest.Pytester, configuration: str, conftest: str = "") -> None:
    write(pytester.path / "app.py", APP)
    write(pytester.path / "suite.eval.yaml", SUITE % configuration)
    if conftest:
        write(pytester.path / "conftest.py", conftest)


@pytest.fixture
def chat() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


@XDIST_MODES
def test_folders_are_made_only_where_something_may_use_them(
    pytester: pytest.Pytester, xdist: list[str], chat: ChatServer
) -> None:
    agent = write(pytester.path / "agent.py", AGENT)
    configurations = [
        'bare: {python: "app:bare"}',
        'context: {python: "app:with_context"}',
        f'api: {{http: {{base_url: "{chat.url}"}}, model: m/ok}}',
        f'agent: {{cli: "{sys.executable}", args: ["{agent}"]}}',
    ]
    _project(pytester, "\n  ".join(configurations))
    write(pytester.path / "my_checks.py", MY_CHECKS)
    suite = pytester.path / "suite.eval.yaml"
    text = suite.read_text().replace("prompt: Say 42.", "prompt: 'ANSWER: 42'")
    suite.write_text(text.replace("\nconfigurations:", CUSTOM_EVAL + "configurations:"))
    basetemp = pytester.path / "tmp"
    result = run(pytester, f"--basetemp={basetemp}", "--vibe-results", "out.json", xdist=xdist)
    result.assert_outcomes(passed=8)
    folders = {folder.name.split("-", 1)[1]: folder for folder in _folders(basetemp)}
    # the callable given the context, the agent, and every item with a custom check; not the bare
    # callable's nor the HTTP configuration's other items
    made = ["plain-context", "plain-agent", "custom-bare", "custom-context", "custom-api", "custom-agent"]
    assert sorted(folders) == sorted(made)
    assert (folders["plain-context"] / "note.txt").read_text() == "ANSWER: 42"
    records = evals_by_nodeid(load_json(pytester.path / "out.json"))
    context = records["suite.eval.yaml::plain[context]"]["response"]
    assert context == f"The answer is 42, from {folders['plain-context'].name}"
    assert records["suite.eval.yaml::plain[agent]"]["response"].strip() == f"42 in {folders['plain-agent']}"


@XDIST_MODES
def test_an_overridden_vibe_provider_answers(pytester: pytest.Pytester, xdist: list[str]) -> None:
    _project(
        pytester,
        'app: {python: "app:bare"}',
        """
        import pytest
        from pytest_vibeeval.providers import ProviderResponse


        class Canned:
            def unavailable_reason(self):
                return None

            def answer(self, request):
                assert request.workdir.is_dir()  # through the fixture, the folder is made
                return ProviderResponse(f"canned 42 for {request.eval_id}")


        @pytest.fixture
        def vibe_provider():
            return Canned()
        """,
    )
    result = run(pytester, "--vibe-results", "out.json", xdist=xdist)
    result.assert_outcomes(passed=1)
    [record] = evals_by_nodeid(load_json(pytester.path / "out.json")).values()
    assert record["response"] == "canned 42 for plain"


@XDIST_MODES
def test_an_overridden_vibe_workdir_is_where_the_agent_runs(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    agent = write(
        pytester.path / "agent.py", "import os, sys\nsys.stdin.read()\nprint('42 in', os.getcwd())\n"
    )
    _project(
        pytester,
        f'cli: {{cli: "{sys.executable}", args: ["{agent}"]}}',
        """
        import pytest


        @pytest.fixture
        def vibe_workdir(tmp_path_factory):
            return tmp_path_factory.mktemp("mine")
        """,
    )
    basetemp = pytester.path / "tmp"
    result = run(pytester, f"--basetemp={basetemp}", "--vibe-results", "out.json", xdist=xdist)
    result.assert_outcomes(passed=1)
    [record] = evals_by_nodeid(load_json(pytester.path / "out.json")).values()
    [mine] = [p for p in basetemp.rglob("mine*") if p.is_dir() and not p.is_symlink()]
    assert record["response"].strip() == f"42 in {mine}"
    assert (mine / "agent.stdout").is_file()
    assert _folders(basetemp) == []


def test_conftest_fixtures_and_call_wrappers_apply_to_eval_items(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        'app: {python: "app:from_fixture"}',
        """
        import pytest

        CALLS = []


        @pytest.fixture(autouse=True)
        def exported(monkeypatch):
            monkeypatch.setenv("SET_BY_AUTOUSE", "the conftest's fixture ran")


        @pytest.hookimpl(wrapper=True)
        def pytest_pyfunc_call(pyfuncitem):
            CALLS.append(pyfuncitem.nodeid)
            return (yield)


        def pytest_sessionfinish(session):
            print("wrapped:", CALLS)
        """,
    )
    result = run(pytester, "-s", "--vibe-results", "out.json")
    result.assert_outcomes(passed=1)
    assert "wrapped: ['suite.eval.yaml::plain[app]']" in result.stdout.str()
    [record] = evals_by_nodeid(load_json(pytester.path / "out.json")).values()
    assert record["response"] == "The answer is 42 and the conftest's fixture ran"


# Records the import statements the plugin's own code runs while each item's protocol runs, in
# each process that runs items.
IMPORTS_CONFTEST = """
import builtins
import os

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item):
    original = builtins.__import__
    with open(f"imports-{os.getpid()}", "a") as out:
        out.write(f"{item.name} runs\\n")

    def counted(name, globals=None, locals=None, fromlist=(), level=0):
        if (globals or {}).get("__name__", "").startswith("pytest_vibeeval"):
            with open(f"imports-{os.getpid()}", "a") as out:
                out.write(f"{item.name} imports {name}\\n")
        return original(name, globals, locals, fromlist, level)

    builtins.__import__ = counted
    try:
        return (yield)
    finally:
        builtins.__import__ = original
"""


@XDIST_MODES
def test_an_item_after_the_first_runs_no_import_statement(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """An import statement in a function runs at each call (a relative one costs about 11 000
    instructions with its module loaded): the item's run looks what it uses up once per process."""
    evals = "\n".join(f"  - {{name: e{i}, prompt: Say 42., checks: [{{match: '*42*'}}]}}" for i in range(6))
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "s.eval.yaml",
        SUITE.replace("evals:\n  - name: plain", "evals:\n" + evals + "\n  - name: plain")
        % 'app: {python: "app:bare"}',
    )
    write(pytester.path / "conftest.py", IMPORTS_CONFTEST)
    result = run(pytester, xdist=xdist)
    result.assert_outcomes(passed=7)
    runs, later = 0, []
    for path in pytester.path.glob("imports-*"):
        lines = path.read_text().splitlines()
        runs += sum(line.endswith(" runs") for line in lines)
        first = lines[0].split()[0]
        later += [line for line in lines if " imports " in line and line.split()[0] != first]
    assert runs == 7
    assert later == []


@XDIST_MODES
def test_a_session_whose_items_need_no_folder_makes_no_base_folder(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    # Making the base of the items' folders makes pytest's basetemp and deletes its old runs: a
    # session that never needs a folder skips all of it. The same suite with an item that does
    # need one still makes that one's folder.
    _project(pytester, 'bare: {python: "app:bare"}')
    basetemp = pytester.path / "tmp"
    result = run(pytester, f"--basetemp={basetemp}", xdist=xdist)
    result.assert_outcomes(passed=1)
    assert _folders(basetemp) == []
    assert not list(basetemp.rglob("vibeeval*"))
    _project(pytester, 'bare: {python: "app:bare"}\n  context: {python: "app:with_context"}')
    result = run(pytester, f"--basetemp={basetemp}", xdist=xdist)
    result.assert_outcomes(passed=2)
    assert [folder.name.split("-", 1)[1] for folder in _folders(basetemp)] == ["plain-context"]
