"""The embedded store of a run: one SQLite file (WAL) under ``runs/NAME/``.

A finished game is written in one transaction (its row, its compressed record and
any LLM decisions), keyed by its game id: a run killed at any moment and started
again plays only the games that are not in the store, and no game is counted
twice. Harness errors are kept, with their cause, in their own table and never
enter the results; the game is played again on the next start.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator

import pandas as pd

from pokebench.util import utc_now

if TYPE_CHECKING:  # pragma: no cover
    from pokebench.play.schedule import GameSpec

GAME_COLUMNS = (
    "game_id", "run", "matchup", "pair", "game", "p1", "p2", "winner", "turns", "end_reason",
    "battle_seed", "p1_team_seed", "p2_team_seed", "showdown_version", "started_at", "ended_at",
)

SCHEMA = """
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
"""


def store_path(run_dir: Path, shard: tuple[int, int] | None = None) -> Path:
    """Where a run (or shard I of N of a run, see ``shard=I/N``) keeps its games."""
    return run_dir / ("store.sqlite" if shard is None else f"shard-{shard[0]}-of-{shard[1]}.sqlite")


def run_stores(run_dir: Path) -> list[Path]:
    """Every store of a run: the whole-run store and the stores of its shards, if any."""
    whole = store_path(run_dir)
    return ([whole] if whole.is_file() else []) + sorted(run_dir.glob("shard-*-of-*.sqlite"))


class StoreError(RuntimeError):
    """The run folder cannot be used as asked; the message says why and what to do."""




class RunStore:
    """One run's SQLite file. Safe to open from one writer process at a time."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")  # a game that was reported done survives a power cut
        self.db.executescript(SCHEMA)

    @classmethod
    def open_existing(cls, path: Path) -> "RunStore":
        if not Path(path).exists():
            raise StoreError(f"There is no run store at {path}.")
        return cls(path)

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "RunStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the run's identity ---------------------------------------------------------------
    def bind_config(self, fingerprint: dict[str, Any], run_name: str) -> None:
        """Tie the store to the config that defines its games; refuse a different one."""
        text = json.dumps(fingerprint, sort_keys=True)
        row = self.db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        if row is None:
            with self.db:
                self.db.execute("BEGIN")
                self.db.execute("INSERT INTO meta VALUES ('fingerprint', ?)", (text,))
                self.db.execute("INSERT OR REPLACE INTO meta VALUES ('created_at', ?)", (utc_now(),))
            return
        if row[0] != text:
            old = json.loads(row[0])
            changed = sorted(k for k in set(old) | set(fingerprint) if old.get(k) != fingerprint.get(k))
            raise StoreError(
                f"The run folder {self.path.parent} holds games of another config (it differs in: "
                f"{', '.join(changed)}). Its results are untouched. Give this run another name with "
                f"`name=...`, or restore the config it was made with."
            )

    # ---- writing --------------------------------------------------------------------------
    def save_game(self, spec: GameSpec, record: dict[str, Any], players: dict[str, Any], started_at: str,
                  decisions: Iterable[dict[str, Any]] = ()) -> bool:
        """Write one finished game and its decisions in one transaction; False if it was already there."""
        blob = zlib.compress(json.dumps(record).encode(), 6)
        row = (spec.game_id, spec.run, spec.matchup, spec.pair, spec.game, spec.p1, spec.p2, record["winner"],
               int(record["turns"]), record["end_reason"], spec.battle_seed, spec.p1_team_seed, spec.p2_team_seed,
               record["showdown_version"], started_at, record.get("ended_at") or utc_now(),
               json.dumps(players, sort_keys=True), blob)
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            cursor = self.db.execute(f"INSERT OR IGNORE INTO games VALUES ({','.join('?' * len(row))})", row)
            if cursor.rowcount == 0:
                return False
            self.db.executemany(
                "INSERT INTO decisions VALUES (?, ?, ?, ?, ?, ?)",
                [(spec.game_id, d["side"], d["player"], i, d.get("turn"), json.dumps(d)) for i, d in enumerate(decisions)],
            )
        return True

    def save_harness_error(self, game_id: str, cause: str, detail: str,
                           decisions: Iterable[dict[str, Any]] = ()) -> None:
        """Record a voided game, and the answers its players had been given (their spend is real)."""
        at = utc_now()
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("INSERT INTO harness_errors (game_id, cause, detail, at) VALUES (?, ?, ?, ?)",
                            (game_id, cause, detail, at))
            self.db.executemany(
                "INSERT INTO voided_decisions (game_id, player, cost_usd, data, at) VALUES (?, ?, ?, ?, ?)",
                [(game_id, d.get("player", ""), d.get("cost_usd"), json.dumps(d), at) for d in decisions])

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
        """Per player: cost (US dollars) and tokens of every answer, in stored and in voided games."""
        out: dict[str, dict[str, float]] = {}
        for table in ("decisions", "voided_decisions"):
            query = (f"SELECT player, SUM(json_extract(data, '$.cost_usd')), SUM(json_extract(data, '$.input_tokens')),"
                     f" SUM(json_extract(data, '$.cached_input_tokens')), SUM(json_extract(data, '$.output_tokens')),"
                     f" COUNT(*) FROM {table} GROUP BY player")
            for player, cost, inp, cached, output, answers in self.db.execute(query):
                row = out.setdefault(player, {"cost_usd": 0.0, "input_tokens": 0, "cached_input_tokens": 0,
                                              "output_tokens": 0, "answers": 0, "voided_cost_usd": 0.0})
                row["cost_usd"] += cost or 0.0
                row["input_tokens"] += inp or 0
                row["cached_input_tokens"] += cached or 0
                row["output_tokens"] += output or 0
                row["answers"] += answers
                if table == "voided_decisions":
                    row["voided_cost_usd"] += cost or 0.0
        return out

    def decisions(self) -> pd.DataFrame:
        rows = [json.loads(text) | {"game_id": gid, "idx": idx}
                for gid, idx, text in self.db.execute("SELECT game_id, idx, data FROM decisions ORDER BY game_id, side, idx")]
        return pd.DataFrame(rows)
