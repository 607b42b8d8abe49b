"""How well the set inference guesses the opponent's sets, measured against the truth on stored games.

    nice .venv/bin/python benchmarks/set_inference.py [--pairs 7] [--runs-dir /tmp/pb-inf/runs]
                                                      [--seed-text pokebench-set-inference]
    nice .venv/bin/python benchmarks/set_inference.py --prior [--teams 500] [--samples 100]
                                                      [--seed-text pokebench-unseen-prior]

Plays (or reuses) ``bots-smoke`` with `--pairs` mirror pairs per matchup (7: 42 games) on a seed text of its
own, replays every game in the pinned simulator (``positions.js``), and at every decision of each side
rebuilds that side's ``Battle`` from its own lines (as the analysis's player view does) and weighs the sets
of each opposing Pokémon it has seen (:class:`pokebench.engine.inference.SetBelief`). The benchmark reads
the true sets from the games' records (``p1team``/``p2team``); the inference never does.

It prints, for the table as the bot used it before the inference ("as before": poke-env's facts, the item it
holds now), with the revealed facts alone (the item it started with), with each kind added, and with all:

1. by turn: the mean probability given to the true set and to the true item, the share of Pokémon whose
   true set got weight 0 (the evidence was wrong) and the fallbacks (the evidence ruled out every set);
2. for each kind, over the Pokémon-decisions where that kind found something: the mean probability of the
   true set and item before (revealed facts alone) and after (that kind added).

With ``--prior`` it measures instead the prior of the Pokémon not seen yet (no game is played): on `--teams`
teams from the pinned generator (on a seed text of their own), the first k of each team shown (k = 1..5, the
lead first), the table's counts with the species clause alone ("old") against the counts under the
generator's team rules ("rules", :meth:`SetTable.sample_unseen`): by k, the exact probability that the first
unseen Pokémon drawn is one of the hidden ones, the mean log-probability of each hidden species in that draw
(with the share it gives 0), and the mean probability that a hidden species is in a team completed by
sampling (`--samples` completions per team and k).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from pokebench.engine.from_messages import player_battle, player_name
from pokebench.engine.from_showdown import game_positions
from pokebench.engine.inference import EVIDENCE, Facts, SetBelief
from pokebench.engine.sets import RandomSet, Revealed, SetTable, generate_teams
from pokebench.results.loading import load_runs

RUN = "bots-smoke"
TURNS = ((1, 5), (6, 10), (11, 20), (21, 10_000))
BEFORE = "as before"
CONFIGS = {BEFORE: frozenset(), "revealed facts": frozenset(), **{f"+ {k}": frozenset({k}) for k in sorted(EVIDENCE)},
           "all": EVIDENCE}


def _id(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def truth_of(mon: dict[str, Any]) -> tuple[int, str, str, tuple[str, ...], str]:
    """A record's team entry as the set table keys a set (species aside: formes are counted under theirs)."""
    return (int(mon["level"]), _id(mon["item"]) or "none", _id(mon["ability"]),
            tuple(sorted(_id(m) for m in mon["moves"])), _id(mon.get("teraType") or ""))


def play(runs_dir: Path, pairs: int, seed_text: str) -> None:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pokebench", f"+run={RUN}", f"pairs={pairs}", f"seed_text={seed_text}",
                    "publish=false"], cwd=runs_dir.parent, check=True, env=dict(os.environ), stdout=subprocess.DEVNULL)
    print(f"run: {RUN} pairs={pairs} seed_text={seed_text} ready in {time.perf_counter() - started:.0f} s")


def _bucket(turn: int) -> str:
    low, high = next((lo, hi) for lo, hi in TURNS if lo <= turn <= hi)
    return f"turns {low}-{high}" if high < 10_000 else f"turns {low}+"


def measure(runs_dir: Path) -> tuple[dict, dict, int]:
    table = SetTable.load()
    with load_runs([RUN], runs_dir) as data:
        records = [data.record(uid) for uid in data.games["uid"]]
    logs = [(str(i), list(r["input_log"])) for i, r in enumerate(records)]
    replayed = {g.id: g for g in game_positions(logs)}
    by_turn: dict = defaultdict(lambda: defaultdict(list))  # (config, bucket) -> metric -> values
    by_kind: dict = defaultdict(lambda: defaultdict(list))  # kind -> metric -> values
    for i, record in enumerate(records):
        game = replayed[str(i)]
        for decision in game.decisions:
            other = "p2" if decision.side == "p1" else "p1"
            hidden = {_id(m["species"]): truth_of(m) for m in record[f"{other}team"]}
            battle = player_battle(game, decision, player_name(record["input_log"], decision.side))
            facts = SetBelief.from_battle(table, battle).facts
            for config, evidence in CONFIGS.items():
                belief = SetBelief(table, _as_before(battle) if config == BEFORE else facts, evidence)
                for species, fact in facts.items():
                    truth = _truth_for(hidden, species, fact.revealed.level)
                    if truth is None:
                        continue
                    p_set, p_item = _probabilities(belief.weights(species), truth)
                    row = by_turn[(config, _bucket(decision.turn))]
                    row["set"].append(p_set)
                    row["item"].append(p_item)
                    row["excluded"].append(p_set == 0)
                    if config.startswith("+ ") and any(c.kind == config[2:] for c in fact.checks):
                        kind = by_kind[config[2:]]
                        kind["set after"].append(p_set)
                        kind["item after"].append(p_item)
                        kind["excluded after"].append(p_set == 0)
                        before = _probabilities(SetBelief(table, facts, frozenset()).weights(species), truth)
                        kind["set before"].append(before[0])
                        kind["item before"].append(before[1])
                row = by_turn[(config, "fallbacks")]
                row["count"].append(len(belief.fallbacks))
    return by_turn, by_kind, len(records)


def _as_before(battle: Any) -> dict[str, Facts]:
    """The facts the bot sampled by before the inference: poke-env's moves and the item the Pokémon holds now."""
    out = {}
    for mon in battle.opponent_team.values():
        item = mon.item if mon.item not in (None, "", "unknown_item") else None
        tera = mon.tera_type.name.lower() if mon.is_terastallized and mon.tera_type else None
        out[mon.species] = Facts(Revealed(mon.species, mon.level, frozenset(mon.moves), item, mon.ability or None, tera))
    return out


def _truth_for(hidden: dict, species: str, level: int | None) -> tuple | None:
    found = hidden.get(species)
    if found is None:  # a forme shown under another name than the record's (Minior, Palafin...): by level
        candidates = [t for s, t in hidden.items() if species.startswith(s) or s.startswith(species)]
        found = candidates[0] if len(candidates) == 1 else None
    return found if found is not None and (level is None or found[0] == level) else None


def _probabilities(weights: dict, truth: tuple) -> tuple[float, float]:
    level, item, ability, moves, tera = truth
    p_set = sum(p for s, p in weights.items() if (s.level, s.item, s.ability, tuple(sorted(s.moves)), s.tera_type)
                == (level, item, ability, moves, tera))
    p_item = sum(p for s, p in weights.items() if s.item == item)
    return p_set, p_item


PRIOR_SEED_TEXT = "pokebench-unseen-prior"
PRIORS = ("old", "rules")


def _completion(table: SetTable, shown: list[RandomSet], prior: str, rng: random.Random) -> set[str]:
    """The species drawn to complete the team of `shown` to six under `prior`."""
    team = list(shown)
    excluded = {m.species for m in shown} | {table.base(m.species) for m in shown}
    drawn: set[str] = set()
    while len(team) < 6:
        chosen = table.sample_unseen(excluded, rng, team if prior == "rules" else ())
        excluded |= {chosen.species, table.base(chosen.species)}
        team.append(chosen)
        drawn.add(chosen.species)
    return drawn


def measure_prior(teams: list[list[RandomSet]], samples: int) -> dict:
    """By (k, prior): the first draw's P(hidden), log P and zeros per hidden species, P(in a sampled team)."""
    table = SetTable.load()
    rng = random.Random(0)
    found: dict = defaultdict(lambda: defaultdict(list))
    for team in teams:
        for k in range(1, 6):
            shown, hidden = team[:k], [m.species for m in team[k:]]
            excluded = {m.species for m in shown} | {table.base(m.species) for m in shown}
            for prior in PRIORS:
                first = table.unseen_species(excluded, shown if prior == "rules" else ())
                row = found[(k, prior)]
                row["first"].append(sum(first.get(h, 0.0) for h in hidden))
                row["log"] += [math.log(first[h]) for h in hidden if first.get(h, 0.0) > 0]
                row["zero"] += [first.get(h, 0.0) == 0 for h in hidden]
                drawn = [_completion(table, shown, prior, rng) for _ in range(samples)]
                row["in team"] += [sum(h in d for d in drawn) / samples for h in hidden]
    return found


def report_prior(args: argparse.Namespace) -> None:
    started = time.perf_counter()
    teams = generate_teams(args.seed_text, args.teams)
    found = measure_prior(teams, args.samples)
    print(f"{len(teams)} teams of seed text {args.seed_text!r}, {args.samples} completions each, "
          f"in {time.perf_counter() - started:.0f} s")
    print("first k shown: the first unseen draw's P(one of the hidden), mean log P(a hidden species) [share at 0];"
          " mean P(a hidden species in a sampled team)")
    print(f"  {'k':>2}" + "".join(f"{p + ': first  log P [0]  in team':>40}" for p in PRIORS))
    for k in range(1, 6):
        cells = []
        for prior in PRIORS:
            row = found[(k, prior)]
            cells.append(f"{statistics.fmean(row['first']):.4f} {statistics.fmean(row['log']):7.3f} "
                         f"[{statistics.fmean(row['zero']):.4f}] {statistics.fmean(row['in team']):.4f}")
        print(f"  {k:>2}" + "".join(f"{c:>40}" for c in cells))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-inf/runs"))
    parser.add_argument("--seed-text", default=None, help="pokebench-set-inference (games) or "
                        f"{PRIOR_SEED_TEXT} (--prior)")
    parser.add_argument("--prior", action="store_true", help="measure the prior of the unseen Pokémon instead")
    parser.add_argument("--teams", type=int, default=500, help="--prior: generated teams")
    parser.add_argument("--samples", type=int, default=100, help="--prior: sampled completions per team and k")
    args = parser.parse_args()
    if args.prior:
        report_prior(argparse.Namespace(**{**vars(args), "seed_text": args.seed_text or PRIOR_SEED_TEXT}))
        return
    args.seed_text = args.seed_text or "pokebench-set-inference"
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    play(args.runs_dir, args.pairs, args.seed_text)
    started = time.perf_counter()
    by_turn, by_kind, games = measure(args.runs_dir)
    print(f"{games} games measured in {time.perf_counter() - started:.0f} s")
    buckets = [_bucket(lo) for lo, _ in TURNS]
    print("\nmean P(true set) / P(true item) / share of true sets ruled out, by turn (Pokémon-decisions)")
    print(f"  {'':16}" + "".join(f"{b:>26}" for b in buckets) + f"{'fallbacks':>11}")
    for config in CONFIGS:
        cells = []
        for bucket in buckets:
            row = by_turn[(config, bucket)]
            cells.append(f"{statistics.fmean(row['set']):.3f} {statistics.fmean(row['item']):.3f} "
                         f"{statistics.fmean(row['excluded']):.3f} n={len(row['set'])}" if row["set"] else "-")
        fallbacks = sum(by_turn[(config, "fallbacks")]["count"])
        print(f"  {config:16}" + "".join(f"{c:>26}" for c in cells) + f"{fallbacks:>11}")
    print("\nwhere a kind found something: mean P(true set) and P(true item) before -> after; true set ruled out")
    for kind in sorted(EVIDENCE):
        row = by_kind[kind]
        if not row["set after"]:
            print(f"  {kind:10} n=0")
            continue
        print(f"  {kind:10} n={len(row['set after']):5}  set {statistics.fmean(row['set before']):.3f} -> "
              f"{statistics.fmean(row['set after']):.3f}  item {statistics.fmean(row['item before']):.3f} -> "
              f"{statistics.fmean(row['item after']):.3f}  ruled out {statistics.fmean(row['excluded after']):.3f}")


if __name__ == "__main__":
    main()
