"""A STAND-IN FOR THREE JUDGE MODELS, not a language model: the judge configuration `panel` calls
`grade` for each model a check's `judges:` lists (`context.model`). It scores the reply against the
rubric's two parts by keywords, each persona a little differently, and answers the JSON score
`llm_judge` asks for, with made-up usage."""

from __future__ import annotations

import json
from typing import Any

THANKS = ("sorry", "thank")
NEXT_STEP = ("will", "open", "now", "today", "within")
LEANING = {"example/strict-judge": -0.1, "example/kind-judge": 0.1, "example/brief-judge": 0.0}


def grade(prompt: str, context: Any) -> dict[str, Any]:
    reply = prompt.split("RESPONSE:\n", 1)[-1].lower()
    polite = any(word in reply for word in THANKS)
    next_step = any(f" {word}" in reply for word in NEXT_STEP)
    score = 0.1 + 0.4 * polite + 0.4 * next_step + LEANING.get(context.model, 0.0)
    score = round(min(1.0, max(0.0, score)), 2)
    parts = [
        "it apologises or thanks" if polite else "no apology or thanks",
        "says what happens next" if next_step else "no next step",
    ]
    answer = json.dumps({"score": score, "reasoning": f"{'; '.join(parts)}."})
    return {"response": answer, "input_tokens": len(prompt.split()), "output_tokens": 20, "cost": 0.0001}
