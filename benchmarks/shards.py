"""When sharding pays on one machine: the same bot run as 1, 2 and 4 shards in parallel, and where the time goes.

    .venv/bin/pip install hydra-joblib-launcher
    .venv/bin/python benchmarks/shards.py [--pairs 4] [--shards 1 2 4] [--concurrency 2 4]

Each measurement is the README's command in a fresh folder: one run (1 shard), or
``-m shard=0/N,... hydra/launcher=joblib`` (N shards at once, each with its own Showdown server
and ``server.sim_processes`` simulators), with ``publish=false``, then one ``pokebench.cli.publish``.
The model: a shard pays a fixed start (Python, the server, its simulators: ``start s``, measured
alone) and its games share the machine's CPUs; sharding pays when the games' CPU time, not the
starts, fills the wall time and there are CPUs that one run leaves idle. Printed per row: wall
seconds (play and publish), games per second, CPU seconds per game of the whole process tree,
and the speed-up over one shard at the same concurrency.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pokebench.showdown.server import LocalShowdown
from pokebench.util import usable_cpus

REPO = Path(__file__).resolve().parents[1]


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(shards: int, pairs: int, concurrency: int) -> tuple[float, float, float]:
    """(play seconds, publish seconds, CPU seconds of every process) of one bots-smoke run as `shards` shards."""
    args = ["+run=bots-smoke", f"pairs={pairs}", f"concurrency={concurrency}", "name=bench", "publish=false"]
    if shards > 1:
        args = ["-m", *args, "shard=" + ",".join(f"{i}/{shards}" for i in range(shards)), "hydra/launcher=joblib",
                f"hydra.launcher.n_jobs={shards}"]
    with tempfile.TemporaryDirectory() as work:
        cpu, start = _children_cpu(), time.monotonic()
        subprocess.run([sys.executable, "-m", "pokebench", *args], cwd=work, check=True, capture_output=True)
        played = time.monotonic()
        subprocess.run([sys.executable, "-m", "pokebench.cli.publish", "bench"], cwd=work, check=True,
                       capture_output=True)
        return played - start, time.monotonic() - played, _children_cpu() - cpu


def server_start_seconds() -> float:
    start = time.monotonic()
    with LocalShowdown(sim_processes=1):
        return time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--shards", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[2, 4])
    args = parser.parse_args()
    games = args.pairs * 2 * 3  # bots-smoke: 3 matchups
    print(f"cpus this process may use: {usable_cpus()}; games per run: {games} (bots-smoke, pairs={args.pairs}); "
          f"start s (one server, alone): {server_start_seconds():.1f}")
    print(f"{'shards':>6} {'concurrency':>11} {'play s':>7} {'publish s':>9} {'games/s':>7} {'cpu s/game':>10} "
          f"{'speed-up':>8}")
    for concurrency in args.concurrency:
        base = None
        for shards in args.shards:
            play, publish, cpu = measure(shards, args.pairs, concurrency)
            wall = play + publish
            base = base or wall
            print(f"{shards:>6} {concurrency:>11} {play:>7.1f} {publish:>9.1f} {games / wall:>7.2f} "
                  f"{cpu / games:>10.2f} {base / wall:>8.2f}", flush=True)


if __name__ == "__main__":
    main()
