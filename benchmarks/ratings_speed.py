"""Speed of pokebench.results.ratings: fold + point fit + 200 bootstrap refits.

Synthetic mirror-paired games between random matchups (a 'max-damage' player included),
at 10 players x 20,000 games and 30 players x 100,000 games, plus a naive per-game scipy
L-BFGS fit of the same posterior at the larger size for comparison, and the fit of luck-adjusted
scores (real-valued: every mirror pair is a bootstrap type of its own) at both sizes. Not a test: it
only prints timings. Run on one core:

    taskset -c 0 .venv/bin/python benchmarks/ratings_speed.py
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit, log_expit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pokebench.results import ratings  # noqa: E402


def synthetic_games(n_players: int, n_games: int, seed: int = 0) -> pd.DataFrame:
    """n_games games in mirror pairs; about 3% ties and 1% harness errors."""
    rng = np.random.default_rng(seed)
    names = np.array(["max-damage"] + [f"model-{k:02d}" for k in range(1, n_players)])
    elo = rng.normal(1000, 300, n_players)
    n_pairs = n_games // 2
    a = rng.integers(0, n_players, n_pairs)
    b = (a + rng.integers(1, n_players, n_pairs)) % n_players  # b != a
    matchup = np.char.add(np.char.add(names[np.minimum(a, b)], " vs "), names[np.maximum(a, b)])
    pair = pd.Series(matchup).groupby(matchup).cumcount().to_numpy()
    p1 = np.r_[names[a], names[b]]  # game 1: a is p1; game 2: players swapped
    p2 = np.r_[names[b], names[a]]
    ia, ib = np.r_[a, b], np.r_[b, a]
    p_win = expit(ratings.SCALE * (elo[ia] - elo[ib]))
    u = rng.random(2 * n_pairs)
    winner = np.where(u < 0.03, "tie", np.where(rng.random(2 * n_pairs) < p_win, "p1", "p2"))
    status = np.where(rng.random(2 * n_pairs) < 0.01, "error", "finished")
    return pd.DataFrame({
        "game_id": np.arange(2 * n_pairs), "run": "bench", "matchup": np.r_[matchup, matchup],
        "pair": np.r_[pair, pair], "game": np.repeat([1, 2], n_pairs),
        "p1": p1, "p2": p2, "winner": winner, "status": status})


def naive_fit(games: pd.DataFrame, prior_sd: float = 800.0) -> np.ndarray:
    """Per-game log posterior (no folding) minimised by scipy L-BFGS; mean-0 Elo ratings."""
    g = games[games["status"] == "finished"]
    players = sorted(set(g["p1"]) | set(g["p2"]))
    idx = pd.Index(players)
    i, j = idx.get_indexer(g["p1"]), idx.get_indexer(g["p2"])
    s = g["winner"].map({"p1": 1.0, "tie": 0.5, "p2": 0.0}).to_numpy()
    n, c = len(players), ratings.SCALE

    def neg_log_post(x):
        r = x * 100.0  # optimise in units of 100 Elo for conditioning
        d = c * (r[i] - r[j])
        f = -(s * log_expit(d) + (1 - s) * log_expit(-d)).sum() + (r**2).sum() / (2 * prior_sd**2)
        gd = -c * (s - expit(d))
        grad = np.bincount(i, gd, n) - np.bincount(j, gd, n) + r / prior_sd**2
        return f, grad * 100.0

    res = minimize(neg_log_post, np.zeros(n), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-10, "ftol": 1e-15, "maxiter": 10_000})
    return res.x * 100.0


def bench(n_players: int, n_games: int, n_bootstrap: int = 200) -> tuple[float, float, float]:
    """Time each stage; returns (fold, point fit, total of stages) seconds."""
    games = synthetic_games(n_players, n_games)
    t0 = time.perf_counter()
    g, players = ratings._finished(games, unit_cols=True)
    folded = ratings._fold(g, players)
    t1 = time.perf_counter()
    r = ratings._newton(folded.W, folded.N, 800.0)
    t2 = time.perf_counter()
    Wb, Nb = ratings._bootstrap_matrices(folded, n_bootstrap, np.random.default_rng(0))
    t3 = time.perf_counter()
    ratings._newton(Wb, Nb, 800.0, r0=r)
    t4 = time.perf_counter()
    ratings.fit_ratings(games, n_bootstrap=n_bootstrap)
    t5 = time.perf_counter()
    print(f"{n_players} players x {n_games:,} games ({len(g):,} finished, "
          f"{int(folded.unit_counts.sum()):,} units in {len(folded.unit_counts):,} types)")
    print(f"  fold (filter, score matrix, units)  {t1 - t0:7.3f} s")
    print(f"  point fit (Newton)                  {t2 - t1:7.3f} s")
    print(f"  bootstrap resample {n_bootstrap} W/N         {t3 - t2:7.3f} s")
    print(f"  bootstrap refits (batched Newton)   {t4 - t3:7.3f} s")
    print(f"  total of stages                     {t4 - t0:7.3f} s")
    print(f"  fit_ratings() end to end            {t5 - t4:7.3f} s")
    return t1 - t0, t2 - t1, t4 - t0


def bench_adjusted(n_players: int, n_games: int, n_bootstrap: int = 200) -> None:
    """fit_ratings on luck-adjusted scores (the result minus a luck drawn around 0) against the raw fit."""
    games = synthetic_games(n_players, n_games)
    rng = np.random.default_rng(1)
    won = games["winner"].map({"p1": 1.0, "tie": 0.5, "p2": 0.0})
    games["adjusted_p1"] = won - rng.normal(0.0, 0.15, len(games))
    t0 = time.perf_counter()
    ratings.fit_ratings(games, n_bootstrap=n_bootstrap)
    t1 = time.perf_counter()
    ratings.fit_ratings(games, n_bootstrap=n_bootstrap, score="adjusted_p1")
    t2 = time.perf_counter()
    print(f"{n_players} players x {n_games:,} games, {n_bootstrap} bootstrap samples")
    print(f"  fit_ratings() of the results        {t1 - t0:7.3f} s")
    print(f"  fit_ratings() of adjusted scores    {t2 - t1:7.3f} s")


if __name__ == "__main__":
    bench_adjusted(10, 20_000)
    bench_adjusted(30, 100_000)
    bench(10, 20_000)
    fold, point, total = bench(30, 100_000)
    games = synthetic_games(30, 100_000)
    t0 = time.perf_counter()
    naive = naive_fit(games)
    t_naive = time.perf_counter() - t0
    g, players = ratings._finished(games, unit_cols=True)
    f = ratings._fold(g, players)
    newton = ratings._newton(f.W, f.N, 800.0)
    print("naive per-game scipy L-BFGS, single fit, 30 x 100,000")
    print(f"  time {t_naive:.3f} s; max |difference| from Newton {np.abs(naive - newton).max():.1e} Elo")
    print(f"  ratio to folded Newton point fit: {t_naive / point:.0f}x; "
          f"to fold + point fit: {t_naive / (fold + point):.1f}x")
    print(f"  201 naive fits (point + 200 bootstrap, resampling not counted) ~ {201 * t_naive:.0f} s; "
          f"ratio to the total above: {201 * t_naive / total:.0f}x")
