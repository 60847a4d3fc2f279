"""The result records: one per item (travelling on reports) and the results file written at session end.

Units: latency and durations in seconds, cost in USD. Fields may be added; none may change meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer

SCHEMA_VERSION = 1
Outcome = Literal["passed", "failed", "error", "skipped"]
NOT_FINISHED = "not finished: the session "  # how the skip of an item the session's end cut short begins


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


class StepRecord(Record):
    """One command the item ran."""

    phase: Literal["agent", "build", "grade"] = Field(
        description="agent: the configuration's CLI; build, grade: a registry step"
    )
    name: str = Field(description="the configuration id for the agent, else the registry step's name")
    argv: list[str] = Field(
        description="the command line, without the sandbox's wrapper; a prompt eval's prompt argument "
        "shows as `<prompt>`"
    )
    cwd: str = Field(description="the folder it ran in")
    exit_code: int | None = Field(
        description="None when the command was killed at its timeout or could not be started"
    )
    duration: float = Field(description="seconds")
    timed_out: bool = Field(description="whether it was killed at its timeout")
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
    retry: bool = Field(default=False, description="the log marks this call as a retry of an earlier one")
    batch: int | None = Field(
        default=None,
        description="calls the agent issued together (parallel calls of one assistant message) share this "
        "number; None: not reported, the call is a batch of its own",
    )
    args: dict[str, Any] | None = Field(
        default=None,
        description="the call's arguments where the agent reports them (a Python callable's `tool_calls`); "
        "None: not reported",
    )


class ToolStats(Record):
    """One tool's calls in a transcript."""

    calls: int = Field(description="calls of this tool")
    succeeded: int = Field(description="calls reported as succeeded")
    failed: int = Field(description="calls reported as failed; the rest reported no outcome")


class TranscriptRecord(Record):
    """An agent's tool calls, summarised (from its own output or a JSONL log it wrote)."""

    source: str = Field(description="where the calls were read: `output:<parser>` or the log's path")
    calls: int = Field(description="tool calls read")
    succeeded: int = Field(description="calls reported as succeeded")
    tools: dict[str, ToolStats] = Field(default_factory=dict, description="per tool, by name")
    errors: dict[str, int] = Field(
        default_factory=dict,
        description="counts by type: tool_fail (failed calls), retry (`retries` + `api_retries`)",
    )
    retries: int = Field(
        default=0,
        description="calls marked as retries, or repeating a tool that failed in the batch right before",
    )
    api_retries: int = Field(
        default=0,
        description="requests to the model the agent retried, as its output reports them (the record's "
        "`api_retries`)",
    )
    duration: float | None = Field(
        default=None,
        description="seconds: from the first to the last timestamp of a JSONL log; the agent's run time "
        "for calls read from its output; None: unknown",
    )
    problems: list[str] = Field(
        default_factory=list, description="log lines that could not be read (file:line: what is wrong)"
    )


RubricSignal = Literal["tool_success_rate", "output_quality", "efficiency", "error_rate", "structure_score"]


class RubricRecord(Record):
    """The automatic rubric of one eval: five signals (0–1), the weighted score (0–100) and its grade."""

    signals: dict[str, float | None] = Field(
        description="tool_success_rate, output_quality, efficiency, error_rate, structure_score; "
        "None where it could not be computed"
    )
    missing: dict[str, str] = Field(
        default_factory=dict, description="each signal that could not be computed, with the reason"
    )
    score: float | None = Field(
        description="0.35·tool_success_rate + 0.25·output_quality + 0.20·efficiency + "
        "0.15·(1 - error_rate) + 0.05·structure_score, × 100, 2 decimals; None when a signal is missing"
    )
    grade: str | None = Field(description="A+, A, B, C, D or F; None without a score")
    complexity: Literal["simple", "medium", "complex"] = Field(
        description="the eval's rubric.complexity, which sets efficiency's limits"
    )
    efficiency_basis: Literal["time", "tools"] = Field(
        description="whether efficiency came from the time or the tool-call count (rubric.efficiency)"
    )
    task: Literal["coding", "general"] = Field(
        description="rubric.task as applied: coding tasks earn completeness for a code block"
    )
    errors: dict[str, int] = Field(
        default_factory=dict,
        description="errors counted for error_rate, by type: tool_fail, retry, output_error",
    )


# Fields that mean the same in several records (a turn's and its eval's, a judge's), declared once.
Latency = Annotated[float | None, Field(description="seconds")]
ReportedCost = Annotated[float | None, Field(description="USD; None when nobody reported it")]
CachedInputTokens = Annotated[
    int | None,
    Field(
        description="of input_tokens, those read from the model's prompt cache, as the agent reported them "
        "(Claude Code's cache_read_input_tokens, codex's cached_input_tokens); None: not reported"
    ),
]
CacheWriteTokens = Annotated[
    int | None,
    Field(
        description="of input_tokens, those written to the model's prompt cache, as the agent reported "
        "them (Claude Code's cache_creation_input_tokens); None: not reported"
    ),
]
ApiRetries = Annotated[
    int | None,
    Field(
        description="requests to the model the agent retried, as its output reports them (codex's "
        "`Reconnecting... 1/5` errors); None: not reported"
    ),
]


class JudgeRecord(Record):
    """One judge's answer to an ``llm_judge`` check."""

    model: str | None = Field(
        description="the model of the check's `judges:` asked; None: the judge configuration's own "
        "(its `model`, else the suite's)"
    )
    system_prompt: str = Field(description="the instructions the judge was given")
    prompt: str = Field(
        description="what the judge was asked: the criteria or rubric, the eval's prompt and the response "
        "(one longer than 64 KiB is kept as its head and tail)"
    )
    passed: bool | None = Field(
        description="this judge's verdict (with a rubric: its score >= the threshold); None: it gave "
        "none (`error` says why)"
    )
    score: float | None = Field(default=None, description="0–1 with a rubric; None for a pass/fail verdict")
    reasoning: str = Field(description="why, in the judge's words; empty when it gave no verdict")
    cost: float | None = Field(
        default=None,
        description="USD: reported, else from the judge configuration's pricing or the shipped price "
        "table (see `cost_source`); None when unknown",
    )
    cost_source: Literal["reported", "pricing", "default_pricing"] | None = Field(
        default=None,
        description="where the cost came from: the judge's provider, the judge configuration's pricing, "
        "or the shipped price table (an estimate)",
    )
    input_tokens: int | None = Field(default=None, description="as the judge's provider reported them")
    output_tokens: int | None = Field(default=None, description="as the judge's provider reported them")
    latency: Latency = None
    cached: bool = Field(
        default=False,
        description="answered from the response cache (--vibe-cache): `cost` and `latency` are the "
        "original call's, not spent again",
    )
    error: str | None = Field(
        default=None,
        description="why this judge gave no verdict, as the check's message says (the check errs): it "
        "refused or a content filter withheld its answer (paid for all the same: `cost`), or it "
        "answered something else; None when it gave one",
    )


class CheckRecord(Record):
    type: str = Field(description="the check type (match, llm_judge, …), or `or`")
    passed: bool | None = Field(description="None: could not be decided here")
    message: str = Field(description="what the check found")
    score: float | None = Field(
        default=None,
        description="0–1, from a check that grades (`llm_judge` with a rubric, a `python` check returning "
        "a score); feeds the formula variable `<name>_score`",
    )
    name: str | None = Field(
        default=None,
        description="the check's own `name` (its score is `<name>_score`); None: its score counts "
        "towards its eval's `<name>_score`",
    )
    judges: list[JudgeRecord] = Field(
        default_factory=list, description="`llm_judge`: each judge's answer, in the order asked"
    )
    error: bool = Field(
        default=False,
        description="it could not run (a judge failed, a custom check raised); `message` says why",
    )
    children: list[CheckRecord] = Field(
        default_factory=list,
        description="an `or` check's alternatives, up to the first that passed (the later ones are not run)",
    )


def judges_asked(checks: Iterable[CheckRecord]) -> int:
    """How many judges the ``checks`` (and their alternatives) asked."""
    return sum(1 for _ in judge_records(checks))


def judge_records(checks: Iterable[CheckRecord]) -> Iterator[JudgeRecord]:
    """The answers of the judges the ``checks`` (and their alternatives) asked, in order."""
    for check in checks:
        yield from check.judges
        yield from judge_records(check.children)


class SubtaskModule(Record):
    """One results file of the grade steps, counted as a module (the unified runner's breakdown)."""

    passed: int = Field(description="its subtasks that passed")
    total: int = Field(description="its subtasks")
    passed_tasks: list[str] = Field(default_factory=list, description="the task ids that passed")
    failed_tasks: list[str] = Field(default_factory=list, description="the task ids that failed")


class TurnRecord(Record):
    """One turn of a conversation eval (an eval with ``turns``): the user's message and the answer."""

    turn: int = Field(description="1, 2, … in the conversation's order")
    outcome: Literal["passed", "failed", "error", "skipped", "not_run"] = Field(
        description="this turn's checks: passed, failed, error (no answer, or a check could not run), "
        "skipped (a check could not be decided); not_run: an earlier turn failed or errored"
    )
    message: str | None = Field(default=None, description="why it is not passed")
    prompt: str = Field(
        description="the user's message as sent, secrets masked; over 64 KiB, its head and tail"
    )
    response: str | None = Field(
        default=None, description="the answer, as the eval's `response` (None: not answered)"
    )
    response_chars: int | None = Field(
        default=None, description="the whole answer's length in characters when `response` is an excerpt"
    )
    latency: Latency = None
    cost: ReportedCost = None
    input_tokens: int | None = Field(default=None, description="as the provider reported them")
    output_tokens: int | None = Field(default=None, description="as the provider reported them")
    cached_input_tokens: CachedInputTokens = None
    cache_write_tokens: CacheWriteTokens = None
    judge_cost: float | None = Field(
        default=None,
        description="USD this turn's llm_judge checks cost; None: no judge asked, or one reported no cost",
    )
    cached: bool = Field(default=False, description="answered from the response cache (--vibe-cache)")
    checks: list[CheckRecord] = Field(default_factory=list, description="this turn's checks' verdicts")
    tool_calls: list[ToolCallRecord] = Field(
        default_factory=list, description="the tool calls of this turn's answer, where reported"
    )
    api_retries: ApiRetries = None
    finish_reason: str | None = Field(
        default=None,
        description="why the model stopped answering, as an HTTP model reported it: stop, length (cut off "
        "at its output limit: the message notes it), tool_calls, …; None: not reported",
    )


class AttemptRecord(Record):
    """One attempt of an eval a plugin reran (pytest-rerunfailures): what it cost and which of its
    answers came from the response cache."""

    outcome: Outcome = Field(description="this attempt's result")
    cost: float | None = Field(default=None, description="USD this attempt's answer cost; None: not reported")
    judge_cost: float | None = Field(
        default=None,
        description="USD its llm_judge checks cost; None: no judge asked, or one reported no cost",
    )
    cached: bool = Field(default=False, description="its answer came from the response cache (--vibe-cache)")
    judges: int = Field(default=0, description="the llm_judge judges it asked")
    judges_cached: int = Field(default=0, description="of those, the ones answered from the response cache")
    cached_cost: float = Field(
        default=0.0,
        description="USD of its answers (the eval's and its judges') that came from the response cache: "
        "their original calls' cost, not spent again",
    )


def attempt_of(record: EvalRecord) -> AttemptRecord:
    """What ``record``, one attempt's, says of that attempt's cost and cache use."""
    judges = list(judge_records(record.checks))
    cached_cost = (record.cost or 0.0) if record.cached else 0.0
    cached_cost += sum(judge.cost or 0.0 for judge in judges if judge.cached)
    return AttemptRecord(
        outcome=record.outcome,
        cost=record.cost,
        judge_cost=record.judge_cost,
        cached=record.cached,
        judges=len(judges),
        judges_cached=sum(judge.cached for judge in judges),
        cached_cost=cached_cost,
    )


class EvalRecord(Record):
    """One item's result: one eval against one configuration."""

    name: str = Field(description="the eval's name, or its generated id")
    named: bool = Field(default=False, description="whether the eval has an explicit `name`")
    nodeid: str = Field(description="the pytest node id of the item")
    outcome: Outcome = Field(description="the eval's result; `message` says why when it is not passed")
    message: str | None = Field(default=None, description="why it failed, errored or was skipped")
    latency: Latency = None
    cost: ReportedCost = None
    cost_source: Literal["reported", "pricing", "default_pricing"] | None = Field(
        default=None,
        description="where the cost came from: the provider, the configuration's pricing, or the "
        "shipped price table (an estimate)",
    )
    judge_cost: float | None = Field(
        default=None,
        description="USD the llm_judge checks' judges cost (not part of `cost`); None: no judge asked, "
        "or one reported no cost",
    )
    input_tokens: int | None = Field(
        default=None, description="input (prompt) tokens as the provider reported them; None: not reported"
    )
    output_tokens: int | None = Field(
        default=None,
        description="output (completion) tokens as the provider reported them; None: not reported",
    )
    cached_input_tokens: CachedInputTokens = None
    cache_write_tokens: CacheWriteTokens = None
    response: str | None = Field(
        default=None,
        description="the answer the checks ran on; one longer than 64 KiB is kept as its head and tail "
        "with a marker between them (the whole is in the agent step's `log`)",
    )
    response_chars: int | None = Field(
        default=None,
        description="the whole answer's length in characters when `response` holds only an excerpt",
    )
    checks: list[CheckRecord] = Field(
        default_factory=list,
        description="each check's verdict, in the suite's order; empty for coding-agent evals",
    )
    check_names: list[str] = Field(
        default_factory=list,
        description="the `name`s of the eval's checks (their `<name>_score` variables), whether or not "
        "the checks ran",
    )
    steps: list[StepRecord] = Field(
        default_factory=list, description="the commands the item ran (agent, build, grade), in order"
    )
    tool_calls: list[ToolCallRecord] = Field(
        default_factory=list,
        description="the agent's tool calls in the order it made them, where its output.parser reads "
        "them (agent presets); empty otherwise",
    )
    api_retries: ApiRetries = None
    finish_reason: str | None = Field(
        default=None,
        description="why the model stopped its (last) answer, as an HTTP model reported it: stop, "
        "length (cut off at its output limit: the message notes it), tool_calls, …; None: not reported",
    )
    phase_durations: dict[str, float] = Field(
        default_factory=dict,
        description="coding-agent evals, seconds per phase: workspace (preparing it), agent, build, "
        "grade (copying the grading folder and running the grade steps); phases not reached are absent",
    )
    started_at: str | None = Field(
        default=None,
        description="coding-agent evals: when the item started (preparing its workspace): ISO 8601, UTC, "
        "to the millisecond; None for prompt evals and in results files written before it was recorded",
    )
    finished_at: str | None = Field(
        default=None,
        description="coding-agent evals: when the item's steps were done: ISO 8601, UTC, to the "
        "millisecond; None as for started_at",
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
    subtask_modules: dict[str, SubtaskModule] | None = Field(
        default=None,
        description="the subtasks by results file (`workspace/results/<module>.json` in the unified "
        "runner's layout); None: not counted by module",
    )
    vybes_multiplier: float | None = Field(
        default=None, description="the evaluation's vybes.multiplier; None: no vybes block"
    )
    vybes_time_limit_minutes: float | None = Field(
        default=None, description="the evaluation's vybes.timeLimitMinutes; None: no time penalty"
    )
    vybes_description: str | None = Field(default=None, description="the evaluation's vybes.description")
    vybes_category: str | None = Field(default=None, description="the evaluation's vybes.category")
    transcript: TranscriptRecord | None = Field(
        default=None, description="the agent's tool calls summarised; None: no transcript for this eval"
    )
    rubric: RubricRecord | None = Field(
        default=None, description="the eval's automatic rubric; None: not graded (e.g. a skipped eval)"
    )
    repeat: int = Field(default=0, description="1…N with --vibe-repeat N; 0 when not repeated")
    attempts: int = Field(
        default=1,
        description="how many times the item ran: more than 1 when a plugin reran it (pytest-rerunfailures'"
        " --reruns); the record is its last attempt's, but for `cost` and `judge_cost`, which count every"
        " attempt",
    )
    rerun_cost: float | None = Field(
        default=None,
        description="USD its attempts before the last cost (part of `cost`); None: it ran once, or an "
        "earlier attempt reported no cost",
    )
    rerun_attempts: list[AttemptRecord] = Field(
        default_factory=list,
        description="an item a plugin reran: each of its attempts that left a record, in order, the last "
        "included (an attempt whose xdist worker was lost left none); empty when it ran once. The record's "
        "`cached` is its last attempt's: these say which attempts' answers came from the cache",
    )
    reused_from: str | None = Field(
        default=None,
        description="the results file this record was reused from (--vibe-resume): the one the item ran "
        "in, also when it came through later resumed sessions' files; None: ran",
    )
    xfail: bool = Field(default=False, description="expected to fail (reported as xfailed)")
    eval_name: str | None = Field(
        default=None,
        description="a dataset row: its eval's name (or generated id); `name` is `<eval_name>[<row_id>]`",
    )
    row_id: str | None = Field(default=None, description="a dataset row: its id in the item's name")
    row: dict[str, Any] | None = Field(
        default=None,
        description="a dataset row: its values by column (text from a CSV file); a number JSON cannot "
        "hold (YAML's .inf, -.inf, .nan) is the text inf, -inf or nan",
    )
    cached: bool = Field(
        default=False,
        description="the answer came from the response cache (--vibe-cache), not from a call in this "
        "session; its latency, cost and tokens are those of the call that made it",
    )
    turns: list[TurnRecord] = Field(
        default_factory=list,
        description="a conversation eval's turns, in order (empty for a single prompt); the eval's "
        "latency, cost and tokens are their sums, its `checks` all turns' checks, its `response` the "
        "last answer",
    )


def is_coding_record(record: EvalRecord) -> bool:
    """Whether ``record`` is a coding-agent eval's (one that ran an agent in a workspace, then its
    build and grade steps): those, and only those, say what the agent ran in (``sandbox``). A
    prompt eval run through a CLI has an agent step too, so the steps do not tell."""
    return record.sandbox is not None


class GateRecord(Record):
    """The score gate of a run (``score.min`` / ``score.max``); a failed gate fails the session."""

    min: float | None = Field(description="the lowest passing score (inclusive); None: no lower bound")
    max: float | None = Field(description="the highest passing score (inclusive); None: no upper bound")
    passed: bool = Field(description="whether the score is within the bounds; false for a null score")
    message: str = Field(description="e.g. 'score 42.10 is below min 50 (by 7.90)'")


class EvalStats(Record):
    """One eval over its repeats (--vibe-repeat N; one run without)."""

    name: str = Field(description="the eval's id")
    runs: int = Field(description="repeats that ran (skipped ones are not counted)")
    passed: int = Field(description="runs that passed")
    pass_rate: float | None = Field(description="passed / runs; None when none ran")
    pass_at_k: dict[str, float] = Field(
        default_factory=dict,
        description="k → unbiased pass@k (at least one of k samples passes), k = 1 … runs",
    )
    pass_hat_k: dict[str, float] = Field(
        default_factory=dict, description="k → unbiased pass^k (all k samples pass), k = 1 … runs"
    )
    min_pass_rate: float | None = Field(default=None, description="the eval's min_pass_rate, if set")
    status: Literal["passed", "failed", "skipped"] = Field(
        description="passed: every run passed, or the pass rate met min_pass_rate"
    )
    passed_by_rate: bool = Field(
        default=False, description="counted as passed because its pass rate met min_pass_rate"
    )


Decision = Literal[
    "significant_improvement", "marginal_improvement", "exploration", "regression", "incomparable", "new"
]


class BaselineRecord(Record):
    """This run against the same suite × configuration in a baseline results file."""

    baseline: str = Field(description="the baseline results file")
    score: float | None = Field(description="the baseline's score")
    delta: float | None = Field(description="this score - the baseline's; None if either is null")
    label: Decision = Field(
        description="by delta: significant_improvement (> 5), marginal_improvement (> 0), exploration "
        "(> -3), regression; incomparable: a score is null, the score formulas differ or other evals "
        "ran; new: not in the baseline"
    )
    accepted: bool | None = Field(description="whether the change would be kept; None: incomparable/new")
    reason: str = Field(description="why the label, e.g. 'delta +6.20 is above +5'")
    pass_to_fail: list[str] = Field(default_factory=list, description="evals that passed there, fail here")
    fail_to_pass: list[str] = Field(default_factory=list, description="evals that failed there, pass here")


class RunRecord(Record):
    """One suite against one configuration."""

    suite: str = Field(
        description="the suite's metadata.name; for an eval-config.json folder, its path relative to "
        "the rootdir"
    )
    source: str = Field(description="suite file, relative to the rootdir")
    configuration: str = Field(description="the configuration id")
    configuration_name: str | None = Field(default=None, description="the configuration's `name`, if set")
    score: float | None = Field(
        description="the formula's score (with repeats, aggregated over repeat_scores); None: see score_error"
    )
    score_formula: str = Field(
        description="the score formula as written, on one line (each run of whitespace one space; "
        "default success_pct)"
    )
    score_error: str | None = Field(
        description="why score is null (a variable without a value, a division by zero, …)"
    )
    score_canonical: str | None = Field(
        default=None, description="the formula as read: hyphenated names in [brackets], a preset expanded"
    )
    score_preset: str | None = Field(default=None, description="the preset's name when the formula is one")
    score_names: list[str] = Field(
        default_factory=list,
        description="the variables the score formula reads, sorted (empty when it could not be read)",
    )
    input_digest: str | None = Field(
        default=None,
        description="sha256 of the suite file(s) and the configuration's settings as written: "
        "--vibe-resume reuses records only from a run whose digest matches",
    )
    score_breakdown: str | None = Field(
        default=None, description="the formula with each variable replaced by its value in this run"
    )
    gate: GateRecord | None = Field(default=None, description="None when the suite sets no score bounds")
    metrics: dict[str, Any] = Field(
        description="success_pct, passed, failed, total, errors, skipped, and the latency (seconds) and "
        "cost (USD) sums, means, minima and maxima; null where unknown; and each metric a plugin "
        "registers (a run variable with metric=True)",
    )
    # A Mapping: on the controller the per-eval ones are kept as a tuple of values per eval
    # (scoring/run_values.py); a dict everywhere else.
    variables: Mapping[str, float | None] = Field(
        description="every formula variable of the run with its value; null: no value"
    )
    variable_errors: dict[str, str] = Field(
        default_factory=dict,
        description="run variables whose computation failed (a plugin's that raised or returned no "
        "number), with the error; their value is null",
    )
    notes: list[str] = Field(default_factory=list, description="what the summary warns about")
    grade: str | None = Field(
        default=None, description="the rubric grade (A+ … F) of the score, for the `rubric` preset"
    )
    repeats: int = Field(default=1, description="how many times each eval ran (--vibe-repeat)")
    repeat_scores: list[float | None] = Field(
        default_factory=list, description="with repeats: the formula's score over each repeat alone"
    )
    score_mean: float | None = Field(default=None, description="with repeats: mean of repeat_scores")
    score_ci95: list[float] | None = Field(
        default=None, description="with repeats: 95 % interval of the mean (Student's t), [low, high]"
    )
    eval_stats: Sequence[EvalStats] = Field(default_factory=list, description="per eval, over its repeats")
    baseline: BaselineRecord | None = Field(default=None, description="with --vibe-baseline")
    # eval_stats and evals are Sequences: on the controller each is made when asked for, from a few
    # numbers per eval and from the record spool (scoring/spool.py), not held all at once; a list
    # everywhere else.
    evals: Sequence[EvalRecord] = Field(description="one record per item: each eval, and each repeat of it")

    @field_serializer("eval_stats", "evals", mode="wrap")
    def _dump_sequence(self, items: Sequence[Record], handler: SerializerFunctionWrapHandler) -> Any:
        return handler(items if isinstance(items, list) else list(items))

    @field_serializer("variables", mode="wrap")
    def _dump_variables(
        self, values: Mapping[str, float | None], handler: SerializerFunctionWrapHandler
    ) -> Any:
        return handler(values if isinstance(values, dict) else dict(values.items()))


class ResultsFile(Record):
    schema_version: int = Field(
        default=SCHEMA_VERSION, description="the format's version; fields may be added, none change meaning"
    )
    started_at: str = Field(description="when the session started: ISO 8601, UTC, to the second")
    finished_at: str = Field(description="when the results were written: ISO 8601, UTC, to the second")
    interrupted: bool = Field(
        default=False,
        description="the session was interrupted (Ctrl-C); the items it cut short are skipped",
    )
    stopped_early: str | None = Field(
        default=None,
        description="why the session ended before every selected item ran (e.g. `stopped after the first "
        "failure (-x)`, `interrupted`); None: a complete run. A partial run's results are not "
        "`latest.json`, enter no history and are no baseline",
    )
    load_errors: list[str] = Field(
        default_factory=list, description="suite files that failed to load (their evals did not run)"
    )
    resumed_from: list[str] = Field(
        default_factory=list,
        description="--vibe-resume: the results files the session read, newest first (the one named, "
        "then those it had resumed from); a later --vibe-resume of this file reads them too. Empty: "
        "not resumed",
    )
    runs: list[RunRecord] = Field(description="one per suite × configuration")

    @property
    def partial(self) -> bool:
        """Not every selected item ran: such results are no baseline."""
        return self.interrupted or self.stopped_early is not None


def not_loaded(load_errors: Sequence[str]) -> str | None:
    """Why a session whose suite files did not all load is partial (its ``stopped_early``): their
    evals did not run, so its results must not become the baseline (a file of no runs would make
    every run "new"). None when every file loaded."""
    return f"{len(load_errors)} suite file(s) failed to load" if load_errors else None


def run_records(runs: Iterable[RunRecord]) -> Iterator[EvalRecord]:
    """Every record of ``runs``, one at a time (on the controller they are read when asked for:
    a list of them all would hold every record of the session at once)."""
    for run in runs:
        yield from run.evals
