"""The LLM player's own overhead, and games per hour with many games in flight.

The LLM player plays Max-damage on the pinned local server, answered by the local
OpenAI-compatible server after a fixed delay (0.2 s by default, a stand-in for a
model). For each decision it measures the harness's own time: the wall time inside
``choose_move`` minus the time spent waiting for the API (``ChatClient.complete``),
that is rendering the battle text and the message, reading the answer and the
bookkeeping. It does this at 1, 8 and 32 games in flight and prints the figures and
ratios. Not a test: no asserts.

    .venv/bin/python benchmarks/llm_overhead.py [--delay 0.2] [--games 2 8 32]

With ``--load`` it measures many games in flight against an endpoint that runs in a
process of its own and answers after ``--delay``..``--delay-max`` seconds: decisions per
second against the ideal (games in flight / mean latency), CPU per decision of the
harness, the server and the endpoint, memory per game in flight, and harness errors,
over a window after a warm-up (the games are then cancelled):

    .venv/bin/python benchmarks/llm_overhead.py --load --delay 2 --delay-max 10 --in-flight 8 32 64 128 256
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from pokebench.players.llm import LLMPlayer  # noqa: E402
from pokebench.players.max_damage import MaxDamageBot  # noqa: E402
from pokebench.play.arena import Arena, GameResult, HarnessError  # noqa: E402
from pokebench.llm.client import ChatClient, Completion  # noqa: E402
from pokebench.llm.fake_server import LocalOpenAI, Reply, hashed_policy  # noqa: E402
from pokebench.play.schedule import build_schedule  # noqa: E402
from pokebench.showdown.server import LocalShowdown  # noqa: E402
from support.processes import descendants  # noqa: E402  (the process-tree walk the tests use)

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
        return len([o async for o in arena.play(specs)])

    start = time.perf_counter()
    done = asyncio.run(main())
    return time.perf_counter() - start, done


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory of one process, in MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of one process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree(pid: int) -> list[int]:
    """`pid` and every live process below it."""
    return [pid, *descendants(pid)]


def measure_window(server: LocalShowdown, base_url: str, in_flight: int, warmup: float, window: float,
                   endpoint_pid: int) -> dict[str, float]:
    """Start `in_flight` games at once; after `warmup` s, count decisions, CPU and memory over `window` s."""
    specs = build_schedule("llm-load", f"load-{in_flight}", (in_flight + 1) // 2, [("llm", "max-damage")])[:in_flight]
    factories = {"llm": lambda **kw: TimedLLMPlayer(model=model(base_url), name="llm", **kw), "max-damage": MaxDamageBot}
    server_pids = tree(server.process.pid)
    rss_before, server_before = rss_mb(), sum(rss_mb(p) for p in server_pids)
    outcomes: list[Any] = []

    async def main() -> dict[str, float]:
        arena = Arena(server, factories, "gen9randombattle", 300, in_flight)

        async def consume() -> None:
            async for outcome in arena.play(specs):
                outcomes.append(outcome)

        task = asyncio.create_task(consume())
        await asyncio.sleep(warmup)
        n0, t0, own0, end0 = len(SAMPLES), time.perf_counter(), time.process_time(), cpu_s(endpoint_pid)
        srv0 = sum(cpu_s(p) for p in server_pids if Path(f"/proc/{p}").exists())
        await asyncio.sleep(window)
        n1, t1, own1, end1 = len(SAMPLES), time.perf_counter(), time.process_time(), cpu_s(endpoint_pid)
        srv1 = sum(cpu_s(p) for p in server_pids if Path(f"/proc/{p}").exists())
        rss_peak = rss_mb()
        server_peak = sum(rss_mb(p) for p in tree(server.process.pid))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        decisions = max(1, n1 - n0)
        return {"in_flight": in_flight, "decisions": n1 - n0, "dec_per_s": (n1 - n0) / (t1 - t0),
                "harness_cpu_ms": 1000 * (own1 - own0) / decisions, "server_cpu_ms": 1000 * (srv1 - srv0) / decisions,
                "endpoint_cpu_ms": 1000 * (end1 - end0) / decisions,
                "harness_cpu_share": (own1 - own0) / (t1 - t0),
                "mb_per_game": (rss_peak - rss_before) / in_flight,
                "server_mb_per_game": (server_peak - server_before) / in_flight,
                "harness_errors": sum(1 for o in outcomes if isinstance(o, HarnessError)),
                "finished": sum(1 for o in outcomes if isinstance(o, GameResult))}

    return asyncio.run(main())


def serve_endpoint(delay: float, delay_max: float) -> None:
    """The latency-simulating endpoint, in a process of its own (``--serve-endpoint``): prints its URL."""
    def policy(request: Any) -> Reply:
        digest = int(hashlib.sha256(request.last_user_message.encode()).hexdigest()[:8], 16)
        return Reply(text=hashed_policy(request), delay=delay + (delay_max - delay) * digest / 0xFFFFFFFF)

    with LocalOpenAI(policy=policy) as api:
        api.requests = _Forgetful()  # type: ignore[assignment]  (hours of requests would fill the memory)
        print(api.base_url, flush=True)
        while True:
            time.sleep(3600)


class _Forgetful(list):  # type: ignore[type-arg]
    def append(self, item: Any) -> None:
        pass


def start_endpoint(delay: float, delay_max: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([sys.executable, __file__, "--serve-endpoint", str(delay), str(delay_max)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load_main(args: argparse.Namespace) -> None:
    """--load: games in flight against an endpoint in its own process that answers after delay..delay_max s."""
    endpoint, base_url = start_endpoint(args.delay, args.delay_max)
    rows = []
    try:
        with LocalShowdown(sim_processes=args.sim_processes) as server:
            for in_flight in args.in_flight:
                SAMPLES.clear()
                rows.append(measure_window(server, base_url, in_flight, args.warmup, args.window, endpoint.pid))
                print(rows[-1], flush=True)
    finally:
        endpoint.kill()
        endpoint.wait()
    print(f"\nLLM player vs Max-damage; the endpoint (its own process) answers after {args.delay:g}-{args.delay_max:g} s;"
          f" {args.sim_processes} simulator process(es); {os.cpu_count()} cores; window {args.window:g} s after "
          f"{args.warmup:g} s\n")
    print(f"{'in flight':>9} {'dec/s':>6} {'ideal':>6} {'of ideal':>8} {'harness CPU ms/dec':>18} {'server':>7} "
          f"{'endpoint':>8} {'harness core':>12} {'MB/game':>8} {'server MB/game':>14} {'errors':>6}")
    mean_latency = (args.delay + args.delay_max) / 2
    for r in rows:
        ideal = r["in_flight"] / mean_latency  # one decision per game per answer, if nothing else took time
        print(f"{r['in_flight']:>9} {r['dec_per_s']:>6.1f} {ideal:>6.1f} {100 * r['dec_per_s'] / ideal:>7.0f}% "
              f"{r['harness_cpu_ms']:>18.1f} {r['server_cpu_ms']:>7.1f} {r['endpoint_cpu_ms']:>8.1f} "
              f"{100 * r['harness_cpu_share']:>11.0f}% {r['mb_per_game']:>8.2f} {r['server_mb_per_game']:>14.2f} "
              f"{r['harness_errors']:>6}")
    print("\nideal: games in flight / mean latency (each game waits one answer per decision). harness core: the\n"
          "share of one core the harness process used (100%: its event loops are the limit). MB/game: growth of the\n"
          "harness's resident memory per game in flight (both players of a game); server: Showdown's.")


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-endpoint":
        serve_endpoint(float(sys.argv[2]), float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds the local API waits before each answer")
    parser.add_argument("--delay-max", type=float, default=None,
                        help="with --load: answers take between --delay and this many seconds (default: --delay)")
    parser.add_argument("--in-flight", type=int, nargs="+", default=None, help="games in flight to measure")
    parser.add_argument("--games", type=int, nargs="+", default=None,
                        help="games to play at each level (default: 2 at 1 in flight, else as many as in flight)")
    parser.add_argument("--sim-processes", type=int, default=2)
    parser.add_argument("--load", action="store_true",
                        help="measure a window of many games in flight against an endpoint in its own process")
    parser.add_argument("--warmup", type=float, default=30.0, help="with --load: seconds before the window")
    parser.add_argument("--window", type=float, default=60.0, help="with --load: seconds measured")
    args = parser.parse_args()
    if args.load:
        args.delay_max = args.delay if args.delay_max is None else args.delay_max
        args.in_flight = args.in_flight or [8, 32, 64, 128, 256]
        load_main(args)
        return
    args.in_flight = args.in_flight or [1, 8, 32]
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
