"""What an answer cost, as a record holds it: its tokens, its reported or priced cost and why the
model stopped. An answer that was paid for but is no answer (a refusal or a content-filtered answer:
:attr:`.providers.ProviderError.spent`) costs the same way, for a single prompt, a conversation's
turn and an ``llm_judge`` judge alike."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .pricing import estimated_cost

if TYPE_CHECKING:
    from .models import Configuration
    from .providers import ProviderError, ProviderResponse
    from .results import EvalRecord


def answer_measures(
    response: ProviderResponse, configuration: Configuration | None, model: str
) -> dict[str, Any]:
    """The record's fields of what ``response`` cost: ``cost``, ``cost_source``, the tokens and
    ``finish_reason``; ``configuration`` (None: the implicit HTTP one) and ``model`` price it."""
    cost, cost_source = estimated_cost(response, configuration, model)
    return {
        "cost": cost,
        "cost_source": cost_source,
        "input_tokens": response.input_tokens,
        "output_tokens": response.output_tokens,
        "cached_input_tokens": response.cached_input_tokens,
        "cache_write_tokens": response.cache_write_tokens,
        "finish_reason": response.finish_reason,
    }


def spent_measures(exc: ProviderError, configuration: Configuration | None, model: str) -> dict[str, Any]:
    """What the answer that came with ``exc`` cost (see :func:`answer_measures`); empty when none
    came (the request failed, so nothing is known to be spent)."""
    return {} if exc.spent is None else answer_measures(exc.spent, configuration, model)


def spent_now(record: EvalRecord) -> float | None:
    """What ``record``'s answers cost in this run, for ``--vibe-max-cost``: an answer from the
    response cache cost nothing now, so a conversation counts its turns that were not cached."""
    if record.turns:
        return sum(turn.cost or 0.0 for turn in record.turns if not turn.cached)
    return None if record.cached else record.cost
