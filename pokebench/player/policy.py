"""A bot's known randomness, recorded with each of its move choices: what the luck analysis's action term reads.

AIVAT (Burch et al., AAAI 2018) subtracts the luck of a player's own random draws as it does the luck of the
dice, where the player's policy is known: for the draw that came, its value minus the policy's mean value
over every choice it could have drawn (:mod:`pokebench.analysis.luck`). A bot that draws at random (the Random
bot, ε-Max-damage) knows its policy exactly at the moment it draws, so it writes it down then, in its game's
summary (``policy``): per move choice, the turn, the choice sent, the orders drawn from uniformly with
probability ``epsilon`` and the order chosen otherwise (``greedy``; none when ``epsilon`` is 1). Choices as
Showdown's input log has them (``move thunderbolt terastallize``, ``switch pikachu``). A forced switch is
not recorded: the luck analysis has no turn for it.
"""

from __future__ import annotations

from typing import Any, Sequence

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

__all__ = ["PolicyLog", "choice_text"]


def choice_text(order: BattleOrder) -> str:
    """The choice as the input log records it: the order's message without ``/choose``."""
    return order.message.removeprefix("/choose ").strip()


class PolicyLog:
    """The recorded policy of a bot's move choices in one game (:meth:`summary` goes into its game summary)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def record(self, battle: AbstractBattle, chosen: BattleOrder, orders: Sequence[BattleOrder], epsilon: float,
               greedy: BattleOrder | None = None) -> None:
        """The bot chose `chosen`: uniformly from `orders` with probability `epsilon`, else `greedy`."""
        forced = battle.force_switch  # a list in doubles
        if any(forced) if isinstance(forced, list) else forced:
            return
        self.entries.append({"turn": battle.turn, "choice": choice_text(chosen),
                             "orders": [choice_text(o) for o in orders], "epsilon": epsilon,
                             "greedy": choice_text(greedy) if greedy is not None and epsilon < 1 else None})

    def summary(self) -> dict[str, Any]:
        return {"policy": self.entries}
