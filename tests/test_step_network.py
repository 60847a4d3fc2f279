"""In the bwrap sandbox a step that installs packages (``npm ci``, ``npm install``, ``pip
install``, …) has the network and may write the package caches in the home folder, as it cannot
work offline (llxprt-evals' own registries say nothing about it); any other step has neither
unless its registry entry says ``"network": true``, and ``"network": false`` takes them from an
install step too."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write
from test_step_sandbox import Server, needs_bwrap, server  # noqa: F401  (the server fixture)
from test_workspace_evals import make_config_dir

from pytest_vibeeval.workspace.step_network import installs_packages, step_network, writable_caches


@pytest.mark.parametrize(
    "argv",
    [
        ["npm", "install"],
        ["npm", "ci", "--prefer-offline"],
        ["/usr/bin/npm", "--prefix", "workspace", "install"],
        ["npm", "i"],
        ["pnpm", "install"],
        ["yarn"],
        ["yarn", "--frozen-lockfile"],
        ["pip", "install", "-r", "requirements.txt"],
        ["python3", "-m", "pip", "install", "."],
        ["uv", "sync"],
    ],
)
def test_package_installs_are_recognised(argv: list[str]) -> None:
    assert installs_packages(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["npm", "run", "test:hidden"],
        ["npm", "--prefix", "install", "run", "build"],  # "install" is --prefix's folder here
        ["npm", "exec", "--", "vitest", "install"],
        ["yarn", "test"],
        ["python3", "-m", "pytest"],
        ["pip", "list"],
        ["make", "install"],
    ],
)
def test_other_commands_are_not_installs(argv: list[str]) -> None:
    assert not installs_packages(argv)


def test_the_entry_decides_when_it_says_so() -> None:
    assert step_network(["npm", "ci"], None) is True
    assert step_network(["npm", "ci"], False) is False
    assert step_network(["npm", "test"], None) is False
    assert step_network(["npm", "test"], True) is True


def test_npms_cache_is_made_for_an_npm_step_and_existing_caches_are_listed(tmp_path: Path) -> None:
    (tmp_path / ".cache" / "pip").mkdir(parents=True)
    assert writable_caches(tmp_path, ["pip", "install", "x"]) == [tmp_path / ".cache" / "pip"]
    assert not (tmp_path / ".npm").exists()
    assert writable_caches(tmp_path, ["npm", "ci"]) == [tmp_path / ".npm", tmp_path / ".cache" / "pip"]


# A stand-in `npm` on PATH: it tries the test's server and npm's cache in HOME, and prints a report.
FAKE_NPM = """\
import json, os, socket, sys
report = {"argv": sys.argv[1:]}
try:
    with socket.create_connection(("127.0.0.1", int(os.environ["STEP_PORT"])), timeout=10) as conn:
        conn.sendall(b"GET /" + sys.argv[1].encode() + b" HTTP/1.0\\r\\n\\r\\n")
        conn.recv(100)
    report["network"] = "connected"
except OSError as exc:
    report["network"] = type(exc).__name__
try:
    with open(os.path.join(os.environ["HOME"], ".npm", "probe-" + sys.argv[1]), "w") as handle:
        handle.write("x")
    report["cache"] = "written"
except OSError as exc:
    report["cache"] = type(exc).__name__
print("NPM " + json.dumps(report), flush=True)
"""


@needs_bwrap
@XDIST_MODES
def test_install_steps_have_the_network_and_npms_cache_and_other_steps_do_not(
    pytester: pytest.Pytester,
    xdist: list[str],
    server: Server,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # in the project, which the sandbox shows (its /tmp is a private one)
    bin_dir, home = pytester.path / "bin", pytester.path / "home"
    write(bin_dir / "npm", f"#!{sys.executable}\n" + FAKE_NPM).chmod(0o755)
    home.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("STEP_PORT", str(server.port))
    config = make_config_dir(pytester.path)
    registry = load_json(config / "command-registry.json")
    registry["install"] = {"command": "npm", "args": ["install"], "env_passthrough": ["STEP_PORT"]}
    registry["run"] = {"command": "npm", "args": ["run"], "env_passthrough": ["STEP_PORT"]}
    registry["offline-install"] = {
        "command": "npm",
        "args": ["ci"],
        "network": False,
        "env_passthrough": ["STEP_PORT"],
    }
    write(config / "command-registry.json", json.dumps(registry))
    evals = load_json(config / "eval-config.json")
    evals["evaluations"]["add"]["buildSteps"] = ["install", "run", "offline-install", "compile"]
    write(config / "eval-config.json", json.dumps(evals))
    results = pytester.path / "results.json"
    result = run(
        pytester, "--vibe-sandbox", "bwrap", "--vibe-results", results, "-k", "add[oracle]", xdist=xdist
    )
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(results))["evals/config/eval-config.json::add[oracle]"]
    reports = {}
    for step in record["steps"]:
        for line in Path(step["log"]).read_text().splitlines():
            if line.startswith("NPM "):
                reports[step["name"]] = json.loads(line[4:])
    assert reports["install"] == {"argv": ["install"], "network": "connected", "cache": "written"}
    for name in ("run", "offline-install"):
        assert reports[name]["network"] in ("ConnectionRefusedError", "OSError"), reports
        assert reports[name]["cache"] == "OSError", reports  # the home folder is read-only
    assert server.paths == ["/install"]
    assert sorted(p.name for p in (home / ".npm").iterdir()) == ["probe-install"]
