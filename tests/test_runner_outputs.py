"""`python -m pytest_vibeeval outputs`: each eval's results.json carries its own start and end, a
step log pytest has since removed is said to be missing, not written as an empty output, only
coding-agent evals get a file, no two evals share one, and a --dir that cannot be written is said so."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write, write_cli_config
from test_workspace_evals import make_config_dir

NODE = "evals/config/eval-config.json::{}[oracle]"


def outputs_command(results: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m pytest_vibeeval outputs RESULTS --dir FOLDER``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_vibeeval", "outputs", str(results), "--dir", str(folder)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def outputs(results: Path, folder: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """Run the command; the runner's results.json of each eval, by eval name."""
    proc = outputs_command(results, folder)
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


def test_one_eval_name_in_two_suites_gets_two_files(pytester: pytest.Pytester) -> None:
    """Two config folders with an evaluation of the same name, run against the same configuration:
    the runner's path (<eval>-<time>/<config>) would be the same, so the second gets `-2`, and the
    command says whose is whose; neither file overwrites the other."""
    for side in ("a", "b"):
        make_config_dir(pytester.path / side)
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    result.assert_outcomes(passed=2)
    stamp = load_json(path)["started_at"].replace("+00:00", "Z").replace(":", "-")
    folder = pytester.path / "out"
    proc = outputs_command(path, folder)
    assert proc.returncode == 0, proc.stderr
    first, second = (folder / name / "oracle" / "results.json" for name in (f"add-{stamp}", f"add-{stamp}-2"))
    assert proc.stdout.splitlines() == [str(first), str(second)]
    assert proc.stderr.splitlines() == [
        f"note: {second}: add × oracle of b/evals/config/eval-config.json (that of "
        f"a/evals/config/eval-config.json is {first})"
    ]
    for side, file in (("a", first), ("b", second)):
        data = json.loads(file.read_text())
        assert (data["evalName"], data["status"]) == ("add", "pass")
        assert str(pytester.path / side / "evals" / "solutions") in data["commands"][0]["command"]


def test_names_too_long_for_a_folder_are_cut_and_said_so(pytester: pytest.Pytester) -> None:
    """An eval name of 240 characters (the runner's folder is ``<eval>-<time>``) and a configuration
    id of 250 would name folders longer than the 255 bytes a file name may be: each is cut, with a
    hash, the file is written, and the command says so (it wrote nothing before: ENAMETOOLONG)."""
    make_config_dir(pytester.path)
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    data = load_json(path)
    (run_record,) = data["runs"]
    run_record["configuration"] = "o" * 250
    run_record["evals"][0]["name"] = "e" * 240
    path.write_text(json.dumps(data))
    folder = pytester.path / "out"
    proc = outputs_command(path, folder)
    assert proc.returncode == 0, proc.stderr
    (written,) = folder.glob("*/*/results.json")
    assert all(len(part.encode()) <= 255 for part in written.relative_to(folder).parts)
    assert json.loads(written.read_text())["evalName"] == "e" * 240
    assert proc.stderr.splitlines() == [
        f"note: {written}: {'e' * 240} × {'o' * 250} (the runner's folder names would be longer than a "
        "file name may be, 255 bytes: cut, with a hash)"
    ]


def test_prompt_evals_get_no_runner_file(pytester: pytest.Pytester) -> None:
    """A prompt eval run through a CLI has an agent step, but it is no coding-agent eval: it has no
    vybes score, and the runner writes nothing for it."""
    echo = {"cli": "echo", "prompt_via": "argument"}
    write_cli_config(pytester.path / "cli-config.json", {"configurations": {"echo": echo}})
    write(
        pytester.path / "quiz.eval.yaml",
        """
        metadata: {name: quiz, model: m}
        evals:
          - {name: hello, prompt: hello, checks: [{contains: hello}]}
        """,
    )
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path)).assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(path))["quiz.eval.yaml::hello[echo]"]
    assert [step["phase"] for step in record["steps"]] == ["agent"]
    proc = outputs_command(path, pytester.path / "out")
    assert (proc.returncode, proc.stdout) == (0, "")
    assert proc.stderr == f"{path}: no coding-agent eval ran, nothing written\n"
    assert not (pytester.path / "out").exists()


def test_a_coding_eval_that_stopped_before_its_agent_gets_a_failed_file(pytester: pytest.Pytester) -> None:
    """A coding item whose workspace could not be made has a record without steps; it is still a
    coding-agent eval, and the runner reports it as failed."""
    make_config_dir(pytester.path)
    write(
        pytester.path / "conftest.py",
        """
        import pytest

        @pytest.fixture
        def vibe_workspace(vibe_commands, vibe_workdir):
            raise RuntimeError("no disk for the workspace")
        """,
    )
    path = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    result.assert_outcomes(errors=1)
    _, written = outputs(path, pytester.path / "out")
    assert (written["add"]["status"], written["add"]["commands"]) == ("fail", [])


@pytest.mark.parametrize("where", ["file", "under-a-file"])
def test_a_dir_that_is_no_folder_is_said_so(pytester: pytest.Pytester, where: str) -> None:
    make_config_dir(pytester.path)
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    afile = pytester.path / "afile"
    afile.write_text("")
    folder = afile if where == "file" else afile / "out"
    proc = outputs_command(path, folder)
    assert (proc.returncode, proc.stdout) == (2, "")
    expected = (
        f"error: {afile} is not a folder: give --dir a folder (it is made if missing)\n"
        if where == "file"
        else f"error: cannot make the folder {folder}: Not a directory; give --dir a folder you can write\n"
    )
    assert proc.stderr == expected


def test_a_file_that_cannot_be_written_leaves_no_temporary_file(pytester: pytest.Pytester) -> None:
    """The file is written whole or not at all, through a temporary name of its own (a fixed
    ``results.tmp`` was left behind on failure, and two runs into one folder shared it)."""
    make_config_dir(pytester.path)
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    folder = pytester.path / "out"
    outputs(path, folder)
    (target,) = folder.glob("*/oracle/results.json")
    target.unlink()
    target.mkdir()  # in the way of the file
    proc = outputs_command(path, folder)
    assert proc.returncode != 0 and f"cannot write {target}" in proc.stderr, proc.stderr
    assert sorted(p.name for p in target.parent.iterdir()) == ["results.json"]


@pytest.mark.parametrize(("field", "value"), [("configuration", "../../escaped"), ("name", "a/b")])
def test_an_edited_name_that_would_leave_the_dir_is_refused(
    pytester: pytest.Pytester, field: str, value: str
) -> None:
    """A results file is an input: a configuration or eval name that is a path writes nothing."""
    make_config_dir(pytester.path)
    path = pytester.path / "results.json"
    run(pytester, "--vibe-results", str(path), "--vibe-config", "oracle", "--vibe-eval", "add")
    data = load_json(path)
    (run_record,) = data["runs"]
    if field == "configuration":
        run_record["configuration"] = value
    else:
        run_record["evals"][0]["name"] = value
    edited = pytester.path / "edited.json"
    edited.write_text(json.dumps(data))
    out = pytester.path / "deep" / "out"
    proc = outputs_command(edited, out)
    what = "configuration" if field == "configuration" else "eval name"
    assert (proc.returncode, proc.stdout) == (2, ""), proc.stderr
    assert proc.stderr == (
        f"error: the {what} {value!r} in the results file cannot name a folder (it would leave --dir); "
        "was the file edited?\n"
    )
    assert not (pytester.path / "escaped").exists() and not out.exists()
