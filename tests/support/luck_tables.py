"""The luck tables of issue 31 written into a published folder, in the shape of notes' luck contract.

:func:`add_luck` writes ``luck.csv`` (one row per analysed game), ``luck_turns.csv`` (one row per analysed turn)
and ``decision_quality.csv`` (a few decisions, two of them blunders), adds the luck and adjusted-Elo columns to
``ratings.csv`` and the luck columns to ``pairs.csv``, and lists the new tables in ``meta.json``, so that the site
can be built again from the folder.
The figures are synthetic but consistent the way the analysis makes them: a turn's luck is ``v_after -
expected``, a game's luck the sum of its turns', its adjusted score the score minus that luck; the ratings'
columns are fitted from them by the publisher's own code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from pokebench.analysis.quality import quality_figures
from pokebench.results.figures import adjusted_figures
from pokebench.results.luck_gain import with_luck_gain
from pokebench.results.reading import read_meta, read_table
from pokebench.results.schema import DecisionQualityRow, GameRow, LuckRow, LuckTurnRow, PairRow, RatingRow, columns
from pokebench.results.writing import write_table

#: The columns of luck.csv and luck_turns.csv, in order: the published contract's.
LUCK_COLUMNS = columns(LuckRow)
TURN_COLUMNS = columns(LuckTurnRow)
VALUE_MODEL = "logistic-test 1"
NO_TURN = "no searchable turn: the engine could not take any position of this game"
PANIC = "Taunt duration cannot be 3 when taunt volatile is active"


@dataclass(frozen=True)
class LuckGames:
    """Which game of the folder shows what: `graph` (an LLM game won by llm-a as Player 1 in 3 turns: a swing each
    way (:data:`GRAPH_LUCK`), a blunder by each side: :func:`_write_quality`), `failed_turn` (one turn not valued: the
    line breaks there), `error` (no searchable turn: a luck row with its error, no graph) and `missing` (left out
    of the luck tables)."""

    graph: str
    failed_turn: str
    error: str
    missing: str


#: The graph game's win probability for side one before each turn and after the last, and each turn's luck.
GRAPH_VALUES = [0.5, 0.55, 0.4, 1.0]
GRAPH_LUCK = {1: (0.03, "damage roll"), 2: (-0.15, "miss"), 3: (0.22, "critical hit")}


#: The graph game's skill shift (luck.csv's skill_shift_p1): its page says so; the other games' is 0.
GRAPH_SHIFT = -1.5


def _turn_luck(turn: int, k: int, after: float) -> tuple[float, str]:
    """Turn `turn`'s luck for side one in the folder's `k`-th game, and its event; the turn's expected value
    (`after` minus the luck) stays a probability."""
    scale = ((k % 5) - 2) / 2  # -1, -0.5, 0, 0.5, 1: some games lucky for side one, some for side two
    luck, event = {1: (0.02, "damage roll"), 2: (0.16 * scale, "critical hit" if scale else "")}.get(turn, (0.0, ""))
    return round(min(max(luck, after - 1), after), 4), event


def add_luck(folder: Path) -> LuckGames:
    """Write the luck tables into the published `folder` (see the module's docstring); which game is which."""
    games = pd.read_csv(folder / "games.csv")
    long = games["turns"] >= 3
    graph = str(games.loc[(games["p1"] == "llm-a") & (games["turns"] == len(GRAPH_VALUES) - 1)
                          & (games["winner"] == "p1"), "uid"].iloc[0])
    others = [str(u) for u in games.loc[games["p2"] != "llm-a", "uid"] if u != graph]
    broken = str(games.loc[long & (games["uid"] != graph) & (games["winner"] != "tie"), "uid"].iloc[0])
    others = [u for u in others if u != broken]
    chosen = LuckGames(graph=graph, failed_turn=broken, error=others[0], missing=others[1])
    luck_rows: list[dict[str, Any]] = []
    turn_rows: list[dict[str, Any]] = []
    for k, g in enumerate(games.to_dict("records")):
        if g["uid"] == chosen.missing:
            continue
        score = {"p1": 1.0, "tie": 0.5, "p2": 0.0}[g["winner"]]
        base: dict[str, Any] = {"uid": g["uid"], "game_id": g["game_id"]}
        if g["uid"] == chosen.error:
            luck_rows.append({**base, "run": g["run"], "p1": g["p1"], "p2": g["p2"], "score_p1": score,
                              "luck_p1": 0.0, "adjusted_p1": score, "start_p1": None, "skill_shift_p1": 0.0,
                              "turns_analysed": 0,
                              "turns_failed": int(g["turns"]), "error": NO_TURN, "value_model": VALUE_MODEL})
            continue
        turns = int(g["turns"])
        values = GRAPH_VALUES if g["uid"] == graph else [0.5 + (score - 0.5) * t / turns for t in range(turns + 1)]
        total, failed = 0.0, 0
        for t in range(1, turns + 1):
            if g["uid"] == chosen.failed_turn and t == 2:
                failed += 1
                turn_rows.append({**base, "turn": t, "v_before": None, "v_after": None, "expected": None,
                                  "luck_p1": 0.0, "roll_luck": 0.0, "action_luck": 0.0, "outcomes": 0, "event": "",
                                  "error": PANIC})
                continue
            after = values[t]
            luck, event = GRAPH_LUCK.get(t, (0.0, "")) if g["uid"] == graph else _turn_luck(t, k, after)
            total += luck
            turn_rows.append({**base, "turn": t, "v_before": values[t - 1], "v_after": after,
                              "expected": after - luck, "luck_p1": luck,
                              "roll_luck": luck if event == "damage roll" else 0.0, "action_luck": 0.0,
                              "outcomes": 8 if event else 1,
                              "event": event, "error": None})
        luck_rows.append({**base, "run": g["run"], "p1": g["p1"], "p2": g["p2"], "score_p1": score,
                          "luck_p1": round(total, 6), "adjusted_p1": round(score - total, 6),
                          "start_p1": values[0] - 0.5, "skill_shift_p1": GRAPH_SHIFT if g["uid"] == graph else 0.0,
                          "turns_analysed": turns - failed, "turns_failed": failed,
                          "error": None, "value_model": VALUE_MODEL})
    pd.DataFrame(luck_rows, columns=LUCK_COLUMNS).to_csv(folder / "luck.csv", index=False)
    pd.DataFrame(turn_rows, columns=TURN_COLUMNS).to_csv(folder / "luck_turns.csv", index=False)
    _write_quality(folder, games[games["uid"] == graph].iloc[0])
    _write_luck_figures(folder, pd.DataFrame(luck_rows))
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    meta["tables"] = [*meta["tables"], *(t for t in ("luck.csv", "luck_turns.csv") if t not in meta["tables"])]
    (folder / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
    return chosen


def add_empty_luck(folder: Path) -> None:
    """The luck tables of a run that was not analysed: no rows (the ratings' luck columns are empty already)."""
    pd.DataFrame(columns=LUCK_COLUMNS).to_csv(folder / "luck.csv", index=False)
    pd.DataFrame(columns=TURN_COLUMNS).to_csv(folder / "luck_turns.csv", index=False)


def _write_quality(folder: Path, game: pd.Series) -> None:
    """The graph game's scored decisions: blunders by llm-a (Player 1) on turn 1, the answer with the hostile
    reason, and by the bot (Player 2, no reason) on turn 2; llm-a's turn 3 is no blunder."""
    base = {"uid": game["uid"], "game_id": game["game_id"], "run": game["run"], "kind": "move", "options": 4,
            "engine": "poke-engine 0.0.48", "settings": "iterations 200", "match": False, "note": None}
    p1, p2 = {"side": "p1", "player": game["p1"]}, {"side": "p2", "player": game["p2"]}
    rows = [
        base | p1 | {"decision": 1, "turn": 1, "choice": "move 1", "action": "moonblast",
                     "engine_action": "switch florges", "best_value": 0.71, "value": 0.4, "regret": 0.31, "blunder": True},
        base | p2 | {"decision": 2, "turn": 2, "choice": "move 2", "action": "swordsdance",
                     "engine_action": "astralbarrage", "best_value": 0.6, "value": 0.35, "regret": 0.25, "blunder": True},
        base | p1 | {"decision": 3, "turn": 3, "choice": "move 1", "action": "moonblast", "engine_action": "moonblast",
                     "best_value": 0.5, "value": 0.45, "regret": 0.05, "blunder": False, "match": True},
    ]
    write_table(folder / "decision_quality.csv", DecisionQualityRow, pd.DataFrame(rows))


def _write_luck_figures(folder: Path, luck: pd.DataFrame) -> None:
    """The ratings' luck and decision-quality columns and ``pairs.csv``'s luck columns as the publisher computes
    them (:func:`pokebench.results.figures.adjusted_figures`, :func:`pokebench.analysis.quality.quality_figures`,
    :func:`pokebench.results.luck_gain.with_luck_gain`) from these games, their luck rows and the decisions
    scored; the luck columns empty when no luck was measured."""
    meta = read_meta(folder)
    games = read_table(folder / "games.csv", GameRow)
    boot = meta.bootstrap
    figures = adjusted_figures(games, luck, meta.anchor, boot.samples, boot.seed, boot.level, meta.prior_sd).merge(
        quality_figures(read_table(folder / "decision_quality.csv", DecisionQualityRow), boot.samples, boot.seed,
                        boot.level), on="player", how="outer")
    ratings = read_table(folder / "ratings.csv", RatingRow)
    ratings = ratings.drop(columns=list(figures.columns.drop("player"))).merge(figures, on="player", how="left")
    write_table(folder / "ratings.csv", RatingRow, ratings)
    pairs = with_luck_gain(read_table(folder / "pairs.csv", PairRow), games, luck, boot.samples, boot.seed, boot.level)
    write_table(folder / "pairs.csv", PairRow, pairs)
