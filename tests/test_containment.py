"""What an agent can reach and what an output can show: an agent's environment is an allowlist, and
every secret-looking value of the environment is masked, in its common encodings too, wherever the
plugin writes. The last test is the secret grep: every file a run writes and its terminal output,
searched for every secret and its encodings."""

from __future__ import annotations

import base64
import html
import json
import os
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest
from chat_server import ChatServer
from helpers import (
    PYTHON,
    XDIST_MODES,
    agent,
    evals_by_nodeid,
    is_agent_log,
    load_json,
    run,
    write,
    write_cli_config,
)

from pytest_vibeeval.loading.templates import Renderer, TemplateValues
from pytest_vibeeval.masking import (
    MASK,
    MIN_FRAGMENT,
    MIN_MASKED_LENGTH,
    EnvironmentWatch,
    encoded_forms,
    environment_secrets,
    keep_end,
    keep_start,
    mask,
)
from pytest_vibeeval.models import Configuration
from pytest_vibeeval.providers import PromptRequest
from pytest_vibeeval.providers.agent_env import AllowedEnvironment, allowed_environment
from pytest_vibeeval.providers.cli import CliProvider
from pytest_vibeeval.workspace.sandbox import bwrap_problem

ROUTER_KEY = "sk-or-v1-0123456789abcdef"
TOKEN = "tok-5ecret-4711-abcdef"
PASSWORD = "hunter2-but-longer"
# Mixed case, non-ASCII, and what JSON, HTML and URLs escape; its base64 holds a '/' and padding.
SPECIAL = 'Mixed P\u00e4ssw\u00f6rd "q" & <b>\\ ~?>>'

# Prints the names of the variables it was given, and the value of a few.
ENV_AGENT = """
import json, os, sys
sys.stdin.read()
print(json.dumps({"names": sorted(os.environ), "router": os.environ.get("OPENROUTER_API_KEY")}))
"""


def _secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", ROUTER_KEY)
    monkeypatch.setenv("VIBE_SECRET_TOKEN", TOKEN)
    monkeypatch.setenv("DB_PASSWORD", PASSWORD)
    monkeypatch.setenv("VIBE_SECRET_SPECIAL", SPECIAL)


def _encodings(secret: str) -> list[str]:
    """Every encoded form of ``secret`` that masking promises, each checked to differ from it (or the
    test would prove nothing for that form): upper- and lower-cased, base64 standard and URL-safe with
    and without padding, URL-encoded (quote and quote_plus), JSON- and HTML-escaped."""
    raw = secret.encode()
    forms = [
        secret.upper(),
        secret.lower(),
        base64.b64encode(raw).decode(),
        base64.b64encode(raw).decode().rstrip("="),
        base64.urlsafe_b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode().rstrip("="),
        quote(secret, safe=""),
        quote_plus(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        html.escape(secret),
    ]
    return forms


# --- the allowlist -----------------------------------------------------------------------------

# A configuration that sets, lets through and requires one variable each; its evals follow `evals:`.
ALLOWLIST_SUITE = """
metadata: {{name: env, model: m}}
configurations:
  plain:
    cli: "{PYTHON}"
    args: ["{script}"]
    env: {{SET_HERE: "{{{{secret('token')}}}}"}}
    env_passthrough: ["PASS_ME_*"]
    requires_env: [NEEDED_BY_AGENT]
evals:"""


def _allowlist_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The controller's secrets, and a variable of each kind the allowlist keeps out or lets in."""
    _secrets(monkeypatch)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-value-123")
    monkeypatch.setenv("UNRELATED_SETTING", "x")
    monkeypatch.setenv("PASS_ME_ONE", "1")
    monkeypatch.setenv("NEEDED_BY_AGENT", "yes")


@XDIST_MODES
def test_an_agent_gets_only_the_allowlisted_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    _allowlist_environment(monkeypatch)
    monkeypatch.setenv("LC_TIME", "C")
    script = agent(pytester.path, "env_agent.py", ENV_AGENT)
    suite = ALLOWLIST_SUITE.format(script=script, PYTHON=PYTHON)
    write(pytester.path / "env.eval.yaml", suite + "\n  - {name: e, prompt: p, checks: [{match: '*'}]}\n")
    out = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1)
    answer = json.loads(evals_by_nodeid(load_json(out))["env.eval.yaml::e[plain]"]["response"])
    names = set(answer["names"])
    assert {"PATH", "HOME", "LC_TIME", "SET_HERE", "PASS_ME_ONE", "NEEDED_BY_AGENT"} <= names
    assert not names & {"OPENROUTER_API_KEY", "VIBE_SECRET_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY"}
    assert "UNRELATED_SETTING" not in names and answer["router"] is None


needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"{bwrap_problem()}")

# A coding agent: writes the names of the variables it was given, the router key if it has it,
# and the processes whose environment (/proc/<pid>/environ) holds it, the runner's named by
# VIBEEVAL_RUNNER_PID and its parent's included, into its workspace.
CODING_ENV_AGENT = """
import json, os
names = sorted(os.environ)
leaks = []
runner = os.environ.get("VIBEEVAL_RUNNER_PID", "").partition(":")[0]  # pid:start time
for pid in [runner, str(os.getppid()), *os.listdir("/proc")]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            if b"OPENROUTER_API_KEY=" in handle.read():
                leaks.append(pid)
    except (OSError, ValueError):
        pass
with open("env.json", "w") as handle:
    json.dump({"names": names, "router": os.environ.get("OPENROUTER_API_KEY"), "leaks": leaks}, handle)
"""


@needs_bwrap
@XDIST_MODES
def test_a_coding_agent_in_bwrap_gets_only_the_allowlisted_environment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    _allowlist_environment(monkeypatch)
    script = agent(pytester.path / "agents", "coding_env.py", CODING_ENV_AGENT)
    (pytester.path / "ws").mkdir()
    (pytester.path / "grading").mkdir()
    suite = ALLOWLIST_SUITE.format(script=script, PYTHON=PYTHON)
    coding = "\n  - {name: coding, prompt: p, workspace: ws, grading: grading}\n"
    write(pytester.path / "env.eval.yaml", suite + coding)
    out = pytester.path / "results.json"
    # in a process of its own: what /proc/<pid>/environ shows is the environment a process started with
    args = ("--vibe-sandbox", "bwrap", "--vibe-keep-workspaces", "--vibe-results", str(out))
    result = run(pytester, *args, xdist=xdist, subprocess=True)
    result.assert_outcomes(passed=1)
    record = evals_by_nodeid(load_json(out))["env.eval.yaml::coding[plain]"]
    assert record["sandbox"] == "bwrap"
    answer = load_json(Path(record["workspace"]) / "workspace" / "env.json")
    names = set(answer["names"])
    assert {"PATH", "HOME", "SET_HERE", "PASS_ME_ONE", "NEEDED_BY_AGENT"} <= names
    assert not names & {"OPENROUTER_API_KEY", "VIBE_SECRET_TOKEN", "DB_PASSWORD", "AWS_SECRET_ACCESS_KEY"}
    assert "UNRELATED_SETTING" not in names and answer["router"] is None
    # its own /proc shows only its pid namespace: not the runner's environment, nor any other's
    assert answer["leaks"] == []


def _provider(config: dict[str, object], tmp_path: Path) -> CliProvider:
    configuration = Configuration.model_validate(config)
    return CliProvider("c", configuration, Renderer(TemplateValues()), tmp_path)


def test_a_preset_gets_the_variables_its_cli_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _secrets(monkeypatch)
    for name in (
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_CLOUD_PROJECT",
        "HTTPS_PROXY",
    ):
        monkeypatch.setenv(name, "value-of-" + name)
    expected = {
        "claude-code": {"ANTHROPIC_API_KEY", "HTTPS_PROXY"},
        "codex": {"OPENAI_API_KEY", "HTTPS_PROXY"},
        "aider": {"OPENAI_API_KEY", "HTTPS_PROXY"},
        "gemini": {"GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "HTTPS_PROXY"},
    }
    keys = {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT"}
    for preset, names in expected.items():
        env = _provider({"preset": preset}, tmp_path).request_environment(tmp_path)
        assert names <= set(env), preset
        assert not (keys - names) & set(env), preset  # another vendor's key stays out
        assert not {"OPENROUTER_API_KEY", "VIBE_SECRET_TOKEN", "DB_PASSWORD"} & set(env), preset


def test_a_var_holding_a_placeholder_is_not_expanded_again(tmp_path: Path) -> None:
    renderer = Renderer(TemplateValues(cli_vars={"w": "${PROMPT} and ${MODEL} and ${CONFIG_DIR}"}))
    configuration = Configuration.model_validate(
        {"cli": "agent", "args": ["--w", "{{var('w')}}", "--m", "${MODEL}"], "prompt_via": "argument"}
    )
    provider = CliProvider("c", configuration, renderer, tmp_path)
    request = PromptRequest("the ${MODEL} prompt", "m1", None, "s", "e", "c", tmp_path)
    argv = provider.argv(request)
    # the var stays as given; the prompt, placed by no argument, is appended (once, unexpanded)
    assert argv[1:] == ["--w", "${PROMPT} and ${MODEL} and ${CONFIG_DIR}", "--m", "m1", "the ${MODEL} prompt"]


@XDIST_MODES
def test_vibe_var_holding_prompt_placeholder_reaches_the_agent_as_given(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    script = agent(pytester.path, "argv.py", "import sys, json\nprint(json.dumps(sys.argv[1:]))\n")
    write(
        pytester.path / "v.eval.yaml",
        f"""
        metadata: {{name: v, model: m}}
        configurations:
          a: {{cli: "{PYTHON}", args: ["{script}", "{{{{var('w')}}}}", "${{PROMPT}}"], prompt_via: argument}}
        evals:
          - {{name: e, prompt: "the prompt", checks: [{{match: "*"}}]}}
        """,
    )
    out = pytester.path / "results.json"
    run(pytester, "--vibe-var", "w=${PROMPT}", "--vibe-results", str(out), xdist=xdist).assert_outcomes(
        passed=1
    )
    argv = json.loads(evals_by_nodeid(load_json(out))["v.eval.yaml::e[a]"]["response"])
    assert argv == ["${PROMPT}", "the prompt"]


# --- masking -----------------------------------------------------------------------------------


def test_secret_looking_variables_are_masked_in_their_encodings() -> None:
    environ = {"MY_API_KEY": ROUTER_KEY, "GH_TOKEN": TOKEN, "DB_PASSWORD": PASSWORD, "SHORT_KEY": "abc12"}
    environ |= {"VIBE_SECRET_X": "vibe-secret-x", "EDITOR": "long-but-not-secret"}
    secrets = environment_secrets(environ)
    assert secrets == {ROUTER_KEY, TOKEN, PASSWORD, "vibe-secret-x"}  # < 6 characters: not masked
    assert len("abc12") < MIN_MASKED_LENGTH
    secret = frozenset(secrets)
    for text in (
        ROUTER_KEY,
        ROUTER_KEY.upper(),
        base64.b64encode(ROUTER_KEY.encode()).decode(),
        base64.b64encode(ROUTER_KEY.encode()).decode().rstrip("="),
        quote(PASSWORD, safe=""),
        TOKEN[:7] + "\n" + TOKEN[7:],
        TOKEN[:3] + "\r\n" + TOKEN[3:],
        TOKEN[:3] + "\r" + TOKEN[3:],
    ):
        assert mask(f"<{text}>", secret) == f"<{MASK}>", text
    special = frozenset(environment_secrets({"WEIRD_SECRET": SPECIAL}))
    forms = _encodings(SPECIAL)
    assert len(set(forms)) == len(forms) and SPECIAL not in forms  # each form is another text
    for text in (SPECIAL, *forms, SPECIAL[:9] + "\n" + SPECIAL[9:]):
        assert mask(f"({text})", special) == f"({MASK})", text
    assert set(forms) <= encoded_forms(SPECIAL)
    assert mask("abc12 and long-but-not-secret", secret) == "abc12 and long-but-not-secret"
    assert encoded_forms("abc") == set()  # a short secret is not masked, whoever named it


def test_a_secret_inside_longer_base64_and_lowercase_url_encoding_is_masked() -> None:
    secret = frozenset({ROUTER_KEY, PASSWORD})
    for before, after in (("user:", ""), ("Bearer ", ""), ("", ":rest"), ("x", "yz"), ("xy", "z")):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            text = encode(f"{before}{ROUTER_KEY}{after}".encode()).decode()
            assert MASK in mask(text, secret), (before, after, text)
    basic = base64.b64encode(f"user:{ROUTER_KEY}".encode()).decode()
    assert mask(f"Authorization: Basic {basic}", secret) == f"Authorization: Basic dXNlcjp{MASK}"
    slashed = frozenset({"a/b+c d/e"})
    assert mask("q=a%2fb%2bc%20d%2fe", slashed) == f"q={MASK}"


def test_a_secrets_part_beside_a_cut_is_masked() -> None:
    secret = frozenset({ROUTER_KEY})
    assert mask(keep_start(f"key={ROUTER_KEY}", 14), secret) == f"key={MASK}…"  # 10 of its characters
    assert mask(keep_end(f"{ROUTER_KEY} rest", 12), secret) == f"…{MASK} rest"
    assert mask(f"[cut] …\n{ROUTER_KEY[-MIN_FRAGMENT:]} rest", secret) == f"[cut] …\n{MASK} rest"
    encoded = base64.b64encode(ROUTER_KEY.encode()).decode()
    assert mask(f"{encoded[:20]}…", secret) == f"{MASK}…"
    short = ROUTER_KEY[: MIN_FRAGMENT - 1]
    assert mask(f"{short}… and …{ROUTER_KEY[-3:]}", secret) == f"{short}… and …{ROUTER_KEY[-3:]}"
    assert mask(f"wait… {ROUTER_KEY}…", secret) == f"wait… {MASK}…"


@XDIST_MODES
def test_a_python_callables_prints_and_logs_are_masked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    _secrets(monkeypatch)
    write(
        pytester.path / "app.py",
        """
        import logging, os
        def answer(prompt):
            key = os.environ["OPENROUTER_API_KEY"]  # in-process: the callable sees the environment
            print("calling with", key)
            logging.getLogger("app").warning("key %s", key.upper())
            return "no"
        """,
    )
    write(
        pytester.path / "py.eval.yaml",
        """
        metadata: {name: py, model: m}
        configurations: {app: {python: "app:answer"}}
        evals:
          - {name: fails, prompt: p, checks: [{match: "*yes*"}]}
          - {name: passes, prompt: p, checks: [{match: "*no*"}]}
        """,
    )
    junit = pytester.path / "junit.xml"
    result = run(pytester, "-rA", f"--junitxml={junit}", "-o", "junit_logging=all", xdist=xdist)
    result.assert_outcomes(passed=1, failed=1)
    terminal = result.stdout.str() + result.stderr.str()
    assert "calling with [secret]" in terminal  # the captured section is there, masked
    for text in (terminal, junit.read_text(encoding="utf-8")):
        assert ROUTER_KEY not in text and ROUTER_KEY.upper() not in text


@XDIST_MODES
def test_a_long_prompt_file_and_a_kept_prompt_md_are_masked_after_the_agent_read_them(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    _secrets(monkeypatch)
    checker = agent(
        pytester.path,
        "checker.py",
        """
        import os, sys
        text = sys.stdin.read() if not os.path.exists("prompt.md") else open("prompt.md").read()
        seen = "raw" if os.environ["EXPECT"] in text else "masked"
        print(seen)
        if os.path.exists("prompt.md"):
            open("seen.txt", "w").write(seen)
        """,
    )
    (pytester.path / "ws").mkdir()
    (pytester.path / "grading").mkdir()
    filler = "x" * 20000  # too long for a pipe: the prompt goes through agent.stdin
    write(
        pytester.path / "long.eval.yaml",
        f"""
        metadata: {{name: long, model: m}}
        configurations:
          checker: {{cli: "{PYTHON}", args: ["{checker}"], env: {{EXPECT: "{{{{secret('token')}}}}"}}}}
        evals:
          - {{name: prompt, prompt: "{filler} {{{{secret('token')}}}}", checks: [{{match: "*raw*"}}]}}
          - {{name: coding, prompt: "key {{{{secret('token')}}}}", workspace: ws, grading: grading}}
        """,
    )
    out = pytester.path / "results.json"
    result = run(
        pytester,
        "--basetemp",
        str(pytester.path / "bt"),
        "--vibe-keep-workspaces",
        "--vibe-results",
        str(out),
        xdist=xdist,
    )
    result.assert_outcomes(passed=2)
    records = evals_by_nodeid(load_json(out))
    kept = Path(records["long.eval.yaml::coding[checker]"]["workspace"])
    assert {path.read_text() for path in kept.rglob("seen.txt")} == {"raw"}  # the agent read it raw
    stdin_files = list(pytester.path.rglob("agent.stdin"))
    prompts = list(kept.rglob("prompt.md"))
    # the kept workspace and the kept grading copy (the agent's files, prompt.md among them)
    assert {path.relative_to(kept).as_posix() for path in prompts} == {
        "workspace/prompt.md",
        "grading/prompt.md",
    }
    assert stdin_files
    for path in (*stdin_files, *prompts):
        text = path.read_text(encoding="utf-8")
        assert TOKEN not in text and MASK in text, path


GATEWAY_KEY = "gw-credential-0f1e2d3c4b5a"


@XDIST_MODES
def test_an_http_configurations_key_is_masked_whatever_its_variable_is_called(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    # MY_GATEWAY_CREDENTIAL holds no KEY, TOKEN, SECRET or PASSWORD: it is a secret because
    # api_key_env names it. The server answers with the key it was sent.
    monkeypatch.setenv("MY_GATEWAY_CREDENTIAL", GATEWAY_KEY)
    with ChatServer() as server:
        write(
            pytester.path / "gw.eval.yaml",
            f"""
            metadata: {{name: gw, model: v/whoami}}
            configurations:
              gateway: {{http: {{base_url: "{server.url}", api_key_env: MY_GATEWAY_CREDENTIAL}}}}
            evals:
              - {{name: fails, prompt: who are you, checks: [{{match: "*nothing*"}}]}}
              - {{name: passes, prompt: who are you, checks: [{{match: "my key is *"}}]}}
            """,
        )
        out, junit = pytester.path / "results.json", pytester.path / "junit.xml"
        result = run(
            pytester, "-rA", "-o", "junit_logging=all", "--vibe-results", str(out), f"--junitxml={junit}",
            xdist=xdist,
        )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1)
    assert {r["headers"]["Authorization"] for r in server.requests} == {f"Bearer {GATEWAY_KEY}"}
    records = evals_by_nodeid(load_json(out))
    assert records["gw.eval.yaml::passes[gateway]"]["response"] == f"my key is {MASK}"
    produced = {
        "terminal": result.stdout.str() + result.stderr.str(),
        "results": out.read_text(encoding="utf-8"),
        "junit": junit.read_text(encoding="utf-8"),
    }
    assert f"my key is {MASK}" in produced["terminal"]  # the failure message quotes the answer
    leaks = sorted(
        f"{name}: {form!r}"
        for name, text in produced.items()
        for form in _all_forms(GATEWAY_KEY)
        if form in text
    )
    assert leaks == []


# Reads prompt.md, says whether it held the password (the environment's secret) raw; the grade step
# passes only if it did.
RUNNER_CHECKER = f"""
import pathlib
prompt = pathlib.Path("prompt.md").read_text()
pathlib.Path("seen.txt").write_text("raw" if {PASSWORD!r} in prompt else "masked")
"""


@XDIST_MODES
def test_kept_copies_prompt_md_is_masked_in_the_runners_repository_layout(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """In the unified runner's layout the kept copies are in the repository: the workspace at
    `problems/<name>/.tmp-workspace-*/workspace`, the grading copy beside the grading folder with the
    agent's files in its `workspace/`. A prompt file that holds a secret of the environment reaches
    the agent raw, and both kept prompt.md are masked."""
    _secrets(monkeypatch)
    root = pytester.path
    evals = root / "evals"
    write(evals / "problems" / "task" / "workspace" / "problem.md", "The task.\n")
    write(evals / "grading" / "task" / "keep.txt", "hidden\n")
    write(root / "prompts" / "problems" / "task.md", f"Log in with {PASSWORD}.\n")
    config = evals / "config"
    evaluation = {
        "workspace": "${EVAL_ROOT}/evals/problems/task/workspace",  # EVAL_ROOT: the repository root
        "grading": "${EVAL_ROOT}/evals/grading/task",
        "prompt": "task.md",
        "gradeSteps": ["check"],
    }
    write(config / "eval-config.json", json.dumps({"evaluations": {"task": evaluation}}))
    checker = agent(root.parent / f"agents-{root.name}", "checker.py", RUNNER_CHECKER)
    write_cli_config(
        config / "cli-config.json", {"configurations": {"checker": {"cli": PYTHON, "args": [checker]}}}
    )
    check = "import pathlib; assert pathlib.Path('workspace/seen.txt').read_text() == 'raw'"
    write(config / "command-registry.json", json.dumps({"check": {"command": PYTHON, "args": ["-c", check]}}))
    out = root / "results.json"
    result = run(pytester, "--vibe-keep-workspaces", "--vibe-results", str(out), xdist=xdist)
    result.assert_outcomes(passed=1)  # the agent read the password raw
    workspaces = list((evals / "problems" / "task").glob(".tmp-workspace-*/workspace/prompt.md"))
    gradings = list((evals / "grading").glob(".tmp-grading-*/workspace/prompt.md"))
    assert len(workspaces) == 1 and len(gradings) == 1
    for path in (*workspaces, *gradings):
        text = path.read_text(encoding="utf-8")
        assert PASSWORD not in text and f"Log in with {MASK}." in text, path


# --- the secret grep ---------------------------------------------------------------------------

# Prints the router key it should not have, and the token it was given in every common encoding;
# "fail" in the prompt: on stderr too, and exits 1; "hang": waits for its timeout.
LEAKY_AGENT = """
import base64, html, json, os, sys, urllib.parse
prompt = sys.stdin.read()
token, special = os.environ["GIVEN_TOKEN"], os.environ["GIVEN_SPECIAL"]
forms = [os.environ.get("OPENROUTER_API_KEY", "<no router key>"), token[:8] + "\\n" + token[8:]]
for secret in (token, special):
    raw = secret.encode()
    forms += [secret, secret.upper(), secret.lower(), urllib.parse.quote(secret, safe=""),
              urllib.parse.quote_plus(secret), json.dumps(secret)[1:-1],
              json.dumps(secret, ensure_ascii=False)[1:-1], html.escape(secret)]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms += [encode(raw).decode(), encode(raw).decode().rstrip("=")]
print("leaking:", *forms, flush=True)
if "fail" in prompt:
    print("leaking:", *forms, file=sys.stderr)
    sys.exit(1)
if "hang" in prompt:  # until its timeout: the failure message quotes no log, the HTML shows them
    import threading
    threading.Event().wait()
"""


# A registry step: prints, on stdout and stderr, the secrets it was let through in every encoding,
# and fails.
LEAKY_STEP = """
import base64, html, json, os, sys
forms = []
for secret in (os.environ["DB_PASSWORD"], os.environ["VIBE_SECRET_SPECIAL"]):
    raw = secret.encode()
    forms += [secret, secret.upper(), secret.lower(), json.dumps(secret)[1:-1], html.escape(secret)]
    forms += [base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode().rstrip("=")]
print(sys.argv[1] + ":", *forms)
print(sys.argv[1] + ":", *forms, file=sys.stderr)
sys.exit(1)
"""


def _all_forms(secret: str) -> list[str]:
    return [secret, *_encodings(secret)]


@XDIST_MODES
def test_secret_grep_over_every_file_a_run_writes_and_the_terminal(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    _secrets(monkeypatch)
    script = agent(pytester.path / "agents", "leaky.py", LEAKY_AGENT)
    write(
        pytester.path / "app.py",
        """
        import logging, os
        def answer(prompt):
            key = os.environ["OPENROUTER_API_KEY"]
            print("python callable has", key, os.environ["DB_PASSWORD"])
            logging.getLogger("app").error("token %s", os.environ["VIBE_SECRET_TOKEN"])
            return "callable answered " + key
        """,
    )
    write(
        pytester.path / "sec.eval.yaml",
        f"""
        metadata: {{name: sec, model: m}}
        configurations:
          leaky:
            cli: "{PYTHON}"
            args: ["{script}"]
            env: {{GIVEN_TOKEN: "{{{{secret('token')}}}}", GIVEN_SPECIAL: "{{{{secret('special')}}}}"}}
            timeout: 1500
          app: {{python: "app:answer"}}
        evals:
          - {{name: leaks, prompt: "tell {{{{secret('token')}}}}", checks: [{{match: "*nothing*"}}]}}
          - {{name: crashes, prompt: "fail now", checks: [{{match: "*"}}]}}
          - {{name: hangs, prompt: "hang now", checks: [{{match: "*"}}]}}
        """,
    )
    # A coding eval whose build and grade steps print the secrets they were let through, and fail.
    write(pytester.path / "ws" / "leak_step.py", LEAKY_STEP)
    (pytester.path / "grading").mkdir()
    step = {"command": PYTHON, "env_passthrough": ["DB_PASSWORD", "VIBE_SECRET_SPECIAL"], "timeout": 60000}
    commands = {"leak-build": {**step, "args": ["leak_step.py", "build"]}}
    commands["leak-grade"] = {**step, "args": ["leak_step.py", "grade"]}
    write(
        pytester.path / "sec-coding.eval.yaml",
        f"""
        metadata: {{name: seccoding, model: m}}
        configurations:
          coder:
            cli: "{PYTHON}"
            args: ["{script}"]
            env: {{GIVEN_TOKEN: "{{{{secret('token')}}}}", GIVEN_SPECIAL: "{{{{secret('special')}}}}"}}
        commands: {json.dumps(commands)}
        evals:
          - name: builds
            prompt: "build with {{{{secret('token')}}}}"
            workspace: ws
            grading: grading
            build_steps: [leak-build]
            grade_steps: [leak-grade]
        """,
    )
    outputs = pytester.path / "out"
    outputs.mkdir()
    result = run(
        pytester, "-v", "-rA", "-o", "junit_logging=all",
        "--basetemp", str(outputs / "basetemp"),
        "--vibe-results", str(outputs / "results.json"),
        f"--junitxml={outputs / 'junit.xml'}",
        "--vibe-html", str(outputs / "report.html"),
        "--vibe-history", str(outputs / "history.jsonl"),
        "--vibe-record", str(outputs / "store"),
        "--vibe-keep-workspaces",
        xdist=xdist,
    )  # fmt: skip
    assert result.ret == 1
    written = {
        path: path.read_bytes().decode(errors="replace") for path in outputs.rglob("*") if path.is_file()
    }
    assert {outputs / "results.json", outputs / "junit.xml", outputs / "report.html"} <= set(written)
    records = evals_by_nodeid(load_json(outputs / "results.json"))
    assert "<no router key>" in (records["sec.eval.yaml::leaks[leaky]"]["response"] or "")
    html = written[outputs / "report.html"]
    assert "leaking:" in html and "last 40 lines of" in html  # the log tails are shown, masked
    coding = records["sec-coding.eval.yaml::builds[coder]"]
    assert coding["outcome"] == "failed"
    assert [(step["phase"], step["exit_code"]) for step in coding["steps"]] == [
        ("agent", 0),
        ("build", 1),
        ("grade", 1),
    ]
    # the build step's tail: in the message, and in the HTML report under its step
    assert coding["message"].startswith("build step 'leak-build' exited with code 1\nlast 40 lines of")
    assert f"build: {MASK} {MASK}" in coding["message"]
    assert "build step &#x27;leak-build&#x27;: exit code 1" in html and f"build: {MASK} {MASK}" in html
    produced = {"terminal": result.stdout.str() + result.stderr.str()}
    produced |= {str(path): text for path, text in written.items() if not is_agent_log(path)}
    forms = [form for secret in (ROUTER_KEY, TOKEN, PASSWORD, SPECIAL) for form in _all_forms(secret)]
    forms.append(TOKEN[:8] + "\n" + TOKEN[8:])
    leaks = sorted(f"{name}: {form!r}" for name, text in produced.items() for form in forms if form in text)
    assert leaks == []
    # The agent never had the router key, so not even its own logs hold it.
    agent_logs = [text for path, text in written.items() if is_agent_log(path)]
    assert agent_logs and not any(form in text for text in agent_logs for form in _all_forms(ROUTER_KEY))
    # It did print every form of the secrets it was given: the grep above had them to find.
    assert all(any(form in text for text in agent_logs) for form in _all_forms(SPECIAL))


def test_the_environment_is_scanned_again_only_when_it_changed() -> None:
    watch = EnvironmentWatch()
    environ = os.environ.copy()  # a plain dict is scanned every time
    assert watch.secrets({"MY_TOKEN": "abcdef-123"}) == {"abcdef-123"}
    assert watch.secrets(environ) is not None
    # the live environment: the first look scans, an unchanged one is not scanned again
    assert watch.secrets(os.environ) is not None
    assert watch.secrets(os.environ) is None
    os.environ["PYTEST_CURRENT_TEST"] = "another item (call)"  # pytest sets it for every phase
    assert watch.secrets(os.environ) is None
    os.environ["VIBE_SECRET_WATCHED"] = "late-exported-value"
    try:
        found = watch.secrets(os.environ)
        assert found is not None and "late-exported-value" in found
        assert watch.secrets(os.environ) is None
        assert watch.secrets(os.environ, ["PLAIN_NAME"]) is not None  # new names: a new scan
    finally:
        del os.environ["VIBE_SECRET_WATCHED"]
    assert watch.secrets(os.environ, ["PLAIN_NAME"]) is not None  # a removed variable: changed


def test_the_agents_environment_follows_every_change_of_the_live_one(monkeypatch: pytest.MonkeyPatch) -> None:
    patterns = ["PATH", "VIBE_ALLOWED_*"]
    allowed = AllowedEnvironment(patterns)

    def expected() -> list[tuple[str, str]]:
        return list(allowed_environment(os.environ, patterns).items())

    given = allowed(os.environ)
    assert list(given.items()) == expected()
    given["VIBE_ALLOWED_BY_CALLER"] = "added"  # every call gives a dict of its own
    assert list(allowed(os.environ).items()) == expected()
    monkeypatch.setenv("VIBE_ALLOWED_ONE", "1")
    monkeypatch.setenv("VIBE_NOT_ALLOWED", "2")
    assert list(allowed(os.environ).items()) == expected() and ("VIBE_ALLOWED_ONE", "1") in expected()
    monkeypatch.setenv("VIBE_ALLOWED_ONE", "changed")
    assert allowed(os.environ)["VIBE_ALLOWED_ONE"] == "changed"
    monkeypatch.delenv("VIBE_ALLOWED_ONE")
    assert "VIBE_ALLOWED_ONE" not in allowed(os.environ)
    # pytest changes its variable for every phase: given only where a pattern lets it through
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "another item (call)")
    assert "PYTEST_CURRENT_TEST" not in allowed(os.environ)
    passed_through = AllowedEnvironment(["PYTEST_*"])
    assert passed_through(os.environ)["PYTEST_CURRENT_TEST"] == "another item (call)"
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "yet another item (call)")
    assert passed_through(os.environ)["PYTEST_CURRENT_TEST"] == "yet another item (call)"


@XDIST_MODES
def test_a_secret_a_fixture_exports_during_the_run_is_masked(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    write(
        pytester.path / "conftest.py",
        """
        import pytest


        @pytest.fixture(autouse=True)
        def started_server(monkeypatch):
            monkeypatch.setenv("SERVER_TOKEN", "tok-exported-late-9876")  # a server a fixture starts
        """,
    )
    write(
        pytester.path / "app.py",
        """
        import os
        def answer(prompt):
            return "token " + os.environ["SERVER_TOKEN"]
        """,
    )
    write(
        pytester.path / "late.eval.yaml",
        """
        metadata: {name: late, model: m}
        configurations: {app: {python: "app:answer"}}
        evals:
          - {name: first, prompt: p, checks: [{match: "*nothing*"}]}
          - {name: second, prompt: p, checks: [{match: "*nothing*"}]}
        """,
    )
    result = run(pytester, "-rA", "--vibe-results", "out.json", xdist=xdist)
    result.assert_outcomes(failed=2)
    output = result.stdout.str() + result.stderr.str() + (pytester.path / "out.json").read_text()
    assert "tok-exported-late-9876" not in output
    assert "token [secret]" in output
