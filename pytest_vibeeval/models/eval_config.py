"""eval-config.json: its coding-agent evaluations (ids, workspace, grading, prompt, steps), the
optional promptsDir, sharedInstructions and score, and the command registry's shape."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Annotated

from pydantic import AfterValidator, ConfigDict, Field, TypeAdapter, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from ..scoring.variables import eval_name_clash, eval_name_clashes, variable_clash
from .common import (
    EVAL_NAME_PATTERN,
    RUN_VARIABLES_CONTEXT,
    CodingFields,
    CommandDefinition,
    NonEmptyStr,
    ScoreSpec,
    StepName,
    StrictModel,
    protected_name_problem,
)

DEFAULT_PROMPTS_DIR = "${EVAL_ROOT}/../prompts/problems"


def _eval_id(value: str, info: ValidationInfo) -> str:
    """A valid evaluation id (see :func:`_check_eval_id`), against the validation context's run
    variables (the session's; the built-ins without a context)."""
    return _check_eval_id(value, (info.context or {}).get(RUN_VARIABLES_CONTEXT))


def _check_eval_id(value: str, run_names: Collection[str] | None) -> str:
    """A name for items and formula variables that is not, and defines no, run-wide variable."""
    if not re.fullmatch(EVAL_NAME_PATTERN, value):
        raise PydanticCustomError(
            "eval_id",
            "evaluation id {id} may contain only ASCII letters, digits, '-' and '_' "
            "(it names pytest items and formula variables)",
            {"id": repr(value)},
        )
    protected = protected_name_problem(value) or variable_clash(value, run_names)
    if protected:
        raise PydanticCustomError("eval_id", protected.replace("eval name", "evaluation id"), {})
    return value


EvalId = Annotated[str, AfterValidator(_eval_id)]


class WorkspaceEval(CodingFields):
    """A coding-agent eval: one ``evaluations`` entry of eval-config.json (step lists in camelCase or
    snake_case). In a YAML suite the same keys, in snake_case, sit on an eval beside its inline
    ``prompt``."""

    workspace: NonEmptyStr = Field(
        description="the template folder the agent works in (copied for each item; ${NAME} and "
        "${EVAL_ROOT} are substituted; a relative path starts at ${EVAL_ROOT} in eval-config.json and "
        "at the suite's folder in a YAML suite)"
    )
    grading: NonEmptyStr = Field(
        description="the hidden tests' folder, copied over the finished workspace before the grade steps"
    )
    prompt: NonEmptyStr = Field(description="the prompt file's name, in promptsDir")
    build_steps: list[StepName] = Field(
        default_factory=list,
        alias="buildSteps",
        description="registry steps run in the workspace after the agent, in order; a failing one fails "
        "the eval, and the grade steps still run (as in the unified runner)",
    )
    grade_steps: list[StepName] = Field(
        default_factory=list,
        alias="gradeSteps",
        description="registry steps run after the build in a copy of the workspace with the grading "
        "folder over it; all run, and each must exit 0",
    )


class EvalConfigFile(StrictModel):
    """``eval-config.json``; ``promptsDir`` and ``sharedInstructions`` are optional extensions."""

    evaluations: dict[EvalId, WorkspaceEval] = Field(
        description="the coding-agent evals by id (the id names the items and the formula variables)"
    )
    promptsDir: NonEmptyStr = Field(
        default=DEFAULT_PROMPTS_DIR, description="the folder of the evaluations' prompt files"
    )
    sharedInstructions: NonEmptyStr | None = Field(
        default=None,
        description="a file appended to every prompt.md (default: "
        "${EVAL_ROOT}/../prompts/shared/evaluation-instructions.md where it exists)",
    )
    score: ScoreSpec | None = Field(
        default=None, description="as in YAML suites: formula (default success_pct), min, max"
    )

    @field_validator("evaluations")
    @classmethod
    def _some_and_no_id_is_another_ones_variable(
        cls, value: dict[str, WorkspaceEval]
    ) -> dict[str, WorkspaceEval]:
        """At least one evaluation, and none whose id is another one's variable: ``x_cost`` beside
        ``x`` (a formula's ``x_cost`` would be both; the error names the key)."""
        if not value:  # a config folder that runs nothing, without a word
            raise PydanticCustomError(
                "empty_evaluations", "`evaluations` is empty; an eval-config.json needs at least one", {}
            )
        clashes = eval_name_clashes(value)
        if clashes:  # one error for the mapping: the first clash
            name, owner, variable = clashes[0]
            message = eval_name_clash(name, owner, variable, noun="evaluation", label="id")
            raise PydanticCustomError("eval_name_clash", message, {"key": name})
        return value


# built when first used (an eval-config.json's registry), not when the plugin is imported
REGISTRY = TypeAdapter(dict[StepName, CommandDefinition], config=ConfigDict(defer_build=True))
