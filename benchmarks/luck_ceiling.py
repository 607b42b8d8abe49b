"""How much of the variance over mirror pairs is luck at all? (issue 31: the ceiling of any luck adjustment)

    .venv/bin/python benchmarks/luck_ceiling.py [--runs-dir /tmp/pb-luck/runs] [--teams 30] [--repeats 4]

A mirror pair's score varies for two reasons: the chance events of its games (rolls, crits, misses...), which
a luck adjustment can take out, and the teams it was dealt (one player's plan suits some teams better), which
is part of what a rating measures and no luck adjustment may remove. This script separates the two by playing
each of `--teams` team draws `--repeats` times with a different battle seed (run ``luck-ceiling``, seed text
``pokebench-luck-ceiling``: pair k gets the teams of draw ⌊(k−1)/repeats⌋ and a battle seed of its own; the
schedule's seed function is replaced in the child process, nothing else), then per matchup:

- the variance of the pair score, its within-draw part (what chance and the players' own randomness add) and
  its between-draw part (the teams' part: a one-way random-effects ANOVA);
- the *ceiling*: total / between-draw variance, the variance ratio a perfect luck adjustment would reach with
  deterministic players (with a randomised player its own draws stay in the within part: the ceiling is lower);
- what the luck adjustment does to each part: within-draw raw / adjusted (the share of chance it removes) and
  the between-draw part before and after.

The luck is valued as benchmarks/luck_validation.py values it (its cache, its chunks).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from luck_validation import cached_luck, pair_frame, stored, value_missing  # benchmarks/: the script's folder, on sys.path

SEED_TEXT = "pokebench-luck-ceiling"
RUN = "luck-ceiling"
MATCHUPS = "[[max-damage,heuristic],[noisy-10,max-damage]]"

#: The child process: the run with pair k's team seeds from draw ⌊(k−1)/repeats⌋ + 1.
CHILD = """
import runpy, sys
import pokebench.play.schedule as schedule
from pokebench.seeds import PairSeeds, pair_seeds
repeats = int(sys.argv[1])
def repeated_teams(seed_text, pair):
    teams = pair_seeds(seed_text + ":teams", (pair - 1) // repeats + 1)
    return PairSeeds(pair_seeds(seed_text, pair).battle_seed, teams.p1_team_seed, teams.p2_team_seed)
schedule.pair_seeds = repeated_teams
sys.argv = ["pokebench", *sys.argv[2:]]
runpy.run_module("pokebench", run_name="__main__")
"""


def play(runs_dir: Path, teams: int, repeats: int) -> None:
    subprocess.run([sys.executable, "-c", CHILD, str(repeats), "+run=ladder", f"name={RUN}", f"seed_text={SEED_TEXT}",
                    f"pairs={teams * repeats}", "publish=false", f"matchups={MATCHUPS}"],
                   cwd=runs_dir.parent, check=True, stdout=subprocess.DEVNULL)


def components(values: np.ndarray, draws: np.ndarray) -> tuple[float, float, float]:
    """Total variance, within-draw variance and between-draw variance (one-way random effects, equal sizes)."""
    frame = pd.DataFrame({"v": values, "d": draws})
    per_draw = frame.groupby("d")["v"]
    repeats = per_draw.size().mean()
    within = per_draw.var(ddof=1).mean()
    between = max(per_draw.mean().var(ddof=1) - within / repeats, 0.0)
    return float(frame["v"].var(ddof=1)), float(within), float(between)


def bootstrap_ceiling(group: pd.DataFrame, rng: np.random.Generator, samples: int = 1000) -> tuple[float, float]:
    """A 95 % interval of total / between over resampled draws (each with all its repeats); from the teams'
    share of the variance, which stays finite when a sample's between-draw part is 0 (a ceiling of ∞)."""
    draws = group["draw"].unique()
    shares = []
    for _ in range(samples):
        picked = rng.choice(draws, size=len(draws))
        sample = pd.concat([group[group["draw"] == d].assign(draw=i) for i, d in enumerate(picked)])
        total, _, between = components(sample["raw"].to_numpy(), sample["draw"].to_numpy())
        shares.append(between / total if total > 0 else 0.0)
    low, high = np.percentile(shares, [2.5, 97.5])
    return 1 / high if high > 0 else float("inf"), 1 / low if low > 0 else float("inf")


def report(pairs: pd.DataFrame, repeats: int) -> None:
    pairs = pairs.assign(draw=(pairs["pair"] - 1) // repeats)
    rng = np.random.default_rng(0)
    print(f"{'matchup':26s} pairs draws   var raw = within + between   ceiling [95%]   "
          f"var adj = within + between   within raw/adj   total raw/adj")
    for name, group in pairs.groupby("matchup"):
        raw = components(group["raw"].to_numpy(), group["draw"].to_numpy())
        adj = components(group["adjusted"].to_numpy(), group["draw"].to_numpy())
        lo, hi = bootstrap_ceiling(group, rng)
        ceiling = raw[0] / raw[2] if raw[2] > 0 else float("inf")
        print(f"{name:26s} {len(group):5d} {group['draw'].nunique():5d}   {raw[0]:.4f} = {raw[1]:.4f} + {raw[2]:.4f}"
              f"   {ceiling:6.2f} [{lo:.2f}, {hi:.2f}]   {adj[0]:.4f} = {adj[1]:.4f} + {adj[2]:.4f}"
              f"   {raw[1] / adj[1]:13.2f}   {raw[0] / adj[0]:12.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--teams", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    play(args.runs_dir, args.teams, args.repeats)
    games, logs = stored(args.runs_dir, RUN)
    value_missing(args.runs_dir, RUN, games, logs, args.workers)
    luck = cached_luck(args.runs_dir, RUN, games)
    report(pair_frame(games, luck), args.repeats)


if __name__ == "__main__":
    main()
