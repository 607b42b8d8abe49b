"""Every store of one run, each opened once for the run: this process's own (written) and its other shards' (read).

A run's games may sit in several stores (the whole run's, or one per shard, see ``shard=I/N``); the runner
asks "which games are done" before every retry round and epoch, and the spend and games at the start and
in the closing summary. :class:`RunStores` answers from connections it opens once: the own store when the
runner makes it, another shard's store the first time a listing of the folder finds it (a shard started
later on another node makes its store later), only read (:meth:`RunStore.of_another_shard`). A read here
is one statement, fully read, outside any transaction, so it sees what the other shards' processes
committed up to that moment and holds no read snapshot between reads (which would also keep their WAL
from being checkpointed).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
import pandas as pd

from pokebench.results.store import GAME_COLUMNS, RunStore, run_stores

__all__ = ["RunStores"]


class RunStores:
    """The stores of the run in `run_dir`; `own_path` is this process's store (the whole run's, or its shard's),
    read once :meth:`open_own` opened it (the runner opens it before any read when it exists). Without
    `own_path` every store is only read (a finished run's summary).

    Use it as a context manager: every store it opened is closed at the end. The stores were checked
    (:func:`~pokebench.results.store.check_store`) by the runner before it locked the run; they are opened
    here without a second check (a check beside a live connection would drop that connection's locks).
    """

    def __init__(self, run_dir: Path, own_path: Path | None = None) -> None:
        self.run_dir = Path(run_dir)
        self.own_path = own_path
        self._own: RunStore | None = None
        self._others: dict[Path, RunStore] = {}
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "RunStores":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stack.close()

    def open_own(self) -> RunStore:
        """This process's store, writable, made if it does not exist yet (once; the same store after)."""
        if self.own_path is None:
            raise RuntimeError("RunStores without own_path only reads")
        if self._own is None:
            self._own = self._stack.enter_context(RunStore(self.own_path, check=False))
        return self._own

    @property
    def own_is_open(self) -> bool:
        return self._own is not None

    @property
    def own(self) -> RunStore:
        """This process's store, once :meth:`open_own` opened it."""
        if self._own is None:
            raise RuntimeError("the run's own store is not open yet (RunStores.open_own)")
        return self._own

    def stores(self) -> list[RunStore]:
        """The run's stores now: the own store (once open) and every other store in the folder, the ones
        that appeared since the last call opened now. A store another process has only begun to make
        (no tables yet) holds no games: it is opened at a later call."""
        for path in run_stores(self.run_dir):
            if path == self.own_path or path in self._others:
                continue
            store = RunStore.of_another_shard(path)
            if store.version == 0:
                store.close()
                continue
            self._others[path] = self._stack.enter_context(store)
        return [*([self._own] if self._own is not None else []), *self._others.values()]

    def done_game_ids(self) -> set[str]:
        """The games that any store of the run holds: none is ever played twice."""
        return set().union(*(store.done_game_ids() for store in self.stores()))

    def spend_by_player(self) -> dict[str, dict[str, float]]:
        """Spend and tokens per player over every store of the run (:meth:`RunStore.spend_by_player`, summed)."""
        total: dict[str, dict[str, float]] = {}
        for store in self.stores():
            for player, row in store.spend_by_player().items():
                sums = total.setdefault(player, {})
                for key, value in row.items():
                    sums[key] = sums.get(key, 0) + value
        return total

    def table(self, name: str) -> pd.DataFrame:
        """One table ("games", "harness_errors", "decisions": a :class:`RunStore` reader) of every store."""
        frames = [frame for frame in (getattr(store, name)() for store in self.stores()) if not frame.empty]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def games(self) -> pd.DataFrame:
        """The finished games of every store of the run (the columns of ``games.csv``, also when there are none)."""
        games = self.table("games")
        return games if len(games.columns) else pd.DataFrame(columns=list(GAME_COLUMNS))
