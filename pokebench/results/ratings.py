"""Bradley–Terry Elo ratings with mirror-pair bootstrap intervals (method, section 5).

P(A beats B) = 1 / (1 + 10**((R_B - R_A) / 400)); a tie is half a win for each side.
All games are fitted at once as the MAP under an independent N(0, prior_sd²) prior on
each rating. The prior is centred at 0 *before* anchoring: at the optimum the ratings
then average exactly 0 (the likelihood gradient sums to zero), so the prior means "each
rating starts 800 points around the average player", independent of which player is the
anchor. Only afterwards is everything shifted so that the anchor sits at ``anchor_elo``.

Games are folded into a pairwise score matrix W[i, j] (wins of i over j, ties 0.5) and
N[i, j] (games between i and j); the fit is Newton's method on that matrix, batched over
bootstrap samples as arrays of shape (B, n, n).

Ratings from luck-adjusted scores (``fit_ratings(games, score="adjusted_p1")``: a game's score minus
side one's measured luck, a real number that can fall outside [0, 1]) use the same fit as a
quasi-likelihood: the Bradley–Terry log-likelihood of a score s, s·log p + (1 − s)·log(1 − p), is
s·d − log(1 + e^d) in the log-odds d, linear in s, so its curvature −p(1 − p) does not depend on s and
the log posterior stays strictly concave for any real s; the prior keeps it bounded (a pair whose
adjusted scores average above 1 would push the likelihood to infinity alone). Its estimating equations
(each player's expected score equals its observed score, summed over its games) have the same
expectation as the raw fit's because luck has expectation zero, so the fit estimates the same ratings;
clipping the scores to [0, 1] would change that expectation and bias them. The scores' variance is no
longer p(1 − p): it is p(1 − p)·φ, the dispersion φ estimated from the mirror pairs (Pearson's χ² over
the degrees of freedom, with a prior worth four of them at φ = 1: :func:`_dispersion`), and the likelihood
is weighed by 1/φ (W/φ, N/φ), so the posterior interval shows what the adjustment removed, with Student's t
quantile on those degrees of freedom (McCullagh & Nelder 1989, *Generalized Linear Models*, ch. 9).
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.sparse.csgraph import connected_components
# the normal's and Student's t's quantiles from scipy.special (ndtri, stdtrit): the same numbers as scipy.stats's
# ppf, without its import (0.6 s of CPU at every run's start)
from scipy.special import expit, ndtri, stdtrit

from pokebench.results.schema import SIDE_ONE_SCORE

__all__ = ["RatingsError", "expected_score", "fit_ratings", "head_to_head", "player_summary", "score_matrix", "posterior_sd",
           "posterior_covariance", "dispersion", "with_luck", "luck_figures", "LUCK_COLUMNS",
           "uncertainty_rank", "INTERVAL_RULE", "RANK_RULE"]

#: How :func:`fit_ratings` chooses the reported interval (also written to meta.json).
INTERVAL_RULE = ("the wider of the mirror-pair bootstrap percentile interval and the normal (Laplace) approximation "
                 "of the MAP fit's posterior (elo ± z·sd from the inverse Hessian of the log posterior, relative to "
                 "the anchor); with few pairs a bootstrap has few distinct samples and can be narrow or zero-width, "
                 "the posterior then gives the interval (column `interval`)")
#: How :func:`uncertainty_rank` ranks (also written to meta.json).
RANK_RULE = "1 + the number of players whose ci_low is above this player's ci_high (FastChat / LMArena)"

SCALE = math.log(10) / 400  # Elo points -> natural log-odds
#: Degrees of freedom the prior of the adjusted scores' dispersion φ is worth, at φ = 1 (:func:`_dispersion`).
DISPERSION_PRIOR_DF = 4


def expected_score(elo_a: float, elo_b: float) -> float:
    """The fit's P(A beats B), ties counting half: 1 / (1 + 10**((elo_b - elo_a) / 400))."""
    return float(expit(SCALE * (elo_a - elo_b)))


class RatingsError(ValueError):
    """The games cannot give meaningful ratings (no games, one player, disconnected...)."""


def _finished(games: pd.DataFrame, unit_cols: bool = False, score: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Validated finished games without self-play (column ``s1`` is p1's score; with ``score``, column
    ``fit`` is p1's score from that column, or ``s1`` where it is empty), and the sorted names of all
    players in finished games."""
    need = ["p1", "p2", "winner"] + (["matchup", "pair"] if unit_cols else []) + ([score] if score else [])
    if games.empty:
        raise RatingsError("no finished games: the games table is empty")
    missing = [c for c in need if c not in games.columns]
    if missing:
        raise RatingsError(f"games table lacks column(s) {missing}; it has {list(games.columns)}")
    g = games[games["status"] == "finished"] if "status" in games.columns else games
    if g.empty:
        raise RatingsError("no finished games: ratings need at least one finished game")
    bad = sorted(set(g["winner"].dropna().unique()) - set(SIDE_ONE_SCORE), key=str) + (
        ["<missing>"] if g["winner"].isna().any() else [])
    if bad:
        raise RatingsError(f"winner must be 'p1', 'p2' or 'tie'; found {bad}")
    g = g.assign(p1=g["p1"].astype(str), p2=g["p2"].astype(str), s1=g["winner"].map(SIDE_ONE_SCORE))
    adjusted = pd.to_numeric(g[score if score else "s1"], errors="coerce")
    if np.isinf(adjusted).any():
        raise RatingsError(f"column {score!r} holds an infinite score")
    g = g.assign(fit=adjusted.where(adjusted.notna(), g["s1"]))
    players = sorted(set(g["p1"]) | set(g["p2"]))
    self_play = (g["p1"] == g["p2"]).to_numpy()
    if self_play.any():
        # A game against oneself says nothing about strength: drop it, but keep the player
        # in the list, so one with only such games is reported as disconnected.
        warnings.warn(f"ignoring {int(self_play.sum())} game(s) of a player against itself")
        g = g[~self_play]
    return g, players


def _indices(g: pd.DataFrame, players: list[str], score: str = "s1") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    index = pd.Index(players)
    i, j = index.get_indexer(pd.Index(g["p1"])), index.get_indexer(pd.Index(g["p2"]))
    if (i < 0).any() or (j < 0).any():
        unknown = sorted((set(g["p1"]) | set(g["p2"])) - set(players))
        raise RatingsError(f"players {unknown} are in the games but not in `players`")
    return i, j, g[score].to_numpy(float)


def _matrices(i, j, s1, n: int) -> tuple[np.ndarray, np.ndarray]:
    W = np.bincount(i * n + j, weights=s1, minlength=n * n) + np.bincount(
        j * n + i, weights=1.0 - s1, minlength=n * n)
    N = np.bincount(i * n + j, minlength=n * n) + np.bincount(j * n + i, minlength=n * n)
    return W.reshape(n, n), N.reshape(n, n).astype(float)


def score_matrix(games: pd.DataFrame, players: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Fold finished games into W[i, j] (wins of players[i] over players[j], a tie counting
    0.5) and N[i, j] (games between them). W + W.T == N; the diagonal is 0."""
    g, _ = _finished(games)
    return _matrices(*_indices(g, list(players)), len(players))


def _long(g: pd.DataFrame) -> pd.DataFrame:
    """Two rows per game, one from each side: player, opponent, score (1, 0.5 or 0)."""
    return pd.DataFrame({
        "player": np.r_[g["p1"].to_numpy(), g["p2"].to_numpy()],
        "opponent": np.r_[g["p2"].to_numpy(), g["p1"].to_numpy()],
        "score": np.r_[g["s1"].to_numpy(), 1.0 - g["s1"].to_numpy()]})


def _tally(long: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    s = long["score"]
    t = long.assign(wins=s == 1.0, ties=s == 0.5, losses=s == 0.0).groupby(by)[
        ["wins", "ties", "losses"]].sum().astype(int)
    t["games"] = t.sum(axis=1)
    t["win_rate"] = (t["wins"] + 0.5 * t["ties"]) / t["games"]
    return t.reset_index()


def head_to_head(games: pd.DataFrame) -> pd.DataFrame:
    """One row per ordered (player, opponent) that met: wins, ties, losses, games and
    win_rate (ties count half), all from ``player``'s point of view."""
    return _tally(_long(_finished(games)[0]), ["player", "opponent"])


def player_summary(games: pd.DataFrame) -> pd.DataFrame:
    """Per player: games, wins, ties, losses and win_rate (ties count half)."""
    t = _tally(_long(_finished(games)[0]), ["player"])
    return t[["player", "games", "wins", "ties", "losses", "win_rate"]]


class _Folded(NamedTuple):
    W: np.ndarray  # (n, n) full-data score matrix
    N: np.ndarray
    unit_counts: np.ndarray  # (T,) number of resampling units of each type
    S_w: sparse.csr_matrix  # (n*n, T) upper-triangle wins contributed by one unit of a type
    S_n: sparse.csr_matrix  # (n*n, T) games contributed by one unit of a type
    cells: np.ndarray  # (R,) upper-triangle cell of each (unit, player pair) row
    scores: np.ndarray  # (R,) the row's score of the lower-index player
    games: np.ndarray  # (R,) the row's games


def _fold(g: pd.DataFrame, players: list[str]) -> _Folded:
    """Score matrices plus the resampling units, grouped by their contribution.

    A unit is a mirror pair (run, matchup, pair), or what is left of it when a game was a
    harness error. Units with identical contributions to the score matrix (same player pair,
    same number of games, same score) are interchangeable, so drawing U units with
    replacement is a multinomial draw over the few distinct unit *types* (at most 8 per
    player pair for mirror pairs): the bootstrap then never touches individual games.
    """
    n = len(players)
    i, j, s1 = _indices(g, players, "fit")
    W, N = _matrices(i, j, s1, n)
    keys = [c for c in ("run", "matchup", "pair") if c in g.columns]
    unit = g.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    lo, hi = np.minimum(i, j), np.maximum(i, j)
    cell = lo * n + hi  # upper-triangle cell; the score is the lower-index player's
    w = np.where(i < j, s1, 1.0 - s1)
    uc, inv = np.unique(unit * n * n + cell, return_inverse=True)
    w_r, n_r = np.bincount(inv, weights=w), np.bincount(inv)
    unit_r, cell_r = np.divmod(uc, n * n)
    multi = np.bincount(unit_r)[unit_r] > 1  # a unit spanning several player pairs (odd data)
    # a type: (player pair, score, games), or one multi-pair unit; scores compared exactly (adjusted ones are real)
    sig = np.column_stack([np.where(multi, -1 - unit_r, cell_r), np.where(multi, 0.0, w_r), np.where(multi, 0, n_r)])
    types, type_r = np.unique(sig, axis=0, return_inverse=True)
    type_r = type_r.reshape(-1)
    first = np.r_[True, unit_r[1:] != unit_r[:-1]]  # uc is sorted by unit
    counts = np.bincount(type_r[first], minlength=len(types))
    # one unit's contribution per type: units of a type contribute identically, so keep one
    # row per (type, cell) (a multi-pair type is a single unit with one row per cell)
    _, rep = np.unique(type_r * n * n + cell_r, return_index=True)
    shape = (n * n, len(types))
    S_w = sparse.csr_matrix((w_r[rep], (cell_r[rep], type_r[rep])), shape=shape)
    S_n = sparse.csr_matrix((n_r[rep].astype(float), (cell_r[rep], type_r[rep])), shape=shape)
    return _Folded(W, N, counts, S_w, S_n, cell_r, w_r, n_r.astype(float))


def _dispersion(f: _Folded, r: np.ndarray) -> tuple[float, int]:
    """φ, the scores' variance over the binomial p(1 − p), and the degrees of freedom of its t.

    Pearson's χ² of the mirror pairs (each pair's summed score against its expectation under the fit ``r``, so
    the correlation of a pair's two games counts as in the pair bootstrap; a pair whose fitted chance rounds to
    0 or 1 carries nothing on φ and is left out), on pairs − (players − 1) degrees of freedom, with a prior
    worth :data:`DISPERSION_PRIOR_DF` of them at φ = 1 (the results' variance: until pairs show otherwise, the
    adjustment is not assumed to remove anything): φ = (ν₀ + χ²) / (ν₀ + df) on ν₀ + df degrees of freedom,
    the scaled-inverse-χ² posterior of a normal variance. So φ is never 0 (pairs that all split 1–1 with no
    luck measured would give a χ² of 0) and a few pairs cannot claim a narrow interval."""
    n = f.W.shape[0]
    lo, hi = np.divmod(f.cells, n)
    p = expit(SCALE * (r[lo] - r[hi]))
    var = f.games * p * (1.0 - p)
    kept = var > 0
    df = max(int(kept.sum()) - (n - 1), 0)
    chi2 = float(((f.scores - f.games * p)[kept] ** 2 / var[kept]).sum()) if df else 0.0
    return (DISPERSION_PRIOR_DF + chi2) / (DISPERSION_PRIOR_DF + df), DISPERSION_PRIOR_DF + df


def _bootstrap_matrices(f: _Folded, n_bootstrap: int, rng: np.random.Generator):
    """(B, n, n) W and N of bootstrap samples that each draw as many units as there are."""
    n, U = f.W.shape[0], int(f.unit_counts.sum())
    K = rng.multinomial(U, f.unit_counts / U, size=n_bootstrap)  # (B, T) units drawn per type
    Wu = np.asarray(f.S_w @ K.T).T.reshape(-1, n, n)  # upper triangle only
    Nu = np.asarray(f.S_n @ K.T).T.reshape(-1, n, n)
    return Wu + (Nu - Wu).transpose(0, 2, 1), Nu + Nu.transpose(0, 2, 1)


def _log_posterior(r: np.ndarray, W: np.ndarray, prior_sd: float) -> np.ndarray:
    d = SCALE * (r[..., :, None] - r[..., None, :])
    return -(W * np.logaddexp(0.0, -d)).sum(axis=(-2, -1)) - (r**2).sum(-1) / (2 * prior_sd**2)


def _newton(W, N, prior_sd: float, r0=None, tol: float = 1e-10, max_iter: int = 100):
    """MAP ratings (Elo, mean 0) for score matrices of shape (..., n, n).

    Exact gradient and Hessian; the log posterior is strictly concave (the prior makes -H
    positive definite), so Newton converges in a handful of steps. A step that would lower
    the posterior (possible only far from the optimum) is halved, per sample.
    """
    prec = 1.0 / prior_sd**2
    r = np.zeros(W.shape[:-1]) if r0 is None else np.array(np.broadcast_to(r0, W.shape[:-1]))
    f = _log_posterior(r, W, prior_sd)
    for _ in range(max_iter):
        p = expit(SCALE * (r[..., :, None] - r[..., None, :]))
        grad = SCALE * (W - N * p).sum(-1) - prec * r
        c = SCALE**2 * N * p * (1.0 - p)
        A = -c  # A = -Hessian
        diag = np.einsum("...ii->...i", A)
        diag += c.sum(-1) + prec
        step = np.linalg.solve(A, grad[..., None])[..., 0]
        t = np.ones(f.shape)
        for _ in range(60):
            r_new = r + t[..., None] * step
            f_new = _log_posterior(r_new, W, prior_sd)
            worse = f_new < f - 1e-12 * (1.0 + np.abs(f))  # allow rounding noise
            if not worse.any():
                break
            t = np.where(worse, t / 2, t)
        # The optimum has mean exactly 0 (the likelihood gradient sums to 0); re-centring
        # removes rounding drift along that direction, which only the weak prior pins down.
        r = r_new - r_new.mean(-1, keepdims=True)
        f = _log_posterior(r, W, prior_sd)
        if np.abs(grad).max() < tol or np.abs(t[..., None] * step).max() < tol:
            return r
    raise RatingsError(f"Newton did not converge in {max_iter} iterations")


def dispersion(games: pd.DataFrame, score: str | None = None, prior_sd: float = 800.0) -> tuple[float, int]:
    """φ of the scores (the results, or the column ``score``) and the degrees of freedom of its t (:func:`_dispersion`),
    at the unweighed fit of all games: raw φ over adjusted φ is the variance ratio over mirror pairs that the
    adjustment gives."""
    g, players = _finished(games, unit_cols=True, score=score)
    folded = _fold(g, players)
    _check_connected(folded.N, players)
    return _dispersion(folded, _newton(folded.W, folded.N, prior_sd))


def posterior_covariance(N: np.ndarray, r: np.ndarray, prior_sd: float) -> np.ndarray:
    """Covariance of the ratings (Elo²) in the normal approximation at the MAP ``r``: the inverse of
    minus the Hessian of the log posterior (``_newton`` uses the same matrix); N[i, j] games between i and j."""
    p = expit(SCALE * (r[:, None] - r[None, :]))
    c = SCALE**2 * N * p * (1.0 - p)
    A = -c
    A[np.diag_indices_from(A)] += c.sum(-1) + 1.0 / prior_sd**2
    return np.linalg.inv(A)


def posterior_sd(W: np.ndarray, N: np.ndarray, r: np.ndarray, anchor: int, prior_sd: float) -> np.ndarray:
    """Posterior standard deviation of each rating minus the anchor's, in Elo points.

    sd_i = sqrt(var r_i + var r_a - 2 cov) from :func:`posterior_covariance`. It needs no
    resampling, so it stays honest when there are too few pairs for a bootstrap.
    """
    cov = posterior_covariance(N, r, prior_sd)
    var = np.diag(cov) + cov[anchor, anchor] - 2 * cov[:, anchor]
    return np.sqrt(np.clip(var, 0.0, None))


def uncertainty_rank(low: np.ndarray | pd.Series, high: np.ndarray | pd.Series) -> np.ndarray:
    """Rank that accounts for uncertainty: 1 + the number of players whose lower bound is above
    this player's upper bound (FastChat's ``recompute_final_ranking``). Ties share a rank;
    missing bounds count as unbounded."""
    lo = np.nan_to_num(np.asarray(low, float), nan=-np.inf)
    hi = np.nan_to_num(np.asarray(high, float), nan=np.inf)
    return 1 + (lo[None, :] > hi[:, None]).sum(axis=1)


def _check_connected(N: np.ndarray, players: list[str]) -> None:
    k, label = connected_components(sparse.csr_matrix(N > 0), directed=False)
    if k > 1:
        groups = "; ".join("{" + ", ".join(p for p, group in zip(players, label) if group == c) + "}"
                           for c in range(k))
        raise RatingsError(f"players form {k} groups that never met each other: {groups}. "
                           "Ratings across these groups are not comparable.")


def fit_ratings(games: pd.DataFrame, anchor: str = "max-damage", anchor_elo: float = 1000.0,
                prior_sd: float = 800.0, n_bootstrap: int = 200, seed: int = 0,
                ci: float = 0.95, score: str | None = None) -> pd.DataFrame:
    """Elo ratings with intervals that say what is known, sorted by elo (descending).

    Returns columns player, elo, ci_low, ci_high, interval, boot_low, boot_high, post_low,
    post_high, rank_ub, pairs, games, wins, ties, losses, win_rate.

    - ``boot_*``: percentile interval of a bootstrap that draws mirror pairs (both games
      together) with replacement (a game whose partner is missing is its own unit), extended
      to contain the point estimate; NaN with n_bootstrap=0. A sample with no game of the anchor
      is drawn again (nothing would put it on the anchor's scale).
    - ``post_*``: elo ± z·sd of the MAP fit's normal approximation (:func:`posterior_sd`).
    - ``ci_*``: the wider of the two (:data:`INTERVAL_RULE`); ``interval`` says which one
      gave it. One mirror pair has one possible bootstrap sample, so its bootstrap interval is
      zero-width: the posterior (mostly the prior then) is reported instead.
    - ``rank_ub``: :func:`uncertainty_rank` of the reported intervals.

    The anchor is exactly ``anchor_elo`` in the point fit and in every bootstrap sample, so
    its interval is anchor_elo–anchor_elo (``interval`` = ``anchor``).

    ``score``: a column of side one's real-valued score to fit instead of the result (``adjusted_p1``, the
    luck-adjusted score; a game where it is empty keeps its result): the quasi-likelihood fit of the
    module's doc, its likelihood weighed by 1/φ (:func:`_dispersion`, estimated once at the unweighed fit)
    and its posterior interval from Student's t. The record columns (wins, ties, ...) stay the results'.
    """
    g, players = _finished(games, unit_cols=True, score=score)
    # Real-valued scores sum differently in another order: a run published whole and from shards fits the same.
    g = g.sort_values([c for c in ("run", "matchup", "pair", "game_id") if c in g.columns], kind="stable")
    if len(players) < 2:
        raise RatingsError(f"only one player ({players[0]}): ratings need games between two or more")
    if anchor not in players:
        raise RatingsError(f"anchor {anchor!r} is not among the players: {', '.join(players)}. "
                           "Pass anchor=<one of them>.")
    a = players.index(anchor)
    folded = _fold(g, players)
    _check_connected(folded.N, players)
    phi, df = _dispersion(folded, _newton(folded.W, folded.N, prior_sd)) if score else (1.0, 0)
    W, N = folded.W / phi, folded.N / phi
    r = _newton(W, N, prior_sd)
    elo = r - r[a] + anchor_elo
    elo[a] = anchor_elo
    low = high = np.full(len(players), np.nan)
    if n_bootstrap > 0:
        rng = np.random.default_rng(seed)
        Wb, Nb = _bootstrap_matrices(folded, n_bootstrap, rng)
        # A sample without a game of the anchor cannot be put on its scale (the anchor's rating there is the
        # prior's guess): it is drawn again. Only with a few pairs does this happen (the anchor has games).
        while (lost := Nb[:, a].sum(-1) == 0).any():
            Wb[lost], Nb[lost] = _bootstrap_matrices(folded, int(lost.sum()), rng)
        rb = _newton(Wb / phi, Nb / phi, prior_sd, r0=r)
        samples = rb - rb[:, [a]] + anchor_elo
        samples[:, a] = anchor_elo
        low, high = np.quantile(samples, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
        low, high = np.minimum(low, elo), np.maximum(high, elo)
    z = float(stdtrit(df, (1 + ci) / 2) if score else ndtri((1 + ci) / 2))
    sd = posterior_sd(W, N, r, a, prior_sd)
    post_low, post_high = elo - z * sd, elo + z * sd
    post_low[a] = post_high[a] = anchor_elo
    use_boot = np.isfinite(low) & (high - low >= post_high - post_low)
    ci_low, ci_high = np.where(use_boot, low, post_low), np.where(use_boot, high, post_high)
    source = np.where(use_boot, "bootstrap", "posterior").astype(object)
    source[a] = "anchor"
    out = pd.DataFrame({"player": players, "elo": elo, "ci_low": ci_low, "ci_high": ci_high, "interval": source,
                        "boot_low": low, "boot_high": high, "post_low": post_low, "post_high": post_high})
    out.insert(4, "rank_ub", uncertainty_rank(ci_low, ci_high))
    counts = _tally(_long(g), ["player"])[["player", "games", "wins", "ties", "losses", "win_rate"]]
    out = out.merge(_pair_counts(g), on="player", how="left").merge(counts, on="player", how="left").fillna(
        {"pairs": 0, "games": 0, "wins": 0, "ties": 0, "losses": 0})
    for col in ("pairs", "games", "wins", "ties", "losses"):
        out[col] = out[col].astype(int)
    return out.sort_values("elo", ascending=False, kind="stable", ignore_index=True)


def _pair_counts(g: pd.DataFrame) -> pd.DataFrame:
    """Complete mirror pairs (two games) per player."""
    keys = [c for c in ("run", "matchup", "pair") if c in g.columns]
    sizes = g.groupby(keys, dropna=False).agg(p1=("p1", "first"), p2=("p2", "first"), n=("p1", "size"))
    full = sizes[sizes["n"] >= 2]
    counts = pd.concat([full["p1"], full["p2"]]).value_counts()
    return pd.DataFrame({"player": counts.index.astype(str), "pairs": counts.to_numpy()})


#: Per-player luck figures beside the ratings (:func:`luck_figures`).
LUCK_COLUMNS = ["luck_mean", "luck_lo", "luck_hi"]


def with_luck(games: pd.DataFrame, luck: pd.DataFrame) -> pd.DataFrame:
    """``games`` with side one's measured luck and adjusted score from the luck rows (``luck.csv``'s
    uid, run, game_id, luck_p1, adjusted_p1, error), joined by uid (by run and game id for games without a
    uid: a run's own store): both empty for a game without a row, or whose row's ``error`` says why its luck
    is unknown (such a game keeps its result in the adjusted fit)."""
    key = ["uid"] if "uid" in games.columns else ["run", "game_id"]
    missing = [c for c in (*key, "luck_p1", "adjusted_p1") if c not in luck.columns]
    if missing or any(c not in games.columns for c in key):
        raise RatingsError(f"luck rows need columns {', '.join(key)}, luck_p1 and adjusted_p1 (missing {missing}), "
                           f"and the games {', '.join(key)}")
    measured = luck if "error" not in luck.columns else luck[luck["error"].isna() | (luck["error"] == "")]
    rows = measured[[*key, "luck_p1", "adjusted_p1"]].drop_duplicates(key)  # a game in several runs: one uid
    rows = rows.astype({"luck_p1": float, "adjusted_p1": float})
    return games.drop(columns=["luck_p1", "adjusted_p1"], errors="ignore").merge(rows, on=key, how="left")


def luck_figures(games: pd.DataFrame, n_bootstrap: int = 200, seed: int = 0, ci: float = 0.95) -> pd.DataFrame:
    """Per player of the finished games: the mean of its measured luck per game, from its own side (side
    one's luck is ``luck_p1``, side two's its negative), and a percentile interval of a bootstrap over mirror
    pairs (as :func:`fit_ratings` draws them). NaN for a player without measured luck; the interval NaN with
    fewer than two pairs holding it (one pair has one possible sample) or no bootstrap."""
    g, players = _finished(games, unit_cols=True)
    out = pd.DataFrame({"player": players, **{c: np.nan for c in LUCK_COLUMNS}})
    if "luck_p1" not in g.columns:
        return out
    g = g[pd.to_numeric(g["luck_p1"], errors="coerce").notna()]
    if g.empty:
        return out
    i, j, luck = _indices(g.assign(luck_p1=pd.to_numeric(g["luck_p1"])), players, "luck_p1")
    keys = [c for c in ("run", "matchup", "pair") if c in g.columns]
    # units numbered in their keys' order, not the games' (the store's, or the merge of a run's shards): the
    # bootstrap draws the same pairs whatever order the same games come in
    unit = g.groupby(keys, sort=True, dropna=False).ngroup().to_numpy()
    U, n = int(unit.max()) + 1, len(players)
    sums, counts = np.zeros((U, n)), np.zeros((U, n))
    np.add.at(sums, (unit, i), luck)
    np.add.at(sums, (unit, j), -luck)
    np.add.at(counts, (unit, i), 1.0)
    np.add.at(counts, (unit, j), 1.0)
    total = counts.sum(0)
    out["luck_mean"] = np.where(total > 0, sums.sum(0) / np.maximum(total, 1.0), np.nan)
    enough = (counts > 0).sum(0) >= 2
    if n_bootstrap > 0 and enough.any():
        K = np.random.default_rng(seed).multinomial(U, np.full(U, 1.0 / U), size=n_bootstrap)  # (B, U) draws
        s, c = K @ sums[:, enough], K @ counts[:, enough]
        means = np.where(c > 0, s / np.maximum(c, 1.0), np.nan)  # a sample without the player's games: none
        low, high = np.nanquantile(means, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
        mean = out.loc[enough, "luck_mean"].to_numpy()
        out.loc[enough, "luck_lo"], out.loc[enough, "luck_hi"] = np.minimum(low, mean), np.maximum(high, mean)
    return out
