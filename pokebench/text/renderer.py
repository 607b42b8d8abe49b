"""The renderer: protocol lines in, the English battle log a player reads out ("Granbull used Earthquake!").

* ``perspective="p1"``/``"p2"``: the battle as that side saw it: own Pokémon plain ("Go! Granbull!"),
  the other side's "the opposing ...". Of each ``|split|pN`` section of the omniscient log it reads
  the secret line if N is its side (exact HP), else the public line (HP in percent).
* ``perspective=None``: a spectator: public lines only, worded as Showdown's client words them for a
  spectator, from Player 1's side (p1's Pokémon plain, "Go! X!"; p2's "the opposing").

Each line is upgraded as the client upgrades it (:func:`pokebench.text.protocol.upgrade_args`), then
worded with the pinned server's templates (:mod:`pokebench.text.templates`) as the client's text parser
words it, by the handler of its command (:mod:`pokebench.text.dispatch`): switches, moves, HP and stats in
:mod:`pokebench.text.events`, effects in :mod:`pokebench.text.effects`. ``[silent]`` lines give no text
(the client's battle log drops them) but update the state. Lines have no indent,
except the effect of an ability, under its pop-up::

    [The opposing Rotom's Levitate]
      It doesn't affect the opposing Rotom...

Events gen 9 singles never has (Mega Evolution, Z-Moves) get the generic line of an unknown event:
"(mega: Charizard, ...)".
"""

from __future__ import annotations

import re
from typing import Iterable

from pokebench.text import effects, events
from pokebench.text.dispatch import Context, Handler
from pokebench.text.names import POPUP, Wording
from pokebench.text.protocol import PROTOCOL_ONLY, parse_line, upgrade_args
from pokebench.text.revealed import Revealed
from pokebench.text.state import BattleState, species_types
from pokebench.text.templates import PLACEHOLDER, load_templates

__all__ = ["BattleText", "render_battle", "species_types"]

#: Command -> its handler. Any other event ("-xyz") gets :func:`pokebench.text.effects.unknown`'s generic line.
HANDLERS: dict[str, Handler] = {**events.HANDLERS, **effects.HANDLERS}


class BattleText:
    """Incremental renderer: feed it protocol lines as they come; it keeps HP, names and species.

    Its parts: ``words`` (the viewer's :class:`~pokebench.text.names.Wording`: names and templates),
    ``state`` (the :class:`~pokebench.text.state.BattleState`, the battle as the viewer knows it, which the
    handlers read and update), ``revealed`` (what the log showed that poke-env's state leaves out: items,
    Illusion...) and ``unfilled`` (lines whose template kept a placeholder: a renderer gap).
    """

    def __init__(self, perspective: str | None = "p1", templates: dict[str, dict[str, str]] | None = None):
        if perspective not in ("p1", "p2", None):
            raise ValueError(f"perspective must be 'p1', 'p2' or None (spectator), not {perspective!r}")
        self.perspective = perspective
        # the view is whose side is "near" in the wording (a spectator's is Player 1's)
        self.words = Wording(perspective or "p1", templates if templates is not None else load_templates())
        self.state = BattleState(perspective)
        self.revealed = Revealed()
        self.unfilled: list[str] = []
        self._context = Context(self.words, self.state)
        self._split: tuple[str, int] | None = None  # (side, lines of the split section seen)
        self._after_popup = False
        starts = {self.words.t["default"][k].split("[")[0] for k in
                  ("pokemon", "opposingPokemon", "team", "opposingTeam", "party", "opposingParty")}
        prefixes = sorted((p for p in starts if p[:1].islower()), key=len, reverse=True)
        self._lowercase = re.compile(r"^([(\[]?)(" + "|".join(map(re.escape, prefixes)) + ")") if prefixes else None

    def feed(self, lines: Iterable[str]) -> list[str]:
        """The text lines for these protocol lines (raw strings; a string may hold several lines)."""
        out: list[str] = []
        for item in [lines] if isinstance(lines, str) else lines:
            if isinstance(item, (list, tuple)):  # a line already split by poke-env
                item = "|".join(item)
            for line in str(item).split("\n"):
                out.extend(self._line(line.rstrip("\r")))
        return out

    def _line(self, line: str) -> list[str]:
        parsed = parse_line(line)
        if parsed is None:
            return []
        cmd, args, kw = parsed
        if cmd == "split":
            self._split = (args[0] if args else "", 0)
            return []
        if self._split is not None:  # the secret line, then the public line, of one event
            side, seen = self._split
            self._split = None if seen else (side, 1)
            if (self.perspective == side) != (seen == 0):
                return []
        cmd, args, kw = upgrade_args(cmd, args, kw)
        self.revealed.observe(cmd, args, kw)
        if cmd == "player" and len(args) > 1 and args[1]:
            self.words.add_player(args[0], args[1])
        handler = HANDLERS.get(cmd) or (None if cmd in PROTOCOL_ONLY or not cmd.startswith("-") else effects.unknown)
        if handler is None:
            return []
        self.words.popups.clear()
        parts = handler(self._context, cmd, args, kw)
        if "silent" in kw:
            return []
        self.state.abilities_shown.update(self.words.popups)
        return self._emit(parts)

    def _emit(self, parts: list[str]) -> list[str]:
        """Clean the lines of one event; indent what follows an ability pop-up (also in the next event)."""
        lines = [line for part in parts if part for line in part.split("\n") if line.strip(POPUP + " ")]
        if not lines:
            return []
        indent = self._after_popup and lines[0].startswith("  ")
        self._after_popup = all(line.startswith(POPUP) for line in lines)
        out = []
        for line in lines:
            out.append(("  " if indent and not line.startswith(POPUP) else "") + self._clean(line.lstrip(POPUP)))
            indent = indent or line.startswith(POPUP)
        return out

    def _clean(self, line: str) -> str:
        line = line.replace("**", "").strip()
        if PLACEHOLDER.search(line):  # a template asked for a value the protocol line did not give
            self.unfilled.append(line)
            line = re.sub(r"\s+", " ", PLACEHOLDER.sub("", line)).strip()
        if self._lowercase:
            line = self._lowercase.sub(lambda m: m.group(1) + m.group(2)[0].upper() + m.group(2)[1:], line, count=1)
        return line


def render_battle(lines: Iterable[str], perspective: str | None = "p1") -> list[str]:
    """All text lines of a battle, in order, as `perspective` saw it ('p1', 'p2'; None = spectator)."""
    return BattleText(perspective).feed(lines)
