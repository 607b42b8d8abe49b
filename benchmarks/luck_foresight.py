"""Does a value that looks ahead remove more of the luck's variance? The engine's expectiminimax, and greedy
rollouts (issue 31).

    .venv/bin/python benchmarks/luck_foresight.py [--runs-dir /tmp/pb-luck/runs] [--run luck-action-fit]
                                                 [--pairs 100] [--workers 2]

The shipped V (:mod:`pokebench.analysis.value`) values the present position only; what the adjusted score keeps is
V drifting at the players' choices (``benchmarks/luck_variates.py``), which only a value that foresees the next
turns could see. The issue names two such values beside a fitted model, and this script measures both on the
games of the fit's seeds (``pokebench-luck-fit``, played as ``luck_validation.py --run luck-action-fit`` plays
them, 4 matchups), where a choice may be made:

1. **the engine's expectiminimax**: poke-engine's ``id(state, 0)`` searches one turn deep (every pair of choices,
   every outcome, its own evaluation at the leaves) and stops; the position's score is the matrix's maximin
   (cells it pruned are NaN), made a win probability by σ(c · score) for each scale c of :data:`SCALES`;
2. **greedy rollouts**: from the position, both sides play that maximin choice and the turn's likeliest outcome
   happens, k turns on (k in :data:`STEPS`, or to the game's end); the shipped V of where it stops (a finished
   game: its result). Deterministic, no seed: the same position, the same value.

Each turn's luck splits into two parts that each weigh to zero: the outcome's (its V less the turn's mean) and the
damage roll's. Here the outcome part is valued by each foresight value (alone, and half and half with the shipped
V), the roll part by the shipped V: every variant keeps the adjusted score's expectation. Printed: the pooled
variance ratio over mirror pairs, raw / adjusted (the chance alone: the bots' own draws not corrected for), with a
95 % bootstrap interval, and per matchup, beside the shipped V's; the CPU time per turn.

``id`` searches on a thread that it stops after the time given: a deeper result can come back from a position
small enough to search twice in no time; each call is repeated (up to 4 times) until it reports depth 1, and the
positions where it never did are counted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import poke_engine

from luck_validation import pair_frame, play, ratio_interval, stored  # benchmarks/: the script's folder, on sys.path
from pokebench.analysis.luck import move_turns, turn_outcomes
from pokebench.analysis.luck_rows import side_one_score
from pokebench.analysis.value import Snapshot, ValueModel, load_value_model
from pokebench.engine.errors import EngineError, hold_panic_output
from pokebench.engine.from_showdown import game_positions

FIT_SEEDS = "pokebench-luck-fit"
SCALES = (0.002, 0.005, 0.01, 0.02, 0.04)  # c of σ(c · the engine's score); its scores' middle 90 %: about ±270
STEPS = (1, 2, 3, 5, 8, 40)  # rollout lengths (40: in practice to the game's end)
_TRIES = 4


def _one_turn_deep(state: poke_engine.State) -> tuple[Any, np.ndarray, bool]:
    """``id(state, 0)``'s result, its matrix (side one's choices × side two's) and whether it is one turn deep."""
    for _ in range(_TRIES):
        result = poke_engine.id(state, 0)
        if result.depth_searched == 1:
            break
    matrix = np.array(result.matrix, dtype=float).reshape(len(result.s1), len(result.s2))
    return result, matrix, result.depth_searched == 1


def foresight(state: poke_engine.State, model: ValueModel) -> dict[str, float]:
    """The position's expectiminimax score (``em``: NaN when the game is over), its result if it is over
    (``finished``), the shipped V after each rollout length (``k1``, ``k2``...) and whether every search was one
    turn deep (``deep``: 1 or 0)."""
    out: dict[str, float] = {"em": np.nan, "finished": np.nan, "deep": 1.0}
    position = state
    for step in range(max(STEPS) + 1):
        snapshot = Snapshot.of(position)
        over = float(snapshot.finished()[0])
        value = over if not np.isnan(over) else float(model.of_snapshot(snapshot)[0])
        if step == 0:
            out["finished"] = over
        if step in STEPS:
            out[f"k{step}"] = value
        if not np.isnan(over) or step == max(STEPS):
            break
        try:
            result, matrix, one_deep = _one_turn_deep(position)
            out["deep"] = min(out["deep"], float(one_deep))
            rows = np.nanmin(matrix, axis=1)
            if step == 0:
                out["em"] = float(np.nanmax(rows))
            one = result.s1[int(np.nanargmax(rows))].removeprefix("switch ")
            two = result.s2[int(np.nanargmin(np.nanmax(matrix, axis=0)))].removeprefix("switch ")
            likeliest = max(poke_engine.generate_instructions(position, one, two), key=lambda i: i.percentage)
            position = position.apply_instructions(likeliest)
        except BaseException:  # noqa: BLE001 - the engine's panic (not an Exception): the rollout stops here
            break
    for k in STEPS:  # a rollout that ended early keeps its last value
        out.setdefault(f"k{k}", value)
    return out


def _chunk(logs: list[tuple[str, list[str]]]) -> tuple[dict[str, list[dict[str, Any]]], float, int]:
    """Per game, each valued move turn: its outcomes' weights, which happened, the shipped V's outcome means and
    roll luck, and each outcome's :func:`foresight`; with the CPU seconds and turns of the chunk."""
    hold_panic_output()
    model = load_value_model()
    start = time.process_time()
    turns = 0
    out: dict[str, list[dict[str, Any]]] = {}
    for game in game_positions(logs):
        rows = []
        for move_turn in move_turns(game):
            try:
                state, one, two, real = move_turn.position()
                chance = turn_outcomes(state, one, two, real)
            except EngineError:
                continue
            values = [model.of_snapshot(o.snapshot, o.hp_one, o.hp_two) for o in chance.outcomes]
            ahead = pd.DataFrame([foresight(o.state, model) for o in chance.outcomes])
            rows.append({"weights": chance.weights, "happened": chance.happened, "ahead": ahead,
                         "means": np.array([v.mean() for v in values]),
                         "roll": float(values[chance.happened][chance.row] - values[chance.happened].mean())})
            turns += 1
        out[game.id] = rows
    return out, time.process_time() - start, turns


def _outcome_value(turn: dict[str, Any], variant: str) -> np.ndarray:
    """Each outcome's value under `variant`: ``shipped``, ``em:C`` (σ(C · score)) or ``kN`` (a rollout's V)."""
    ahead = turn["ahead"]
    if variant == "shipped":
        return turn["means"]
    if variant.startswith("em:"):
        scale = float(variant.removeprefix("em:"))
        finished = ahead["finished"].to_numpy()
        return np.where(np.isnan(finished), 1 / (1 + np.exp(-scale * ahead["em"].fillna(0.0).to_numpy())), finished)
    return ahead[variant].to_numpy()


def chance_luck(turns: list[dict[str, Any]], variant: str, share: float) -> float:
    """Side one's chance luck over a game's turns: the outcome part `share` by `variant` and the rest by the
    shipped V, the roll part by the shipped V."""
    luck = 0.0
    for turn in turns:
        for value, weight in ((_outcome_value(turn, variant), share), (turn["means"], 1 - share)):
            if weight:
                luck += weight * float(value[turn["happened"]] - turn["weights"] @ value)
        luck += turn["roll"]
    return luck


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--run", default="luck-action-fit")
    parser.add_argument("--pairs", type=int, default=100, help="mirror pairs per matchup (played if missing)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    args.runs_dir.mkdir(parents=True, exist_ok=True)
    if not (args.runs_dir / args.run / "store.sqlite").exists():
        play(args.runs_dir, args.run, args.pairs, seed_text=FIT_SEEDS)
    games, by_uid = stored(args.runs_dir, args.run)
    games = games[games["pair"] <= args.pairs].sort_values(["matchup", "pair", "game"])
    logs = [(str(uid), by_uid[str(uid)][0]) for uid in games["uid"]]
    wall = time.monotonic()
    per_game: dict[str, list[dict[str, Any]]] = {}
    cpu, turns = 0.0, 0
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        for part, seconds, count in pool.imap_unordered(_chunk, [logs[i:i + 20] for i in range(0, len(logs), 20)]):
            per_game.update(part)
            cpu, turns = cpu + seconds, turns + count
    print(f"{len(per_game)} games, {turns} valued turns in {time.monotonic() - wall:.0f} s wall; "
          f"{1000 * cpu / max(turns, 1):.0f} ms CPU per turn (turn outcomes, the searches and the rollouts)")
    shallow = sum(int((t["ahead"]["deep"] < 1).any()) for rows in per_game.values() for t in rows)
    print(f"turns with a search deeper than one turn after {_TRIES} tries: {shallow}")

    games = games[games["uid"].astype(str).isin(per_game)].reset_index(drop=True)
    score_p1 = games["winner"].map(side_one_score)
    variants = [("shipped", "shipped", 1.0)] + [
        (f"{label}{'' if share == 1 else ' ½ + shipped ½'}", variant, share)
        for variant, label in [*((f"em:{c}", f"expectiminimax, c = {c}") for c in SCALES),
                               *((f"k{k}", f"rollout, {k} turns") for k in STEPS)]
        for share in (1.0, 0.5)]
    by_variant = {}
    for label, variant, share in variants:  # each variant's luck as luck.csv's rows, paired as luck_validation pairs
        luck_p1 = np.array([chance_luck(per_game[str(uid)], variant, share) for uid in games["uid"]])
        pairs = pair_frame(games, pd.DataFrame({"uid": games["uid"], "score_p1": score_p1, "luck_p1": luck_p1,
                                                "adjusted_p1": score_p1 - luck_p1, "start_p1": 0.0}))
        by_variant[label] = pairs["adjusted"]
    pairs = pairs[["matchup", "pair", "raw"]].assign(**by_variant)
    columns = ["raw", *by_variant]
    centred = pairs[columns] - pairs.groupby("matchup")[columns].transform("mean")
    rng = np.random.default_rng(0)
    matchups = sorted(pairs["matchup"].unique())
    print(f"\nvariance ratio over mirror pairs, raw / adjusted (chance alone), {len(pairs)} pairs; "
          f"per matchup: {', '.join(matchups)}")
    raw = centred["raw"].to_numpy()
    for label in columns[1:]:
        adjusted = centred[label].to_numpy()
        lo, hi = ratio_interval(raw, adjusted, rng)
        each = [group["raw"].var() / group[label].var() for _, group in pairs.groupby("matchup")]
        print(f"  {label:40s} pooled {raw.var(ddof=1) / adjusted.var(ddof=1):5.3f} [{lo:4.2f}, {hi:4.2f}]   "
              + " ".join(f"{r:4.2f}" for r in each))


if __name__ == "__main__":
    main()
