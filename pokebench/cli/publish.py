"""``pokebench-publish RUN [RUN ...] [--out DIR] [--anchor PLAYER]``: publish runs as a versioned folder and its site."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from pokebench.analysis.settings import Settings
from pokebench.paths import RUNS_DIR
from pokebench.publish import publish
from pokebench.results.loading import PublishError

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pokebench-publish",
        description="Merge runs and publish their ratings, head-to-head, pair splits, games and replays: the "
                    "versioned tables (docs/results.md), meta.json and a static site built from them.",
        epilog="Examples:\n  pokebench-publish bots-calibration\n"
               "  pokebench-publish run-a run-b --out data/site/all\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run names (folders of --runs-dir)")
    parser.add_argument("--out", type=Path, default=None,
                        help="published folder (default data/site/RUN for one run; required for several)")
    parser.add_argument("--anchor", default="max-damage", metavar="PLAYER",
                        help="the player rated 1000 (default: max-damage)")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="where the runs are (default: runs)")
    parser.add_argument("--bootstrap", type=int, default=200, metavar="N",
                        help="bootstrap samples for the intervals (default: 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default: 0)")
    parser.add_argument("--level", type=float, default=0.95, help="interval level (default: 0.95)")
    parser.add_argument("--analyse", action="store_true",
                        help="first score the decisions and measure the luck the runs' analysis caches lack with "
                             "poke-engine (pokebench analyse; the published decision_quality.csv, luck.csv and "
                             "luck_turns.csv hold what is cached)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of --analyse (default: 2)")
    parser.add_argument("--iterations", type=int, default=Settings.iterations,
                        help="the decision analysis to publish: the MCTS iterations per position that `pokebench "
                             f"analyse` (or --analyse) searched with (default: {Settings.iterations})")
    parser.add_argument("--samples", type=int, default=Settings.samples,
                        help="the decision analysis to publish: the sampled positions per decision it searched "
                             f"(default: {Settings.samples})")
    args = parser.parse_args(argv)
    if args.bootstrap < 0:
        parser.error("--bootstrap must be 0 or more")
    if args.iterations < 1 or args.samples < 1 or args.workers < 1:
        parser.error("--iterations, --samples and --workers must be 1 or more")
    if not 0 < args.level < 1:
        parser.error("--level must be between 0 and 1, e.g. 0.95")
    try:
        out = publish(args.runs, args.out, anchor=args.anchor, runs_dir=args.runs_dir, n_bootstrap=args.bootstrap,
                      seed=args.seed, level=args.level, analyse=args.analyse, workers=args.workers,
                      analysis=Settings(args.iterations, args.samples))
    except PublishError as err:
        print(f"publish: error: {err}", file=sys.stderr)
        print("publish: nothing was written.", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\npublish: interrupted; the published folder is as it was (what --analyse analysed is cached: the "
              "same command goes on from there).", file=sys.stderr)
        return 130
    print(f"Published {out}/index.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
