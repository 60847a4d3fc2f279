"""Memory with a huge agent output: an agent printing 200 MB to stdout, with the default
``max_output_bytes`` (the output is an error, never read) and with the limit raised above it (the
output is read as the answer), against an idle run of the same suite whose agent prints one line.
Peak RSS of the controller and of each xdist worker, from the projects' conftest."""

from __future__ import annotations

import shutil
from pathlib import Path

from .common import (
    RSS_ENV,
    Row,
    clean_env,
    cli_config,
    executable,
    mb,
    outcome_count,
    peak_rss,
    project,
    run_pytest,
    suite_text,
    workers_peak,
)

SIZE = 200_000_000
RAISED = 256 * 2**20
EVALS = 2  # one item for each worker
TARGET_MB = 5.0  # "within a few MB of an idle run"
IDLE_AGENT = "#!/bin/sh\ncat > /dev/null\necho 'The answer is 42.'\n"
BIG_AGENT = "#!/bin/sh\ncat > /dev/null\nyes 'The answer is 42.' | head -c {size}\n"


def _run(work: Path, name: str, configuration: str, workers: int) -> tuple[dict[str, float], str]:
    """Peak RSS (MB) of every process of one ``-n workers`` run of the suite, and its output."""
    folder = project(work / name, {"big.eval.yaml": suite_text(EVALS, {"c0": configuration})})
    rss_file = work / f"rss-{name}.jsonl"
    temproot = work / f"tmp-{name}"
    env = clean_env(temproot, {RSS_ENV: str(rss_file)})
    args = ["-n", str(workers), "--vibe-results", str(work / f"{name}.json")]
    run = run_pytest(args, folder, env, ok=(0, 1))
    shutil.rmtree(temproot, ignore_errors=True)  # the agents' 200 MB files
    (work / f"{name}.json").unlink(missing_ok=True)
    return peak_rss(rss_file), run.output


def _expect(output: str, outcome: str, text: str = "") -> None:
    if outcome_count(output, outcome) != EVALS or text not in output:
        raise SystemExit(f"expected {EVALS} {outcome} {text!r}:\n{output[-3000:]}")


def _rows(case: str, peaks: dict[str, float], idle: dict[str, float], spread: float) -> list[Row]:
    rows = []
    for who, ours, base in (
        ("controller", peaks["controller"], idle["controller"]),
        ("workers (max)", workers_peak(peaks), workers_peak(idle)),
    ):
        rows.append(
            Row(
                "200 MB agent output",
                f"{case}: {who} peak RSS",
                mb(ours),
                f"{mb(base)} (idle)",
                ours / base,
                f"≤ idle + {TARGET_MB:.0f} MB",
                ours - base <= TARGET_MB,
                f"{ours - base:+.1f} MB; idle run-to-run spread {spread:.1f} MB",
            )
        )
    return rows


def big_output(root: Path, workers: int) -> list[Row]:
    work = root / "output"
    work.mkdir()
    idle_agent = executable(work / "idle-agent", IDLE_AGENT)
    big_agent = executable(work / "big-agent", BIG_AGENT.format(size=SIZE))
    idle, out = _run(work, "idle", cli_config(idle_agent), workers)
    _expect(out, "passed")
    default, out = _run(work, "default", cli_config(big_agent), workers)
    _expect(out, "failed", "more than max_output_bytes")
    raised, out = _run(work, "raised", cli_config(big_agent, max_output_bytes=RAISED), workers)
    _expect(out, "passed")
    again, out = _run(work, "idle-again", cli_config(idle_agent), workers)
    _expect(out, "passed")
    spread = max(abs(again[role] - idle[role]) for role in idle)
    return [
        *_rows(f"default max_output_bytes (8 MiB: an error), -n {workers}", default, idle, spread),
        *_rows(f"max_output_bytes 256 MiB (read), -n {workers}", raised, idle, spread),
    ]
