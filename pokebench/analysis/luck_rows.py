"""The published luck tables from the cached luck of the games: ``luck.csv`` and ``luck_turns.csv``.

The cache (``runs/NAME/luck.jsonl``, :mod:`pokebench.analysis.cache`) holds one entry per game: its
move turns' luck (:func:`pokebench.analysis.luck.game_luck`), and the game's luck with V shifted by each of
:data:`SKILL_SHIFTS`. Here the game's luck is the one at its matchup's skill shift (:func:`skill_shifts`) and its
adjusted score the score minus it (side two's: the opposite and the complement). At shift 0 (a matchup of one pair)
the game's luck is the sum of its turns' in luck_turns.csv, whose luck is V's own, the same whoever plays.

Why the shift keeps the adjusted score unbiased: a turn's luck weighs to zero over its outcomes for any V fixed
before the turn's chance is drawn, and the shift is: it comes from the results of the matchup's *other* mirror
pairs (a pair's two games share their seeds, so both are left out), whose rolls are not this game's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from pokebench.analysis.cache import game_key, luck_path, read_entries
from pokebench.analysis.settings import SKILL_SHIFTS, SKILL_WEIGHT, engine_version
from pokebench.analysis.value import ValueModel, luck_settings
from pokebench.results.schema import SIDE_ONE_SCORE, LuckRow, LuckTurnRow, columns

__all__ = ["LUCK_COLUMNS", "LUCK_TURN_COLUMNS", "luck_settings", "luck_rows", "cached_entries", "read_luck",
           "side_one_score", "skill_shifts", "shift_index"]

LUCK_COLUMNS = columns(LuckRow)
LUCK_TURN_COLUMNS = columns(LuckTurnRow)


def side_one_score(winner: Any) -> float:
    """Side one's score from games.csv's ``winner`` (p1, p2, or empty for a tie)."""
    return SIDE_ONE_SCORE.get(winner, 0.5) if isinstance(winner, str) else 0.5


def skill_shifts(games: pd.DataFrame, weight: float = SKILL_WEIGHT) -> pd.Series:
    """Per game of `games` (games.csv's frame; index kept): side one's skill shift of V's log-odds, `weight` × the
    log-odds of side one's player's score against the other in the *other* mirror pairs of their matchup (either
    order, any run: a pair is its matchup and number), with a Laplace prior (0 where no other pair is played) and
    the score kept within [0.02, 0.98]."""
    score = games["winner"].map(side_one_score).astype(float)
    first = games[["p1", "p2"]].min(axis=1)  # either order of the matchup: the alphabetically first player's view
    mine = games["p1"] == first
    frame = pd.DataFrame({"players": first + "\0" + games[["p1", "p2"]].max(axis=1), "pair": games["pair"],
                          "score": np.where(mine, score, 1 - score)}, index=games.index)
    matchup = frame.groupby("players")["score"]
    pair = frame.groupby(["players", "pair"])["score"]
    others = matchup.transform("sum") - pair.transform("sum")
    count = matchup.transform("size") - pair.transform("size")
    share = ((others + 1) / (count + 2)).clip(0.02, 0.98)
    shift = weight * np.log(share / (1 - share))
    return pd.Series(np.where(mine, shift, -shift), index=games.index, dtype=float)


def shift_index(shift: float) -> int:
    """The index in :data:`SKILL_SHIFTS` (and a cache entry's ``luck_by_shift_p1``) of the shift nearest `shift`."""
    return int(np.argmin(np.abs(np.asarray(SKILL_SHIFTS) - shift)))


def luck_rows(entries: Iterable[dict[str, Any]], games: pd.DataFrame,
              skill_weight: float = SKILL_WEIGHT) -> tuple[pd.DataFrame, pd.DataFrame]:
    """luck.csv's and luck_turns.csv's rows of the cached entries of the games of `games` (games.csv's frame), each
    game's luck at its skill shift for `skill_weight` (:func:`skill_shifts`; benchmarks/luck_skill_shift.py tries
    others)."""
    by_uid = {str(g["uid"]): g for g in games.to_dict("records")}
    shifts = dict(zip(map(str, games["uid"]), skill_shifts(games, skill_weight)))
    per_game, per_turn = [], []
    for entry in entries:
        game = by_uid.get(entry["uid"])
        if game is None:
            continue
        score = side_one_score(game.get("winner"))
        index = shift_index(shifts[entry["uid"]])
        luck = entry["luck_by_shift_p1"][index]
        per_game.append({"uid": entry["uid"], "game_id": game["game_id"], "run": game["run"], "p1": game["p1"],
                         "p2": game["p2"], "score_p1": score, "luck_p1": luck, "adjusted_p1": score - luck,
                         "start_p1": entry.get("start_p1"), "skill_shift_p1": SKILL_SHIFTS[index],
                         "turns_analysed": sum(t["error"] is None for t in entry["turns"]),
                         "turns_failed": entry["turns_failed"], "error": entry.get("error"),
                         "value_model": entry["settings"]})
        per_turn += [{"uid": entry["uid"], "game_id": game["game_id"], **{k: t[k] for k in LUCK_TURN_COLUMNS[2:]}}
                     for t in entry["turns"]]
    luck = pd.DataFrame(per_game, columns=LUCK_COLUMNS)
    turns = pd.DataFrame(per_turn, columns=LUCK_TURN_COLUMNS)
    order = {uid: i for i, uid in enumerate(by_uid)}
    luck = luck.sort_values("uid", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)
    turns = turns.sort_values(["uid", "turn"], key=lambda s: s.map(order) if s.name == "uid" else s,
                              kind="stable").reset_index(drop=True)
    return luck, turns


def cached_entries(run_dirs: Sequence[Path], uids: Iterable[str] | None = None, model: ValueModel | None = None
                   ) -> list[dict[str, Any]]:
    """The luck cache's entries at the current settings in the runs' folders, one per game: of the games `uids`,
    or of every game cached."""
    engine = engine_version() or None  # without poke-engine here, what any version cached
    settings = luck_settings(model)
    wanted = None if uids is None else set(uids)
    return list({e["uid"]: e for run_dir in run_dirs for e in read_entries(luck_path(run_dir), engine, settings,
                                                                          key=game_key)
                 if wanted is None or e["uid"] in wanted}.values())


def read_luck(run_dirs: Sequence[Path], games: pd.DataFrame, model: ValueModel | None = None
              ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The luck tables of the games of `games` cached in the runs' folders (empty with their columns if none)."""
    return luck_rows(cached_entries(run_dirs, map(str, games["uid"]), model), games)
