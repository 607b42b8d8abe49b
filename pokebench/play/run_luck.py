"""The luck of a run's finished games, measured by the run itself (``sequential.interval: adjusted``, ``luck: true``).

:func:`run_luck` gives luck.csv's rows of some of the run's stored games. A game whose luck is not yet in
the run's luck cache (``runs/NAME/luck.jsonl``, keyed by the game's uid, the engine version and
:func:`~pokebench.analysis.luck_rows.luck_settings`, as ``pokebench analyse`` keys it) is replayed and
measured by the analysis's own code (``pokebench.analysis.analyse``'s luck-only work: the same entries) and
appended there (a shard of the run, ``shard=I/N``, appends to its own ``luck.shard-I-of-N.jsonl``, read with
the run's as one cache); the rows are read back as the publish reads them (:func:`~pokebench.analysis.luck_rows.read_luck`).
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

from pokebench.analysis.analyse import LuckGame, luck_entries, recorded_policies
from pokebench.analysis.cache import append_entries, game_key, luck_path, read_entries
from pokebench.analysis.luck_rows import luck_settings, read_luck
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
    games, :meth:`RunStores.games`), measuring the luck of those not in the run's luck cache first."""
    records, sides = {}, {}
    for store in stores.stores():
        held = store.done_game_ids()
        records.update({gid: store.record(gid) for gid in map(str, games["game_id"]) if gid in held})
        sides.update({gid: entry for gid, entry in store.game_players().items() if gid in held})
    rows = cast(list[dict[str, Any]], games.to_dict("records"))
    framed = games.assign(uid=[game_uid(row, records[str(row["game_id"])]) for row in rows])
    cached = {e["uid"] for e in read_entries(luck_path(stores.run_dir), engine_version(), luck_settings(), key=game_key)}
    missing = [LuckGame(str(g["uid"]), str(g["run"]), str(g["game_id"]), {"p1": g["p1"], "p2": g["p2"]},
                        list(records[str(g["game_id"])].get("input_log") or []),
                        recorded_policies(sides.get(str(g["game_id"]))))
               for g in framed.to_dict("records") if g["uid"] not in cached]
    if missing:  # a shard of the run appends to its own file (never one file from several processes)
        hold_panic_output()  # no game in flight (docstring): an engine panic is its turn's error, not a dump
        append_entries(luck_path(stores.run_dir, shard_of(stores.own_path)), luck_entries(missing))
    return read_luck([stores.run_dir], framed)[0]
