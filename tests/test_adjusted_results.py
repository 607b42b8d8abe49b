"""The luck-adjusted ratings in the published results: compute_results joins luck rows by uid, ratings.csv
carries elo_adjusted and the mean luck per player, and both are empty for runs without luck.

The runs are synthetic stores (tests/support/synthetic_runs.py, no Showdown server); the luck rows are made
here, with the columns luck.csv fixes (docs/results.md), until the luck analysis writes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pokebench.results.figures import ADJUSTED_COLUMNS, compute_results
from pokebench.results.loading import load_runs
from pokebench.results.luck_gain import LUCK_GAIN_COLUMNS, luck_gain
from pokebench.results.ratings import LUCK_COLUMNS
from pokebench.results.reading import read_table
from pokebench.results.schema import RatingRow
from pokebench.results.writing import write_table
from support.synthetic_runs import BOTS, make_run


def luck_rows(games: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """One row per game as luck.csv has them: luck_p1 drawn in [-0.4, 0.4], adjusted_p1 = score - luck_p1;
    the first game has no searchable turn (luck 0, its error said)."""
    rng = np.random.default_rng(seed)
    score = games["winner"].map({"p1": 1.0, "tie": 0.5, "p2": 0.0}).to_numpy()
    luck = rng.uniform(-0.4, 0.4, len(games))
    luck[0] = 0.0
    error = [None] * len(games)
    error[0] = "no searchable turn"
    return pd.DataFrame({"uid": games["uid"], "game_id": games["game_id"], "run": games["run"], "p1": games["p1"],
                         "p2": games["p2"], "score_p1": score, "luck_p1": luck, "adjusted_p1": score - luck,
                         "start_p1": 0.0, "turns_analysed": 3, "turns_failed": 0, "error": error})


@pytest.fixture
def data(tmp_path: Path):
    make_run(tmp_path / "runs", "lucky", players=BOTS, pairs=6)
    return load_runs(["lucky"], tmp_path / "runs")


def test_ratings_gain_the_adjusted_elo_and_the_mean_luck(data, tmp_path: Path) -> None:
    luck = luck_rows(data.games)
    ratings = compute_results(data, n_bootstrap=50, luck=luck).ratings.set_index("player")
    assert ratings[list(ADJUSTED_COLUMNS + tuple(LUCK_COLUMNS))].notna().all().all()
    md = ratings.loc["max-damage"]
    assert (md["elo_adjusted"], md["adjusted_lo"], md["adjusted_hi"]) == (1000.0, 1000.0, 1000.0)
    assert (ratings["adjusted_lo"] <= ratings["elo_adjusted"]).all()
    assert (ratings["elo_adjusted"] <= ratings["adjusted_hi"]).all()
    assert (ratings["elo_adjusted"] - ratings["elo"]).abs().max() > 1  # other scores, another fit
    # the mean luck from each player's side, by hand; the game whose luck is unknown is not a zero
    measured = luck[luck["error"].isna()]
    side = pd.concat([pd.DataFrame({"player": measured["p1"], "luck": measured["luck_p1"]}),
                      pd.DataFrame({"player": measured["p2"], "luck": -measured["luck_p1"]})])
    by_hand = side.groupby("player")["luck"].mean()
    np.testing.assert_allclose(ratings.loc[by_hand.index, "luck_mean"], by_hand, rtol=1e-12)
    # ratings.csv carries the columns and reads back
    write_table(tmp_path / "ratings.csv", RatingRow, ratings.reset_index())
    back = read_table(tmp_path / "ratings.csv", RatingRow).set_index("player")
    np.testing.assert_allclose(back.loc[ratings.index, "elo_adjusted"], ratings["elo_adjusted"])


def test_luck_of_games_outside_the_publish_is_ignored_and_no_luck_gives_empty_columns(data) -> None:
    luck = luck_rows(data.games)
    strangers = luck.assign(uid=luck["uid"] + "-elsewhere", luck_p1=0.9, adjusted_p1=5.0)
    with_strangers = compute_results(data, n_bootstrap=20, luck=pd.concat([luck, strangers])).ratings
    pd.testing.assert_frame_equal(with_strangers, compute_results(data, n_bootstrap=20, luck=luck).ratings)
    for none in (None, luck.iloc[:0], strangers):
        ratings = compute_results(data, n_bootstrap=20, luck=none).ratings
        assert ratings[list(ADJUSTED_COLUMNS + tuple(LUCK_COLUMNS))].isna().all().all()
        assert ratings["elo"].notna().all()


def test_the_run_summary_shows_the_adjusted_elo_and_interval_beside_the_raw_one(tmp_path: Path) -> None:
    from pokebench.play.summary import ThisStart, run_summary
    from pokebench.results.ratings import fit_ratings, with_luck
    from pokebench.results.run_stores import RunStores

    make_run(tmp_path / "runs", "lucky", players=BOTS, pairs=6)
    with RunStores(tmp_path / "runs" / "lucky") as stores:
        games = stores.games()  # a run's own store: no uid, the luck rows join by run and game id
        luck = luck_rows(games.assign(uid=None))
        planned = set(games["game_id"])
        plain = run_summary(stores, "lucky", planned, ThisStart(), "max-damage")
        summary = run_summary(stores, "lucky", planned, ThisStart(), "max-damage", luck=luck)
    assert "adjusted" not in plain
    assert (f"Leaderboard: (Elo with max-damage at 1000); adjusted: from luck-adjusted scores "
            f"({len(games) - 1} of {len(games)} games with measured luck)") in summary
    header, *rows = summary.split("Leaderboard:", 1)[1].splitlines()[1:4]
    assert header.split() == ["player", "Elo", "95%", "interval", "adjusted", "Elo", "adjusted", "interval", "games",
                              "W-T-L", "win", "rate"]
    fit = fit_ratings(with_luck(games, luck), score="adjusted_p1").set_index("player")
    for row in rows:
        player, _, _, _, _, elo, low, _, high = row.split()[:9]
        assert (elo, low, high) == tuple(f"{fit.loc[player, c]:.0f}" for c in ("elo", "ci_low", "ci_high"))
    # what the adjustment did per matchup: pairs.csv's ratio and interval, the same figures
    assert "Luck adjustment" not in plain
    gain = summary.split("Luck adjustment: variance over mirror pairs, raw / adjusted")[1].splitlines()[2:]
    data = load_runs(["lucky"], tmp_path / "runs")  # the publish: the same luck rows, joined by uid
    uids = data.games[["run", "game_id", "uid"]]
    published = compute_results(data, n_bootstrap=200,
                                luck=luck.drop(columns="uid").merge(uids, on=["run", "game_id"])).pairs
    assert len(gain) >= len(published) >= 3
    for line, r in zip(gain, published.itertuples()):
        assert line.split() == [r.player_a, "vs", r.player_b, str(r.luck_pairs), f"{r.variance_ratio:.2f}×",
                                f"[{r.ratio_lo:.2f},", f"{r.ratio_hi:.2f}]"]


def test_pairs_say_what_the_adjustment_did_per_matchup_as_computed_by_hand(data) -> None:
    luck = luck_rows(data.games)
    results = compute_results(data, n_bootstrap=200, luck=luck)
    pairs = results.pairs.set_index("matchup")
    measured = luck[luck["error"].isna()].set_index("uid")
    games = data.games  # the stores hold finished games
    checked = 0
    for matchup, row in pairs.iterrows():
        raw, adjusted = [], []  # A's pair scores over the pairs whose two games were both measured
        for _, pair in games[games["matchup"] == matchup].groupby(["run", "pair"]):
            if len(pair) != 2 or not pair["uid"].isin(measured.index).all():
                continue
            a_raw = a_adj = 0.0
            for game in pair.itertuples():
                lucky = measured.loc[game.uid]
                mine = game.p1 == row["player_a"]
                a_raw += (lucky["score_p1"] if mine else 1 - lucky["score_p1"]) / 2
                a_adj += (lucky["adjusted_p1"] if mine else 1 - lucky["adjusted_p1"]) / 2
            raw.append(a_raw)
            adjusted.append(a_adj)
        assert row["luck_pairs"] == len(raw)
        var_raw, var_adjusted = np.var(raw, ddof=1), np.var(adjusted, ddof=1)
        np.testing.assert_allclose([row["var_raw"], row["var_adjusted"], row["variance_ratio"], row["a_luck_mean"]],
                                   [var_raw, var_adjusted, var_raw / var_adjusted,
                                    np.mean(np.subtract(raw, adjusted))], rtol=1e-12)
        assert row["ratio_lo"] < row["ratio_hi"] and row["a_luck_lo"] < row["a_luck_hi"]
        checked += 1
    assert checked == len(pairs) >= 3
    # the game without measured luck takes its pair out of its matchup's luck columns, not its counts
    first = games[games["uid"] == luck["uid"].iloc[0]].iloc[0]
    assert pairs.loc[first["matchup"], "luck_pairs"] == pairs.loc[first["matchup"], "pairs"] - 1
    assert (pairs.drop(index=first["matchup"])["luck_pairs"] == pairs.drop(index=first["matchup"])["pairs"]).all()
    # the same seed, the same intervals; none without luck
    again = compute_results(data, n_bootstrap=200, luck=luck).pairs
    pd.testing.assert_frame_equal(again, results.pairs)
    for none in (None, luck.iloc[:0]):
        plain = compute_results(data, n_bootstrap=20, luck=none).pairs
        assert plain[list(LUCK_GAIN_COLUMNS)].isna().all().all()
        pd.testing.assert_frame_equal(plain.drop(columns=list(LUCK_GAIN_COLUMNS)),
                                      results.pairs.drop(columns=list(LUCK_GAIN_COLUMNS)))


def test_a_matchup_whose_results_did_not_vary_has_no_variance_ratio() -> None:
    """One side won every game: the raw pair scores have no variance, so a ratio (0, whatever trace of luck was
    measured) would say the adjustment made things infinitely worse. It is left empty, with its interval; the
    luck columns stay."""
    pairs = pd.DataFrame({"matchup": ["a-vs-b"] * 4 + ["c-vs-d"] * 4, "run": "r", "pair": [1, 2, 3, 4] * 2,
                          "raw": [1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.0, 0.5],
                          "adjusted": [0.98, 1.01, 1.03, 0.99, 0.9, 0.55, 0.1, 0.45]})
    gain = luck_gain(pairs, n_bootstrap=50).set_index("matchup")
    assert gain.loc["a-vs-b", "var_raw"] == 0 and gain.loc["a-vs-b", "var_adjusted"] > 0
    assert gain.loc["a-vs-b", ["variance_ratio", "ratio_lo", "ratio_hi"]].isna().all()
    np.testing.assert_allclose(gain.loc["a-vs-b", "a_luck_mean"], np.mean([0.02, -0.01, -0.03, 0.01]))
    assert gain.loc["c-vs-d", "variance_ratio"] == pytest.approx(pairs["raw"][4:].var() / pairs["adjusted"][4:].var())
