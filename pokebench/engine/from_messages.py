"""A player's information at a stored decision: its poke-env ``Battle``, rebuilt from its own messages.

The protocol lines a side received up to a decision (``positions.js`` replays them, split
resolved, its requests included) go through poke-env's own parsing, dispatched as poke-env's
``Player`` dispatches them (``battle.parse_message``, ``battle.parse_request``), with PokéBench's
fix to poke-env (:mod:`pokebench.player.poke_env_fixes`): the ``Battle`` the player itself had.
:func:`player_positions` then samples what the side did not know
(:func:`pokebench.engine.from_battle.positions_from_battle`): never the opponent's hidden team.
"""

from __future__ import annotations

import json
import logging
import random
from typing import Sequence

from poke_env.battle import Battle
from poke_env.player import Player

from pokebench.engine.from_battle import positions_from_battle
from pokebench.engine.from_showdown import Decision, GamePositions
from pokebench.engine.position import Position
from pokebench.engine.sets import SetTable
from pokebench.player import poke_env_fixes

__all__ = ["battle_from_messages", "player_battle", "player_positions"]

_log = logging.getLogger("pokebench.engine.from_messages")
_log.setLevel(logging.ERROR)


def battle_from_messages(lines: Sequence[str], username: str, battle_format: str = "gen9randombattle") -> Battle:
    """The ``Battle`` of the player `username` after it received `lines` (one protocol line each)."""
    poke_env_fixes.apply()
    battle = Battle(battle_tag=f"battle-{battle_format}-analysis", username=username, logger=_log, gen=9,
                    save_replays=False)
    for line in lines:
        split = line.split("|")
        if len(split) < 2 or split[1] in Player.MESSAGES_TO_IGNORE or split[1] in ("error", "bigerror"):
            continue
        if split[1] == "request":
            if split[2]:
                battle.parse_request(json.loads("|".join(split[2:])))
        elif split[1] == "win":
            battle.won_by(split[2])
        elif split[1] == "tie":
            battle.tied()
        else:
            battle.parse_message(split)
    return battle


def player_name(input_log: Sequence[str], side: str) -> str:
    """The name side `side` played under (its ``>player`` line of the input log)."""
    for line in input_log:
        if line.startswith(f">player {side} "):
            return str(json.loads(line.split(" ", 2)[2])["name"])
    raise ValueError(f"the input log has no `>player {side}` line")


def player_battle(game: GamePositions, decision: Decision, username: str) -> Battle:
    """The deciding side's ``Battle`` at `decision` (its messages up to and including its request)."""
    return battle_from_messages(game.messages[decision.side][:decision.messages], username)


def player_positions(game: GamePositions, decision: Decision, username: str, sets: SetTable, rng: random.Random,
                     samples: int) -> list[Position]:
    """`samples` positions of what the deciding side knew at `decision`, its unknowns drawn from `sets`."""
    return positions_from_battle(player_battle(game, decision, username), sets, rng, samples)
