"""The result records: one per item (travelling on reports) and the results file written at session end.

Units: latency and durations in seconds, cost in USD. Fields may be added; none may change meaning.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
Outcome = Literal["passed", "failed", "error", "skipped"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StepRecord(Record):
    """One command the item ran."""

    phase: Literal["agent", "build", "grade"]
    name: str
    argv: list[str]
    cwd: str
    exit_code: int | None = Field(description="None when the command was killed at its timeout")
    duration: float = Field(description="seconds")
    timed_out: bool
    log: str | None = Field(default=None, description="path of the command's output file")


class ToolCallRecord(Record):
    """One tool call the agent reported in its output (read by the configuration's ``output.parser``)."""

    tool: str = Field(
        description="the tool's name as the agent reports it, e.g. Bash, read_file, command_execution"
    )
    success: bool | None = Field(
        default=None, description="None: the agent reported no outcome (e.g. its output ends before it)"
    )
    error: str | None = Field(
        default=None, description="what the agent reported about a failed call, shortened to 500 characters"
    )
    duration: float | None = Field(default=None, description="seconds, where the agent reports it")


class CheckRecord(Record):
    type: str
    passed: bool | None = Field(description="None: could not be decided here")
    message: str
    children: list[CheckRecord] = Field(default_factory=list)


class EvalRecord(Record):
    """One item's result: one eval against one configuration."""

    name: str = Field(description="the eval's name, or its generated id")
    named: bool = Field(default=False, description="whether the eval has an explicit `name`")
    nodeid: str
    outcome: Outcome
    message: str | None = Field(default=None, description="why it failed, errored or was skipped")
    latency: float | None = Field(default=None, description="seconds")
    cost: float | None = Field(default=None, description="USD; None when nobody reported it")
    cost_source: Literal["reported", "pricing", "default_pricing"] | None = Field(
        default=None,
        description="where the cost came from: the provider, the configuration's pricing, or the "
        "shipped price table (an estimate)",
    )
    judge_cost: float | None = Field(
        default=None, description="USD the llm_judge checks' judge cost (not part of `cost`)"
    )
    input_tokens: int | None = None
    output_tokens: int | None = None
    response: str | None = None
    checks: list[CheckRecord] = Field(default_factory=list)
    steps: list[StepRecord] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(
        default_factory=list,
        description="the agent's tool calls in the order it made them, where its output.parser reads "
        "them (agent presets); empty otherwise",
    )
    phase_durations: dict[str, float] = Field(
        default_factory=dict,
        description="coding-agent evals, seconds per phase: workspace (preparing it), agent, build, "
        "grade (copying the grading folder and running the grade steps); phases not reached are absent",
    )
    sandbox: Literal["bwrap", "none"] | None = Field(
        default=None, description="what the coding agent ran in; None for prompt evals"
    )
    workspace: str | None = Field(
        default=None, description="the item's kept folder (--vibe-keep-workspaces); None: removed"
    )
    subtasks_passed: int | None = Field(
        default=None, description="subtasks the grade steps reported as passed; None: no results file"
    )
    subtasks_total: int | None = Field(
        default=None, description="subtasks the grade steps reported; None: no results file"
    )
    vybes_multiplier: float | None = Field(
        default=None, description="the evaluation's vybes.multiplier; None: no vybes block"
    )
    vybes_time_limit_minutes: float | None = Field(
        default=None, description="the evaluation's vybes.timeLimitMinutes; None: no time penalty"
    )
    repeat: int = 0
    xfail: bool = Field(default=False, description="expected to fail (reported as xfailed)")


class GateRecord(Record):
    """The score gate of a run (``score.min`` / ``score.max``); a failed gate fails the session."""

    min: float | None = Field(description="the lowest passing score (inclusive); None: no lower bound")
    max: float | None = Field(description="the highest passing score (inclusive); None: no upper bound")
    passed: bool
    message: str = Field(description="e.g. 'score 42.10 is below min 50 (by 7.90)'")


class RunRecord(Record):
    """One suite against one configuration."""

    suite: str
    source: str = Field(description="suite file, relative to the rootdir")
    configuration: str
    configuration_name: str | None = None
    score: float | None
    score_formula: str
    score_error: str | None
    score_canonical: str | None = Field(
        default=None, description="the formula as read: hyphenated names in [brackets], a preset expanded"
    )
    score_preset: str | None = Field(default=None, description="the preset's name when the formula is one")
    score_breakdown: str | None = Field(
        default=None, description="the formula with each variable replaced by its value in this run"
    )
    gate: GateRecord | None = Field(default=None, description="None when the suite sets no score bounds")
    metrics: dict[str, Any]
    variables: dict[str, float | None]
    notes: list[str] = Field(default_factory=list, description="what the summary warns about")
    evals: list[EvalRecord]


class ResultsFile(Record):
    schema_version: int = SCHEMA_VERSION
    started_at: str
    finished_at: str
    interrupted: bool = False
    load_errors: list[str] = Field(
        default_factory=list, description="suite files that failed to load (their evals did not run)"
    )
    runs: list[RunRecord]
