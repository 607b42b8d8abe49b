"""Pairs a sequential run plays against a fixed schedule, for the same target width.

Simulated players (Elo below; each game's result drawn from its id, so both schedules see the
same result for the same game), seed texts seq-0..seq-N. The fixed schedule plays pair k of
every matchup, k = 1, 2, ..., and stops at the first k where every listed player's interval
(the published one: wider of bootstrap and posterior, 100 bootstrap samples) is at most the
target; the sequential run uses :func:`pokebench.play.sequential.run_sequential`.

    .venv/bin/python benchmarks/sequential_pairs.py [--seeds 5] [--widths 500,400,300]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import tempfile
from pathlib import Path

import pandas as pd

from pokebench.games import GameSpec
from pokebench.play.schedule import build_schedule
from pokebench.play.sequential import SequentialConfig, run_sequential
from pokebench.results.ratings import fit_ratings

ELO = {"max-damage": 1000.0, "random": 700.0, "heuristic": 1150.0, "llm-a": 1250.0, "llm-b": 1050.0}
PLAYERS = ("heuristic", "llm-a", "llm-b")
MATCHUPS = [(a, b) for i, a in enumerate(ELO) for b in list(ELO)[i + 1:]]


def result(spec: GameSpec) -> dict[str, object]:
    coin = int(hashlib.sha256(f"{spec.battle_seed}|{spec.matchup}|{spec.game}".encode()).hexdigest()[:8], 16) / 16**8
    p1_wins = coin < 1 / (1 + 10 ** ((ELO[spec.p2] - ELO[spec.p1]) / 400))
    return {"game_id": spec.game_id, "run": spec.run, "matchup": spec.matchup, "pair": spec.pair, "game": spec.game,
            "p1": spec.p1, "p2": spec.p2, "winner": "p1" if p1_wins else "p2"}


def widths(games: pd.DataFrame) -> dict[str, float]:
    t = fit_ratings(games, n_bootstrap=100, seed=0).set_index("player")
    return (t["ci_high"] - t["ci_low"]).to_dict()


def fixed_pairs(seed_text: str, width: float, cap: int = 400) -> int:
    rows: list[dict[str, object]] = []
    for k in range(1, cap + 1):
        rows += [result(s) for s in build_schedule("fixed", seed_text, k, MATCHUPS) if s.pair == k]
        w = widths(pd.DataFrame(rows))
        if all(w[p] <= width for p in PLAYERS):
            return k * len(MATCHUPS)
    return cap * len(MATCHUPS)


def sequential_pairs(seed_text: str, width: float) -> int:
    rows: list[dict[str, object]] = []

    async def play(specs: list[GameSpec]) -> None:
        rows.extend(result(s) for s in specs)

    conf = SequentialConfig(target_width=width, players=PLAYERS, max_pairs=4000, batch=4, min_pairs=1,
                            n_bootstrap=100)
    with tempfile.TemporaryDirectory() as tmp:
        specs, why = run_sequential("seq", seed_text, MATCHUPS, conf, Path(tmp),
                                    lambda: pd.DataFrame(rows, columns=["game_id", "run", "matchup", "pair", "game",
                                                                        "p1", "p2", "winner"]), play)
    assert why.startswith("target reached"), why
    return len(specs) // 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--widths", default="500,400,300")
    args = parser.parse_args(argv)
    print(f"players {dict(ELO)}; listed {list(PLAYERS)}; {len(MATCHUPS)} matchups; anchor max-damage")
    print("target  fixed pairs (mean, per seed)          sequential pairs (mean, per seed)      ratio")
    for width in (float(w) for w in args.widths.split(",")):
        fixed = [fixed_pairs(f"seq-{k}", width) for k in range(args.seeds)]
        seq = [sequential_pairs(f"seq-{k}", width) for k in range(args.seeds)]
        print(f"{width:6.0f}  {statistics.mean(fixed):7.1f} {fixed!s:28}  {statistics.mean(seq):7.1f} {seq!s:28}"
              f"  {statistics.mean(seq) / statistics.mean(fixed):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
