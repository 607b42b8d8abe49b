"""Loading runs: every store of the named runs, merged into one set of distinct games.

A game's ``uid`` is the SHA-256 of what makes it that game (format, seeds, players, Showdown
version and input log): the same game in several runs (deterministic bots replay the same
games from the same seed text) has one uid and counts once (``copies`` says how many runs
held it); two stores that hold *different* games under one run's game id are refused.
A run looks *partial* when shards are missing, pairs lack games, or harness errors were not
replayed (:func:`partial_reasons`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, cast

import pandas as pd

from pokebench.invocation import module_command
from pokebench.paths import RUNS_DIR, conf_dir
from pokebench.player.decisions import SHARED_FIELDS, DecisionRecord
from pokebench.results.redaction import scrub
from pokebench.results.schema import DecisionRow, GameRow, RunInfo, columns
from pokebench.results.store import RunStore, StoreError, run_stores

__all__ = ["PublishError", "RunData", "load_runs", "check_publishable", "game_uid", "safe_name", "to_utc_z",
           "decision_row", "partial_reasons", "is_missing", "MODEL_CALL_FIELDS", "is_bot_row", "model_calls",
           "model_answers"]

SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")
SHARD_FILE = re.compile(r"shard-(\d+)-of-(\d+)\.sqlite$")
#: a decision's fields that become fixed columns of decisions.csv; the rest goes to ``extra``
DECISION_FIXED = [c for c in columns(DecisionRow) if c not in ("uid", "game_id", "run", "extra")]


class PublishError(ValueError):
    """The runs cannot be published as asked; the message says why and what to do."""


def safe_name(text: str) -> str:
    """A file-name-safe form of a name: letters, digits, ``_ . -``; never hidden."""
    name = SAFE_NAME.sub("_", str(text)).lstrip(".") or "_"
    return name[:150]


def to_utc_z(text: Any) -> str:
    """A timestamp as PokéBench's one format (:func:`pokebench.util.utc_now`): UTC, milliseconds, ``Z``."""
    stamp = pd.Timestamp(str(text))
    stamp = stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def game_uid(row: dict[str, Any], record: dict[str, Any]) -> str:
    """16 hex digits of SHA-256 over the game's format, seeds, players, Showdown version and input log."""
    what = [record.get("format"), row["battle_seed"], row["p1_team_seed"], row["p2_team_seed"], row["p1"], row["p2"],
            row["showdown_version"], list(record.get("input_log") or [])]
    return hashlib.sha256(json.dumps(what, ensure_ascii=False).encode()).hexdigest()[:16]


def is_missing(value: Any) -> bool:
    """Whether a cell holds no value: None, NaN or pandas' NA."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


#: What a model's call fills in a decisions.csv row and a bot's own record (the search bot's, Foul Play's) leaves empty.
MODEL_CALL_FIELDS = ("model", "input_tokens", "output_tokens")


def is_bot_row(row: dict[str, Any]) -> bool:
    """A decision no model answered (a bot's own record, e.g. the search bot's or Foul Play's): no model, no tokens."""
    return all(is_missing(row.get(key)) for key in MODEL_CALL_FIELDS)


def model_calls(decisions: pd.DataFrame) -> pd.DataFrame:
    """The rows of `decisions` that a model answered (:func:`is_bot_row`'s complement, on a frame)."""
    return decisions[decisions.reindex(columns=list(MODEL_CALL_FIELDS)).notna().any(axis=1)]


def model_answers(decisions: pd.DataFrame) -> pd.DataFrame:
    """The :func:`model_calls` the model answered: not a request that ended in an error (cut off by a stop, or a
    conversation longer than the model's context), whose entry keeps it in `extra` (``"error"``)."""
    calls = model_calls(decisions)
    if "extra" not in calls.columns or calls.empty:
        return calls
    failed = calls["extra"].map(lambda e: isinstance(e, str) and '"error"' in e and json.loads(e).get("error") is not None)
    return calls[~failed.astype(bool)]


def decision_row(record: DecisionRecord, idx: int, uid: str, game_id: str, run: str) -> dict[str, Any]:
    """One row of decisions.csv: the shared fields in their columns, the extra ones (without secrets) as JSON
    in ``extra``."""
    shared = scrub({"idx": idx, **{k: getattr(record, k) for k in SHARED_FIELDS}})
    row: dict[str, Any] = {"uid": uid, "game_id": game_id, "run": run}
    for col in DECISION_FIXED:
        value = shared.get(col)
        row[col] = None if is_missing(value) else value
    rest = {k: v for k, v in scrub(record.extra).items() if k not in ("game_id", "run")}
    row["extra"] = json.dumps(rest, sort_keys=True, ensure_ascii=False, default=str)
    return row


@dataclass
class RunData:
    """Merged runs: distinct finished games, decisions and harness errors as DataFrames.

    ``games`` has the columns of ``games.csv`` (:class:`pokebench.results.schema.GameRow`),
    one row per uid. ``players`` maps uid -> {"p1": {...}, "p2": {...}} (what each side
    reported, without secrets). ``record(uid)`` gives a game's full record (log, input log,
    teams). ``runs`` describes each run (stores, partial or not).
    """

    names: list[str]
    games: pd.DataFrame
    decisions: pd.DataFrame
    errors: pd.DataFrame
    runs: list[RunInfo]
    players: dict[str, dict[str, Any]] = field(default_factory=dict)
    duplicates_merged: int = 0
    run_dirs: list[Path] = field(default_factory=list)
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)  # player -> its run config (no secrets)
    _sources: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)  # uid -> (store key, game id)
    _stores: dict[str, RunStore] = field(default_factory=dict, repr=False)

    def record(self, uid: str) -> dict[str, Any]:
        """The full record of a finished game (``log``, ``input_log``, ``p1team``...)."""
        key, original = self._sources[uid]
        return self._stores[key].record(original)

    @property
    def partial(self) -> bool:
        return any(r.partial for r in self.runs)

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def __enter__(self) -> "RunData":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _known_runs(runs_dir: Path) -> list[str]:
    if not runs_dir.is_dir():
        return []
    return sorted(p.name for p in runs_dir.iterdir() if run_stores(p))


def _open_stores(names: Sequence[str], runs_dir: Path) -> list[tuple[str, str, RunStore]]:
    """(run name, store key, store) for every store of every run; a clear error for a missing run."""
    opened: list[tuple[str, str, RunStore]] = []

    def fail(message: str) -> None:
        for _, _, store in opened:
            store.close()
        raise PublishError(message)

    for name in names:
        paths = [] if "/" in name or "\\" in name or name in (".", "..") else run_stores(runs_dir / name)
        if not paths:
            known = _known_runs(runs_dir)
            hint = f"Runs in {runs_dir}/: {', '.join(known)}." if known else f"There are no runs in {runs_dir}/ yet."
            if "/" in name or "\\" in name:
                hint = f"Give the run's name (a folder of {runs_dir}/), not a path; --runs-dir sets that folder. " + hint
            fail(f"there is no run named {name!r} (no {runs_dir / name / 'store.sqlite'}). {hint} "
                 f"Play it first with `{module_command('+run=NAME')}`.")
        for path in paths:
            try:
                store = RunStore.open_existing(path, read_only=True)  # a run on a read-only mount publishes
            except (StoreError, sqlite3.Error, OSError) as err:  # a corrupt or unreadable file
                fail(f"cannot open the store of run {name!r} at {path}: {err}")
            key = name if path.name == "store.sqlite" else f"{name}/{path.stem}"
            opened.append((name, key, store))
    return opened


def _player_configs(store: RunStore) -> dict[str, dict[str, Any]]:
    """Each player's config as the run that made the store gave it (the store's fingerprint), without secrets."""
    try:
        row = store.db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
        players = json.loads(row[0]).get("players") if row else None
    except (sqlite3.Error, ValueError, AttributeError):
        return {}
    return {str(k): scrub(v) for k, v in players.items() if isinstance(v, dict)} if isinstance(players, dict) else {}


#: Config keys that may differ between runs published together under one player name: where a frozen player's
#: learned state is read from (``trajectories``' K evaluations after learning are replicas of one player, each
#: loading its own trajectory's state, and are published together on purpose).
REPLICA_KEYS = frozenset({"load_from"})


def _settings(config: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k not in REPLICA_KEYS}


def _two_players_one_name(player: str, first: tuple[str, dict[str, Any]], second: tuple[str, dict[str, Any]]) -> str:
    """Why two runs that give one player name different settings cannot be published together, and what to do."""
    (run_a, config_a), (run_b, config_b) = first, second
    a, b = _settings(config_a), _settings(config_b)
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    shown = "; ".join(f"{k}: {a.get(k)!r} in {run_a!r}, {b.get(k)!r} in {run_b!r}" for k in keys[:4])
    return (f"player {player!r} has other settings in run {run_b!r} than in run {run_a!r} ({shown}"
            f"{'; ...' if len(keys) > 4 else ''}): published together their games would be rated as one player's. "
            f"Publish the runs apart, or play one of them with the player under a name of its own "
            f"(e.g. `+player@players.{player}-2=...` in its run file or on its command line).")


def partial_reasons(store_files: Sequence[str], games: pd.DataFrame, errors: pd.DataFrame,
                    sequential: bool = False) -> list[str]:
    """Why a run looks unfinished, from what its stores hold (they do not record the planned count).

    - a shard store ``shard-I-of-N`` is missing for some I < N, and no stored game is of its pairs (k with
      k % N == I: a run played whole and then started as a shard has them in its whole-run store);
    - a matchup lacks a game of a pair up to the run's highest pair (per matchup for a
      sequential run, whose matchups play different numbers of pairs);
    - a harness error's game was never played again.
    """
    reasons = []
    shards: dict[int, set[int]] = {}
    for name in store_files:
        m = SHARD_FILE.search(name)
        if m:
            shards.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
    stored_pairs = set() if games.empty else {int(k) for k in games["pair"]}
    for count, present in sorted(shards.items()):
        missing = sorted(i for i in set(range(count)) - present if not any(k % count == i for k in stored_pairs))
        if missing:
            reasons.append(f"shard{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of {count} "
                           "not published (no store)")
    if not games.empty:
        top = int(games["pair"].max())
        lacking = 0
        for _, grp in games.groupby("matchup"):
            last = int(grp["pair"].max()) if sequential else top
            have = grp.groupby("pair").size()
            lacking += sum(2 - int(have.get(k, 0)) for k in range(1, last + 1))
        if lacking:
            reasons.append(f"{lacking} game{'s' if lacking > 1 else ''} of pairs 1–{top} not played")
    if not errors.empty:
        open_errors = set(errors["game_id"]) - set(games["game_id"]) if not games.empty else set(errors["game_id"])
        if open_errors:
            reasons.append(f"{len(open_errors)} game{'s' if len(open_errors) > 1 else ''} ended in a harness error "
                           "and {} not played again".format("were" if len(open_errors) > 1 else "was"))
    return reasons


def load_runs(names: Sequence[str], runs_dir: Path | str = RUNS_DIR) -> RunData:
    """Open every store of each named run (``runs_dir/NAME/``) and merge them into distinct games.

    Raises :class:`PublishError` for a name without a store, or for one game id of a run that
    two stores hold as different games. Empty runs load fine (see :func:`check_publishable`).
    """
    runs_dir = Path(runs_dir)
    names = list(dict.fromkeys(names))  # the same run twice is still one run
    if not names:
        raise PublishError("name at least one run to publish, "
                           f"e.g. `{module_command('bots-smoke', module='pokebench.cli.publish')}`.")
    opened = _open_stores(names, runs_dir)
    rows: list[dict[str, Any]] = []
    decisions: list[dict[str, Any]] = []
    players: dict[str, dict[str, Any]] = {}
    sources: dict[str, tuple[str, str]] = {}
    seen: dict[tuple[str, str], tuple[str, str]] = {}  # (run, game id) -> (uid, store key)
    per_run: dict[str, dict[str, Any]] = {n: {"stores": [], "games": [], "errors": []} for n in names}
    all_errors = []
    duplicates = 0
    by_uid: dict[str, dict[str, Any]] = {}
    first_config: dict[str, tuple[str, dict[str, Any]]] = {}  # player -> (the first run that has it, its config)
    try:
        for name, key, store in opened:
            info = per_run[name]
            info["stores"].append(Path(store.path).name)
            for player, config in _player_configs(store).items():
                earlier = first_config.setdefault(player, (name, config))
                if _settings(earlier[1]) != _settings(config):
                    raise PublishError(_two_players_one_name(player, earlier, (name, config)))
            errs = store.harness_errors()
            info["errors"].append(errs)
            all_errors.append(errs.assign(store=key)[["store", *errs.columns]])
            table = store.games()
            info["games"].append(table)
            sides = store.game_players()
            by_game: dict[str, list[dict[str, Any]]] = {}
            dec = store.decisions()
            entries = cast(list[dict[str, Any]], dec.to_dict("records")) if not dec.empty else []
            for entry in entries:
                entry = {k: v for k, v in entry.items() if not is_missing(v)}  # a field other answers have
                by_game.setdefault(entry["game_id"], []).append(entry)
            for row in cast(list[dict[str, Any]], table.to_dict("records")):
                record = store.record(row["game_id"])
                uid = game_uid(row, record)
                where = (str(row["run"]), str(row["game_id"]))
                if where in seen and seen[where][0] != uid:
                    raise PublishError(
                        f"game {row['game_id']!r} of run {row['run']!r} is in more than one store "
                        f"({seen[where][1]}, {key}) as different games: a game must be counted once. Publish "
                        "these stores separately, or remove the copy from one store.")
                seen[where] = (uid, key)
                if uid in sources:
                    duplicates += 1
                    first = by_uid[uid]
                    if name not in first["_runs"]:
                        first["_runs"].append(name)
                    continue
                sources[uid] = (key, str(row["game_id"]))
                out = {c: row.get(c) for c in columns(GameRow) if c in row}
                out.update(uid=uid, run=str(row["run"]), _runs=[name],
                           started_at=to_utc_z(row["started_at"]), ended_at=to_utc_z(row["ended_at"]))
                rows.append(out)
                by_uid[uid] = out
                players[uid] = scrub(sides.get(row["game_id"], {}))
                for entry in sorted(by_game.get(row["game_id"], []), key=lambda d: (d["side"], d["idx"])):
                    decision = DecisionRecord.from_dict({k: v for k, v in entry.items() if k not in ("game_id", "idx")})
                    decisions.append(decision_row(decision, entry["idx"], uid, str(row["game_id"]), str(row["run"])))
    except BaseException:
        for _, _, store in opened:
            store.close()
        raise

    games = pd.DataFrame(rows, columns=[*columns(GameRow), "_runs"])
    games["copies"] = games["_runs"].map(len)
    games = games[columns(GameRow)].reset_index(drop=True)
    for col in ("pair", "game", "turns", "copies"):
        games[col] = games[col].astype(int)
    runs = []
    for name in names:
        info = per_run[name]
        run_games = pd.concat(info["games"], ignore_index=True) if info["games"] else pd.DataFrame()
        errs = pd.concat(info["errors"], ignore_index=True) if info["errors"] else pd.DataFrame()
        sequential = (runs_dir / name / "sequential.json").is_file()
        reasons = partial_reasons(info["stores"], run_games, errs, sequential)
        runs.append(RunInfo(name=name, stores=info["stores"], games=len(run_games), harness_errors=len(errs),
                            partial=bool(reasons), partial_reasons=reasons))
    return RunData(
        names=names, games=games, decisions=pd.DataFrame(decisions, columns=columns(DecisionRow)),
        errors=pd.concat(all_errors, ignore_index=True) if all_errors else pd.DataFrame(),
        runs=runs, players=players, duplicates_merged=duplicates, run_dirs=[runs_dir / n for n in names],
        configs={player: config for player, (_, config) in first_config.items()},
        _sources=sources,
        _stores={key: store for _, key, store in opened})


def _play_command(name: str) -> str:
    """The command that plays run `name`, as far as its name tells: `+run=NAME` names a file of conf/run/."""
    if (conf_dir() / "run" / f"{name}.yaml").is_file():
        return f"`{module_command('+run=' + name)}`"
    return f"`{module_command('+run=RUN', 'name=' + name)}`, RUN the file of conf/run/ it was played from"


def check_publishable(data: RunData) -> None:
    """Raise :class:`PublishError` when a named run has no finished games."""
    empty = [r for r in data.runs if r.games == 0]
    if not empty:
        return
    parts = []
    for run in empty:
        errs = data.errors[data.errors["store"].map(lambda k: k.split("/")[0]) == run.name] \
            if not data.errors.empty else data.errors
        if len(errs):
            causes = ", ".join(f"{c} ×{n}" for c, n in errs["cause"].value_counts().items())
            parts.append(f"run {run.name!r} has no finished games, only {len(errs)} harness error(s) ({causes}). "
                         f"Harness errors are never results: start the run again ({_play_command(run.name)}) "
                         "to play those games")
        else:
            parts.append(f"run {run.name!r} has no finished games yet. Play it first ({_play_command(run.name)})")
    also = " (or publish the other runs without it)" if len(empty) < len(data.names) else ""
    raise PublishError("; ".join(parts) + f", then publish{also}.")

