"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for the tests, run in a thread.

What it does is chosen by the request's model, so that parallel pytest workers get the same
behaviour: ``ok`` answers (usage with cost), ``nocost`` answers (usage without cost),
``ratelimit`` answers 429 with ``Retry-After: 1`` on a prompt's first request (the value of a
prompt line ``RETRY_AFTER: <value>`` instead, when there is one), ``flaky`` answers
500 on a prompt's first request, ``down`` always answers 503, ``unauthorized`` 401, ``missing``
404, ``garbage`` a body that is not JSON, ``slow`` waits ``SLOW_S`` before answering,
``judge-pass`` / ``judge-fail`` answer a judge's JSON verdict (the latter in a code fence),
``judge-example-first`` the verdict format with ``true`` before its own verdict ``false``,
``judge-slow`` a passing one after ``SLOW_S``,
``judge-garbage`` a sentence, ``judge-flaky`` a sentence to a prompt's first request and a passing
verdict to the next (``judge-…-nocost`` as ``judge-…``, without a cost), ``tools`` and
``tools-forever`` call tools (see ``tool_step``),
``whoami`` answers ``my key is <the bearer token it was sent>``, ``length`` answers with
``finish_reason: length`` (cut off), ``filtered`` with no content and ``finish_reason:
content_filter``, ``refusal`` with no content and a ``refusal``, ``cached`` reports 8 of its 12
input tokens as cached (``prompt_tokens_details``) and no cost. A conversation's latest user message
``WITHHOLD: <kind>`` (``refusal``, ``filtered``) is answered as that model would, whatever the model.
Anything else is answered like ``ok``. The answer is
``echo: <the user message>`` unless the prompt holds a line ``ANSWER: <text>``, then ``<text>``.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SLOW_S = 0.3
USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "cost": 0.00042}


class ChatServer:
    """``keep_alive``: answer in HTTP/1.1 and keep each connection open for the next request, as
    hosted APIs do (by default each answer closes its connection)."""

    def __init__(self, keep_alive: bool = False) -> None:
        self.requests: list[dict[str, Any]] = []  # {"body", "headers"} of every request
        self.seen: Counter[tuple[str, str]] = Counter()
        self.in_flight: Counter[str] = Counter()
        self.max_in_flight: Counter[str] = Counter()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if keep_alive else "HTTP/1.0"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.handle(self, body)

            def do_GET(self) -> None:
                server.handle_get(self)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ChatServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def handle_get(self, handler: BaseHTTPRequestHandler) -> None:
        """GET requests (a subclass's APIs may list models): 404 here."""
        self.send_raw(handler, *self.json_reply(404, {"error": {"message": f"no GET {handler.path}"}}))

    def handle(self, handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        model = str(body.get("model", ""))
        prompt = next((m["content"] for m in body.get("messages", []) if m.get("role") == "user"), "")
        with self.lock:
            self.requests.append({"body": body, "headers": dict(handler.headers)})
            self.seen[model, prompt] += 1
            first = self.seen[model, prompt] == 1
            self.in_flight[model] += 1
            self.max_in_flight[model] = max(self.max_in_flight[model], self.in_flight[model])
        latest = next(
            (m["content"] for m in reversed(body.get("messages", [])) if m.get("role") == "user"), ""
        )
        try:
            kind = model.rsplit("/", 1)[-1]
            if isinstance(latest, str) and latest.startswith("WITHHOLD: "):  # a later turn refused
                kind = latest.removeprefix("WITHHOLD: ")
            if kind in ("slow", "judge-slow"):
                time.sleep(SLOW_S)
            if kind == "ratelimit" and first:
                wait = next(
                    (
                        line[len("RETRY_AFTER: ") :]
                        for line in prompt.splitlines()
                        if line.startswith("RETRY_AFTER: ")
                    ),
                    "1",
                )
                reply = self.json_reply(429, {"error": {"message": "rate limited"}}, {"Retry-After": wait})
            elif (kind == "flaky" and first) or kind == "down":
                reply = self.json_reply(
                    503 if kind == "down" else 500, {"error": {"message": "upstream hiccup"}}
                )
            elif kind == "unauthorized":
                reply = self.json_reply(401, {"error": {"message": "No auth credentials found"}})
            elif kind == "missing":
                reply = self.json_reply(404, {"error": {"message": f"model {model} does not exist"}})
            elif kind.startswith("judge-"):
                verdicts = {
                    "judge-pass": '{"pass": true, "reason": "the response meets the criteria"}',
                    "judge-slow": '{"pass": true, "reason": "the response meets the criteria"}',
                    "judge-fail": '```json\n{"pass": false, "reason": "the response is off topic"}\n```',
                    "judge-example-first": 'The format I must use is {"pass": true, "reason": "..."}. '
                    'My verdict: {"pass": false, "reason": "it is wrong"}',
                }
                answer = verdicts.get(kind.removesuffix("-nocost"), "I think it is probably fine.")
                if kind == "judge-flaky":  # a sentence the first time it is asked, then a verdict
                    answer = "Looks fine to me." if first else verdicts["judge-pass"]
                message = {"role": "assistant", "content": answer}
                usage = {k: v for k, v in USAGE.items() if k != "cost" or not kind.endswith("-nocost")}
                reply = self.json_reply(200, {"choices": [{"index": 0, "message": message}], "usage": usage})
            elif kind == "whoami":  # a server that leaks the key it was sent
                key = handler.headers.get("Authorization", "").removeprefix("Bearer ")
                message = {"role": "assistant", "content": f"my key is {key}"}
                reply = self.json_reply(200, {"choices": [{"index": 0, "message": message}], "usage": USAGE})
            elif kind in ("length", "filtered", "refusal"):
                message = {
                    "role": "assistant",
                    "content": "The answer is 4 and th" if kind == "length" else None,
                }
                if kind == "refusal":
                    message["refusal"] = "I can't help with that."
                reason = {"length": "length", "filtered": "content_filter"}.get(kind, "stop")
                choice = {"index": 0, "message": message, "finish_reason": reason}
                reply = self.json_reply(200, {"choices": [choice], "usage": USAGE})
            elif kind == "cached":
                usage = {
                    "prompt_tokens": 12,
                    "completion_tokens": 5,
                    "prompt_tokens_details": {"cached_tokens": 8},
                }
                message = {"role": "assistant", "content": f"echo: {prompt}"}
                reply = self.json_reply(200, {"choices": [{"index": 0, "message": message}], "usage": usage})
            elif kind == "garbage":
                reply = (200, b"<html>not json</html>", "text/html", None)
            elif kind in ("tools", "tools-forever"):
                message = self.tool_step(kind, prompt, body.get("messages", []))
                reply = self.json_reply(200, {"choices": [{"index": 0, "message": message}], "usage": USAGE})
            else:
                usage = dict(USAGE)
                if kind == "nocost":
                    del usage["cost"]
                answer = f"echo: {prompt}"
                for line in prompt.splitlines():
                    if line.startswith("ANSWER: "):
                        answer = line[len("ANSWER: ") :]
                message = {"role": "assistant", "content": answer}
                reply = self.json_reply(
                    200, {"id": "c1", "choices": [{"index": 0, "message": message}], "usage": usage}
                )
        finally:
            # Out of flight before the answer leaves: once a client has it, it may send the next one.
            with self.lock:
                self.in_flight[model] -= 1
        self.send_raw(handler, *reply)

    @staticmethod
    def tool_step(kind: str, prompt: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
        """A model that uses tools: round k calls the tool of the prompt's k-th ``CALL: <tool>
        <json arguments>`` line; after the last, it answers ``tools said: <the results>``.
        ``tools-forever`` calls the first one in every round."""
        planned = [
            line[len("CALL: ") :].split(" ", 1) for line in prompt.splitlines() if line.startswith("CALL: ")
        ]
        rounds = sum(1 for m in messages if m.get("role") == "assistant" and m.get("tool_calls"))
        if kind == "tools-forever":
            rounds = 0
        if rounds < len(planned):
            name, arguments = (planned[rounds] + ["{}"])[:2]
            call = {
                "id": f"call-{rounds}",
                "type": "function",
                "function": {"name": name, "arguments": arguments},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}
        said = " | ".join(str(m.get("content")) for m in messages if m.get("role") == "tool")
        return {"role": "assistant", "content": f"tools said: {said}"}

    @staticmethod
    def json_reply(
        status: int, data: Any, headers: dict[str, str] | None = None
    ) -> tuple[int, bytes, str, dict[str, str] | None]:
        return status, json.dumps(data).encode(), "application/json", headers

    @staticmethod
    def send_raw(
        handler: BaseHTTPRequestHandler,
        status: int,
        payload: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.end_headers()
        handler.wfile.write(payload)
