"""A workspace template that is the folder holding its own config (``"workspace": "${EVAL_ROOT}"``
in the seed's layout) is still collected: skipping the folders a config names must never hide the
config itself and leave a silent "no tests ran"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import XDIST_MODES, run

from pytest_vibeeval.loading.named_folders import is_named_folder


def make_self_named_evals(root: Path) -> Path:
    """An ``evals/`` folder in the seed's layout whose only workspace template is ``evals/``."""
    evals = root / "evals"
    (evals / "config").mkdir(parents=True)
    (root / "prompts" / "problems").mkdir(parents=True)
    (root / "prompts" / "problems" / "whole.md").write_text("Change nothing.\n")
    (evals / "grading").mkdir()
    configs = {
        "eval-config.json": {
            "evaluations": {
                "whole": {
                    "workspace": "${EVAL_ROOT}",
                    "grading": "${EVAL_ROOT}/grading",
                    "prompt": "whole.md",
                    "buildSteps": [],
                    "gradeSteps": ["ok"],
                }
            }
        },
        "command-registry.json": {"ok": {"command": "true", "args": []}},
        "cli-config.json": {"configurations": {"noop": {"cli": "true", "name": "No-op"}}},
    }
    for name, content in configs.items():
        (evals / "config" / name).write_text(json.dumps(content))
    return evals


def test_a_folder_holding_the_config_that_names_it_is_not_skipped(tmp_path: Path) -> None:
    evals = make_self_named_evals(tmp_path)
    assert not is_named_folder(evals, {})
    assert is_named_folder(evals / "grading", {})


@XDIST_MODES
def test_the_whole_evals_folder_as_workspace_collects_and_runs(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_self_named_evals(pytester.path)
    result = run(pytester, xdist=xdist)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.assert_outcomes(passed=1)
