"""Does the fit of luck-adjusted scores keep its promise? Coverage, width and error on simulated luck.

Five players with known Elo play every matchup in mirror pairs. In each game a first chance event moves side
one's winning chance p to p + k(1 - p) (with probability p) or to p - kp, then the result is drawn from that
chance; the event's luck (new chance - p) is measured exactly, so the adjusted score (result - luck) keeps
1 - k² of the results' variance. For each size, 40 simulated sets are fitted from their results and from
their adjusted scores (:func:`pokebench.results.ratings.fit_ratings`, 200 bootstrap samples); printed: how
often the reported 95% interval covers the true rating (the anchor left out), the median width of both and
their ratio (about sqrt(1 - k²) once the bootstrap has pairs to draw from), the widest adjusted interval (with a
few pairs, a bootstrap sample whose adjusted scores of two players average beyond 0 or 1 is held by the prior
alone) and the adjusted ratings' mean error.
Not a test: it prints figures. Run:

    .venv/bin/python benchmarks/adjusted_ratings.py
"""
from __future__ import annotations

import itertools
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pokebench.results.ratings import SCALE, fit_ratings  # noqa: E402

TRUE = {"max-damage": 1000.0, "random": 650.0, "heuristic": 1150.0, "model-a": 1350.0, "model-b": 900.0}


def lucky_games(pairs: int, k: float, rng: np.random.Generator) -> pd.DataFrame:
    """Every matchup of TRUE plays `pairs` mirror pairs; side one's luck and adjusted score in each game."""
    rows = [dict(run="sim", matchup=f"{a} vs {b}", pair=n, game=game, p1=p1, p2=p2)
            for a, b in itertools.combinations(TRUE, 2) for n in range(pairs)
            for game, (p1, p2) in enumerate([(a, b), (b, a)], start=1)]
    games = pd.DataFrame(rows)
    p = expit(SCALE * (games["p1"].map(TRUE) - games["p2"].map(TRUE))).to_numpy()
    after = np.where(rng.random(len(games)) < p, p + k * (1 - p), p - k * p)
    won = rng.random(len(games)) < after
    return games.assign(winner=np.where(won, "p1", "p2"), adjusted_p1=won - (after - p))


def main(sets: int = 40) -> None:
    truth = pd.Series(TRUE)
    warnings.simplefilter("ignore")  # a bootstrap sample without the anchor's games, with 3 pairs
    for k in (0.0, 0.8):
        for pairs in (3, 20, 100):
            covered: dict[str, list[float]] = {"raw": [], "adjusted": []}
            width: dict[str, list[float]] = {"raw": [], "adjusted": []}
            error = []
            rng = np.random.default_rng(pairs)
            for _ in range(sets):
                games = lucky_games(pairs, k, rng)
                for name, score in (("raw", None), ("adjusted", "adjusted_p1")):
                    table = fit_ratings(games, score=score).set_index("player").drop("max-damage")
                    true = truth[table.index]
                    covered[name].append(float(((table["ci_low"] <= true) & (true <= table["ci_high"])).mean()))
                    width[name].extend(table["ci_high"] - table["ci_low"])
                    if score:
                        error.append(float((table["elo"] - true).mean()))
            raw_w, adj_w = np.median(width["raw"]), np.median(width["adjusted"])
            print(f"k={k:.1f} (variance left {1 - k * k:.2f}), {pairs:3d} pairs per matchup, {sets} sets: "
                  f"coverage raw {np.mean(covered['raw']):.3f}, adjusted {np.mean(covered['adjusted']):.3f}; "
                  f"median width raw {raw_w:.0f}, adjusted {adj_w:.0f} Elo (ratio {adj_w / raw_w:.2f}, "
                  f"sqrt of variance left {np.sqrt(1 - k * k):.2f}; widest adjusted {max(width['adjusted']):.0f}); "
                  f"adjusted mean error {np.mean(error):+.1f} Elo")


if __name__ == "__main__":
    main()
