"""Answer prompts by running an executable: the prompt on stdin or as an argument, the answer on stdout."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..loading.templates import MissingValue, Renderer
from ..masking import mask_file
from ..models.configuration import PLACEHOLDER, Configuration, OutputSpec
from ..process import (
    ArgumentsTooLong,
    CommandNotFound,
    CommandResult,
    UnpassableArgument,
    resolve_executable,
    run_command,
)
from ..reaping import marked
from ..results import StepRecord
from ..scoring.assess import TRANSCRIPT_ENV, transcript_path
from ..surrogates import utf8_bytes
from .agent_env import AllowedEnvironment, allowed_names
from .base import PromptRequest, ProviderError, ProviderResponse, missing_env_reason
from .output import OutputError, ParsedOutput, parse_output

# What only some configurations use (an MCP server, an output parser, a conversation, a prompt too
# long for the command line, a failed run) is imported where they do: not for every agent CLI.
if TYPE_CHECKING:
    from .cli_mcp import CliMcp
    from .mcp_tools import McpTarget
    from .parsers import Parser

CONFIG_DIR = "${CONFIG_DIR}"
PROMPT = "${PROMPT}"
AGENT_STEM = "agent"  # its output files: agent.stdout, agent.stderr and a long prompt's agent.stdin


def _read_plain(path: Path, spec: OutputSpec, parsers: Mapping[str, Parser] | None) -> ParsedOutput:
    """What :func:`.parsers.parse_agent_output` does for a configuration without a parser."""
    return parse_output(path, spec)


def agent_stem(turn: int) -> str:
    """The name of a run's output files: a conversation's later turns keep theirs beside the first's."""
    return AGENT_STEM if turn <= 1 else f"{AGENT_STEM}.turn-{turn}"


class CliProvider:
    """``config_dir`` is the folder of the file that defines the configuration: a relative ``cli``
    path is resolved against it, and ``${CONFIG_DIR}`` in ``cli``, ``args`` and ``env`` expands to it."""

    def __init__(
        self,
        config_id: str,
        config: Configuration,
        renderer: Renderer,
        config_dir: Path,
        max_processes: int = 0,
        parsers: Mapping[str, Parser] | None = None,
    ) -> None:
        assert config.cli
        self.max_processes = max_processes  # at most this many processes at once (0: no limit)
        self.parsers = parsers  # the session's output parsers (None: the built-ins)
        self.config_id = config_id
        self.config = config
        self.renderer = renderer
        self.config_dir = str(config_dir)
        cli = config.cli.replace(CONFIG_DIR, self.config_dir)
        self.executable = str(Path(self.config_dir, cli)) if "/" in cli and not os.path.isabs(cli) else cli
        self._allowed_environment = AllowedEnvironment(allowed_names(config))
        # The output parsers are imported here, once, for a configuration that names one: an
        # item's run runs no import statement.
        self._parse: Callable[[Path, OutputSpec, Mapping[str, Parser] | None], ParsedOutput] = _read_plain
        self._own_sandbox_problem: Callable[[list[str], Path, Path], str | None] | None = None
        if config.output.parser:
            from .parsers import parse_agent_output

            self._parse = parse_agent_output
        if config.output.parser == "codex":
            from .parse_codex import own_sandbox_problem

            self._own_sandbox_problem = own_sandbox_problem
        # An explicit path is checked by missing_path() before each run: run_command need not again.
        self._path_checked = os.path.isabs(self.executable)

    def _expand(self, text: str, values: Mapping[str, str] | None = None) -> str:
        """``text`` with its templates filled and its placeholders (``${CONFIG_DIR}`` and those
        of ``values``) replaced in one pass: a value is never expanded again, so a ``--vibe-var``
        or a prompt that holds ``${PROMPT}`` stays as it is."""
        values = {CONFIG_DIR: self.config_dir, **(values or {})}
        pieces: list[str] = []
        start = 0
        for match in PLACEHOLDER.finditer(text):
            if match[0] in values:
                pieces += [self.renderer.render(text[start : match.start()]), values[match[0]]]
                start = match.end()
        pieces.append(self.renderer.render(text[start:]))
        return "".join(pieces)

    def request_environment(self, cwd: Path) -> dict[str, str]:
        """The environment of one run in ``cwd``: with the configuration's ``transcript``, the
        variable naming where the agent's JSONL tool log goes (its folder is made here)."""
        env = self._env()
        log = transcript_path(self.config, cwd)
        if log is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            env[TRANSCRIPT_ENV] = str(log)
        return env

    def _env(self) -> dict[str, str]:
        """The allowlisted variables of this process's environment and the configuration's ``env``."""
        env = self._allowed_environment(os.environ)
        env.update({key: self._expand(value) for key, value in self.config.env.items()})
        return env

    def unavailable_reason(self) -> str | None:
        """Decided once per session: whether the executable and the environment are there."""
        if not hasattr(self, "_unavailable"):
            self._unavailable = self._check_available()
        return self._unavailable

    def _check_available(self) -> str | None:
        missing = missing_env_reason(self.config_id, self.config.requires_env)
        if missing:
            return missing
        try:
            env = self._env()
            for arg in self.config.args:
                self._expand(arg)
        except MissingValue as exc:
            return str(exc)
        if resolve_executable(self.executable, env) is None and "/" not in self.executable:
            # A CLI not installed here is a missing prerequisite: skip. An explicit path that is
            # not there is a mistake in the configuration: its items error (see missing_path).
            return f"configuration {self.config_id!r}: executable {self.executable!r} not found on PATH"
        return None

    def missing_path(self) -> str | None:
        """Why an explicit ``cli:`` path cannot run (it does not exist or is not executable): a
        configuration error that fails its items, unlike a CLI missing from PATH, which skips."""
        if "/" not in self.executable or resolve_executable(self.executable) is not None:
            return None
        what = "is not executable" if Path(self.executable).is_file() else "does not exist"
        return (
            f"configuration {self.config_id!r}: executable {self.executable!r} {what}; fix its `cli:` "
            "path (a relative path is resolved from the file that defines the configuration)"
        )

    def argv(self, request: PromptRequest, extra: tuple[str, ...] = ()) -> list[str]:
        """The command line; ``extra`` arguments go after the configuration's, before a prompt
        appended at the end."""
        values = {
            "${MODEL}": self.config.model or request.model,
            "${SYSTEM_PROMPT}": request.system_prompt or "",
            PROMPT: request.prompt,
        }
        args = [self._expand(arg, values) for arg in self.config.args]
        args.extend(extra)
        if self.config.prompt_via == "argument" and not self.prompt_placed():
            args.append(request.prompt)
        return [self.executable, *args]

    def prompt_placed(self) -> bool:
        """Whether an argument holds ``${PROMPT}``."""
        return any(PROMPT in arg for arg in self.config.args)

    def prompt_in_arguments(self) -> bool:
        """Whether the prompt is on the command line (appended, or where ``${PROMPT}`` is)."""
        return self.config.prompt_via == "argument" or self.prompt_placed()

    def mcp_handover(self, request: PromptRequest) -> tuple[McpTarget | None, CliMcp]:
        """The request's MCP server and what gives it to this CLI (nothing without a server);
        ProviderError when the CLI cannot take it (the runner normally skips the item first)."""
        from .cli_mcp import CliMcp, handover, mcp_way, unsupported_reason
        from .mcp_tools import McpTarget

        if not request.mcp_server:
            return None, CliMcp()
        target = McpTarget.from_request(request.mcp_server)
        reason = unsupported_reason(self.config, self.config_id, target)
        way = mcp_way(self.config)
        if reason or way is None:
            raise ProviderError(reason or "no MCP handover")
        return target, handover(way, target)

    def answer(self, request: PromptRequest) -> ProviderResponse:
        broken = self.missing_path()
        if broken:
            raise ProviderError(broken)
        target, mcp = self.mcp_handover(request) if request.mcp_server else (None, None)
        resume = None
        if request.turn:
            from .sessions import resume_of

            resume = resume_of(self.config)
        try:
            argv = self.argv(request, (*(mcp.args if mcp is not None else ()), *self.continuing(request)))
        except MissingValue as exc:  # unavailable_reason() normally skips the item first
            raise ProviderError(str(exc)) from None
        stdin = request.prompt if self.config.prompt_via == "stdin" else None
        if mcp is not None:
            from .cli_mcp import write_settings

            write_settings(request.workdir, mcp)
        stem = agent_stem(request.turn)
        env = marked({**self.request_environment(request.workdir), **(mcp.env if mcp is not None else {})})
        try:
            try:
                result = self._run(argv, stdin, request.workdir, stem, env)
            except ArgumentsTooLong as exc:  # the prompt may go another way: the command never ran
                argv, stdin = self._reroute(exc, argv, stdin, request, request.workdir / f"{stem}.prompt")
                result = self._run(argv, stdin, request.workdir, stem, env)
        except UnpassableArgument as exc:
            if "\x00" in request.prompt and self.prompt_in_arguments():
                raise ProviderError(
                    "the prompt holds a NUL character (\\x00), which no command-line argument can "
                    "carry: pass it on stdin instead (`prompt_via: stdin`, no `${PROMPT}` in `args`)"
                ) from None
            raise ProviderError(str(exc)) from None
        except CommandNotFound as exc:
            raise ProviderError(str(exc)) from None
        finally:  # a long prompt went through a file: the agent has read it, keep it masked
            if self.renderer.used_secrets:  # without secrets there is nothing to mask
                for suffix in (".stdin", ".prompt"):
                    mask_file(request.workdir / f"{stem}{suffix}", self.renderer.used_secrets)
        step = StepRecord(
            phase="agent",
            name=self.config_id,
            argv=[argv[0], *["<prompt>" if a == request.prompt else a for a in argv[1:]]],
            cwd=str(request.workdir),
            exit_code=result.exit_code,
            duration=result.duration,
            timed_out=result.timed_out,
            log=str(result.stdout_path),
        )
        if result.timed_out:
            raise ProviderError(f"timed out after {self.config.timeout_s:g} s", [step])
        if result.exit_code != 0:
            from .failure import failure_report

            headline = f"{self.config.cli} exited with code {result.exit_code}"
            report = failure_report(
                headline, result.stdout_path, result.stderr_path, self.config.output, self.parsers
            )
            raise ProviderError(report, [step])
        size = result.output_size()
        if size > self.config.max_output_bytes:
            raise ProviderError(
                f"{self.config.cli} printed {size} bytes, more than max_output_bytes "
                f"({self.config.max_output_bytes}); raise it in the configuration if that is expected",
                [step],
            )
        if self._own_sandbox_problem is not None:
            problem = self._own_sandbox_problem(argv, result.stderr_path, result.stdout_path)
            if problem:  # codex exited 0, but none of its commands could run: nothing was measured
                raise ProviderError(problem, [step])
        try:
            parsed = self._parse(result.stdout_path, self.config.output, self.parsers)
        except OutputError as exc:
            raise ProviderError(str(exc), [step]) from None
        # Only an output.parser reads tool calls; plain text or JSON output cannot report them.
        tool_calls = list(parsed.tool_calls) if self.config.output.parser else None
        if target is not None:
            from .cli_mcp import connection_failure, mcp_way, recorded_calls

            way = mcp_way(self.config)
            if way is not None:
                failure = connection_failure(way, target, result.stdout_path)
                if failure:
                    raise ProviderError(failure, [step])
                if tool_calls is not None:
                    tool_calls = recorded_calls(way, target, tool_calls)
        tokens: tuple[int | None, ...] = (
            parsed.input_tokens, parsed.output_tokens, parsed.cached_input_tokens, parsed.cache_write_tokens,
        )  # fmt: skip
        totals = tokens if resume is not None and resume.running_totals else None
        if totals is not None and request.history:  # a continued session: this run's share
            from .sessions import turn_tokens

            tokens = turn_tokens(totals, request.session_tokens)
        session_id = None
        if resume:
            from .sessions import reported_session

            session_id = reported_session(result.stdout_path, resume)
        return ProviderResponse(
            parsed.text,
            parsed.cost,
            tokens[0],
            tokens[1],
            [step],  # keeps the measured wall time (duration) even when the agent reports its latency
            cached_input_tokens=tokens[2],
            cache_write_tokens=tokens[3],
            latency=parsed.latency,
            tool_calls=tool_calls,
            api_retries=parsed.api_retries if self.config.output.parser else None,
            session_id=session_id,
            session_tokens=totals,
        )

    def _run(
        self, argv: list[str], stdin: str | None, workdir: Path, stem: str, env: dict[str, str]
    ) -> CommandResult:
        return run_command(
            argv, cwd=workdir, output_dir=workdir, name=stem, env=env, timeout=self.config.timeout_s,
            stdin_text=stdin, max_processes=self.max_processes, checked=self._path_checked,
        )  # fmt: skip

    def _reroute(
        self,
        refused: ArgumentsTooLong,
        argv: list[str],
        stdin: str | None,
        request: PromptRequest,
        file: Path,
    ) -> tuple[list[str], str | None]:
        """The command line and stdin that give the CLI its prompt another way, after the system
        ``refused`` ``argv`` (E2BIG); ProviderError, naming the limit, when there is none."""
        from .long_prompt import reroute, too_long_hint

        rerouted = reroute(self.config, argv, request.prompt, stdin, file)
        if isinstance(rerouted, str):  # the preset's way cannot take this prompt
            raise ProviderError(f"{refused}; {rerouted}")
        if rerouted is None:
            raise ProviderError(
                f"{refused}{too_long_hint(self.config, request.prompt, self.prompt_in_arguments())}"
            )
        if rerouted.file is not None:
            try:
                rerouted.file.write_bytes(utf8_bytes(request.prompt))
            except OSError as exc:
                raise ProviderError(
                    f"{refused}; the prompt would go in the file {rerouted.file}, which cannot be "
                    f"written: {exc.strerror or exc}"
                ) from None
        return rerouted.argv, rerouted.stdin

    def continuing(self, request: PromptRequest) -> tuple[str, ...]:
        """The arguments that continue the previous turn's session (none on a first turn);
        ProviderError when this CLI cannot, or the previous turn reported no session."""
        if not request.history:
            return ()
        from .sessions import resume_args, resume_of
        from .sessions import unsupported_reason as no_resume_reason

        resume = resume_of(self.config)
        if resume is None:  # the runner normally skips the item first
            raise ProviderError(no_resume_reason(self.config, self.config_id) or "cannot continue")
        if not request.session_id:
            raise ProviderError(
                f"configuration {self.config_id!r}: turn {request.turn - 1}'s output reported no session "
                f"id (`{resume.field}`), so turn {request.turn} cannot continue its conversation; is "
                "the output format the preset's?"
            )
        return resume_args(resume, request.session_id)
