"""What pytest-vibeeval adds to pytest's JUnit XML (--junitxml), in both junit families.

The published schema CI tools check against (the Jenkins xUnit plugin's junit-10.xsd, shipped as
tests/junit-10.xsd) allows properties on the test suite only, not on test cases. So everything is
a test suite property: each run's score, success rate, formula and gate as
``vibe.<suite file>[<configuration>].<name>``, and each eval's configuration, outcome, latency,
cost, tokens and score variables as ``vibe.<node id>.<name>``. A run with a score gate adds the test
case ``score-gate[<suite>::<configuration>]``, failed when its gate fails.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Collection, Iterator

import pytest

from ..pytest_private import junit_writer
from ..results import EvalRecord, RunRecord
from ..scoring.variables import eval_variable_names, run_variable_names
from .format import NULL_SCORE, run_title

GATE_TESTCASE = "score-gate"  # JUnit test case name: score-gate[<suite>::<configuration>]
EVAL_FIELDS = ("outcome", "latency", "cost", "input_tokens", "output_tokens")


def score_variables(
    run: RunRecord, record: EvalRecord, run_names: Collection[str] | None = None
) -> dict[str, float | None]:
    """The eval's own variables that its run's formula uses, with their values in the run: what
    the eval puts into the score beyond the run-wide variables (success_pct, total_cost, …), which
    every eval that ran feeds. Only named evals have variables; with --vibe-repeat a value is the
    mean over the eval's repeats. Empty when the formula uses none of them."""
    return _owned_values(run, record, _owned(run, run_names))


def _owned(run: RunRecord, run_names: Collection[str] | None) -> frozenset[str]:
    """The names the run's formula uses that an eval may own: an eval named like a run-wide
    variable does not own it."""
    return frozenset(run.score_names) - set(run_variable_names() if run_names is None else run_names)


def _owned_values(run: RunRecord, record: EvalRecord, owned: frozenset[str]) -> dict[str, float | None]:
    """:func:`score_variables` with the run's :func:`_owned` names (made once per run)."""
    if not record.named or not owned:
        return {}
    return {name: run.variables.get(name) for name in eval_variable_names(record.name) if name in owned}


def eval_suite_properties(
    run: RunRecord, record: EvalRecord, owned: frozenset[str]
) -> Iterator[tuple[str, object]]:
    """One eval's properties, ``vibe.<node id>.<name>``: its configuration, what it measured (where
    known) and its ``score_variables`` (a JSON object, where the formula uses any; ``owned``: the
    run's :func:`_owned` names)."""
    prefix = f"vibe.{record.nodeid}"
    yield f"{prefix}.configuration", run.configuration
    for name in EVAL_FIELDS:
        value = getattr(record, name)
        if value is not None:
            yield f"{prefix}.{name}", value
    if record.attempts > 1:  # a plugin reran it: its cost counts every attempt
        yield f"{prefix}.attempts", record.attempts
    if record.turns:  # a conversation: how far it got
        yield f"{prefix}.turns", len(record.turns)
        yield f"{prefix}.turns_passed", sum(1 for turn in record.turns if turn.outcome == "passed")
        failed = next((turn.turn for turn in record.turns if turn.outcome in ("failed", "error")), None)
        if failed is not None:
            yield f"{prefix}.failed_turn", failed
    variables = _owned_values(run, record, owned)
    if variables:
        yield f"{prefix}.score_variables", json.dumps(variables)


def run_suite_properties(run: RunRecord) -> Iterator[tuple[str, object]]:
    """One run's properties, ``vibe.<suite file>[<configuration>].<name>`` (the file: suite names
    need not be unique): score, success rate, formula and, with a score gate, the gate."""
    prefix = f"vibe.{run.source}[{run.configuration}]"
    yield f"{prefix}.score", NULL_SCORE if run.score is None else run.score
    success = run.metrics["success_pct"]
    yield f"{prefix}.success_pct", NULL_SCORE if success is None else success
    yield f"{prefix}.score_formula", run.score_formula
    if run.gate is not None:
        yield f"{prefix}.gate", "passed" if run.gate.passed else "failed"
        for bound in ("min", "max"):
            value = getattr(run.gate, bound)
            if value is not None:
                yield f"{prefix}.gate_{bound}", value


def add_suite_properties(
    config: pytest.Config, runs: list[RunRecord], run_names: Collection[str] | None = None
) -> None:
    """Each run's and each of its evals' properties as test suite properties, through the
    controller's writer (record_testsuite_property fails under xdist, pytest #7767)."""
    xml = junit_writer(config)
    if xml is None:
        return
    for run in runs:
        for name, value in run_suite_properties(run):
            xml.add_global_property(name, value)
        owned = _owned(run, run_names)
        for record in run.evals:
            for name, value in eval_suite_properties(run, record, owned):
                xml.add_global_property(name, value)


def add_gate_cases(config: pytest.Config, runs: list[RunRecord]) -> None:
    """One test case per run with a gate, ``score-gate[<suite>::<configuration>]`` in the suite
    file's class: passed, or failed with the gate's message. With junit_family=xunit1 it carries the
    suite file as ``file``, as pytest's xunit1 test cases do. Uses LogXML.node_reporter and
    _NodeReporter (private pytest API; tests/test_gate.py fails if it moves)."""
    xml = junit_writer(config)
    if xml is None:
        return
    for run in runs:
        if run.gate is None:
            continue
        name = f"{GATE_TESTCASE}[{run.suite}::{run.configuration}]"
        # As pytest names the classname of the suite's eval test cases: the path, dotted.
        classname = run.source.replace("/", ".")
        if xml.prefix:
            classname = f"{xml.prefix}.{classname}"
        reporter = xml.node_reporter(f"{run.source}::{name}")
        reporter.add_attribute("classname", classname)
        reporter.add_attribute("name", name)
        if xml.family == "xunit1":
            reporter.add_attribute("file", run.source)
        if run.gate.passed:
            xml.add_stats("passed")
        else:
            failure = ET.Element("failure", message=f"GATE FAILED: {run_title(run)}: {run.gate.message}")
            failure.text = f"score formula: {run.score_formula}\n{run.gate.message}"
            if run.score_error:
                failure.text += f"\nscore error: {run.score_error}"
            reporter.append(failure)
        reporter.finalize()
