"""Paths in configurations: a relative `cli`, `${CONFIG_DIR}`, and secrets rendered only by the provider."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, evals_by_nodeid, load_json, run, write

from pytest_vibeeval.loading.templates import Renderer, TemplateValues
from pytest_vibeeval.models import Configuration
from pytest_vibeeval.providers import PromptRequest
from pytest_vibeeval.providers.cli import CliProvider

AGENT = """\
#!{python}
import json, sys
print(json.dumps({{"argv": sys.argv[1:], "stdin": sys.stdin.read()}}))
"""


def _agent(path: Path) -> None:
    write(path, AGENT.format(python=PYTHON))
    path.chmod(0o755)


@XDIST_MODES
def test_relative_cli_and_config_dir_resolve_against_the_defining_file(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    _agent(pytester.path / "configs" / "bin" / "agent")
    write(pytester.path / "configs" / "data.txt", "x")
    (pytester.path / "configs" / "cli-config.json").write_text(
        json.dumps(
            {
                "configurations": {
                    "rel": {"name": "Relative", "cli": "./bin/agent", "args": ["${CONFIG_DIR}/data.txt"]},
                    "abs": {"name": "Absolute", "cli": PYTHON, "args": ["${CONFIG_DIR}/bin/agent"]},
                }
            }
        )
    )
    write(
        pytester.path / "configs" / "suites" / "paths.eval.yaml",
        """
        metadata: {name: paths, model: m}
        evals:
          - name: ask
            prompt: hello
            checks: [{match: "*hello*"}]
        """,
    )
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(results), xdist=xdist)
    result.assert_outcomes(passed=2)
    records = evals_by_nodeid(load_json(results))
    rel = records["configs/suites/paths.eval.yaml::ask[rel]"]
    config_dir = str(pytester.path / "configs")
    assert json.loads(rel["response"])["argv"] == [f"{config_dir}/data.txt"]
    assert rel["steps"][0]["argv"][0] == f"{config_dir}/bin/agent"


def test_a_missing_cli_path_is_an_error_naming_the_resolved_path(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "s.eval.yaml",
        """
        metadata: {name: s, model: m}
        evals: [{name: ask, prompt: hi, checks: [{match: "*"}]}]
        configurations:
          gone: {cli: ./no/such/agent}
        """,
    )
    result = run(pytester, "--vibe-results", "r.json")
    result.assert_outcomes(failed=1)  # a typo in a path is an error, not a skip that leaves CI green
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (record,) = load_json(pytester.path / "r.json")["runs"][0]["evals"]
    assert record["outcome"] == "error"
    assert record["message"] == (
        f"configuration 'gone': executable '{pytester.path}/no/such/agent' does not exist; fix its "
        "`cli:` path (a relative path is resolved from the file that defines the configuration)"
    )


@XDIST_MODES
def test_secret_rendered_only_in_args_is_redacted_from_the_first_eval_on(
    pytester: pytest.Pytester, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIBE_SECRET_API", "topsecret987")
    agent = pytester.path / "agent.py"
    _agent(agent)
    write(
        pytester.path / "s.eval.yaml",
        f"""
        metadata: {{name: s, model: m}}
        evals:
          - {{name: first, prompt: one, checks: [{{match: "*nothing-matches*"}}]}}
          - {{name: second, prompt: two, checks: [{{match: "*nothing-matches*"}}]}}
        configurations:
          leaky:
            cli: {PYTHON}
            args: ["{agent}", "token is {{{{secret('api')}}}}"]
        """,
    )
    results = pytester.path / "results.json"
    xml = pytester.path / "junit.xml"
    result = run(pytester, "-rA", "--vibe-results", str(results), f"--junitxml={xml}", xdist=xdist)
    result.assert_outcomes(failed=2)
    produced = result.stdout.str() + result.stderr.str() + results.read_text() + xml.read_text()
    assert "topsecret987" not in produced
    records = evals_by_nodeid(load_json(results))
    for eval_id in ("first", "second"):
        record = records[f"s.eval.yaml::{eval_id}[leaky]"]
        assert "token is [secret]" in record["response"]
        assert "token is [secret]" in record["steps"][0]["argv"]


@XDIST_MODES
def test_missing_value_in_args_skips_and_leaks_nothing(
    pytester: pytest.Pytester, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VIBE_SECRET_TOK", "hunter2-secret")
    agent = pytester.path / "agent.py"
    _agent(agent)
    write(
        pytester.path / "s.eval.yaml",
        f"""
        metadata: {{name: s, model: m}}
        evals: [{{name: ask, prompt: hi, checks: [{{match: "*"}}]}}]
        configurations:
          partial:
            cli: {PYTHON}
            args: ["{agent}", "{{{{var('nope')}}}}"]
            env: {{TOKEN: "{{{{secret('tok')}}}}"}}
        """,
    )
    results = pytester.path / "results.json"
    xml = pytester.path / "junit.xml"
    result = run(pytester, "-rs", "--vibe-results", str(results), f"--junitxml={xml}", xdist=xdist)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*template var 'nope' has no value: pass --vibe-var nope=VALUE*"])
    produced = result.stdout.str() + result.stderr.str() + results.read_text() + xml.read_text()
    assert "hunter2-secret" not in produced
    assert "Traceback" not in produced


def test_template_objects_do_not_show_the_environment_or_secrets() -> None:
    from pytest_vibeeval.loading.templates import Redactor, Renderer, TemplateValues

    values = TemplateValues(environ={"VIBE_SECRET_TOK": "hunter2-secret"})
    renderer = Renderer(values)
    assert renderer.render("{{secret('tok')}}") == "hunter2-secret"
    shown = repr(renderer) + repr(values) + repr(Redactor(renderer.used_secrets))
    assert "hunter2-secret" not in shown


def test_a_suites_default_configurations_pick_among_a_cli_config_json(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "cli-config.json",
        json.dumps(
            {
                "configurations": {
                    "a": {"name": "A", "cli": "true"},
                    "b": {"name": "B", "cli": "true"},
                    "c": {"name": "C", "cli": "true"},
                },
                "defaultConfigurations": ["a", "b"],
            }
        ),
    )
    write(
        pytester.path / "own.eval.yaml",
        """
        metadata: {name: own, model: m}
        default_configurations: [c]
        evals:
          - {name: e, prompt: hi, checks: [{match: "*"}]}
        """,
    )
    write(
        pytester.path / "file.eval.yaml",
        """
        metadata: {name: file, model: m}
        evals:
          - {name: e, prompt: hi, checks: [{match: "*"}]}
        """,
    )
    result = run(pytester, "--collect-only", "-q")
    collected = [line for line in result.outlines if "::" in line]
    assert collected == ["file.eval.yaml::e[a]", "file.eval.yaml::e[b]", "own.eval.yaml::e[c]"]
    write(
        pytester.path / "own.eval.yaml",
        """
        metadata: {name: own, model: m}
        default_configurations: [d]
        evals:
          - {name: e, prompt: hi, checks: [{match: "*"}]}
        """,
    )
    result = run(pytester, "--collect-only", "-q")
    assert "own.eval.yaml: default configuration 'd' is not defined" in result.stdout.str()


@XDIST_MODES
@pytest.mark.parametrize("kind", ["folder", "broken-link", "link-loop"])
def test_a_cli_config_json_that_is_no_readable_file_is_an_error_not_skipped(
    pytester: pytest.Pytester, kind: str, xdist: list[str]
) -> None:
    """Skipping it would run the suite on the implicit OpenRouter configuration (or a parent
    folder's cli-config.json): another model than the one configured."""
    write(
        pytester.path / "s.eval.yaml",
        """
        metadata: {name: s, model: x}
        evals:
          - {name: a, prompt: hi, checks: [{match: "*4*"}]}
        """,
    )
    config = pytester.path / "cli-config.json"
    if kind == "folder":
        config.mkdir()
    else:
        config.symlink_to("missing.json" if kind == "broken-link" else "cli-config.json")
    result = run(pytester, "--vibe-history=", xdist=xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    problem = {
        "folder": "cannot read it: not a regular file but a folder",
        "broken-link": "cannot read the file: No such file or directory",
        "link-loop": "cannot read it: Too many levels of symbolic links",
    }[kind]
    assert f"cli-config.json: {problem}" in output, output
    assert "openrouter" not in output and "OPENROUTER_API_KEY" not in output, output


def test_an_explicit_cli_path_is_looked_at_once_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _agent(tmp_path / "bin" / "agent")
    configuration = Configuration.model_validate({"cli": "bin/agent", "args": ["a"]})
    provider = CliProvider("c", configuration, Renderer(TemplateValues()), tmp_path)
    looked: list[str] = []
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: looked.append(path) or real_access(path, mode))
    request = PromptRequest("p", "m", None, "s", "e", "c", tmp_path)
    assert json.loads(provider.answer(request).text) == {"argv": ["a"], "stdin": "p"}
    assert looked == [str(tmp_path / "bin" / "agent")]  # by missing_path(): the run does not again
