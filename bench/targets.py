"""The targets of issue #21, in one place, and how a row says whether it meets one: a ratio against
the floor, or an allowance in MB above it. A target applies only at the sizes the issue names; at
other sizes (a quick run with ``--sizes 50``) a row shows the figure without a verdict."""

from __future__ import annotations

from collections.abc import Collection

from pytest_vibeeval.excerpts import RESPONSE_EXCERPT_CHARS

# Prompt evals through cli: and python: configurations, serial and -n 2: total wall time against
# the plain pytest equivalent.
OVERHEAD_RATIO = 1.2
OVERHEAD_SIZES = (100, 500, 2000)
# pytest's "collected in" of 10 000 items against a 10 000-case parametrized test.
COLLECTION_RATIO = 2.0
COLLECTION_ITEMS = 10_000
# Controller peak RSS of a 10 000-item run under -n 2, above the plain project of the same size.
CONTROLLER_EXTRA_MB = 30.0
MEMORY_ITEMS = 10_000
MEMORY_WORKERS = 2
# A worker reading a 200 MB answer (max_output_bytes raised) may peak this many times what it
# keeps of the answer (the answer's text for its checks, and its excerpt) above an idle run.
KEPT_FACTOR = 2
# copy_tree of a workspace template against cp -a of the same tree.
WORKSPACE_RATIO = 1.2
# "Within a few MB of an idle run": the 200 MB answer not read, and the controller when it is.
FEW_MB = 5.0

Verdict = tuple[str, bool | None]
NO_TARGET: Verdict = ("—", None)


def ratio_verdict(
    ratio: float, limit: float, size: int | None = None, sizes: Collection[int] = ()
) -> Verdict:
    """``≤ limit×`` and whether ``ratio`` meets it; no verdict when ``size`` is not one of
    ``sizes`` (when ``sizes`` is given)."""
    if sizes and size not in sizes:
        return NO_TARGET
    return f"≤ {limit:.2f}×", ratio <= limit


def extra_verdict(ours_mb: float, floor_mb: float, allowance_mb: float, floor_name: str = "floor") -> Verdict:
    """``≤ floor + allowance`` and whether ``ours_mb`` is within it."""
    return f"≤ {floor_name} + {allowance_mb:.3g} MB", ours_mb - floor_mb <= allowance_mb


def kept_mb(answer_bytes: int, answers: int = 1) -> float:
    """What a worker keeps of ``answers`` read answers of ``answer_bytes`` each, in MB: the answer
    as the checks read it (a ``str``: one byte a character for an ASCII answer, so as many bytes as
    the agent printed) and its recorded excerpt (``RESPONSE_EXCERPT_CHARS`` characters). Checks
    such as ``match`` need the whole text, so an answer read with ``max_output_bytes`` raised is
    kept whole while its checks run; "2× kept" leaves room for the bytes it is decoded from."""
    return answers * (answer_bytes + RESPONSE_EXCERPT_CHARS) / 2**20


def kept_verdict(ours_mb: float, idle_mb: float, answer_bytes: int, answers: int = 1) -> Verdict:
    """``≤ idle + 2× kept`` for a process that read ``answers`` answers of ``answer_bytes``."""
    allowance = KEPT_FACTOR * kept_mb(answer_bytes, answers)
    return f"≤ idle + {KEPT_FACTOR}× kept ({allowance:.4g} MB)", ours_mb - idle_mb <= allowance


def met_cell(met: bool | None) -> str:
    """The table's verdict column."""
    return "—" if met is None else "meets" if met else "**misses**"
