"""What the luck adjustment did on a run's own games, per matchup (``pairs.csv``'s luck columns).

The luck adjustment keeps a score's expectation whatever the value function; how much variance it removes
depends on how well that function tracks what chance did in *these* games, which differ from the bot games it
was validated on (docs/analysis.md, "Luck"): a model's games may gain more or less, or nothing. So every
analysed run says it for itself, per matchup, over its complete mirror pairs whose two games both had their
luck measured:

- the variance over pairs of player A's pair score (the mean of its two games), raw and luck-adjusted, and
  their ratio with a percentile interval of a bootstrap over pairs (above 1: fewer games for the same
  interval; below 1: the adjustment added noise on these games);
- A's mean luck per game with its interval, expectation 0 whatever A's skill (adjusted − raw is its negative):
  an interval far from 0 is chance about one time in twenty, or a bias of the measure.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from pokebench.results.ratings import with_luck
from pokebench.results.schema import SIDE_ONE_SCORE

__all__ = ["LUCK_GAIN_COLUMNS", "luck_gain", "pair_scores", "with_luck_gain"]

#: ``pairs.csv``'s columns from :func:`luck_gain` (empty cells for a matchup without measured luck).
LUCK_GAIN_COLUMNS = ["luck_pairs", "var_raw", "var_adjusted", "variance_ratio", "ratio_lo", "ratio_hi",
                     "a_luck_mean", "a_luck_lo", "a_luck_hi"]


def pair_scores(games: pd.DataFrame, luck: pd.DataFrame, first: dict[str, str]) -> pd.DataFrame:
    """Per mirror pair (matchup, run, pair) whose two games both had their luck measured: player A's
    mean ``raw`` and ``adjusted`` score over them, A being ``first[matchup]``."""
    joined = with_luck(games, luck)
    joined = joined[joined["luck_p1"].notna() & joined["matchup"].isin(list(first))]
    a_is_p1 = joined["p1"].to_numpy() == joined["matchup"].map(first).to_numpy()
    score_p1 = joined["winner"].map(SIDE_ONE_SCORE)
    frame = joined.assign(raw=np.where(a_is_p1, score_p1, 1 - score_p1),
                          adjusted=np.where(a_is_p1, joined["adjusted_p1"], 1 - joined["adjusted_p1"]))
    keys = ["matchup", "run", "pair"]
    both = frame.groupby(keys)["raw"].transform("size") == 2
    return frame[both].groupby(keys, as_index=False, sort=True)[["raw", "adjusted"]].mean()


def luck_gain(pairs: pd.DataFrame, n_bootstrap: int = 200, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Per matchup of :func:`pair_scores`' rows: :data:`LUCK_GAIN_COLUMNS`. The variances are over pairs
    (ddof 1), the intervals percentiles of `n_bootstrap` resamples of the pairs (seeded; NaN with fewer than
    three pairs, or none where a resample has no variance left to divide by). Where A's raw pair scores did not
    vary (one side won every game) the ratio and its interval are NaN: there was no variance to remove, and a
    ratio of 0 would call a trace of measured luck infinitely worse."""
    rng = np.random.default_rng(seed)
    tail = [(1 - ci) / 2 * 100, (1 + ci) / 2 * 100]
    rows: list[dict[str, Any]] = []
    for matchup, group in pairs.groupby("matchup", sort=True):
        raw, adjusted = group["raw"].to_numpy(float), group["adjusted"].to_numpy(float)
        luck = raw - adjusted  # A's luck per pair (the mean of its two games')
        n = len(raw)
        var_raw = var_adjusted = ratio = ratio_lo = ratio_hi = luck_lo = luck_hi = math.nan
        if n >= 2:
            var_raw, var_adjusted = float(raw.var(ddof=1)), float(adjusted.var(ddof=1))
            ratio = var_raw / var_adjusted if var_adjusted > 0 and var_raw > 0 else math.nan
        if n >= 3 and n_bootstrap > 0:
            picks = rng.integers(0, n, size=(n_bootstrap, n))
            luck_lo, luck_hi = np.percentile(luck[picks].mean(axis=1), tail)
            resampled = adjusted[picks].var(axis=1, ddof=1)
            if (resampled > 0).all() and var_raw > 0:
                ratio_lo, ratio_hi = np.percentile(raw[picks].var(axis=1, ddof=1) / resampled, tail)
        rows.append({"matchup": matchup, "luck_pairs": n, "var_raw": var_raw, "var_adjusted": var_adjusted,
                     "variance_ratio": ratio, "ratio_lo": ratio_lo, "ratio_hi": ratio_hi,
                     "a_luck_mean": float(luck.mean()), "a_luck_lo": luck_lo, "a_luck_hi": luck_hi})
    out = pd.DataFrame(rows, columns=["matchup", *LUCK_GAIN_COLUMNS])
    return out.astype({"luck_pairs": int})


def with_luck_gain(pairs: pd.DataFrame, games: pd.DataFrame, luck: pd.DataFrame, n_bootstrap: int = 200,
                   seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """``pairs.csv``'s rows (:func:`pokebench.results.figures.pair_results`, A its ``player_a``) with their luck
    columns from the games' measured luck; empty cells for a matchup without any."""
    gain = luck_gain(pair_scores(games, luck, dict(zip(pairs["matchup"], pairs["player_a"]))), n_bootstrap, seed, ci)
    out = pairs.drop(columns=LUCK_GAIN_COLUMNS, errors="ignore").merge(gain, on="matchup", how="left")
    return out[list(pairs.columns)]
