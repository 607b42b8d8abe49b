"""Is the luck-adjusted score unbiased, and how many games does it save? (issue 31's proof, on bot games)

    .venv/bin/python benchmarks/luck_validation.py [--runs-dir /tmp/pb-luck/runs] [--run luck-eval]
                                                  [--pairs 50] [--workers 2] [--fresh]

Plays (or reuses) run `--run` on the seed text ``pokebench-luck-eval`` (its own seeds: the value function is
fitted on ``pokebench-luck-fit``, benchmarks/luck_value_fit.py) with `--pairs` mirror pairs of each matchup,
measures the luck of every game (``pokebench analyse --no-quality``; `--fresh` empties the luck cache first,
for the cost), then prints:

1. *unbiased*: per matchup, the mean of adjusted − raw score (the first player's) over mirror pairs with a
   95 % interval (it must cover 0); each player's and each side's mean luck per game with its interval; the
   bias of valuing "what happened" by the next real position itself instead of the engine outcome nearest it;
2. *efficient*: per matchup and pooled, the variance over mirror pairs of the raw and the adjusted score,
   their ratio with a bootstrap interval over pairs, and with the start-of-game term (V at turn 1 − ½) also
   subtracted; games for a ±50 Elo interval (95 %) at the matchup's score, raw and adjusted; the share of the
   luck from the damage rolls; corr(score, luck);
3. *cost*: CPU seconds per turn of the luck (the analysis's workers), the run-to-run spread (the luck is a
   fixed function of the game: recomputed, it must be identical).
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from pokebench.analysis.analyse import analyse_runs
from pokebench.analysis.cache import append_entries, game_key, luck_path, read_entries
from pokebench.analysis.luck import game_luck
from pokebench.analysis.luck_rows import read_luck
from pokebench.analysis.value import load_value_model
from pokebench.engine.from_showdown import game_positions
from pokebench.results.loading import load_runs

SEED_TEXT = "pokebench-luck-eval"
MATCHUPS = "[[noisy-30,max-damage],[noisy-10,max-damage],[max-damage,heuristic],[noisy-10,heuristic]]"
Z = 1.96
BOOTSTRAP = 2000


def play(runs_dir: Path, run: str, pairs: int) -> None:
    subprocess.run([sys.executable, "-m", "pokebench", "+run=ladder", f"name={run}", f"seed_text={SEED_TEXT}",
                    f"pairs={pairs}", "publish=false", f"matchups={MATCHUPS}"],
                   cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)


def pair_frame(games: pd.DataFrame, luck: pd.DataFrame) -> pd.DataFrame:
    """Per mirror pair: the first-named player's mean raw, adjusted and start-adjusted score over its two games."""
    frame = games.merge(luck[["uid", "score_p1", "luck_p1", "adjusted_p1", "start_p1"]], on="uid")
    first = frame["matchup"].str.split("-vs-").str[0]
    mine = frame["p1"] == first
    frame["raw"] = np.where(mine, frame["score_p1"], 1 - frame["score_p1"])
    frame["adjusted"] = np.where(mine, frame["adjusted_p1"], 1 - frame["adjusted_p1"])
    start = frame["start_p1"].fillna(0.0)
    frame["adjusted_start"] = frame["adjusted"] - np.where(mine, start, -start)
    return frame.groupby(["matchup", "pair"], as_index=False)[["raw", "adjusted", "adjusted_start"]].mean()


def ratio_interval(raw: np.ndarray, adjusted: np.ndarray, rng: np.random.Generator) -> tuple[float, float]:
    picks = rng.integers(0, len(raw), size=(BOOTSTRAP, len(raw)))
    ratios = raw[picks].var(axis=1, ddof=1) / np.maximum(adjusted[picks].var(axis=1, ddof=1), 1e-12)
    return float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))


def games_for(variance: float, score: float, half_width_elo: float = 50.0) -> float:
    """Games (two per pair) for a 95 % interval of ±half_width_elo at this score, from the variance over pairs."""
    p = min(max(score, 0.05), 0.95)
    half = half_width_elo * math.log(10) * p * (1 - p) / 400  # Elo → score near p
    return 2 * Z ** 2 * variance / half ** 2


def mean_interval(values: np.ndarray) -> str:
    half = Z * values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return f"{values.mean():+.4f} ± {half:.4f}"


def efficiency(pairs: pd.DataFrame) -> None:
    rng = np.random.default_rng(0)
    print("\nefficient: variance over mirror pairs of the first player's pair score")
    print(f"  {'matchup':26s} pairs  score  var raw  var adj  ratio [95% bootstrap]  +start  games ±50 Elo raw / adj")
    groups = [(m, g) for m, g in pairs.groupby("matchup")]
    centred = pairs.copy()
    for column in ("raw", "adjusted", "adjusted_start"):  # pooled: each matchup around its own mean
        centred[column] = pairs[column] - pairs.groupby("matchup")[column].transform("mean")
    for name, group in [*groups, ("pooled (centred per matchup)", centred)]:
        raw, adj, start = (group[c].to_numpy() for c in ("raw", "adjusted", "adjusted_start"))
        var_raw, var_adj, var_start = raw.var(ddof=1), adj.var(ddof=1), start.var(ddof=1)
        lo, hi = ratio_interval(raw, adj, rng)
        score = pairs["raw"].mean() if name.startswith("pooled") else raw.mean()
        print(f"  {name:26s} {len(group):5d}  {score:5.3f}  {var_raw:7.4f}  {var_adj:7.4f}  {var_raw / var_adj:5.2f} "
              f"[{lo:4.2f}, {hi:4.2f}]      {var_raw / var_start:5.2f}  "
              f"{games_for(var_raw, score):7.0f} / {games_for(var_adj, score):6.0f}")


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
    print("turns by event (count, share of squared luck):")
    total = valued["luck_p1"].pow(2).sum()
    for event, group in valued.groupby(valued["event"].fillna("")):
        print(f"  {event or '(no luck)':18s} {len(group):6d}  {group['luck_p1'].pow(2).sum() / total:.3f}")
    errors = turns.loc[turns["error"].notna(), "error"].str.slice(0, 80).value_counts().head(5)
    for text, count in errors.items():
        print(f"  failed {count:4d}: {text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--run", default="luck-eval")
    parser.add_argument("--pairs", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--fresh", action="store_true", help="empty the run's luck cache first (for the cost)")
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    play(args.runs_dir, args.run, args.pairs)
    if args.fresh:
        luck_path(args.runs_dir / args.run).unlink(missing_ok=True)
    started, children = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    report = analyse_runs([args.run], args.runs_dir, workers=args.workers, progress=False, quality=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (children.ru_utime + children.ru_stime)
    wall = time.perf_counter() - started
    if report.luck_games:
        print(f"analyse: {report.luck_games} games, {report.luck_turns} turns valued in {wall:.0f} s wall with "
              f"{args.workers} workers, {cpu:.0f} CPU s in the workers (the replay by positions.js included, its "
              f"Node process not counted): {cpu / report.luck_turns * 1000:.1f} ms CPU per turn")
    with load_runs([args.run], args.runs_dir) as data:
        games = data.games.copy()
        luck, _ = read_luck(data.run_dirs, games)
        logs = [(str(u), list(data.record(str(u))["input_log"])) for u in games["uid"]]
    cached = {e["uid"]: e for e in read_entries(luck_path(args.runs_dir / args.run), key=game_key)}
    model = load_value_model()
    replay_cpu = luck_cpu = 0.0
    entries: dict[str, dict] = {}
    entries.update({uid: e for uid, e in cached.items() if all("v_real" in t for t in e["turns"])})
    logs = [(uid, log) for uid, log in logs if uid not in entries]  # older cache lines lack v_real: recompute
    for start in range(0, len(logs), 100):  # one simulator process per 100 games
        began = time.process_time()
        replayed = game_positions(logs[start:start + 100])
        replay_cpu += time.process_time() - began
        began = time.process_time()
        entries.update({g.id: game_luck(g, model) for g in replayed})
        luck_cpu += time.process_time() - began
    redone = {uid for uid, _ in logs}
    append_entries(luck_path(args.runs_dir / args.run),  # the cache's lines completed (same key, same luck)
                   [{**cached[uid], **entries[uid]} for uid in redone if uid in cached])
    count = sum(len(entries[uid]["turns"]) for uid in redone)
    same = all([t["luck_p1"] for t in entries[uid]["turns"]] == [t["luck_p1"] for t in cached[uid]["turns"]]
               for uid in redone if uid in cached)
    if count:
        print(f"cost in this process, {len(redone)} games, {count} turns: {luck_cpu / count * 1000:.1f} ms CPU per turn "
              f"for the luck itself, {replay_cpu / count * 1000:.1f} ms more for the replay's Python side (Node's "
              f"CPU not counted); recomputed, every turn's luck identical to the cached: {same}")
    turns = pd.DataFrame([{"uid": uid, **t} for uid, e in entries.items() for t in e["turns"]])
    detail(luck, turns)
    pairs = pair_frame(games, luck)
    unbiased(games, luck, pairs, turns)
    efficiency(pairs)


if __name__ == "__main__":
    main()
