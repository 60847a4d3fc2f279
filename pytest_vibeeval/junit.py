"""What pytest-vibeeval adds to pytest's JUnit XML (--junitxml): properties of each eval's test
case, each run's score as test suite properties, and a test case per score gate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from .aggregate import RunInfo
from .results import EvalRecord, RunRecord
from .summary import run_title

GATE_TESTCASE = "score-gate"  # JUnit test case name: score-gate[<suite>::<configuration>]


def eval_properties(info: RunInfo | None, record: EvalRecord | None) -> Iterator[tuple[str, object]]:
    """The ``vibe.*`` properties of one eval's test case: its configuration and what it measured."""
    if info is not None:
        yield "vibe.configuration", info.configuration
    if record is not None:
        for name in ("outcome", "latency", "cost", "input_tokens", "output_tokens"):
            value = getattr(record, name)
            if value is not None:
                yield f"vibe.{name}", value


def _log_xml(config: pytest.Config) -> Any:
    """The controller's JUnit writer (a private pytest object), or None without --junitxml."""
    try:
        from _pytest.junitxml import xml_key  # private: record_testsuite_property fails under xdist
    except ImportError:  # pragma: no cover - a test fails if pytest moves it
        return None
    return config.stash.get(xml_key, None)


def add_suite_properties(config: pytest.Config, runs: list[RunRecord]) -> None:
    """Each run's score, success rate, formula and gate as test suite properties (the controller's
    writer: record_testsuite_property fails under xdist, pytest #7767)."""
    xml = _log_xml(config)
    if xml is None:
        return
    for run in runs:
        prefix = f"vibe.{run.source}[{run.configuration}]"  # the file: suite names need not be unique
        xml.add_global_property(f"{prefix}.score", "null" if run.score is None else run.score)
        xml.add_global_property(
            f"{prefix}.success_pct",
            "null" if run.metrics["success_pct"] is None else run.metrics["success_pct"],
        )
        xml.add_global_property(f"{prefix}.score_formula", run.score_formula)
        if run.gate is not None:
            xml.add_global_property(f"{prefix}.gate", "passed" if run.gate.passed else "failed")


def add_gate_cases(config: pytest.Config, runs: list[RunRecord]) -> None:
    """One test case per run with a gate, ``score-gate[<suite>::<configuration>]`` in the suite
    file's class: passed, or failed with the gate's message. Uses LogXML.node_reporter and
    _NodeReporter (private pytest API; tests/test_gate.py fails if it moves)."""
    xml = _log_xml(config)
    if xml is None:
        return
    import xml.etree.ElementTree as ET

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
        reporter.add_property("vibe.configuration", run.configuration)
        reporter.add_property("vibe.score", "null" if run.score is None else run.score)
        for bound in ("min", "max"):
            value = getattr(run.gate, bound)
            if value is not None:
                reporter.add_property(f"vibe.{bound}", value)
        if run.gate.passed:
            xml.add_stats("passed")
        else:
            failure = ET.Element("failure", message=f"GATE FAILED: {run_title(run)}: {run.gate.message}")
            failure.text = f"score formula: {run.score_formula}\n{run.gate.message}"
            if run.score_error:
                failure.text += f"\nscore error: {run.score_error}"
            reporter.append(failure)
        reporter.finalize()
