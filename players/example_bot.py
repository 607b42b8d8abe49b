"""The README's example of a user bot: the move with the highest base power, else a random legal action."""

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

from pokebench.player import BenchPlayer


class HighestPowerBot(BenchPlayer):
    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        if battle.available_moves:
            return self.create_order(max(battle.available_moves, key=lambda move: move.base_power))
        return self.rng.choice(battle.valid_orders)  # self.rng is seeded per game: runs repeat exactly
