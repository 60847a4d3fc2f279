"""`python -m pytest_vibeeval outputs`: each eval's results.json carries its own start and end, and a
step log pytest has since removed is said to be missing, not written as an empty output."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run
from test_workspace_evals import make_config_dir

NODE = "evals/config/eval-config.json::{}[oracle]"


def outputs(results: Path, folder: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the command; the runner's results.json of each eval, by eval name."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "outputs", str(results), "--dir", str(folder)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    files = sorted(folder.glob("*/oracle/results.json"))
    return proc, {(data := json.loads(file.read_text()))["evalName"]: data for file in files}


def moment(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


@XDIST_MODES
def test_each_eval_has_its_own_times_and_missing_logs_say_so(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_config_dir(pytester.path)
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", xdist=xdist)
    result.assert_outcomes(passed=2)
    data = load_json(path)
    records = {name: evals_by_nodeid(data)[NODE.format(name)] for name in ("add", "mul")}
    session = (moment(data["started_at"]), moment(data["finished_at"]) + dt.timedelta(seconds=1))
    for record in records.values():
        started, finished = moment(record["started_at"]), moment(record["finished_at"])
        assert session[0] <= started <= finished <= session[1]
        spent = sum(record["phase_durations"].values())
        assert (finished - started).total_seconds() == pytest.approx(spent, abs=1.0)
    if not xdist:  # one after the other
        assert moment(records["add"]["finished_at"]) <= moment(records["mul"]["started_at"])

    proc, written = outputs(path, pytester.path / "out")
    assert sorted(written) == ["add", "mul"]
    for name, record in records.items():
        assert (written[name]["startedAt"], written[name]["finishedAt"]) == (
            record["started_at"],
            record["finished_at"],
        )
        agent = written[name]["commands"][0]
        assert '"found": []' in agent["stdout"]  # the oracle's own output, read from its log
    assert "warning" not in proc.stderr

    # pytest removes the temporary folders of older runs, the step logs with them
    logs = Path(records["add"]["steps"][0]["log"]).parent
    shutil.rmtree(logs)
    proc, written = outputs(path, pytester.path / "out-later")
    steps = records["add"]["steps"]
    for command, step in zip(written["add"]["commands"], steps, strict=True):
        assert command["stdout"] == f"[log not found: {step['log']}]"
        assert command["stderr"] == f"[log not found: {Path(step['log']).with_suffix('.stderr')}]"
    assert '"found": []' in written["mul"]["commands"][0]["stdout"]  # its logs are still there
    assert proc.stderr.splitlines() == [
        f'warning: {2 * len(steps)} step log(s) not found, written as "[log not found: <path>]" in '
        "stdout/stderr: pytest removes the temporary folders of all but its last 3 runs "
        "(tmp_path_retention_count); write the outputs sooner, or give each run its own --basetemp"
    ]


def test_results_without_eval_times_use_the_sessions(pytester: pytest.Pytester) -> None:
    """A results file written before the eval times were recorded: the session's, as before."""
    make_config_dir(pytester.path)
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    data = load_json(path)
    for record in data["runs"][0]["evals"]:
        del record["started_at"], record["finished_at"]
    older = pytester.path / "older.json"
    older.write_text(json.dumps(data))
    _, written = outputs(older, pytester.path / "out")
    assert (written["add"]["startedAt"], written["add"]["finishedAt"]) == (
        data["started_at"],
        data["finished_at"],
    )
