"""Formulas are checked when the suite is collected: bad ones fail that file, and nothing in them runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import PYTHON, XDIST_MODES, run, write, write_cli_config

SUITE = """
metadata: {{name: s, model: m}}
evals:
  - prompt: Say hello
    checks: [{{match: "*hello*"}}]
  - name: math
    prompt: 2 + 2
    checks: [{{match: "*4*"}}]
score:
  formula: {formula}
configurations: {{app: {{python: "app:answer"}}}}
"""

ATTACKS = [
    "__import__('os').system('touch {marker}')",
    "().__class__",
    "(1).real",
    "'a'*10**9",
    "9**9**9",
    " + ".join(["math"] * 5000),
    "lambda: open('{marker}', 'w')",
    "[open('{marker}', 'w') for x in (1,)]",
    "math.real",
]


def _suite(directory: Path, formula: str) -> None:
    write(directory / "app.py", "def answer(prompt):\n    return 'hello 4'\n")
    write(directory / "s.eval.yaml", SUITE.format(formula=repr(formula)))


@pytest.mark.parametrize("attack", ATTACKS, ids=[a[:24] for a in ATTACKS])
def test_attack_formulas_fail_collection_and_nothing_executes(pytester: pytest.Pytester, attack: str) -> None:
    marker = pytester.path / "PWNED"
    _suite(pytester.path, attack.format(marker=marker))
    result = run(pytester, "--collect-only")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "s.eval.yaml:9: score.formula:" in out
    assert "^" in out  # a caret under the offending part
    assert "Traceback" not in out
    assert not marker.exists()
    assert not (pytester.path / ".vibeeval").exists()  # --collect-only writes no results


def test_a_formula_using_an_unnamed_eval_says_how_to_name_it(pytester: pytest.Pytester) -> None:
    _suite(pytester.path, "say-hello * 2 + math")
    result = run(pytester, "--collect-only")
    result.stdout.fnmatch_lines(
        [
            "s.eval.yaml:9: score.formula: 'say-hello' is the generated id of evals[0] (line 3), which"
            " has no `name`; only named evals can be used in a formula: add `name: say-hello` to that eval",
            "      say-hello * 2 + math",
            "      ^^^^^^^^^",
        ]
    )


@XDIST_MODES
def test_a_bad_formula_stops_only_its_own_file(pytester: pytest.Pytester, xdist: list[str]) -> None:
    _suite(pytester.path / "bad", "succes_pct")
    _suite(pytester.path / "good", "success_pct")
    (pytester.path / "good" / "s.eval.yaml").rename(pytester.path / "good" / "ok.eval.yaml")
    (pytester.path / "good" / "app.py").rename(pytester.path / "good" / "app_good.py")
    text = (pytester.path / "good" / "ok.eval.yaml").read_text().replace("app:answer", "app_good:answer")
    (pytester.path / "good" / "ok.eval.yaml").write_text(text)
    result = run(pytester, xdist=xdist, subprocess=bool(xdist))
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*bad/s.eval.yaml:9: score.formula: unknown variable 'succes_pct'*"])


# --------------------------------------------------------------------------- eval names vs variables

CLASHING_SUITE = """
metadata: {name: s, model: m}
evals:
  - name: x
    prompt: Say hello
    checks: [{match: "*hello*"}]
  - name: x_cost
    prompt: 2 + 2
    checks: [{match: "*4*"}]
score:
  formula: x_cost
configurations: {app: {python: "app:answer"}}
"""


def test_an_eval_named_like_another_evals_variable_fails_collection(pytester: pytest.Pytester) -> None:
    """``x_cost`` would read eval x's cost instead of eval x_cost's pass flag: refused, both named."""
    write(pytester.path / "app.py", "def answer(prompt):\n    return 'hello 4'\n")
    write(pytester.path / "s.eval.yaml", CLASHING_SUITE)
    result = run(pytester, "--collect-only")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "s.eval.yaml:6: evals[1].name: eval name 'x_cost' clashes with eval 'x' (evals[0], line 3):"
            " in a score formula 'x_cost' would be both this eval's pass flag and that eval's"
            " `<name>_cost` variable; rename one of the two evals",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_an_evaluation_id_named_like_another_ones_variable_fails_collection(
    pytester: pytest.Pytester,
) -> None:
    evals = pytester.path / "evals"
    entries = {}
    for eval_id in ("calc", "calc_rubric"):
        write(evals / "problems" / eval_id / "main.py", "")
        write(evals / "grading" / eval_id / "test.py", "")
        write(pytester.path / "prompts" / "problems" / f"{eval_id}.md", "Fix it.\n")
        entries[eval_id] = {
            "workspace": f"${{EVAL_ROOT}}/problems/{eval_id}",
            "grading": f"${{EVAL_ROOT}}/grading/{eval_id}",
            "prompt": f"{eval_id}.md",
        }
    config = evals / "config"
    write(config / "eval-config.json", json.dumps({"evaluations": entries}, indent=2))
    write_cli_config(
        config / "cli-config.json", {"configurations": {"nop": {"cli": PYTHON, "args": ["-c", ""]}}}
    )
    write(config / "command-registry.json", "{}")
    result = run(pytester, "--collect-only")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "evals/config/eval-config.json:8: evaluations.calc_rubric: evaluation id 'calc_rubric' clashes"
            " with evaluation 'calc': in a score formula 'calc_rubric' would be both this evaluation's"
            " pass flag and that evaluation's `<name>_rubric` variable; rename one of the two evaluations",
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_a_formula_over_several_lines_is_shown_and_recorded_on_one_line(pytester: pytest.Pytester) -> None:
    write(pytester.path / "ml_app.py", "def answer(prompt):\n    return prompt\n")
    write(
        pytester.path / "ml.eval.yaml",
        """
        metadata: {name: ml, model: m}
        configurations: {app: {python: "ml_app:answer"}}
        evals:
          - {name: critical-math, prompt: "4", checks: [{equals: "4"}]}
        score:
          formula: |
            (critical-math  *  2
             + success_pct) / 2
        """,
    )
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, "--vibe-breakdown")
    result.assert_outcomes(passed=1)
    one_line = "(critical-math * 2 + success_pct) / 2"
    result.stdout.fnmatch_lines([f"Score: 51.00 (formula: {one_line})", "  (1 * 2 + 100) / 2 = 51.00"])
    [run_record] = json.loads(results.read_text(encoding="utf-8"))["runs"]
    assert run_record["score_formula"] == one_line
    assert run_record["score_breakdown"] == "(1 * 2 + 100) / 2"


def test_a_number_beyond_floats_fails_collection_with_a_caret(pytester: pytest.Pytester) -> None:
    """1e400 reads as inf, and (1e400 - 1e400) > 0 would compare nan: refused where it is written."""
    _suite(pytester.path, "(1e400 - 1e400) > 0")
    result = run(pytester, "--collect-only")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "s.eval.yaml:9: score.formula: the number 1e400 is beyond the largest float (about 1.8e308)",
            "      (1e400 - 1e400) > 0",
            "      *^^^^^",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@XDIST_MODES
def test_a_comparison_with_nan_is_a_score_error_not_false(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    """A value past the floats (inf) minus itself is nan, and nan > 0 is false in Python: the
    score is null with the reason, naming the formula and the operation that left the numbers."""
    formula = "(success_pct * 1e307 - success_pct * 1e307) > 0"
    _suite(pytester.path, formula)
    results = pytester.path / "results.json"
    result = run(pytester, "--vibe-results", results, xdist=xdist, subprocess=bool(xdist))
    result.assert_outcomes(passed=2)
    reason = f"100 * 1e+307 is inf (not a finite number) in {formula!r}"
    result.stdout.fnmatch_lines([f"Score: null (formula: {formula})", f"  score error: {reason}"])
    [run_record] = json.loads(results.read_text(encoding="utf-8"))["runs"]
    assert (run_record["score"], run_record["score_error"]) == (None, reason)
