"""The luck of a run's finished games, measured by the run itself (``sequential.interval: adjusted``, ``luck: true``).

:func:`run_luck` gives luck.csv's rows of some of the run's stored games. A game whose luck is not yet in
the run's luck cache (``runs/NAME/luck.jsonl``, keyed by the game's uid, the engine version and
:func:`~pokebench.analysis.luck_rows.luck_settings`, as ``pokebench analyse`` keys it) is replayed and
measured by the analysis's own code (``pokebench.analysis.analyse``'s luck-only work: the same entries) and
appended there (a shard of the run, ``shard=I/N``, appends to its own ``luck.shard-I-of-N.jsonl``, read with
the run's as one cache); the rows are made as the publish makes them (:func:`~pokebench.analysis.luck_rows.luck_rows`).
So a later ``pokebench analyse NAME`` or publish measures none of these games again, and a restarted run
measures only the games it had not measured.

Where it runs: in the run's process, not analyse's process pool (measured on 24 games: 25 s with one pool
worker, a spawned process that imports the engine and the analysis afresh, against 2.8 s wall and 3.3 s of
CPU here; the replay itself is a simulator process either way). A sequential run measures between its steps, when no game is in flight, in a thread
(:func:`asyncio.to_thread`, :func:`pokebench.play.sequential.run_sequential`), so the arena's asyncio loop
stays free for the connections it keeps; the end of a run measures after the last game. Measured on
``bots-smoke`` games: 0.14 s of CPU per game at the end of a run, 0.26 s in a sequential run of 2-game
steps, each step's replay a simulator process of its own (docs/method.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

import pandas as pd

from pokebench.analysis.analyse import StoredGame, luck_entries, recorded_policies
from pokebench.analysis.cache import append_entries, game_key, luck_path, read_entries
from pokebench.analysis.luck_rows import luck_rows, luck_settings
from pokebench.analysis.settings import engine_version
from pokebench.engine.errors import hold_panic_output
from pokebench.results.loading import SHARD_FILE, game_uid
from pokebench.results.run_stores import RunStores

__all__ = ["run_luck"]


def shard_of(store: Path | None) -> tuple[int, int] | None:
    """(I, N) of a shard's store (``shard-I-of-N.sqlite``); None for the whole run's."""
    found = SHARD_FILE.search(store.name) if store is not None else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def run_luck(stores: RunStores, games: pd.DataFrame) -> pd.DataFrame:
    """luck.csv's rows (uid, run, game_id, luck_p1, adjusted_p1, error...) of `games` (rows of the stores'
    games, :meth:`RunStores.games`), measuring the luck of those not in the run's luck cache first. Only those
    games' records are read (a sequential run asks at every step for all its games so far)."""
    entries = {(e["run"], e["game_id"]): e for e in read_entries(luck_path(stores.run_dir), engine_version(),
                                                                  luck_settings(), key=game_key)}
    rows = cast(list[dict[str, Any]], games.to_dict("records"))
    missing = [row for row in rows if (str(row["run"]), str(row["game_id"])) not in entries]
    if missing:
        wanted = {str(row["game_id"]) for row in missing}
        records, sides = {}, {}
        for store in stores.stores():
            held = store.done_game_ids() & wanted
            records.update({gid: store.record(gid) for gid in held})
            sides.update({gid: entry for gid, entry in store.game_players().items() if gid in held})
        measure = [StoredGame(game_uid(row, records[gid]), str(row["run"]), gid, {"p1": row["p1"], "p2": row["p2"]},
                              list(records[gid].get("input_log") or []), recorded_policies(sides.get(gid)))
                   for row in missing for gid in [str(row["game_id"])]]
        hold_panic_output()  # no game in flight (docstring): an engine panic is its turn's error, not a dump
        measured = luck_entries(measure)
        # a shard of the run appends to its own file (never one file from several processes)
        append_entries(luck_path(stores.run_dir, shard_of(stores.own_path)), measured)
        entries.update({(e["run"], e["game_id"]): e for e in measured})
    keys = [(str(row["run"]), str(row["game_id"])) for row in rows]
    known = [key in entries for key in keys]
    framed = games[known].assign(uid=[str(entries[key]["uid"]) for key in keys if key in entries])
    return luck_rows([entries[key] for key in keys if key in entries], framed)[0]
