"""The package's modules import each other without a circle, and the modules of logic stay free of
pytest: a cycle makes the import order matter, and pytest in plain modules keeps them out of reach
of unit tests and other runners."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import XDIST_MODES

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_vibeeval"
# The modules that are pytest's side of the plugin: hooks, collectors, items, fixtures, outputs
# written through pytest's objects.
PYTEST_SIDE = {
    "builtins", "coding_items", "collect", "controller", "execute", "fixtures", "hookspecs", "itemhooks",
    "items", "report.junit", "live", "plugin", "pytest_private", "session_finish", "settings",
    "stash",
}  # fmt: skip


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, modules: set[str]) -> set[str]:
    """The package modules ``path`` imports, at any depth of its code, except under TYPE_CHECKING."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for sub in ast.walk(node))
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in modules else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return (found & modules) - {name}


def graph() -> dict[str, set[str]]:
    files = {module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {name: imports(path, set(files)) for name, path in files.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return found


# What importing the plugin (every pytest process, xdist workers too) must not import: the
# optional extras and the machinery of one kind of eval, imported when a suite of that kind
# is collected or an option asks for it.
NOT_AT_START = (
    "httpx",
    "jsonschema",
    "mcp",
    "rich",
    "pytest_vibeeval.coding_items",
    "pytest_vibeeval.loading.runner_config",
    "pytest_vibeeval.models.eval_config",
    "pytest_vibeeval.process",
    "pytest_vibeeval.providers.cli",
    "pytest_vibeeval.providers.cli_mcp",
    "pytest_vibeeval.providers.http",
    "pytest_vibeeval.providers.mcp_tools",
    "pytest_vibeeval.report.html",
    "pytest_vibeeval.reaping",
    "pytest_vibeeval.workspace.steps",
    "pytest_vibeeval.workspace.subtasks",  # the options' values are in workspace.options
)
# What a whole session without eval files must not import (every pytest run of a user who has the
# plugin installed): the input models, YAML, scoring, checks, providers and results, loaded when
# the first eval file is collected.
NOT_WITHOUT_EVALS = (
    *NOT_AT_START,
    "pydantic",
    "simpleeval",
    "yaml",
    "pytest_vibeeval.cache",
    "pytest_vibeeval.checks",
    "pytest_vibeeval.collect",
    "pytest_vibeeval.execute",
    "pytest_vibeeval.loading.configurations",
    "pytest_vibeeval.loading.suite",
    "pytest_vibeeval.models",
    "pytest_vibeeval.plan",
    "pytest_vibeeval.providers",
    "pytest_vibeeval.report.resultsfile",
    "pytest_vibeeval.report.summary",
    "pytest_vibeeval.results",
    "pytest_vibeeval.runner",
    "pytest_vibeeval.scoring.aggregate",
    "pytest_vibeeval.scoring.formula",
    "pytest_vibeeval.workspace.sandbox",
)


def test_importing_the_plugin_leaves_the_heavy_modules_out() -> None:
    code = (
        "import json, sys\n"
        "import pytest_vibeeval.plugin, pytest_vibeeval.fixtures\n"
        f"print(json.dumps(sorted(set({list(NOT_AT_START)!r}) & set(sys.modules))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def session_modules(folder: Path, args: list[str], witness: str, watched: tuple[str, ...]) -> list[object]:
    """A pytest session on ``folder`` in a fresh interpreter: its exit code, whether ``witness``
    was imported, and which of ``watched`` were."""
    code = (
        "import json, sys, pytest\n"
        f"code = pytest.main([{str(folder)!r}, '-q', '-p', 'no:cacheprovider', *{args!r}])\n"
        f"witnessed = {witness!r} in sys.modules\n"
        f"loaded = sorted(set({list(watched)!r}) & set(sys.modules))\n"
        "print(json.dumps([int(code), witnessed, loaded]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=folder)
    return list(json.loads(out.stdout.splitlines()[-1]))


# Output options checked at start-up (a project's addopts may name them for every run): checking
# that their files can be written does not import the results' writer.
OUTPUT_OPTIONS = ["--vibe-results", "out/results.json", "--vibe-html", "out/report.html"]


@pytest.mark.parametrize("args", [[], OUTPUT_OPTIONS], ids=["plain", "output-options"])
def test_a_session_without_eval_files_leaves_the_eval_machinery_out(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    # the controller module shows the plugin did run
    assert session_modules(tmp_path, args, "pytest_vibeeval.controller", NOT_WITHOUT_EVALS) == [0, True, []]


# What the xdist controller, which collects and runs nothing, must not import: the items' machinery,
# the rubric's signals (the workers grade the answers), with the YAML parser they load, and the
# checks' API (it names where a plugin's writer or run variable raised: imported only then).
NOT_ON_THE_CONTROLLER = (
    "pytest_vibeeval.check_api",
    "pytest_vibeeval.checks",
    "pytest_vibeeval.collect",
    "pytest_vibeeval.execute",
    "pytest_vibeeval.loading.suite",
    "pytest_vibeeval.models",
    "pytest_vibeeval.providers",
    "pytest_vibeeval.scoring.answer_text",
    "pytest_vibeeval.scoring.rubric",
    "yaml",
)


def one_python_eval(folder: Path) -> None:
    """A suite of one eval answered by a `python:` function, and that function."""
    (folder / "app.py").write_text("def answer(prompt):\n    return 'yes'\n", encoding="utf-8")
    (folder / "one.eval.yaml").write_text(
        "metadata: {name: one, model: m}\n"
        "evals:\n  - {name: e, prompt: p, checks: [{match: 'yes'}]}\n"
        "configurations:\n  c: {python: 'app:answer'}\n",
        encoding="utf-8",
    )


def test_the_xdist_controller_leaves_the_items_machinery_out(tmp_path: Path) -> None:
    one_python_eval(tmp_path)
    # the aggregator's module shows the controller took records
    scored = "pytest_vibeeval.scoring.aggregate"
    assert session_modules(tmp_path, ["-n", "2"], scored, NOT_ON_THE_CONTROLLER) == [0, True, []]


# What an xdist worker, which collects and runs items but writes no results, must not import: the
# controller's side (its hooks, the session's finish, the journal, the live status line).
NOT_ON_A_WORKER = (
    "pytest_vibeeval.controller",
    "pytest_vibeeval.journal",
    "pytest_vibeeval.live",
    "pytest_vibeeval.report.resultsfile",
    "pytest_vibeeval.scoring.aggregate",
    "pytest_vibeeval.session_finish",
)
# Each worker writes which of them it imported, and whether it collected the suite, at its end.
WORKER_MODULES_CONFTEST = f"""
import json, sys

def pytest_unconfigure(config):
    worker = getattr(config, "workerinput", {{}}).get("workerid")
    if worker is not None:
        loaded = sorted(set({list(NOT_ON_A_WORKER)!r}) & set(sys.modules))
        ran = "pytest_vibeeval.runner" in sys.modules
        with open(f"{{worker}}.modules.json", "w", encoding="utf-8") as out:
            json.dump([ran, loaded], out)
"""


def test_an_xdist_worker_leaves_the_controllers_side_out(tmp_path: Path) -> None:
    one_python_eval(tmp_path)
    (tmp_path / "conftest.py").write_text(WORKER_MODULES_CONFTEST, encoding="utf-8")
    # the aggregator's module shows the controller took records
    scored = "pytest_vibeeval.scoring.aggregate"
    assert session_modules(tmp_path, ["-n", "2"], scored, ()) == [0, True, []]
    reports = sorted(tmp_path.glob("*.modules.json"))
    assert [path.name for path in reports] == ["gw0.modules.json", "gw1.modules.json"]
    # every worker collected the suite (the runner's module shows it), none loaded the controller's side
    assert [json.loads(path.read_text(encoding="utf-8")) for path in reports] == [[True, []], [True, []]]


# What collecting and running a suite of `python:` evals with plain checks must not import: the
# other kinds' providers and parsers, the llm_judge machinery, the check types it does not use
# (JSON, tool calls, cost, latency, `python:` checks), the statistics of repeated evals, what only
# some evals use (conversations, datasets, the semantic check's embeddings, the sandbox and the
# workspace copies of coding agents), what only an option uses (the response cache, the record
# stores) and what only input that does not parse or validate needs (the hints that explain it).
NOT_FOR_A_PYTHON_SUITE = (
    *NOT_AT_START,
    "pytest_vibeeval.answer_files",
    "pytest_vibeeval.answer_keys",
    "pytest_vibeeval.cache",
    "pytest_vibeeval.conversation",
    "pytest_vibeeval.custom_checks",
    "pytest_vibeeval.earlier_recordings",
    "pytest_vibeeval.judge",
    "pytest_vibeeval.loading.datasets",
    "pytest_vibeeval.loading.syntax_hints",
    "pytest_vibeeval.loading.validation_messages",
    "pytest_vibeeval.providers.parsers",
    "pytest_vibeeval.providers.sessions",
    "pytest_vibeeval.recording",
    "pytest_vibeeval.recording_prune",
    "pytest_vibeeval.report.recording_text",
    "pytest_vibeeval.schema_refs",
    "pytest_vibeeval.semantic",
    "pytest_vibeeval.structural_checks",
    "pytest_vibeeval.workspace.copying",
    "pytest_vibeeval.workspace.sandbox",
    "statistics",
)
# ... and what collecting it must not import either: the reader of earlier results files (for
# --vibe-resume, a baseline, the history, all read or written once evals ran).
NOT_FOR_COLLECTING_A_PYTHON_SUITE = (*NOT_FOR_A_PYTHON_SUITE, "pytest_vibeeval.report.baseline")


@pytest.mark.parametrize(
    ("args", "watched"),
    [(["--collect-only"], NOT_FOR_COLLECTING_A_PYTHON_SUITE), ([], NOT_FOR_A_PYTHON_SUITE)],
    ids=["collect-only", "run"],
)
def test_a_python_suite_leaves_the_other_kinds_machinery_out(
    tmp_path: Path, args: list[str], watched: tuple[str, ...]
) -> None:
    one_python_eval(tmp_path)
    # the runner's module shows the eval file was collected
    witness = "pytest_vibeeval.runner"
    assert session_modules(tmp_path, args, witness, watched) == [0, True, []]


# What running a suite of `cli:` evals whose agent prints plain text must not import, in the process
# that runs it: what only some agent configurations use (an MCP server, an output parser, a
# conversation's session, a prompt too long for the command line) or only a failed run needs (the
# failure report, the hints of output that does not parse).
NOT_FOR_A_PLAIN_CLI_SUITE = (
    "pytest_vibeeval.json_comments",
    "pytest_vibeeval.loading.syntax_hints",
    "pytest_vibeeval.loading.validation_messages",
    "pytest_vibeeval.providers.cli_mcp",
    "pytest_vibeeval.providers.failure",
    "pytest_vibeeval.providers.long_prompt",
    "pytest_vibeeval.providers.mcp_tools",
    "pytest_vibeeval.providers.parsers",
    "pytest_vibeeval.providers.parse_codex",
    "pytest_vibeeval.providers.sessions",
    "pytest_vibeeval.semantic",
    "pytest_vibeeval.workspace.sandbox",
)
# Each process that ran the agent writes which of them it imported, at its end.
CLI_MODULES_CONFTEST = f"""
import json, sys

def pytest_unconfigure(config):
    if "pytest_vibeeval.providers.cli" in sys.modules:
        loaded = sorted(set({list(NOT_FOR_A_PLAIN_CLI_SUITE)!r}) & set(sys.modules))
        role = getattr(config, "workerinput", {{}}).get("workerid", "serial")
        with open(f"{{role}}.modules.json", "w", encoding="utf-8") as out:
            json.dump(loaded, out)
"""


@XDIST_MODES
def test_a_plain_cli_suite_leaves_the_agents_options_machinery_out(tmp_path: Path, xdist: list[str]) -> None:
    agent = tmp_path / "agent.sh"
    agent.write_text("#!/bin/sh\necho yes\n", encoding="utf-8")
    agent.chmod(0o755)
    (tmp_path / "one.eval.yaml").write_text(
        "metadata: {name: one, model: m}\n"
        "evals:\n  - {name: e, prompt: p, checks: [{match: '*yes*'}]}\n"
        "configurations:\n  c: {cli: ./agent.sh}\n",
        encoding="utf-8",
    )
    (tmp_path / "conftest.py").write_text(CLI_MODULES_CONFTEST, encoding="utf-8")
    assert session_modules(tmp_path, xdist, "pytest_vibeeval.results", ())[:2] == [0, True]
    # the process that ran the agent (the one worker that took the item under xdist) imported none
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in tmp_path.glob("*.modules.json")]
    assert reports == [[]]


def test_a_python_suite_builds_no_http_settings_model(tmp_path: Path) -> None:
    # The implicit judge's limits take the HTTP retries' default from the field, not from a model
    # whose first use would build its schema.
    one_python_eval(tmp_path)
    code = (
        "import json, pytest\n"
        f"code = pytest.main([{str(tmp_path)!r}, '-q', '-p', 'no:cacheprovider'])\n"
        "from pytest_vibeeval.models import HttpSpec\n"
        "print(json.dumps([int(code), HttpSpec.__pydantic_complete__]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert json.loads(out.stdout.splitlines()[-1]) == [0, False]


def test_the_package_imports_its_exported_names_when_first_used() -> None:
    code = (
        "import json, sys\n"
        "import pytest_vibeeval as p\n"
        "before = 'pytest_vibeeval.results' in sys.modules\n"
        "print(json.dumps([before, [n for n in p.__all__ if not hasattr(p, n)], p.EvalRecord.__module__]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == [False, [], "pytest_vibeeval.results"]


def test_no_import_cycles() -> None:
    assert cycles(graph()) == []


def test_the_stores_of_answers_and_outputs_write_without_the_results_writer() -> None:
    """The response cache, record stores and ``outputs`` write their files through ``atomic_files``,
    which imports only what tells a file's kind (``bounded_read``), not through the results file's
    writer."""
    edges = graph()
    assert edges["pytest_vibeeval.atomic_files"] <= {"pytest_vibeeval.bounded_read"}
    for writer in ("cache", "answer_files", "runner_outputs", "report.html", "report.resultsfile"):
        assert "pytest_vibeeval.atomic_files" in edges[f"pytest_vibeeval.{writer}"], writer
    for writer in ("cache", "answer_files", "runner_outputs"):
        assert "pytest_vibeeval.report.resultsfile" not in edges[f"pytest_vibeeval.{writer}"], writer


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_only_the_pytest_side_imports_pytest() -> None:
    importing = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
        }
        names |= {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        if {"pytest", "_pytest"} & {name.split(".")[0] for name in names}:
            importing.add(module_name(path).removeprefix("pytest_vibeeval."))
    assert importing <= PYTEST_SIDE, sorted(importing - PYTEST_SIDE)
