"""Memory with a huge agent output: an agent printing 200 MB to stdout, with the default
``max_output_bytes`` (the output is an error, never read) and with the limit raised above it (the
output is read as the answer), against an idle run of the same suite whose agent prints one line.
Peak RSS of the controller and of each xdist worker, from the projects' conftest. The worker that
reads the answer may hold twice what it keeps of it: the answer's text, which its checks read
whole, and the recorded excerpt (bench/targets.py)."""

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
from .targets import FEW_MB, extra_verdict, kept_verdict

SIZE = 200_000_000
RAISED = 256 * 2**20
EVALS = 2  # one item for each worker
BENCH = "200 MB agent output"
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


def output_rows(
    case: str, peaks: dict[str, float], idle: dict[str, float], spread: float, read: bool
) -> list[Row]:
    """Controller and workers against the idle run: the controller within a few MB; a worker that
    read the answer (``read``) within twice what it keeps of it (the answer's text and its
    excerpt), one that did not within a few MB."""
    rows = []
    for who, ours, base in (
        ("controller", peaks["controller"], idle["controller"]),
        ("workers (max)", workers_peak(peaks), workers_peak(idle)),
    ):
        reading_worker = read and who != "controller"
        target, met = (
            kept_verdict(ours, base, SIZE) if reading_worker else extra_verdict(ours, base, FEW_MB, "idle")
        )
        rows.append(
            Row(
                BENCH,
                f"{case}: {who} peak RSS",
                mb(ours),
                f"{mb(base)} (idle)",
                ours / base,
                target,
                met,
                f"{ours - base:+.1f} MB; idle run-to-run spread {spread:.1f} MB",
            )
        )
    return rows


def idle_floor(first: dict[str, float], again: dict[str, float]) -> tuple[dict[str, float], float]:
    """The idle peak of each process (the higher of the two idle runs, so that their noise never
    counts against the plugin) and the largest difference between the runs."""
    floor = {role: max(first[role], again.get(role, 0.0)) for role in first}
    spread = max(abs(again.get(role, 0.0) - first[role]) for role in first)
    return floor, spread


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
    floor, spread = idle_floor(idle, again)
    return [
        *output_rows(
            f"default max_output_bytes (8 MiB: an error), -n {workers}", default, floor, spread, False
        ),
        *output_rows(f"max_output_bytes 256 MiB (read), -n {workers}", raised, floor, spread, True),
    ]
