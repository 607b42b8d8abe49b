"""Does a player's result on a deal say anything about another player's result on it against the same opponent?

    .venv/bin/python benchmarks/common_opponents.py --runs-dir /tmp/pb-luck/runs --run luck-ladder [--run ...]

Every matchup of a run plays the same mirror pairs: pair k has the same teams and battle seed in all of them
(:mod:`pokebench.seeds`). So a cheap bot's pair score against opponent X on pair k could serve as a control
variate for a costly player's score against X on the same pair: the player's score − β (the bot's score − the
bot's mean score against X over many more deals), unbiased for a fixed β, removing a share ρ² of the variance,
where ρ is the correlation over pairs of the two scores. Only as much as the deal itself (its teams and, with
``rolls=duplicate``, its rolls) moves the results of different players against X can it help.

For each run and each opponent X, this prints ρ between every two other players' pair scores against X (raw,
and luck-adjusted with the shipped adjustment: the luck cache of ``benchmarks/luck_validation.py`` must be
there), their mean and largest (the largest of many is mostly noise: one ρ over n pairs has a standard error of about
1/√n), and over all opponents the mean with a 95 % bootstrap interval over the pairs (each sample draws pair
indices, the same in every matchup) and the variance ratio 1 / (1 − ρ²) that the mean ρ, and the best
opponent's mean ρ, would give.
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import pandas as pd

from duplicate_rolls import Run
from luck_validation import BOOTSTRAP

SCORES = ("raw", "adjusted")


def scores_against(pairs: pd.DataFrame) -> pd.DataFrame:
    """Each player's pair scores against each opponent: columns opponent, player, pair, raw, adjusted."""
    pairs = pairs.reset_index()
    first, second = (pairs["matchup"].str.split("-vs-").str[i] for i in (0, 1))
    mine = pairs.assign(player=first, opponent=second)
    theirs = pairs.assign(player=second, opponent=first, **{s: 1 - pairs[s] for s in SCORES})
    return pd.concat([mine, theirs])[["opponent", "player", "pair", *SCORES]]


def tables(scores: pd.DataFrame, column: str) -> dict[str, np.ndarray]:
    """Per opponent, the pair × player table of `column` against it (the pairs every player completed)."""
    return {opponent: group.pivot_table(index="pair", columns="player", values=column).dropna().to_numpy()
            for opponent, group in scores.groupby("opponent")}


def correlations(by_opponent: dict[str, np.ndarray], picks: np.ndarray | None = None) -> list[tuple[str, float]]:
    """(opponent, ρ) for every two players with a varying score against that opponent (:func:`tables`); `picks`
    resamples the pair indices (rows of each table)."""
    found = []
    for opponent, table in by_opponent.items():
        if picks is not None:
            table = table[picks % len(table)]
        table = table[:, table.std(axis=0) > 0]
        if table.shape[1] > 1:
            matrix = np.corrcoef(table, rowvar=False)
            found += [(opponent, matrix[i, j]) for i, j in itertools.combinations(range(table.shape[1]), 2)]
    return found


def report(name: str, scores: pd.DataFrame, rng: np.random.Generator) -> None:
    players = scores["player"].nunique()
    pairs = scores.groupby(["opponent", "player"]).size().min()
    print(f"\n{name}: {players} players, {pairs} pairs per matchup at least")
    for column in SCORES:
        pivots = tables(scores, column)  # pivoted once; the bootstrap resamples their rows
        found = pd.DataFrame(correlations(pivots), columns=["opponent", "rho"])
        by_opponent = found.groupby("opponent")["rho"].agg(["mean", "max", "size"])
        print(f"  {column}: ρ between two players' pair scores against the same opponent, per opponent (mean / largest"
              " / player pairs)")
        for opponent, row in by_opponent.iterrows():
            print(f"    {opponent:14s} {row['mean']:+.3f} / {row['max']:+.3f} / {row['size']:.0f}")
        samples = [np.mean([rho for _, rho in correlations(pivots, rng.integers(0, pairs, pairs))])
                   for _ in range(BOOTSTRAP // 5)]
        mean, best = found["rho"].mean(), by_opponent["mean"].max()
        print(f"    all: mean ρ {mean:+.3f} [{np.percentile(samples, 2.5):+.3f}, {np.percentile(samples, 97.5):+.3f}]"
              f" over {len(found)} player pairs (one ρ over {pairs} pairs: standard error about {pairs ** -0.5:.2f});"
              f" variance ratio 1 / (1 − ρ²) at the mean ρ {1 / (1 - mean ** 2):.3f}, at the best opponent's mean"
              f" ({best:+.3f}) {1 / (1 - best ** 2):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--run", action="append", required=True, help="a run of several matchups on shared seeds")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    for run in args.run:
        report(run, scores_against(Run.read(args.runs_dir, run).frames()[0]), rng)


if __name__ == "__main__":
    main()
