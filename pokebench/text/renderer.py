"""The renderer: protocol lines in, the English battle log a player reads out ("Granbull used Earthquake!").

* ``perspective="p1"``/``"p2"``: the battle as that side saw it: own Pokémon plain ("Go! Granbull!"),
  the other side's "the opposing ...". Of each ``|split|pN`` section of the omniscient log it reads
  the secret line if N is its side (exact HP), else the public line (HP in percent).
* ``perspective=None``: a spectator: public lines only, worded as Showdown's client words them for a
  spectator, from Player 1's side (p1's Pokémon plain, "Go! X!"; p2's "the opposing").

Each line is upgraded as the client upgrades it (:func:`pokebench.text.protocol.upgrade_args`), then
worded with the pinned server's templates (:mod:`pokebench.text.templates`) as the client's text parser
words it: switches, moves, HP and stats here, effects in :mod:`pokebench.text.effects`. ``[silent]``
lines give no text (the client's battle log drops them) but update the state. Lines have no indent,
except the effect of an ability, under its pop-up::

    [The opposing Rotom's Levitate]
      It doesn't affect the opposing Rotom...

Events gen 9 singles never has (Mega Evolution, Z-Moves) get the generic line of an unknown event:
"(mega: Charizard, ...)".
"""

from __future__ import annotations

import functools
import re
from typing import Iterable

from pokebench.text.effects import EffectWords
from pokebench.text.names import POPUP, damage_percentage, public_percent
from pokebench.text.revealed import Revealed
from pokebench.text.protocol import (FORME_EFFECTS, HANDLERS, NO_SWITCH_OUT_TEXT, PROTOCOL_ONLY, SIMPLE, SWAP_BOOSTS,
                                     effect_id, effect_name, key, pad, parse_hp, parse_line, upgrade_args)
from pokebench.text.templates import NODEFAULT, OWN, PLACEHOLDER, load_templates

__all__ = ["BattleText", "render_battle", "species_types"]


@functools.lru_cache(maxsize=4096)
def species_types(species: str) -> tuple[str, ...]:
    """A species' types ("Skarmory" -> ("Steel", "Flying")), from poke-env's gen 9 Pokédex; () if unknown."""
    from poke_env.data import GenData

    entry = GenData.from_gen(9).pokedex.get(re.sub(r"[^a-z0-9]", "", species.lower()), {})
    return tuple(entry.get("types", ()))


class BattleText(EffectWords):
    """Incremental renderer: feed it protocol lines as they come; it keeps HP, names and species."""

    def __init__(self, perspective: str | None = "p1", templates: dict[str, dict[str, str]] | None = None):
        if perspective not in ("p1", "p2", None):
            raise ValueError(f"perspective must be 'p1', 'p2' or None (spectator), not {perspective!r}")
        super().__init__(perspective or "p1", templates if templates is not None else load_templates())
        self.perspective = perspective  # the view is whose side is "near" in the wording
        self.usernames: dict[str, str] = {}  # Showdown name -> side, to keep names out of the text
        self.hp: dict[tuple[str, str], tuple[int, int]] = {}
        self.species: dict[tuple[str, str], str] = {}
        self.active: dict[str, str] = {}  # position ('p1a') -> ident of the Pokémon there
        self.fainted: set[tuple[str, str]] = set()
        # What the viewer was shown, for the state part of the prompt: each Pokémon's ability as its last
        # pop-up named it, and the stats changed since it came in, in the order they first changed.
        self.abilities_shown: dict[tuple[str, str], str] = {}
        self.boost_order: dict[tuple[str, str], list[str]] = {}
        self.types: dict[tuple[str, str], tuple[str, ...]] = {}  # as the client knows them (Roost's text needs them)
        self.tera: dict[tuple[str, str], str] = {}  # Terastallized, until it faints (Showdown ends it then)
        self.revealed = Revealed()  # what the log showed that poke-env's state leaves out (items, Illusion...)
        self.weather = ""
        self.spread = False
        self.unfilled: list[str] = []  # lines whose template kept a placeholder (a renderer gap)
        self._split: tuple[str, int] | None = None  # (side, lines of the split section seen)
        self._after_popup = False
        self._name_patterns: dict[re.Pattern[str], str] = {}
        starts = {self.t["default"][k].split("[")[0] for k in
                  ("pokemon", "opposingPokemon", "team", "opposingTeam", "party", "opposingParty")}
        prefixes = sorted((p for p in starts if p[:1].islower()), key=len, reverse=True)
        self._lowercase = re.compile(r"^([(\[]?)(" + "|".join(map(re.escape, prefixes)) + ")") if prefixes else None

    # ---- feeding ------------------------------------------------------------------------------
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
            self.usernames[args[1]] = args[0]
            self._name_patterns[re.compile(r"(?<!\w)" + re.escape(args[1]) + r"(?!\w)")] = args[0]
        method = HANDLERS.get(cmd) or ("" if cmd in PROTOCOL_ONLY or not cmd.startswith("-") else "_unknown")
        if not method:
            return []
        self._popups.clear()
        parts = getattr(self, method)(cmd, args, kw)
        if "silent" in kw:
            return []
        self.abilities_shown.update(self._popups)
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

    def scrub(self, text: str) -> str:
        """Free text ("alice forfeited.") with the Showdown user names replaced by "Player N"."""
        for pattern, side in self._name_patterns.items():
            text = pattern.sub(self.trainer(side), text)
        return text

    def _set_types(self, who: tuple[str, str], types: tuple[str, ...]) -> None:
        """A new species' types; a Terastallized Pokémon keeps its Tera type."""
        self.types[who] = (self.tera[who],) if who in self.tera else types

    def _set_hp(self, ident: str, health: str | None) -> str | None:
        """Record the new HP as the viewer saw it; the HP lost as the client words it, if the old HP was known."""
        who, new = key(ident), parse_hp(health or "")
        if new is None:
            return None
        if new[1] and new[1] != 100 and who[0] != self.perspective:  # exact HP the viewer did not see
            new = (public_percent(new[0], new[1]), 100)
        old = self.hp.get(who)
        max_hp = new[1] or (old[1] if old else 100)
        self.hp[who] = (new[0], max_hp)
        return damage_percentage(old, new[0], max_hp, who in self.fainted) if old and old[1] and max_hp else None

    # ---- handlers: (cmd, args, kw) -> raw template lines ----------------------------------------
    def _simple(self, cmd, args, kw):
        kind, namespace, slots = SIMPLE[cmd]
        if cmd in ("-crit", "-supereffective", "-resisted") and self.spread:
            kind += "Spread"
        if cmd == "-hitcount" and args[1:2] == ["1"]:
            kind = "hitCountSingular"
        if cmd == "-swapboost":
            kind = SWAP_BOOSTS.get(effect_id(kw.get("from")), kind)
        if cmd == "faint":
            self.fainted.add(key(args[0] if args else ""))
            self.boost_order.pop(key(args[0] if args else ""), None)
            self.tera.pop(key(args[0] if args else ""), None)
        if cmd == "-clearallboost":
            self.boost_order.clear()
        elif cmd in ("-clearboost", "-setboost") and args:
            self.boost_order[key(args[0])] = [args[1]] if cmd == "-setboost" and len(args) > 1 else []
        if cmd == "-terastallize" and len(args) > 1:
            self.tera[key(args[0])] = args[1]
            self.types[key(args[0])] = (args[1],)
        if isinstance(namespace, int):
            namespace = args[namespace] if namespace < len(args) else None
        elif namespace == "[from]":
            namespace = kw.get("from")
        values = {name: self.pk(args[i]) if name in ("POKEMON", "TARGET", "SOURCE") else args[i]
                  for name, i in slots.items() if i < len(args)}
        return [self.popup_from(kw, args[0] if args else ""), self.say(self.tpl(kind, namespace), None, kw, **values)]

    def _start(self, cmd, args, kw):
        return [self.tpl("startBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]

    def _win(self, cmd, args, kw):
        if cmd == "tie" or not args or not args[0]:
            return [self.tpl("tieBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]
        return [self.fill(self.tpl("winBattle"), TRAINER=self.trainer(self.usernames.get(args[0], "")))]

    def _switch(self, cmd, args, kw):
        """switch, drag, and replace (an Illusion ends: the true Pokémon takes the place and HP bar)."""
        ident, details, health = pad(args, 3)
        position, who = ident.split(":")[0], key(ident)
        out, previous, own = [], self.active.get(position), OWN if who[0] == self.view else ""
        if cmd == "switch" and previous and key(previous) not in self.fainted \
                and effect_id(kw.get("from")) not in NO_SWITCH_OUT_TEXT:
            template = self.tpl("switchOut", kw.get("from"), own)
            out.append(self.say(template, previous, NICKNAME=key(previous)[1]))
        if cmd == "replace" and previous and key(previous) in self.hp:
            self.hp[who] = self.hp[key(previous)]
        species = details.split(",")[0].strip() or who[1]
        if previous and cmd != "replace":
            self.boost_order.pop(key(previous), None)
        self.active[position], self.species[who] = ident, species
        self._set_types(who, species_types(species))
        self.fainted.discard(who)
        self._set_hp(ident, health)
        if cmd == "replace":
            return []
        template = self.tpl("switchIn", own) if cmd == "switch" else self.tpl("drag")
        return out + [self.say(template, ident, FULLNAME=who[1] if species == who[1] else f"{who[1]} ({species})")]

    def _move(self, cmd, args, kw):
        ident, move = pad(args, 2)
        self.spread = "spread" in kw
        return [self.popup_from(kw, ident), self.say(self.tpl("move", kw.get("from")), ident, MOVE=move)]

    def _cant(self, cmd, args, kw):
        ident, effect, move = pad(args, 3)
        template = self.tpl("cant", effect, NODEFAULT) or self.tpl("cant" if move else "cantNoMove")
        return [self.maybe_ability(effect, kw.get("of") or ident), self.say(template, ident, MOVE=move)]

    def _formechange(self, cmd, args, kw):
        ident, arg = pad(args, 2)
        if cmd == "-transform":
            new_species, effect, kind = self.species.get(key(arg), key(arg)[1]), "transform", "transform"
            self.types[key(ident)] = self.types.get(key(arg), species_types(new_species))
        else:
            new_species = arg.split(",")[0].strip()
            self.species[key(ident)] = new_species
            self._set_types(key(ident), species_types(new_species))
            effect, kind = FORME_EFFECTS.get(effect_id(new_species), ("", "transform"))
        template = self.tpl(kind, effect, "" if "msg" in kw else NODEFAULT)
        return [self.popup_from(kw, ident), self.say(template, ident, SPECIES=new_species)]

    def _message(self, cmd, args, kw):
        text = self.scrub("|".join(args))
        return [f"({text})" if cmd == "-hint" else text]

    def _sethp(self, cmd, args, kw):
        for ident, health in zip(args[0::2], args[1::2]):
            self._set_hp(ident, health)
        frm = kw.get("from")
        return [self.say(self.tpl("activate", frm), None, EFFECT=effect_name(frm))] if frm else []

    def _damage(self, cmd, args, kw):
        ident, health = pad(args, 2)
        lost, frm = self._set_hp(ident, health), kw.get("from") or ""
        template = self.tpl("damage", frm, NODEFAULT)
        if not template and not frm:
            template = self.tpl("damage" if lost is None else "damagePercentage")
        elif not template and frm.startswith("item:"):
            template = self.tpl("damageFromPokemon" if kw.get("of") else "damageFromItem")
        elif not template and ("partiallytrapped" in kw or effect_id(frm) in ("bind", "wrap")):
            template = self.tpl("damageFromPartialTrapping")
        return [self.popup_from(kw, ident), self.say(template or self.tpl("damage"), ident, kw, ITEM=effect_name(frm),
                                                     MOVE=effect_name(frm),
                                                     PERCENTAGE=lost)]

    def _heal(self, cmd, args, kw):
        ident, health = pad(args, 2)
        self._set_hp(ident, health)
        frm = kw.get("from") or ""
        template = self.tpl("heal", frm, NODEFAULT) or self.tpl(
            "healFromEffect" if frm and not frm.startswith("ability:") else "heal")
        return [self.popup_from(kw, ident),
                self.say(template, ident, kw, NICKNAME=kw.get("wisher"), EFFECT=effect_name(frm))]

    def _boost(self, cmd, args, kw):
        ident, stat, amount = pad(args, 3)
        frm = kw.get("from") or ""
        n = int(amount) if amount.lstrip("-").isdigit() else 1
        order = self.boost_order.setdefault(key(ident), [])
        if stat and stat not in order:
            order.append(stat)
        kind = cmd[1:] + ("3" if n >= 3 else "2" if n == 2 else "0" if n == 0 else "")
        kind += "FromItem" if n and frm.startswith("item:") else ""
        return [self.popup_from(kw, ident),
                self.say(self.tpl(kind, frm), ident, STAT=self.stat(stat), ITEM=effect_name(frm))]


def render_battle(lines: Iterable[str], perspective: str | None = "p1") -> list[str]:
    """All text lines of a battle, in order, as `perspective` saw it ('p1', 'p2'; None = spectator)."""
    return BattleText(perspective).feed(lines)
