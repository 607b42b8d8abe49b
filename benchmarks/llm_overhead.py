"""The LLM player's own overhead, and games per hour with many games in flight.

The LLM player plays Max-damage on the pinned local server, answered by the local
OpenAI-compatible server after a fixed delay (0.2 s by default, a stand-in for a
model). For each decision it measures the harness's own time: the wall time inside
``choose_move`` minus the time spent waiting for the API (``ChatClient.complete``),
that is rendering the battle text and the message, reading the answer and the
bookkeeping. It does this at 1, 8 and 32 games in flight and prints the figures and
ratios. Not a test: no asserts.

    .venv/bin/python benchmarks/llm_overhead.py [--delay 0.2] [--games 2 8 32]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pokebench.players.llm import LLMPlayer  # noqa: E402
from pokebench.players.max_damage import MaxDamageBot  # noqa: E402
from pokebench.play.arena import Arena, GameResult  # noqa: E402
from pokebench.llm.client import ChatClient, Completion  # noqa: E402
from pokebench.llm.fake_server import LocalOpenAI, Reply, hashed_policy  # noqa: E402
from pokebench.play.schedule import build_schedule  # noqa: E402
from pokebench.showdown.server import LocalShowdown  # noqa: E402

SAMPLES: list[tuple[float, float]] = []  # (wall time in choose_move, of which waiting for the API)


class TimedClient(ChatClient):
    api_time = 0.0

    async def complete(self, messages: Any) -> Completion:
        start = time.perf_counter()
        try:
            return await super().complete(messages)
        finally:
            self.api_time += time.perf_counter() - start


class TimedLLMPlayer(LLMPlayer):
    async def _decide(self, battle: Any) -> Any:
        if self._client is None:
            self._client = TimedClient(self.model_config)
        client = self._client
        assert isinstance(client, TimedClient)
        start, api_before = time.perf_counter(), client.api_time
        try:
            return await super()._decide(battle)
        finally:
            SAMPLES.append((time.perf_counter() - start, client.api_time - api_before))


def model(base_url: str) -> dict[str, Any]:
    return {"name": "bench", "model": "local-bench", "base_url": base_url, "api_key_env": "POKEBENCH_API_KEY",
            "api_key_required": False, "prices": {"input": 0, "cached_input": 0, "output": 0}, "timeout": 60}


def play(server: LocalShowdown, base_url: str, games: int, in_flight: int) -> tuple[float, int]:
    pairs = (games + 1) // 2
    specs = build_schedule("llm-overhead", f"overhead-{in_flight}", pairs, [("llm", "max-damage")])[:games]
    factories = {"llm": lambda **kw: TimedLLMPlayer(model=model(base_url), name="llm", **kw), "max-damage": MaxDamageBot}

    async def main() -> int:
        arena = Arena(server, factories, "gen9randombattle", 300, in_flight)
        return len([o async for o in arena.play(specs) if isinstance(o, GameResult)])

    start = time.perf_counter()
    done = asyncio.run(main())
    return time.perf_counter() - start, done


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the local API waits before each answer")
    parser.add_argument("--in-flight", type=int, nargs="+", default=[1, 8, 32], help="games in flight to measure")
    parser.add_argument("--games", type=int, nargs="+", default=None,
                        help="games to play at each level (default: 2 at 1 in flight, else as many as in flight)")
    parser.add_argument("--sim-processes", type=int, default=2)
    args = parser.parse_args()
    games = args.games or [2 if n == 1 else n for n in args.in_flight]

    def policy(request: Any) -> Reply:
        return Reply(text=hashed_policy(request), delay=args.delay)

    rows = []
    with LocalShowdown(sim_processes=args.sim_processes) as server, LocalOpenAI(policy=policy) as api:
        play(server, api.base_url, 1, 1)  # warm-up: Node data export, imports, connections
        for in_flight, n in zip(args.in_flight, games):
            SAMPLES.clear()
            start_cpu = time.process_time()
            wall, done = play(server, api.base_url, n, in_flight)
            cpu = time.process_time() - start_cpu
            own = [total - api_wait for total, api_wait in SAMPLES]
            api_waits = [api_wait for _, api_wait in SAMPLES]
            rows.append({"in_flight": in_flight, "games": done, "wall_s": wall, "decisions": len(SAMPLES),
                         "games_per_hour": 3600 * done / wall, "decisions_per_s": len(SAMPLES) / wall,
                         "own_ms_median": 1000 * statistics.median(own), "own_ms_mean": 1000 * statistics.mean(own),
                         "own_ms_p90": 1000 * percentile(own, 0.9), "api_s_mean": statistics.mean(api_waits),
                         "cpu_ms_per_decision": 1000 * cpu / len(SAMPLES)})

    print(f"LLM player vs Max-damage, local API answering after {args.delay:g} s, "
          f"{args.sim_processes} simulator process(es)\n")
    print(f"{'in flight':>9} {'games':>5} {'wall s':>7} {'games/h':>8} {'dec/s':>6} {'own ms med':>10} "
          f"{'mean':>6} {'p90':>6} {'API s':>6} {'CPU ms/dec':>10}")
    for r in rows:
        print(f"{r['in_flight']:>9} {r['games']:>5} {r['wall_s']:>7.1f} {r['games_per_hour']:>8.0f} "
              f"{r['decisions_per_s']:>6.1f} {r['own_ms_median']:>10.2f} {r['own_ms_mean']:>6.2f} "
              f"{r['own_ms_p90']:>6.2f} {r['api_s_mean']:>6.3f} {r['cpu_ms_per_decision']:>10.2f}")
    base = rows[0]
    print("\nRatios")
    for r in rows:
        print(f"  {r['in_flight']:>2} in flight: {r['games_per_hour'] / base['games_per_hour']:5.1f}x the games/hour "
              f"of {base['in_flight']} in flight; the harness's own time is "
              f"{100 * r['own_ms_mean'] / 1000 / r['api_s_mean']:.1f}% of the API wait")
    print("\nown ms: wall time inside choose_move minus the wait for the API (rendering, parsing, bookkeeping;\n"
          "with many games in flight it includes waiting for the shared event loop). CPU ms/dec: CPU time of\n"
          "this process (players, arena, local API server) per decision.")


if __name__ == "__main__":
    main()
