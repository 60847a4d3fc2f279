"""Every example of the documentation's "Extending" page, run as a third-party plugin would be: the
code block is written to its own module and loaded with ``-p``, beside a suite that uses it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, evals_by_nodeid, load_json, run, run_of, write

EXTENDING = Path(__file__).resolve().parent.parent / "docs" / "extending.md"


def documented_examples() -> dict[str, str]:
    """The Extending page's code blocks, by the hook their heading names."""
    text = EXTENDING.read_text(encoding="utf-8")
    found = re.findall(r"\n## [^\n]*`(pytest_vibeeval_\w+)`\n(?:(?!\n## ).)*?```python\n(.*?)```", text, re.S)
    return dict(found)


EXAMPLES = documented_examples()


def use_plugin(pytester: pytest.Pytester, hook: str) -> tuple[str, str]:
    """The documented example for ``hook`` as the module ``vibe_example_<hook>``: ``-p`` loads it."""
    name = f"vibe_example_{hook.removeprefix('pytest_vibeeval_')}"
    write(pytester.path / f"{name}.py", EXAMPLES[hook])
    pytester.syspathinsert()  # importable in an in-process run too, as an installed plugin is
    return "-p", name


def test_every_hook_has_a_documented_example() -> None:
    from pytest_vibeeval import hookspecs

    hooks = {name for name in vars(hookspecs) if name.startswith("pytest_vibeeval_")}
    assert set(EXAMPLES) == hooks


APP = "def answer(prompt, context):\n    return 'Hello world' if 'hi' in prompt else 'Goodbye'\n"


@XDIST_MODES
def test_check_type_example(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "checks.eval.yaml",
        """
        metadata: {name: checks, model: m}
        configurations: {app: {python: "app:answer"}}
        evals:
          - {name: greets, prompt: hi, checks: [{starts_with: Hello}]}
          - {name: leaves, prompt: bye, checks: [{or: [{starts_with: Hello}, {match: "*world*"}]}]}
        """,
    )
    result = run(pytester, *use_plugin(pytester, "pytest_vibeeval_register_checks"), xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*response does not start with 'Hello'*"])


@XDIST_MODES
def test_output_parser_example(pytester: pytest.Pytester, xdist: list[str]) -> None:
    agent = write(
        pytester.path / "agent.py", "import json\nprint(json.dumps({'SAID': 'Paris', 'USD': 0.25}))\n"
    )
    write(
        pytester.path / "parse.eval.yaml",
        f"""
        metadata: {{name: parse, model: m}}
        configurations:
          loud: {{cli: "{PYTHON}", args: ["{agent}"], output: {{parser: shouty}}}}
        evals:
          - {{name: capital, prompt: Capital of France?, checks: [{{contains: paris}}]}}
        """,
    )
    out = pytester.path / "results.json"
    plugin = use_plugin(pytester, "pytest_vibeeval_register_parsers")
    run(pytester, *plugin, "--vibe-results", out, xdist=xdist).assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(out))["parse.eval.yaml::capital[loud]"]
    assert (record["response"], record["cost"]) == ("Paris", 0.25)


def test_an_unknown_parser_is_an_error_without_the_plugin(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "parse.eval.yaml",
        """
        metadata: {name: parse, model: m}
        configurations: {loud: {cli: "true", output: {parser: shouty}}}
        evals: [{name: capital, prompt: p, checks: [{contains: paris}]}]
        """,
    )
    result = run(pytester)
    result.stdout.fnmatch_lines(["*unknown output parser 'shouty'*"])
    assert result.ret != 0


@XDIST_MODES
def test_formula_preset_and_run_variable_examples(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "score.eval.yaml",
        """
        metadata: {name: score, model: m}
        configurations: {app: {python: "app:answer"}}
        evals:
          - {name: greets, prompt: hi, checks: [{contains: hello}]}
          - {name: leaves, prompt: bye, checks: [{contains: hello}]}
        score: {formula: harsh}
        """,
    )
    write(
        pytester.path / "longest.eval.yaml",
        """
        metadata: {name: longest, model: m}
        configurations: {app: {python: "app:answer"}}
        evals: [{name: greets, prompt: hi, checks: [{contains: hello}]}]
        score: {formula: longest_answer * 2}
        """,
    )
    out = pytester.path / "results.json"
    plugins = (
        *use_plugin(pytester, "pytest_vibeeval_register_formula_presets"),
        *use_plugin(pytester, "pytest_vibeeval_register_run_variables"),
    )
    run(pytester, *plugins, "--vibe-results", out, xdist=xdist).assert_outcomes(passed=2, failed=1)
    results = load_json(out)
    preset_run = run_of(results, "app", "score")
    assert preset_run["score_preset"] == "harsh"
    assert preset_run["score"] == 40.0  # success_pct 50 - 1 failure × 10
    longest = run_of(results, "app", "longest")
    assert longest["score"] == 22.0  # "Hello world" × 2
    assert longest["metrics"]["longest_answer"] == 11.0
    assert longest["variables"]["longest_answer"] == 11.0


def test_a_custom_preset_or_variable_is_unknown_without_its_plugin(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "score.eval.yaml",
        """
        metadata: {name: score, model: m}
        configurations: {app: {python: "app:answer"}}
        evals: [{name: greets, prompt: hi, checks: [{contains: hello}]}]
        score: {formula: longest_answer * 2}
        """,
    )
    result = run(pytester)
    result.stdout.fnmatch_lines(["*score.formula: unknown variable 'longest_answer'*"])


def test_registering_a_built_in_name_is_a_usage_error(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "clash.py",
        "def pytest_vibeeval_register_formula_presets(registry):\n    registry.register('vybes', 'passed')\n",
    )
    pytester.syspathinsert()
    result = run(pytester, "-p", "clash")
    result.stderr.fnmatch_lines(
        ["*pytest_vibeeval_register_formula_presets: formula preset 'vybes' is already*"]
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR


@XDIST_MODES
def test_provider_example(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "echo.eval.yaml",
        """
        metadata: {name: echo, model: m}
        configurations:
          echo: {provider: echo, model: v1}
          app: {python: "app:answer"}
        evals: [{name: greets, prompt: hi there, checks: [{contains: "echo: hi there"}]}]
        """,
    )
    out, store = pytester.path / "results.json", pytester.path / "answers"
    plugin = use_plugin(pytester, "pytest_vibeeval_make_provider")
    result = run(pytester, *plugin, "--vibe-results", out, "--vibe-record", store, xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)  # app answers "Hello world": the built-in still serves it
    records = evals_by_nodeid(load_json(out))
    assert records["echo.eval.yaml::greets[echo]"]["outcome"] == "passed"
    assert records["echo.eval.yaml::greets[app]"]["outcome"] == "failed"
    stored = [json.loads(path.read_text()) for path in store.rglob("*.json")]
    assert {entry["configuration"] for entry in stored} == {"echo", "app"}  # recorded like any other


def test_a_provider_no_plugin_provides_is_an_error(pytester: pytest.Pytester) -> None:
    write(
        pytester.path / "echo.eval.yaml",
        """
        metadata: {name: echo, model: m}
        configurations: {echo: {provider: echo}}
        evals: [{name: greets, prompt: hi, checks: [{contains: hi}]}]
        """,
    )
    result = run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no installed plugin provides `provider: echo`*"])


@XDIST_MODES
def test_result_writer_example(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "app.py", APP)
    write(
        pytester.path / "write.eval.yaml",
        """
        metadata: {name: write, model: m}
        configurations: {app: {python: "app:answer"}}
        evals: [{name: greets, prompt: hi, checks: [{contains: hello}]}]
        """,
    )
    plugin = use_plugin(pytester, "pytest_vibeeval_write_results")
    result = run(pytester, *plugin, xdist=xdist)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*scores: *scores.csv"])
    assert (pytester.path / "scores.csv").read_text().splitlines() == [
        "suite,configuration,score",
        "write,app,100.0",
    ]


BROKEN_PLUGIN = """
import pytest
from pytest_vibeeval import CheckType


def _raises(value, response):
    return {}["missing"]


def _says_yes(value, response):
    return True


@pytest.hookimpl
def pytest_vibeeval_register_checks(registry):
    registry.register(CheckType("crashes", str, _raises, "raises"))
    registry.register(CheckType("says_yes", str, _says_yes, "returns no Verdict"))


@pytest.hookimpl
def pytest_vibeeval_write_results(config, results, results_path):
    raise OSError("disk full")
"""


@XDIST_MODES
def test_a_plugin_that_raises_errors_the_eval_or_its_writer_not_the_session(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A third-party check type that raises or returns no Verdict errors its eval with a message
    naming the check and where (the answer's latency kept); a result writer that raises is a line
    of the Run Summary, and pytest's own summary, the other writers and the results still come."""
    write(pytester.path / "app.py", APP)
    write(pytester.path / "vibe_broken.py", BROKEN_PLUGIN)
    pytester.syspathinsert()
    write(
        pytester.path / "broken.eval.yaml",
        """
        metadata: {name: broken, model: m}
        configurations: {app: {python: "app:answer"}}
        evals:
          - {name: crashes, prompt: hi, checks: [{crashes: x}]}
          - {name: says-yes, prompt: hi, checks: [{says_yes: x}]}
          - {name: fine, prompt: hi, checks: [{contains: hello}]}
        """,
    )
    result = run(pytester, "-p", "vibe_broken", "--vibe-results", "r.json", xdist=xdist)
    result.assert_outcomes(passed=1, failed=2)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "pytest_vibeeval/" not in output, output
    records = {r["name"]: r for r in evals_by_nodeid(load_json(pytester.path / "r.json")).values()}
    crashed, said = records["crashes"], records["says-yes"]
    assert crashed["outcome"] == "error" and crashed["latency"] is not None
    assert crashed["message"].startswith("check 'crashes' raised KeyError: 'missing' (at vibe_broken.py:6)")
    assert said["message"].startswith("check 'says_yes' returned True; a check type's evaluate returns a ")
    result.stdout.fnmatch_lines(
        ["*short test summary info*", "*Run Summary*", "result writer vibe_broken failed: OSError: disk*"]
    )


WRAPPING_WRITERS = """
import pytest


class Wrapper:
    @pytest.hookimpl(wrapper=True)
    def pytest_vibeeval_write_results(self, config, results, results_path):
        lines = yield
        return [*lines, ["wrapped"]]


def pytest_configure(config):
    config.pluginmanager.register(Wrapper(), "wrapper-plugin")


def pytest_vibeeval_write_results(config, results, results_path):
    return ["plain writer"]
"""


@XDIST_MODES
def test_result_writers_wrapped_by_a_plugin_still_write(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "app.py", APP)
    write(pytester.path / "conftest.py", WRAPPING_WRITERS)
    write(
        pytester.path / "w.eval.yaml",
        """
        metadata: {name: w, model: m}
        configurations: {app: {python: "app:answer"}}
        evals: [{name: greets, prompt: hi, checks: [{contains: hello}]}]
        """,
    )
    result = run(pytester, xdist=xdist)
    result.assert_outcomes(passed=1)
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["plain writer", "wrapped"])
