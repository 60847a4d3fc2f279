"""The application of resumed.eval.yaml: each answer is logged in runs.log."""

import pathlib


def answer(prompt):
    with open(pathlib.Path(__file__).parent / "runs.log", "a") as log:
        log.write(prompt + "\n")
    return {"response": "ok", "input_tokens": 1000, "output_tokens": 100}
