"""The bundled examples run without API keys, exit 0, and show passing and failing evals.

The TypeScript problems (coding-agent's roman-numerals, runner-repository's word-stats) need node
and npm (skipped without them) and, for their first `npm ci`, the npm registry (later runs use
npm's cache).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import NO_HISTORY
from shared_runs import REPO, SHARED_RUN_TIMEOUT, ExamplesRun, examples_run

CODING_AGENT = "examples/coding-agent/evals/config"
RUNNER_REPOSITORY = "examples/runner-repository/evals/config"
# The TypeScript problems declare `"requires": ["node", "npm"]`: skipped without them.
HAS_NODE = all(shutil.which(tool) for tool in ("node", "npm"))
HAS_SEMANTIC = importlib.util.find_spec("sentence_transformers") is not None
NO_NODE = "node and npm are not on PATH: the TypeScript example problem roman-numerals is skipped"
pytestmark = pytest.mark.examples_run


@pytest.fixture(params=[[], ["-n", "2"]], ids=["serial", "xdist"])
def examples(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> ExamplesRun:
    """`pytest examples` in the checkout, serially and with `-n 2`: each run made once per session
    and read by every test here (and tests/test_html_report.py) that checks what it did."""
    run = examples_run(tmp_path_factory, request.param)
    run.assert_ok()
    return run


@SHARED_RUN_TIMEOUT  # the TypeScript problems' items run `npm ci`, tsc, eslint and vitest
def test_examples_run_end_to_end(examples: ExamplesRun) -> None:
    stdout = examples.stdout
    assert "Run Summary" in stdout
    assert "Traceback" not in stdout + examples.stderr
    before, after = examples.vibeeval_before_and_after
    assert after == before, "the run wrote into the checkout's .vibeeval"
    data = examples.results
    runs = examples.runs()
    assert set(runs) == {
        ("support-bot", "app"),
        ("orders", "app"),  # checks on JSON answers, tool calls, cost, latency and python checks
        ("quiz", "quiz-json"),
        ("quiz", "quiz-text"),
        ("known-failures", "quiz-json"),
        ("known-failures", "quiz-text"),
        ("graded", "quiz-json"),  # the suite's default_configurations pick one of cli-config.json's
        (CODING_AGENT, "oracle"),
        (CODING_AGENT, "nop"),  # expected to fail: `xfail` in its configuration
        (RUNNER_REPOSITORY, "oracle"),  # tests/test_runner_example.py (also runs `sloppy`)
        (RUNNER_REPOSITORY, "nop"),
        ("geography", "sonnet"),  # recorded answers: the judge's verdict comes from the store too
        ("tracker-mcp", "openrouter"),  # OpenRouter's API pointed at a local stand-in, with MCP tools
        ("glossary", "app"),  # examples/response-cache: tests/test_examples.py runs it twice, cached
        ("triage", "app"),  # examples/graded-judge: tests/test_examples.py checks its scores and metrics
        ("datasets", "app"),  # examples/datasets: one item per row
        ("booking", "app"),  # examples/conversations: evals with turns
    }
    tracker = {record["name"]: record for record in runs["tracker-mcp", "openrouter"]["evals"]}
    assert all(record["outcome"] == "passed" for record in tracker.values()), tracker
    assert [call["tool"] for call in tracker["create-issue"]["tool_calls"]] == ["mcp__tracker__create_issue"]
    geography = {record["name"]: record for record in runs["geography", "sonnet"]["evals"]}
    river = geography["longest-river"]
    assert river["outcome"] == "passed"
    assert river["checks"][1]["message"] == "judge: the response names the Nile"
    assert river["judge_cost"] == 0.00049 and river["cost"] == 0.00021  # the judge's apart
    if HAS_SEMANTIC:
        assert geography["capital-france"]["outcome"] == "passed"
    else:
        assert "pytest-vibeeval[semantic]" in geography["capital-france"]["message"]
    booking = {record["name"]: record for record in runs["booking", "app"]["evals"]}
    table = booking["book-a-table"]
    assert table["outcome"] == "passed" and [t["outcome"] for t in table["turns"]] == ["passed"] * 3
    assert table["turns"][2]["response"] == "Booked: a table for 5 people at 7pm."
    assert table["cost"] == pytest.approx(sum(t["cost"] for t in table["turns"]))
    assert booking["change-time[dinner]"]["outcome"] == "passed"
    cancel = booking["cancel"]
    assert cancel["xfail"] and [t["outcome"] for t in cancel["turns"]] == ["passed", "failed", "not_run"]
    assert "FAILED cancel: turn 2/3: contains: response does not contain 'cancelled'" in stdout
    assert runs["support-bot", "app"]["metrics"]["success_pct"] == 100.0
    assert runs["orders", "app"]["metrics"]["success_pct"] == 100.0
    assert runs["support-bot", "app"]["score"] is not None
    assert runs["support-bot", "app"]["gate"]["passed"] is True
    assert runs["quiz", "quiz-json"]["metrics"]["total_cost"] > 0
    assert runs["quiz", "quiz-text"]["metrics"]["total_cost"] is None
    graded = runs["graded", "quiz-json"]
    assert graded["score_preset"] == "rubric" and graded["grade"] in ("A+", "A", "B", "C", "D", "F")
    lookups = {r["name"]: r["transcript"]["tools"]["lookup_fact"] for r in graded["evals"]}
    assert lookups["out-of-table"] == {"calls": 1, "succeeded": 0, "failed": 1}
    assert lookups["capital-fact"] == {"calls": 1, "succeeded": 1, "failed": 0}
    failures = runs["known-failures", "quiz-json"]
    assert failures["metrics"]["passed"] == 1 and failures["metrics"]["failed"] == 2
    assert runs[CODING_AGENT, "oracle"]["metrics"]["success_pct"] == 100.0
    assert runs[CODING_AGENT, "nop"]["metrics"]["success_pct"] == 0.0
    assert all(record["xfail"] for record in runs[CODING_AGENT, "nop"]["evals"])
    assert "Subtasks: " in stdout  # partial credit in the Run Summary
    assert "FAILED slugify: grade step 'test:public' exited with code 1" in stdout
    coding = {record["name"]: record for record in runs[CODING_AGENT, "oracle"]["evals"]}
    assert coding["slugify"]["outcome"] == "passed"
    if HAS_NODE:
        roman = coding["roman-numerals"]
        assert roman["outcome"] == "passed", roman["message"]
        assert (roman["subtasks_passed"], roman["subtasks_total"]) == (10, 10)
    else:
        assert coding["roman-numerals"]["outcome"] == "skipped"
    # the TypeScript problem in the runner's layout: full marks and partial credit by its rules
    [word_stats] = runs[RUNNER_REPOSITORY, "oracle"]["evals"]
    if HAS_NODE:
        assert word_stats["outcome"] == "passed", word_stats["message"]
        assert runs[RUNNER_REPOSITORY, "oracle"]["variables"]["word-stats_vybes"] == 200.0
        assert runs[RUNNER_REPOSITORY, "nop"]["variables"]["word-stats_vybes"] == 40.0
        assert runs[RUNNER_REPOSITORY, "nop"]["evals"][0]["xfail"]
    else:
        assert word_stats["outcome"] == "skipped"
    checks_used = {
        check["type"]
        for run in data["runs"]
        for record in run["evals"]
        for check in record["checks"]
        for check in [check, *check.get("children", [])]
    }
    assert {
        "match",
        "not_match",
        "min_tokens",
        "max_tokens",
        "or",
        "regex",
        "equals",
        "contains",
    } <= checks_used


def coding_agent_records(examples: ExamplesRun, evaluation: str) -> dict[str, dict[str, Any]]:
    """Both example agents' (oracle, nop) records of one problem of examples/coding-agent."""
    runs = examples.runs()
    return {
        config: next(r for r in runs[CODING_AGENT, config]["evals"] if r["name"] == evaluation)
        for config in ("oracle", "nop")
    }


@SHARED_RUN_TIMEOUT
def test_coding_agent_example_oracle_passes_and_nop_fails_at_a_grade_step(examples: ExamplesRun) -> None:
    records = coding_agent_records(examples, "slugify")
    oracle, nop = records["oracle"], records["nop"]
    assert oracle["outcome"] == "passed"
    assert [(s["phase"], s["name"], s["exit_code"]) for s in oracle["steps"]] == [
        ("agent", "oracle", 0),
        ("build", "compile", 0),
        ("grade", "test:public", 0),
        ("grade", "test:hidden", 0),
    ]
    assert (nop["outcome"], nop["xfail"]) == ("failed", True)
    assert [(s["phase"], s["name"], s["exit_code"]) for s in nop["steps"]] == [
        ("agent", "nop", 0),
        ("build", "compile", 0),
        ("grade", "test:public", 1),
        ("grade", "test:hidden", 1),
    ]
    assert nop["message"].startswith("grade step 'test:public' exited with code 1")
    assert "(grade steps 'test:hidden' failed too)" in nop["message"]
    assert "AssertionError: 'hello,-world!' != 'hello-world'" in nop["message"]
    # unittest writes no results file: no partial credit
    assert (oracle["subtasks_total"], nop["subtasks_total"]) == (None, None)
    # the oracle wrote its solution into the item's copy, never into the template
    template = REPO / "examples/coding-agent/evals/problems/slugify/workspace/slugify.py"
    assert "return title.lower()" in template.read_text()


@pytest.mark.skipif(not HAS_NODE, reason=NO_NODE)
@SHARED_RUN_TIMEOUT
def test_typescript_example_counts_vitest_subtasks(examples: ExamplesRun) -> None:
    """roman-numerals: npm ci, then vitest on the public and the hidden tests, each writing JUnit XML."""
    records = coding_agent_records(examples, "roman-numerals")
    oracle, nop = records["oracle"], records["nop"]
    assert oracle["outcome"] == "passed", oracle["message"]
    assert [(s["phase"], s["name"], s["exit_code"]) for s in oracle["steps"]] == [
        ("agent", "oracle", 0),
        ("build", "npm-ci", 0),
        ("grade", "vitest:public", 0),
        ("grade", "vitest:hidden", 0),
    ]
    assert (oracle["subtasks_passed"], oracle["subtasks_total"]) == (10, 10)  # 4 public + 6 hidden
    assert oracle["message"] is None  # no results file was ignored (vitest's own cache is off)
    assert (nop["outcome"], nop["xfail"]) == ("failed", True)
    assert [(s["phase"], s["name"], s["exit_code"]) for s in nop["steps"]] == [
        ("agent", "nop", 0),
        ("build", "npm-ci", 0),
        ("grade", "vitest:public", 1),
        ("grade", "vitest:hidden", 1),
    ]
    # every grade step runs, so the stub's partial credit counts over all 10 tests
    assert (nop["subtasks_passed"], nop["subtasks_total"]) == (1, 10)
    assert nop["message"].startswith("grade step 'vitest:public' exited with code 1")
    assert "expected 'IIII' to be 'IV'" in nop["message"]
    # npm ci ran in the item's copy: the template holds no node_modules and the stub is unchanged
    template = REPO / "examples/coding-agent/evals/problems/roman-numerals/workspace"
    assert not (template / "node_modules").exists()
    assert "not implemented" in (template / "src/roman.ts").read_text()


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_response_cache_example_answers_its_second_run_from_the_cache(
    tmp_path: Path, xdist: list[str]
) -> None:
    cache = tmp_path / "cache"
    runs = []
    for attempt in ("first", "second"):
        results = tmp_path / f"{attempt}.json"
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "examples/response-cache", "-p", "no:cacheprovider",
             f"--vibe-cache={cache}", "--vibe-results", str(results), NO_HISTORY, *xdist],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        runs.append((proc.stdout, json.loads(results.read_text())["runs"][0]["evals"]))
    (first_out, first), (second_out, second) = runs
    assert "Cache: 0 answers from cache, 3 asked" in first_out
    assert "Cache: 3 answers from cache, 0 asked" in second_out
    assert "; llm_judge: 1 answer from cache, 0 asked; " in second_out  # the judge's verdict too
    assert not any(record["cached"] for record in first)
    assert all(record["cached"] for record in second)
    assert [(r["latency"], r["cost"], r["judge_cost"]) for r in second] == [
        (r["latency"], r["cost"], r["judge_cost"]) for r in first
    ]
    assert sorted(path.parent.name for path in cache.rglob("*.json")) == ["app", "app", "app", "grader"]


def test_response_cache_example_is_looked_after_by_the_cache_command(tmp_path: Path) -> None:
    """The example README's `cache info` and `cache prune --configuration grader`: the next run
    asks the judge alone again."""
    cache = tmp_path / "cache"

    def run_example() -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "examples/response-cache", "-p", "no:cacheprovider",
             f"--vibe-cache={cache}", NO_HISTORY],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
        return proc.stdout

    def cache_command(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_vibeeval", "cache", *args, str(cache)],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert (proc.returncode, proc.stderr) == (0, ""), proc.stderr
        return proc.stdout

    assert "Cache: 0 answers from cache, 3 asked" in run_example()
    rows = {line.split()[0]: line.split()[1:4] for line in cache_command("info").splitlines()[2:]}
    assert rows == {"app": ["3", "0", "0"], "grader": ["0", "1", "0"], "total": ["3", "1", "0"]}
    assert "grader: removed 1 llm_judge verdict" in cache_command("prune", "--configuration", "grader")
    assert f"Cache: 3 answers from cache, 0 asked ({cache}); llm_judge: 0 answers from cache, 1 asked" in (
        run_example()
    )


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_datasets_example_runs_one_item_per_row(tmp_path: Path, xdist: list[str]) -> None:
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "examples/datasets", "-p", "no:cacheprovider", "-k", "not kenya",
         "--vibe-results", str(results), NO_HISTORY, *xdist],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    records = {r["nodeid"]: r for r in json.loads(results.read_text())["runs"][0]["evals"]}
    suite = "examples/datasets/datasets.eval.yaml"
    assert len(records) == 8 and f"{suite}::capital[kenya][app]" not in records
    zealand = records[f"{suite}::capital[new-zealand][app]"]
    assert (zealand["outcome"], zealand["eval_name"]) == ("passed", "capital")
    assert zealand["row_id"] == "new-zealand"
    assert zealand["row"] == {"id": "new-zealand", "country": "New Zealand", "capital": "Wellington"}
    assert records[f"{suite}::translate[cat-German][app]"]["response"] == "Katze"


@SHARED_RUN_TIMEOUT
def test_graded_judge_example_scores_replies_and_measures_labels(examples: ExamplesRun) -> None:
    assert "Metrics: precision 0.50 · recall 0.50" in examples.stdout  # conftest.py's, on the controller too
    run = examples.runs()["triage", "app"]
    outcomes = sorted((record["outcome"], record["xfail"]) for record in run["evals"])
    assert outcomes == [("failed", True), *[("passed", False)] * 4]  # 4 passed, 1 xfailed
    assert (run["metrics"]["precision"], run["metrics"]["recall"]) == (0.5, 0.5)
    evals = {record["name"]: record for record in run["evals"]}
    [_, outage] = evals["urgent-outage"]["checks"]
    assert outage["name"] == "politeness" and outage["passed"] is True
    assert [judge["model"] for judge in outage["judges"]] == [
        "example/strict-judge", "example/kind-judge", "example/brief-judge"
    ]  # fmt: skip
    assert evals["routine-dark-mode"]["xfail"] and evals["routine-dark-mode"]["outcome"] == "failed"
    assert run["variables"]["politeness_score"] == pytest.approx(0.74)
    assert run["score"] == pytest.approx(80 * 0.5 + 0.74 * 50)
    assert run["metrics"]["total_judge_cost"] == pytest.approx(15 * 0.0001)  # 5 evals × 3 judges
