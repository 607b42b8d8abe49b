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
   ``--check-run luck-eval`` prints its calibration on games of other seeds.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

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
    if args.write:
        path = Path(__file__).resolve().parent.parent / "pokebench" / "analysis" / MODEL_FILE
        path.write_text(model.to_json(), encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
