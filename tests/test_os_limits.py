"""A suite meets the operating system's limits: processes (a pids cgroup or ``ulimit -u``), open
files (``ulimit -n``), the length of a command line (E2BIG) and of a file name (ENAMETOOLONG),
and an eval with more checks than a message can list. Each ends in a result that says what
happened, never a traceback, a crash late in the run or a lost record."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from chat_server import ChatServer
from helpers import (
    PYTHON,
    XDIST_MODES,
    agent,
    evals_by_nodeid,
    load_json,
    python_suite,
    run,
    run_with_limits,
    write,
)

from pytest_vibeeval.filenames import NAME_MAX, bounded_name, name_part
from pytest_vibeeval.loading.templates import Renderer, TemplateValues
from pytest_vibeeval.models import Configuration
from pytest_vibeeval.process import ArgumentsTooLong
from pytest_vibeeval.providers import PromptRequest, ProviderError
from pytest_vibeeval.providers.cli import CliProvider
from pytest_vibeeval.workspace.cgroups import process_limit
from pytest_vibeeval.workspace.layout import grading_beside

ECHO = "import sys\nprint('ok', sys.stdin.read()[:20])\n"
APP = "def answer(prompt):\n    return 'ok'\n"


def stub_cli(directory: Path, name: str, body: str) -> str:
    """An executable script standing in for an agent CLI (``cli:`` runs it directly)."""
    path = directory / name
    path.write_text(f"#!{PYTHON}\n{body}", encoding="utf-8")
    path.chmod(0o755)
    return str(path)


# --- processes -------------------------------------------------------------------------------

probe = process_limit(2)
if probe is not None:
    probe.close()
needs_cgroup = pytest.mark.skipif(probe is None, reason="no pids cgroup can be made here (not root?)")

# Once pytest has started, no process more may be started in the run's pids cgroup: as when a
# user's `ulimit -u` (or a container's pids.max) is reached. Starting one fails with EAGAIN.
FULL_AT_START = """
import os
from pathlib import Path

def pytest_sessionstart(session):
    folder = Path(os.environ["VIBE_TEST_PIDS_CGROUP"])
    (folder / "pids.max").write_text((folder / "pids.current").read_text())
"""


@needs_cgroup
def test_an_agent_the_process_limit_leaves_no_room_for_is_an_error_saying_so(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(pytester.path / "conftest.py", FULL_AT_START)
    write(pytester.path / "app.py", APP)
    script = agent(pytester.path, "echo.py", ECHO)
    write(
        pytester.path / "procs.eval.yaml",
        f"""
        metadata: {{name: procs, model: m}}
        configurations:
          agent: {{cli: "{PYTHON}", args: ["{script}"]}}
          app: {{python: "app:answer"}}
        evals:
          - {{name: ask, prompt: hi, checks: [{{match: "ok*"}}]}}
        """,
    )
    limit = process_limit(10_000)
    assert limit is not None
    monkeypatch.setenv("VIBE_TEST_PIDS_CGROUP", str(limit.folder))
    try:
        enter = (limit.folder / "cgroup.procs").write_text
        result = run_with_limits(pytester, {}, "--vibe-results", "r.json", before=lambda: enter("0"))
    finally:
        limit.close()
    result.assert_outcomes(passed=1, failed=1)
    output = result.stdout.str() + result.stderr.str()
    assert "Traceback" not in output and "BlockingIOError" not in output, output
    records = evals_by_nodeid(load_json(pytester.path / "r.json"))
    message = records["procs.eval.yaml::ask[agent]"]["message"]
    assert message.startswith(
        f"cannot start {PYTHON!r}: the system refused to start another process (EAGAIN)"
    )
    assert f"`ulimit -u` is {_soft(resource.RLIMIT_NPROC)}" in message
    assert records["procs.eval.yaml::ask[app]"]["outcome"] == "passed"


def _soft(which: int) -> str:
    value = resource.getrlimit(which)[0]
    return "unlimited" if value == resource.RLIM_INFINITY else str(value)


def test_a_command_with_no_file_descriptor_left_is_an_error_naming_the_limit(tmp_path: Path) -> None:
    """Out of descriptors (EMFILE) the command cannot be given its output files: the error says
    which limit, not that the folder cannot be written."""
    code = f"""
import os, resource
from pytest_vibeeval.process import CannotStart, run_command
room = len(os.listdir("/proc/self/fd"))  # the listing's own descriptor is closed again
resource.setrlimit(resource.RLIMIT_NOFILE, (room, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
try:
    run_command(["true"], cwd={str(tmp_path)!r}, output_dir={str(tmp_path)!r})
except CannotStart as exc:
    print(exc)
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert done.startswith(
        "cannot start 'true': this process has too many files open (EMFILE; its `ulimit -n` is "
    )
    assert "raise it, e.g. `ulimit -n 4096` before pytest" in done


# --- open files --------------------------------------------------------------------------------

# Counts this process's open descriptors after each item, one file per process (xdist workers),
# and keeps at most KEPT HTTP clients open (the bound made small, to meet it in a small run).
FD_LOG = """
import os
from pytest_vibeeval import journal
from pytest_vibeeval.providers.http_clients import KEPT_OPEN

KEPT_OPEN.limit = {kept}
# The journal opens its file once, at its first write: a second after the first record, which a
# loaded machine's run outlasts. Writing each record at once opens it before the first count.
journal.CHUNK = 0

def pytest_runtest_logfinish(nodeid, location):
    with open(f"fds-{{os.getpid()}}.log", "a") as log:
        log.write(f"{{len(os.listdir('/proc/self/fd')) - 1}}\\n")
"""
KEPT = 2
HTTP_SUITES = 12  # each its own HTTP provider: each kept its connection open, all at once
FILES = 24  # `ulimit -n`: pytest holds about 16 open before the first eval


@XDIST_MODES
def test_open_files_do_not_grow_with_the_evals_of_a_run(pytester: pytest.Pytester, xdist: list[str]) -> None:
    """Under a low ``ulimit -n`` a run of python:, cli: and HTTP evals (a provider per suite file,
    against a server that keeps connections open, as hosted APIs do) passes, and no process holds
    more descriptors after its last eval than after its first beyond the HTTP connections kept
    open for the next answer."""
    write(pytester.path / "conftest.py", FD_LOG.format(kept=KEPT))
    evals = [f"{{name: e{n}, prompt: hi, checks: [{{match: 'ok*'}}]}}" for n in range(8)]
    script = agent(pytester.path, "echo.py", ECHO)
    agent_configuration = f'  agent: {{cli: "{PYTHON}", args: ["{script}"]}}'  # beside `app`
    python_suite(pytester.path / "local.eval.yaml", evals, app=APP, top=agent_configuration)
    with ChatServer(keep_alive=True) as server:
        for n in range(HTTP_SUITES):
            write(
                pytester.path / f"api{n}.eval.yaml",
                f"""
                metadata: {{name: api{n}, model: ok}}
                configurations:
                  api: {{http: {{base_url: "{server.url}"}}}}
                evals:
                  - {{name: ask, prompt: "ANSWER: ok", checks: [{{match: "ok"}}]}}
                """,
            )
        # Three configurations taking turns, item by item: each answer reopens a closed client.
        http = f'{{http: {{base_url: "{server.url}"}}}}'
        write(
            pytester.path / "turns.eval.yaml",
            "metadata: {name: turns, model: ok}\nconfigurations:\n"
            + "".join(f"  {name}: {http}\n" for name in "abc")
            + "evals:\n"
            + "".join(
                f"  - {{name: ask{n}, prompt: 'ANSWER: ok', checks: [{{match: ok}}]}}\n" for n in range(3)
            ),
        )
        result = run_with_limits(pytester, {resource.RLIMIT_NOFILE: FILES}, "--vibe-history=", xdist=xdist)
    output = result.stdout.str() + result.stderr.str()
    assert "Too many open files" not in output, output
    result.assert_outcomes(passed=16 + HTTP_SUITES + 9)
    for log in pytester.path.glob("fds-*.log"):
        counts = [int(line) for line in log.read_text().split()]
        assert max(counts) - counts[0] <= KEPT, (log.name, counts)


# --- the command line ----------------------------------------------------------------------------

# Reports how it got its prompt: its arguments (a long one by its length), its stdin, and the file
# that --message-file names.
REPORTER = """
import json, sys
args = sys.argv[1:]
named = args[args.index("--message-file") + 1] if "--message-file" in args else None
print(json.dumps({
    "args": [a if len(a) < 1000 else f"<{len(a)} chars>" for a in args],
    "stdin": len(sys.stdin.read()),
    "file": len(open(named, encoding="utf-8").read()) if named else None,
}))
"""
LONG = 200_000  # characters of prompt: over the 128 KiB Linux takes in one argument


def long_prompt_suite(directory: Path, configurations: dict[str, object], prompt: str) -> Path:
    data = {
        "metadata": {"name": "long", "model": "m"},
        "configurations": configurations,
        "evals": [
            {"name": "long", "prompt": prompt, "checks": [{"match": "*"}]},
            {"name": "short", "prompt": "hi", "checks": [{"match": "*"}]},
        ],
    }
    return write(directory / "long.eval.yaml", yaml.safe_dump(data, sort_keys=False))


def test_a_prompt_too_long_for_the_command_line_goes_the_way_the_preset_says(
    pytester: pytest.Pytester,
) -> None:
    """The gemini and aider presets pass the prompt as an argument; one too long for the command
    line goes on stdin to gemini (which reads a piped prompt) and in a file to aider (its
    --message-file), so such an eval runs. A configuration without such a way errors, naming the
    limit and what to change. (tests/test_real_clis.py runs the real CLIs so.)"""
    reporter = stub_cli(pytester.path, "reporter", REPORTER)
    text = {"output": {"format": "text"}}  # the stub prints no gemini or aider transcript
    configurations = {
        "gemini": {"preset": "gemini", "cli": reporter, **text},
        "aider": {"preset": "aider", "cli": reporter, **text},
        "own-args": {"preset": "gemini", "cli": reporter, "args": ["--prompt=${PROMPT}"], **text},
        "custom": {"cli": reporter, "args": ["-p", "${PROMPT}"]},
    }
    long_prompt_suite(pytester.path, configurations, "x" * LONG)
    result = run(pytester, "--vibe-results", "r.json")
    result.assert_outcomes(passed=6, failed=2)
    records = evals_by_nodeid(load_json(pytester.path / "r.json"))

    def answer(config: str, eval_id: str = "long") -> dict[str, object]:
        record = records[f"long.eval.yaml::{eval_id}[{config}]"]
        assert record["outcome"] == "passed", record["message"]
        return json.loads(record["response"])  # type: ignore[no-any-return]

    assert answer("gemini") == {
        "args": ["--output-format", "stream-json", "--approval-mode", "auto_edit", "--skip-trust"],
        "stdin": LONG,
        "file": None,
    }
    assert answer("gemini", "short")["args"][-2:] == ["-p", "hi"]  # a short prompt stays an argument
    aider = answer("aider")
    assert "--message" not in aider["args"] and aider["args"][-2] == "--message-file"  # type: ignore[index]
    assert aider["file"] == LONG and aider["stdin"] == 0
    assert Path(aider["args"][-1]).name == "agent.prompt"  # type: ignore[index]
    for config, hint in (
        ("own-args", "when it is an argument of its own after -p or --prompt, as in the preset's `args`"),
        (
            "custom",
            f"pass it on stdin instead (`prompt_via: stdin` and no `${{PROMPT}}` in `args`) if {reporter}",
        ),
    ):
        message = records[f"long.eval.yaml::long[{config}]"]["message"]
        assert "Linux takes at most 131071 bytes in one argument (MAX_ARG_STRLEN)" in message, message
        assert f"the prompt ({LONG} bytes)" in message and hint in message, message
    assert "Traceback" not in result.stdout.str()


SECRET = "tok-0123456789abcdef"  # a {{secret()}} value: 20 characters, unlike the mask


def test_the_prompt_file_holds_the_secrets_raw_for_the_agent_and_masked_after(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aider's --message-file, like a long prompt's agent.stdin: the agent reads the values it
    needs, and once it has finished the file is rewritten with them masked."""
    monkeypatch.setenv("VIBE_SECRET_TOKEN", SECRET)
    reporter = stub_cli(pytester.path, "reporter", REPORTER)
    configurations = {"aider": {"preset": "aider", "cli": reporter, "output": {"format": "text"}}}
    long_prompt_suite(pytester.path, configurations, "x" * LONG + " {{secret('token')}}")
    result = run(pytester, "--basetemp", str(pytester.path / "bt"), "--vibe-results", "r.json")
    result.assert_outcomes(passed=2)
    record = evals_by_nodeid(load_json(pytester.path / "r.json"))["long.eval.yaml::long[aider]"]
    assert json.loads(record["response"])["file"] == LONG + 1 + len(SECRET)  # read with the raw value
    (prompt_file,) = (pytester.path / "bt").rglob("agent.prompt")
    text = prompt_file.read_text(encoding="utf-8")
    assert SECRET not in text and text.startswith("x" * LONG)


def test_a_prompt_longer_than_gemini_reads_from_stdin_is_an_error(tmp_path: Path) -> None:
    """gemini reads at most 8 MiB of a piped prompt and drops the rest: a longer prompt is an
    error saying so, never an answer to part of it."""
    configuration = Configuration.model_validate({"preset": "gemini", "cli": "gemini"})
    provider = CliProvider("gemini", configuration, Renderer(TemplateValues()), tmp_path)
    size = 8 * 2**20 + 1
    request = PromptRequest("x" * size, "m", None, "s", "e", "gemini", tmp_path)
    refused = ArgumentsTooLong("gemini", "argument list too long")
    with pytest.raises(ProviderError) as info:
        provider._reroute(refused, provider.argv(request), None, request, tmp_path / "agent.prompt")
    assert str(info.value) == (
        f"cannot start 'gemini': argument list too long; the prompt is {size} bytes: too long for the "
        f"command line, and gemini reads at most {8 * 2**20} bytes of a prompt on stdin (it would cut "
        "the rest)"
    )
    request = PromptRequest("x" * 8 * 2**20, "m", None, "s", "e", "gemini", tmp_path)  # all of it is read
    argv, stdin = provider._reroute(refused, provider.argv(request), None, request, tmp_path / "agent.prompt")
    assert stdin == request.prompt and "-p" not in argv


# --- file names ----------------------------------------------------------------------------------


def test_file_names_made_from_long_names_stay_within_the_limit() -> None:
    assert name_part("claude-sonnet") == "claude-sonnet"  # a name that fits is kept as it is
    assert name_part("a b/c") == "a_b_c"
    long = name_part("c" * 300)
    assert len(long) == NAME_MAX and long != name_part("c" * 299 + "d")  # the hash tells them apart
    cut = bounded_name("é" * 200, 100)
    assert len(cut.encode()) <= 100 and cut.startswith("é" * 40)  # cut between two characters


def test_a_grading_folder_with_a_long_name_is_copied(tmp_path: Path) -> None:
    grading = tmp_path / ("é" * 120)  # 240 bytes: the copy's prefix would take it past 255
    write(grading / "check.py", "ok\n")
    write(tmp_path / "work" / "answer.py", "42\n")
    copy = grading_beside(grading, tmp_path / "work")
    assert len(copy.name.encode()) <= NAME_MAX
    assert (copy / "check.py").is_file() and (copy / "workspace" / "answer.py").is_file()


LONG_ID = "c" * 250  # a configuration id may be this long: it names folders and files


def test_a_long_configuration_id_is_recorded_cached_and_replayed(pytester: pytest.Pytester) -> None:
    python_suite(
        pytester.path / "long.eval.yaml",
        ["{name: ask, prompt: hi, checks: [{match: ok}]}"],
        app=APP,
        configuration="",
    )
    suite = pytester.path / "long.eval.yaml"
    suite.write_text(suite.read_text().replace("  app:", f"  {LONG_ID}:"))
    first = run(pytester, "--vibe-cache=cache", "--vibe-record", "store")
    first.assert_outcomes(passed=1)
    assert "File name too long" not in first.stdout.str()
    again = run(pytester, "--vibe-cache=cache")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(["Cache: 1 answer from cache, 0 asked*"])
    run(pytester, "--vibe-replay", "store").assert_outcomes(passed=1)


def test_a_coding_agent_with_a_long_configuration_id_runs(pytester: pytest.Pytester) -> None:
    """The agent's and each step's log files are named after the configuration and the step."""
    script = agent(pytester.path, "agent.py", "import sys\nsys.stdin.read()\nprint('done')\n")
    write(pytester.path / "template" / "a.txt", "a\n")
    write(pytester.path / "grading" / "b.txt", "b\n")
    step = "s" * 240
    write(
        pytester.path / "code.eval.yaml",
        f"""
        metadata: {{name: code, model: m}}
        configurations:
          {LONG_ID}: {{cli: "{PYTHON}", args: ["{script}"]}}
        commands:
          {step}: {{command: "true"}}
        evals:
          - {{name: fix, prompt: go, workspace: template, grading: grading, grade_steps: [{step}]}}
        """,
    )
    result = run(pytester, "--vibe-sandbox", "none", "--vibe-results", "r.json")
    result.assert_outcomes(passed=1)
    (record,) = evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    assert [Path(s["log"]).name[:9] for s in record["steps"]] == ["00-agent-", "01-grade-"]


# --- many checks ---------------------------------------------------------------------------------


def test_a_failure_message_lists_a_bounded_number_of_checks(pytester: pytest.Pytester) -> None:
    """An eval of 2 000 checks, 300 failing: its message lists the first failing ones and says
    how many it leaves out; the results JSON keeps every check."""
    checks = ", ".join(["{match: '*ok*'}"] * 1700 + [f"{{match: '*missing{n}*'}}" for n in range(300)])
    python_suite(
        pytester.path / "many.eval.yaml", [f"{{name: many, prompt: hi, checks: [{checks}]}}"], app=APP
    )
    result = run(pytester, "--vibe-results", "r.json")
    result.assert_outcomes(failed=1)
    (record,) = evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    assert len(record["checks"]) == 2000
    lines = record["message"].splitlines()
    listed = [line for line in lines if line.startswith("  FAIL ") or line.startswith("  PASS ")]
    assert listed == [f"  FAIL match: pattern '*missing{n}*' does not match the response" for n in range(50)]
    assert (
        "  … not shown: 1700 that passed and 250 more that did not pass, of the 2000 checks (the results "
        "JSON has each one's verdict)"
    ) in lines
    assert len(result.stdout.str()) < 20_000


def test_a_template_too_deep_to_copy_is_an_error_giving_the_reason(pytester: pytest.Pytester) -> None:
    """A file that fits in the template (its path under the 4096 bytes Linux takes) but not in the
    copy (the item's folder is deeper): the eval errors with cp's reason, which a path of 4 KB
    before it no longer hides."""
    template = pytester.path / "template"
    room = 4090 - len(str(template)) - len("/f.txt")  # the file's path: 4090 bytes in the template
    names = ["d" * 200] * (room // 201) + ["e" * (room % 201 - 1)]
    os.makedirs(template.joinpath(*names))
    template.joinpath(*names, "f.txt").write_text("x")
    write(pytester.path / "grading" / "b.txt", "b\n")
    script = agent(pytester.path, "agent.py", "print('done')\n")
    write(
        pytester.path / "deep.eval.yaml",
        f"""
        metadata: {{name: deep, model: m}}
        configurations:
          agent: {{cli: "{PYTHON}", args: ["{script}"]}}
        commands:
          check: {{command: "true"}}
        evals:
          - {{name: deep, prompt: go, workspace: template, grading: grading, grade_steps: [check]}}
        """,
    )
    # The suite named: pytest's own walk of the rootdir would meet the template's long paths too.
    result = run(pytester, "deep.eval.yaml", "--vibe-sandbox", "none", "--vibe-results", "r.json")
    result.assert_outcomes(errors=1)
    (record,) = evals_by_nodeid(load_json(pytester.path / "r.json")).values()
    assert "its workspace folder" in record["message"] and "cannot be copied: cp: " in record["message"]
    assert record["message"].endswith(": File name too long"), record["message"][-300:]
    assert "Traceback" not in result.stdout.str()
