"""The state a model reads, rebuilt from a recorded game: its input log replayed through the pinned simulator.

``tests/data/state-games.json`` holds the input logs of a few bot games (the long text corpus's,
``benchmarks/battle_text_oracle.py``) chosen for a mechanic each. :func:`messages` replays one and
feeds what one side received to poke-env's battle and PokéBench's renderer as the LLM player does
(:class:`pokebench.players.llm.LLMPlayer`: requests are the state, every other line is an event), and
gives the message the player would be sent at each of its decisions.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from poke_env.battle import Battle
from poke_env.player import Player

from pokebench.showdown.node import run_text_oracle
from pokebench.text import prompt
from pokebench.text.renderer import BattleText

from support.games import REPO_DIR

GAMES: dict[str, dict[str, Any]] = json.loads((REPO_DIR / "tests" / "data" / "state-games.json").read_text())["games"]


@dataclass(frozen=True)
class Decision:
    """One decision of one side: the turn, the message it would be sent, and the battle state behind it."""

    turn: int
    message: str
    request: dict[str, Any]


def _name(input_log: list[str], side: str) -> str:
    line = next(line for line in input_log if line.startswith(f">player {side} "))
    return json.loads(line.split(" ", 2)[2])["name"]


def messages(name: str, side: str) -> list[Decision]:
    """Every decision `side` made in the recorded game `name` (a key of ``state-games.json``), in order."""
    game = GAMES[name]
    chunks = run_text_oracle([{"id": name, "input_log": game["input_log"]}])[0][side]["chunks"]
    battle = Battle(f"battle-gen9randombattle-{name}", _name(game["input_log"], side), logging.getLogger("test"), gen=9)
    text, pending, out = BattleText(side), [], []
    for line in "\n".join(chunks).split("\n"):
        parts = line.split("|")
        if len(parts) < 2 or parts[1] in Player.MESSAGES_TO_IGNORE or parts[1] == "error":
            continue
        if parts[1] != "request":
            pending.append(line)
            if parts[1] in ("win", "tie"):
                battle.won_by(parts[2]) if parts[1] == "win" else battle.tied()
            else:
                battle.parse_message(parts)
            continue
        request = json.loads(parts[2]) if parts[2] else {}
        if not request:
            continue
        battle.parse_request(request)
        if request.get("wait") or request.get("teamPreview"):
            continue
        events = text.feed(pending)
        pending = []
        build = prompt.first_message if not out else prompt.later_message
        out.append(Decision(battle.turn, build(battle, events, text), request))
    return out


def at_turn(decisions: list[Decision], turn: int) -> Decision:
    """The first decision at `turn`."""
    return next(d for d in decisions if d.turn == turn)


def section(message: str, start: str, end: str) -> str:
    """The part of a message between two headers (``OPPONENT (Player 2):`` ... ``\\n\\n``)."""
    return re.split(re.escape(end), message.split(start, 1)[1], maxsplit=1)[0]
