"""An item that ran more than once, because a plugin reran it (pytest-rerunfailures' ``--reruns``):
its record is its last attempt's, with what the earlier attempts cost added, since each was paid
for."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..results import AttemptRecord, EvalRecord, attempt_of


@dataclass(slots=True)
class EarlierAttempts:
    """The attempts of an item before its last: how many, and what they cost."""

    count: int = 0
    cost: float | None = 0.0  # None once one of them reported none: never a partial sum
    judge_cost: float | None = None  # their llm_judge judges', where they asked one
    recorded: list[AttemptRecord] = field(default_factory=list)  # those that left a record

    def add(self, record: EvalRecord) -> None:
        """Count the record of an attempt that was not the last."""
        self.count += 1
        self.recorded.append(attempt_of(record))
        self.cost = _sum(self.cost, record.cost)
        self.judge_cost = _known_sum(self.judge_cost, record.judge_cost)

    def add_lost(self) -> None:
        """Count an attempt whose xdist worker was lost: it left no record, so what it spent is
        unknown."""
        self.count += 1
        self.cost = None

    def folded(self, last: EvalRecord) -> EvalRecord:
        """``last``, the last attempt's record, with the earlier attempts counted in its ``attempts``,
        ``cost`` and ``judge_cost``, and each attempt's cache use in its ``rerun_attempts``."""
        return last.model_copy(
            update={
                "attempts": self.count + 1,
                "rerun_attempts": [*self.recorded, attempt_of(last)],
                "rerun_cost": self.cost,
                "cost": _sum(self.cost, last.cost),
                "judge_cost": _known_sum(self.judge_cost, last.judge_cost),
            }
        )


def _sum(total: float | None, cost: float | None) -> float | None:
    return None if total is None or cost is None else total + cost


def _known_sum(total: float | None, cost: float | None) -> float | None:
    """The sum of the costs known: a judge's cost is None where the attempt asked none."""
    return total if cost is None else (total or 0.0) + cost
