"""Helpers the tests share: the reference bots, and playing games through the real arena."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Sequence

from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.games import GameSpec
from pokebench.players.heuristic import HeuristicBot
from pokebench.players.max_damage import MaxDamageBot
from pokebench.players.random_bot import RandomBot

REPO_DIR = Path(__file__).resolve().parents[2]
#: SHA-256 of the method's v3 system prompt, byte for byte.
SYSTEM_PROMPT_SHA256 = "b79b2c37eac63b5df4db2f58e646f4bcb80fa9179c15c3590a6ef96d14caf31c"
BOTS: dict[str, Any] = {"random": RandomBot, "max-damage": MaxDamageBot, "heuristic": HeuristicBot}


def play(server: Any, specs: Sequence[GameSpec], factories: dict[str, Any] | None = None, *,
         turn_limit: int = 300, concurrency: int = 4, **arena_options: Any) -> list[GameResult | HarnessError]:
    """Play `specs` on `server` through the real arena; outcomes in the order of `specs`."""

    async def main() -> list[GameResult | HarnessError]:
        arena = Arena(server, factories or BOTS, "gen9randombattle", turn_limit, concurrency,
                      matchup_order=sorted({s.matchup for s in specs}), **arena_options)
        return [outcome async for outcome in arena.play(specs)]

    outcomes = asyncio.run(main())
    order = {s.game_id: i for i, s in enumerate(specs)}
    return sorted(outcomes, key=lambda o: order[o.spec.game_id])


def results(outcomes: Sequence[GameResult | HarnessError]) -> list[GameResult]:
    errors = [o for o in outcomes if isinstance(o, HarnessError)]
    assert not errors, f"unexpected harness errors: {errors}"
    return list(outcomes)  # type: ignore[arg-type]
