"""A pytest plugin for the hostile runs: one JSON line per failed collection and per test report,
written to the file named by HOSTILE_REPORTS (the ground truth the corpus test compares against)."""

from __future__ import annotations

import json
import os
from typing import Any


def _write(record: dict[str, Any]) -> None:
    with open(os.environ["HOSTILE_REPORTS"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")


def pytest_collectreport(report: Any) -> None:
    if report.failed:
        _write({"kind": "collect", "nodeid": report.nodeid, "text": report.longreprtext})


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call" or report.outcome != "passed":
        _write(
            {
                "kind": "test",
                "nodeid": report.nodeid,
                "when": report.when,
                "outcome": report.outcome,
                "xfail": hasattr(report, "wasxfail"),
                "text": report.longreprtext,
            }
        )
