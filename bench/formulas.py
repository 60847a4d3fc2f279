"""Score formulas for 1 000 runs. Parse once and evaluate 1 000 times, against simpleeval (the
engine the plugin uses: default operators, the same functions) evaluating the tree parsed once,
and Python's ``eval`` of the expression compiled once; parse and evaluate 1 000 times, against
simpleeval parsing and evaluating it each time."""

from __future__ import annotations

import ast
import math
import time
from collections.abc import Callable
from typing import Any

from simpleeval import SimpleEval, simple_eval

from pytest_vibeeval.scoring.formula import Formula, evaluate, parse_formula

from .common import Row, median_of

RUNS = 1000
FORMULAS = {
    "price_performance (preset)": "price_performance",
    "weighted evals, functions, conditional": "round((critical-math * 3 + translation * 2 + secondary)"
    " / max(total_cost, 0.001), 2) if total > 0 else 0",
}
VALUES: dict[str, float | None] = {
    "success_pct": 75.0,
    "total_cost": 0.0177,
    "total_latency": 42.5,
    "total": 4.0,
    "critical-math": 1.0,
    "translation": 1.0,
    "secondary": 0.0,
}
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "min": min,
    "max": max,
    "abs": abs,
    "round": round,
    "sqrt": math.sqrt,
    "log": math.log,
    "exp": math.exp,
    "clamp": lambda x, lo, hi: min(max(x, lo), hi),
}


def _per_call(loop: Callable[[], object], repeat: int) -> float:
    """Median-of-``repeat`` µs per run of ``loop`` (which does ``RUNS`` runs)."""
    timings = []
    for _ in range(repeat):
        started = time.perf_counter()
        loop()
        timings.append(time.perf_counter() - started)
    return median_of(timings) / RUNS * 1e6


def _python_names(formula: Formula) -> dict[str, Any]:
    """The variables under the identifiers of ``formula.source``."""
    return {formula.python_name(name): VALUES[name] for name in formula.names}


def _loops(text: str) -> dict[str, Callable[[], object]]:
    known = set(VALUES)
    formula = parse_formula(text, known)
    names = _python_names(formula)
    scope = names | FUNCTIONS
    code = compile(formula.source, "<formula>", "eval")
    expected = eval(code, {"__builtins__": {}}, scope)
    floor = simple_eval(formula.source, names=names, functions=FUNCTIONS)
    if evaluate(formula, VALUES, {})[0] != expected or floor != expected:
        raise SystemExit(f"the evaluators disagree on {text!r}")
    tree = ast.parse(formula.source.strip(), mode="eval").body
    engine = SimpleEval(names=names, functions=FUNCTIONS)
    return {
        "simpleeval, parsed once": lambda: [
            engine.eval(formula.source, previously_parsed=tree) for _ in range(RUNS)
        ],
        "ours, parsed once": lambda: [evaluate(formula, VALUES, {}) for _ in range(RUNS)],
        "eval of compiled code": lambda: [eval(code, {"__builtins__": {}}, scope) for _ in range(RUNS)],
        "ours, parse + evaluate": lambda: [
            evaluate(parse_formula(text, known), VALUES, {}) for _ in range(RUNS)
        ],
        "simpleeval": lambda: [
            simple_eval(formula.source, names=names, functions=FUNCTIONS) for _ in range(RUNS)
        ],
    }


def formulas(repeat: int) -> list[Row]:
    rows = []
    for label, text in FORMULAS.items():
        us = {name: _per_call(loop, repeat) for name, loop in _loops(text).items()}
        python = f"Python eval of compiled code {us['eval of compiled code']:.2f} µs/run"
        for ours, floor, note in (
            ("ours, parsed once", "simpleeval, parsed once", python),
            ("ours, parse + evaluate", "simpleeval", ""),
        ):
            rows.append(
                Row(
                    "formula",
                    f"{label}: {ours}, ×{RUNS}",
                    f"{us[ours]:.1f} µs/run",
                    f"{us[floor]:.1f} µs/run ({floor})",
                    us[ours] / us[floor],
                    note="; ".join(filter(None, [f"{us[ours] * RUNS / 1000:.0f} ms for {RUNS} runs", note])),
                )
            )
    return rows
