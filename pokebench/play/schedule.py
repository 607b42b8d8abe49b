"""From a run's config to the full list of games: mirror pairs with seeds derived by SHA-256 (:mod:`pokebench.seeds`).

Pair k of every matchup gets the same three seeds: a battle seed (every roll of the
battle) and one team seed per side (Showdown makes each side's random team from that
side's own seed). Game 1 of a pair puts player A on side 1, game 2 puts player B
there; the teams stay with the side, so each player gets each team once.
"""

from __future__ import annotations

from itertools import combinations
from typing import Iterable, Sequence

from pokebench.games import GameSpec
from pokebench.seeds import pair_seeds


def matchup_name(a: str, b: str) -> str:
    return f"{a}-vs-{b}"


def expand_matchups(players: Sequence[str], matchups: str | Iterable[Sequence[str]]) -> list[tuple[str, str]]:
    """``"all"`` means every pair of players once; otherwise a list of [A, B] pairs."""
    if isinstance(matchups, str):
        if matchups != "all":
            raise ValueError(f"matchups must be 'all' or a list of [A, B] pairs, not {matchups!r}")
        return list(combinations(players, 2))
    result = []
    for item in matchups:
        pair = tuple(item)
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"a matchup is two different players, like [random, max-damage]; got {list(item)!r}")
        unknown = [p for p in pair if p not in players]
        if unknown:
            raise ValueError(f"matchup {list(pair)} names {unknown}, which is not among the run's players {list(players)}")
        result.append((pair[0], pair[1]))
    return result


def build_schedule(run: str, seed_text: str, pairs: int, matchups: Sequence[tuple[str, str]],
                   rolls: str = "stock") -> list[GameSpec]:
    """Every matchup × pair gives two games; pair-major order so early stops still cover every matchup.
    `rolls`: how the battles draw their random numbers (:data:`pokebench.seeds.ROLLS`)."""
    games = []
    for pair in range(1, pairs + 1):
        seeds = pair_seeds(seed_text, pair, rolls)
        for a, b in matchups:
            for game, (p1, p2) in ((1, (a, b)), (2, (b, a))):
                games.append(GameSpec(run, matchup_name(a, b), pair, game, p1, p2,
                                      seeds.battle_seed, seeds.p1_team_seed, seeds.p2_team_seed))
    return games
