#!/usr/bin/env python3
"""EXAMPLE AGENT: a stand-in for an agent CLI such as `claude -p` or `codex exec`.

It reads the prompt from stdin (or from its last argument with --prompt-arg), answers from a
small table, and prints either plain text or one JSON document with made-up usage and cost, the
way real agent CLIs report them. Deterministic, offline, no API keys.
"""

import json
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


if __name__ == "__main__":
    sys.exit(main())
