"""What a player reads: the battle log in Showdown's words, the v3 prompt, and how answers are parsed.

``protocol`` (protocol lines and tables), ``templates`` (Showdown's text templates), ``names`` (how
Pokémon, players and HP are named: :class:`~pokebench.text.names.Wording`), ``state`` (the battle as the
viewer knows it), ``renderer`` (:class:`BattleText`: lines in, text out), ``dispatch`` (the handlers' type
and tables), ``events`` and ``effects`` (the handlers: the words of main events and of effects),
``differential`` (the comparison with an independent renderer), ``prompt`` (the messages), ``answers``
(reading the model's answers).
"""

from pokebench.text.renderer import BattleText, render_battle
from pokebench.text.templates import BattleTextError
from pokebench.text.answers import parse_answer, ParsedAnswer
from pokebench.text.prompt import system_prompt, first_message, later_message, reask_message, refusal_message, LegalAction, legal_actions

__all__ = ["BattleText", "BattleTextError", "render_battle", "system_prompt", "first_message", "later_message", "reask_message", "refusal_message", "parse_answer", "ParsedAnswer", "LegalAction", "legal_actions"]
