"""Shared fixtures: one real pinned Showdown server for the test session, and helpers to play games on it."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Sequence

import pytest

from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.play.schedule import GameSpec
from pokebench.showdown.server import LocalShowdown
from pokebench.players.heuristic import HeuristicBot
from pokebench.players.max_damage import MaxDamageBot
from pokebench.players.random_bot import RandomBot

REPO_DIR = Path(__file__).resolve().parent.parent
BOTS: dict[str, Any] = {"random": RandomBot, "max-damage": MaxDamageBot, "heuristic": HeuristicBot}


@pytest.fixture(scope="session")
def showdown(tmp_path_factory: pytest.TempPathFactory):
    """The real pinned server, started by the code, shared by the whole session."""
    with LocalShowdown(sim_processes=2, log_path=tmp_path_factory.mktemp("showdown") / "showdown.log") as server:
        yield server


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
