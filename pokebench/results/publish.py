"""Publish one or more runs as a static site: ratings, head-to-head, games, decisions, replays.

``python -m pokebench.cli.publish RUN [RUN ...] [--out DIR] [--anchor PLAYER]`` merges the
stores ``runs/RUN/store.sqlite`` and writes ``data/site/RUN/`` (one run) or ``--out DIR``
(several runs; required then):

- ``ratings.csv``: one row per player, ranked: rank, player, elo, ci_low, ci_high, games,
  wins, ties, losses, win_rate and, for LLM players, the figures of method section 7
  (:func:`per_player_figures`; empty for bots);
- ``h2h.csv``: one row per ordered (player, opponent) that met;
- ``games.csv``: one row per finished game (harness errors never enter the results);
- ``decisions.csv``: one row per saved LLM answer, when there are any;
- ``inputlogs/<game_id>.log``: each game's Showdown input log (replays the game exactly);
- ``index.html``, ``games.html``, ``players/*.html``, ``replays/*.html``, ``ratings.svg``
  and ``cost.svg`` (with LLM players): the site, see :mod:`pokebench.site.build`.

The site is written into a temporary folder next to the target and moved into place only
when it is complete, so a failed publish leaves no half-written site and an existing site
stays as it was. Bad input (a missing or empty run, one player only, players who never
met, an anchor who did not play) raises :class:`PublishError` with a message that says
what to do; the command line prints it and exits with code 2.

Secrets never reach the site: fields named like *key*/*token*/*secret* are dropped (token
*counts* such as ``output_tokens`` are kept), and the values of such environment
variables are blanked out of every written file as a last guard.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sqlite3
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from pokebench.results.ratings import RatingsError, fit_ratings, head_to_head
from pokebench.results.harness_tables import write_harness_tables
from pokebench.results.store import GAME_COLUMNS, RunStore, StoreError, run_stores

__all__ = [
    "PublishError", "RunData", "Results", "load_runs", "compute_results", "per_player_figures",
    "publish", "load_results", "main", "RUNS_DIR", "SITE_DIR", "FIGURE_COLUMNS",
]

RUNS_DIR = Path("runs")
SITE_DIR = Path("data/site")
SITE_MARKER = ".pokebench-site"

#: The LLM figures of method section 7, one column each in ``ratings.csv`` (NaN for bots).
FIGURE_COLUMNS = ("answers", "cost_per_game", "output_tokens_per_decision", "seconds_per_decision",
                  "reask_rate", "random_pick_rate")

SECRET_NAME = re.compile(r"key|token|secret|passw|credential|authoriz|bearer|cookie", re.I)
COUNT_NAME = re.compile(r"tokens", re.I)  # input_tokens, output_tokens...: counts, not secrets
SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class PublishError(ValueError):
    """The runs cannot be published as asked; the message says why and what to do."""


# ---- secrets ------------------------------------------------------------------------------

def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) or value is None


def is_secret_name(name: str, value: Any = None) -> bool:
    """True for a field that must not be published: named like a key, token, secret...

    Token counts (``output_tokens`` and the like, holding numbers) are not secrets.
    """
    if not SECRET_NAME.search(str(name)):
        return False
    return not (COUNT_NAME.search(str(name)) and _is_number(value))


def scrub(value: Any) -> Any:
    """A copy of nested dicts/lists without the fields named like secrets."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if not is_secret_name(k, v)}
    if isinstance(value, (list, tuple)):
        return [scrub(v) for v in value]
    return value


def scrub_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Drop the columns named like secrets (numeric ``*tokens*`` columns stay); nested
    values are scrubbed and written as JSON."""
    keep = []
    for col in df.columns:
        numeric = pd.api.types.is_numeric_dtype(df[col]) or df[col].map(_is_number).all()
        if SECRET_NAME.search(str(col)) and not (COUNT_NAME.search(str(col)) and numeric):
            continue
        keep.append(col)
    out = df[keep].copy()
    for col in out.columns:
        if out[col].dtype == object and out[col].map(lambda v: isinstance(v, (dict, list, tuple))).any():
            out[col] = out[col].map(lambda v: json.dumps(scrub(v), sort_keys=True)
                                    if isinstance(v, (dict, list, tuple)) else v)
    return out


def secret_env_values(environ: dict[str, str] | None = None) -> list[str]:
    """Values of environment variables named like secrets (long enough to be one)."""
    environ = os.environ if environ is None else environ
    return sorted({v for k, v in environ.items() if SECRET_NAME.search(k) and len(v.strip()) >= 8},
                  key=len, reverse=True)


def _redact_tree(root: Path, secrets: Sequence[str]) -> int:
    """Blank out `secrets` in every file under `root`; the number of files changed."""
    changed = 0
    needles = [s.encode() for s in secrets]
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        new = data
        for needle in needles:
            new = new.replace(needle, b"[redacted]")
        if new != data:
            path.write_bytes(new)
            changed += 1
    return changed


# ---- loading runs -------------------------------------------------------------------------

def safe_name(text: str) -> str:
    """A file-name-safe form of a name: letters, digits, ``_ . -``; never hidden."""
    name = SAFE_NAME.sub("_", str(text)).lstrip(".") or "_"
    return name[:150]


@dataclass
class RunData:
    """Merged runs: finished games, LLM decisions and harness errors as DataFrames.

    ``game_id`` is unique across the merged runs: the store's own game id, or
    ``<run>.<game id>`` for every game when the same id occurs in two runs.
    ``players`` maps game_id -> {"p1": {...}, "p2": {...}} (what each side reported,
    without secrets). ``record(game_id)`` gives a game's full record (log, input log...).
    """

    names: list[str]
    games: pd.DataFrame
    decisions: pd.DataFrame
    errors: pd.DataFrame
    players: dict[str, dict[str, Any]] = field(default_factory=dict)
    _sources: dict[str, tuple[str, str]] = field(default_factory=dict, repr=False)  # id -> (store, id there)
    _stores: dict[str, RunStore] = field(default_factory=dict, repr=False)

    def record(self, game_id: str) -> dict[str, Any]:
        """The full record of a finished game (``log``, ``input_log``, teams...)."""
        name, original = self._sources[game_id]
        return self._stores[name].record(original)

    def store_of(self, game_id: str) -> str:
        return self._sources[game_id][0]

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


def load_runs(names: Sequence[str], runs_dir: Path | str = RUNS_DIR) -> RunData:
    """Open ``runs_dir/NAME/store.sqlite`` for each name and merge the runs.

    Raises :class:`PublishError` for a name without a store or a game found in two stores.
    Empty runs load fine (see :func:`check_publishable`).
    """
    runs_dir = Path(runs_dir)
    names = list(dict.fromkeys(names))  # the same run twice is still one run
    if not names:
        raise PublishError("name at least one run to publish, e.g. `python -m pokebench.cli.publish bots-smoke`.")
    stores: list[RunStore] = []
    keys: list[str] = []  # one per store: the run's name, or NAME/shard-I-of-N
    for name in names:
        path = runs_dir / name / "store.sqlite"
        paths = [] if "/" in name or "\\" in name or name in (".", "..") else run_stores(runs_dir / name)
        if not paths:
            for store in stores:
                store.close()
            known = _known_runs(runs_dir)
            hint = f"Runs in {runs_dir}/: {', '.join(known)}." if known else f"There are no runs in {runs_dir}/ yet."
            if "/" in name or "\\" in name:
                hint = f"Give the run's name (a folder of {runs_dir}/), not a path; --runs-dir sets that folder. " + hint
            raise PublishError(f"there is no run named {name!r} (no {path}). {hint} "
                               "Play it first with `python -m pokebench +run=NAME`.")
        for store_file in paths:
            try:
                stores.append(RunStore.open_existing(store_file))
            except (StoreError, sqlite3.Error, OSError) as err:  # a corrupt or unreadable file
                for store in stores:
                    store.close()
                raise PublishError(f"cannot open the store of run {name!r} at {store_file}: {err}") from None
            keys.append(name if store_file.name == "store.sqlite" else f"{name}/{store_file.stem}")

    games, decisions, errors, players = [], [], [], {}
    for name, store in zip(keys, stores):
        g = store.games()
        g["_store"] = name
        games.append(g)
        d = store.decisions()
        if not d.empty:
            d["_store"] = name
            decisions.append(d)
        e = store.harness_errors()
        e.insert(0, "store", name)
        errors.append(e)
        for gid, info in store.game_players().items():
            players[(name, gid)] = scrub(info)
    games_df = pd.concat(games, ignore_index=True) if games else pd.DataFrame(columns=GAME_COLUMNS)
    games_df = games_df.assign(_orig=games_df["game_id"])

    # one id per game across the merged runs
    if games_df["game_id"].duplicated().any():
        games_df["game_id"] = [safe_name(f"{r}.{g}") for r, g in zip(games_df["run"], games_df["_orig"])]
    dup = games_df[games_df["game_id"].duplicated(keep=False)]
    if not dup.empty:
        for store in stores:
            store.close()
        first = dup.iloc[0]
        where = sorted(set(dup.loc[dup["game_id"] == first["game_id"], "_store"]))
        raise PublishError(f"game {first['_orig']!r} of run {first['run']!r} is in more than one store "
                           f"({', '.join(where)}): a game must be counted once. Publish these runs separately, "
                           "or remove the copy from one store.")
    id_map = {(s, o): g for s, o, g in zip(games_df["_store"], games_df["_orig"], games_df["game_id"])}
    sources = {g: (s, o) for (s, o), g in id_map.items()}

    if decisions:
        dec = pd.concat(decisions, ignore_index=True)
        dec["game_id"] = [id_map.get((s, o)) for s, o in zip(dec["_store"], dec["game_id"])]
        dec = dec[dec["game_id"].notna()]
        run_of = dict(zip(games_df["game_id"], games_df["run"]))
        dec.insert(1, "run", dec["game_id"].map(run_of))
        dec = scrub_frame(dec.drop(columns="_store"))
        first = [c for c in ("game_id", "run", "side", "player", "idx", "turn", "action", "reason") if c in dec.columns]
        dec = dec[first + [c for c in dec.columns if c not in first]].reset_index(drop=True)
    else:
        dec = pd.DataFrame(columns=["game_id", "run", "side", "player", "idx", "turn"])

    games_out = games_df[list(GAME_COLUMNS)].reset_index(drop=True)
    for col in ("pair", "game", "turns"):
        games_out[col] = games_out[col].astype(int)
    return RunData(
        names=names, games=games_out, decisions=dec,
        errors=pd.concat(errors, ignore_index=True) if errors else pd.DataFrame(),
        players={id_map[k]: v for k, v in players.items() if k in id_map},
        _sources=sources, _stores=dict(zip(keys, stores)),
    )


def check_publishable(data: RunData) -> None:
    """Raise :class:`PublishError` when a named run has no finished games."""
    run_of_store = lambda key: key.split("/")[0]  # noqa: E731 -- a shard's store is NAME/shard-I-of-N
    per_store = pd.Series([run_of_store(key) for key, _ in data._sources.values()]).value_counts()
    empty = [n for n in data.names if per_store.get(n, 0) == 0]
    if not empty:
        return
    parts = []
    for name in empty:
        errs = data.errors[data.errors["store"].map(run_of_store) == name] if not data.errors.empty else data.errors
        if len(errs):
            causes = ", ".join(f"{c} ×{n}" for c, n in errs["cause"].value_counts().items())
            parts.append(f"run {name!r} has no finished games, only {len(errs)} harness error(s) ({causes}). "
                         f"Harness errors are never results: start the run again "
                         f"(`python -m pokebench +run={name}`) to play those games")
        else:
            parts.append(f"run {name!r} has no finished games yet. Play it first "
                         f"(`python -m pokebench +run={name}`)")
    also = " (or publish the other runs without it)" if len(empty) < len(data.names) else ""
    raise PublishError("; ".join(parts) + f", then publish{also}.")


# ---- figures --------------------------------------------------------------------------------

def _col(df: pd.DataFrame, name: str) -> pd.Series:
    if name in df.columns:
        return pd.to_numeric(df[name], errors="coerce")
    return pd.Series(np.nan, index=df.index, dtype=float)


def _flag(df: pd.DataFrame, name: str) -> pd.Series | None:
    if name not in df.columns:
        return None
    return df[name].map(lambda v: bool(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else False)


def per_player_figures(games: pd.DataFrame, decisions: pd.DataFrame | None) -> pd.DataFrame:
    """Per player: games, wins, ties, losses, win_rate and the LLM figures (method section 7).

    - ``answers``: saved LLM answers (decisions rows; re-asks and refused choices included);
    - ``cost_per_game``: cost of one side of one game = the player's total ``cost_usd`` over
      its finished games (NaN if an answer with usage has no cost);
    - ``output_tokens_per_decision``: output tokens per saved answer with usage (reasoning
      is already inside output and is not added again; input and cached input excluded);
    - ``seconds_per_decision``: mean ``latency_s``, request to answer;
    - ``reask_rate`` / ``random_pick_rate``: share of saved answers that were a re-ask /
      a random pick.

    Players without decisions (bots), and figures whose column is missing, are NaN.
    """
    long = pd.concat([
        pd.DataFrame({"player": games["p1"], "score": games["winner"].map({"p1": 1.0, "tie": 0.5, "p2": 0.0})}),
        pd.DataFrame({"player": games["p2"], "score": games["winner"].map({"p1": 0.0, "tie": 0.5, "p2": 1.0})}),
    ], ignore_index=True)
    out = long.groupby("player").agg(games=("score", "size"), wins=("score", lambda s: int((s == 1).sum())),
                                     ties=("score", lambda s: int((s == 0.5).sum())),
                                     losses=("score", lambda s: int((s == 0).sum())))
    out["win_rate"] = (out["wins"] + 0.5 * out["ties"]) / out["games"]
    for col in FIGURE_COLUMNS:
        out[col] = np.nan
    if decisions is not None and not decisions.empty and "player" in decisions.columns:
        d = decisions
        if "game_id" in d.columns and "game_id" in games.columns:
            d = d[d["game_id"].isin(set(games["game_id"]))]
        for player, rows in d.groupby("player"):
            if player not in out.index:
                continue
            cost, all_out = _col(rows, "cost_usd"), _col(rows, "output_tokens")  # refiner calls are spend too
            if "kind" in rows.columns:  # ...but not decisions (the Continual Harness's refine entries)
                rows = rows[rows["kind"].ne("refine")]
            out.loc[player, "answers"] = len(rows)
            out_tokens = _col(rows, "output_tokens")
            if "cost_usd" in rows.columns and cost.notna().any():
                # an answer with usage but no price makes the total unknown
                unknown = cost.isna() & all_out.notna()
                if not unknown.any():
                    out.loc[player, "cost_per_game"] = cost.sum() / out.loc[player, "games"]
            if out_tokens.notna().any():
                out.loc[player, "output_tokens_per_decision"] = out_tokens.sum() / out_tokens.notna().sum()
            latency = _col(rows, "latency_s")
            if latency.notna().any():
                out.loc[player, "seconds_per_decision"] = latency.mean()
            for name, col in (("reask", "reask_rate"), ("random_pick", "random_pick_rate")):
                flag = _flag(rows, name)
                if flag is not None:
                    out.loc[player, col] = flag.mean()
    out = out.reset_index().rename(columns={"index": "player"})
    for col in ("games", "wins", "ties", "losses"):
        out[col] = out[col].astype(int)
    return out


@dataclass
class Results:
    """What a site shows: ratings (ranked, with figures), head-to-head, games, decisions."""

    ratings: pd.DataFrame
    h2h: pd.DataFrame
    games: pd.DataFrame
    decisions: pd.DataFrame
    anchor: str
    errors: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def llm_players(self) -> list[str]:
        return [p for p, a in zip(self.ratings["player"], self.ratings["answers"]) if pd.notna(a)]


def compute_results(data: RunData, anchor: str = "max-damage", n_bootstrap: int = 200, seed: int = 0) -> Results:
    """Ratings with intervals, head-to-head and per-player figures of the merged runs."""
    check_publishable(data)
    games = data.games
    players = sorted(set(games["p1"]) | set(games["p2"]))
    if len(players) < 2:
        raise PublishError(f"only one player ({players[0]}) in these games: ratings need games between two "
                           "or more players.")
    if anchor not in players:
        raise PublishError(f"the anchor player {anchor!r} has no games here, so it cannot fix the rating scale. "
                           f"Players: {', '.join(players)}. Pass --anchor PLAYER (one of them).")
    try:
        ratings = fit_ratings(games, anchor=anchor, n_bootstrap=n_bootstrap, seed=seed)
        h2h = head_to_head(games)
    except RatingsError as err:
        raise PublishError(str(err).replace("Pass anchor=<one of them>.", "Pass --anchor PLAYER.")) from None
    figures = per_player_figures(games, data.decisions)
    ratings = ratings.merge(figures[["player", *FIGURE_COLUMNS]], on="player", how="left")
    ratings.insert(0, "rank", np.arange(1, len(ratings) + 1))
    return Results(ratings=ratings, h2h=h2h, games=games, decisions=data.decisions, anchor=anchor,
                   errors=data.errors)


# ---- writing --------------------------------------------------------------------------------

def _is_site(path: Path) -> bool:
    return (path / SITE_MARKER).is_file()


def _clean_stale_temps(out_dir: Path) -> None:
    """Remove temporary folders of earlier publishes of `out_dir` whose process is gone."""
    for tmp in out_dir.parent.glob(f".{out_dir.name}.tmp-*"):
        m = re.match(rf"\.{re.escape(out_dir.name)}\.tmp-(\d+)-", tmp.name)
        if not m:
            continue
        pid = int(m.group(1))
        try:
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
        if not alive and tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)


def _replace_dir(tmp: Path, out_dir: Path) -> None:
    """Move the finished `tmp` to `out_dir`, replacing an old site there."""
    if not out_dir.exists():
        os.replace(tmp, out_dir)
        return
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except BaseException:
        os.replace(old, out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def write_csvs(root: Path, results: Results) -> None:
    r = results.ratings
    r.to_csv(root / "ratings.csv", index=False)
    results.h2h.to_csv(root / "h2h.csv", index=False)
    results.games.to_csv(root / "games.csv", index=False)
    if not results.decisions.empty:
        results.decisions.to_csv(root / "decisions.csv", index=False)


def input_log_text(record: dict[str, Any]) -> str:
    """A game's Showdown input log as a file: the lines joined with newlines, one at the end."""
    return "\n".join(record.get("input_log") or []) + "\n"


def default_out_dir(names: Sequence[str]) -> Path:
    if len(names) != 1:
        raise PublishError("several runs need --out DIR: the folder of the merged site, "
                           "e.g. --out data/site/all.")
    return SITE_DIR / names[0]


def publish(names: Sequence[str], out_dir: Path | str | None = None, anchor: str = "max-damage",
            runs_dir: Path | str = RUNS_DIR, n_bootstrap: int = 200, seed: int = 0) -> Path:
    """Merge the runs, compute the results and write the site to `out_dir`; return its path.

    Everything is checked and computed before anything is written; the site is built in a
    temporary folder next to `out_dir` and moved into place when complete.
    """
    from pokebench.site import build as site
    from pokebench.site.harness_page import write_harness_page
    from pokebench.text import battle_text  # the HTML side

    names = list(dict.fromkeys(names))
    out = Path(out_dir) if out_dir is not None else default_out_dir(names)
    if out.exists() and not out.is_dir():
        raise PublishError(f"{out} exists and is not a folder; choose another --out.")
    if out.is_dir() and any(out.iterdir()) and not _is_site(out):
        raise PublishError(f"{out} exists and is not a PokéBench site; it is left as it is. "
                           "Choose another --out, or remove that folder.")
    with load_runs(names, runs_dir) as data:
        results = compute_results(data, anchor=anchor, n_bootstrap=n_bootstrap, seed=seed)
        try:  # the replays need Showdown's text templates: fail before writing anything
            battle_text.load_templates()
        except battle_text.BattleTextError as err:
            raise PublishError(str(err)) from None
        out.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale_temps(out)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            write_csvs(tmp, results)
            # the Continual Harness's gain, learning curve and versions, when a harness player played
            write_harness_tables(tmp, results.games, data.players, results.ratings,
                                 [Path(runs_dir) / name for name in names])
            (tmp / "inputlogs").mkdir()
            site.write_site(tmp, data, results)  # also writes inputlogs/<game_id>.log
            write_harness_page(tmp)  # harness.html, from the harness tables written above
            secrets = secret_env_values()
            if secrets:
                _redact_tree(tmp, secrets)
            (tmp / SITE_MARKER).write_text(json.dumps({"runs": names, "anchor": anchor}) + "\n")
            _replace_dir(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return out


# ---- reading a published site ---------------------------------------------------------------

def load_results(path: Path | str, anchor: str = "max-damage") -> Results:
    """Results of a published site folder (its CSVs), or of a run folder (``runs/NAME``,
    fitted with :func:`pokebench.results.ratings.fit_ratings`)."""
    path = Path(path)
    if (path / "ratings.csv").is_file():
        ratings = pd.read_csv(path / "ratings.csv")
        for col in FIGURE_COLUMNS:
            if col not in ratings.columns:
                ratings[col] = np.nan
        decisions = pd.read_csv(path / "decisions.csv") if (path / "decisions.csv").is_file() else pd.DataFrame()
        marker = path / SITE_MARKER
        meta = json.loads(marker.read_text()) if marker.is_file() else {}
        return Results(ratings=ratings, h2h=pd.read_csv(path / "h2h.csv"), games=pd.read_csv(path / "games.csv"),
                       decisions=decisions, anchor=meta.get("anchor", anchor))
    if run_stores(path):
        with load_runs([path.name], path.parent) as data:
            return compute_results(data, anchor=anchor)
    raise PublishError(f"{path} is neither a published site (no ratings.csv) nor a run folder (no store.sqlite).")


# ---- command line -----------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokebench.cli.publish",
        description="Merge runs and publish their ratings, head-to-head, games and replays as a static site.",
        epilog="Examples:\n  python -m pokebench.cli.publish bots-calibration\n"
               "  python -m pokebench.cli.publish run-a run-b --out data/site/all\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run names (folders of --runs-dir)")
    parser.add_argument("--out", type=Path, default=None,
                        help="site folder (default data/site/RUN for one run; required for several)")
    parser.add_argument("--anchor", default="max-damage", metavar="PLAYER",
                        help="the player rated 1000 (default: max-damage)")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="where the runs are (default: runs)")
    parser.add_argument("--bootstrap", type=int, default=200, metavar="N",
                        help="bootstrap samples for the 95%% intervals (default: 200)")
    args = parser.parse_args(argv)
    if args.bootstrap < 0:
        parser.error("--bootstrap must be 0 or more")
    try:
        out = publish(args.runs, args.out, anchor=args.anchor, runs_dir=args.runs_dir, n_bootstrap=args.bootstrap)
    except PublishError as err:
        print(f"publish: error: {err}", file=sys.stderr)
        print("publish: nothing was written.", file=sys.stderr)
        return 2
    print(f"Published {out}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
