"""Does decision quality measure skill, and with how many games? (issue 18, item 4)

Plays a ladder of players of known order (``conf/run/ladder.yaml``: Random, Max-damage with a random
action with probability 0.5 / 0.3 / 0.1, Max-damage, the heuristic bot, the search bot at two budgets),
scores every decision with ``pokebench analyse``, publishes, and prints:

(a) **ordering**: each player's Elo and mean regret (from its own information, the headline view,
    and from full information), and Spearman's rho between Elo and mean regret (lower regret = stronger,
    so a measure of skill gives rho near -1), with a 95% interval from resampling whole games;
(b) **sample efficiency**: for each pair of neighbours on the Elo scale, how often each measure orders
    them as the whole run's Elo does, from n games drawn with replacement: the score of n games between
    them (win/loss); the mean regret of each player's decisions in those same n games; and the mean
    regret of each player in n of its games against any opponent (decision quality needs no common
    games); where the run's luck was analysed (``pokebench analyse`` does both), the luck-adjusted score of
    the same n games (docs/analysis.md, "Luck") — and the smallest n that orders them correctly 95% of the
    time. Neighbours whose Elo gap is
    within the noise have no reliable "correct" order: read their rows with their gap.

Usage::

    .venv/bin/python benchmarks/decision_quality_validity.py                 # play, analyse, report
    .venv/bin/python benchmarks/decision_quality_validity.py --skip-play     # report on a finished run
    .venv/bin/python benchmarks/decision_quality_validity.py --pairs 20 --workers 2

A figure, not a test: nothing here asserts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from pokebench.analysis.luck_rows import read_luck
from pokebench.analysis.quality import bootstrap_means, read_quality
from pokebench.analysis.settings import Settings
from pokebench.paths import RUNS_DIR
from pokebench.results.loading import load_runs
from pokebench.results.ratings import fit_ratings

REPO = Path(__file__).resolve().parents[1]
GAME_COUNTS = (2, 4, 8, 16, 32, 64, 128, 256, 512)


def _step(title: str, command: list[str]) -> float:
    print(f"\n== {title}: {' '.join(command)}", flush=True)
    started = time.monotonic()
    subprocess.run(command, cwd=REPO, check=True)
    return time.monotonic() - started


def _regret_by_player(quality: pd.DataFrame, column: str) -> pd.Series:
    scored = quality[(quality["options"] > 1) & quality[column].notna()]
    return scored.groupby("player")[column].mean()


def _elo(games: pd.DataFrame, anchor: str) -> pd.Series:
    return fit_ratings(games, anchor=anchor, n_bootstrap=0).set_index("player")["elo"]


def ordering(games: pd.DataFrame, quality: pd.DataFrame, anchor: str, resamples: int, seed: int) -> None:
    """(a): Elo against mean regret, Spearman's rho with an interval from resampling whole games."""
    elo = _elo(games, anchor)
    own, full = _regret_by_player(quality, "regret"), _regret_by_player(quality, "regret_full")
    table = pd.DataFrame({"elo": elo, "mean_regret": own, "mean_regret_full": full}).sort_values("elo")
    print("\n(a) Elo and mean regret per player (regret: engine's best value - chosen action's value)")
    print(table.round(4).to_string())
    rng = np.random.default_rng(seed)
    uids = games["uid"].to_numpy()
    by_uid = {uid: rows for uid, rows in quality.groupby("uid")}
    for label, column, mean in (("own information", "regret", "mean_regret"),
                                ("full information", "regret_full", "mean_regret_full")):
        rho = spearmanr(table["elo"], table[mean]).statistic
        draws = []
        for _ in range(resamples):
            picked = rng.choice(uids, size=len(uids), replace=True)
            sample_games = games.set_index("uid").loc[picked].reset_index()
            sample_games["uid"] = [f"{u}#{i}" for i, u in enumerate(picked)]  # a drawn twice game counts twice
            try:
                sample_elo = _elo(sample_games, anchor)
            except ValueError:  # a draw that left the scale unconnected
                continue
            sample_quality = pd.concat([by_uid[u] for u in picked if u in by_uid])
            regret = _regret_by_player(sample_quality, column)
            both = pd.concat([sample_elo, regret], axis=1, join="inner")
            draws.append(spearmanr(both.iloc[:, 0], both.iloc[:, 1]).statistic)
        low, high = np.percentile(draws, [2.5, 97.5])
        print(f"Spearman rho(Elo, mean regret, {label}) = {rho:+.3f}  95% interval [{low:+.3f}, {high:+.3f}] "
              f"({len(draws)} resamples of the {len(uids)} games; -1: regret orders the players exactly as Elo)")


def _score_of(games: pd.DataFrame, player: str) -> np.ndarray:
    """1 / 0.5 / 0 for `player` in each game."""
    side = np.where(games["p1"] == player, "p1", "p2")
    return np.where(games["winner"] == "tie", 0.5, (games["winner"] == side).astype(float))


def sample_efficiency(games: pd.DataFrame, quality: pd.DataFrame, adjusted_p1: pd.Series, anchor: str,
                      resamples: int, seed: int) -> None:
    """(b): games needed by each measure to order two Elo neighbours correctly 95% of the time; `adjusted_p1`
    (side one's luck-adjusted score by uid; empty: the luck was not analysed) gives the adjusted score's column,
    a game without one counting its score."""
    elo = _elo(games, anchor).sort_values()
    rng = np.random.default_rng(seed)
    scored = quality[(quality["options"] > 1) & quality["regret"].notna()]
    sums = scored.groupby(["uid", "player"])["regret"].agg(["sum", "count"])
    rows = []
    for weaker, stronger in zip(elo.index[:-1], elo.index[1:]):
        between = games[((games["p1"] == weaker) & (games["p2"] == stronger))
                        | ((games["p1"] == stronger) & (games["p2"] == weaker))].reset_index(drop=True)
        if between.empty:
            continue
        score = _score_of(between, stronger)
        adjusted = between["uid"].map(adjusted_p1).to_numpy(float)
        adjusted = np.where(np.isnan(adjusted), score, np.where(between["p1"] == stronger, adjusted, 1 - adjusted))
        regret = np.zeros((len(between), 2, 2))  # game, player (weaker, stronger), (sum, count)
        for i, uid in enumerate(between["uid"]):
            for j, player in enumerate((weaker, stronger)):
                if (uid, player) in sums.index:
                    regret[i, j] = sums.loc[(uid, player)].to_numpy(float)
        row: dict[str, object] = {"weaker": weaker, "stronger": stronger, "elo_gap": round(elo[stronger] - elo[weaker]),
                                  "games": len(between), "win_rate": round(score.mean(), 3)}
        pools = [sums.xs(player, level="player").to_numpy(float) for player in (weaker, stronger)]
        for n in GAME_COUNTS:
            picks = rng.integers(0, len(between), size=(resamples, n))
            any_means = [bootstrap_means(pool[:, 0], pool[:, 1], resamples, rng, size=n) for pool in pools]
            row[f"ra@{n}"] = round(float(np.mean(any_means[1] < any_means[0])), 3)
            s = score[picks].mean(axis=1)
            win_loss = np.mean(np.where(s == 0.5, 0.5, s > 0.5))
            totals = regret[picks].sum(axis=1)  # resample, player, (sum, count)
            means = totals[..., 0] / np.maximum(totals[..., 1], 1)
            by_regret = np.mean(np.where(means[:, 1] == means[:, 0], 0.5, means[:, 1] < means[:, 0]))
            row[f"wl@{n}"], row[f"rg@{n}"] = round(float(win_loss), 3), round(float(by_regret), 3)
            if not adjusted_p1.empty:
                row[f"aj@{n}"] = round(float(np.mean(adjusted[picks].mean(axis=1) > 0.5)), 3)
        for measure in ("wl", "rg", "ra") + (() if adjusted_p1.empty else ("aj",)):
            enough = [n for n in GAME_COUNTS if float(row[f"{measure}@{n}"]) >= 0.95]  # type: ignore[arg-type]
            row[f"{measure}_games_95"] = enough[0] if enough else f">{GAME_COUNTS[-1]}"
        rows.append(row)
    table = pd.DataFrame(rows)
    print("\n(b) Share of resamples ordering the neighbours as the run's Elo does, from n games "
          "(wl: the score of n games between them; rg: each player's mean regret in those same n games; "
          "ra: each player's mean regret in n of its games against any opponent of the ladder; "
          "aj: the luck-adjusted score of the same n games as wl)")
    with pd.option_context("display.width", 250, "display.max_columns", 100):
        print(table.to_string(index=False))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", default="ladder", help="run file and name (default: ladder)")
    parser.add_argument("--pairs", type=int, default=10, help="mirror pairs per matchup (default: 10)")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2, help="analysis worker processes (default: 2)")
    parser.add_argument("--iterations", type=int, default=500, help="analysis: MCTS iterations per position")
    parser.add_argument("--samples", type=int, default=2, help="analysis: sampled positions of a player's view")
    parser.add_argument("--skip-play", action="store_true", help="use the run as it is in runs/RUN")
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--anchor", default="max-damage")
    options = parser.parse_args(argv)
    py = sys.executable
    if not options.skip_play:
        seconds = _step("play", [py, "-m", "pokebench", f"+run={options.run}", f"pairs={options.pairs}",
                                 f"concurrency={options.concurrency}", "publish=false"])
        print(f"played in {seconds:.0f} s")
    seconds = _step("analyse", [py, "-m", "pokebench", "analyse", options.run, "--workers", str(options.workers),
                                "--iterations", str(options.iterations), "--samples", str(options.samples)])
    print(f"analysed in {seconds:.0f} s (cached searches are not repeated)")
    with load_runs([options.run]) as data:
        games = data.games.copy()
    quality, _ = read_quality([REPO / RUNS_DIR / options.run], games["uid"], Settings(options.iterations, options.samples))
    for column in ("options", "regret", "regret_full"):
        quality[column] = pd.to_numeric(quality[column])
    print(f"\n{len(games)} games, {len(quality)} decisions ({int((quality['options'] > 1).sum())} with a choice)")
    luck, _ = read_luck([REPO / RUNS_DIR / options.run], games)
    print(f"luck analysed for {len(luck)} of the games")
    ordering(games, quality, options.anchor, min(options.resamples, 300), seed=0)
    sample_efficiency(games, quality, luck.set_index("uid")["adjusted_p1"], options.anchor, options.resamples, seed=0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
