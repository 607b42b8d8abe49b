"""Duplicate rolls against Showdown's own: the same seeds played both ways, the variance over mirror pairs of each.

    .venv/bin/python benchmarks/duplicate_rolls.py [--runs-dir /tmp/pb-luck/runs] [--stock rolls-stock]
        [--duplicate rolls-duplicate] [--pairs 100] [--matchups ...] [--seed-text pokebench-rolls-eval]
        [--figures-only] [--block N]

Plays (or reuses) two runs of the ladder's bots on the same seed text and matchups, one with ``rolls=stock`` and
one with ``rolls=duplicate`` (docs/method.md, "Seeds and mirror pairs"), measures the luck of their games
(benchmarks/luck_validation.py's way, into each run's cache), and prints per matchup and pooled (each matchup
centred on its own mean):

- *same expectation*: the first player's mean pair score under each, and duplicate − stock with a 95 % interval
  (each game alone is an ordinary random battle either way, so it must cover 0);
- *how much of a pair's luck cancels*: the correlation between side one's chance luck in the pair's two games
  (the team stays with side one; the luck that helps it helps a different player in each game);
- *efficient*: the variance over mirror pairs of the raw and of the luck-adjusted score under each, and the ratios
  against stock raw, with 95 % intervals from a bootstrap over pairs that draws the same pairs from both runs
  (the same seeds: the same teams).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from luck_validation import (BOOTSTRAP, MATCHUPS, Z, current_luck, games_for, pair_frame, play, stored,
                             value_missing)
from pokebench.analysis.luck_rows import luck_rows
from pokebench.results.loading import load_runs

SEED_TEXT = "pokebench-rolls-eval"


@dataclass
class Run:
    """A run's games (games.csv's frame) and its luck cache's entries, read once."""

    games: pd.DataFrame
    entries: list[dict[str, Any]]

    @classmethod
    def read(cls, runs_dir: Path, run: str) -> Run:
        with load_runs([run], runs_dir) as data:
            games = data.games.copy()
        return cls(games, list(current_luck(runs_dir / run).values()))

    def frames(self, pairs: range | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Per mirror pair (matchup, pair): raw and adjusted score; per game: side one's chance luck. With `pairs`,
        only those pairs of each matchup (their skill shifts from one another alone, as in a run of that many)."""
        games = self.games if pairs is None else self.games[self.games["pair"].isin(pairs)]
        luck = luck_rows(self.entries, games)[0]
        chance = luck.assign(chance_p1=luck["luck_p1"] - luck.get("action_p1", 0.0)).merge(
            games[["uid", "matchup", "pair", "game"]], on="uid")
        return pair_frame(games, luck).set_index(["matchup", "pair"]), chance


def centred(frame: pd.DataFrame) -> pd.DataFrame:
    """Each matchup (the index's first level) around its own mean."""
    return frame - frame.groupby(level=0).transform("mean")


def luck_correlation(chance: pd.DataFrame) -> float:
    """corr over pairs of side one's chance luck in game 1 and in game 2 (each matchup centred)."""
    wide = centred(chance.pivot_table(index=["matchup", "pair"], columns="game", values="chance_p1").dropna())
    return float(np.corrcoef(wide[1], wide[2])[0, 1])


def interval(values: np.ndarray) -> str:
    return f"[{np.percentile(values, 2.5):.2f}, {np.percentile(values, 97.5):.2f}]"


def pooled_ratios(stock: pd.DataFrame, duplicate: pd.DataFrame) -> tuple[float, float, float]:
    """Stock raw's pooled variance over duplicate raw's, stock adjusted's and duplicate adjusted's (each matchup
    centred on its own mean)."""
    var = {(run, col): centred(frame[[col]])[col].var()
           for run, frame in (("stock", stock), ("dup", duplicate)) for col in ("raw", "adjusted")}
    return tuple(var["stock", "raw"] / var[key] for key in (("dup", "raw"), ("stock", "adjusted"), ("dup", "adjusted")))


def blocks(stock: Run, duplicate: Run, size: int) -> None:
    """The pooled ratios in blocks of `size` pairs per matchup, as a run of that many pairs would see them."""
    top = int(stock.games["pair"].max())
    print(f"\n  in blocks of {size} pairs per matchup: stock raw over duplicate raw, stock adjusted, duplicate adjusted")
    found = []
    for first in range(1, top - size + 2, size):
        span = range(first, first + size)
        found.append(pooled_ratios(stock.frames(span)[0], duplicate.frames(span)[0]))
        print(f"  pairs {first}–{first + size - 1}: " + "  ".join(f"{r:4.2f}" for r in found[-1]))
    print("  mean: " + "  ".join(f"{r:4.2f}" for r in np.mean(found, axis=0)))


def report(stock: pd.DataFrame, duplicate: pd.DataFrame) -> None:
    both = stock.index.intersection(duplicate.index)
    stock, duplicate = stock.loc[both], duplicate.loc[both]
    rng = np.random.default_rng(0)
    print(f"  {'matchup':28s} pairs  score stock / dup  dup − stock        var raw stock / dup   var adj stock / dup"
          "   stock raw over: dup raw   stock adj   dup adj")
    groups = [(m, stock.loc[m], duplicate.loc[m]) for m in both.get_level_values(0).unique()]
    pooled = [centred(frame) for frame in (stock, duplicate)]
    for name, s, d in [*groups, ("pooled (centred per matchup)", *pooled)]:
        if s["raw"].var() == 0 or d["raw"].var() == 0:  # one player wins every pair: nothing to compare
            print(f"  {name:28s} {len(s):5d}  {s['raw'].mean():5.3f} / {d['raw'].mean():5.3f}  (no variance)")
            continue
        picks = rng.integers(0, len(s), size=(BOOTSTRAP, len(s)))
        var = {(run, col): frame[col].to_numpy()[picks].var(axis=1, ddof=1)
               for run, frame in (("stock", s), ("dup", d)) for col in ("raw", "adjusted")}
        point = {(run, col): frame[col].var(ddof=1) for run, frame in (("stock", s), ("dup", d))
                 for col in ("raw", "adjusted")}
        with np.errstate(divide="ignore", invalid="ignore"):  # a bootstrap sample of a lopsided matchup can be all wins
            ratios = [(point["stock", "raw"] / point[key], var["stock", "raw"] / var[key])
                      for key in (("dup", "raw"), ("stock", "adjusted"), ("dup", "adjusted"))]
        diff = d["raw"].to_numpy() - s["raw"].to_numpy()
        half = Z * diff.std(ddof=1) / np.sqrt(len(diff))
        scores = ("" if name.startswith("pooled") else f"{s['raw'].mean():5.3f} / {d['raw'].mean():5.3f}  "
                  f"{diff.mean():+.3f} ± {half:.3f}")
        print(f"  {name:28s} {len(s):5d}  {scores:30s}  {point['stock', 'raw']:.4f} / {point['dup', 'raw']:.4f}"
              f"       {point['stock', 'adjusted']:.4f} / {point['dup', 'adjusted']:.4f}    "
              + "  ".join(f"{r:4.2f} {interval(b)}" for r, b in ratios))
    score = stock["raw"].mean()
    print(f"\n  games for ±50 Elo at the pooled score {score:.3f}: stock raw {games_for(pooled[0]['raw'].var(), score):.0f}, "
          f"stock adjusted {games_for(pooled[0]['adjusted'].var(), score):.0f}, "
          f"duplicate raw {games_for(pooled[1]['raw'].var(), score):.0f}, "
          f"duplicate adjusted {games_for(pooled[1]['adjusted'].var(), score):.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--stock", default="rolls-stock", help="the run played with rolls=stock")
    parser.add_argument("--duplicate", default="rolls-duplicate", help="the run played with rolls=duplicate")
    parser.add_argument("--pairs", type=int, default=100)
    parser.add_argument("--matchups", default=MATCHUPS, help=f"the ladder's players to play (default {MATCHUPS})")
    parser.add_argument("--seed-text", default=SEED_TEXT)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--figures-only", action="store_true", help="play and value nothing: the cached runs' figures")
    parser.add_argument("--block", type=int, default=0, metavar="N",
                        help="also the pooled ratios in blocks of N pairs per matchup (an LLM run has tens of pairs)")
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    runs = {"stock": args.stock, "duplicate": args.duplicate}
    if not args.figures_only:
        for rolls, run in runs.items():
            play(args.runs_dir, run, args.pairs, args.matchups, args.seed_text, rolls)
            games, logs = stored(args.runs_dir, run)
            value_missing(args.runs_dir, run, games, logs, args.workers)
    stock_run, duplicate_run = (Run.read(args.runs_dir, run) for run in runs.values())
    (stock, stock_chance), (duplicate, duplicate_chance) = stock_run.frames(), duplicate_run.frames()
    print(f"runs {args.stock} (stock) and {args.duplicate} (duplicate)"
          + ("" if args.figures_only else f", played on the seed text {args.seed_text!r}"))
    print(f"corr of side one's chance luck between a pair's two games: stock {luck_correlation(stock_chance):+.3f}, "
          f"duplicate {luck_correlation(duplicate_chance):+.3f}")
    report(stock, duplicate)
    if args.block:
        blocks(stock_run, duplicate_run, args.block)


if __name__ == "__main__":
    main()
