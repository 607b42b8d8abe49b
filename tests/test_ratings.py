import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from scipy.stats import t as student_t

from pokebench.results import ratings
from pokebench.results.ratings import RatingsError, fit_ratings, head_to_head, player_summary, score_matrix

TRUE = {"max-damage": 1000.0, "random": 650.0, "heuristic": 1150.0, "model-a": 1350.0, "model-b": 900.0}


def mirror_games(elo: dict, pairs_per_matchup: int, seed: int, tie_rate: float = 0.03) -> pd.DataFrame:
    """Every matchup plays `pairs_per_matchup` mirror pairs; results drawn from `elo`."""
    rng = np.random.default_rng(seed)
    rows = []
    for a, b in itertools.combinations(elo, 2):
        p_a = 1 / (1 + 10 ** ((elo[b] - elo[a]) / 400))
        for k in range(pairs_per_matchup):
            for game, (p1, p2) in enumerate([(a, b), (b, a)], start=1):
                if rng.random() < tie_rate:
                    winner = "tie"
                else:
                    a_wins = rng.random() < p_a
                    winner = "p1" if a_wins == (p1 == a) else "p2"
                rows.append(dict(run="r", matchup=f"{a} vs {b}", pair=k, game=game,
                                 p1=p1, p2=p2, winner=winner, status="finished"))
    df = pd.DataFrame(rows)
    return df.assign(game_id=np.arange(len(df)))


def game(p1, p2, winner, pair=0, matchup=None, game_no=1, status="finished"):
    return dict(run="r", matchup=matchup or f"{min(p1, p2)} vs {max(p1, p2)}", pair=pair,
                game=game_no, p1=p1, p2=p2, winner=winner, status=status)


def split_pairs(a, b, n_pairs):
    """Each mirror pair split 1-1: the player with team 1 (p1 of game 1) wins both games."""
    rows = []
    for k in range(n_pairs):
        rows += [game(a, b, "p1", k, game_no=1), game(b, a, "p1", k, game_no=2)]
    return pd.DataFrame(rows)


def scipy_fit(games: pd.DataFrame, prior_sd: float) -> dict:
    """Independent fit: per-game log posterior minimised by scipy BFGS, mean-0 Elo."""
    g = games[games["status"] == "finished"] if "status" in games else games
    players = sorted(set(g["p1"]) | set(g["p2"]))
    idx = {p: k for k, p in enumerate(players)}
    i, j = g["p1"].map(idx).to_numpy(), g["p2"].map(idx).to_numpy()
    s = g["winner"].map({"p1": 1.0, "tie": 0.5, "p2": 0.0}).to_numpy()
    c = np.log(10) / 400

    def f(x):  # x: ratings in natural log-odds units
        d = x[i] - x[j]
        r = x / c
        val = -(s * log_expit(d) + (1 - s) * log_expit(-d)).sum() + (r**2).sum() / (2 * prior_sd**2)
        gd = -(s - expit(d))
        grad = np.bincount(i, gd, len(players)) - np.bincount(j, gd, len(players))
        return val, grad + r / prior_sd**2 / c

    res = minimize(f, np.zeros(len(players)), jac=True, method="BFGS", options={"gtol": 1e-11})
    assert np.abs(res.jac).max() < 1e-6  # BFGS stops on precision loss; ~1e-6 Elo from optimum
    return dict(zip(players, res.x / c))


def test_recovers_known_ratings_within_intervals():
    # no ties here: ties at a fixed rate (not from the model) would compress the ratings
    games = mirror_games(TRUE, pairs_per_matchup=150, seed=1, tie_rate=0.0)  # 3,000 games
    table = fit_ratings(games).set_index("player")
    truth = pd.Series(TRUE) - TRUE["max-damage"] + 1000.0  # anchored the same way
    for p, t in truth.items():
        assert table.loc[p, "ci_low"] <= t <= table.loc[p, "ci_high"], (p, t, table.loc[p])
        assert abs(table.loc[p, "elo"] - t) < 60
    assert list(table.index) == sorted(TRUE, key=TRUE.get, reverse=True)
    widths = table["ci_high"] - table["ci_low"]
    assert ((widths > 10) & (widths < 150)).drop("max-damage").all()


@pytest.mark.parametrize("prior_sd", [800.0, 60.0])
def test_matches_independent_per_game_fit(prior_sd):
    games = mirror_games(TRUE, pairs_per_matchup=20, seed=2, tie_rate=0.1)
    # an undefeated player: the prior alone keeps it finite, so the prior must match too
    games = pd.concat([games, pd.DataFrame(
        [game("champ", p, "p1", k) for k in range(6) for p in ("random", "model-a")])])
    ours = fit_ratings(games, n_bootstrap=0, prior_sd=prior_sd).set_index("player")["elo"]
    ref = pd.Series(scipy_fit(games, prior_sd))
    ref = ref - ref["max-damage"] + 1000.0
    # with prior_sd=60 the prior moves ratings by a lot: agreement there checks that it is
    # centred at 0 before anchoring (on the average player), as in the reference
    assert np.abs(ours - ref[ours.index]).max() < 0.01


def test_point_fit_gradient_is_zero():
    games = mirror_games(TRUE, pairs_per_matchup=30, seed=3)
    players = sorted(TRUE)
    W, N = score_matrix(games, players)
    r = ratings._newton(W, N, 800.0)
    c = ratings.SCALE
    p = expit(c * (r[:, None] - r[None, :]))
    grad = c * (W - N * p).sum(1) - r / 800.0**2
    assert np.abs(grad).max() < 1e-10
    assert abs(r.mean()) < 1e-8


def test_ties_count_half():
    games = pd.DataFrame([game("a", "b", "p1"), game("b", "a", "tie", game_no=2),
                          game("a", "b", "p2", pair=1), game("a", "c", "tie", pair=0)])
    W, N = score_matrix(games, ["a", "b", "c"])
    np.testing.assert_array_equal(W, [[0.0, 1.5, 0.5], [1.5, 0.0, 0.0], [0.5, 0.0, 0.0]])
    np.testing.assert_array_equal(N, [[0, 3, 1], [3, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(W + W.T, N)

    only_ties = pd.DataFrame([game("max-damage", "x", "tie", k, game_no=1) for k in range(5)]
                             + [game("x", "max-damage", "tie", k, game_no=2) for k in range(5)])
    table = fit_ratings(only_ties).set_index("player")
    assert table.loc["x", "elo"] == pytest.approx(1000.0, abs=1e-9)
    assert table.loc["x", "ties"] == 10 and table.loc["x", "wins"] == 0


def test_bootstrap_resamples_whole_mirror_pairs():
    # Every pair is split 1-1. Drawing whole pairs, every sample is exactly 50%, so the
    # interval has zero width; drawing single games it would be roughly +-100 Elo.
    table = fit_ratings(split_pairs("max-damage", "bot", 30)).set_index("player")
    assert table.loc["bot", "elo"] == pytest.approx(1000.0, abs=1e-9)
    assert table.loc["bot", "boot_high"] - table.loc["bot", "boot_low"] < 1e-6
    # ...which is false precision: the reported interval is then the posterior's
    assert table.loc["bot", "interval"] == "posterior"
    assert table.loc["bot", "ci_high"] - table.loc["bot", "ci_low"] > 100

    # Pairs won 2-0 by one side: each sample's counts come in whole pairs (even N), the
    # samples do vary, and each draws as many pairs as there are.
    rows = []
    for k in range(40):
        w = "a" if k % 3 else "b"
        rows += [game("a", "b", "p1" if w == "a" else "p2", k), game("b", "a", "p2" if w == "a" else "p1", k, game_no=2)]
    games = pd.DataFrame(rows)
    g, players = ratings._finished(games, unit_cols=True)
    Wb, Nb = ratings._bootstrap_matrices(ratings._fold(g, players), 500, np.random.default_rng(0))
    assert np.all(Nb[:, 0, 1] == 80)
    assert np.all(Wb[:, 0, 1] % 2 == 0)
    assert Wb[:, 0, 1].std() > 3
    assert Wb[:, 0, 1].mean() == pytest.approx(2 * 27, rel=0.05)  # 27 pairs won by a


def test_incomplete_pair_is_its_own_unit():
    games = pd.concat([split_pairs("max-damage", "bot", 3).assign(status="finished"),
                       pd.DataFrame([game("max-damage", "bot", "p1", 3),
                                     game("bot", "max-damage", "p1", 3, game_no=2, status="error")])])
    g, players = ratings._finished(games, unit_cols=True)
    folded = ratings._fold(g, players)
    assert folded.unit_counts.sum() == 4  # three pairs + one lone game
    _, Nb = ratings._bootstrap_matrices(folded, 300, np.random.default_rng(1))
    totals = Nb[:, 0, 1]
    # k lone games and 4-k pairs: 8 - k games, and some samples hold the lone game
    assert set(np.unique(totals)) <= {4, 5, 6, 7, 8} and (totals % 2 == 1).any()


def test_anchor_and_point_inside_interval():
    games = mirror_games(TRUE, pairs_per_matchup=15, seed=4)
    for n_bootstrap in (200, 1):  # with one sample the raw interval is a single point
        table = fit_ratings(games, n_bootstrap=n_bootstrap, seed=7).set_index("player")
        md = table.loc["max-damage"]
        assert (md["elo"], md["ci_low"], md["ci_high"]) == (1000.0, 1000.0, 1000.0)
        assert (table["ci_low"] <= table["elo"]).all() and (table["elo"] <= table["ci_high"]).all()
    assert fit_ratings(games, anchor="random", anchor_elo=500.0).set_index("player").loc[
        "random", ["elo", "ci_low", "ci_high"]].tolist() == [500.0, 500.0, 500.0]


def test_reproducible_with_seed():
    games = mirror_games(TRUE, pairs_per_matchup=10, seed=5)
    pd.testing.assert_frame_equal(fit_ratings(games, seed=3), fit_ratings(games, seed=3))
    assert not fit_ratings(games, seed=3).equals(fit_ratings(games, seed=4))


def test_undefeated_player_is_finite():
    games = mirror_games({"max-damage": 1000.0, "random": 600.0}, 20, seed=6)
    games = pd.concat([games, pd.DataFrame(
        [game("god", "max-damage", "p1", k) for k in range(10)]
        + [game("max-damage", "god", "p2", k, game_no=2) for k in range(10)])])
    table = fit_ratings(games).set_index("player")
    assert np.isfinite(table[["elo", "ci_low", "ci_high"]].to_numpy()).all()
    assert table.index[0] == "god" and table.loc["god", "losses"] == 0
    assert 1300 < table.loc["god", "elo"] < 3000


def test_errors():
    with pytest.raises(RatingsError, match="no finished games"):
        fit_ratings(pd.DataFrame(columns=["run", "matchup", "pair", "game", "p1", "p2", "winner"]))
    with pytest.raises(RatingsError, match="no finished games"):
        fit_ratings(pd.DataFrame([game("a", "b", "p1", status="error")]))
    with pytest.raises(RatingsError, match="only one player"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_ratings(pd.DataFrame([game("max-damage", "max-damage", "p1")]))
    with pytest.raises(ValueError, match=r"'max-damage' is not among the players: a, b\..*anchor=<one of them>"):
        fit_ratings(split_pairs("a", "b", 2))
    disconnected = pd.concat([split_pairs("max-damage", "b", 2), split_pairs("c", "d", 2)])
    with pytest.raises(RatingsError, match=r"\{b, max-damage\}; \{c, d\}.*not comparable"):
        fit_ratings(disconnected)
    with pytest.raises(RatingsError, match="winner"):
        fit_ratings(pd.DataFrame([game("a", "max-damage", "a")]))


def test_harness_errors_are_excluded():
    games = mirror_games(TRUE, pairs_per_matchup=10, seed=8)
    junk = pd.DataFrame([game("max-damage", "model-a", None, 99, status="error"),
                         game("random", "model-a", "p1", 99, status="error")] * 5)
    with_junk = pd.concat([games, junk], ignore_index=True)
    pd.testing.assert_frame_equal(fit_ratings(with_junk), fit_ratings(games))
    assert player_summary(with_junk).set_index("player").loc["random", "games"] == 80
    # errors can also disconnect: c meets the others only in an errored game
    linked = pd.concat([split_pairs("max-damage", "b", 2),
                        pd.DataFrame([game("b", "c", "p1", status="error")])])
    with pytest.raises(RatingsError, match="not comparable"):
        fit_ratings(pd.concat([linked, split_pairs("c", "d", 2)]))


def test_head_to_head_and_summary():
    games = pd.DataFrame([game("a", "b", "p1"), game("b", "a", "tie", game_no=2),
                          game("a", "b", "p2", pair=1), game("c", "a", "p1"),
                          game("c", "a", "p1", status="error")])
    h = head_to_head(games).set_index(["player", "opponent"])
    assert h.loc[("a", "b"), ["wins", "ties", "losses", "games"]].tolist() == [1, 1, 1, 3]
    assert h.loc[("a", "b"), "win_rate"] == pytest.approx(0.5)
    assert h.loc[("c", "a"), ["wins", "games", "win_rate"]].tolist() == [1, 1, 1.0]
    assert h.loc[("a", "c"), ["losses", "games", "win_rate"]].tolist() == [1, 1, 0.0]
    assert len(h) == 4  # (a,b), (b,a), (a,c), (c,a); b and c never met
    s = player_summary(games).set_index("player")
    assert s.loc["a", ["games", "wins", "ties", "losses"]].tolist() == [4, 1, 1, 2]
    assert s.loc["a", "win_rate"] == pytest.approx(1.5 / 4)


def test_unit_types_reproduce_the_full_score_matrix():
    # Drawing every unit exactly once must give back W and N exactly, including a lone game
    # (its partner was a harness error) and an odd unit spanning two player pairs.
    games = mirror_games(TRUE, pairs_per_matchup=7, seed=9, tie_rate=0.2)
    games.loc[games.index[3], "status"] = "error"
    odd = pd.DataFrame([game("random", "model-a", "p1", 0, matchup="odd"),
                        game("heuristic", "model-b", "tie", 0, matchup="odd", game_no=2)])
    games = pd.concat([games, odd], ignore_index=True)
    g, players = ratings._finished(games, unit_cols=True)
    folded = ratings._fold(g, players)
    assert folded.unit_counts.sum() == 10 * 7 + 1
    n = len(players)
    Wu = (folded.S_w @ folded.unit_counts).reshape(n, n)
    Nu = (folded.S_n @ folded.unit_counts).reshape(n, n)
    np.testing.assert_array_equal(Wu + (Nu - Wu).T, folded.W)
    np.testing.assert_array_equal(Nu + Nu.T, folded.N)
    np.testing.assert_array_equal((folded.W, folded.N), score_matrix(games, players))


def test_newton_converges_on_lopsided_data():
    # 100,000 wins and no loss, weak prior: far from the start, Newton must still converge.
    W = np.array([[0.0, 1e5], [0.0, 0.0]])
    N = W + W.T
    for prior_sd in (800.0, 1e5):
        r = ratings._newton(W, N, prior_sd)
        p = expit(ratings.SCALE * (r[0] - r[1]))
        grad0 = ratings.SCALE * 1e5 * (1 - p) - r[0] / prior_sd**2
        assert abs(grad0) < 1e-10 and r[0] == pytest.approx(-r[1]) and np.isfinite(r).all()


def test_one_pair_never_gives_a_zero_width_interval():
    # one mirror pair: the bootstrap has one possible sample, so its interval is a point
    games = pd.DataFrame([game("llm", "max-damage", "p1", 0, game_no=1), game("max-damage", "llm", "p2", 0, game_no=2)])
    row = fit_ratings(games, n_bootstrap=200).set_index("player").loc["llm"]
    assert row["boot_high"] - row["boot_low"] < 1e-6
    assert row["interval"] == "posterior"
    assert row["ci_low"] < row["elo"] - 300 and row["ci_high"] > row["elo"] + 300
    assert (row["ci_low"], row["ci_high"]) == (row["post_low"], row["post_high"])
    assert row["pairs"] == 1 and row["games"] == 2
    # without a bootstrap at all, the posterior still gives an interval
    row0 = fit_ratings(games, n_bootstrap=0).set_index("player").loc["llm"]
    assert np.isnan(row0["boot_low"]) and row0["ci_high"] - row0["ci_low"] > 600


def test_many_pairs_report_the_bootstrap_and_agree_with_the_posterior():
    table = fit_ratings(mirror_games(TRUE, pairs_per_matchup=100, seed=3, tie_rate=0.0)).set_index("player")
    others = table.drop("max-damage")
    boot_w, post_w = others["boot_high"] - others["boot_low"], others["post_high"] - others["post_low"]
    assert ((boot_w / post_w).between(0.6, 1.6)).all(), (boot_w, post_w)
    assert (others["ci_high"] - others["ci_low"] >= np.maximum(boot_w, post_w) - 1e-9).all()
    assert table.loc["max-damage", "interval"] == "anchor"


def test_uncertainty_rank_on_a_constructed_case():
    # A is clearly best; B and C overlap each other; D overlaps C only; E is below everyone
    low = np.array([1400, 1100, 1050, 900, 500])
    high = np.array([1600, 1300, 1200, 1060, 700])
    assert ratings.uncertainty_rank(low, high).tolist() == [1, 2, 2, 3, 5]
    # the case: few games and a wide interval do not rank above a narrower, overlapping one
    assert ratings.uncertainty_rank([1021, 1064], [1464, 1266]).tolist() == [1, 1]
    assert ratings.uncertainty_rank([np.nan, 0], [np.nan, 1]).tolist() == [1, 1]


def lucky_games(elo: dict, pairs_per_matchup: int, seed: int, k: float = 0.8) -> pd.DataFrame:
    """Mirror games whose luck is known: a first chance event moves p1's winning chance p to p + k(1 - p) (with
    probability p) or p - kp, then the result is drawn from that chance. The event's luck (new chance - p) has
    mean 0; the score minus it keeps the mean p with (1 - k²) of the variance, and falls outside [0, 1]."""
    rng = np.random.default_rng(seed)
    games = mirror_games(elo, pairs_per_matchup, seed, tie_rate=0.0)
    p = expit(ratings.SCALE * (games["p1"].map(elo) - games["p2"].map(elo))).to_numpy()
    up = rng.random(len(games)) < p
    after = np.where(up, p + k * (1 - p), p - k * p)
    won = rng.random(len(games)) < after
    luck = after - p
    return games.assign(winner=np.where(won, "p1", "p2"), uid=[f"u{n}" for n in range(len(games))],
                        luck_p1=luck, adjusted_p1=won - luck)


def scipy_adjusted_fit(games: pd.DataFrame, prior_sd: float, ci: float = 0.95) -> pd.DataFrame:
    """Independent quasi-likelihood fit of the adjusted scores, game by game: scipy BFGS on
    sum a·log p + (1 - a)·log(1 - p), the dispersion φ from each mirror pair's score against the fit (with its
    prior of 4 degrees of freedom at 1), the likelihood divided by φ, refitted; the interval elo ± t·sd from
    the Hessian written out here."""
    players = sorted(set(games["p1"]) | set(games["p2"]))
    idx = {p: k for k, p in enumerate(players)}
    i, j = games["p1"].map(idx).to_numpy(), games["p2"].map(idx).to_numpy()
    a = games["adjusted_p1"].to_numpy(float)
    c, n = np.log(10) / 400, len(players)

    def fit(phi):
        def f(x):
            d = x[i] - x[j]
            r = x / c
            val = -(a * log_expit(d) + (1 - a) * log_expit(-d)).sum() / phi + (r**2).sum() / (2 * prior_sd**2)
            gd = -(a - expit(d)) / phi
            return val, np.bincount(i, gd, n) - np.bincount(j, gd, n) + r / prior_sd**2 / c

        res = minimize(f, np.zeros(n), jac=True, method="BFGS", options={"gtol": 1e-11})
        assert np.abs(res.jac).max() < 1e-6
        return res.x / c

    r1 = fit(1.0)
    # per mirror pair, from the view of the matchup's alphabetically first player
    first = np.where(games["p1"] < games["p2"], games["p1"], games["p2"])
    sign = np.where(games["p1"] == first, 1.0, -1.0)
    p = expit(c * (r1[i] - r1[j]))
    pair = games.assign(res=sign * (a - p), var=p * (1 - p)).groupby(["run", "matchup", "pair"])[["res", "var"]].sum()
    df = len(pair) - (n - 1) + 4
    phi = float((4 + (pair["res"] ** 2 / pair["var"]).sum()) / df)
    r = fit(phi)
    p = expit(c * (r[i] - r[j]))
    e = np.zeros((len(games), n))
    e[np.arange(len(games)), i], e[np.arange(len(games)), j] = 1.0, -1.0
    precision = (e.T * (c**2 * p * (1 - p) / phi)) @ e + np.eye(n) / prior_sd**2
    cov = np.linalg.inv(precision)
    md = idx["max-damage"]
    sd = np.sqrt(np.diag(cov) + cov[md, md] - 2 * cov[:, md])
    elo = r - r[md] + 1000.0
    half = student_t.ppf((1 + ci) / 2, df) * sd
    return pd.DataFrame({"elo": elo, "post_low": elo - half, "post_high": elo + half, "phi": phi}, index=players)


@pytest.mark.parametrize("prior_sd", [800.0, 60.0])
def test_adjusted_fit_equals_an_independent_computation(prior_sd):
    games = lucky_games(TRUE, pairs_per_matchup=15, seed=21)
    assert (games["adjusted_p1"] > 1).any() and (games["adjusted_p1"] < 0).any()
    ours = fit_ratings(games, n_bootstrap=0, prior_sd=prior_sd, score="adjusted_p1").set_index("player")
    ref = scipy_adjusted_fit(games, prior_sd)
    for col in ("elo", "post_low", "post_high"):
        assert np.abs(ours[col] - ref.loc[ours.index, col]).drop("max-damage").max() < 0.01, col
    assert 0.2 < ref["phi"].iloc[0] < 0.6  # (1 - k²) = 0.36 of the variance is left
    # ...and it is not the raw fit: the results alone give other ratings
    raw = fit_ratings(games, n_bootstrap=0, prior_sd=prior_sd).set_index("player")
    assert np.abs(raw["elo"] - ours["elo"]).max() > 5


def test_adjusted_ratings_are_unbiased_and_narrower():
    # 3,000 games: the adjusted fit covers the truth, as the raw one does, with about sqrt(0.36) of its width
    games = lucky_games(TRUE, pairs_per_matchup=150, seed=22)
    raw = fit_ratings(games).set_index("player")
    adj = fit_ratings(games, score="adjusted_p1").set_index("player")
    truth = pd.Series(TRUE)
    assert ((adj["ci_low"] <= truth[adj.index]) & (truth[adj.index] <= adj["ci_high"])).all(), adj
    assert (np.abs(adj["elo"] - truth[adj.index]) < 40).all()
    ratio = ((adj["ci_high"] - adj["ci_low"]) / (raw["ci_high"] - raw["ci_low"])).drop("max-damage")
    assert ratio.between(0.45, 0.8).all(), ratio
    assert (adj["interval"].drop("max-damage") == "bootstrap").all() or ratio.max() < 0.8
    # the records stay the results'
    assert (adj[["wins", "ties", "losses", "games"]] == raw[["wins", "ties", "losses", "games"]]).all().all()


def test_a_game_without_measured_luck_keeps_its_result():
    games = lucky_games(TRUE, pairs_per_matchup=3, seed=23)
    luck = games[["uid", "luck_p1", "adjusted_p1"]].assign(error=None)
    luck.loc[luck.index[0], ["luck_p1", "adjusted_p1", "error"]] = [0.0, float(games["winner"].iloc[0] == "p1"),
                                                                     "no searchable turn"]
    joined = ratings.with_luck(games.drop(columns=["luck_p1", "adjusted_p1"]), luck.iloc[:-1])
    assert joined["luck_p1"].isna().tolist() == [True] + [False] * (len(games) - 2) + [True]
    g, _ = ratings._finished(joined, unit_cols=True, score="adjusted_p1")
    np.testing.assert_array_equal(g["fit"].iloc[[0, -1]], g["s1"].iloc[[0, -1]])
    np.testing.assert_allclose(g["fit"].iloc[1:-1], games["adjusted_p1"].iloc[1:-1])
    with pytest.raises(RatingsError, match="adjusted_p1"):
        fit_ratings(games.drop(columns="adjusted_p1"), score="adjusted_p1")


def test_luck_figures_from_each_players_side():
    games = pd.DataFrame([game("a", "b", "p1", 0), game("b", "a", "p2", 0, game_no=2),
                          game("a", "c", "p1", 1), game("c", "a", "tie", 1, game_no=2)]).assign(
        luck_p1=[0.3, -0.1, np.nan, 0.2])
    figures = ratings.luck_figures(games, n_bootstrap=50).set_index("player")
    # a: +0.3 (p1), +0.1 (p2 of -0.1), -0.2 (p2 of 0.2); the game without luck is left out
    assert figures.loc["a", "luck_mean"] == pytest.approx(0.2 / 3)
    assert figures.loc["b", "luck_mean"] == pytest.approx((-0.3 - 0.1) / 2)
    assert figures.loc["c", "luck_mean"] == pytest.approx(0.2)
    # a's luck is in two pairs: an interval; b's and c's in one: none (one pair has one possible sample)
    assert figures.loc["a", "luck_lo"] <= figures.loc["a", "luck_mean"] <= figures.loc["a", "luck_hi"]
    assert figures[["luck_lo", "luck_hi"]].drop("a").isna().all().all()
    assert ratings.luck_figures(games.drop(columns="luck_p1"))["luck_mean"].isna().all()


def test_mean_luck_interval_covers_zero_with_its_expected_width():
    games = lucky_games(TRUE, pairs_per_matchup=100, seed=24)
    figures = ratings.luck_figures(games).set_index("player")
    half = (figures["luck_hi"] - figures["luck_lo"]) / 2  # about 1.96 standard errors
    assert (figures["luck_mean"].abs() < 1.8 * half).all(), figures  # the mean luck is 0: within 3.5 of them
    assert ((figures["luck_lo"] < 0) & (0 < figures["luck_hi"])).sum() >= 4  # 95% intervals: most cover 0
    # games are independent here: the width is about 2·1.96·sd/sqrt(games)
    side = pd.concat([pd.DataFrame({"player": games["p1"], "luck": games["luck_p1"]}),
                      pd.DataFrame({"player": games["p2"], "luck": -games["luck_p1"]})])
    expected = 2 * 1.96 * side.groupby("player")["luck"].std() / np.sqrt(side.groupby("player").size())
    ratio = (figures["luck_hi"] - figures["luck_lo"]) / expected[figures.index]
    assert ratio.between(0.75, 1.3).all(), ratio


def test_luck_figures_do_not_depend_on_the_order_of_the_games():
    """The same games in another order (a run's shards merged, a store's order) give the same figures: the
    bootstrap draws pairs by their keys, not by where their games come (it drew by the games' order)."""
    games = lucky_games(TRUE, pairs_per_matchup=12, seed=27)
    shuffled = games.sample(frac=1.0, random_state=3)
    pd.testing.assert_frame_equal(ratings.luck_figures(games), ratings.luck_figures(shuffled), rtol=1e-12)


def test_dispersion_gives_the_variance_ratio_over_mirror_pairs():
    games = lucky_games(TRUE, pairs_per_matchup=150, seed=25)
    raw, df = ratings.dispersion(games)
    adjusted, df_adjusted = ratings.dispersion(games, "adjusted_p1")
    assert df == df_adjusted == 10 * 150 - 4 + 4  # pairs - (players - 1), and the prior's 4
    assert raw == pytest.approx(1.0, abs=0.1)  # results with no team luck: binomial
    assert raw / adjusted == pytest.approx(1 / 0.36, rel=0.15)  # what k = 0.8 leaves: 1 - k²


def test_adjusted_scores_fold_into_unit_types_that_give_back_their_score_matrix():
    # real-valued scores: pairs are one type only when their scores are exactly equal (not rounded to halves)
    games = lucky_games(TRUE, pairs_per_matchup=7, seed=26)
    games["adjusted_p1"] += np.random.default_rng(26).normal(0, 0.01, len(games))  # no two pairs alike
    games = pd.concat([games, games.iloc[:2].assign(pair=99)], ignore_index=True)  # one pair twice: one type
    g, players = ratings._finished(games, unit_cols=True, score="adjusted_p1")
    folded = ratings._fold(g, players)
    n = len(players)
    assert folded.unit_counts.sum() == 10 * 7 + 1 and len(folded.unit_counts) == 10 * 7
    Wu = (folded.S_w @ folded.unit_counts).reshape(n, n)
    Nu = (folded.S_n @ folded.unit_counts).reshape(n, n)
    np.testing.assert_allclose(Wu + (Nu - Wu).T, folded.W, rtol=0, atol=1e-12)
    idx = {p: k for k, p in enumerate(players)}
    by_game = np.zeros((n, n))
    np.add.at(by_game, (g["p1"].map(idx), g["p2"].map(idx)), g["adjusted_p1"])
    np.add.at(by_game, (g["p2"].map(idx), g["p1"].map(idx)), 1 - g["adjusted_p1"])
    np.testing.assert_allclose(folded.W, by_game, rtol=0, atol=1e-12)


def test_pairs_that_all_split_with_no_luck_measured_do_not_give_a_zero_width_interval():
    # every pair split 1-1 and no luck: the χ² is 0; the dispersion's prior keeps φ above 0 and the interval honest
    games = split_pairs("max-damage", "bot", 5).assign(adjusted_p1=lambda g: (g["winner"] == "p1").astype(float))
    phi, df = ratings.dispersion(games, "adjusted_p1")
    assert (phi, df) == (pytest.approx(4 / 8), 8)
    row = fit_ratings(games, score="adjusted_p1").set_index("player").loc["bot"]
    assert row["interval"] == "posterior" and row["ci_high"] - row["ci_low"] > 200


def test_the_adjusted_fit_is_the_same_whatever_the_order_of_the_games():
    # real-valued scores sum differently in another order: a run published whole and from its shards must agree
    games = lucky_games(TRUE, pairs_per_matchup=20, seed=24).assign(game_id=lambda g: [f"g{n}" for n in range(len(g))])
    ours = fit_ratings(games, score="adjusted_p1", n_bootstrap=200)
    for seed in (1, 2):
        shuffled = games.sample(frac=1, random_state=seed)
        pd.testing.assert_frame_equal(fit_ratings(shuffled, score="adjusted_p1", n_bootstrap=200), ours,
                                      check_exact=True)
