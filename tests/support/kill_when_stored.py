"""Signal a run as soon as its store holds a game (an analysis as soon as its cache holds an entry): the cluster
tests' "mid-run" moment.

``python tests/support/kill_when_stored.py STORE REGEX SECONDS [--signal STOP] [--env NAME=VALUE]``
waits up to SECONDS for a process whose command line matches REGEX (and whose environment has
NAME=VALUE) and for a game in STORE (a run's SQLite store, or a ``.jsonl`` cache of ``pokebench analyse``:
a complete line), polling every 20 ms, then sends it SIGKILL (or the signal named) and prints its pid and
how many games (lines) the store held then. It exits 1 if the process ended first (a
shell loop that polled once a second let a fast shard finish its 6 games between two polls, in CI).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sqlite3
import sys
import time
from pathlib import Path

POLL = 0.02
#: This process's PID namespace: only processes of the same one are signalled (`matching_pid`).
PID_NAMESPACE = os.readlink("/proc/self/ns/pid")


def matching_pid(pattern: re.Pattern[str], env: str | None) -> int | None:
    """The pid of a process (not this one) of this PID namespace whose command line, its arguments joined by
    spaces, matches, with `env` ("NAME=VALUE") among its environment if given. Other namespaces are left alone:
    `.ci/run` runs the SLURM and Ray tests at once, the Ray one in a PID namespace of its own that the SLURM one
    sees into, and both analyse a run named ``split`` (the SLURM test once stopped the Ray test's
    ``ray job submit ... pokebench analyse split --shard 1/2``, which then waited for ever)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if os.readlink(proc / "ns" / "pid") != PID_NAMESPACE:
                continue
            cmdline = (proc / "cmdline").read_bytes().rstrip(b"\0").replace(b"\0", b" ").decode()
            if pattern.search(cmdline) and (env is None or env.encode() in (proc / "environ").read_bytes().split(b"\0")):
                return int(proc.name)
        except OSError:
            continue
    return None


def stored_games(store: Path) -> int:
    if store.suffix == ".jsonl":
        try:
            return store.read_bytes().count(b"\n")
        except FileNotFoundError:
            return 0
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            return db.execute("SELECT count(*) FROM games").fetchone()[0]
    except sqlite3.Error:
        return 0  # not created yet, or its tables not yet


def main(store: Path, pattern: re.Pattern[str], seconds: float, sig: signal.Signals, env: str | None) -> int:
    deadline = time.monotonic() + seconds
    seen = None
    while time.monotonic() < deadline:
        pid = matching_pid(pattern, env)
        if pid is None and seen is not None:
            print(f"the process ({seen}) ended before its store held a game it could be killed after", file=sys.stderr)
            return 1
        if pid is not None:
            seen = pid
            if stored_games(store) >= 1:
                os.kill(pid, sig)
                print(pid, stored_games(store))
                return 0
        time.sleep(POLL)
    print(f"no game in {store} from a process matching {pattern.pattern!r} within {seconds:g} s", file=sys.stderr)
    return 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("regex", type=re.compile)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--signal", default="KILL", type=lambda name: signal.Signals[f"SIG{name}"])
    parser.add_argument("--env", help="NAME=VALUE the process's environment must hold")
    args = parser.parse_args()
    sys.exit(main(args.store, args.regex, args.seconds, args.signal, args.env))
