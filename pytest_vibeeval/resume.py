"""--vibe-resume: reuse the results of items that finished in an earlier run, so an interrupted
run continues where it stopped.

An item's earlier record is reused when the same suite file content and configuration settings
(the run's ``input_digest``), configuration id, eval and repeat finished there with a verdict
(passed or failed). Errors, skips and anything not reached run again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .baseline import load_baseline
from .models import Configuration
from .results import EvalRecord

Key = tuple[str, str, str, str, int]  # source, input digest, configuration, eval, repeat
FINISHED = ("passed", "failed")


def input_digest(files: Iterable[Path], configuration: Configuration | None) -> str:
    """sha256 over the files' bytes (those that exist) and the configuration's settings."""
    digest = hashlib.sha256()
    for path in files:
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"<missing>")
        digest.update(b"\0")
    settings = configuration.model_dump(mode="json") if configuration is not None else None
    digest.update(json.dumps(settings, sort_keys=True).encode("utf-8"))
    return digest.hexdigest()


@dataclass
class ResumeIndex:
    """The finished records of an earlier results file, by item."""

    source: str  # the results file, as shown to the user
    records: dict[Key, EvalRecord] = field(default_factory=dict)

    def find(
        self, source: str, digest: str, configuration: str, eval_id: str, repeat: int
    ) -> EvalRecord | None:
        return self.records.get((source, digest, configuration, eval_id, repeat))


def load_resume(path: Path, shown: str) -> ResumeIndex:
    """The finished records of the results file at ``path``; raises BaselineError (naming the file)
    when it cannot be read."""
    results = load_baseline(path)
    index = ResumeIndex(shown)
    for run in results.runs:
        if run.input_digest is None:
            continue  # written before results kept digests: nothing can be matched safely
        for record in run.evals:
            if record.outcome in FINISHED:
                key = (run.source, run.input_digest, run.configuration, record.name, record.repeat)
                index.records[key] = record.model_copy(update={"reused_from": shown})
    return index
