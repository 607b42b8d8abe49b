"""Showdown battle protocol -> the English battle log a player reads ("Granbull used Earthquake!").

The pieces, by concept: :mod:`~pokebench.text.protocol` (reading protocol lines, the client's upgrade of
old-shape events, the tables of events), :mod:`~pokebench.text.templates` (the pinned server's text
templates), :mod:`~pokebench.text.names` (how Pokémon, players and HP are named) and
:mod:`~pokebench.text.renderer` (:class:`BattleText`, which words each event). This module keeps their
public names together. ``python -m pokebench.cli.replay RUN GAME_ID --side p1`` prints a recorded game.
"""

from __future__ import annotations

from pokebench.text.names import format_percentage
from pokebench.text.protocol import effect_id, effect_name, parse_line
from pokebench.text.renderer import BattleText, render_battle
from pokebench.text.templates import PLACEHOLDER, BattleTextError, load_templates

__all__ = ["BattleText", "BattleTextError", "render_battle", "load_templates", "format_percentage", "effect_id",
           "effect_name", "parse_line", "PLACEHOLDER"]
