"""The embedded store of a run: one SQLite file (WAL) under ``runs/NAME/``.

A finished game is written in one transaction (its row, its compressed record and
any LLM decisions), keyed by its game id: a run killed at any moment and started
again plays only the games that are not in the store, and no game is counted
twice. Harness errors are kept, with their cause, in their own table and never
enter the results; the game is played again on the next start.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import stat
import zlib
from pathlib import Path
from urllib.parse import quote
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

import pandas as pd

from pokebench.player.decisions import DecisionRecord
from pokebench.util import utc_now

if TYPE_CHECKING:  # pragma: no cover
    from pokebench.games import GameSpec

GAME_COLUMNS = (
    "game_id", "run", "matchup", "pair", "game", "p1", "p2", "winner", "turns", "end_reason",
    "battle_seed", "p1_team_seed", "p2_team_seed", "showdown_version", "started_at", "ended_at",
)

#: ``PRAGMA application_id`` of a PokéBench store ("PKBN"): a SQLite file of another program is refused.
APPLICATION_ID = 0x504B424E

#: ``PRAGMA user_version`` of the store this code writes; :data:`MIGRATIONS` brings an older store here.
SCHEMA_VERSION = 1

#: MIGRATIONS[v] takes a store from user_version v to v + 1 (0: an empty file, or a store of PokéBench
#: before stores had a version, whose tables are exactly those of version 1).
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS games (
        game_id TEXT PRIMARY KEY, run TEXT NOT NULL, matchup TEXT NOT NULL, pair INTEGER NOT NULL,
        game INTEGER NOT NULL, p1 TEXT NOT NULL, p2 TEXT NOT NULL, winner TEXT NOT NULL
            CHECK (winner IN ('p1', 'p2', 'tie')),
        turns INTEGER NOT NULL, end_reason TEXT NOT NULL, battle_seed TEXT NOT NULL,
        p1_team_seed TEXT NOT NULL, p2_team_seed TEXT NOT NULL, showdown_version TEXT NOT NULL,
        started_at TEXT NOT NULL, ended_at TEXT NOT NULL, players_json TEXT NOT NULL, record BLOB NOT NULL
    );
    CREATE TABLE IF NOT EXISTS harness_errors (
        id INTEGER PRIMARY KEY AUTOINCREMENT, game_id TEXT NOT NULL, cause TEXT NOT NULL,
        detail TEXT NOT NULL, at TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS decisions (
        game_id TEXT NOT NULL, side TEXT NOT NULL, player TEXT NOT NULL, idx INTEGER NOT NULL,
        turn INTEGER, data TEXT NOT NULL, PRIMARY KEY (game_id, side, idx)
    );
    CREATE TABLE IF NOT EXISTS voided_decisions (
        id INTEGER PRIMARY KEY AUTOINCREMENT, game_id TEXT NOT NULL, player TEXT NOT NULL,
        cost_usd REAL, data TEXT NOT NULL, at TEXT NOT NULL
    );
    """,
)
assert len(MIGRATIONS) == SCHEMA_VERSION

#: The tables of a version-1 store (how a store from before versioning is recognised).
STORE_TABLES = frozenset({"meta", "games", "harness_errors", "decisions", "voided_decisions"})
_STORED_GAME_COLUMNS = (*GAME_COLUMNS, "players_json", "record")
_DECISION_COLUMNS = ("game_id", "side", "player", "idx", "turn", "data")
_SQLITE_HEADER = b"SQLite format 3\x00"


def store_path(run_dir: Path, shard: tuple[int, int] | None = None) -> Path:
    """Where a run (or shard I of N of a run, see ``shard=I/N``) keeps its games."""
    return run_dir / ("store.sqlite" if shard is None else f"shard-{shard[0]}-of-{shard[1]}.sqlite")


def run_stores(run_dir: Path) -> list[Path]:
    """Every store of a run: the whole-run store and the stores of its shards, if any."""
    whole = store_path(run_dir)
    return ([whole] if whole.is_file() else []) + sorted(run_dir.glob("shard-*-of-*.sqlite"))


class StoreError(RuntimeError):
    """The run folder cannot be used as asked; the message says why and what to do."""


class StoreWriteError(StoreError):
    """The run store could not be written mid-run (a full disk, an I/O error); what it held is intact."""


def _untouched(path: Path) -> str:
    return (f"The file is left as it is. Move it out of {path.parent} (or give the run another name with "
            "`name=...`) to start a new store there.")


def check_store(path: Path, writable: bool = True) -> None:
    """Raise one clear :class:`StoreError` if `path` is not a PokéBench store this code can use.

    A damaged file, another program's SQLite file, a store of a newer PokéBench, or (when
    `writable`) a store that cannot be written. Nothing is written or created: the file is
    read as an immutable database, so SQLite makes no ``-wal``/``-shm`` files beside it.
    A path that does not exist yet passes when its folder can take a new store.
    """
    path = Path(path)
    if not path.exists():
        folder = next((p for p in path.parents if p.exists()), Path("."))
        if writable and not _can_write(folder):
            raise StoreError(f"Cannot create the run store {path}: {folder} is read-only. Run from a folder you "
                             "can write to, or make that one writable.")
        return
    if not path.is_file():
        raise StoreError(f"The run store {path} is not a file. Move it away, or give the run another name with `name=...`.")
    try:
        with open(path, "rb") as handle:
            header = handle.read(len(_SQLITE_HEADER))
    except OSError as err:
        raise StoreError(f"Cannot read the run store {path} ({err.strerror}). Check its permissions.") from None
    if header and header != _SQLITE_HEADER:
        raise StoreError(f"{path} is not a PokéBench run store: it is not an SQLite database (damaged, or another "
                         f"program's file). {_untouched(path)}")
    if header:
        _check_contents(path)
    if writable:
        blocked = [p for p in (path, path.parent, *_sidecars(path)) if p.exists() and not _can_write(p)]
        if blocked:
            raise StoreError(f"The run store {path} is read-only ({', '.join(map(str, blocked))} cannot be written), "
                             "so no game could be saved. Make it writable (chmod u+w), or copy the run folder "
                             "somewhere writable and run there. The file is left as it is.")


def _sidecars(path: Path) -> list[Path]:
    return [path.with_name(path.name + suffix) for suffix in ("-wal", "-shm")]


def _can_write(path: Path) -> bool:
    """Whether `path` may be written: the process's access, and (root ignores modes) its write bits."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return os.access(path, os.W_OK) and bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _read_only_uri(path: Path) -> str:
    """How to open `path` for reading only. A store with a -wal file may be in use by another process (a shard
    of the run): read it as SQLite readers do. Without one, read it as immutable, which makes no -wal/-shm
    beside it (so a store on a read-only mount can be read)."""
    in_use = path.with_name(path.name + "-wal").exists()
    return f"file:{quote(str(path.resolve()))}?mode=ro" + ("" if in_use else "&immutable=1")


def _check_contents(path: Path) -> None:
    try:
        db = sqlite3.connect(_read_only_uri(path), uri=True)
    except sqlite3.Error as err:
        raise StoreError(f"Cannot open the run store {path} ({err}). {_untouched(path)}") from None
    try:
        ok = db.execute("PRAGMA quick_check").fetchone()[0]
        app_id = db.execute("PRAGMA application_id").fetchone()[0]
        version = db.execute("PRAGMA user_version").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} - {"sqlite_sequence"}
    except sqlite3.DatabaseError as err:
        raise StoreError(f"The run store {path} is damaged ({err}). {_untouched(path)}") from None
    finally:
        db.close()
    if ok != "ok":
        raise StoreError(f"The run store {path} is damaged (SQLite's check says: {ok}). {_untouched(path)}")
    if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables and not (tables <= STORE_TABLES and "games" in tables)):
        raise StoreError(f"{path} is an SQLite database of another program, not a PokéBench run store "
                         f"(tables: {', '.join(sorted(tables)) or 'none'}). {_untouched(path)}")
    if version > SCHEMA_VERSION:
        raise StoreError(f"The run store {path} was written by a newer PokéBench (store version {version}; this one "
                         f"reads up to {SCHEMA_VERSION}). Upgrade PokéBench (git pull; make setup) to use it.")


def _changed_keys(old: Any, new: Any, prefix: str = "") -> list[str]:
    """The dotted keys whose stored text differs (under ``players`` key by key; elsewhere the top-level key).

    A key that one config has and the other lacks is named so, even when its value is null (a setting that
    became operational, say, and left the identity); 1 and 1.0 differ, as their stored texts do.
    """
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return [] if json.dumps(old, sort_keys=True) == json.dumps(new, sort_keys=True) else [prefix]
    changed = []
    for key in set(old) | set(new):
        name = f"{prefix}.{key}" if prefix else key
        if key not in new:
            changed.append(f"{name} (not in this config)")
        elif key not in old:
            changed.append(f"{name} (not in the stored config)")
        elif prefix or key == "players":
            changed += _changed_keys(old[key], new[key], name)
        elif json.dumps(old[key], sort_keys=True) != json.dumps(new[key], sort_keys=True):
            changed.append(name)
    return changed


class RunStore:
    """One run's SQLite file. Safe to open from one writer process at a time (the runner locks the run)."""

    def __init__(self, path: Path, check: bool = True, read_only: bool = False, shared: bool = False) -> None:
        """Open (or make) the store at `path`; `check`: first :func:`check_store` it. Pass False for a
        file this process has open already (a second check would open and close it beside a live
        connection, which drops that connection's POSIX locks). `read_only`: an existing store, only
        read (publish): nothing is written or made beside it, so a run on a read-only mount can be read.
        `shared`: an existing store of another process, kept open to read while that process writes it
        (:meth:`of_another_shard`).

        Every connection is in autocommit mode (``isolation_level=None``): a read is one statement, and no
        read transaction stays open between reads to hide what other processes commit later."""
        self.path = Path(path)
        if check:
            check_store(self.path, writable=not read_only)
        if shared:  # read-write for SQLite, never written here: see of_another_shard
            try:
                self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            except sqlite3.Error as err:
                raise StoreError(f"Cannot read the run store {self.path} ({err}). {_untouched(self.path)}") from None
            return
        if read_only:
            try:
                self.db = sqlite3.connect(_read_only_uri(self.path), uri=True, isolation_level=None,
                                          check_same_thread=False)
            except sqlite3.Error as err:
                raise StoreError(f"Cannot read the run store {self.path} ({err}). {_untouched(self.path)}") from None
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")  # a game that was reported done survives a power cut
            self._migrate()
        except sqlite3.Error as err:
            raise StoreError(f"Cannot use the run store {self.path} ({err}). {_untouched(self.path)}") from None

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            for step in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[step].split(";"):
                    if statement.strip():
                        self.db.execute(statement)
            self.db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @property
    def version(self) -> int:
        return int(self.db.execute("PRAGMA user_version").fetchone()[0])

    @classmethod
    def open_existing(cls, path: Path, check: bool = True, read_only: bool = False) -> "RunStore":
        if not Path(path).exists():
            raise StoreError(f"There is no run store at {path}.")
        return cls(path, check=check, read_only=read_only)

    @classmethod
    def of_another_shard(cls, path: Path) -> "RunStore":
        """The existing store of another process (a shard of the same run), kept open while it writes it: each
        read sees the games committed until then. Nothing is written or migrated here, but the connection
        may write for SQLite: when it is the store's last one, closing it moves the store's WAL into the
        file (as the writer's own close would), where a read-only one would leave the shard's last games
        in the ``-wal`` file beside it. Not checked (the runner checks every store before it locks the run)."""
        if not Path(path).exists():
            raise StoreError(f"There is no run store at {path}.")
        return cls(path, check=False, shared=True)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the run's identity ---------------------------------------------------------------
    def bind_config(self, fingerprint: dict[str, Any], run_name: str,
                    legacy: Sequence[dict[str, Any]] = ()) -> None:
        """Tie the store to the config that defines its games; refuse a different one.

        `legacy` are the same config's fingerprint in the shapes an older PokéBench wrote: a store
        bound to one is re-bound to `fingerprint` (the same games, identified as this PokéBench does).
        """
        text = json.dumps(fingerprint, sort_keys=True)
        row = self.db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        if row is None or row[0] in {json.dumps(old, sort_keys=True) for old in legacy}:
            with self.db:
                self.db.execute("BEGIN")
                self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('fingerprint', ?)", (text,))
                if row is None:
                    self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('created_at', ?)", (utc_now(),))
            return
        if row[0] != text:
            changed = sorted(_changed_keys(json.loads(row[0]), fingerprint))
            raise StoreError(
                f"The run folder {self.path.parent} holds games of another config (it differs in: "
                f"{', '.join(changed)}). Its results are untouched. Give this run another name with "
                f"`name=...`, or restore the config it was made with."
            )

    def note_start(self, host: str, pid: int) -> None:
        """Add one start of the run to the store's ``starts`` (on a cluster: which node played a shard, when)."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            starts = self.starts()
            starts.append({"host": host, "pid": pid, "at": utc_now()})
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('starts', ?)", (json.dumps(starts),))

    def starts(self) -> list[dict[str, Any]]:
        """Every start of the run on this store, oldest first: ``{"host", "pid", "at"}``."""
        return self._meta_list("starts")

    def save_preflight(self, requests: Iterable[dict[str, Any]]) -> None:
        """Add a start's pre-flight requests (one per model, before any game: paid answers of no game), each
        ``{"player", "cost_usd", "input_tokens", "cached_input_tokens", "output_tokens", ...}``."""
        with self._writing():
            kept = self.preflight() + [dict(r, at=utc_now()) for r in requests]
            self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('preflight', ?)", (json.dumps(kept),))

    def preflight(self) -> list[dict[str, Any]]:
        """Every start's pre-flight requests (:meth:`save_preflight`), oldest first."""
        return self._meta_list("preflight")

    def _meta_list(self, key: str) -> list[dict[str, Any]]:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else []

    # ---- writing --------------------------------------------------------------------------
    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction; a failure (a full disk...) is rolled back and raised as :class:`StoreWriteError`."""
        try:
            with self.db:
                self.db.execute("BEGIN IMMEDIATE")
                yield
        except sqlite3.Error as err:
            with contextlib.suppress(sqlite3.Error):
                if self.db.in_transaction:
                    self.db.rollback()
            raise StoreWriteError(f"Could not write to the run store {self.path} ({err}). The games it held are "
                                  "intact; the game being written is played again on the next start. Free space "
                                  "(or fix the disk), then start the same command again.") from None

    def save_game(self, spec: GameSpec, record: dict[str, Any], players: dict[str, Any], started_at: str,
                  decisions: Iterable[DecisionRecord] = ()) -> bool:
        """Write one finished game and its decisions in one transaction; False if it was already there."""
        blob = zlib.compress(json.dumps(record).encode(), 6)
        row = (spec.game_id, spec.run, spec.matchup, spec.pair, spec.game, spec.p1, spec.p2, record["winner"],
               int(record["turns"]), record["end_reason"], spec.battle_seed, spec.p1_team_seed, spec.p2_team_seed,
               record["showdown_version"], started_at, record.get("ended_at") or utc_now(),
               json.dumps(players, sort_keys=True), blob)
        with self._writing():
            cursor = self.db.execute(f"INSERT OR IGNORE INTO games ({', '.join(_STORED_GAME_COLUMNS)}) "
                                     f"VALUES ({','.join('?' * len(row))})", row)
            if cursor.rowcount == 0:
                return False
            self.db.executemany(
                f"INSERT INTO decisions ({', '.join(_DECISION_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)",
                [(spec.game_id, d.side, d.player, i, d.turn, json.dumps(d.to_dict())) for i, d in enumerate(decisions)],
            )
        return True

    def save_harness_error(self, game_id: str, cause: str, detail: str,
                           decisions: Iterable[DecisionRecord] = ()) -> None:
        """Record a voided game, and the answers its players had been given (their spend is real)."""
        at = utc_now()
        with self._writing():
            self.db.execute("INSERT INTO harness_errors (game_id, cause, detail, at) VALUES (?, ?, ?, ?)",
                            (game_id, cause, detail, at))
            self.db.executemany(
                "INSERT INTO voided_decisions (game_id, player, cost_usd, data, at) VALUES (?, ?, ?, ?, ?)",
                [(game_id, d.player, d.cost_usd, json.dumps(d.to_dict()), at) for d in decisions])

    # ---- reading --------------------------------------------------------------------------
    def done_game_ids(self) -> set[str]:
        return {row[0] for row in self.db.execute("SELECT game_id FROM games")}

    def games(self) -> pd.DataFrame:
        """One row per finished game (the columns of ``games.csv``)."""
        return pd.read_sql_query(f"SELECT {', '.join(GAME_COLUMNS)} FROM games ORDER BY pair, matchup, game", self.db)

    def game_players(self) -> dict[str, dict[str, Any]]:
        return {gid: json.loads(text) for gid, text in self.db.execute("SELECT game_id, players_json FROM games")}

    def harness_errors(self) -> pd.DataFrame:
        return pd.read_sql_query("SELECT game_id, cause, detail, at FROM harness_errors ORDER BY id", self.db)

    def record(self, game_id: str) -> dict[str, Any]:
        row = self.db.execute("SELECT record FROM games WHERE game_id = ?", (game_id,)).fetchone()
        if row is None:
            raise KeyError(f"no finished game {game_id!r} in {self.path}")
        return json.loads(zlib.decompress(row[0]))

    def records(self) -> Iterator[dict[str, Any]]:
        for (blob,) in self.db.execute("SELECT record FROM games ORDER BY pair, matchup, game"):
            yield json.loads(zlib.decompress(blob))

    def voided_decisions(self) -> pd.DataFrame:
        """The answers given in voided games (not results; their tokens and cost count toward spend)."""
        rows = [json.loads(text) | {"game_id": gid}
                for gid, text in self.db.execute("SELECT game_id, data FROM voided_decisions ORDER BY id")]
        return pd.DataFrame(rows)

    def spend_by_player(self) -> dict[str, dict[str, float]]:
        """Per player: cost (US dollars) and tokens of every answer, in stored and in voided games, and of the
        pre-flight requests (in `cost_usd` and the tokens, apart in `preflight_cost_usd`); `answers` counts the
        requests the model answered (not a pre-flight, nor one that ended in an error), `unpriced` the answers
        whose cost is unknown (a model run with ``prices: unknown``)."""
        out: dict[str, dict[str, float]] = {}

        def row_of(player: str) -> dict[str, float]:
            return out.setdefault(player, {"cost_usd": 0.0, "input_tokens": 0, "cached_input_tokens": 0,
                                           "output_tokens": 0, "answers": 0, "voided_cost_usd": 0.0,
                                           "preflight_cost_usd": 0.0, "unpriced": 0})

        for request in self.preflight():
            row = row_of(str(request["player"]))
            for key in ("cost_usd", "input_tokens", "cached_input_tokens", "output_tokens"):
                row[key] += request.get(key) or 0
            row["preflight_cost_usd"] += request.get("cost_usd") or 0.0
        for table in ("decisions", "voided_decisions"):
            query = (f"SELECT player, SUM(json_extract(data, '$.cost_usd')), SUM(json_extract(data, '$.input_tokens')),"
                     f" SUM(json_extract(data, '$.cached_input_tokens')), SUM(json_extract(data, '$.output_tokens')),"
                     f" SUM(json_extract(data, '$.error') IS NULL), SUM(json_extract(data, '$.cost_usd') IS NULL AND"
                     f" json_extract(data, '$.output_tokens') IS NOT NULL) FROM {table} GROUP BY player")
            for player, cost, inp, cached, output, answers, unpriced in self.db.execute(query):
                row = row_of(player)
                row["cost_usd"] += cost or 0.0
                row["input_tokens"] += inp or 0
                row["cached_input_tokens"] += cached or 0
                row["output_tokens"] += output or 0
                row["answers"] += answers
                row["unpriced"] += unpriced or 0
                if table == "voided_decisions":
                    row["voided_cost_usd"] += cost or 0.0
        return out

    def decisions(self) -> pd.DataFrame:
        rows = [json.loads(text) | {"game_id": gid, "idx": idx}
                for gid, idx, text in self.db.execute("SELECT game_id, idx, data FROM decisions ORDER BY game_id, side, idx")]
        return pd.DataFrame(rows)
