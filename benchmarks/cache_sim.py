"""A whole game's input, cached input and cost, with and without prompt caching, against the cache simulator.

The LLM player (the ``claude-sonnet`` preset, reasoning ``none``, Anthropic-style
breakpoints) plays Max-damage on the pinned local server; the local OpenAI-compatible
server simulates Anthropic's cache (a hit only for a repeated prefix behind a
breakpoint) and reports usage as OpenRouter does. The same seeded game is played with
breakpoints, without them, and against an automatic prefix cache (OpenAI-style). Prices
are the preset's (unchecked list prices). Not a test: no asserts.

    .venv/bin/python benchmarks/cache_sim.py [--turn-limit 40] [--seed cache]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pokebench import paths  # noqa: E402
from pokebench.llm.fake_server import LocalOpenAI, hashed_policy  # noqa: E402
from pokebench.llm.usage import Prices, cost_usd, without_cache, Usage  # noqa: E402
from pokebench.play.arena import Arena, GameResult  # noqa: E402
from pokebench.play.schedule import build_schedule  # noqa: E402
from pokebench.players.llm import LLMPlayer  # noqa: E402
from pokebench.players.max_damage import MaxDamageBot  # noqa: E402
from pokebench.showdown.server import LocalShowdown  # noqa: E402


def play_one(showdown: LocalShowdown, model: dict[str, Any], seed: str, turn_limit: int) -> GameResult:
    spec = next(s for s in build_schedule("cache-sim", seed, 1, [("llm", "bot")]) if s.p1 == "llm")

    def factory(**kwargs: Any) -> LLMPlayer:
        return LLMPlayer(model=model, name="llm", **kwargs)

    async def main() -> Any:
        arena = Arena(showdown, {"llm": factory, "bot": MaxDamageBot}, "gen9randombattle", turn_limit, 1)
        return [o async for o in arena.play([spec])][0]

    outcome = asyncio.run(main())
    if not isinstance(outcome, GameResult):
        raise SystemExit(f"the game failed: {outcome}")
    return outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--turn-limit", type=int, default=40)
    parser.add_argument("--seed", default="cache")
    args = parser.parse_args()
    raw = OmegaConf.to_container(OmegaConf.load(paths.conf_dir() / "model" / "claude-sonnet.yaml"), resolve=True)
    prices = Prices(**{k: raw["prices"][k] for k in ("input", "cached_input", "output", "cache_write")})
    os.environ["POKEBENCH_CACHE_SIM_KEY"] = "local"
    rows = []
    with LocalShowdown(sim_processes=1) as showdown:
        for label, cache, breakpoints in (("Anthropic-style, breakpoints", "breakpoints", True),
                                          ("Anthropic-style, no breakpoints", "breakpoints", False),
                                          ("automatic prefix cache (OpenAI-style)", "prefix", False)):
            with LocalOpenAI(policy=hashed_policy, cache=cache, usage_shape="openrouter",
                             prices={**raw["prices"]}) as api:
                model = {**raw, "base_url": api.base_url, "api_key_env": "POKEBENCH_CACHE_SIM_KEY",
                         "reasoning": "none", "cache_breakpoints": breakpoints}
                result = play_one(showdown, model, args.seed, args.turn_limit)
            log = result.decisions
            total = sum(d["input_tokens"] for d in log)
            cached = sum(d["cached_input_tokens"] or 0 for d in log)
            written = sum(d["cache_write_tokens"] or 0 for d in log)
            cost = sum(d["cost_usd"] for d in log)
            uncached = sum(cost_usd(without_cache(Usage(d["input_tokens"], 0, d["output_tokens"])), prices) for d in log)
            rows.append((label, len(log), result.record["turns"], total, cached, written, cost, uncached,
                         sum(d["provider_cost_usd"] or 0 for d in log)))
    print(f"One game (seed {args.seed!r}, turn limit {args.turn_limit}), claude-sonnet preset prices "
          f"(input ${prices.input}, cache read ${prices.cached_input}, cache write ${prices.cache_write_price}, "
          f"output ${prices.output} per million; unchecked):")
    print(f"{'cache':<40} {'answers':>7} {'turns':>5} {'input':>9} {'cached':>9} {'share':>6} {'written':>8} "
          f"{'cost':>9} {'no-cache':>9} {'provider':>9}")
    for label, answers, turns, total, cached, written, cost, uncached, provider in rows:
        print(f"{label:<40} {answers:>7} {turns:>5} {total:>9,} {cached:>9,} {cached / total:>6.0%} {written:>8,} "
              f"${cost:>8.4f} ${uncached:>8.4f} ${provider:>8.4f}")


if __name__ == "__main__":
    main()
