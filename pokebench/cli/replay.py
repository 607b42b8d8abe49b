"""`pokebench-replay RUN GAME_ID [--side p1|p2|spectator]`: a recorded game's battle log, as one side saw it.

Reads every store of the run (the whole-run store and its shards' stores).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pokebench.paths import RUNS_DIR
from pokebench.results.store import RunStore, StoreError, run_stores
from pokebench.text.renderer import render_battle
from pokebench.text.templates import BattleTextError


def _find_record(stores: list[Path], game_id: str) -> tuple[dict | None, list[str]]:
    """The game's record from whichever store holds it, and every finished game id (for the message)."""
    ids: list[str] = []
    for path in stores:
        with RunStore.open_existing(path) as store:
            try:
                return store.record(game_id), ids
            except KeyError:
                ids += sorted(store.done_game_ids())
    return None, sorted(ids)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pokebench-replay",
        description="Print a recorded game's battle log in English as one side saw it (the words a model "
                    "reads in its prompt), from the run's stores in RUNS_DIR/RUN/.")
    parser.add_argument("run", metavar="RUN", help="the run's name (a folder of --runs-dir)")
    parser.add_argument("game_id", metavar="GAME_ID", help="the game's id (a row of the run's games.csv)")
    parser.add_argument("--side", choices=("p1", "p2", "spectator"), default="p1",
                        help="whose view: p1 or p2 (own Pokémon plain, own HP exact, the other side 'the "
                             "opposing'), or spectator (public lines only, worded from p1's side); default p1")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="the folder of the runs (default: runs)")
    options = parser.parse_args(argv)
    stores = run_stores(options.runs_dir / options.run)
    if not stores:
        runs = sorted({p.parent.name for p in options.runs_dir.glob("*/*.sqlite")})
        known = f"Runs in {options.runs_dir}: {', '.join(runs)}." if runs else f"There is no run in {options.runs_dir}."
        print(f"Unknown run {options.run!r}: there is no store in {options.runs_dir / options.run}. {known}",
              file=sys.stderr)
        return 2
    try:
        record, ids = _find_record(stores, options.game_id)
    except StoreError as err:  # not a store of ours, damaged, or of a newer PokéBench: the message says which
        print(f"error: {err}", file=sys.stderr)
        return 2
    if record is None:
        some = ", ".join(ids[:8]) + (f", ... ({len(ids)} games)" if len(ids) > 8 else "")
        print(f"Unknown game {options.game_id!r} in run {options.run!r}. "
              + (f"Finished games: {some}." if ids else "The run has no finished game yet."), file=sys.stderr)
        return 2
    try:
        text = render_battle(record.get("log") or [], None if options.side == "spectator" else options.side)
    except BattleTextError as err:
        print(err, file=sys.stderr)
        return 1
    try:
        print("\n".join(text), flush=True)
    except BrokenPipeError:  # `pokebench-replay ... | head` closed the pipe: that is not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit's flush
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
