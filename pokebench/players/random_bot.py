"""The Random bot: one of its legal actions, uniformly (tera variants and switches included); each move choice's
policy is recorded for the luck analysis (:mod:`pokebench.player.policy`)."""

from typing import Any

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

from pokebench.player.bench_player import BenchPlayer
from pokebench.player.policy import PolicyLog


class RandomBot(BenchPlayer):
    draws_from_global_random = False  # only from self.rng

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.policy = PolicyLog()

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        orders = battle.valid_orders
        if not orders:
            return self.choose_default_move()
        chosen = self.rng.choice(orders)
        self.policy.record(battle, chosen, orders, 1.0)
        return chosen

    def game_summary(self) -> dict[str, Any]:
        return self.policy.summary()
