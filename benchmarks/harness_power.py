"""How many mirror pairs the Continual Harness's published gain needs: power of ``harness_gain.csv``'s interval.

    .venv/bin/python benchmarks/harness_power.py [--sims 200] [--bootstrap 500] [--team-luck 1.0]

Simulates runs shaped like ``ch-sonnet-low`` (a harness player and its plain partner, each against two
opponents, on the same pairs) and publishes each with the project's own
:func:`pokebench.players.continual.tables.gain_table` (paired bootstrap over pairs). The plain player scores
0.5 on average; the harness player 0.5 + gain (on average over the luck). Each game's two sides share a "team luck" (a normal draw
of sd ``--team-luck`` on the logit scale, the same for the harness and the plain player: they played the
same teams), which is what pairing removes. Prints, per true gain and number of pairs, the share of
runs whose 95 % interval lies above 0 (the power) and the mean half-width of the interval::

    gain   pairs  power  half-width
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import pandas as pd

from pokebench.players.continual.tables import gain_table

OPPONENTS = ("max-damage", "heuristic")


def simulated_sides(pairs: int, gain: float, team_luck: float, rng: np.random.Generator) -> pd.DataFrame:
    """One run's sides: for every pair, opponent and game, the harness and the plain player's score."""
    n = pairs * len(OPPONENTS) * 2
    luck = rng.normal(0.0, team_luck, n)
    rows = []
    # the logit shift whose mean score under the luck is 0.5 + gain (the probit approximation of the mean)
    shift = math.log((0.5 + gain) / (0.5 - gain)) * math.sqrt(1 + math.pi * team_luck ** 2 / 8)
    for player, logit in (("ch", shift), ("plain", 0.0)):
        p = 1 / (1 + np.exp(-(logit + luck)))
        wins = rng.random(n) < p
        summary = {"model": "m", "reasoning": "low", **({"harness_version": 0} if player == "ch" else {})}
        for i in range(n):
            pair, rest = divmod(i, len(OPPONENTS) * 2)
            rows.append({"game_id": f"{player}.{i}", "run": "sim", "pair": pair + 1, "player": player,
                         "opponent": OPPONENTS[rest // 2], "score": float(wins[i]), "summary": summary})
    return pd.DataFrame(rows)


def power(pairs: int, gain: float, sims: int, bootstrap: int, team_luck: float, seed: int) -> tuple[float, float]:
    rng = np.random.default_rng(seed)
    above, widths = 0, []
    for s in range(sims):
        row = gain_table(simulated_sides(pairs, gain, team_luck, rng), None, {}, n_bootstrap=bootstrap, seed=s).iloc[0]
        above += row.score_gain_lo > 0
        widths.append((row.score_gain_hi - row.score_gain_lo) / 2)
    return above / sims, float(np.mean(widths))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--bootstrap", type=int, default=500)
    parser.add_argument("--team-luck", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, nargs="*", default=[20, 40, 80, 120, 160, 240])
    args = parser.parse_args()
    print(f"{args.sims} simulated runs per cell, {args.bootstrap} bootstrap samples, team luck sd "
          f"{args.team_luck} (logit), opponents {', '.join(OPPONENTS)}")
    print("gain   pairs  power  half-width")
    for gain in (0.05, 0.10):
        for pairs in args.pairs:
            share, half = power(pairs, gain, args.sims, args.bootstrap, args.team_luck, seed=pairs)
            print(f"{gain:+.2f}  {pairs:5d}  {share:5.0%}  {half:.3f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
