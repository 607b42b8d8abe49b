"""Bot games per second through the whole harness, against poke-env's own loop and the raw simulator's ceiling.

    .venv/bin/python benchmarks/bots_throughput.py [--games 200] [--concurrency 8] [--profile N]

Harness: Random against Random (and Max-damage against Heuristic) through the arena:
fresh poke-env players per game, seed registration, the pinned server with one
simulator process per core, and the record of every game.
poke-env's loop: the same Random bot's choice (uniform over ``battle.valid_orders``) in two plain poke-env
players on the same server, ``battle_against`` with the same games in flight (no seeds, no records, no
watchdog): what poke-env alone does on this machine, the loop the harness must beat per turn.
Ceiling: the installed package's ``BattleStream`` with its ``RandomPlayerAI`` on both
sides, no server, one node process per core, same machine, same run.
The last line is ``ratio <harness / ceiling>`` (Random against Random on both sides).
``--profile N``: instead, N harness games of Random against Random under cProfile, both threads apart (the
arena's loop, and poke-env's loop where every message is parsed and every choice made); their top entries.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import logging
import random
import subprocess
import time
from typing import Callable

from poke_env import AccountConfiguration, ServerConfiguration
from poke_env.concurrency import POKE_LOOP
from poke_env.battle import AbstractBattle
from poke_env.player import Player
from poke_env.player.battle_order import BattleOrder

from pokebench.play.arena import Arena, GameResult
from pokebench.play.schedule import build_schedule
from pokebench.paths import showdown_package_dir
from pokebench.showdown.server import LocalShowdown
from pokebench.players.heuristic import HeuristicBot
from pokebench.players.max_damage import MaxDamageBot
from pokebench.players.random_bot import RandomBot
from pokebench.util import usable_cpus

CEILING_JS = r"""
const {BattleStream, getPlayerStreams} = require('./dist/sim/battle-stream');
const {RandomPlayerAI} = require('./dist/sim/tools/random-player-ai');
const games = parseInt(process.argv[1], 10);
(async () => {
  let turns = 0;
  for (let i = 0; i < games; i++) {
    let last = 0;
    const streams = getPlayerStreams(new BattleStream());
    const p1 = new RandomPlayerAI(streams.p1, {seed: [i, 1, 2, 3]});
    const p2 = new RandomPlayerAI(streams.p2, {seed: [i, 4, 5, 6]});
    void p1.start(); void p2.start();
    const seed = 'sodium,' + (i.toString(16).padStart(32, '0'));
    void streams.omniscient.write(`>start {"formatid":"gen9randombattle","seed":"${seed}"}\n>player p1 {"name":"A"}\n>player p2 {"name":"B"}`);
    for await (const chunk of streams.omniscient) {
      const m = chunk.match(/\|turn\|(\d+)/g);
      if (m) turns += parseInt(m[m.length - 1].slice(6)) - last, last = parseInt(m[m.length - 1].slice(6));
      if (/^\|(win\|.*|tie)$/m.test(chunk)) break;  // not "|tier|", which every battle starts with
    }
  }
  console.error(`turns ${turns}`);
})();
"""


def ceiling(games: int, processes: int) -> tuple[float, float]:
    """(games/s, turns per game) of the raw simulator, `processes` node processes at once."""
    per_process = max(1, games // processes)
    start = time.perf_counter()
    procs = [subprocess.Popen(["node", "-e", CEILING_JS, str(per_process)], cwd=showdown_package_dir(), stderr=subprocess.PIPE,
                              text=True) for _ in range(processes)]
    turns = sum(int(proc.communicate()[1].split()[-1]) for proc in procs)
    return per_process * processes / (time.perf_counter() - start), turns / (per_process * processes)


def harness(games: int, concurrency: int, matchup: tuple[str, str]) -> tuple[float, float]:
    """(games/s, turns per game) through the whole harness."""
    factories = {"random": RandomBot, "random2": RandomBot, "max-damage": MaxDamageBot, "heuristic": HeuristicBot}
    specs = build_schedule("bench", f"throughput-{matchup}", max(1, games // 2), [matchup])

    async def main(server: LocalShowdown) -> list[int]:
        arena = Arena(server, factories, "gen9randombattle", 300, concurrency, matchup_order=[specs[0].matchup])
        return [o.record["turns"] async for o in arena.play(specs) if isinstance(o, GameResult)]

    with LocalShowdown(sim_processes=usable_cpus()) as server:
        start = time.perf_counter()
        turns = asyncio.run(main(server))
        return len(turns) / (time.perf_counter() - start), sum(turns) / max(1, len(turns))


class LoopRandom(Player):
    """RandomBot's choice in a plain poke-env player (no PokéBench hooks)."""

    rng = random.Random(0)

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        orders = battle.valid_orders
        return self.rng.choice(orders) if orders else self.choose_default_move()


def poke_env_loop(games: int, concurrency: int) -> tuple[float, float]:
    """(games/s, turns per game) of poke-env's own ``battle_against`` with `concurrency` games in flight."""
    with LocalShowdown(sim_processes=usable_cpus()) as server:
        assert server.address is not None
        config = ServerConfiguration(server.address.websocket_url, "http://127.0.0.1:9/unused")
        a, b = (LoopRandom(account_configuration=AccountConfiguration(name, None), server_configuration=config,
                           battle_format="gen9randombattle", max_concurrent_battles=concurrency,
                           log_level=logging.CRITICAL) for name in ("loopa", "loopb"))

        start = time.perf_counter()  # battle_against waits for both logins on poke-env's own loop
        asyncio.run(a.battle_against(b, n_battles=games))
        elapsed = time.perf_counter() - start
        turns = [battle.turn for battle in a.battles.values() if battle.finished]
        return len(turns) / elapsed, sum(turns) / max(1, len(turns))


def on_poke_loop(call: Callable[[], object]) -> None:
    async def there() -> None:
        call()

    asyncio.run_coroutine_threadsafe(there(), POKE_LOOP).result()


def profile(games: int, concurrency: int) -> None:
    """Print the top entries (own time) of the arena's thread and of poke-env's loop over `games` harness games."""
    arena, poke = cProfile.Profile(), cProfile.Profile()
    on_poke_loop(poke.enable)  # a profiler counts the thread that enabled it
    arena.enable()
    rate, turns = harness(games, concurrency, ("random", "random2"))
    arena.disable()
    on_poke_loop(poke.disable)
    print(f"{rate * turns:.0f} turns/s under the profiler")
    for label, prof in (("the arena's loop (main thread)", arena), ("poke-env's loop", poke)):
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(20)
        text = out.getvalue()
        print(f"==== {label}\n{text[text.find('ncalls'):].rstrip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N harness games instead")
    args = parser.parse_args()
    if args.profile:
        return profile(args.profile, args.concurrency)
    cores = usable_cpus()
    print(f"cores: {cores}; games per measurement: {args.games}; harness games in flight: {args.concurrency}")
    rows = [
        ("ceiling, raw simulator, 1 process", *ceiling(args.games // 2, 1)),
        (f"ceiling, raw simulator, {cores} processes", *ceiling(args.games, cores)),
        ("harness, Max-damage vs Heuristic", *harness(args.games // 2, args.concurrency, ("max-damage", "heuristic"))),
        ("poke-env's loop, Random vs Random", *poke_env_loop(args.games, args.concurrency)),
        ("harness, Random vs Random", *harness(args.games, args.concurrency, ("random", "random2"))),
    ]
    for label, rate, turns in rows:
        print(f"{label:42s} {rate:6.1f} games/s  {turns:5.1f} turns/game  {rate * turns:6.0f} turns/s")
    ceiling_rate, ceiling_turns = rows[1][1:]
    loop_rate, loop_turns = rows[3][1:]
    random_rate, random_turns = rows[4][1:]
    print(f"harness / poke-env's loop per turn {random_rate * random_turns / (loop_rate * loop_turns):.2f}")
    print(f"ratio per turn {random_rate * random_turns / (ceiling_rate * ceiling_turns):.2f}"
          " (poke-env's Random switches too, so its games are longer than RandomPlayerAI's)")
    print(f"ratio {random_rate / ceiling_rate:.2f}")


if __name__ == "__main__":
    main()
