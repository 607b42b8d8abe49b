"""The Max-damage bot, the anchor of the rating scale (rated 1000 by definition).

Each turn it uses the move with the highest damage estimate

    estimate = base power × expected hits × STAB (1.5 if the move's type is one of
               the user's types) × type effectiveness against the target's types
               × (attacker's attacking stat / defender's defending stat)

where the attacking stat is Atk for physical moves and SpA for special ones, and
the defending stat Def or SpD (Body Press uses the user's Def; Psyshock, Psystrike
and Secret Sword hit Def). Its own stats come from Showdown's request; the
opponent's are estimated from base stats and level with random battles' 31 IVs and
84 EVs. Status moves score 0; ties go to the move listed first. It never
terastallizes and switches only when it must, to the team member whose best move
has the highest estimate against the opposing active Pokémon.
"""

from __future__ import annotations

from typing import Any

from poke_env.battle import AbstractBattle, Move, MoveCategory, Pokemon
from poke_env.player.battle_order import BattleOrder

from pokebench.player.bench_player import BenchPlayer
from pokebench.player.policy import PolicyLog

_HITS_DEFENSE = {"psyshock", "psystrike", "secretsword"}


def estimated_stat(mon: Pokemon, stat: str) -> float:
    """The Pokémon's stat: known (own team) or estimated from base stat and level."""
    known = (mon.stats or {}).get(stat)
    if known:
        return float(known)
    base = mon.base_stats[stat]
    return (2 * base + 31 + 21) * mon.level / 100 + 5


def damage_estimate(move: Move, attacker: Pokemon, defender: Pokemon | None) -> float:
    if move.category == MoveCategory.STATUS or not move.base_power:
        return 0.0
    physical = move.category == MoveCategory.PHYSICAL
    attack_stat = "def" if move.id == "bodypress" else ("atk" if physical else "spa")
    defense_stat = "def" if physical or move.id in _HITS_DEFENSE else "spd"
    stab = 1.5 if move.type in attacker.types else 1.0
    estimate = move.base_power * move.expected_hits * stab * estimated_stat(attacker, attack_stat)
    if defender is not None:
        estimate *= defender.damage_multiplier(move) / estimated_stat(defender, defense_stat)
    return estimate


class MaxDamageBot(BenchPlayer):
    draws_from_global_random = False  # draws nothing

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        opponent = battle.opponent_active_pokemon
        if battle.available_moves and battle.active_pokemon is not None:
            best = max(battle.available_moves, key=lambda m: damage_estimate(m, battle.active_pokemon, opponent))
            return self.create_order(best)
        if battle.available_switches:
            def best_hit(mon: Pokemon) -> float:
                return max((damage_estimate(m, mon, opponent) for m in mon.moves.values()), default=0.0)
            return self.create_order(max(battle.available_switches, key=best_hit))
        return self.choose_default_move()


class NoisyMaxDamageBot(MaxDamageBot):
    """Max-damage made deliberately weaker: with probability ``epsilon`` a uniformly random legal action.

    A ladder of these (ε = 0.1, 0.3, 0.5) gives players of known order between Random (ε = 1)
    and Max-damage (ε = 0), for checking that a measure of play ranks them as their strength
    does (``benchmarks/decision_quality_validity.py``). Seeded per game like every bot.
    """

    draws_from_global_random = False  # only from self.rng

    def __init__(self, *args: Any, epsilon: float = 0.1, **kwargs: Any) -> None:
        self.preflight(epsilon)
        super().__init__(*args, **kwargs)
        self.epsilon = epsilon
        self.policy = PolicyLog()

    @staticmethod
    def preflight(epsilon: float = 0.1, **_: Any) -> None:
        """Refuse an epsilon that is not a probability, before any game (the run's plan calls this)."""
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not 0.0 <= epsilon <= 1.0:
            raise ValueError(f"epsilon must be a probability from 0 to 1 (e.g. epsilon=0.3), not {epsilon!r}")

    def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        """Its policy is recorded with each move choice (:mod:`pokebench.player.policy`): the luck analysis
        subtracts the luck of its own draws."""
        orders = battle.valid_orders
        greedy = super().choose_move(battle)
        chosen = self.rng.choice(orders) if orders and self.rng.random() < self.epsilon else greedy
        if orders:
            self.policy.record(battle, chosen, orders, self.epsilon, greedy)
        return chosen

    def game_summary(self) -> dict[str, Any]:
        return self.policy.summary()
