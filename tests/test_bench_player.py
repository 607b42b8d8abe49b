"""The hooks every poke-env bot gets: the module-level generator in the game's own state around each choice."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from pokebench.player.bench_player import BenchPlayer, GameContext
from pokebench.seeds import derive_seed

BATTLE = SimpleNamespace(finished=False, turn=1)


class GlobalDrawer(BenchPlayer):
    def choose_move(self, battle: Any) -> Any:
        return random.random()


class OwnDrawer(BenchPlayer):
    draws_from_global_random = False  # says so, but draws from the module-level generator: it sees the caller's

    def choose_move(self, battle: Any) -> Any:
        return random.random()


class OwnChooser(OwnDrawer):
    def choose_move(self, battle: Any) -> Any:  # a choose_move of its own, and no word on its draws: swapped
        return random.random()


def draws(cls: type[BenchPlayer]) -> tuple[list[float], float]:
    """Three choices of a fresh player in one game, and the caller's next draw after them."""
    player = cls(start_listening=False)
    seed = derive_seed("bench-player", 1, "battle")
    player.begin_game(GameContext("g", "p1", seed, seed))
    random.seed(7)
    return [player.choose_move(BATTLE) for _ in range(3)], random.random()


def test_a_bot_drawing_from_the_module_level_generator_repeats_per_game_and_leaves_the_callers_draws():
    first, after = draws(GlobalDrawer)
    assert draws(GlobalDrawer) == (first, after)
    caller = random.Random(7)
    assert after == caller.random() and caller.random() not in first


def test_a_choose_move_that_says_it_draws_only_from_its_rng_is_not_swapped_but_an_override_of_it_is():
    caller = random.Random(7)
    assert draws(OwnDrawer) == ([caller.random() for _ in range(3)], caller.random())
    assert draws(OwnChooser) == draws(GlobalDrawer)
