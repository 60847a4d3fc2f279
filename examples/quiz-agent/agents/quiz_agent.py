#!/usr/bin/env python3
"""EXAMPLE AGENT: a stand-in for an agent CLI such as `claude -p` or `codex exec`.

It reads the prompt from stdin (or from its last argument with --prompt-arg), answers from a
small table, and prints either plain text or one JSON document with made-up usage and cost, the
way real agent CLIs report them. Where VIBEEVAL_TRANSCRIPT names a file (a configuration with
`transcript:`), it also logs its two "tool calls" there, one JSON line each, as an agent's
post-execution hook writes executions.jsonl. Deterministic answers, offline, no API keys.
"""

import datetime
import json
import os
import sys

FACTS = {
    "capital of france": "The capital of France is Paris.",
    "15 * 7": "15 * 7 = 105.",
    "hello": "Hola is 'hello' in Spanish.",
    "sky": "On a clear day the sky is blue.",
    "strawberry": "There are three Rs in 'strawberry'.",
}


def main() -> int:
    args = sys.argv[1:]
    prompt = args[-1] if "--prompt-arg" in args else sys.stdin.read()
    lowered = prompt.lower()
    answer = next((text for key, text in FACTS.items() if key in lowered), "I do not know.")
    log_tool_calls(found=answer != "I do not know.")
    if "--json" not in args:
        print(answer)
        return 0
    output_tokens = len(answer.split())
    print(
        json.dumps(
            {
                "type": "result",
                "result": answer,
                "total_cost_usd": round(0.0004 + 0.00002 * output_tokens, 6),
                "usage": {"input_tokens": len(prompt.split()), "output_tokens": output_tokens},
            }
        )
    )
    return 0


def log_tool_calls(found: bool) -> None:
    """Two calls: a lookup (fails when no fact matches) and composing the answer; values as strings,
    as a shell hook writes them."""
    path = os.environ.get("VIBEEVAL_TRANSCRIPT")
    if not path:
        return
    now = datetime.datetime.now(datetime.UTC).isoformat()
    calls = [
        {"ts": now, "tool": "lookup_fact", "exit": "0" if found else "1", "success": str(found).lower()},
        {"ts": now, "tool": "compose_answer", "exit": "0", "success": "true"},
    ]
    with open(path, "a", encoding="utf-8") as log:
        log.writelines(json.dumps(call) + "\n" for call in calls)


if __name__ == "__main__":
    sys.exit(main())
