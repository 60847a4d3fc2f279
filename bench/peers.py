"""The same N evals through pytest-vibeeval and through its peers, side by side: promptfoo's
``exec:`` provider running the agent script that a ``cli:`` configuration runs (``-j 1`` against a
serial run, ``-j W`` against ``-n W``), and inspect_ai's mockllm answering with the function that a
``python:`` configuration calls (serial). Each side has the one check "contains 42". Every run of a
peer must show, in its own results file, that it ran all N evals and that they passed, so that a
misconfigured peer cannot look fast."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import (
    Row,
    Run,
    clean_env,
    cli_config,
    executable,
    interleaved,
    median,
    outcome_count,
    project,
    run_command,
    run_pytest,
    seconds,
    suite_text,
)
from .overhead import AGENTS, APP, repeats_for
from .peer_install import INSPECT_AI, PROMPTFOO, Peers, PeersUnavailable, install

NEEDLE = "42"
CHECK = f"contains: '{NEEDLE}'"
PROMPTFOO_TARGET = 0.33
INSPECT_TARGET = 0.2
BENCH = "peers"

# Everything promptfoo would otherwise do beside the evals: telemetry, update checks, sharing,
# remote generation, its response cache (its folders go into the benchmark's temporary tree).
PROMPTFOO_ENV = {
    "PROMPTFOO_DISABLE_TELEMETRY": "1",
    "PROMPTFOO_DISABLE_UPDATE": "1",
    "PROMPTFOO_DISABLE_SHARING": "1",
    "PROMPTFOO_DISABLE_REMOTE_GENERATION": "1",
    "PROMPTFOO_DISABLE_REDTEAM_REMOTE_GENERATION": "1",
    "PROMPTFOO_CACHE_ENABLED": "false",
    "NO_COLOR": "1",
}
PROMPTFOO_ARGS = ("--no-cache", "--no-write", "--no-share", "--no-table", "--no-progress-bar")
# inspect_ai: no tokenizer or hub downloads (the mock reports its usage, so none is needed anyway),
# no telemetry hook, no display.
INSPECT_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "INSPECT_DISPLAY": "none"}
DROPPED = ("INSPECT_TELEMETRY", "INSPECT_REQUIRED_HOOKS", "INSPECT_EVAL_MODEL", "INSPECT_LOG_DIR")

INSPECT_TASK = """\
from bench_app import answer
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes
from inspect_ai.solver import generate


def respond(messages, tools, tool_choice, config):
    # Explicit usage: without it mockllm counts tokens with a tokenizer it would download.
    output = ModelOutput.from_content(model="mockllm/model", content=answer(messages[-1].text))
    output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return output


@task
def bench():
    samples = [Sample(id=i, input=f"Question {{i}}?", target={needle!r}) for i in range({evals})]
    model = get_model("mockllm/model", custom_outputs=respond)
    return Task(dataset=samples, solver=generate(), scorer=includes(), model=model)
"""


@dataclass(frozen=True)
class Counts:
    """What a tool's own results file says: evals run (answered, not from a cache) and passed."""

    ran: int
    passed: int


def _dicts(value: object) -> list[dict[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def promptfoo_counts(output: Mapping[str, Any], needle: str = NEEDLE) -> Counts:
    """The counts of a promptfoo ``-o results.json``: results with an uncached response ran; of
    those, the ones that succeeded with ``needle`` in the answer passed (and no more than its
    stats call successes, with no failures or errors)."""
    results = _dict(output.get("results"))
    ran = passed = 0
    for result in _dicts(results.get("results")):
        response = _dict(result.get("response"))
        if "output" not in response or response.get("cached"):
            continue
        ran += 1
        passed += result.get("success") is True and needle in str(response["output"])
    stats = _dict(results.get("stats"))
    if stats.get("failures") or stats.get("errors"):
        return Counts(ran, 0)
    successes = stats.get("successes")
    return Counts(ran, min(passed, successes if isinstance(successes, int) else 0))


def inspect_counts(log: Mapping[str, Any], needle: str = NEEDLE, scorer: str = "includes") -> Counts:
    """The counts of an inspect_ai JSON log: samples with a model output ran (none unless the eval
    succeeded, and no more than its results call completed); of those, the ones ``scorer`` marked
    correct ("C") with ``needle`` in the completion passed."""
    if log.get("status") != "success":
        return Counts(0, 0)
    completed = _dict(log.get("results")).get("completed_samples")
    ran = passed = 0
    for sample in _dicts(log.get("samples")):
        completion = _dict(sample.get("output")).get("completion")
        if not isinstance(completion, str):
            continue
        ran += 1
        score = _dict(_dict(sample.get("scores")).get(scorer))
        passed += score.get("value") == "C" and needle in completion
    limit = completed if isinstance(completed, int) else 0
    return Counts(min(ran, limit), min(passed, limit))


def check_counts(tool: str, counts: Counts, evals: int, where: Path) -> None:
    """Exit unless ``tool`` ran and passed all ``evals`` evals (its results file: ``where``)."""
    if counts != Counts(evals, evals):
        raise SystemExit(
            f"{tool} ran {counts.ran} and passed {counts.passed} of {evals} evals (see {where}): "
            "its timing would not be comparable"
        )


def _read_json(path: Path, tool: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{tool} wrote no readable results file {path}: {exc}") from None
    return _dict(data)


def _peer_env(temproot: Path, extra: Mapping[str, str]) -> dict[str, str]:
    env = {
        k: v for k, v in clean_env(temproot).items() if k not in DROPPED and not k.startswith("PROMPTFOO_")
    }
    return {**env, **extra}


@dataclass(frozen=True)
class Side:
    """One side of a comparison: how to run it once, and how to check that run."""

    run: Callable[[], Run]
    check: Callable[[Run], None]


def _ours(folder: Path, args: list[str], temproot: Path, evals: int) -> Side:
    def check(run: Run) -> None:
        if outcome_count(run.output, "passed") != evals:
            raise SystemExit(f"not every eval passed in {folder}:\n{run.output[-2000:]}")

    return Side(lambda: run_pytest(args, folder, clean_env(temproot)), check)


def _promptfoo(peers: Peers, work: Path, agent: Path, evals: int, jobs: int) -> Side:
    folder = work / f"promptfoo-{evals}-j{jobs}"
    folder.mkdir()
    config = {
        "description": "bench",
        "prompts": ["Question {{i}}?"],
        "providers": [{"id": f"exec:{agent}"}],
        "tests": [
            {"vars": {"i": i}, "assert": [{"type": "icontains", "value": NEEDLE}]} for i in range(evals)
        ],
    }
    (folder / "promptfooconfig.json").write_text(json.dumps(config))
    results = folder / "results.json"
    env = _peer_env(
        folder / "tmp",
        {
            **PROMPTFOO_ENV,
            "PATH": peers.path,
            "PROMPTFOO_CONFIG_DIR": str(folder / "config"),
            "PROMPTFOO_LOG_DIR": str(folder / "logs"),
        },
    )
    command = [
        str(peers.promptfoo), "eval", "-c", "promptfooconfig.json", "-j", str(jobs), *PROMPTFOO_ARGS,
        "-o", str(results),
    ]  # fmt: skip

    def run() -> Run:
        results.unlink(missing_ok=True)
        return run_command(command, folder, env)

    def check(_: Run) -> None:
        check_counts("promptfoo", promptfoo_counts(_read_json(results, "promptfoo")), evals, results)

    return Side(run, check)


def _inspect(peers: Peers, work: Path, evals: int) -> Side:
    folder = work / f"inspect-{evals}"
    folder.mkdir()
    (folder / "bench_app.py").write_text(APP)
    (folder / "bench_task.py").write_text(INSPECT_TASK.format(evals=evals, needle=NEEDLE))
    logs = folder / "logs"
    env = _peer_env(
        folder / "tmp", {**INSPECT_ENV, "PYTHONPATH": str(folder), "XDG_DATA_HOME": str(folder / "data")}
    )
    command = [str(peers.inspect), "eval", "bench_task.py", "--display", "none", "--log-dir", str(logs)]
    command += ["--log-format", "json"]

    def run() -> Run:
        shutil.rmtree(logs, ignore_errors=True)
        return run_command(command, folder, env)

    def check(_: Run) -> None:
        found = sorted(logs.glob("*.json"))
        if len(found) != 1:
            raise SystemExit(f"inspect_ai wrote {len(found)} logs into {logs}, not one")
        check_counts("inspect_ai", inspect_counts(_read_json(found[0], "inspect_ai")), evals, found[0])

    return Side(run, check)


def _checked(side: Side) -> Callable[[], Run]:
    """``side``'s run, checked at once (the next run overwrites its results file)."""

    def call() -> Run:
        run = side.run()
        side.check(run)
        return run

    return call


def _compare(sides: Mapping[str, Side], repeat: int) -> dict[str, Run]:
    """``repeat`` interleaved runs of each side, each one checked: the median run of each side."""
    runs = interleaved({name: _checked(side) for name, side in sides.items()}, repeat)
    return {name: median(side_runs) for name, side_runs in runs.items()}


def _row(case: str, evals: int, ours: Run, peer: Run, peer_name: str, target: float, repeat: int) -> Row:
    ratio = ours.wall / peer.wall
    cpu_ratio = f"{ours.cpu / peer.cpu:.2f}×" if peer.cpu > 0 else "—"
    return Row(
        BENCH,
        case,
        f"{seconds(ours.wall)} ({ours.wall / evals * 1000:.2f} ms/eval)",
        f"{seconds(peer.wall)} ({peer.wall / evals * 1000:.2f} ms/eval, {peer_name})",
        ratio,
        f"≤ {target:.2f}",
        ratio <= target,
        f"median of {repeat}; CPU {ours.cpu:.1f} s vs {peer.cpu:.1f} s ({cpu_ratio})",
    )


def _unavailable(message: str) -> list[Row]:
    print(f"peers: not measured: {message}", flush=True)
    return [Row(BENCH, "not measured", "—", "—", None, note=message.splitlines()[0])]


def peers(root: Path, cache: Path, sizes: Sequence[int], workers: Sequence[int], repeat: int) -> list[Row]:
    """Ours against promptfoo (CLI agent; serial and each ``-n W`` in ``workers``) and against
    inspect_ai (``python:`` callable; serial) at each N in ``sizes``; the ratios ours / peer."""
    try:
        installed = install(cache)
    except PeersUnavailable as exc:
        return _unavailable(str(exc))
    for one in installed.installs:
        how = "reused" if one.reused else "installed now"
        print(f"peers: {one.package}: {one.megabytes:.0f} MB, install took {one.seconds:.0f} s ({how})")
    print(f"peers: promptfoo runs on node {installed.node_version}; cache {cache}", flush=True)
    work = root / "peers"
    work.mkdir()
    agent = executable(work / "agent", AGENTS["sh"])
    promptfoo_name, inspect_name = PROMPTFOO.replace("@", " "), INSPECT_AI.replace("==", " ")
    rows: list[Row] = []
    for n in sizes:
        count = repeats_for(n, repeat)
        cli_dir = project(
            work / f"ours-cli-{n}", {"bench.eval.yaml": suite_text(n, {"c0": cli_config(agent)}, CHECK)}
        )
        for w in workers:
            xdist = ["-n", str(w)] if w else []
            results = ["--vibe-results", str(work / f"results-cli-{n}-{w}.json")]
            sides = {
                "ours": _ours(cli_dir, [*xdist, *results], work / f"tmp-cli-{n}-{w}", n),
                "peer": _promptfoo(installed, work, agent, n, max(w, 1)),
            }
            measured = _compare(sides, count)
            mode = f"-n {w} vs -j {w}" if w else "serial vs -j 1"
            case = f"N={n}, cli: sh agent vs {promptfoo_name} exec:, {mode}"
            rows.append(
                _row(case, n, measured["ours"], measured["peer"], "promptfoo", PROMPTFOO_TARGET, count)
            )
        suite = suite_text(n, {"c0": '{python: "bench_app:answer"}'}, CHECK)
        python_dir = project(work / f"ours-python-{n}", {"bench.eval.yaml": suite, "bench_app.py": APP})
        results = ["--vibe-results", str(work / f"results-python-{n}.json")]
        sides = {
            "ours": _ours(python_dir, results, work / f"tmp-python-{n}", n),
            "peer": _inspect(installed, work, n),
        }
        measured = _compare(sides, count)
        case = f"N={n}, python: callable vs {inspect_name} mockllm, serial"
        rows.append(_row(case, n, measured["ours"], measured["peer"], "inspect_ai", INSPECT_TARGET, count))
        print(f"peers: N={n} done", flush=True)
    return rows
