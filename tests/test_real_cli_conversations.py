"""Contract tests: the agent CLIs whose presets continue a session (claude-code with
``--resume <session_id>``, codex with ``exec … resume <thread_id> -``), run for real through a
conversation eval (``turns:``) against a scripted API server on 127.0.0.1, each with a private
HOME; and a preset that cannot continue one (gemini) skips such evals, saying why. Serial and
with ``-n 2``. They skip
where node or the CLIs' install (``tests/real_clis/install.py``) is missing.

The scripted model answers with every code word it finds in the user messages of its request:
the second turn's answer holds the first turn's word only when the CLI sent the first turn along,
that is when it continued the session.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import XDIST_MODES, evals_by_nodeid, load_json, run, write
from real_clis.api_server import RESPONSES_USAGE, USAGE_IN, USAGE_OUT, AgentApiServer, _strings, sse
from real_clis.configs import cli_configuration
from real_clis.install import CLIS, missing_reason

SCENARIO = "recall"
WORD = re.compile(r"\bCODEWORD-[A-Z]+\b")


class RecallServer(AgentApiServer):
    """The agent CLIs' API server with one more scenario, ``recall``: the answer is ``heard:``
    and the code words of the request's user messages, in order."""

    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        scenario, path = self.split(handler.path)
        if scenario != SCENARIO:
            super().handle(handler, body)
            return
        with self.lock:
            self.requests.append({"body": body, "headers": dict(handler.headers), "path": handler.path})
        if path.endswith("/messages"):
            self.send_sse(handler, anthropic_events(recall(body.get("messages")), body))
        elif path.endswith("/responses"):
            self.send_sse(handler, responses_events(recall(body.get("input")), len(self.requests)))
        else:  # count_tokens, model lists: as every scenario answers them
            self.route(handler, "plain", path, body)


def recall(messages: Any) -> str:
    words: list[str] = []
    for message in messages if isinstance(messages, list) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            words += [w for text in _strings(message.get("content")) for w in WORD.findall(text)]
    return "heard: " + " ".join(dict.fromkeys(words))


def anthropic_events(text: str, body: dict[str, Any]) -> bytes:
    usage = {"input_tokens": USAGE_IN, "output_tokens": USAGE_OUT}
    message = {
        "id": "msg_recall",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "scripted"),
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    return sse(
        [
            ("message_start", {"type": "message_start", "message": message}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            ),
            (
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": USAGE_OUT},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def responses_events(text: str, number: int) -> bytes:
    item = {
        "type": "message",
        "id": f"msg_{number}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    response = {"id": f"resp_{number}", "object": "response", "status": "in_progress", "output": []}
    usage = RESPONSES_USAGE
    done = {**response, "status": "completed", "output": [item], "usage": usage}
    added = {"type": "response.output_item.added", "output_index": 0, "item": item}
    finished = {"type": "response.output_item.done", "output_index": 0, "item": item}
    return sse(
        [
            ("response.created", {"type": "response.created", "response": response}),
            ("response.output_item.added", added),
            ("response.output_item.done", finished),
            ("response.completed", {"type": "response.completed", "response": done}),
        ]
    )


@pytest.fixture(scope="module")
def api() -> Iterator[RecallServer]:
    with RecallServer() as server:
        yield server


def configuration(preset: str, api: RecallServer, homes: Path) -> dict[str, Any]:
    reason = missing_reason(CLIS[preset])
    if reason:
        pytest.skip(reason)
    base = api.url.rsplit("/v1", 1)[0]
    return cli_configuration(preset, f"{base}/{SCENARIO}", homes / preset)


def conversation_suite(directory: Path, configurations: dict[str, Any]) -> None:
    data = {
        "metadata": {"name": "resume", "model": "unused"},
        "evals": [
            {
                "name": "recall",
                "turns": [
                    {"prompt": "Remember CODEWORD-ALPHA.", "checks": [{"contains": "CODEWORD-ALPHA"}]},
                    {
                        "prompt": "Now also CODEWORD-BRAVO. Which words have I told you?",
                        "checks": [{"match": "*CODEWORD-ALPHA CODEWORD-BRAVO*"}],
                    },
                    {
                        "prompt": "And CODEWORD-CHARLIE?",
                        "checks": [{"contains": "CODEWORD-ALPHA CODEWORD-BRAVO CODEWORD-CHARLIE"}],
                    },
                ],
            }
        ],
        "configurations": configurations,
    }
    write(directory / "resume.eval.yaml", yaml.safe_dump(data, sort_keys=False))


@XDIST_MODES
def test_claude_code_and_codex_continue_their_sessions(
    pytester: pytest.Pytester, api: RecallServer, xdist: list[str]
) -> None:
    presets = [preset for preset in ("claude-code", "codex") if missing_reason(CLIS[preset]) is None]
    if not presets:
        pytest.skip(missing_reason(CLIS["claude-code"]) or "no CLI installed")
    configurations = {p: configuration(p, api, pytester.path / "homes") for p in presets}
    able_to_run = missing_reason(CLIS["gemini"]) is None
    if able_to_run:  # installed, so that the skip is for the conversation, not a missing CLI
        configurations["gemini"] = configuration("gemini", api, pytester.path / "homes")
    conversation_suite(pytester.path, configurations)
    path = pytester.path / "results.json"
    result = run(pytester, "-rA", "--vibe-results", str(path), xdist=xdist, subprocess=True)
    assert path.is_file(), result.stdout.str() + result.stderr.str()
    records = {
        r["nodeid"].rsplit("[", 1)[1].rstrip("]"): r for r in evals_by_nodeid(load_json(path)).values()
    }
    for preset in presets:
        record = records[preset]
        assert record["outcome"] == "passed", record["message"]
        turns = record["turns"]
        assert [t["outcome"] for t in turns] == ["passed"] * 3
        assert turns[2]["response"] == "heard: CODEWORD-ALPHA CODEWORD-BRAVO CODEWORD-CHARLIE"
        # one agent run per turn, the later ones continuing the first one's session
        argvs = [step["argv"] for step in record["steps"]]
        assert len(argvs) == 3
        resumed = "--resume" if preset == "claude-code" else "resume"
        assert resumed not in argvs[0]
        session_ids = {argv[argv.index(resumed) + 1] for argv in argvs[1:]}
        assert len(session_ids) == 1 and re.fullmatch(r"[0-9a-f-]{36}", session_ids.pop())
        # each request reports USAGE_IN and USAGE_OUT: a turn's own, though codex reports the session's
        assert [(t["input_tokens"], t["output_tokens"]) for t in turns] == [(USAGE_IN, USAGE_OUT)] * 3
        assert (record["input_tokens"], record["output_tokens"]) == (3 * USAGE_IN, 3 * USAGE_OUT)
    if able_to_run:
        skipped = records["gemini"]
        assert skipped["outcome"] == "skipped" and skipped["steps"] == []
        assert skipped["message"].startswith("configuration 'gemini' cannot continue a conversation: ")
        assert "the gemini preset has no way to continue a session here" in skipped["message"]
    result.assert_outcomes(passed=len(presets), skipped=1 if able_to_run else 0)
