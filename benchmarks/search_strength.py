"""How strong is the search bot, and what is each of its parts worth? (issue 28's proof, on bot games)

    .venv/bin/python benchmarks/search_strength.py [--runs-dir /tmp/pb-search/runs] [--pairs 100]
        [--opponents heuristic,max-damage] [--variant NAME=KEY:VALUE,KEY:VALUE ...] [--concurrency 2]
        [--seed-text pokebench-search-dev]

Plays each variant of the search bot (``conf/player/search.yaml`` with the variant's settings on top) against
each opponent, every variant on the same mirror pairs (seed text ``--seed-text``, default ``pokebench-search-dev``:
seeds of their own, not the calibration's), one run per variant (``search-strength-NAME``, reused when it is there),
and prints per variant and opponent:

- the games and the search bot's score with a 95 % Wilson interval;
- the paired difference of its score from the first variant's over the same mirror pairs, with a 95 %
  interval (the same teams and battle seeds: the team luck cancels; the searches have no seed);
- the time per decision it searched (mean, median, 95th percentile, wall: it includes waiting for a busy
  search worker when games share it) and the engine's iterations per decision;
- each opponent's time per decision in the same games (Foul Play's: is the time per decision equal?).

Without ``--variant`` it plays the ablation of the shipped bot: the shipped settings, one sample instead of
the shipped count (or four), half the time, the inference off, and the bot of the last round (4 × 1,000
iterations). ``--opponents foul-play`` plays Foul Play (where it is installed: README, "Foul Play") one
game at a time, so that each side's search has a core. A time budget's iterations depend on the machine and its load: compare variants measured in one
invocation, on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from pokebench.results.loading import load_runs

SEED_TEXT = "pokebench-search-dev"
REPO = Path(__file__).resolve().parents[1]
Z = 1.96
FOUL_PLAY = "foul-play"


@functools.lru_cache(maxsize=1)
def shipped() -> dict[str, object]:
    """The search bot's shipped settings (conf/player/search.yaml), but its target."""
    config = yaml.safe_load((REPO / "conf/player/search.yaml").read_text())
    return {k: v for k, v in config.items() if not k.startswith("_")}


def default_variants() -> dict[str, dict[str, object]]:
    base = shipped()
    samples = int(base["samples"])
    other = 1 if samples > 1 else 4
    return {
        "shipped": {},
        f"samples-{other}": {"samples": other},
        "half-time": {"decision_ms": int(base["decision_ms"]) // 2},
        "inference-off": {"inference": False},
        "last-round": {"iterations": 1000, "samples": 4},
    }


def parse_variant(text: str) -> tuple[str, dict[str, object]]:
    """``NAME=KEY:VALUE,KEY:VALUE`` (values read as YAML) as (name, settings)."""
    name, _, body = text.partition("=")
    if not name or not all(c.isalnum() or c in "-_" for c in name):
        raise SystemExit(f"--variant {text!r}: a name of letters, digits, - and _, then =KEY:VALUE,...")
    settings = {}
    for item in filter(None, body.split(",")):
        key, sep, value = item.partition(":")
        if not sep or key not in shipped():
            raise SystemExit(f"--variant {text!r}: {item!r} is not KEY:VALUE with a key of conf/player/search.yaml "
                             f"({', '.join(shipped())})")
        settings[key] = yaml.safe_load(value)
    return name, settings


def play(runs_dir: Path, name: str, settings: dict[str, object], opponents: list[str], pairs: int,
         concurrency: int, seed_text: str) -> None:
    matchups = "[" + ",".join(f"[search,{o}]" for o in opponents) + "]"
    overrides = [f"players.search.{k}={json.dumps(v)}" for k, v in settings.items()]
    if FOUL_PLAY in opponents:  # the user's own installation (README, "Foul Play"); one game at a time
        overrides += [f"+player@players.{FOUL_PLAY}=foul_play", "concurrency=1"]
    subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-calibration", f"name={name}",
                    f"seed_text={seed_text}", f"pairs={pairs}", f"concurrency={concurrency}", "publish=false",
                    f"matchups={matchups}", *overrides],
                   cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)


def wilson(wins: float, n: int) -> tuple[float, float]:
    if not n:
        return math.nan, math.nan
    p = wins / n
    centre = (p + Z * Z / (2 * n)) / (1 + Z * Z / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z * Z / (4 * n * n)) / (1 + Z * Z / n)
    return centre - half, centre + half


def measure(runs_dir: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per mirror pair and opponent the search bot's mean score; per searched decision its time and iterations;
    per decision of an opponent its player and time (Foul Play's time per decision: is the time equal?)."""
    data = load_runs([name], runs_dir)
    games = data.games
    search_side = games.p1.eq("search").map({True: "p1", False: "p2"})
    score = (games.winner == search_side).astype(float) + 0.5 * (games.winner == "tie")
    games = games.assign(opponent=games.p1.where(games.p1 != "search", games.p2), score=score)
    complete = games.groupby(["opponent", "pair"]).score.transform("size") == 2
    pairs = games[complete].groupby(["opponent", "pair"]).score.mean().rename("score").reset_index()
    decisions = data.decisions[data.decisions.player == "search"]
    extra = [json.loads(e or "{}") for e in decisions.extra]  # decisions.csv's JSON column
    searched = pd.DataFrame({"latency_s": decisions.latency_s.to_numpy(),
                             "iterations": [e.get("engine_iterations") for e in extra]}).dropna()
    others = data.decisions.loc[data.decisions.player != "search", ["player", "latency_s"]].dropna()
    return pairs, searched, others


def report(results: dict[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]], opponents: list[str]) -> None:
    names = list(results)
    print("| variant | opponent | games | score [95 %] | paired − " + names[0] + " [95 %] |")
    print("|---|---|---|---|---|")
    for opponent in opponents:
        first = results[names[0]][0].query("opponent == @opponent").set_index("pair").score
        for name in names:
            per_pair = results[name][0].query("opponent == @opponent").set_index("pair").score
            n = 2 * len(per_pair)
            lo, hi = wilson(per_pair.sum() * 2, n)
            common = per_pair.index.intersection(first.index)
            diff = (per_pair[common] - first[common])
            paired = ("—" if name == names[0] or len(common) < 2 else
                      f"{diff.mean():+.3f} [{diff.mean() - Z * diff.std() / math.sqrt(len(diff)):+.3f}, "
                      f"{diff.mean() + Z * diff.std() / math.sqrt(len(diff)):+.3f}]")
            print(f"| {name} | {opponent} | {n} | {per_pair.mean():.3f} [{lo:.3f}, {hi:.3f}] | {paired} |")
    print()
    print("| variant | decisions searched | ms per decision: mean | median | 95th percentile | iterations per decision |")
    print("|---|---|---|---|---|---|")
    for name in names:
        searched = results[name][1]
        ms = 1000 * searched.latency_s
        print(f"| {name} | {len(searched)} | {ms.mean():.0f} | {ms.median():.0f} | {ms.quantile(0.95):.0f} | "
              f"{statistics.fmean(searched.iterations):,.0f} |")
    print()
    print("| opponent, in the games of | decisions | ms per decision: mean | median | 95th percentile |")
    print("|---|---|---|---|---|")
    for name in names:
        for player, rows in results[name][2].groupby("player"):
            ms = 1000 * rows.latency_s
            print(f"| {player}, {name} | {len(ms)} | {ms.mean():.0f} | {ms.median():.0f} | {ms.quantile(0.95):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-search/runs"))
    parser.add_argument("--pairs", type=int, default=100, help="mirror pairs per variant and opponent")
    parser.add_argument("--opponents", default="heuristic,max-damage")
    parser.add_argument("--concurrency", type=int, default=2, help="games in flight per run")
    parser.add_argument("--seed-text", default=SEED_TEXT, help="the mirror pairs' seeds (a new text: new games)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=KEY:VALUE,...",
                        help="a variant (repeatable; the first is the reference); default: the ablation")
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    opponents = [o for o in args.opponents.split(",") if o]
    variants = dict(parse_variant(v) for v in args.variant) if args.variant else default_variants()
    results = {}
    for name, variant in variants.items():
        settings = {**shipped(), **variant}  # a per-position budget given wins over decision_ms
        run = f"search-strength-{name}"
        print(f"{run}: {', '.join(f'{k}={v}' for k, v in settings.items())}", flush=True)
        play(args.runs_dir, run, settings, opponents, args.pairs, args.concurrency, args.seed_text)
        results[name] = measure(args.runs_dir, run)
    print()
    report(results, opponents)


if __name__ == "__main__":
    main()
