"""The Random bot: one of its legal actions, uniformly (tera variants and switches included)."""

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

from pokebench.player.bench_player import BenchPlayer


class RandomBot(BenchPlayer):
    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        orders = battle.valid_orders
        if not orders:
            return self.choose_default_move()
        return self.rng.choice(orders)
