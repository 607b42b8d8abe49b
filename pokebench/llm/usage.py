"""Token usage of one answer in every shape the presets meet, checked, and its cost at list prices.

Shapes read (all inside an OpenAI-style ``usage`` object):

- OpenAI, Gemini, vLLM, llama.cpp, Ollama: ``prompt_tokens`` (cached ones included),
  ``prompt_tokens_details.cached_tokens``, ``completion_tokens``,
  ``completion_tokens_details.reasoning_tokens``;
- OpenRouter: the same, plus ``prompt_tokens_details.cache_write_tokens`` and its own
  price of the answer, ``cost`` (kept as ``provider_cost_usd`` beside ours);
- Anthropic's names as gateways pass them on: ``cache_read_input_tokens`` and
  ``cache_creation_input_tokens``; with Anthropic's native ``input_tokens`` (which counts
  neither) instead of ``prompt_tokens``, the input is the sum of the three.

Counts that cannot be true (negative, not a whole number, NaN, infinite, larger than any
context, cached more than the input) make the usage *impossible*: the client retries the
answer, and if the usage stays impossible it is dropped (counted, never priced).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping

#: More tokens than any model's context or output holds: a count above it is not believed.
MAX_PLAUSIBLE_TOKENS = 20_000_000


@dataclass(frozen=True)
class Prices:
    """List prices in US dollars per million tokens; ``cache_write`` defaults to ``input``."""

    input: float
    cached_input: float
    output: float
    read_on: str | None = None
    cache_write: float | None = None

    @property
    def cache_write_price(self) -> float:
        return self.input if self.cache_write is None else self.cache_write

    def as_dict(self) -> dict[str, Any]:
        return {"input": self.input, "cached_input": self.cached_input, "cache_write": self.cache_write_price,
                "output": self.output, "read_on": self.read_on}


@dataclass(frozen=True)
class Usage:
    """Token counts of one answer as the API reported them; None where the API said nothing.

    ``input_tokens`` includes cached and cache-written tokens; ``output_tokens`` includes reasoning.
    """

    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None
    provider_cost_usd: float | None = None
    #: Set when the counts contradict the model's declared convention (e.g. reasoning > completion).
    flag: str | None = None

    @classmethod
    def from_api(cls, usage: Any, reasoning_in_completion: bool = True) -> "Usage":
        """Read `usage`; raises :class:`ImpossibleUsage` if a count cannot be true."""
        return read_usage(usage, reasoning_in_completion)


class ImpossibleUsage(ValueError):
    """The API's usage cannot be true; the message says which count and why."""


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)


def _count(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ImpossibleUsage(f"{name} is {value!r}, not a number")
    if not math.isfinite(value) or value < 0 or value != int(value) or value > MAX_PLAUSIBLE_TOKENS:
        raise ImpossibleUsage(f"{name} is {value!r}")
    return int(value)


def read_usage(usage: Any, reasoning_in_completion: bool = True) -> Usage:
    """The usage object of a response, checked (see the module docstring)."""
    if usage is None:
        return Usage()
    if not isinstance(usage, Mapping) and not hasattr(usage, "__dict__"):
        raise ImpossibleUsage(f"usage is {type(usage).__name__}, not an object")
    prompt_details, completion_details = _get(usage, "prompt_tokens_details"), _get(usage, "completion_tokens_details")
    prompt = _count(_get(usage, "prompt_tokens"), "prompt_tokens")
    completion = _count(_get(usage, "completion_tokens"), "completion_tokens")
    cached = _count(_get(prompt_details, "cached_tokens"), "cached_tokens")
    written = _count(_get(prompt_details, "cache_write_tokens"), "cache_write_tokens")
    reasoning = _count(_get(completion_details, "reasoning_tokens"), "reasoning_tokens")
    if reasoning is None:
        reasoning = _count(_get(usage, "reasoning_tokens"), "reasoning_tokens")
    read_a = _count(_get(usage, "cache_read_input_tokens"), "cache_read_input_tokens")
    write_a = _count(_get(usage, "cache_creation_input_tokens"), "cache_creation_input_tokens")
    cached = cached if cached is not None else read_a
    written = written if written is not None else write_a
    if prompt is None:  # Anthropic's native shape: input_tokens counts neither cache reads nor writes
        native = _count(_get(usage, "input_tokens"), "input_tokens")
        if native is not None:
            prompt = native + (read_a or 0) + (write_a or 0)
    if completion is None:
        completion = _count(_get(usage, "output_tokens"), "output_tokens")
    if prompt is not None and (cached or 0) + (written or 0) > prompt:
        raise ImpossibleUsage(f"cached ({cached}) and cache-written ({written}) tokens exceed the input ({prompt})")
    flag = None
    if reasoning is not None and completion is not None:
        if reasoning_in_completion and reasoning > completion:
            flag = (f"reasoning_tokens {reasoning} > completion_tokens {completion}: this provider seems to count "
                    "reasoning apart (set reasoning_in_completion: false)")
        elif not reasoning_in_completion:
            completion += reasoning
    cost = _get(usage, "cost")
    provider_cost = None
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        if not math.isfinite(cost) or cost < 0:
            raise ImpossibleUsage(f"cost is {cost!r}")
        provider_cost = float(cost)
    return Usage(prompt, cached, completion, reasoning, written, provider_cost, flag)


def without_cache(usage: Usage) -> Usage:
    """The same answer had nothing been cached (for what-if figures)."""
    return replace(usage, cached_input_tokens=0, cache_write_tokens=0)


def cost_usd(usage: Usage, prices: Prices | None) -> float | None:
    """The answer's cost at list prices; None when the prices are unknown or the input or output count is missing.

    Cached input is priced at the cache-read price, cache writes at the cache-write price, the rest of
    the input at the input price; a missing cached count prices all input at the input price.
    """
    if prices is None or usage.input_tokens is None or usage.output_tokens is None:
        return None
    cached = min(usage.cached_input_tokens or 0, usage.input_tokens)
    written = min(usage.cache_write_tokens or 0, usage.input_tokens - cached)
    fresh = usage.input_tokens - cached - written
    return (fresh * prices.input + cached * prices.cached_input + written * prices.cache_write_price
            + usage.output_tokens * prices.output) / 1_000_000
