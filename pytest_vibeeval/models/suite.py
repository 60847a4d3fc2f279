"""A vibecheck-style YAML suite: its evals (prompt evals and coding-agent evals) and its top level.

Checks are kept raw here and parsed by :mod:`pytest_vibeeval.loading.suite` against the check registry,
so plugins can add check types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import (
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .common import (
    CodingFields,
    CommandDefinition,
    ConfigId,
    EvalName,
    Metadata,
    NonEmptyStr,
    ScoreSpec,
    StepName,
    StrictModel,
    Tag,
)
from .configuration import (
    Configuration,
)


class TurnSpec(StrictModel):
    """One user message of a conversation eval, with the checks its answer must pass."""

    prompt: NonEmptyStr = Field(description="the user's message (templates filled in, as in `prompt`)")
    checks: Any = Field(
        default=None,
        description="checks on this turn's answer: a list (all must pass) or {or: [...]}; "
        "none: the turn only sets the conversation up",
    )


class EvalSpec(CodingFields):
    """One eval of a YAML suite: a prompt with checks, or (with ``workspace`` and ``grading``) a
    coding-agent eval whose build and grade steps decide it."""

    name: EvalName | None = Field(
        default=None,
        description="the eval's id and formula variable: letters, digits, - and _, unique in the suite; "
        "default: an id made from the prompt",
    )
    prompt: NonEmptyStr | None = Field(
        default=None,
        description="the prompt (templates filled in); in a coding-agent eval, the problem prompt that "
        "starts prompt.md. A conversation has `turns` instead",
    )
    turns: list[TurnSpec] | None = Field(
        default=None,
        description="a conversation instead of `prompt`: user messages in order, each with its own "
        "`checks`; the model sees the earlier messages and its own answers; the eval passes when "
        "every turn's checks pass",
    )
    checks: Any = Field(
        default=None, description="a list of checks (all must pass) or {or: [...]} (any may pass)"
    )
    workspace: NonEmptyStr | None = Field(default=None, description="the template folder the agent works in")
    grading: NonEmptyStr | None = Field(default=None, description="the hidden tests' folder")
    tags: list[Tag] = Field(
        default_factory=list, description="pytest markers for this eval, besides metadata.tags"
    )
    xfail: NonEmptyStr | None = Field(
        default=None, description="expected to fail, with the reason: reported as xfailed, strict"
    )
    dataset: NonEmptyStr | None = Field(
        default=None,
        description="a file of rows, relative to the suite: .csv (with a header line), .jsonl (one "
        "object a line) or .yaml/.yml (a list of mappings); the eval runs once per row, with "
        "{{row.column}} filled in its prompt and checks",
    )
    # Rows are checked one by one (loading.datasets), so that a bad one is named "row N".
    rows: list[Annotated[Any, WithJsonSchema({"type": "object"})]] | None = Field(
        default=None, description="the rows inline, a list of mappings (instead of `dataset`)"
    )
    id: NonEmptyStr | None = Field(
        default=None,
        description="each row's id in the item's name (capital[paris]): a column, or a template such "
        'as "{{row.country}}-{{row.n}}"; default: the `id` column, else the row number',
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_conditionals(cls, data: Any) -> Any:
        if isinstance(data, dict) and "conditionals" in data:
            raise PydanticCustomError(
                "legacy_format",
                "`conditionals:` is the legacy format and is no longer supported; rename it to "
                '`checks:` and write each condition as a single-key check, e.g. `- match: "*4*"`',
                {},
            )
        return data

    @model_validator(mode="after")
    def _rows(self) -> EvalSpec:
        if self.dataset is not None and self.rows is not None:
            raise PydanticCustomError(
                "dataset_and_rows", "`dataset` and `rows` exclude each other: keep one of the two", {}
            )
        if self.rows is not None and not self.rows:
            raise PydanticCustomError("empty_rows", "`rows` is empty; give at least one row", {})
        has_rows = self.dataset is not None or self.rows is not None
        if self.id is not None and not has_rows:
            raise PydanticCustomError(
                "id_without_rows", "`id` names the rows of a `dataset` or `rows`, which this eval has not", {}
            )
        if has_rows and (self.workspace is not None or self.grading is not None):
            raise PydanticCustomError(
                "coding_rows", "`dataset` and `rows` are for prompt evals, not coding-agent evals", {}
            )
        return self

    @model_validator(mode="after")
    def _prompt_or_turns(self) -> EvalSpec:
        if self.turns is None:
            if self.prompt is None and "prompt" in self.model_fields_set:
                raise PydanticCustomError(
                    "null_prompt", "`prompt` is empty (null): write the user's message (or use `turns`)", {}
                )
            if self.prompt is None:
                raise PydanticCustomError(
                    "missing_prompt", "missing required key 'prompt' (or `turns`, for a conversation)", {}
                )
            return self
        if self.prompt is not None:
            raise PydanticCustomError(
                "prompt_and_turns",
                "`prompt` and `turns` exclude each other: a conversation puts each user message in "
                "`turns: [{prompt: …, checks: […]}, …]`",
                {},
            )
        if not self.turns:
            raise PydanticCustomError(
                "empty_turns", "`turns` is empty; give at least one `{prompt: …, checks: […]}`", {}
            )
        if self.workspace is not None or self.grading is not None:
            raise PydanticCustomError(
                "coding_turns", "`turns` are for prompt evals, not coding-agent evals", {}
            )
        if "checks" in self.model_fields_set:
            raise PydanticCustomError(
                "turns_checks",
                "a conversation's checks go under each turn (`turns: [{prompt: …, checks: […]}]`); "
                "move the eval's `checks` into the turn whose answer they check",
                {},
            )
        if not any("checks" in turn.model_fields_set for turn in self.turns):
            raise PydanticCustomError(
                "unchecked_turns",
                "no turn has `checks`: the conversation would pass whatever the answers; give the "
                "turn whose answer matters its checks (`{prompt: …, checks: […]}`)",
                {},
            )
        return self

    @model_validator(mode="after")
    def _prompt_or_coding(self) -> EvalSpec:
        coding = self.workspace is not None or self.grading is not None
        if coding and (self.workspace is None or self.grading is None):
            missing = "grading" if self.grading is None else "workspace"
            raise PydanticCustomError(
                "coding_eval",
                "a coding-agent eval needs both `workspace` and `grading`; `{missing}` is missing",
                {"missing": missing},
            )
        if not coding:
            used = [
                key
                for key in ("build_steps", "grade_steps", "vybes", "requires")
                if key in self.model_fields_set
            ]
            if used:
                raise PydanticCustomError(
                    "coding_keys",
                    "{keys} belong to coding-agent evals, which also set `workspace` and `grading`",
                    {"keys": ", ".join(f"`{key}`" for key in used)},
                )
            if (
                self.checks is None and "checks" not in self.model_fields_set and self.turns is None
            ):  # `checks:` empty: see parse_checks
                raise PydanticCustomError(
                    "missing_checks",
                    "missing required key 'checks' "
                    "(a coding-agent eval sets `workspace` and `grading` instead)",
                    {},
                )
        elif self.checks is not None:
            raise PydanticCustomError(
                "coding_checks",
                "a coding-agent eval is decided by its build and grade steps; remove `checks`",
                {},
            )
        return self

    @property
    def first_prompt(self) -> str:
        """The prompt, or a conversation's first message."""
        return self.turns[0].prompt if self.turns else self.prompt or ""

    @property
    def is_coding(self) -> bool:
        return self.workspace is not None


class SuiteFile(StrictModel):
    metadata: Metadata = Field(
        description="the suite's name and model, and what every eval shares (system_prompt, tags, …)"
    )
    evals: Annotated[list[EvalSpec], Field(min_length=1)] = Field(
        description="at least one eval: a prompt with checks, or a coding-agent eval (workspace, grading)"
    )
    commands: dict[StepName, CommandDefinition] | None = Field(
        default=None,
        description="the steps of coding-agent evals (default: the nearest command-registry.json)",
    )
    instructions: NonEmptyStr | None = Field(
        default=None, description="a file appended to every coding-agent eval's prompt.md"
    )
    judge: ConfigId | None = Field(
        default=None,
        description="the configuration that answers llm_judge checks "
        "(default: metadata.model through OpenRouter)",
    )
    score: ScoreSpec | None = Field(
        default=None, description="the score formula (default success_pct) and an optional gate"
    )
    configurations: dict[ConfigId, Configuration] | None = Field(
        default=None,
        description="how prompts are answered, by configuration id; default: the nearest cli-config.json, "
        "else OpenRouter with metadata.model",
    )

    @field_validator("configurations")
    @classmethod
    def _some_configurations(cls, value: dict[str, Configuration] | None) -> dict[str, Configuration] | None:
        if value is not None and not value:  # left empty, it would silently mean "the default"
            raise PydanticCustomError(
                "empty_configurations",
                "`configurations` is empty; define at least one, or remove the key to use the nearest "
                "cli-config.json (else OpenRouter with metadata.model)",
                {},
            )
        return value

    default_configurations: list[ConfigId] | None = Field(
        default=None,
        description="the configuration ids run without --vibe-config, the suite's own or a "
        "cli-config.json's; default: that file's defaultConfigurations, else all",
    )
