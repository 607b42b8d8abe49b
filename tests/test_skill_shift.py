"""The skill shift of the luck-adjusted score (pokebench/analysis/luck_rows.py): each game's luck is taken at the
shift of V its matchup's *other* mirror pairs give, so that the adjusted score keeps its expectation; the luck is
read from the cache entry's luck at every shift."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from pokebench.analysis.luck_rows import luck_rows, shift_index, skill_shifts
from pokebench.analysis.settings import SKILL_SHIFTS, SKILL_WEIGHT


def _games(winners: dict[tuple[str, int], list[str]]) -> pd.DataFrame:
    """Mirror pairs: (matchup, pair) -> the winners of its games 1 and 2 (game 2 swaps the sides)."""
    rows = []
    for (matchup, pair), won in winners.items():
        a, b = matchup.split("-vs-")
        for game, winner in enumerate(won, start=1):
            p1, p2 = (a, b) if game == 1 else (b, a)
            rows.append({"uid": f"{matchup}.p{pair}.g{game}", "game_id": f"{matchup}.p{pair}.g{game}", "run": "r",
                         "matchup": matchup, "pair": pair, "game": game, "p1": p1, "p2": p2, "winner": winner})
    return pd.DataFrame(rows)


def _logit(share: float) -> float:
    return math.log(share / (1 - share))


def test_a_games_shift_comes_from_the_other_pairs_of_its_matchup_and_not_from_its_own() -> None:
    winners = {("a-vs-b", 1): ["p1", "p2"], ("a-vs-b", 2): ["p1", "p1"], ("a-vs-b", 3): ["p1", "p2"],
               ("a-vs-c", 1): ["p2", "tie"]}
    games = _games(winners)
    shifts = dict(zip(games["uid"], skill_shifts(games)))
    # pair 1 of a-vs-b: a won 3 of the other 4 games (1 of pair 2, both of pair 3); the prior: (3 + 1) / (4 + 2)
    assert shifts["a-vs-b.p1.g1"] == pytest.approx(SKILL_WEIGHT * _logit(4 / 6))
    assert shifts["a-vs-b.p1.g2"] == pytest.approx(-SKILL_WEIGHT * _logit(4 / 6))  # b on side one
    assert shifts["a-vs-c.p1.g1"] == shifts["a-vs-c.p1.g2"] == 0.0  # no other pair: V's own

    own = _games({**winners, ("a-vs-b", 1): ["p2", "p1"]})  # the pair's own results turned round
    assert dict(zip(own["uid"], skill_shifts(own)))["a-vs-b.p1.g1"] == shifts["a-vs-b.p1.g1"]
    other = _games({**winners, ("a-vs-b", 3): ["p2", "p1"]})  # another pair's: a now loses both
    assert dict(zip(other["uid"], skill_shifts(other)))["a-vs-b.p1.g1"] == pytest.approx(SKILL_WEIGHT * _logit(2 / 6))

    swapped = games.assign(matchup="b-vs-a")  # the matchup named the other way round: the same shifts
    assert list(skill_shifts(swapped)) == pytest.approx(list(skill_shifts(games)))


def test_a_sure_winner_is_shifted_only_as_far_as_the_cache_holds() -> None:
    games = _games({("a-vs-b", pair): ["p1", "p2"] for pair in range(1, 201)})  # a wins all 398 other games
    assert skill_shifts(games).abs().max() == pytest.approx(SKILL_WEIGHT * _logit(0.98))
    assert SKILL_SHIFTS[shift_index(skill_shifts(games).max())] <= SKILL_SHIFTS[-1]
    assert shift_index(100.0) == len(SKILL_SHIFTS) - 1 and shift_index(-100.0) == 0 and SKILL_SHIFTS[shift_index(0.2)] == 0


def test_a_games_luck_is_the_cached_luck_at_its_shift() -> None:
    games = _games({("a-vs-b", 1): ["p1", "p2"], ("a-vs-b", 2): ["p1", "p1"], ("a-vs-b", 3): ["p1", "p2"]})
    entries = [{"uid": uid, "turns": [], "turns_failed": 0, "start_p1": 0.0, "error": None, "settings": "s",
                "luck_by_shift_p1": [k / 100 for k in range(len(SKILL_SHIFTS))]} for uid in games["uid"]]
    luck, _ = luck_rows(entries, games)
    for row, shift in zip(luck.itertuples(), skill_shifts(games)):
        index = shift_index(shift)
        assert row.skill_shift_p1 == SKILL_SHIFTS[index] and abs(row.skill_shift_p1 - shift) <= 0.25
        assert row.luck_p1 == index / 100
        assert row.adjusted_p1 == pytest.approx(row.score_p1 - row.luck_p1)
    assert luck["skill_shift_p1"].nunique() > 1
