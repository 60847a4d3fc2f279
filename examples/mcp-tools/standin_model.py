"""A rule-based stand-in for a tool-calling chat model (OpenAI chat-completions API), not a
language model: it reads the request, calls the tracker's tools the way a model would, and
answers from what they returned. Usage and cost are made up (at a rate that looks like a model's).

``StandinModel()`` serves on a free port of 127.0.0.1 in a thread; ``url`` is its base URL.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USD_PER_TOKEN = 0.000002
TEAM = re.compile(r"\bteam (\w+)")
ISSUE = re.compile(r"\b([A-Z]+-\d+)\b")


def _call(name: str, arguments: dict[str, str]) -> dict[str, Any]:
    return {
        "id": f"call-{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def _tool_call(prompt: str, tools: set[str]) -> dict[str, Any] | None:
    """The tool a model would call for this prompt, or None."""
    found = TEAM.search(prompt)
    team = found.group(1) if found else "ENG"
    issue = ISSUE.search(prompt)
    if "create" in prompt.lower() and "create_issue" in tools:
        sentences = [part.strip() for part in prompt.split(".") if part.strip()]
        title = sentences[-1] if len(sentences) > 1 else "New issue"  # "… for team X. <title>."
        return _call("create_issue", {"team": team, "title": title})
    if issue and "get_issue" in tools:
        return _call("get_issue", {"issue_id": issue.group(1)})
    if "list" in prompt.lower() and "list_issues" in tools:
        return _call("list_issues", {"team": team})
    return None


def _verdict(request: str) -> str:
    """A judge's verdict: the response passes when it names the issue's title."""
    response = request.split("RESPONSE:", 1)[-1]
    if "Get familiar with the tracker" in response:
        return json.dumps({"pass": True, "reason": "the response names the item and its state"})
    return json.dumps({"pass": False, "reason": "the response does not describe the item"})


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The chat-completions answer to one request."""
    messages = body.get("messages", [])
    last = messages[-1] if messages else {"role": "user", "content": ""}
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    tools = {tool["function"]["name"] for tool in body.get("tools", [])}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if system.startswith("You are an impartial grader"):
        message["content"] = _verdict(last["content"])
    elif last["role"] == "tool":
        message["content"] = (
            f"Here is what the tracker says:\n{last['content']}\n"
            "Ask me if you need more detail on any of these."
        )
    elif (call := _tool_call(last["content"], tools)) is not None:
        message["tool_calls"] = [call]
    else:
        message["content"] = "I can only help with the tracker."
    words = lambda text: len(str(text or "").split())  # noqa: E731
    prompt_tokens = sum(words(m.get("content")) for m in messages) + 20 * len(tools)
    completion_tokens = words(message["content"]) + 10 * len(message.get("tool_calls", []))
    usage = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost": round((prompt_tokens + completion_tokens) * USD_PER_TOKEN, 8),
    }
    finish = "tool_calls" if "tool_calls" in message else "stop"
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}


class StandinModel:
    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                data = json.dumps(reply(body)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
