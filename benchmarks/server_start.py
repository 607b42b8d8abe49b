"""How long the pinned server takes to start, and its CPU, with the saved list of formats and without.

    .venv/bin/python benchmarks/server_start.py [--starts 5]

Each start is a :class:`LocalShowdown` (one simulator process) until the harness's first ping is answered
("ready": what a run, a test or a restart after a fault waits for), then the CPU seconds of the server and its
processes at that moment. "saved": the list of formats the install saved (what every server PokéBench starts
now sends, :mod:`pokebench.showdown.format_list`); "built": Showdown builds the list itself at the first
connection, as it did before. The two alternate, so that the machine's drift falls on both.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Literal

from bots_throughput import tree_cpu  # benchmarks/: the script's folder, on sys.path

from pokebench.showdown.server import LocalShowdown


def one_start(saved_formats: Path | Literal["installed"] | None) -> tuple[float, float]:
    """Seconds to ready, and the CPU seconds of the server's processes then."""
    start = time.perf_counter()
    with LocalShowdown(saved_formats=saved_formats) as server:
        ready = time.perf_counter() - start
        assert server.process is not None
        return ready, tree_cpu(server.process.pid)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--starts", type=int, default=5, help="starts of each kind (default 5)")
    args = parser.parse_args()
    kinds: dict[str, Path | Literal["installed"] | None] = {"saved": "installed", "built": None}
    measured: dict[str, list[tuple[float, float]]] = {kind: [] for kind in kinds}
    for _ in range(args.starts):
        for kind, saved_formats in kinds.items():
            measured[kind].append(one_start(saved_formats))
    print(f"{args.starts} starts of each kind, one simulator process; median [min, max]")
    for kind, rows in measured.items():
        ready, cpu = ([row[i] for row in rows] for i in (0, 1))
        print(f"  {kind:5}  ready in {statistics.median(ready):4.2f} s [{min(ready):.2f}, {max(ready):.2f}]"
              f"   CPU {statistics.median(cpu):4.2f} s [{min(cpu):.2f}, {max(cpu):.2f}]")
    saved, built = (statistics.median(row[1] for row in measured[kind]) for kind in kinds)
    print(f"CPU per start, built / saved: {built / saved:.2f}")


if __name__ == "__main__":
    main()
