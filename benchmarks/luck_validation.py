"""Is the luck-adjusted score unbiased, and how many games does it save? (issue 31's proof, on bot games)

    .venv/bin/python benchmarks/luck_validation.py [--runs-dir /tmp/pb-luck/runs] [--run luck-eval]
                                                  [--pairs 50] [--workers 2] [--fresh]

Plays (or reuses) run `--run` on the seed text ``pokebench-luck-eval`` (its own seeds: the value function is
fitted on ``pokebench-luck-fit``, benchmarks/luck_value_fit.py) with `--pairs` mirror pairs of each of `--matchups`,
measures the luck of every game not yet in the run's luck cache (in `--workers` processes over chunks of 50 games, into the cache that
``pokebench analyse`` reads; `--fresh` empties it first, for the cost), then prints:

1. *unbiased*: per matchup, the mean of adjusted − raw score (the first player's) over mirror pairs with a
   95 % interval (it must cover 0); each player's and each side's mean luck per game with its interval; the
   bias of valuing "what happened" by the next real position itself instead of the engine outcome nearest it;
2. *efficient*: per matchup and pooled, the variance over mirror pairs of the raw and the adjusted score,
   their ratio with a bootstrap interval over pairs, and with the start-of-game term (V at turn 1 − ½) also
   subtracted; games for a ±50 Elo interval (95 %) at the matchup's score, raw and adjusted, and games for the
   pair's mean score to be on the right side of ½ 95 % of the time (normal approximation); the share of the
   luck from the damage rolls; corr(score, luck); and, measured but not shipped, the ratio with a cross-fitted
   weight on the luck per matchup (cov(raw, luck) / var(luck) of the matchup's other pairs);
3. *cost*: CPU seconds per turn of the luck (the analysis's workers), the run-to-run spread (the luck is a
   fixed function of the game: recomputed, it must be identical).
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pokebench.analysis.analyse import analyse_runs, recorded_policies
from pokebench.analysis.cache import append_entries, game_key, luck_path, read_entries
from pokebench.analysis.luck import game_luck
from pokebench.analysis.luck_rows import cached_entries, luck_rows, luck_settings
from pokebench.analysis.settings import ACTION_WEIGHT, engine_version
from pokebench.analysis.value import load_value_model
from pokebench.engine.errors import hold_panic_output
from pokebench.engine.from_showdown import game_positions
from pokebench.results.loading import load_runs
from pokebench.seeds import ROLLS

SEED_TEXT = "pokebench-luck-eval"
MATCHUPS = "[[noisy-30,max-damage],[noisy-10,max-damage],[max-damage,heuristic],[noisy-10,heuristic]]"
Z = 1.96
BOOTSTRAP = 2000


def play(runs_dir: Path, run: str, pairs: int, matchups: str = MATCHUPS, seed_text: str = SEED_TEXT,
         rolls: str = "stock") -> None:
    subprocess.run([sys.executable, "-m", "pokebench", "+run=ladder", f"name={run}", f"seed_text={seed_text}",
                    f"pairs={pairs}", "publish=false", f"matchups={matchups}", f"rolls={rolls}"],
                   cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)


def pair_frame(games: pd.DataFrame, luck: pd.DataFrame) -> pd.DataFrame:
    """Per mirror pair: the first-named player's mean raw, adjusted and start-adjusted score over its two games,
    and (``chance``) the score adjusted for the chance alone: without the action luck of the bots' own draws
    (luck's ``action_p1``, the sum of its turns' action_luck; 0 when absent). The turns' action luck is V's own,
    unshifted: where a game's luck has a skill shift (luck.csv's skill_shift_p1) the chance alone is approximate."""
    luck = luck if "action_p1" in luck.columns else luck.assign(action_p1=0.0)
    frame = games.merge(luck[["uid", "score_p1", "luck_p1", "adjusted_p1", "start_p1", "action_p1"]], on="uid")
    first = frame["matchup"].str.split("-vs-").str[0]
    mine = frame["p1"] == first
    frame["raw"] = np.where(mine, frame["score_p1"], 1 - frame["score_p1"])
    frame["adjusted"] = np.where(mine, frame["adjusted_p1"], 1 - frame["adjusted_p1"])
    start = frame["start_p1"].fillna(0.0)
    frame["adjusted_start"] = frame["adjusted"] - np.where(mine, start, -start)
    frame["chance"] = frame["adjusted"] + np.where(mine, frame["action_p1"], -frame["action_p1"])
    complete = frame.groupby(["matchup", "pair"])["uid"].transform("size") == 2  # both games of the pair valued
    return frame[complete].groupby(["matchup", "pair"], as_index=False)[
        ["raw", "adjusted", "adjusted_start", "chance"]].mean()


def ratio_interval(raw: np.ndarray, adjusted: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    picks = rng.integers(0, len(raw), size=(BOOTSTRAP, len(raw)))
    ratios = raw[picks].var(axis=1, ddof=1) / np.maximum(adjusted[picks].var(axis=1, ddof=1), 1e-12)
    return float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))


def games_for(variance: float, score: float, half_width_elo: float = 50.0) -> float:
    """Games (two per pair) for a 95 % interval of ±half_width_elo at this score, from the variance over pairs."""
    p = min(max(score, 0.05), 0.95)
    half = half_width_elo * math.log(10) * p * (1 - p) / 400  # Elo → score near p
    return 2 * Z ** 2 * variance / half ** 2


def games_to_order(variance: float, score: float) -> float:
    """Games (two per pair) for the pair's mean score to fall on the right side of ½ 95 % of the time."""
    return 2 * 1.645 ** 2 * variance / max(abs(score - 0.5), 1e-9) ** 2


def mean_interval(values: np.ndarray) -> str:
    half = Z * values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():+.4f} ± {half:.4f}"


def efficiency(pairs: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    print("\nefficient: variance over mirror pairs of the first player's pair score")
    print(f"  {'matchup':26s} pairs  score  var raw  var adj  ratio [95% bootstrap]  +start  chance alone  "
          "games ±50 Elo raw / adj  games to order 95% raw / adj")
    groups = [(m, g) for m, g in pairs.groupby("matchup")]
    centred = pairs.copy()
    for column in ("raw", "adjusted", "adjusted_start", "chance"):  # pooled: each matchup around its own mean
        centred[column] = pairs[column] - pairs.groupby("matchup")[column].transform("mean")
    for name, group in [*groups, ("pooled (centred per matchup)", centred)]:
        raw, adj, start, chance = (group[c].to_numpy() for c in ("raw", "adjusted", "adjusted_start", "chance"))
        var_raw, var_adj, var_start = raw.var(ddof=1), adj.var(ddof=1), start.var(ddof=1)
        lo, hi = ratio_interval(raw, adj, rng)
        score = pairs["raw"].mean() if name.startswith("pooled") else raw.mean()
        print(f"  {name:26s} {len(group):5d}  {score:5.3f}  {var_raw:7.4f}  {var_adj:7.4f}  {var_raw / var_adj:5.2f} "
              f"[{lo:4.2f}, {hi:4.2f}]      {var_raw / var_start:5.2f}  {var_raw / chance.var(ddof=1):12.2f}  "
              f"{games_for(var_raw, score):7.0f} / {games_for(var_adj, score):6.0f}"
              + ("" if name.startswith("pooled") else
                 f"  {games_to_order(var_raw, score):11.0f} / {games_to_order(var_adj, score):5.0f}"))


def leave_one_out_weight(luck: np.ndarray, raw: np.ndarray) -> np.ndarray:
    """Per pair: the least-variance weight of the luck, cov(raw, luck) / var(luck), from the *other* pairs of the
    matchup, clipped to [0, 1.5]. It does not depend on the pair's own games, so score − weight × luck keeps the
    score's expectation (a cross-fitted control variate)."""
    others = len(luck) - 1
    mean_luck, mean_raw = (luck.sum() - luck) / others, (raw.sum() - raw) / others
    cov = ((luck * raw).sum() - luck * raw) / others - mean_luck * mean_raw
    var = ((luck * luck).sum() - luck * luck) / others - mean_luck ** 2
    return np.clip(cov / np.maximum(var, 1e-12), 0.0, 1.5)


def cross_fitted(pairs: pd.DataFrame) -> None:
    """Not shipped, measured: the luck times a per-matchup weight from the other pairs (:func:`leave_one_out_weight`)
    instead of the fixed 1, which lets a matchup where the luck adds variance (a lopsided one) take little of it."""
    frames = []
    for _, group in pairs.groupby("matchup"):
        luck = (group["raw"] - group["adjusted"]).to_numpy()
        weight = leave_one_out_weight(luck, group["raw"].to_numpy())
        frames.append(group.assign(weight=weight, cross_fitted=group["raw"] - weight * luck))
    fitted = pd.concat(frames)
    print("\ncross-fitted weight (not shipped): per matchup, the luck times cov(raw, luck) / var(luck) of the other "
          "pairs, in [0, 1.5]")
    print(f"  {'matchup':26s} mean weight  ratio fixed  ratio cross-fitted  adjusted − raw")
    for name, group in fitted.groupby("matchup"):
        raw, fixed, cross = (group[c].var(ddof=1) for c in ("raw", "adjusted", "cross_fitted"))
        fixed, cross = (raw / v if v > 0 else float("nan") for v in (fixed, cross))
        print(f"  {name:26s} {group['weight'].mean():11.2f}  {fixed:11.2f}  {cross:18.2f}  "
              f"{mean_interval((group['cross_fitted'] - group['raw']).to_numpy())}")
    columns = ["raw", "adjusted", "cross_fitted"]
    centred = fitted[columns] - fitted.groupby("matchup")[columns].transform("mean")
    raw = centred["raw"].to_numpy()
    rng = np.random.default_rng(0)
    for column in ("adjusted", "cross_fitted"):
        lo, hi = ratio_interval(raw, centred[column].to_numpy(), rng)
        print(f"  pooled, {column:12s}: ratio {raw.var(ddof=1) / centred[column].var(ddof=1):.3f} [{lo:.2f}, {hi:.2f}]")


def action_weight(games: pd.DataFrame, luck: pd.DataFrame) -> None:
    """The weight of the action term (the bots' own draws) with the least pooled variance over these games' mirror
    pairs, against the shipped one (settings.ACTION_WEIGHT): chosen on the fit's seeds, checked on held-out ones."""
    if not ACTION_WEIGHT or not luck["action_p1"].abs().sum():
        return
    drawn = luck["action_p1"] / ACTION_WEIGHT  # the term at weight 1
    print("\naction weight: pooled variance ratio over mirror pairs, raw / adjusted, at each weight of the action term")
    best = (0.0, 0.0)
    line = []
    for weight in np.round(np.arange(0.0, 1.51, 0.1), 2):
        reweighed = luck.assign(luck_p1=luck["luck_p1"] + (weight - ACTION_WEIGHT) * drawn)
        pairs = pair_frame(games, reweighed.assign(adjusted_p1=reweighed["score_p1"] - reweighed["luck_p1"],
                                                   action_p1=0.0))
        centred = pairs[["raw", "adjusted"]] - pairs.groupby("matchup")[["raw", "adjusted"]].transform("mean")
        ratio = centred["raw"].var() / centred["adjusted"].var()
        line.append(f"{weight:.1f}: {ratio:.3f}")
        best = max(best, (ratio, weight))
    print("  " + ", ".join(line))
    print(f"  least variance here at weight {best[1]:.1f} (ratio {best[0]:.3f}); shipped ACTION_WEIGHT = {ACTION_WEIGHT}")


def unbiased(games: pd.DataFrame, luck: pd.DataFrame, pairs: pd.DataFrame, turns: pd.DataFrame) -> None:
    print("\nunbiased: adjusted − raw score of the first player, mean over mirror pairs (must cover 0)")
    for name, group in pairs.groupby("matchup"):
        print(f"  {name:26s} {mean_interval((group['adjusted'] - group['raw']).to_numpy())}")
    frame = games.merge(luck, on="uid", suffixes=("", "_l"))
    print("mean luck per game, by side one / side two:")
    print(f"  side one {mean_interval(frame['luck_p1'].to_numpy())}   (side two: the opposite)")
    print("mean luck per game, by player (from its side):")
    for player in sorted(set(frame["p1"]) | set(frame["p2"])):
        mine = np.concatenate([frame.loc[frame["p1"] == player, "luck_p1"], -frame.loc[frame["p2"] == player, "luck_p1"]])
        print(f"  {player:12s} {mean_interval(mine)}  ({len(mine)} games)")
    valued = turns[turns["error"].isna()]
    alternative = (valued["v_real"] - valued["v_after"]).groupby(valued["uid"]).sum()
    print(f"'what happened' = the next real position itself instead of the nearest outcome: extra side-one luck "
          f"per game {mean_interval(alternative.to_numpy())}")
    real = (valued["v_real"] - valued["expected"]).groupby(valued["uid"]).sum()
    joined = luck.set_index("uid").join(real.rename("luck_real"))
    print(f"  var(raw − luck) per game: nearest outcome {(joined['score_p1'] - joined['luck_p1']).var():.4f}, "
          f"real position {(joined['score_p1'] - joined['luck_real']).var():.4f}, raw {joined['score_p1'].var():.4f}")


def detail(luck: pd.DataFrame, turns: pd.DataFrame) -> None:
    valued = turns[turns["error"].isna()]
    print(f"\n{len(luck)} games, {len(turns)} move turns ({len(valued)} valued, {len(turns) - len(valued)} failed; "
          f"games with an error: {luck['error'].notna().sum()})")
    print(f"corr(score, luck) per game {np.corrcoef(luck['score_p1'], luck['luck_p1'])[0, 1]:.3f}; "
          f"SD of a game's luck {luck['luck_p1'].std():.3f}")
    rolls = valued["roll_luck"].pow(2).sum() / valued["luck_p1"].pow(2).sum()
    print(f"share of the sum of squared turn luck from damage rolls: {rolls:.3f}")
    if "action_luck" in valued.columns:
        drawn = valued["action_luck"].pow(2).sum() / valued["luck_p1"].pow(2).sum()
        print(f"share of the sum of squared turn luck from the bots' own draws (action luck): {drawn:.3f}; "
              f"turns with action luck: {(valued['action_luck'] != 0).sum()}")
    print("turns by event (count, share of squared luck):")
    total = valued["luck_p1"].pow(2).sum()
    for event, group in valued.groupby(valued["event"].fillna("")):
        print(f"  {event or '(no luck)':18s} {len(group):6d}  {group['luck_p1'].pow(2).sum() / total:.3f}")
    errors = turns.loc[turns["error"].notna(), "error"].str.slice(0, 80).value_counts().head(5)
    for text, count in errors.items():
        print(f"  failed {count:4d}: {text}")


def _chunk(games: list[tuple[str, list[str], dict | None]]) -> tuple[dict[str, dict], float, float]:
    """The luck of a chunk of games (uid, input log, recorded policies) replayed by one simulator process; the CPU
    seconds of the replay's Python side and of the luck."""
    hold_panic_output()  # a worker: an engine panic is its turn's error, not a dump in the output
    started = time.process_time()
    replayed = game_positions([(uid, log) for uid, log, _ in games])
    replay = time.process_time() - started
    model = load_value_model()
    policies = {uid: policy for uid, _, policy in games}
    started = time.process_time()
    out = {game.id: game_luck(game, model, policies[game.id]) for game in replayed}
    return out, replay, time.process_time() - started


def measure(run_dir: Path, games: pd.DataFrame, logs: list[tuple[str, list[str], dict | None]], workers: int) -> None:
    """The luck of the games, in `workers` processes over chunks of 50 games (one simulator process per chunk,
    not per game as ``pokebench analyse`` does), appended to the run's luck cache; prints the cost."""
    ids = games.set_index("uid")["game_id"].to_dict()
    started = time.perf_counter()
    replay = luck = 0.0
    turns = 0
    chunks = [logs[i:i + 50] for i in range(0, len(logs), 50)]
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for out, replay_cpu, luck_cpu in pool.imap_unordered(_chunk, chunks):
            append_entries(luck_path(run_dir), [{**entry, "uid": uid, "run": run_dir.name, "game_id": ids[uid],
                                                 "engine": engine_version(), "settings": luck_settings()}
                                                for uid, entry in out.items()])
            replay, luck = replay + replay_cpu, luck + luck_cpu
            turns += sum(len(e["turns"]) for e in out.values())
    print(f"cost: {len(logs)} games, {turns} turns in {time.perf_counter() - started:.0f} s wall with {workers} "
          f"workers: {luck / turns * 1000:.1f} ms CPU per turn for the luck itself, {replay / turns * 1000:.1f} ms "
          f"for the replay's Python side (the simulator's Node process not counted)")


def stored(runs_dir: Path, run: str) -> tuple[pd.DataFrame, dict[str, tuple[list[str], dict | None]]]:
    """The run's games (games.csv's frame) and by uid each one's input log and its bots' recorded policies."""
    with load_runs([run], runs_dir) as data:
        games = data.games.copy()
        return games, {str(u): (list(data.record(str(u))["input_log"]), recorded_policies(data.players.get(str(u))))
                       for u in games["uid"]}


def value_missing(runs_dir: Path, run: str, games: pd.DataFrame, logs: dict[str, tuple[list[str], dict | None]],
                  workers: int) -> None:
    """Measure (:func:`measure`) the luck of the games not yet in the run's luck cache."""
    done = current_luck(runs_dir / run, required=False)
    missing = [(uid, log, policies) for uid, (log, policies) in logs.items() if uid not in done]
    if missing:
        measure(runs_dir / run, games, missing, workers)


def current_luck(run_dir: Path, required: bool = True) -> dict[str, dict[str, Any]]:
    """The run's cached luck at the current settings (engine, V, luck version), by game uid. None there (no analysis
    yet, or a cache of an earlier luck version or another V) and `required`: stops, saying what the cache holds and
    how to value it."""
    entries = {e["uid"]: e for e in cached_entries([run_dir])}
    if required and not entries:
        held = Counter(f"{e.get('settings')} ({e.get('engine')})" for e in read_entries(luck_path(run_dir), key=game_key))
        found = "; ".join(f"{n} games at {settings}" for settings, n in held.items()) or "nothing"
        raise SystemExit(f"{run_dir.name}: no game's luck is cached at the current settings, {luck_settings()} "
                         f"({engine_version()}); its cache holds {found}. Value it first (the games are kept): "
                         f".venv/bin/python -m pokebench analyse {run_dir.name} --runs-dir {run_dir.parent} --no-quality")
    return entries


def cached_luck(runs_dir: Path, run: str, games: pd.DataFrame) -> pd.DataFrame:
    """luck.csv's rows of the games, from the run's cache (:func:`current_luck`)."""
    return luck_rows(current_luck(runs_dir / run).values(), games)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--run", default="luck-eval")
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--matchups", default=MATCHUPS,
                        help=f"the ladder's players to play (default {MATCHUPS}; e.g. [[search-500,max-damage]] "
                             "under another --run)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed-text", default=SEED_TEXT,
                        help=f"the seeds the run is played on (default {SEED_TEXT}, held out; pokebench-luck-fit: the "
                             "seeds the shipped value function and action weight are chosen on)")
    parser.add_argument("--rolls", choices=ROLLS, default="stock",
                        help="how the battles draw their random numbers (the run's `rolls`; docs/method.md)")
    parser.add_argument("--fresh", action="store_true", help="empty the run's luck cache first (for the cost)")
    parser.add_argument("--figures-only", action="store_true",
                        help="value nothing: the figures of the games whose luck is cached (whole pairs only)")
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    if not args.figures_only:
        play(args.runs_dir, args.run, args.pairs, args.matchups, args.seed_text, args.rolls)
    if args.fresh:
        luck_path(args.runs_dir / args.run).unlink(missing_ok=True)
    games, logs = stored(args.runs_dir, args.run)
    if not args.figures_only:
        value_missing(args.runs_dir, args.run, games, logs, args.workers)
        report = analyse_runs([args.run], args.runs_dir, workers=args.workers, progress=False, quality=False)
        print(f"pokebench analyse --no-quality afterwards: {report.luck_games} games valued (0: the cache was complete)")
    luck = cached_luck(args.runs_dir, args.run, games)
    entries = current_luck(args.runs_dir / args.run)
    sample = [(uid, log) for uid, (log, _) in logs.items() if uid in entries][:10]
    again = {g.id: game_luck(g, load_value_model(), logs[g.id][1]) for g in game_positions(sample)}
    same = all([t["luck_p1"] for t in again[uid]["turns"]] == [t["luck_p1"] for t in entries[uid]["turns"]]
               for uid in again)
    print(f"run-to-run: 10 games valued again, every turn's luck identical: {same}")
    turns = pd.DataFrame([{"uid": uid, **t} for uid, e in entries.items() for t in e["turns"]])
    luck = luck.merge(turns.groupby("uid")["action_luck"].sum().rename("action_p1"), on="uid", how="left")
    detail(luck, turns)
    pairs = pair_frame(games, luck)
    unbiased(games, luck, pairs, turns)
    efficiency(pairs)
    cross_fitted(pairs)
    action_weight(games, luck)


if __name__ == "__main__":
    main()
