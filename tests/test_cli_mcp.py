"""How a suite's ``mcp_server`` is handed to the agent CLIs (providers/cli_mcp.py): the arguments,
environment and settings each preset's CLI gets, without running it (tests/test_real_clis.py runs
the real CLIs with them)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from pytest_vibeeval.loading.templates import Renderer, TemplateValues
from pytest_vibeeval.models import Configuration
from pytest_vibeeval.providers import PromptRequest, ProviderError
from pytest_vibeeval.providers.cli import CliProvider
from pytest_vibeeval.providers.cli_mcp import (
    TOKEN_ENV,
    connection_failure,
    gemini_prefix,
    handover,
    mcp_way,
    recorded_calls,
    unsupported_reason,
    write_settings,
)
from pytest_vibeeval.providers.mcp_tools import McpTarget
from pytest_vibeeval.results import ToolCallRecord
from pytest_vibeeval.runner import mcp_unsupported_reason
from pytest_vibeeval.text_input import WIDE_HINT

TOKEN = "tok-9c1e"
TARGET = McpTarget(url="http://127.0.0.1:9/mcp", name="tracker", token=TOKEN)


def preset(name: str, **keys: object) -> Configuration:
    return Configuration.model_validate({"preset": name, **keys})


def test_claude_code_gets_an_mcp_config_naming_the_token_variable() -> None:
    given = handover("claude-code", TARGET)
    config_arg, strict, allowed = given.args
    assert config_arg.startswith("--mcp-config=")  # the = form: the option takes several values
    assert json.loads(config_arg.removeprefix("--mcp-config=")) == {
        "mcpServers": {
            "tracker": {
                "type": "http",
                "url": TARGET.url,
                "headers": {"Authorization": "Bearer ${VIBEEVAL_MCP_TOKEN}"},
            }
        }
    }
    assert (strict, allowed) == ("--strict-mcp-config", "--allowedTools=mcp__tracker")
    assert dict(given.env) == {TOKEN_ENV: TOKEN}
    assert given.settings is None


def test_an_sse_server_and_a_server_without_token() -> None:
    target = McpTarget(url="http://127.0.0.1:9/sse", name="old")
    given = handover("claude-code", target)
    assert json.loads(given.args[0].split("=", 1)[1]) == {
        "mcpServers": {"old": {"type": "sse", "url": target.url}}
    }
    assert dict(given.env) == {}
    gemini = handover("gemini", target).settings
    assert gemini is not None and gemini[1] == {"mcpServers": {"old": {"url": target.url, "trust": True}}}


def test_codex_gets_config_overrides_that_are_valid_toml() -> None:
    given = handover("codex", TARGET)
    assert given.args[::2] == ("-c",) * 4
    overrides = "\n".join(given.args[1::2])
    assert TOKEN not in overrides
    assert tomllib.loads(overrides) == {
        "mcp_servers": {
            "tracker": {
                "url": TARGET.url,
                "required": True,
                "default_tools_approval_mode": "approve",
                "bearer_token_env_var": TOKEN_ENV,
            }
        }
    }
    assert dict(given.env) == {TOKEN_ENV: TOKEN}


def test_gemini_gets_folder_settings_and_a_trusted_folder(tmp_path: Path) -> None:
    given = handover("gemini", TARGET)
    assert given.args == ()
    assert dict(given.env) == {TOKEN_ENV: TOKEN, "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"general": {"x": 1}, "mcpServers": {"mine": {"httpUrl": "u"}}}))
    write_settings(tmp_path, given)
    assert json.loads(settings.read_text()) == {
        "general": {"x": 1},
        "mcpServers": {
            "mine": {"httpUrl": "u"},
            "tracker": {
                "httpUrl": TARGET.url,
                "trust": True,
                "headers": {"Authorization": "Bearer ${VIBEEVAL_MCP_TOKEN}"},
            },
        },
    }
    assert TOKEN not in settings.read_text()


def test_unreadable_gemini_settings_are_an_error_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text("[1]")
    with pytest.raises(ProviderError, match=r"settings.json: not a JSON object"):
        write_settings(tmp_path, handover("gemini", TARGET))


def test_gemini_settings_saved_with_a_byte_order_mark_are_merged(tmp_path: Path) -> None:
    """A workspace's settings.json saved on Windows (a UTF-8 byte-order mark, CRLF line ends) is read
    as every other text file is, and written back as plain UTF-8."""
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes(b"\xef\xbb\xbf" + b'{\r\n  "general": {"x": "caf\xc3\xa9"}\r\n}\r\n')
    write_settings(tmp_path, handover("gemini", TARGET))
    written = settings.read_bytes()
    assert not written.startswith(b"\xef\xbb\xbf")
    loaded = json.loads(written.decode("utf-8"))
    assert loaded["general"] == {"x": "café"} and list(loaded["mcpServers"]) == ["tracker"]


def test_gemini_settings_in_utf16_are_an_error_naming_the_encoding(tmp_path: Path) -> None:
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_bytes('{"general": {}}'.encode("utf-16"))
    with pytest.raises(ProviderError) as raised:
        write_settings(tmp_path, handover("gemini", TARGET))
    assert str(raised.value) == (
        f"cannot add the suite's mcp_server to {settings}: the file is UTF-16 (little-endian), with a "
        f"byte-order mark, not UTF-8; {WIDE_HINT}"
    )


COMMENTED = """// shared settings
{
  /* a block
     comment */ "general": {"url": "http://example.com/x", "note": "// not a comment", "q": "a\\\\"},
  "mcpServers": {"mine": {"httpUrl": "u"}} // the team's own server
}
"""


def test_gemini_settings_with_comments_are_merged_without_them(tmp_path: Path) -> None:
    """gemini strips ``//`` and ``/* */`` comments from its settings.json (strip-json-comments)
    before parsing it: such a file gets the server, keeps its settings and is written back as JSON
    without the comments; ``//`` inside a string is text."""
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(COMMENTED, encoding="utf-8")
    write_settings(tmp_path, handover("gemini", TARGET))
    loaded = json.loads(settings.read_text(encoding="utf-8"))
    assert loaded["general"] == {"url": "http://example.com/x", "note": "// not a comment", "q": "a\\"}
    assert list(loaded["mcpServers"]) == ["mine", "tracker"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('// a comment\n{"general": {},}\n', "a comma after the last entry: line 2 column 15"),
        ('{\n  /* two\n  lines */ "general": nope\n}\n', "Expecting value: line 3 column 23"),
        ('{"general": {}} /* not closed\n', None),
    ],
)
def test_gemini_settings_with_comments_and_an_error_name_its_line(
    tmp_path: Path, text: str, said: str | None
) -> None:
    """A syntax error is reported at its line and column in the file as written (a comment
    counts); a trailing comma stays an error, as in gemini. An unclosed comment ends the file."""
    settings = tmp_path / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(text, encoding="utf-8")
    if said is None:
        write_settings(tmp_path, handover("gemini", TARGET))
        assert list(json.loads(settings.read_text(encoding="utf-8"))) == ["general", "mcpServers"]
        return
    with pytest.raises(ProviderError) as raised:
        write_settings(tmp_path, handover("gemini", TARGET))
    assert str(raised.value).startswith(f"cannot add the suite's mcp_server to {settings}: {said}")


def test_gemini_tool_names_are_recorded_as_mcp__server__tool() -> None:
    calls = [
        ToolCallRecord(tool="mcp_tracker_list_issues", success=True),
        ToolCallRecord(tool="read_file", success=False),
    ]
    assert [c.tool for c in recorded_calls("gemini", TARGET, calls)] == [
        "mcp__tracker__list_issues",
        "read_file",
    ]
    assert recorded_calls("claude-code", TARGET, calls) == calls
    assert gemini_prefix("my server") == "mcp_my_server_"


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (preset("claude-code"), None),
        (preset("codex", args=["exec", "--json"]), None),  # own args keep the handover
        (preset("gemini"), None),
        (preset("aider"), "runs preset 'aider', which cannot be given the suite's mcp_server; use preset "),
        (preset("llxprt"), "runs preset 'llxprt'"),
        (Configuration.model_validate({"cli": "agent"}), "runs a CLI without a preset"),
    ],
)
def test_which_cli_configurations_take_the_server(config: Configuration, expected: str | None) -> None:
    reason = unsupported_reason(config, "c", TARGET)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason
        assert "claude-code, codex or gemini" in reason


def test_codex_refuses_sse_and_names_toml_cannot_hold() -> None:
    sse = McpTarget(url="http://127.0.0.1:9/sse", name="tracker")
    assert "Streamable HTTP only" in str(unsupported_reason(preset("codex"), "c", sse))
    odd = McpTarget(url=TARGET.url, name="my.server")
    assert "letters, digits, _ and - only" in str(unsupported_reason(preset("codex"), "c", odd))
    assert unsupported_reason(preset("claude-code"), "c", sse) is None


def test_the_runner_skips_only_the_clis_that_cannot_take_it() -> None:
    mcp = {"url": TARGET.url, "name": "tracker", "authorization_token": TOKEN, "transport": "auto"}
    assert mcp_unsupported_reason(None, "implicit", mcp) is None
    assert mcp_unsupported_reason(preset("claude-code"), "c", mcp) is None
    assert "preset 'aider'" in str(mcp_unsupported_reason(preset("aider"), "a", mcp))
    assert mcp_way(preset("aider")) is None


def test_the_cli_provider_places_the_handover_before_an_appended_prompt(tmp_path: Path) -> None:
    config = preset("claude-code", prompt_via="argument", args=["-p"])
    provider = CliProvider("c", config, Renderer(TemplateValues({}, {}, {})), tmp_path)
    mcp = {"url": TARGET.url, "name": "tracker", "authorization_token": TOKEN}
    request = PromptRequest("hello", "m", None, "s", "e", "c", tmp_path, mcp)
    target, given = provider.mcp_handover(request)
    assert target == TARGET
    argv = provider.argv(request, given.args)
    assert argv[:2] == ["claude", "-p"] and argv[-1] == "hello"
    assert argv[2].startswith("--mcp-config=") and TOKEN not in " ".join(argv)


def test_a_cli_that_cannot_take_the_server_errors_if_asked_anyway(tmp_path: Path) -> None:
    provider = CliProvider("a", preset("aider"), Renderer(TemplateValues({}, {}, {})), tmp_path)
    request = PromptRequest("hi", "m", None, "s", "e", "a", tmp_path, {"url": TARGET.url, "name": "t"})
    with pytest.raises(ProviderError, match="runs preset 'aider'"):
        provider.answer(request)


def test_claude_codes_init_event_tells_a_server_it_could_not_connect_to(tmp_path: Path) -> None:
    stdout = tmp_path / "agent.stdout"
    init = {"type": "system", "subtype": "init", "mcp_servers": [{"name": "tracker", "status": "failed"}]}
    stdout.write_text(json.dumps(init) + "\n")
    message = connection_failure("claude-code", TARGET, stdout)
    assert message == (
        "claude-code could not connect to the MCP server 'tracker' at http://127.0.0.1:9/mcp "
        "(status 'failed'); check mcp_server.url and authorization_token"
    )
    stdout.write_text(json.dumps({**init, "mcp_servers": [{"name": "tracker", "status": "connected"}]}))
    assert connection_failure("claude-code", TARGET, stdout) is None
    stdout.write_text("not json\n")
    assert connection_failure("claude-code", TARGET, stdout) is None  # the parser reports it
    assert connection_failure("gemini", TARGET, stdout) is None
