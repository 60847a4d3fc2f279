"""Cost from token counts when the provider does not report it.

A configuration's own ``pricing`` wins; otherwise the shipped table below is used for the model
ids it knows. The table is an **estimate**: list prices per million tokens as published by the
model vendors, compiled on :data:`PRICES_AS_OF`; prices change, so set ``pricing`` on a
configuration when the figure matters. With neither, the cost stays unknown (``null``), never 0.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Literal

from .models import Pricing

if TYPE_CHECKING:
    from .models import Configuration
    from .providers.base import ProviderResponse

PRICES_AS_OF = "2026-11-22"

# (USD per million input tokens, per million output tokens), by OpenRouter model id.
_TABLE: dict[str, tuple[float, float]] = {
    "anthropic/claude-3.5-sonnet": (3.0, 15.0),
    "anthropic/claude-3.5-haiku": (0.8, 4.0),
    "anthropic/claude-3-opus": (15.0, 75.0),
    "anthropic/claude-3-haiku": (0.25, 1.25),
    "openai/gpt-4o": (2.5, 10.0),
    "openai/gpt-4o-mini": (0.15, 0.6),
    "openai/gpt-4-turbo": (10.0, 30.0),
    "openai/gpt-3.5-turbo": (0.5, 1.5),
    "google/gemini-1.5-pro": (1.25, 5.0),
    "google/gemini-1.5-flash": (0.075, 0.3),
    "meta-llama/llama-3.1-70b-instruct": (0.4, 0.4),
    "meta-llama/llama-3.1-8b-instruct": (0.05, 0.05),
    "mistralai/mistral-large": (2.0, 6.0),
}


@functools.cache
def _default_price(model: str) -> Pricing:
    """The table's prices for ``model`` as a :class:`Pricing`, made when first asked for: building
    the model's validator costs more than a run that never needs the table (no HTTP configuration)."""
    inp, out = _TABLE[model]
    return Pricing(input_per_mtok=inp, output_per_mtok=out)


CostSource = Literal["reported", "pricing", "default_pricing"]


def price_for(own: Pricing | None, model: str | None) -> tuple[Pricing | None, CostSource | None]:
    """The prices to apply: the configuration's own, else the table's for ``model``, else none."""
    if own is not None:
        return own, "pricing"
    if model and model in _TABLE:
        return _default_price(model), "default_pricing"
    return None, None


# Anthropic's prompt-cache prices, as multiples of the input rate: reads, and writes to its
# 5-minute cache. Only Anthropic's models report cache writes, so an answer that reports them
# (even 0) is priced by these where the configuration's pricing sets no rate of its own.
ANTHROPIC_CACHE_READ = 0.1
ANTHROPIC_CACHE_WRITE = 1.25


def cost_of(
    input_tokens: int | None,
    output_tokens: int | None,
    pricing: Pricing,
    cached_input_tokens: int | None = None,
    cache_write_tokens: int | None = None,
) -> float | None:
    """USD for the tokens; None when either count is unknown (a partial cost would look exact).

    Of ``input_tokens``, the cached ones (cache reads) are charged at ``cached_input_per_mtok`` and
    the cache writes at ``cache_write_per_mtok``. Unset, writes cost Anthropic's 1.25 × the input
    rate, and reads 0.1 × where writes are reported (Anthropic's accounting), else the input rate."""
    if input_tokens is None or output_tokens is None:
        return None
    rate = pricing.input_per_mtok
    anthropic = cache_write_tokens is not None
    read_rate = pricing.cached_input_per_mtok
    if read_rate is None:
        read_rate = rate * ANTHROPIC_CACHE_READ if anthropic else rate
    write_rate = pricing.cache_write_per_mtok
    if write_rate is None:
        write_rate = rate * ANTHROPIC_CACHE_WRITE
    read = min(cached_input_tokens or 0, input_tokens)
    written = min(cache_write_tokens or 0, input_tokens - read)
    input_cost = (input_tokens - read - written) * rate + read * read_rate + written * write_rate
    return (input_cost + output_tokens * pricing.output_per_mtok) / 1_000_000


def estimated_cost(
    response: ProviderResponse, configuration: Configuration | None, suite_model: str
) -> tuple[float | None, CostSource | None]:
    """The reported cost, else one from prices: the configuration's own ``pricing``, or for HTTP
    configurations (whose model is known to be the one that answered) the shipped table."""
    if response.cost is not None:
        return response.cost, "reported"
    http = configuration is None or configuration.kind == "http"
    model = (configuration.model if configuration else None) or suite_model
    prices, source = price_for(configuration.pricing if configuration else None, model if http else None)
    if prices is None:
        return None, None
    cost = cost_of(
        response.input_tokens,
        response.output_tokens,
        prices,
        response.cached_input_tokens,
        response.cache_write_tokens,
    )
    return (cost, source) if cost is not None else (None, None)
