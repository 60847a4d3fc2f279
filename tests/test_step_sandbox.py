"""Under --vibe-sandbox bwrap the build and grade steps run in the sandbox too: the agent's files
on their path (a ``py_compile.py`` that shadows the module a build step runs, a ``calc.py`` the
grader imports) can write only in the step's copy, reach no network unless the step's registry
entry says ``"network": true``, and get the allowlisted environment. The grade is still recorded."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from helpers import PYTHON, XDIST_MODES, agent, evals_by_nodeid, load_json, run, write, write_cli_config
from test_workspace_evals import make_config_dir

from pytest_vibeeval.workspace.sandbox import bwrap_problem

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}")

# What the agent's files do when a step runs them: try to write beside the user's home and into
# the repository, connect to the test's server, look at the grading folder and the environment,
# and print what happened on one line.
ESCAPE = """
import json, os, socket
def _escape(where):
    report = {}
    for name, path in {"home": HOME_MARKER, "repo": REPO_MARKER}.items():
        try:
            with open(path, "a") as handle:
                handle.write(where)
            report[name] = "written"
        except OSError as exc:
            report[name] = type(exc).__name__
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=10) as conn:
            conn.sendall(("GET /" + where + " HTTP/1.0\\r\\n\\r\\n").encode())
            conn.recv(100)
        report["network"] = "connected"
    except OSError as exc:
        report["network"] = type(exc).__name__
    report["grading"] = sorted(os.listdir(GRADING)) if os.path.isdir(GRADING) else None
    report["secret"] = os.environ.get("STEP_SANDBOX_TOKEN")
    report["passed"] = os.environ.get("STEP_PASSED_ON")
    print("ESCAPE " + where + " " + json.dumps(report), flush=True)
"""

# The agent: a py_compile.py that shadows the module the build step runs (`python -m py_compile`
# puts the workspace first on sys.path), and a correct calc.py that tries the same when imported.
AGENT = """
import sys
home_marker, repo_marker, port, grading = sys.argv[1:5]
head = f"HOME_MARKER = {home_marker!r}\\nREPO_MARKER = {repo_marker!r}\\n"
head += f"PORT = {port}\\nGRADING = {grading!r}\\n"
escape = head + open(sys.argv[5]).read()
open("py_compile.py", "w").write(escape + "_escape('build')\\n")
open("calc.py", "w").write(escape + "_escape('grade')\\ndef f(a, b):\\n    return a + b\\n")
"""

FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())"


class Server:
    """An HTTP server on 127.0.0.1 that notes the path of every request."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                self.send_response(200)
                self.end_headers()
                self.wfile.write(b"reached")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    serving = Server()
    yield serving
    serving.close()


def _reports(log: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.split(" ", 2)[2])
        for line in Path(log).read_text().splitlines()
        if line.startswith("ESCAPE ")
    ]


@needs_bwrap
@XDIST_MODES
def test_agent_files_run_by_steps_are_confined(
    pytester: pytest.Pytester, xdist: list[str], server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STEP_SANDBOX_TOKEN", "not-for-steps-4711")
    monkeypatch.setenv("STEP_PASSED_ON", "on-purpose")
    config = make_config_dir(pytester.path)
    tag = f"{os.getpid()}-{len(xdist)}"
    home_marker, repo_marker = Path.home() / f"vibe-step-escape-{tag}", pytester.path / f"escaped-{tag}"
    grading = pytester.path / "evals" / "grading" / "add"
    escape = write(pytester.path / "escape.py", ESCAPE)
    script = agent(pytester.path / "agents", "hostile.py", AGENT)
    args = [script, str(home_marker), str(repo_marker), str(server.port), str(grading), str(escape)]
    write_cli_config(
        config / "cli-config.json", {"configurations": {"hostile": {"cli": PYTHON, "args": args}}}
    )
    registry = load_json(config / "command-registry.json")
    url = f"http://127.0.0.1:{server.port}/allowed"
    registry["fetch"] = {"command": PYTHON, "args": ["-c", FETCH, url], "network": True}
    registry["compile"]["env_passthrough"] = ["STEP_PASSED_*"]
    write(config / "command-registry.json", json.dumps(registry))
    evals = load_json(config / "eval-config.json")
    evals["evaluations"]["add"]["buildSteps"] = ["compile", "fetch"]
    write(config / "eval-config.json", json.dumps(evals))
    results = pytester.path / "results.json"
    try:
        result = run(pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results, "-k", "add", xdist=xdist)
        result.assert_outcomes(passed=1)  # the grade is recorded: the hidden check passed
        record = evals_by_nodeid(load_json(results))["evals/config/eval-config.json::add[hostile]"]
        assert record["sandbox"] == "bwrap"
        steps = {step["name"]: step for step in record["steps"]}
        assert [s["exit_code"] for s in record["steps"]] == [0, 0, 0, 0, 0]
        assert steps["compile"]["argv"][:3] == [PYTHON, "-m", "py_compile"]  # its own argv, not bwrap's
        (build,) = _reports(steps["compile"]["log"])
        graded = _reports(steps["public"]["log"]) + _reports(steps["hidden"]["log"])
        assert len(graded) == 2
        for report in (build, *graded):
            assert report["home"] == report["repo"] == "OSError"  # read-only file system
            assert report["network"] in ("ConnectionRefusedError", "OSError")  # a loopback of its own
            assert report["secret"] is None  # the allowlisted environment
        assert build["passed"] == "on-purpose"  # its entry's env_passthrough
        assert graded[0]["passed"] is None
        assert build["grading"] == []  # hidden from the build step, as from the agent
        assert all(report["grading"] == ["check_hidden.py"] for report in graded)  # seen, read-only
        assert "reached" in Path(steps["fetch"]["log"]).read_text()
        assert server.paths == ["/allowed"]  # only the step that opted in
        assert not home_marker.exists() and not repo_marker.exists()
    finally:
        home_marker.unlink(missing_ok=True)


@needs_bwrap
def test_a_sandboxed_step_whose_command_is_missing_cannot_start(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    registry = load_json(config / "command-registry.json")
    registry["compile"] = {"command": "no-such-tool-vibe", "args": []}
    write(config / "command-registry.json", json.dumps(registry))
    results = pytester.path / "results.json"
    args = ("--vibe-sandbox", "bwrap", "--vibe-config", "oracle", "--vibe-results", results, "-k", "add")
    run(pytester, *args).assert_outcomes(failed=1)
    record = evals_by_nodeid(load_json(results))["evals/config/eval-config.json::add[oracle]"]
    assert record["message"].startswith(
        "build step 'compile' could not start: command not found: 'no-such-tool-vibe' (looked in PATH)"
    )


def test_the_network_key_is_checked(pytester: pytest.Pytester) -> None:
    config = make_config_dir(pytester.path)
    registry = load_json(config / "command-registry.json")
    registry["compile"]["netwrok"] = True
    write(config / "command-registry.json", json.dumps(registry))
    result = run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        ["*command-registry.json*compile*unknown key 'netwrok' (did you mean 'network'?)*"]
    )
