"""How far should V be shifted by the matchup's skill difference? The weight of the skill shift, measured (issue 31).

    .venv/bin/python benchmarks/luck_skill_shift.py [--runs-dir /tmp/pb-luck/runs] [--run luck-ladder-fit]

V (pokebench/analysis/value.py) knows the position and not the players, so in a lopsided matchup the luck it
measures in positions the stronger player wins anyway is noise: over a whole ladder of bots the adjusted score had
*more* variance than the raw one in such matchups. The luck cache holds each game's luck with V's log-odds shifted
by each of ``SKILL_SHIFTS`` (times each turn's share of HP left); pokebench/analysis/luck_rows.py takes the game's
shift as ``SKILL_WEIGHT`` × the log-odds of side one's player's score in the *other* mirror pairs of the matchup.

For each weight this prints, over the run's mirror pairs (the luck as cached: ``luck_validation.py`` measures it
first, with ``--matchups all`` for a whole ladder): the pooled variance ratio raw / adjusted with a 95 % bootstrap
interval, the same over the matchups whose score is within 0.3 to 0.7 (those a rating needs most) and over the
others, and the mean of adjusted − raw (it must cover 0 at every weight). The weight is chosen on the fit's seeds
(``pokebench-luck-ladder-fit``) by the pooled ratio, and checked on held-out ones (``pokebench-luck-ladder``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from luck_validation import current_luck, mean_interval, pair_frame, ratio_interval  # benchmarks/: the script's folder, on sys.path
from pokebench.analysis.luck_rows import luck_rows
from pokebench.analysis.settings import SKILL_WEIGHT
from pokebench.results.loading import load_runs

WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)
CLOSE = (0.3, 0.7)


def luck_at(games: pd.DataFrame, entries: dict[str, dict], weight: float) -> pd.DataFrame:
    """luck.csv's rows of the games, each game's luck taken at its shift for this weight, with the turns' action
    luck summed (``action_p1``, which pair_frame reads)."""
    luck, turns = luck_rows(entries.values(), games, weight)
    return luck.merge(turns.groupby("uid")["action_luck"].sum().rename("action_p1"), on="uid", how="left")


def ratio(pairs: pd.DataFrame, rng: np.random.Generator) -> str:
    centred = pairs[["raw", "adjusted"]] - pairs.groupby("matchup")[["raw", "adjusted"]].transform("mean")
    raw, adjusted = centred["raw"].to_numpy(), centred["adjusted"].to_numpy()
    lo, hi = ratio_interval(raw, adjusted, rng)
    return f"{raw.var(ddof=1) / adjusted.var(ddof=1):5.3f} [{lo:4.2f}, {hi:4.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--run", default="luck-ladder-fit")
    parser.add_argument("--pairs", type=int, default=None,
                        help="only N mirror pairs of each matchup, from --first-pair on (an LLM run has fewer: the "
                             "shift is then estimated from fewer other pairs)")
    parser.add_argument("--first-pair", type=int, default=1)
    args = parser.parse_args()
    with load_runs([args.run], args.runs_dir) as data:
        games = data.games.copy()
    if args.pairs is not None:
        games = games[(games["pair"] >= args.first_pair) & (games["pair"] < args.first_pair + args.pairs)]
    entries = current_luck(args.runs_dir / args.run)
    games = games[games["uid"].astype(str).isin(entries)].reset_index(drop=True)
    print(f"{args.run}: {len(games)} games with their luck cached; shipped SKILL_WEIGHT = {SKILL_WEIGHT}")
    scores = pair_frame(games, luck_at(games, entries, 0.0)).groupby("matchup")["raw"].mean()
    close = scores[(scores >= CLOSE[0]) & (scores <= CLOSE[1])].index
    print(f"{len(scores)} matchups, {len(close)} of them close (score {CLOSE[0]} to {CLOSE[1]})")
    print(f"  {'weight':>6s}  {'pooled ratio [95 %]':21s}  {'close':21s}  {'lopsided':21s}  adjusted − raw")
    per_matchup = {}
    for weight in WEIGHTS:
        pairs = pair_frame(games, luck_at(games, entries, weight))
        rng = np.random.default_rng(0)
        near = pairs["matchup"].isin(close)
        print(f"  {weight:6.1f}  {ratio(pairs, rng):21s}  {ratio(pairs[near], rng):21s}  "
              f"{ratio(pairs[~near], rng):21s}  {mean_interval((pairs['adjusted'] - pairs['raw']).to_numpy())}")
        per_matchup[weight] = pairs.groupby("matchup").apply(lambda g: g["raw"].var() / g["adjusted"].var())
    table = pd.DataFrame(per_matchup).assign(score=scores)
    print("\nper matchup, raw / adjusted at each weight:")
    print(table[["score", *WEIGHTS]].round(2).to_string())


if __name__ == "__main__":
    main()
