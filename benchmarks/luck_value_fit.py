"""Fit the luck analysis's value function on bot games of their own seeds, and print its calibration.

    .venv/bin/python benchmarks/luck_value_fit.py [--runs-dir /tmp/pb-luck/runs] [--run luck-fit]
                                                 [--pairs 25] [--write]

Plays (or reuses) run `--run` of the ladder's cheap bots on the seed text ``pokebench-luck-fit`` (never
the seeds of a run that is analysed: a value fitted on the evaluated games' outcomes would bias the luck),
replays every game, and takes every decision point's full-information state (side one = p1) with the
game's result. Then:

1. a logistic fit (scipy's L-BFGS, a small L2 penalty, no intercept) on the games of 4 pairs in 5, and
   its calibration on the other fifth: predicted against observed in ten bins, the log loss and the
   Brier score beside the HP balance alone's;
2. the fit on every game; ``--write`` writes it to pokebench/analysis/value_model.json (the shipped model);
   ``--check-run luck-eval`` prints its calibration on games of other seeds;
3. with ``--variance``: the same features fitted instead to what the luck is for, the least variance over
   mirror pairs of the adjusted score (pooled, each matchup around its mean; from every turn's outcome × roll
   rows, ``TurnOutcomes.rows``; a small L2 pull towards the log-loss fit), on the first ``--variance-games``
   games, and the variance ratio raw / adjusted of both fits on ``--check-run``'s games. Any fixed V keeps the
   adjusted score unbiased, so this fit is legitimate; it is printed, never written (the shipped V stays a
   calibrated win probability: the site draws it).
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.optimize import minimize

from pokebench.analysis.luck import move_turns, turn_outcomes
from pokebench.analysis.value import FEATURES, MODEL_FILE, ValueModel, features, finished_value
from pokebench.engine.errors import EngineError
from pokebench.engine.from_showdown import game_positions, position_of_state
from pokebench.engine.state import build_state
from pokebench.results.loading import load_runs

SEED_TEXT = "pokebench-luck-fit"
MATCHUPS = ("[[random,max-damage],[noisy-30,max-damage],[noisy-10,max-damage],[max-damage,heuristic],"
            "[noisy-30,heuristic],[noisy-10,heuristic],[random,noisy-30]]")
PENALTY = 1e-3


def play(runs_dir: Path, run: str, pairs: int) -> None:
    subprocess.run([sys.executable, "-m", "pokebench", "+run=ladder", f"name={run}", f"seed_text={SEED_TEXT}",
                    f"pairs={pairs}", "publish=false", f"matchups={MATCHUPS}"],
                   cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)


def positions(runs_dir: Path, run: str, limit: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Features, side one's score and the pair of every decision point's state (of the first `limit` games); the
    games."""
    with load_runs([run], runs_dir) as data:
        games = data.games.to_dict("records")[:limit]
        logs = [(str(g["uid"]), list(data.record(str(g["uid"]))["input_log"])) for g in games]
    score = {str(g["uid"]): 1.0 if g["winner"] == "p1" else 0.0 if g["winner"] == "p2" else 0.5 for g in games}
    pair = {str(g["uid"]): f"{g['matchup']}:{g['pair']}" for g in games}
    rows, ys, pairs = [], [], []
    for game in game_positions(logs):
        seen = set()
        for decision in game.decisions:
            key = (decision.turn, decision.request.get("forceSwitch") is not None)
            if key in seen:  # both sides' decisions at a turn's start share one state
                continue
            seen.add(key)
            try:
                state = build_state(position_of_state(decision.state, "p1"))
            except EngineError:
                continue
            if finished_value(state) is None:
                rows.append(features(state))
                ys.append(score[game.id])
                pairs.append(pair[game.id])
    return np.array(rows), np.array(ys), np.array(pairs), len(games)


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        z = x @ w
        p = 1 / (1 + np.exp(-z))
        value = np.mean(np.logaddexp(0, z) - y * z) + PENALTY * w @ w
        return float(value), x.T @ (p - y) / len(y) + 2 * PENALTY * w

    return np.asarray(minimize(loss, np.zeros(x.shape[1]), jac=True, method="L-BFGS-B").x)


def _game_rows(logs: list[tuple[str, list[str]]]) -> dict[str, list[tuple[np.ndarray, ...]]]:
    """Per game of a chunk: every valued move turn's outcome × roll rows (``TurnOutcomes.rows``)."""
    out: dict[str, list[tuple[np.ndarray, ...]]] = {}
    for game in game_positions(logs):
        out[game.id] = []
        for move_turn in move_turns(game):
            try:
                x, finished, weights, happened = turn_outcomes(*move_turn.position()).rows()
            except EngineError:
                continue  # not a turn of the luck either (its luck is 0)
            coefficient = -weights
            coefficient[happened] += 1.0  # luck = Σ coefficient · V over the rows
            out[game.id].append((x.astype(np.float32), finished, coefficient))
    return out


class PairVariance:
    """The pooled variance over mirror pairs of the first player's adjusted score, as a function of V's
    coefficients, with its gradient (V = σ(x·w) on rows that are not finished)."""

    def __init__(self, runs_dir: Path, run: str, limit: int) -> None:
        with load_runs([run], runs_dir) as data:
            games = data.games.sort_values(["matchup", "pair", "game"]).head(limit).reset_index(drop=True)
            logs = [(str(u), list(data.record(str(u))["input_log"])) for u in games["uid"]]
        rows: dict[str, list[tuple[np.ndarray, ...]]] = {}
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            for part in pool.imap_unordered(_game_rows, [logs[i:i + 50] for i in range(0, len(logs), 50)]):
                rows.update(part)
        games = games[games.groupby(["matchup", "pair"])["uid"].transform("size") == 2].reset_index(drop=True)
        first = games["matchup"].str.split("-vs-").str[0]
        self.sign = np.where(games["p1"] == first, 1.0, -1.0)  # +1: the first player is side one
        score = np.where(games["winner"] == "p1", 1.0, np.where(games["winner"] == "p2", 0.0, 0.5))
        self.y = np.where(self.sign > 0, score, 1 - score)
        self.pair = games.groupby(["matchup", "pair"]).ngroup().to_numpy()
        matchup = games.groupby("matchup").ngroup().to_numpy()
        self.pair_matchup = pd.Series(matchup).groupby(self.pair).first().to_numpy()
        parts = [(turn, g) for g, uid in enumerate(games["uid"].astype(str)) for turn in rows[uid]]
        self.x = np.vstack([t[0] for t, _ in parts]).astype(np.float64)
        self.finished = np.concatenate([t[1] for t, _ in parts])
        self.coefficient = np.concatenate([t[2] for t, _ in parts])
        self.game = np.concatenate([np.full(len(t[0]), g) for t, g in parts])
        self.games = len(games)

    def _centred(self, adjusted: np.ndarray) -> np.ndarray:
        per_pair = np.bincount(self.pair, weights=adjusted) / 2
        means = pd.Series(per_pair).groupby(self.pair_matchup).transform("mean").to_numpy()
        return per_pair - means

    def raw(self) -> float:
        return float(np.mean(self._centred(self.y) ** 2))

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        live = np.isnan(self.finished)
        v = np.where(live, 1 / (1 + np.exp(-(self.x @ w))), self.finished)
        luck = np.bincount(self.game, weights=self.coefficient * v, minlength=self.games)
        centred = self._centred(self.y - self.sign * luck)
        # d/dw of mean(centred²): each game's adjusted score enters its pair's mean with ½, luck with −sign
        per_game = -centred[self.pair] * self.sign / len(centred)
        slope = per_game[self.game] * self.coefficient * np.where(live, v * (1 - v), 0.0)
        return float(np.mean(centred ** 2)), self.x.T @ slope


def variance_fit(objective: PairVariance, start: np.ndarray) -> np.ndarray:
    def penalised(w: np.ndarray) -> tuple[float, np.ndarray]:
        value, gradient = objective(w)
        return value + PENALTY * (w - start) @ (w - start), gradient + 2 * PENALTY * (w - start)

    return np.asarray(minimize(penalised, start, jac=True, method="L-BFGS-B").x)


def report(name: str, p: np.ndarray, y: np.ndarray) -> None:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    logloss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    print(f"{name}: log loss {logloss:.4f}, Brier {np.mean((p - y) ** 2):.4f} on {len(y)} positions not fitted on")


def calibration(p: np.ndarray, y: np.ndarray) -> None:
    print("  bin          positions  predicted  observed")
    edges = np.linspace(0, 1, 11)
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (p >= lo) & (p < hi if hi < 1 else p <= hi)
        if inside.any():
            print(f"  {lo:.1f} to {hi:.1f}  {inside.sum():9d}  {p[inside].mean():9.3f}  {y[inside].mean():8.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--run", default="luck-fit")
    parser.add_argument("--pairs", type=int, default=25)
    parser.add_argument("--write", action="store_true", help=f"write pokebench/analysis/{MODEL_FILE}")
    parser.add_argument("--check-run", help="also the calibration of the fit on every game on this run's games "
                                            "(e.g. luck-eval: other seeds)")
    parser.add_argument("--check-games", type=int, default=200, help="games of --check-run (default: 200)")
    parser.add_argument("--variance", action="store_true",
                        help="also fit V to the least variance of the adjusted score (needs --check-run)")
    parser.add_argument("--variance-games", type=int, default=700, help="games of --run for it (default: 700)")
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    play(args.runs_dir, args.run, args.pairs)
    x, y, pairs, games = positions(args.runs_dir, args.run)
    print(f"{games} games, {len(y)} positions (seed text {SEED_TEXT})")
    held = np.array([int(hashlib.sha256(p.encode()).hexdigest(), 16) % 5 == 0 for p in pairs])
    w = fit(x[~held], y[~held])
    print("coefficients (fit on 4/5 of the pairs): " + ", ".join(f"{n} {c:+.3f}" for n, c in zip(FEATURES, w)))
    p = 1 / (1 + np.exp(-(x[held] @ w)))
    report("fitted model", p, y[held])
    calibration(p, y[held])
    hp_only = fit(x[~held][:, :1], y[~held])
    report("HP balance alone", 1 / (1 + np.exp(-(x[held][:, :1] @ hp_only))), y[held])
    every = fit(x, y)
    model = ValueModel.of(every, {"run": args.run, "seed_text": SEED_TEXT, "games": games, "positions": int(len(y)),
                                  "penalty": PENALTY, "script": "benchmarks/luck_value_fit.py"})
    print("coefficients (every game): " + ", ".join(f"{n} {c:+.3f}" for n, c in zip(FEATURES, every)))
    if args.check_run:
        cx, cy, _, checked = positions(args.runs_dir, args.check_run, args.check_games)
        p = 1 / (1 + np.exp(-(cx @ every)))
        report(f"the fit on every game, on {checked} games of {args.check_run}", p, cy)
        calibration(p, cy)
    if args.variance and args.check_run:
        fitted = variance_fit(PairVariance(args.runs_dir, args.run, args.variance_games), every)
        print("coefficients (least variance of the adjusted score): "
              + ", ".join(f"{n} {c:+.3f}" for n, c in zip(FEATURES, fitted)))
        check = PairVariance(args.runs_dir, args.check_run, 10 ** 9)
        print(f"variance over mirror pairs of {args.check_run} ({check.games} games), raw / adjusted: log-loss fit "
              f"{check.raw() / check(every)[0]:.3f}, least-variance fit {check.raw() / check(fitted)[0]:.3f}")
    if args.write:
        path = Path(__file__).resolve().parent.parent / "pokebench" / "analysis" / MODEL_FILE
        path.write_text(model.to_json(), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
