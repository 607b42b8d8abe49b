"""The battle as the viewer's log showed it: HP, species, types, who is active, what fainted, the weather...

One :class:`BattleState` per renderer. The handlers of :mod:`pokebench.text.events` and
:mod:`pokebench.text.effects` read it (a switch-out is not worded after a faint, Roost's text only for a
Flying type) and update it; the prompt reads what the viewer was shown (abilities, stat-change order,
species, Tera types) from it (:class:`pokebench.text.prompt.Seen`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from pokebench.text.names import public_percent
from pokebench.text.protocol import key, parse_hp

__all__ = ["BattleState", "Who", "species_types"]

Who = tuple[str, str]  # ('p1', 'Granbull'): a Pokémon, wherever it is (protocol.key)


@functools.lru_cache(maxsize=4096)
def species_types(species: str) -> tuple[str, ...]:
    """A species' types ("Skarmory" -> ("Steel", "Flying")), from poke-env's gen 9 Pokédex; () if unknown."""
    from poke_env.data import GenData

    entry = GenData.from_gen(9).pokedex.get(re.sub(r"[^a-z0-9]", "", species.lower()), {})
    return tuple(entry.get("types", ()))


@dataclass
class BattleState:
    """What the viewer knows of the battle so far; `perspective` is whose exact HP it sees (None: nobody's)."""

    perspective: str | None
    hp: dict[Who, tuple[int, int]] = field(default_factory=dict)
    species: dict[Who, str] = field(default_factory=dict)
    active: dict[str, str] = field(default_factory=dict)  # position ('p1a') -> ident of the Pokémon there
    fainted: set[Who] = field(default_factory=set)
    # What the viewer was shown, for the state part of the prompt: each Pokémon's ability as its last
    # pop-up named it, and the stats changed since it came in, in the order they first changed.
    abilities_shown: dict[Who, str] = field(default_factory=dict)
    boost_order: dict[Who, list[str]] = field(default_factory=dict)
    types: dict[Who, tuple[str, ...]] = field(default_factory=dict)  # as the client knows them (for Roost's text)
    tera: dict[Who, str] = field(default_factory=dict)  # Terastallized, until it faints (Showdown ends it then)
    weather: str = ""
    spread: bool = False  # the last move hit more than one target ("It's super effective on ...")

    def set_types(self, who: Who, types: tuple[str, ...]) -> None:
        """A new species' types; a Terastallized Pokémon keeps its Tera type."""
        self.types[who] = (self.tera[who],) if who in self.tera else types

    def set_hp(self, ident: str, health: str | None) -> tuple[int, int] | None:
        """Record the new HP (hp, max) as the viewer saw it; the HP before, if known and `health` is an HP."""
        who, new = key(ident), parse_hp(health or "")
        if new is None:
            return None
        if new[1] and new[1] != 100 and who[0] != self.perspective:  # exact HP the viewer did not see
            new = (public_percent(new[0], new[1]), 100)
        old = self.hp.get(who)
        self.hp[who] = (new[0], new[1] or (old[1] if old else 100))
        return old
