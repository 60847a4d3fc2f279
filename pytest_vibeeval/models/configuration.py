"""A configuration (how an eval is answered: cli, python, http, replay or a plugin's provider) and
the unified runner's cli-config.json."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    StringConstraints,
    ValidationInfo,
    model_validator,
)
from pydantic_core import PydanticCustomError

from ..errors import did_you_mean
from ..presets import AGENT_PRESETS, OTHER_KINDS, with_preset
from ..pyimport import PythonTarget
from .common import (
    DEFAULT_TIMEOUT_MS,
    PARSERS_CONTEXT,
    TIMEOUT_DESCRIPTION,
    ConfigId,
    DottedPath,
    NonEmptyStr,
    StrictModel,
    TimeoutMs,
)


def _known_parser(value: str, info: ValidationInfo) -> str:
    """An output parser the session knows. The loaders pass the names in the validation context
    (the parsers live with the providers, which import this module); without one, the built-in
    parsers are those of the agent presets."""
    known = (info.context or {}).get(PARSERS_CONTEXT)
    if known is None:
        known = {preset.parser for preset in AGENT_PRESETS.values()}
    if value not in known:
        raise PydanticCustomError(
            "unknown_parser",
            "unknown output parser {name}{hint}; known parsers: {known}",
            {"name": repr(value), "hint": did_you_mean(value, known), "known": ", ".join(sorted(known))},
        )
    return value


class OutputSpec(StrictModel):
    """How to read a CLI's stdout: plain text, one JSON document, JSON lines (last matching event),
    or a named parser of an agent CLI's own output format."""

    parser: Annotated[str, AfterValidator(_known_parser)] | None = Field(
        default=None,
        description="read the output with a built-in parser (claude-code, codex, gemini, llxprt, aider): "
        "the response, cost, tokens, latency and tool calls; instead of `format` and the paths",
    )
    format: Literal["text", "json", "jsonl"] = Field(
        default="text",
        description="text: all of stdout is the response; json: one JSON document; jsonl: the last "
        "line that has `response` (and matches `where`)",
    )
    response: DottedPath | None = Field(
        default=None,
        description="dotted path of the answer (e.g. `result`, `content.0.text`); needed for json and jsonl",
    )
    cost: DottedPath | None = Field(
        default=None, description="dotted path of the cost in USD (e.g. `total_cost_usd`)"
    )
    input_tokens: DottedPath | None = Field(
        default=None, description="dotted path of the input (prompt) token count (e.g. `usage.input_tokens`)"
    )
    output_tokens: DottedPath | None = Field(
        default=None,
        description="dotted path of the output token count (e.g. `usage.output_tokens`); min_tokens and "
        "max_tokens use it",
    )
    latency_ms: DottedPath | None = Field(
        default=None,
        description="the agent's own latency in milliseconds (e.g. `duration_ms`); "
        "used instead of the measured wall time when present",
    )
    where: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="jsonl: only events whose fields equal these values"
    )

    @model_validator(mode="after")
    def _needs_response_path(self) -> OutputSpec:
        if self.parser is not None:
            others = sorted(self.model_fields_set - {"parser"})
            if others:
                raise PydanticCustomError(
                    "parser_and_paths",
                    "output.parser {name} reads the whole output; remove {keys} (or the parser)",
                    {"name": repr(self.parser), "keys": ", ".join(f"`{key}`" for key in others)},
                )
            return self
        if self.format != "text" and not self.response:
            raise PydanticCustomError(
                "missing_response_path",
                "output.format {fmt} needs `response`: the dotted path of the answer, e.g. `result`",
                {"fmt": repr(self.format)},
            )
        if self.format == "text" and self.latency_ms:
            raise PydanticCustomError(
                "latency_needs_json",
                "output.latency_ms ({path}) needs `format: json` or `format: jsonl`: "
                "plain text output has no fields to read it from",
                {"path": repr(self.latency_ms)},
            )
        return self


Money = Annotated[float, Field(ge=0, allow_inf_nan=False)]


# No model costs this much; a larger price is a typo, and its products overflow to infinity.
MAX_PRICE_PER_MTOK = 1_000_000.0


Price = Annotated[float, Field(ge=0, le=MAX_PRICE_PER_MTOK, allow_inf_nan=False)]


class Pricing(StrictModel):
    """USD per million tokens, for a cost the provider does not report."""

    input_per_mtok: Price = Field(description="USD per million input tokens (at most 1 000 000)")
    output_per_mtok: Price = Field(description="USD per million output tokens (at most 1 000 000)")
    cached_input_per_mtok: Price | None = Field(
        default=None,
        description="USD per million cached input tokens (prompt-cache reads, which are part of the "
        "input tokens); unset: 0.1 × input_per_mtok for an answer that reports cache writes (Anthropic's "
        "rate), else input_per_mtok",
    )
    cache_write_per_mtok: Price | None = Field(
        default=None,
        description="USD per million prompt-cache write tokens (part of the input tokens; reported by "
        "Anthropic's models only, Claude Code's cache_creation_input_tokens); unset: 1.25 × "
        "input_per_mtok, Anthropic's rate for its 5-minute cache",
    )


class HttpSpec(StrictModel):
    """An OpenAI-compatible chat-completions endpoint (OpenRouter, OpenAI, vLLM, Ollama, LM Studio)."""

    base_url: NonEmptyStr | None = Field(
        default=None, description="default: $OPENROUTER_BASE_URL, else https://openrouter.ai/api/v1"
    )
    api_key_env: str | None = Field(
        default=None,
        description="the environment variable holding the API key; default OPENROUTER_API_KEY when "
        "base_url is not set, else none (a local server); an empty string sends no key",
    )
    temperature: Annotated[float, Field(ge=0, le=2)] | None = Field(
        default=None, description="sampling temperature sent with each request; default: the server's"
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="more request body fields, passed through (max_tokens, top_p, …)"
    )
    headers: dict[str, str] = Field(default_factory=dict, description="extra request headers")
    max_retries: Annotated[int, Field(ge=0, le=20)] = Field(
        default=4,
        description="retries after a 429, a 5xx, a timeout or a connection error, with exponential "
        "backoff and jitter (or Retry-After)",
    )
    max_concurrency: Annotated[int, Field(ge=1)] | None = Field(
        default=None, description="requests in flight at once for this configuration, across xdist workers"
    )


def _known_preset(value: str) -> str:
    if value not in AGENT_PRESETS:
        raise PydanticCustomError(
            "unknown_preset",
            "unknown preset {name}{hint}; known presets: {known}",
            {
                "name": repr(value),
                "hint": did_you_mean(value, AGENT_PRESETS),
                "known": ", ".join(AGENT_PRESETS),
            },
        )
    return value


def _relative_file(value: str) -> str:
    path = PurePosixPath(value)
    if not value.strip() or path.is_absolute() or ".." in path.parts or value.endswith("/"):
        raise PydanticCustomError(
            "relative_file",
            "{value} must be a file path relative to the agent's working directory, without `..` "
            "(each item has its own folder; point the agent's log at $VIBEEVAL_TRANSCRIPT)",
            {"value": repr(value)},
        )
    return value


def _one_slip(word: str, known: str) -> bool:
    """Whether ``word`` is ``known`` with one letter changed or two neighbours swapped."""
    if word == known or len(word) != len(known):
        return False
    diff = [i for i, (a, b) in enumerate(zip(word, known, strict=True)) if a != b]
    if len(diff) == 1:
        return True
    first, second = diff[0], diff[-1]
    return (
        len(diff) == 2
        and second == first + 1
        and word[first] == known[second]
        and word[second] == known[first]
    )


ARG_PLACEHOLDERS = ("${MODEL}", "${SYSTEM_PROMPT}", "${PROMPT}", "${CONFIG_DIR}")
PLACEHOLDER = re.compile(r"\$\{[A-Z_]+\}")  # in args: ARG_PLACEHOLDERS are replaced


def _known_placeholders(args: list[str]) -> list[str]:
    """A misspelt placeholder (``${MODLE}``) would reach the CLI as it is: refuse one a letter
    or two swapped letters away from a known one. Any other ``${…}`` may be a shell's (``sh -c``)."""
    for arg in args:
        for found in PLACEHOLDER.findall(arg):
            close = next((known for known in ARG_PLACEHOLDERS if _one_slip(found, known)), None)
            if close is not None:
                raise PydanticCustomError(
                    "unknown_placeholder",
                    "unknown placeholder {found} (did you mean '{close}'?); the placeholders are {known}",
                    {"found": found, "close": close, "known": ", ".join(ARG_PLACEHOLDERS)},
                )
    return args


class Configuration(StrictModel):
    """How prompts are answered: an executable (``cli``) or a Python callable (``python``).

    A superset of the unified runner's cli-config.json entries (``cli``, ``name``,
    ``description``, ``args``, ``timeout`` in milliseconds).
    """

    preset: Annotated[str, AfterValidator(_known_preset)] | None = Field(
        default=None,
        description="an agent CLI's ready configuration (claude-code, codex, gemini, llxprt, aider): "
        "its cli, args, prompt_via, output and max_output_bytes, under the configuration's own keys",
    )
    cli: NonEmptyStr | None = Field(
        default=None,
        description="the executable: a name on PATH, or a path (a relative one from the folder of the "
        "file that defines the configuration)",
    )
    python: PythonTarget | None = Field(
        default=None,
        description="`module:function`, called in-process as function(prompt, context) or "
        "function(prompt); the suite's folder is importable",
    )
    http: HttpSpec | None = Field(
        default=None,
        description="an OpenAI-compatible chat-completions endpoint (OpenRouter, OpenAI, vLLM, Ollama, …)",
    )
    replay: NonEmptyStr | None = Field(
        default=None, description="a store of recorded answers (--vibe-record) to answer from"
    )
    provider: NonEmptyStr | None = Field(
        default=None,
        description="a provider a plugin adds (pytest_vibeeval_make_provider), by the name it answers to",
    )
    name: str | None = Field(
        default=None,
        description="a human-readable label, shown beside the id in the Run Summary and reports",
    )
    description: str | None = Field(default=None, description="a human-readable note; informational only")
    args: Annotated[list[str], AfterValidator(_known_placeholders)] = Field(
        default_factory=list,
        description="the executable's arguments; `${MODEL}`, `${SYSTEM_PROMPT}`, `${PROMPT}` and "
        "`${CONFIG_DIR}` (the defining file's folder) are replaced",
    )
    timeout: TimeoutMs = Field(default=DEFAULT_TIMEOUT_MS, description=TIMEOUT_DESCRIPTION)
    model: NonEmptyStr | None = Field(
        default=None,
        description="the model for `${MODEL}` in args and for HTTP requests; default: metadata.model "
        "(in coding-agent evals, empty)",
    )
    system_prompt: str | None = Field(default=None, description="overrides metadata.system_prompt")
    pricing: Pricing | None = Field(
        default=None,
        description="USD per million tokens: the cost when the provider reports tokens but no cost",
    )
    prompt_via: Literal["stdin", "argument"] = Field(
        default="stdin",
        description="how the CLI gets the prompt: on stdin, or as an argument (appended unless an "
        "argument holds `${PROMPT}`)",
    )
    env: dict[str, str] = Field(
        default_factory=dict,
        description="environment variables set for the CLI; templates and `${CONFIG_DIR}` are filled in",
    )
    env_passthrough: list[NonEmptyStr] = Field(
        default_factory=list,
        description="variables of the environment the CLI is given beside its base set (PATH, HOME, "
        "LANG, LC_*, TERM, TMPDIR, …), its preset's and requires_env: names or globs (`AWS_*`)",
    )
    requires_env: list[NonEmptyStr] = Field(
        default_factory=list,
        description="environment variables that must be set and non-empty, else the evals are skipped "
        "(cli and python configurations)",
    )
    output: OutputSpec = Field(
        default_factory=OutputSpec,
        description="how to read the CLI's stdout: `format` with dotted paths, or a `parser`; default: "
        "all of stdout is the response",
    )
    max_output_bytes: Annotated[int, Field(gt=0)] = Field(
        default=8 * 2**20,
        description="an answer larger than this many bytes (default 8 MiB; a CLI's stdout, an HTTP "
        "response body) is an error instead of being read",
    )
    transcript: Annotated[str, AfterValidator(_relative_file)] | None = Field(
        default=None,
        description="a JSONL tool log the agent writes ({ts, tool, exit, success, …} per line), relative "
        "to its working directory; its absolute path is in the agent's VIBEEVAL_TRANSCRIPT variable",
    )
    xdist_group: Annotated[str, StringConstraints(min_length=1)] | bool | None = Field(
        default=None,
        description="with `--dist loadgroup`, one xdist worker runs this configuration's evals one at "
        "a time (a rate-limited API): true for a group named after the configuration, or a group "
        "name shared with other configurations",
    )
    xfail: NonEmptyStr | None = Field(
        default=None,
        description="every eval of this configuration is expected to fail, with the reason "
        "(reported as xfailed, strict: a pass fails the run)",
    )

    # The keys written for it (before its preset's were added); None: not made from a mapping.
    _written: frozenset[str] | None = PrivateAttr(default=None)

    @model_validator(mode="wrap")
    @classmethod
    def _apply_preset(cls, data: Any, handler: ModelWrapValidatorHandler[Configuration]) -> Configuration:
        written = frozenset(data) if isinstance(data, dict) else None
        if isinstance(data, dict) and data.get("preset") is not None:
            clash = [key for key in OTHER_KINDS if key in data]
            if clash:
                raise PydanticCustomError(
                    "preset_kind",
                    "preset {name} runs an agent CLI; it cannot be combined with `{key}`",
                    {"name": repr(data["preset"]), "key": clash[0]},
                )
            data = with_preset(data)
        configuration = handler(data)
        if written is not None:  # an instance validated again keeps what it was made from
            configuration._written = written
        elif isinstance(data, Configuration) and configuration is not data:
            configuration._written = data._written
        return configuration

    def written_settings(self) -> dict[str, Any]:
        """The settings as written (templates and variables filled in), without what a version
        of the plugin fills in: defaults, and a preset's settings (``preset`` itself is written)."""
        written = set(self._written) if self._written is not None else None
        return self.model_dump(mode="json", include=written, exclude_unset=True)

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Configuration:
        kinds = [k for k in ("cli", "python", "http", "replay", "provider") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise PydanticCustomError(
                "configuration_kind",
                "a configuration needs exactly one of `cli: <executable>`, `python: module:function`, "
                "`http: {base_url: …}`, `replay: <store folder>` or `provider: <a plugin's provider>` "
                "(found {found})",
                {"found": " and ".join(kinds) or "neither"},
            )
        return self

    @property
    def kind(self) -> str:
        for kind in ("cli", "python", "replay", "provider"):
            if getattr(self, kind) is not None:
                return kind
        return "http"

    @property
    def timeout_s(self) -> float:
        return self.timeout / 1000

    def group_name(self, config_id: str) -> str | None:
        """The xdist_group of this configuration's items (None: no group)."""
        if self.xdist_group is True:
            return config_id
        return self.xdist_group or None


class CliConfiguration(Configuration):
    """A configuration of ``cli-config.json``, where the unified runner requires a ``name``."""

    name: NonEmptyStr = Field(  # required here, optional in a suite
        description="a human-readable label, shown beside the id in the Run Summary and reports "
        '(required in cli-config.json, e.g. "Claude Code, Sonnet")',
    )


class CliConfigFile(StrictModel):
    """``cli-config.json`` of the unified runner."""

    configurations: dict[ConfigId, CliConfiguration] = Field(
        description="how prompts are answered, by configuration id"
    )
    defaultConfigurations: list[ConfigId] | None = Field(
        default=None,
        description="the ids run without --vibe-config (a suite's default_configurations wins); null: all",
    )
