"""Decision quality on a seeded bot run: the damage cross-check, the cost of the analysis, the engine's spread.

    .venv/bin/python benchmarks/decision_quality.py [--pairs 5] [--runs-dir /tmp/pb-dq] [--spread 60]
                                                   [--iterations 1000] [--samples 4] [--workers 2]

Plays (or reuses) ``bots-smoke`` with `--pairs` mirror pairs per matchup (5: 30 games) in `--runs-dir`, then:

1. the damage cross-check: poke-engine's damage of every move used when both sides chose a move, on the
   full-information state, against the HP Showdown took (pokebench/engine/damage_check.py): the share
   contained and the count of every kind;
2. ``pokebench analyse`` on the run with the given settings (the cache is cleared first): wall time,
   seconds per decision, and a 600-game run extrapolated from the decisions per game;
3. the run-to-run spread: `--spread` decisions searched twice (the engine has no seed);
4. each player's figures (mean regret and its interval, agreement, blunders per 100), beside its Elo.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from pokebench.analysis.analyse import analyse_runs
from pokebench.analysis.cache import cache_path
from pokebench.analysis.quality import quality_figures, read_quality
from pokebench.analysis.settings import Settings
from pokebench.engine.damage_check import check_game, summarise
from pokebench.engine.from_showdown import game_positions
from pokebench.results.loading import load_runs
from pokebench.results.ratings import fit_ratings

RUN = "bots-smoke"


def play(runs_dir: Path, pairs: int) -> None:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pokebench", f"+run={RUN}", f"pairs={pairs}", "publish=false"],
                   cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)
    print(f"run: {RUN} pairs={pairs} ready in {time.perf_counter() - started:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-dq/runs"))
    parser.add_argument("--spread", type=int, default=60)
    parser.add_argument("--iterations", type=int, default=Settings.iterations)
    parser.add_argument("--samples", type=int, default=Settings.samples)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    play(args.runs_dir, args.pairs)

    with load_runs([RUN], args.runs_dir) as data:
        logs = [(uid, list(data.record(uid)["input_log"])) for uid in data.games["uid"]]
        games = data.games
    started = time.perf_counter()
    replayed = game_positions(logs)
    replay_s = time.perf_counter() - started
    decisions = sum(len(g.decisions) for g in replayed)
    print(f"positions.js: {len(replayed)} games, {decisions} decisions replayed in {replay_s:.1f} s")

    hits = [hit for game in replayed for hit in check_game(game)]
    share, compared, kinds = summarise(hits)
    print(f"damage cross-check: {share:.3f} contained of {compared} compared hits ({len(hits)} moves in all)")
    for kind, count in kinds.most_common():
        print(f"  {count:5d}  {kind}")
    capped = kinds["contained (capped by the target's HP)"]
    print(f"without knock-outs (a KO only bounds the roll from below): "
          f"{(share * compared - capped) / max(1, compared - capped):.3f} of {compared - capped}")

    cache_path(args.runs_dir / RUN).unlink(missing_ok=True)
    settings = Settings(args.iterations, args.samples)
    cpu = time.process_time()
    workers_cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    report = analyse_runs([RUN], args.runs_dir, settings, workers=args.workers, spread=args.spread)
    workers_cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - workers_cpu
    per_game = report.decisions / max(1, report.searched_games)
    print(f"analyse ({settings.key}, {args.workers} workers): {report.decisions} decisions of "
          f"{report.searched_games} games and {report.repeats} repeats in {report.seconds:.1f} s wall "
          f"({report.seconds / max(1, report.decisions + report.repeats):.3f} s per search of a decision; "
          f"parent CPU {time.process_time() - cpu:.1f} s)")
    searches = max(1, report.decisions + report.repeats)
    per_decision = report.seconds / searches
    cpu_per_decision = workers_cpu / searches
    print(f"workers' CPU: {workers_cpu:.1f} s, {cpu_per_decision:.3f} s per decision (worker start-up included)")
    print(f"a 600-game run ({per_game:.0f} decisions per game): {600 * per_game * per_decision / 60:.0f} min "
          f"extrapolated at this run's wall time per decision with {args.workers} workers; "
          f"{600 * per_game * cpu_per_decision / args.workers / 60:.0f} min on {args.workers} idle cores")

    quality, spread = read_quality([args.runs_dir / RUN], games["uid"], settings)
    for view, rows in spread.groupby("view"):
        diff = (rows["regret_1"] - rows["regret_2"]).abs()
        same = (rows["engine_action_1"] == rows["engine_action_2"]).mean()
        print(f"spread ({view}): {len(rows)} decisions searched twice: mean |Δregret| {diff.mean():.4f}, "
              f"90th percentile {diff.quantile(0.9):.4f}, max {diff.max():.4f}; same engine choice {same:.1%}")
    figures = quality_figures(quality).set_index("player")
    elo = fit_ratings(games, anchor="max-damage", n_bootstrap=0).set_index("player")["elo"]
    table = pd.concat([elo, figures], axis=1).sort_values("elo", ascending=False)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.round(4).to_string())


if __name__ == "__main__":
    main()
