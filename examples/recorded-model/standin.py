"""EXAMPLE STAND-IN MODEL: a rule-based stand-in used once to make this example's recordings.

It is not a language model. It answers this suite's three questions and the judge's requests the
way a model would, so that `recordings/` could be written with --vibe-record without an API key
(see README.md here). Deterministic, offline.
"""

import json

ANSWERS = {
    "What is the capital of France?": "The capital of France is Paris.",
    "Which river is the longest in Africa?": "The Nile is the longest river in Africa.",
    "What is the tallest mountain on Earth above sea level?": "Mount Everest is the tallest, at 8,849 m.",
}


def answer(prompt: str, context: dict) -> dict:
    if prompt.startswith("CRITERIA:"):  # a request of the llm_judge judge
        passed = "Nile" in prompt.split("RESPONSE:", 1)[1]
        reason = "the response names the Nile" if passed else "the response does not name the Nile"
        verdict = json.dumps({"pass": passed, "reason": reason})
        return {"response": verdict, "input_tokens": 95, "output_tokens": 14, "cost": 0.00049}
    text = ANSWERS.get(prompt, "I do not know.")
    return {"response": text, "input_tokens": 24, "output_tokens": len(text.split()) + 2, "cost": 0.00021}
