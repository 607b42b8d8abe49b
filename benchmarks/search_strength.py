"""How strong is the search bot, and what is each of its parts worth? (issue 28's proof, on bot games)

    .venv/bin/python benchmarks/search_strength.py [--runs-dir /tmp/pb-search/runs] [--pairs 100]
        [--opponents heuristic,max-damage] [--variant NAME=KEY:VALUE,KEY:VALUE ...] [--concurrency 2]
        [--seed-text pokebench-search-dev] [--no-luck]
    .venv/bin/python benchmarks/search_strength.py --figures-only --runs-dir DIR [--runs-dir DIR ...]
        [--opponents foul-play] [--variant NAME= ...] [--plot FILE.svg]

Plays each variant of the search bot (``conf/player/search.yaml`` with the variant's settings on top) against
each opponent, every variant on the same mirror pairs (seed text ``--seed-text``, default ``pokebench-search-dev``:
seeds of their own, not the calibration's), one run per variant (``search-strength-NAME``, reused when it is there),
and prints per variant and opponent:

- the games and the search bot's score with a 95 % Wilson interval (over games);
- the paired difference of its score from the first variant's over the same mirror pairs, with a 95 %
  interval (the same teams and battle seeds: the team luck cancels; the searches have no seed);
- the same two luck-adjusted (docs/analysis.md, "Luck"): each game's score less the luck of its rolls, which keeps
  the score's expectation and has less variance, so a narrower interval from the same games (normal, over mirror
  pairs; beside it the raw score's half-width on the same footing, over pairs). The luck is measured with
  ``pokebench analyse RUN --no-quality`` (about 0.1 s of CPU a game; cached, so a second invocation values nothing
  again); ``--no-luck`` skips it;
- the time per decision it searched (mean, median, 95th percentile, wall: it includes waiting for a busy
  search worker when games share it) and the engine's iterations per MCTS decision (an end-game expectiminimax,
  ``endgame``, counts none);
- each opponent's time per decision in the same games (Foul Play's: is the time per decision equal?).

Without ``--variant`` it plays the ablation of the shipped bot: the shipped settings, one sample instead of
the shipped count (or four), half the time, the inference off, and the bot of the last round (4 × 1,000
iterations). ``--opponents foul-play`` plays Foul Play (where it is installed: README, "Foul Play") one
game at a time, so that each side's search has a core. A time budget's iterations depend on the machine and its load: compare variants measured in one
invocation, on an otherwise idle machine.

``--figures-only`` plays nothing: the figures of the variants' runs as they are stored, pooled over every
``--runs-dir`` given (rounds played on seed texts of their own, in runs directories of their own: a pair is one
directory's pair). The figures of several rounds of the same bot against Foul Play, together; with more than one
``--runs-dir`` also each round's score, luck-adjusted score and time per decision (each side's) beside the pooled
ones, and with ``--plot FILE`` the scores as a forest plot (SVG: each round's interval, the pooled one, and half
marked), so that a drift between rounds, one round far from the rest or one played on a busier machine shows at a
glance.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from luck_validation import Z, cached_luck, pair_frame
from pokebench.results.loading import load_runs

SEED_TEXT = "pokebench-search-dev"
REPO = Path(__file__).resolve().parents[1]
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
        "last-round": {"iterations": 1000, "samples": 4, "endgame": 0},
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


def value_luck(runs_dir: Path, name: str) -> None:
    """The luck of the run's games not yet in its cache (``pokebench analyse --no-quality``)."""
    subprocess.run([sys.executable, "-m", "pokebench", "analyse", name, "--runs-dir", str(runs_dir), "--no-quality"],
                   cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)


def measure(runs_dir: Path, name: str, luck: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Per mirror pair and opponent the search bot's mean score (and luck-adjusted, NaN without `luck`); per
    searched decision its time and iterations; per decision of an opponent its player and time (Foul Play's time
    per decision: is the time equal?)."""
    data = load_runs([name], runs_dir)
    games = data.games
    search_side = games.p1.eq("search").map({True: "p1", False: "p2"})
    score = (games.winner == search_side).astype(float) + 0.5 * (games.winner == "tie")
    games = games.assign(opponent=games.p1.where(games.p1 != "search", games.p2), score=score)
    complete = games.groupby(["opponent", "pair"]).score.transform("size") == 2
    pairs = games[complete].groupby(["opponent", "pair"]).score.mean().rename("score").reset_index()
    if luck:
        value_luck(runs_dir, name)
        adjusted = pair_frame(data.games, cached_luck(runs_dir, name, data.games))  # first named: search (play())
        adjusted = adjusted.assign(opponent=adjusted.matchup.str.split("-vs-").str[1])
        pairs = pairs.merge(adjusted[["opponent", "pair", "adjusted"]], on=["opponent", "pair"], how="left")
    else:
        pairs["adjusted"] = math.nan
    decisions = data.decisions[data.decisions.player == "search"]
    extra = [json.loads(e or "{}") for e in decisions.extra]  # decisions.csv's JSON column
    searched = pd.DataFrame({"opponent": decisions.uid.map(games.set_index("uid").opponent).to_numpy(),
                             "latency_s": decisions.latency_s.to_numpy(),
                             "iterations": [e.get("engine_iterations") for e in extra],
                             "method": [e.get("engine_method", "mcts") for e in extra]}).dropna()
    # the end-game's expectiminimax (`endgame`) counts no iterations: a figure of MCTS decisions only
    searched["iterations"] = searched.iterations.where(searched.method == "mcts")
    others = data.decisions.loc[data.decisions.player != "search", ["player", "latency_s"]].dropna()
    return pairs, searched, others


def pooled(runs_dirs: list[Path], name: str, luck: bool) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`measure` of the run `name` in each of `runs_dirs`, together, each row with its directory's place in
    the list (its ``round``); a pair is named by its round and its own number, so that the same pair of two variants
    is matched within a directory."""
    measured = list(enumerate(measure(runs_dir, name, luck) for runs_dir in runs_dirs))
    pairs = [p.assign(round=i, pair=[f"{i}:{k}" for k in p.pair]) for i, (p, _, _) in measured]
    searched = [s.assign(round=i) for i, (_, s, _) in measured]
    others = [o.assign(round=i) for i, (_, _, o) in measured]
    return (pd.concat(pairs, ignore_index=True), pd.concat(searched, ignore_index=True),
            pd.concat(others, ignore_index=True))


def half_width(values: pd.Series) -> float:
    """The half-width of the 95 % normal interval of `values`' mean."""
    return Z * values.std() / math.sqrt(len(values))


def normal_interval(values: pd.Series, sign: str = "+") -> str:
    """The mean of `values` with its 95 % normal interval ("—" with fewer than two); `sign` "": no plus signs."""
    values = values.dropna()
    if len(values) < 2:
        return "—"
    mean, half = values.mean(), half_width(values)
    return f"{mean:{sign}.3f} [{mean - half:{sign}.3f}, {mean + half:{sign}.3f}]"


def rounds(measured: tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame], labels: list[str],
           opponent: str) -> pd.DataFrame:
    """Per round (a :func:`pooled` runs directory, `labels` in its order) and pooled: the games, the search bot's
    wins (a tie half of one), score with its Wilson interval, its luck-adjusted score with its normal interval
    over pairs (NaN without luck), and the mean time per decision of each side and the bot's iterations (a round
    played on a busier machine shows)."""
    pairs, searched, others = measured
    pairs = pairs.query("opponent == @opponent")
    searched = searched.query("opponent == @opponent")
    others = others.query("player == @opponent")
    rows = []
    for i in [*sorted(pairs["round"].unique()), None]:  # None: all rounds, pooled
        group, bot, other = (f if i is None else f[f["round"] == i] for f in (pairs, searched, others))
        label = "pooled" if i is None else labels[i]
        wins = 2 * group.score.sum()
        lo, hi = wilson(wins, 2 * len(group))
        adjusted = group.adjusted.dropna()
        half = half_width(adjusted) if len(adjusted) > 1 else math.nan
        rows.append({"round": label, "games": 2 * len(group), "wins": wins, "score": group.score.mean(),
                     "lo": lo, "hi": hi,
                     "adjusted": adjusted.mean(),  # NaN without luck
                     "adjusted_lo": adjusted.mean() - half, "adjusted_hi": adjusted.mean() + half,
                     "ms": 1000 * bot.latency_s.mean(), "iterations": bot.iterations.mean(),
                     "opponent_ms": 1000 * other.latency_s.mean()})
    return pd.DataFrame(rows)


def report_rounds(table: pd.DataFrame, name: str, opponent: str) -> None:
    """:func:`rounds` as a table, and whether the rounds' scores differ by more than chance (a χ² test of one
    common score over the rounds' wins and losses, a tie half of each)."""
    from scipy.stats import chi2_contingency

    print(f"| {name} against {opponent}, round | games | score [95 % Wilson] | luck-adjusted [95 %] "
          f"| ms per decision / iterations per MCTS decision | {opponent}'s ms per decision |")
    print("|---|---|---|---|---|---|")
    for row in table.itertuples():
        adjusted = "—" if pd.isna(row.adjusted) else f"{row.adjusted:.3f} [{row.adjusted_lo:.3f}, {row.adjusted_hi:.3f}]"
        print(f"| {row.round} | {row.games} | {row.score:.3f} [{row.lo:.3f}, {row.hi:.3f}] | {adjusted} "
              f"| {row.ms:.0f} / {row.iterations:,.0f} | {row.opponent_ms:.0f} |")
    each = table[table["round"] != "pooled"]
    if each.wins.sum() in (0, each.games.sum()):  # all lost or all won: nothing to test
        print(f"\nOne common score over the {len(each)} rounds: every game {'won' if each.wins.sum() else 'lost'}\n")
        return
    test = chi2_contingency(np.column_stack([each.wins, each.games - each.wins]))
    print(f"\nOne common score over the {len(each)} rounds: χ² = {test.statistic:.1f} on {test.dof} degrees of "
          f"freedom, p = {test.pvalue:.2f} (small p: the rounds differ by more than chance)\n")


def plot_rounds(table: pd.DataFrame, title: str, path: Path) -> None:
    """A forest plot of :func:`rounds`: each round's score (Wilson interval) and luck-adjusted score (normal
    interval), the pooled ones last, half marked."""
    from matplotlib.figure import Figure

    from pokebench.site.plots import save_svg

    fig = Figure(figsize=(6.4, 0.8 + 0.32 * len(table)), layout="constrained")
    ax = fig.add_subplot()
    y = np.arange(len(table))[::-1].astype(float)
    ax.errorbar(table.score, y + 0.12, xerr=[table.score - table.lo, table.hi - table.score], fmt="o", ms=4,
                capsize=2, label="score (95 % Wilson)")
    if table.adjusted.notna().any():
        ax.errorbar(table.adjusted, y - 0.12, xerr=[table.adjusted - table.adjusted_lo,
                                                     table.adjusted_hi - table.adjusted],
                    fmt="s", ms=4, capsize=2, label="luck-adjusted (95 %)")
    ax.axvline(0.5, color="grey", lw=0.8, ls="--")
    ax.set_yticks(y, [f"{r} ({g} games)" for r, g in zip(table["round"], table.games)])
    ax.set_xlabel("the search bot's score")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    save_svg(fig, path)


def report(results: dict[str, tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]], opponents: list[str]) -> None:
    names = list(results)
    print("| variant | opponent | games | score [95 %] | paired − " + names[0] + " [95 %] | luck-adjusted [95 %] "
          "(the score's ± over pairs) | paired − " + names[0] + ", adjusted [95 %] |")
    print("|---|---|---|---|---|---|---|")
    for opponent in opponents:
        first = results[names[0]][0].query("opponent == @opponent").set_index("pair")
        for name in names:
            per_pair = results[name][0].query("opponent == @opponent").set_index("pair")
            n = 2 * len(per_pair)
            lo, hi = wilson(per_pair.score.sum() * 2, n)
            common = per_pair.index.intersection(first.index)
            diff = per_pair.loc[common, ["score", "adjusted"]] - first.loc[common, ["score", "adjusted"]]
            first_row = name == names[0]
            print(f"| {name} | {opponent} | {n} | {per_pair.score.mean():.3f} [{lo:.3f}, {hi:.3f}] | "
                  f"{'—' if first_row else normal_interval(diff.score)} | "
                  f"{normal_interval(per_pair.adjusted, sign='')} (±{half_width(per_pair.score):.3f}) | "
                  f"{'—' if first_row else normal_interval(diff.adjusted)} |")
    print()
    print("| variant | decisions searched | ms per decision: mean | median | 95th percentile | "
          "iterations per MCTS decision |")
    print("|---|---|---|---|---|---|")
    for name in names:
        searched = results[name][1]
        ms = 1000 * searched.latency_s
        print(f"| {name} | {len(searched)} | {ms.mean():.0f} | {ms.median():.0f} | {ms.quantile(0.95):.0f} | "
              f"{searched.iterations.mean():,.0f} |")
    print()
    print("| opponent, in the games of | decisions | ms per decision: mean | median | 95th percentile |")
    print("|---|---|---|---|---|")
    for name in names:
        for player, rows in results[name][2].groupby("player"):
            ms = 1000 * rows.latency_s
            print(f"| {player}, {name} | {len(ms)} | {ms.mean():.0f} | {ms.median():.0f} | {ms.quantile(0.95):.0f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, action="append", default=[],
                        help="where the runs are (default /tmp/pb-search/runs); several only with --figures-only")
    parser.add_argument("--pairs", type=int, default=100, help="mirror pairs per variant and opponent")
    parser.add_argument("--opponents", default="heuristic,max-damage")
    parser.add_argument("--concurrency", type=int, default=2, help="games in flight per run")
    parser.add_argument("--seed-text", default=SEED_TEXT, help="the mirror pairs' seeds (a new text: new games)")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=KEY:VALUE,...",
                        help="a variant (repeatable; the first is the reference); default: the ablation")
    parser.add_argument("--figures-only", action="store_true",
                        help="play nothing: the stored runs' figures, pooled over every --runs-dir")
    parser.add_argument("--no-luck", action="store_true", help="no luck-adjusted figures (and no luck measured)")
    parser.add_argument("--plot", type=Path, metavar="FILE.svg",
                        help="with several --runs-dir: each round's score as a forest plot (the first variant's)")
    args = parser.parse_args()
    runs_dirs = args.runs_dir or [Path("/tmp/pb-search/runs")]
    if len(runs_dirs) > 1 and not args.figures_only:
        parser.error("several --runs-dir pool stored runs: give --figures-only, or one --runs-dir to play in")
    if args.plot and len(runs_dirs) < 2:
        parser.error("--plot draws each round of several --runs-dir: give at least two")
    opponents = [o for o in args.opponents.split(",") if o]
    variants = dict(parse_variant(v) for v in args.variant) if args.variant else default_variants()
    results = {}
    for name, variant in variants.items():
        run = f"search-strength-{name}"
        if not args.figures_only:
            settings = {**shipped(), **variant}  # a per-position budget given wins over decision_ms
            print(f"{run}: {', '.join(f'{k}={v}' for k, v in settings.items())}", flush=True)
            runs_dirs[0].mkdir(parents=True, exist_ok=True)
            play(runs_dirs[0], run, settings, opponents, args.pairs, args.concurrency, args.seed_text)
        results[name] = pooled(runs_dirs, run, luck=not args.no_luck)
    print()
    report(results, opponents)
    if len(runs_dirs) > 1:
        print()
        first = next(iter(results))
        labels = [str(d) for d in runs_dirs]
        for opponent in opponents:
            table = rounds(results[first], labels, opponent)
            report_rounds(table, first, opponent)
            if args.plot:  # one file per opponent when there are several
                path = args.plot if len(opponents) == 1 else args.plot.with_stem(f"{args.plot.stem}-{opponent}")
                plot_rounds(table, f"The search bot ({first}) against {opponent}, round by round", path)
                print(f"(plot: {path})\n")


if __name__ == "__main__":
    main()
