"""Bot games per second through the whole harness, against poke-env's own loop and the raw simulator's ceiling.

    .venv/bin/python benchmarks/bots_throughput.py [--games 200] [--concurrency 8] [--repeats K] [--profile N]

Harness: Random against Random (and Max-damage against Heuristic) through the arena:
fresh poke-env players per game (on websockets kept between games), seed registration, the pinned server with one
simulator process per core, and the record of every game.
poke-env's loop: the same Random bot's choice (uniform over ``battle.valid_orders``) in two plain poke-env
players on the same server, ``battle_against`` with the same games in flight (no seeds, no records, no
watchdog), reading requests with poke-env's own ``Pokemon.update_from_request`` (not the harness's fixed and
shortened one, :mod:`pokebench.player.poke_env_fixes`): what poke-env alone does on this machine, the loop the
harness must beat per turn. It is measured before any harness game, in the process as poke-env alone leaves it
(the arena's first game keeps the objects alive then out of the garbage collector's work,
:func:`pokebench.play.arena._settle_heap`).
Ceiling: the installed package's ``BattleStream`` with its ``RandomPlayerAI`` on both
sides, no server, one node process per core, same machine, same run.
The last line is ``ratio <harness / ceiling>`` (Random against Random on both sides).
``--repeats K`` (K > 1): K rounds of ceiling, poke-env's loop and harness one after the other, so that a shared
machine's changing speed falls on all three alike; the ratios per round, then their median and range. One round
alone can be 10 % off the next on a 2-core virtual machine. From the second round on, poke-env's loop runs in a
process the harness has played in (its heap frozen by the arena's first game), not as poke-env alone leaves it.
``--profile N``: instead, N games of Random against Random under cProfile, through poke-env's loop and then
through the harness, each with both threads apart (the main thread: the arena's loop, or the caller of
``battle_against``; and poke-env's loop, where every message is parsed and every choice made): their top entries,
poke-env's loop's busy time per turn and its socket sends per game.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import os
import pstats
import logging
import random
import resource
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from poke_env import AccountConfiguration, ServerConfiguration
from poke_env.concurrency import POKE_LOOP
from poke_env.battle import AbstractBattle
from poke_env.battle.pokemon import Pokemon
from poke_env.player import Player
from poke_env.player.battle_order import BattleOrder

from pokebench.play.arena import Arena, GameResult
from pokebench.player.poke_env_fixes import POKE_ENV_UPDATE_FROM_REQUEST
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


@dataclass
class Measured:
    """One measurement: games, turns and seconds, and the CPU seconds spent by this Python process, by its main
    thread alone (the arena's loop; idle while ``battle_against`` waits) and by node (the server and its
    simulators, or the ceiling's processes) meanwhile."""

    games: int
    turns: int
    seconds: float
    python_cpu: float
    node_cpu: float
    main_thread_cpu: float = 0.0

    def row(self, label: str) -> str:
        rate, per_turn = self.games / self.seconds, 1000 / max(1, self.turns)
        return (f"{label:42s} {rate:6.1f} games/s  {self.turns / max(1, self.games):5.1f} turns/game  "
                f"{self.turns / self.seconds:6.0f} turns/s  CPU ms/turn: Python {self.python_cpu * per_turn:4.2f} "
                f"(main thread {self.main_thread_cpu * per_turn:4.2f}), node {self.node_cpu * per_turn:4.2f}")

    @property
    def turns_per_second(self) -> float:
        return self.turns / self.seconds


def tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of a running process and its descendants, from /proc."""
    stats = {}
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            stats[int(entry.name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # ppid, utime + stime
    tree, ticks = {pid}, 0
    for _ in range(4):  # the server, its simulators and their children
        tree |= {child for child, (parent, _) in stats.items() if parent in tree}
    ticks = sum(stats[p][1] for p in tree if p in stats)
    return ticks / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def measured_on(server: LocalShowdown, out: list[Measured], turns: Callable[[], tuple[int, int]]) -> Iterator[None]:
    """Time the block, and the CPU of this process, of the calling thread and of `server`'s tree; append the
    Measured to `out`."""
    assert server.process is not None
    node, python, main = tree_cpu(server.process.pid), time.process_time(), time.thread_time()
    start = time.perf_counter()
    yield
    seconds = time.perf_counter() - start
    out.append(Measured(*turns(), seconds, time.process_time() - python, tree_cpu(server.process.pid) - node,
                        time.thread_time() - main))


def ceiling(games: int, processes: int) -> Measured:
    """The raw simulator, `processes` node processes at once."""
    per_process = max(1, games // processes)
    children, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    procs = [subprocess.Popen(["node", "-e", CEILING_JS, str(per_process)], cwd=showdown_package_dir(), stderr=subprocess.PIPE,
                              text=True) for _ in range(processes)]
    turns = sum(int(proc.communicate()[1].split()[-1]) for proc in procs)
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    node = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    return Measured(per_process * processes, turns, seconds, 0.0, node)


def harness(games: int, concurrency: int, matchup: tuple[str, str]) -> Measured:
    """Games through the whole harness."""
    factories = {"random": RandomBot, "random2": RandomBot, "max-damage": MaxDamageBot, "heuristic": HeuristicBot}
    specs = build_schedule("bench", f"throughput-{matchup}", max(1, games // 2), [matchup])

    async def main(server: LocalShowdown) -> list[int]:
        arena = Arena(server, factories, "gen9randombattle", 300, concurrency, matchup_order=[specs[0].matchup])
        return [o.record["turns"] async for o in arena.play(specs) if isinstance(o, GameResult)]

    out: list[Measured] = []
    turns: list[int] = []
    with LocalShowdown(sim_processes=usable_cpus()) as server:
        with measured_on(server, out, lambda: (len(turns), sum(turns))):
            turns = asyncio.run(main(server))
    return out[0]


class LoopRandom(Player):
    """RandomBot's choice in a plain poke-env player (no PokéBench hooks)."""

    rng = random.Random(0)

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        orders = battle.valid_orders
        return self.rng.choice(orders) if orders else self.choose_default_move()


def poke_env_loop(games: int, concurrency: int) -> Measured:
    """Games of poke-env's own ``battle_against`` with `concurrency` games in flight."""
    with LocalShowdown(sim_processes=usable_cpus()) as server:
        assert server.address is not None
        config = ServerConfiguration(server.address.websocket_url, "http://127.0.0.1:9/unused")
        a, b = (LoopRandom(account_configuration=AccountConfiguration(name, None), server_configuration=config,
                           battle_format="gen9randombattle", max_concurrent_battles=concurrency,
                           log_level=logging.CRITICAL) for name in ("loopa", "loopb"))

        def turns() -> tuple[int, int]:
            finished = [battle.turn for battle in a.battles.values() if battle.finished]
            return len(finished), sum(finished)

        out: list[Measured] = []
        harness_reading, Pokemon.update_from_request = Pokemon.update_from_request, POKE_ENV_UPDATE_FROM_REQUEST
        try:  # poke-env as shipped: its own reading of requests (the harness's fix and shortcut are the harness's)
            with measured_on(server, out, turns):  # battle_against waits for both logins on poke-env's own loop
                asyncio.run(a.battle_against(b, n_battles=games))
        finally:
            Pokemon.update_from_request = harness_reading  # type: ignore[method-assign]
        return out[0]


def on_poke_loop(call: Callable[[], object]) -> None:
    async def there() -> None:
        call()

    asyncio.run_coroutine_threadsafe(there(), POKE_LOOP).result()


def profile(games: int, concurrency: int) -> None:
    """Print, for `games` harness games of Random against Random and then as many of poke-env's own loop, the
    top entries (own time) of the main thread and of poke-env's loop, and poke-env's loop's busy time (all but
    waiting in ``epoll``) per turn and its socket sends per game."""
    runs: list[tuple[str, Callable[[], Measured]]] = [  # poke-env's loop first, as for the figures
        ("poke-env's own loop", lambda: poke_env_loop(games, concurrency)),
        ("harness", lambda: harness(games, concurrency, ("random", "random2"))),
    ]
    for name, run in runs:
        main_thread, poke = cProfile.Profile(), cProfile.Profile()
        on_poke_loop(poke.enable)  # a profiler counts the thread that enabled it
        main_thread.enable()
        done = run()
        main_thread.disable()
        on_poke_loop(poke.disable)
        print(f"######## {done.row(name + ' under the profiler')}")
        for label, prof in (("the main thread", main_thread), ("poke-env's loop", poke)):
            out = io.StringIO()
            stats = pstats.Stats(prof, stream=out)
            own = {func[2]: (entry[1], entry[2]) for func, entry in stats.stats.items()}  # type: ignore[attr-defined]
            busy = stats.total_tt - own.get("<method 'poll' of 'select.epoll' objects>", (0, 0.0))[1]  # type: ignore[attr-defined]
            sends = own.get("<method 'send' of '_socket.socket' objects>", (0, 0.0))[0]
            stats.sort_stats("tottime").print_stats(20)
            text = out.getvalue()
            print(f"==== {name}, {label}: busy {busy:.1f} s, {1000 * busy / done.turns:.2f} ms per turn; "
                  f"{sends / done.games:.1f} socket sends per game\n{text[text.find('ncalls'):].rstrip()}")


def ratios(games: int, concurrency: int) -> tuple[float, float]:
    """One round of the ceiling, poke-env's loop and the harness, Random against Random: the harness's turns per
    second over the loop's and over the ceiling's."""
    top = ceiling(games, usable_cpus())
    loop = poke_env_loop(games, concurrency)
    arena = harness(games, concurrency, ("random", "random2"))
    for label, measured in (("ceiling", top), ("poke-env's loop", loop), ("harness", arena)):
        print(measured.row(f"  {label}"), flush=True)
    return arena.turns_per_second / loop.turns_per_second, arena.turns_per_second / top.turns_per_second


def repeated(games: int, concurrency: int, repeats: int) -> None:
    """`repeats` rounds; each round's ratios, then their median and range."""
    print(f"cores: {usable_cpus()}; games per measurement: {games}; harness games in flight: {concurrency}; "
          f"{repeats} rounds of ceiling, poke-env's loop, harness")
    rounds = []
    for index in range(repeats):
        print(f"round {index + 1}")
        rounds.append(ratios(games, concurrency))
        print(f"  harness / poke-env's loop per turn {rounds[-1][0]:.2f}; harness / ceiling per turn {rounds[-1][1]:.2f}",
              flush=True)
    for label, values in (("harness / poke-env's loop per turn", [r[0] for r in rounds]),
                          ("harness / ceiling per turn", [r[1] for r in rounds])):
        print(f"{label}: median {statistics.median(values):.2f} [{min(values):.2f}, {max(values):.2f}] "
              f"over {repeats} rounds")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=1, metavar="K",
                        help="K > 1: K rounds, Random against Random only, and the ratios' median and range")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N harness games instead")
    args = parser.parse_args()
    if args.profile:
        return profile(args.profile, args.concurrency)
    if args.repeats > 1:
        return repeated(args.games, args.concurrency, args.repeats)
    cores = usable_cpus()
    print(f"cores: {cores}; games per measurement: {args.games}; harness games in flight: {args.concurrency}")
    ceiling_1, ceiling_all = ceiling(args.games // 2, 1), ceiling(args.games, cores)
    loop = poke_env_loop(args.games, args.concurrency)  # first: in the process as poke-env alone leaves it
    skilled = harness(args.games // 2, args.concurrency, ("max-damage", "heuristic"))
    arena = harness(args.games, args.concurrency, ("random", "random2"))
    print(ceiling_1.row("ceiling, raw simulator, 1 process"))
    print(ceiling_all.row(f"ceiling, raw simulator, {cores} processes"))
    print(skilled.row("harness, Max-damage vs Heuristic"))
    print(loop.row("poke-env's loop, Random vs Random"))
    print(arena.row("harness, Random vs Random"))
    print(f"harness / poke-env's loop per turn {arena.turns_per_second / loop.turns_per_second:.2f}")
    print(f"ratio per turn {arena.turns_per_second / ceiling_all.turns_per_second:.2f}"
          " (poke-env's Random switches too, so its games are longer than RandomPlayerAI's)")
    print(f"ratio {arena.games / arena.seconds / (ceiling_all.games / ceiling_all.seconds):.2f}")

if __name__ == "__main__":
    main()
