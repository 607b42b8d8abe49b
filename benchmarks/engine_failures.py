"""How often poke-engine fails on the positions the search bot builds, before and after the sleep clamp.

    .venv/bin/python benchmarks/engine_failures.py [--pairs 6] [--opponent heuristic] [--iterations 500] [--save F]

The search bot (2 samples × `--play-iterations`) plays the heuristic or Max-damage bot, as in bots-calibration;
at every decision with more than one legal action both sides build the search bot's positions of
what they know. Each position is searched twice in the search bot's worker process (`--iterations`):
as the bridge builds it now, and *before*: with poke-env's own count of turns asleep, which the
bridge used to pass on unchanged (Sleep Talk counts twice a turn; at 4 poke-engine 0.0.48's search
panics with ``NonFinite``). Prints ``failed on N of M searches`` for both; `--save` writes each
state that failed before, one a line (``State.to_string()``).
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import random
from typing import Any

from poke_env.battle import Status

from pokebench.engine.errors import EngineError
from pokebench.engine.from_battle import positions_from_battle
from pokebench.engine.search import Budget, search_texts
from pokebench.engine.sets import SetTable
from pokebench.engine.state import MAX_SLEEP_TURNS, build_state
from pokebench.play.arena import Arena
from pokebench.play.schedule import build_schedule
from pokebench.players.heuristic import HeuristicBot
from pokebench.players.max_damage import MaxDamageBot
from pokebench.players.search import SearchBot, search_pool
from pokebench.showdown.server import LocalShowdown
from pokebench.util import usable_cpus

SETS = SetTable.load()
#: Per decision: (game, side and turn; the states now; the states with poke-env's sleep count).
RECORDED: list[tuple[str, list[str], list[str]]] = []
_SLEEP_FIELD = 20  # a Pokémon's fields in State.to_string(): ..., status (18), rest turns, sleep turns (20), ...


def _with_sleep_counts(text: str, counts: list[list[int]]) -> str:
    """`text` with each side's Pokémon asleep for poke-env's count (0: as built)."""
    sides = text.split("/")
    for s, side_counts in enumerate(counts):
        mons = sides[s].split("=")
        for m, count in enumerate(side_counts):
            fields = mons[m].split(",")
            if count > MAX_SLEEP_TURNS and fields[_SLEEP_FIELD - 2] == "SLEEP":
                fields[_SLEEP_FIELD] = str(count)
            mons[m] = ",".join(fields)
        sides[s] = "=".join(mons)
    return "/".join(sides)


def _counts(mons: Any) -> list[int]:
    return [m.status_counter if m.status == Status.SLP else 0 for m in list(mons.values())[:6]]


def record(battle: Any) -> list[str]:
    """The search bot's states of `battle` (seeded by game and turn), recorded both ways."""
    key = f"{battle.battle_tag}:{battle.player_role}:{battle.turn}"
    now = [build_state(p).to_string() for p in positions_from_battle(battle, SETS, random.Random(key), 2)]
    counts = [_counts(battle.team), _counts(battle.opponent_team)]
    RECORDED.append((key, now, [_with_sleep_counts(t, counts) for t in now]))
    return now


class RecordingSearchBot(SearchBot):
    def state_texts(self, battle: Any, samples: int) -> list[str]:
        return record(battle)


class Recording:
    def choose_move(self, battle: Any) -> Any:
        if len(battle.valid_orders) > 1:
            record(battle)
        return super().choose_move(battle)  # type: ignore[misc]


class RecordingHeuristic(Recording, HeuristicBot):
    pass


class RecordingMaxDamage(Recording, MaxDamageBot):
    pass


def play(pairs: int, iterations: int, opponent: str) -> None:
    specs = build_schedule("bench", f"engine-failures-{opponent}", pairs, [("search", opponent)])
    bots = {"search": functools.partial(RecordingSearchBot, iterations=iterations, samples=2, workers=1),
            "heuristic": RecordingHeuristic, "max-damage": RecordingMaxDamage}

    async def main(server: LocalShowdown) -> None:
        arena = Arena(server, bots, "gen9randombattle", 300, 2, matchup_order=[specs[0].matchup])
        async for _ in arena.play(specs):
            pass

    with LocalShowdown(sim_processes=usable_cpus()) as server:
        asyncio.run(main(server))


def failed(texts: list[str], budget: Budget) -> bool:
    try:
        search_pool(1).submit(search_texts, texts, budget).result()
        return False
    except EngineError:
        return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=6)
    parser.add_argument("--opponent", choices=["heuristic", "max-damage"], default="heuristic")
    parser.add_argument("--play-iterations", type=int, default=200)
    parser.add_argument("--iterations", type=int, default=500)
    parser.add_argument("--save", help="write each state that failed before here, one a line")
    args = parser.parse_args()
    play(args.pairs, args.play_iterations, args.opponent)
    budget = Budget(iterations=args.iterations)
    changed = [(key, now, before) for key, now, before in RECORDED if now != before]
    failing_before = [(key, before) for key, _, before in changed if failed(before, budget)]
    failed_now = sum(failed(now, budget) for _, now, _ in RECORDED)
    print(f"decisions: {len(RECORDED)}; with a Pokémon asleep past {MAX_SLEEP_TURNS} turns by poke-env's count: "
          f"{len(changed)}")
    print(f"before: the engine failed on {len(failing_before)} of {len(RECORDED)} searches")
    print(f"now: the engine failed on {failed_now} of {len(RECORDED)} searches")
    if args.save:
        with open(args.save, "w") as out:
            out.writelines(t + "\n" for _, before in failing_before for t in before
                           if failed([t], budget))


if __name__ == "__main__":
    main()
