"""End to end: YAML suites become pytest items, selected, run (serially and with xdist), summarised,
and written to the results JSON and JUnit XML."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import (
    PYTHON,
    XDIST_MODES,
    agent,
    comparable,
    evals_by_nodeid,
    load_json,
    run,
    run_of,
    run_summary,
    score_and_success_lines,
    write,
    write_cli_config,
)

# Names are chosen so that `-k` cannot match them in pytester's directory names.
EVALS = ("arith", "colour", "capital")
CONFIGS = ("inproc", "shell")

AGENT = """
import json, sys
prompt = sys.stdin.read()
answers = {"2 + 2": "4", "colour": "blue", "capital": "Paris"}
text = next((a for k, a in answers.items() if k in prompt), "?")
print(json.dumps({"result": text, "cost_usd": 0.002, "usage": {"in": 5, "out": 1}}))
"""

APP = """
def answer(prompt, context):
    text = "4" if "2 + 2" in prompt else "green" if "colour" in prompt else "Paris"
    return {"response": text, "cost": 0.01, "input_tokens": 7, "output_tokens": 1}
"""

EVAL_SPECS: list[dict[str, Any]] = [
    {"name": "arith", "prompt": "What is 2 + 2?", "checks": [{"match": "*4*"}, {"max_tokens": 10}]},
    {"name": "colour", "prompt": "What colour is the sky?", "checks": [{"match": "*blue*"}]},
    {"name": "capital", "prompt": "What is the capital of France?", "checks": [{"contains": "paris"}]},
]


def suite_yaml(
    name: str,
    configurations: dict[str, Any] | None = None,
    defaults: list[str] | None = None,
    formula: str = "success_pct / total_cost",
) -> str:
    suite: dict[str, Any] = {
        "metadata": {"name": name, "model": "test/model"},
        "evals": EVAL_SPECS,
        "score": {"formula": formula},
    }
    if configurations is not None:
        suite["configurations"] = configurations
    if defaults is not None:
        suite["default_configurations"] = defaults
    return yaml.safe_dump(suite, sort_keys=False)


def shell_config(script: str) -> dict[str, Any]:
    return {
        "cli": PYTHON,
        "args": [script],
        "output": {
            "format": "json",
            "response": "result",
            "cost": "cost_usd",
            "input_tokens": "usage.in",
            "output_tokens": "usage.out",
        },
    }


def demo_configurations(directory: Path, app_module: str = "vibe_e2e_app") -> dict[str, Any]:
    """A python configuration (module in ``directory``) and a cli one."""
    write(directory / f"{app_module}.py", APP)
    script = agent(directory, "shell_agent.py", AGENT)
    return {"inproc": {"python": f"{app_module}:answer"}, "shell": shell_config(script)}


def make_demo(root: Path, *, defaults: list[str] | None = None, folder: str = ".") -> Path:
    """The demo suite: 3 named evals × a python and a cli configuration."""
    directory = root / folder
    return write(directory / "demo.eval.yaml", suite_yaml("demo", demo_configurations(directory), defaults))


def item_ids(evals: tuple[str, ...], configs: tuple[str, ...]) -> set[str]:
    return {f"demo.eval.yaml::{e}[{c}]" for e in evals for c in configs}


def run_both(pytester: pytest.Pytester, *args: str) -> tuple[list[pytest.RunResult], list[dict[str, Any]]]:
    """The same selection serially and with -n 2; each run's results JSON."""
    results, data = [], []
    for mode, xdist in (("serial", []), ("xdist", ["-n", "2"])):
        path = pytester.path / f"results-{mode}.json"
        result = run(pytester, *args, "--vibe-results", str(path), xdist=xdist)
        results.append(result)
        data.append(load_json(path))
    return results, data


@pytest.mark.parametrize(
    ("args", "evals", "configs"),
    [
        pytest.param([], EVALS, CONFIGS, id="default"),
        pytest.param(["-k", "arith"], ("arith",), CONFIGS, id="k-eval"),
        pytest.param(["-k", "shell"], EVALS, ("shell",), id="k-config"),
        pytest.param(["--vibe-config", "shell"], EVALS, ("shell",), id="vibe-config"),
        pytest.param(["--vibe-eval", "arith"], ("arith",), CONFIGS, id="vibe-eval"),
        pytest.param(["--vibe-config", "ALL", "--vibe-eval", "ALL"], EVALS, CONFIGS, id="ALL"),
        pytest.param(
            ["--vibe-config", "inproc,shell", "--vibe-eval", "arith, capital"],
            ("arith", "capital"),
            CONFIGS,
            id="comma-lists",
        ),
    ],
)
def test_selection_serial_and_xdist_agree(
    pytester: pytest.Pytester, args: list[str], evals: tuple[str, ...], configs: tuple[str, ...]
) -> None:
    make_demo(pytester.path)
    expected = item_ids(evals, configs)
    (serial, xdist), (serial_data, xdist_data) = run_both(pytester, *args)
    for result, data in ((serial, serial_data), (xdist, xdist_data)):
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == len(expected), result.outlines
        assert set(evals_by_nodeid(data)) == expected
        colour_fails = "colour" in evals and "inproc" in configs
        assert result.ret == (1 if colour_fails else 0)
        if "-k" in args and result is serial:  # xdist's controller does not count deselected items
            assert outcomes["deselected"] == 6 - len(expected)
        assert {r["configuration"] for r in data["runs"]} == set(configs)
    assert comparable(serial_data) == comparable(xdist_data)
    assert score_and_success_lines(serial) == score_and_success_lines(xdist)
    assert score_and_success_lines(serial), serial.outlines


def test_full_run_results_and_summary(pytester: pytest.Pytester) -> None:
    """The values of a full run: scores, success, costs and tokens per configuration."""
    make_demo(pytester.path)
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path))
    result.assert_outcomes(passed=5, failed=1)
    data = load_json(path)
    inproc, shell = run_of(data, "inproc"), run_of(data, "shell")
    assert inproc["metrics"]["success_pct"] == pytest.approx(200 / 3)
    assert inproc["metrics"]["total_cost"] == pytest.approx(0.03)
    assert inproc["score"] == pytest.approx((200 / 3) / 0.03)
    assert shell["metrics"]["success_pct"] == 100.0
    assert shell["metrics"]["total_cost"] == pytest.approx(0.006)
    assert shell["score"] == pytest.approx(100 / 0.006)
    records = evals_by_nodeid(data)
    assert records["demo.eval.yaml::colour[inproc]"]["outcome"] == "failed"
    assert records["demo.eval.yaml::arith[shell]"]["input_tokens"] == 5
    assert records["demo.eval.yaml::arith[inproc]"]["input_tokens"] == 7
    assert records["demo.eval.yaml::arith[shell]"]["response"] == "4"
    summary = run_summary(result)
    assert "Score: 2222.22 (formula: success_pct / total_cost)" in summary
    assert "Score: 16666.67 (formula: success_pct / total_cost)" in summary
    assert "Success Rate: 66.7% (2/3)" in summary
    assert "Success Rate: 100.0% (3/3)" in summary


@pytest.mark.parametrize("key", ["default_configurations", "defaultConfigurations"])
def test_default_configurations_limit_the_default_selection(pytester: pytest.Pytester, key: str) -> None:
    if key == "default_configurations":
        make_demo(pytester.path, defaults=["inproc"])
    else:  # the unified runner's cli-config.json
        configurations = demo_configurations(pytester.path)
        write_cli_config(
            pytester.path / "cli-config.json",
            {"configurations": configurations, "defaultConfigurations": ["inproc"]},
        )
        write(pytester.path / "demo.eval.yaml", suite_yaml("demo"))
    for args, configs in (
        ([], ("inproc",)),
        (["--vibe-config", "ALL"], CONFIGS),
        (["--vibe-config", "shell"], ("shell",)),
    ):
        path = pytester.path / "results.json"
        run(pytester, *args, "--vibe-results", str(path))
        assert set(evals_by_nodeid(load_json(path))) == item_ids(EVALS, configs), args


def test_default_configurations_under_xdist(pytester: pytest.Pytester) -> None:
    make_demo(pytester.path, defaults=["shell"])
    (serial, xdist), (serial_data, xdist_data) = run_both(pytester)
    for data in (serial_data, xdist_data):
        assert set(evals_by_nodeid(data)) == item_ids(EVALS, ("shell",))
    assert comparable(serial_data) == comparable(xdist_data)
    assert score_and_success_lines(serial) == score_and_success_lines(xdist)


def test_nearest_cli_config_json_and_suite_configurations_win(pytester: pytest.Pytester) -> None:
    root = pytester.path
    script = agent(root, "shell_agent.py", AGENT)
    # The nearest cli-config.json walking up from suites/sub/ is suites/cli-config.json.
    write_cli_config(root / "cli-config.json", {"configurations": {"far": shell_config(script)}})
    write_cli_config(
        root / "suites" / "cli-config.json",
        {"configurations": {"near": shell_config(script), "near2": shell_config(script)}},
    )
    write(root / "suites" / "sub" / "inherits.eval.yaml", suite_yaml("inherits"))
    own = {"own": shell_config(script)}
    write(root / "suites" / "sub" / "own.eval.yaml", suite_yaml("own", own))
    path = root / "results.json"
    result = run(pytester, "--vibe-results", str(path))
    result.assert_outcomes(passed=9)
    ids = set(evals_by_nodeid(load_json(path)))
    base = "suites/sub/"
    assert ids == {
        *(f"{base}inherits.eval.yaml::{e}[{c}]" for e in EVALS for c in ("near", "near2")),
        *(f"{base}own.eval.yaml::{e}[own]" for e in EVALS),
    }


@XDIST_MODES
@pytest.mark.parametrize(
    ("option", "value", "expected"),
    [
        (
            "--vibe-config",
            "inprc",
            "--vibe-config: unknown 'inprc' (did you mean 'inproc'?); known: inproc, shell",
        ),
        (
            "--vibe-eval",
            "arith,colr",
            "--vibe-eval: unknown 'colr' (did you mean 'colour'?); known: arith, capital, colour",
        ),
    ],
)
def test_unknown_selection_is_a_usage_error(
    pytester: pytest.Pytester, xdist: list[str], option: str, value: str, expected: str
) -> None:
    make_demo(pytester.path)
    result = run(pytester, option, value, xdist=xdist)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {expected}" in result.errlines
    everything = "\n".join(result.outlines + result.errlines)
    assert "Traceback" not in everything
    assert "INTERNALERROR" not in everything
    assert not (pytester.path / ".vibeeval").exists()


@pytest.mark.parametrize(
    ("ini", "expected"),
    [
        (
            "vibe_config = inprc",
            "vibe_config (ini): unknown 'inprc' (did you mean 'inproc'?); known: inproc, shell",
        ),
        (
            "vibe_eval = colr",
            "vibe_eval (ini): unknown 'colr' (did you mean 'colour'?); known: arith, capital, colour",
        ),
    ],
)
def test_an_unknown_selection_in_the_ini_names_the_ini_value(
    pytester: pytest.Pytester, ini: str, expected: str
) -> None:
    make_demo(pytester.path)
    write(pytester.path / "pytest.ini", f"[pytest]\n{ini}\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"ERROR: {expected}" in result.errlines


@pytest.mark.parametrize("name", ["vibe_gate_only", "vibe_gc_freeze"])
def test_a_bad_boolean_in_the_ini_names_the_ini_value(pytester: pytest.Pytester, name: str) -> None:
    make_demo(pytester.path)
    write(pytester.path / "pytest.ini", f"[pytest]\n{name} = maybe\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert result.errlines[0] == (
        f"ERROR: {name} (ini): invalid truth value 'maybe'; use true or false (also: yes/no, on/off, 1/0)"
    )


def test_the_failure_message_starts_with_the_first_failed_check() -> None:
    from pytest_vibeeval.results import CheckRecord, EvalRecord
    from pytest_vibeeval.runner import failure_message

    checks = [
        CheckRecord(type="contains", passed=True, message="'x' is in the response"),
        CheckRecord(type="match", passed=False, message="pattern '*blue*' does not match the response"),
        CheckRecord(type="max_tokens", passed=False, message="12 output tokens > 10"),
    ]
    record = EvalRecord(name="e", nodeid="s::e[c]", outcome="failed", checks=checks, response="red")
    lines = failure_message(record).splitlines()
    assert lines[0] == "match: pattern '*blue*' does not match the response (and 1 more failed checks)"
    assert lines[1:5] == [
        "checks:",
        "  PASS contains: 'x' is in the response",
        "  FAIL match: pattern '*blue*' does not match the response",
        "  FAIL max_tokens: 12 output tokens > 10",
    ]


@XDIST_MODES
def test_run_summary_follows_the_short_test_summary(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_demo(pytester.path)
    result = run(pytester, xdist=xdist)
    lines = result.outlines
    short = next(i for i, line in enumerate(lines) if "short test summary info" in line)
    summary = next(i for i, line in enumerate(lines) if re.fullmatch(r"=+ Run Summary =+", line))
    assert short < summary
    # pytest shows the failure's first line there: it names the failed check
    failed = [line for line in lines[short:summary] if line.startswith("FAILED demo.eval.yaml::colour[")]
    assert failed and all(" - Failed: match: pattern '*blue*' does" in line for line in failed), failed
    block = run_summary(result)
    text = "\n".join(block)
    assert "demo × inproc  [demo.eval.yaml]" in block
    assert "demo × shell  [demo.eval.yaml]" in block
    assert len([line for line in block if line.startswith("Score: ")]) == 2
    assert "Score: 2222.22 (formula: success_pct / total_cost)" in block
    assert "Success Rate: 66.7% (2/3)" in block
    assert "Total Cost: $0.0300" in block
    assert "Total Cost: $0.0060" in block
    latency = [line for line in block if line.startswith("Latency: ")]
    assert len(latency) == 2
    for line in latency:
        assert re.fullmatch(r"Latency: avg [\d.]+m?s · min [\d.]+m?s · max [\d.]+m?s", line), line
    assert "  FAILED colour: match: pattern '*blue*' does not match the response" in block
    # The side-by-side table of the two configurations.
    table = block.index("demo: configurations side by side")
    assert block[table + 1].split() == [
        "configuration",
        "score",
        "success",
        "passed",
        "cost",
        "avg",
        "latency",
    ]
    assert block[table + 3].split()[:5] == ["inproc", "2222.22", "66.7%", "2/3", "$0.0300"]
    assert block[table + 4].split()[:5] == ["shell", "16666.67", "100.0%", "3/3", "$0.0060"]
    assert "results: " in text
    # Nothing from the plugin after the summary except pytest's final line.
    assert lines[-1].startswith("=") and "1 failed, 5 passed" in lines[-1]


def test_single_configuration_has_no_table(pytester: pytest.Pytester) -> None:
    make_demo(pytester.path)
    result = run(pytester, "--vibe-config", "shell")
    block = run_summary(result)
    assert "Success Rate: 100.0% (3/3)" in block
    assert not any("side by side" in line for line in block)


XFAIL_SUITE = """
metadata: {name: xf, model: test/model}
evals:
  - name: known_bad
    prompt: What colour is the sky?
    xfail: the app answers green
    checks: [{match: "*blue*"}]
  - name: fine
    prompt: What is 2 + 2?
    checks: [{match: "*4*"}]
configurations:
  inproc: {python: "vibe_xf_app:answer"}
"""


@XDIST_MODES
def test_xfail_eval_that_fails(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "vibe_xf_app.py", APP)
    write(pytester.path / "xf.eval.yaml", XFAIL_SUITE)
    path = pytester.path / "results.json"
    result = run(pytester, "-rx", "--vibe-results", str(path), xdist=xdist)
    result.assert_outcomes(passed=1, xfailed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["XFAIL xf.eval.yaml::known_bad[[]inproc[]]*the app answers green*"])
    data = load_json(path)
    record = evals_by_nodeid(data)["xf.eval.yaml::known_bad[inproc]"]
    assert record["outcome"] == "failed"
    assert record["xfail"] is True
    run_record = run_of(data, "inproc")
    assert run_record["metrics"]["failed"] == 1
    assert run_record["metrics"]["success_pct"] == 50.0
    assert "Success Rate: 50.0% (1/2)" in run_summary(result)


@XDIST_MODES
def test_xfail_eval_that_passes_fails_strictly(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "vibe_xf_app.py", APP)
    write(pytester.path / "xf.eval.yaml", XFAIL_SUITE.replace("*blue*", "*green*"))
    result = run(pytester, xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*the app answers green*"])
    # the Run Summary names the eval that failed the session
    assert any(
        line.startswith("  XPASS  ") and "its `xfail:` says it fails" in line for line in run_summary(result)
    )
    # under --runxfail the mark is ignored: the eval is an eval like any other
    ignored = run(pytester, "--runxfail", "--vibe-results", "r.json", xdist=xdist)
    ignored.assert_outcomes(passed=2)
    assert not any("XPASS" in line for line in run_summary(ignored))
    assert not any(r["xfail"] for r in evals_by_nodeid(load_json(pytester.path / "r.json")).values())


@XDIST_MODES
def test_suite_without_configuration_skips_with_how_to(
    pytester: pytest.Pytester, xdist: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No configuration: the implicit OpenRouter one, which needs its key (tests/test_http_provider.py
    runs it against a local server)."""
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("OPENROUTER_BASE_URL", raising=False)
    write(pytester.path / "bare.eval.yaml", suite_yaml("bare", formula="success_pct"))
    result = run(pytester, "-rs", xdist=xdist)
    result.assert_outcomes(skipped=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # nothing ran: not green
    result.stdout.fnmatch_lines(
        ["NOTHING RAN:*", "  3 × set OPENROUTER_API_KEY: configuration 'openrouter'*"]
    )
    how_to = "set OPENROUTER_API_KEY: configuration 'openrouter' calls https://openrouter.ai/api/v1"
    skipped = [line for line in result.outlines if line.startswith("SKIPPED ")]
    # Each skip is reported at its eval's line in the suite, not inside the plugin.
    assert len(skipped) == 3, result.outlines
    for line in skipped:
        assert re.fullmatch(rf"SKIPPED \[1\] bare\.eval\.yaml:\d+: {re.escape(how_to)}.*", line), line
    assert "Success Rate: n/a (0/0; 3 skipped)" in run_summary(result)
    records = evals_by_nodeid(load_json(pytester.path / ".vibeeval" / "results" / "latest.json"))
    assert {r["outcome"] for r in records.values()} == {"skipped"}
    assert all(how_to in (r["message"] or "") for r in records.values())


def _junit(path: Path) -> tuple[ET.Element, dict[str, dict[str, str]]]:
    """The test suite, and each test case's eval properties (``vibe.<name>``), read from the test
    suite's ``vibe.<node id>.<name>``: junit-10.xsd allows no properties on a test case."""
    root = ET.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    properties = {p.get("name", ""): p.get("value", "") for p in suite.iter("property")}
    cases = {}
    for case in suite.iter("testcase"):
        assert case.find("properties") is None
        nodeid = f"{case.get('classname')}::{case.get('name')}"  # the suite file is in the rootdir
        prefix = f"vibe.{nodeid}."
        cases[nodeid] = {
            f"vibe.{name.removeprefix(prefix)}": value
            for name, value in properties.items()
            if name.startswith(prefix)
        }
    return suite, cases


@XDIST_MODES
def test_junit_properties(pytester: pytest.Pytester, xdist: list[str]) -> None:
    configurations = demo_configurations(pytester.path)
    # A third configuration that reports no cost: its testcases have no vibe.cost.
    configurations["plain"] = {"cli": PYTHON, "args": [configurations["shell"]["args"][0]]}
    write(pytester.path / "demo.eval.yaml", suite_yaml("demo", configurations))
    xml_path = pytester.path / "junit.xml"
    results_path = pytester.path / "results.json"
    run(pytester, f"--junitxml={xml_path}", "--vibe-results", str(results_path), xdist=xdist)
    text = xml_path.read_text(encoding="utf-8")
    assert "vibeeval_run" not in text
    assert "vibeeval_result" not in text
    suite, cases = _junit(xml_path)
    assert len(cases) == 9
    data = load_json(results_path)
    records = evals_by_nodeid(data)
    for props in cases.values():
        assert props["vibe.configuration"] in (*CONFIGS, "plain")
        assert props["vibe.outcome"] in ("passed", "failed")
        assert float(props["vibe.latency"]) >= 0
        if props["vibe.configuration"] == "plain":
            assert "vibe.cost" not in props
        else:
            assert float(props["vibe.cost"]) in (0.01, 0.002)
    by_outcome = sorted(props["vibe.outcome"] for props in cases.values())
    assert by_outcome == sorted(r["outcome"] for r in records.values())
    shell_props = [p for p in cases.values() if p["vibe.configuration"] == "shell"]
    assert all(p["vibe.input_tokens"] == "5" and p["vibe.output_tokens"] == "1" for p in shell_props)
    properties = suite.find("properties")
    assert properties is not None
    global_props = {p.get("name"): p.get("value") for p in properties.iter("property")}
    for configuration in CONFIGS:
        expected = run_of(data, configuration)["score"]
        assert float(global_props[f"vibe.demo.eval.yaml[{configuration}].score"]) == pytest.approx(expected)
        assert (
            global_props[f"vibe.demo.eval.yaml[{configuration}].score_formula"] == "success_pct / total_cost"
        )
    assert float(global_props["vibe.demo.eval.yaml[inproc].success_pct"]) == pytest.approx(200 / 3)


def test_junit_private_xml_key_still_exists() -> None:
    """The plugin adds suite-level JUnit properties through this private pytest name (the public
    record_testsuite_property does not work under xdist). If pytest moves it, this fails loudly."""
    from _pytest.junitxml import LogXML, xml_key

    assert isinstance(xml_key, pytest.StashKey)
    assert callable(LogXML.add_global_property)


@XDIST_MODES
def test_no_results_file_without_eval_items(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makepyfile(test_plain="def test_ok():\n    pass\n")
    result = run(pytester, xdist=xdist)
    result.assert_outcomes(passed=1)
    assert not (pytester.path / ".vibeeval").exists()
    assert run_summary(result) == []


def test_default_results_location_under_the_rootdir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_demo(pytester.path, folder="evals")
    write(pytester.path / "pytest.ini", "[pytest]\n")
    # Run from a subfolder: the results go under the rootdir, not the working directory.
    monkeypatch.chdir(pytester.path / "evals")
    result = run(pytester)
    result.assert_outcomes(passed=5, failed=1)
    assert not (pytester.path / "evals" / ".vibeeval").exists()
    folder = pytester.path / ".vibeeval" / "results"
    names = sorted(p.name for p in folder.iterdir())
    assert len(names) == 2 and "latest.json" in names, names
    stamped = next(n for n in names if n != "latest.json")
    assert re.fullmatch(r"\d{8}T\d{6}Z\.json", stamped), stamped
    latest = load_json(folder / "latest.json")
    assert load_json(folder / stamped) == latest
    assert stamped == re.sub(r"[-:]", "", latest["started_at"]).replace("+0000", "Z") + ".json"
    assert {r["source"] for r in latest["runs"]} == {"evals/demo.eval.yaml"}
    result.stdout.fnmatch_lines([f"results: {folder / stamped}", f"results: {folder / 'latest.json'}"])
    # The mode any file the user writes gets (mkstemp alone would leave it 0600).
    umask = os.umask(0o022)
    os.umask(umask)
    for name in names:
        assert (folder / name).stat().st_mode & 0o777 == 0o666 & ~umask

    # A second run keeps the first file and updates latest.json.
    result = run(pytester, "--vibe-config", "shell")
    names_after = sorted(p.name for p in folder.iterdir())
    assert len(names_after) == 3 and stamped in names_after
    assert {r["configuration"] for r in load_json(folder / "latest.json")["runs"]} == {"shell"}


def test_worker_crash_is_counted_as_an_error(pytester: pytest.Pytester) -> None:
    """An item whose xdist worker dies has no result; it still counts, as an error."""
    write(pytester.path / "vibe_crash_app.py", "import os\n\ndef answer(prompt):\n    os._exit(7)\n")
    configurations = {
        "inproc": {"python": "vibe_e2e_app:answer"},
        "crashes": {"python": "vibe_crash_app:answer"},
    }
    write(pytester.path / "vibe_e2e_app.py", APP)
    write(pytester.path / "demo.eval.yaml", suite_yaml("demo", configurations, formula="success_pct"))
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-eval", "arith", "--vibe-results", str(path), xdist=["-n", "2"])
    result.assert_outcomes(passed=1, failed=1)
    crashed = evals_by_nodeid(load_json(path))["demo.eval.yaml::arith[crashes]"]
    assert crashed["outcome"] == "error"
    assert "crashed while running 'demo.eval.yaml::arith[crashes]'" in crashed["message"]
    assert run_of(load_json(path), "crashes")["metrics"]["errors"] == 1
    assert "Success Rate: 0.0% (0/1)" in run_summary(result)


@XDIST_MODES
def test_a_suite_that_fails_to_load_stops_only_itself(pytester: pytest.Pytester, xdist: list[str]) -> None:
    write(pytester.path / "app.py", "def answer(prompt):\n    return '4'\n")
    write(
        pytester.path / "good.eval.yaml",
        """
        metadata: {name: good, model: m}
        evals: [{name: a, prompt: "2 + 2", checks: [{match: "*4*"}]}]
        configurations: {app: {python: "app:answer"}}
        """,
    )
    write(
        pytester.path / "bad.eval.yaml",
        """
        metadata: {name: bad, model: m}
        evals: [{name: a, prompt: "x", checks: [{mtch: "*4*"}]}]
        """,
    )
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(results), xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert "bad.eval.yaml:2: evals[0].checks[0]: unknown check 'mtch' (did you mean 'match'?)" in output
    assert str(pytester.path) + "/bad.eval.yaml" not in output  # shown relative to the rootdir
    assert "1 suite file(s) failed to load and did not run (errors above): bad.eval.yaml" in output
    data = load_json(results)
    assert data["load_errors"] == ["bad.eval.yaml"]
    assert [run["suite"] for run in data["runs"]] == ["good"]


def test_a_python_collection_error_still_stops_the_run(pytester: pytest.Pytester) -> None:
    write(pytester.path / "app.py", "def answer(prompt):\n    return '4'\n")
    write(
        pytester.path / "good.eval.yaml",
        """
        metadata: {name: good, model: m}
        evals: [{name: a, prompt: "2 + 2", checks: [{match: "*4*"}]}]
        configurations: {app: {python: "app:answer"}}
        """,
    )
    write(pytester.path / "test_broken.py", "import no_such_module_q\n")
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])


@XDIST_MODES
@pytest.mark.parametrize("option", [["-v"], ["--vibe-breakdown"], ["-o", "vibe_breakdown=true"]])
def test_breakdown_with_verbose_or_option(
    pytester: pytest.Pytester, xdist: list[str], option: list[str]
) -> None:
    configurations = demo_configurations(pytester.path)
    formula = "(arith * 3 + colour * 2 + capital) / total_cost"
    write(pytester.path / "demo.eval.yaml", suite_yaml("demo", configurations, formula=formula))
    result = run(pytester, "--vibe-config", "inproc", *option, xdist=xdist)
    block = run_summary(result)
    score = block.index(f"Score: 133.33 (formula: {formula})")
    assert block[score + 1] == "  (1 * 3 + 0 * 2 + 1) / 0.03 = 133.33"


def test_no_breakdown_by_default(pytester: pytest.Pytester) -> None:
    make_demo(pytester.path)
    result = run(pytester, "--vibe-config", "inproc")
    block = run_summary(result)
    score = next(i for i, line in enumerate(block) if line.startswith("Score: "))
    assert block[score + 1].startswith("Success Rate: ")
