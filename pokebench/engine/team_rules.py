"""The rules by which the pinned generator builds a Gen 9 random-battle team, as checks on one more Pokémon.

``randomTeam()`` in ``data/random-battles/gen9/teams.ts`` draws species one at a time and skips one
that would break a rule given the Pokémon already on the team. For singles with 6 Pokémon
(``limitFactor`` 1) the rules, in its order, are:

- ``type``: at most 2 Pokémon of any one type;
- ``weak``: at most 3 weak to any one attacking type, where weak means ``getEffectiveness > 0``: the sum
  over the defender's types of +1 super-effective, -1 resisted, 0 neutral *and immune*;
- ``double weak``: at most 1 doubly weak (> 1) to any one type;
- ``fire ability``: a Pokémon that may have Dry Skin or Fluffy and is neutral to Fire joins only while
  fewer than 3 are weak to Fire; one *dealt* Dry Skin or Fluffy counts as weak to Fire;
- ``freeze-dry``: at most 4 weak to Ice or Water-type without a double Ice resistance;
- ``level 100``: at most one level-100 Pokémon (gen9randombattle has no Adjust Level rule);
- ``compatible``: ``getPokemonCompatibility``'s singles pairs (Blissey/Chansey, Illumise/Volbeat, two web
  setters, two screen setters, Toxicroak with a sun setter);
- ``tera blast``: Ogerpon, Ogerpon-Hearthflame or Terapagos not beside a Tera Blast user (the generator's
  role; here: a set with Tera Blast) or another of the three.

Types come from poke-env's Gen 9 data (the Pokédex's types and abilities, its type chart); Zacian and
Zamazenta holding their Rusted Sword and Shield are checked as their crowned formes, as the generator draws
them (:func:`rule_species`). Left out:
rules on the order of the draws (Zoroark never drawn last, a no-lead Pokémon never drawn for the lead
slot: the order a player sees is not the order of the draws), the Pokémon of the Day (not configured),
and the rules that shape a *set* by the team (one Stealth Rock setter, one Tera Blast user...).
"""

from __future__ import annotations

import functools
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Protocol

from poke_env.data import GenData
from poke_env.data.normalize import to_id_str as to_id  # the Pokédex's names are ASCII: Showdown's ids

TYPE_LIMIT, WEAK_LIMIT, DOUBLE_WEAK_LIMIT, FREEZE_DRY_LIMIT, MAX_LEVEL_LIMIT = 2, 3, 1, 4, 1
FIRE_ABILITIES = frozenset({"dryskin", "fluffy"})
TERA_BLAST_SPECIES = frozenset({"ogerpon", "ogerponhearthflame", "terapagos"})
_WEB = frozenset({"ariados", "smeargle", "masquerain", "kricketune", "leavanny", "galvantula", "vikavolt", "ribombee",
                  "araquanid", "spidops"})
_SCREENS = frozenset({"meowstic", "grimmsnarl", "ninetalesalola", "abomasnow"})
#: getPokemonCompatibility's singles pairs: a Pokémon of one side never joins a team with one of the other.
INCOMPATIBLE: tuple[tuple[frozenset[str], frozenset[str]], ...] = (
    (frozenset({"blissey"}), frozenset({"chansey"})),
    (frozenset({"illumise"}), frozenset({"volbeat"})),
    (_WEB, _WEB),
    (_SCREENS, _SCREENS),
    (frozenset({"toxicroak"}), frozenset({"ninetales", "torkoal", "groudon", "koraidon"})),
)


class Member(Protocol):
    """A Pokémon on the team as far as the rules look: a dealt set or what was revealed of one."""

    @property
    def species(self) -> str: ...
    @property
    def level(self) -> int | None: ...
    @property
    def ability(self) -> str | None: ...
    @property
    def moves(self) -> Iterable[str]: ...
    @property
    def item(self) -> str | None: ...


@dataclass(frozen=True)
class Profile:
    """What the rules read of a species: its base species, types and (immunities ignored) weaknesses."""

    species: str
    base: str
    types: tuple[str, ...]
    weak: frozenset[str]
    double_weak: frozenset[str]
    freeze_dry: bool
    fire_ability: bool  # may have Dry Skin or Fluffy and is neutral to Fire


@functools.lru_cache(maxsize=1)
def _item_formes() -> dict[tuple[str, str], str]:
    """(species, item) -> the battle-only forme the generator checks the rules on: a set of Zamazenta-Crowned
    is dealt (and counted in the set table) as Zamazenta holding the Rusted Shield, but typed Fighting/Steel."""
    return {(to_id(entry["battleOnly"]), to_id(entry["requiredItem"])): forme
            for forme, entry in GenData.from_gen(9).pokedex.items()
            if isinstance(entry.get("battleOnly"), str) and entry.get("requiredItem")}


def rule_species(species: str, item: str | None) -> str:
    """The species whose types the rules read for `species` holding `item` (itself, but for Zacian's and
    Zamazenta's crowned formes)."""
    return _item_formes().get((species, to_id(item or "")), species)


def _effectiveness(attacker: str, types: tuple[str, ...]) -> int:
    """Showdown's ``getEffectiveness``: +1 per super-effective type, -1 per resisting one, 0 otherwise (immune too)."""
    chart = GenData.from_gen(9).type_chart
    return sum({2: 1, 0.5: -1}.get(chart[t.upper()][attacker], 0) for t in types if t.upper() in chart)


@functools.lru_cache(maxsize=None)
def profile(species: str) -> Profile:
    """The species' profile (no types, so no weaknesses, for one poke-env's Pokédex lacks)."""
    entry = GenData.from_gen(9).pokedex.get(species, {})
    types = tuple(to_id(t) for t in entry.get("types", ()))
    attackers = list(GenData.from_gen(9).type_chart)
    effect = {a: _effectiveness(a, types) for a in attackers}
    abilities = {to_id(a) for a in entry.get("abilities", {}).values()}
    return Profile(species=species, base=to_id(entry.get("baseSpecies", species)), types=types,
                   weak=frozenset(a.lower() for a, e in effect.items() if e > 0),
                   double_weak=frozenset(a.lower() for a, e in effect.items() if e > 1),
                   freeze_dry=bool(types) and (effect["ICE"] > 0 or (effect["ICE"] > -2 and "water" in types)),
                   fire_ability=bool(abilities & FIRE_ABILITIES) and effect["FIRE"] == 0)


@dataclass
class TeamCounts:
    """The counters ``randomTeam()`` keeps of the team so far."""

    types: Counter[str] = field(default_factory=Counter)
    weak: Counter[str] = field(default_factory=Counter)
    double_weak: Counter[str] = field(default_factory=Counter)
    freeze_dry: int = 0
    max_level: int = 0
    species: set[str] = field(default_factory=set)
    tera_blast: bool = False

    @classmethod
    def of(cls, team: Iterable[Member]) -> TeamCounts:
        counts = cls()
        for member in team:
            counts.add(member)
        return counts

    def add(self, member: Member) -> None:
        """Count one more Pokémon on the team, as the generator does once it has joined."""
        found = profile(rule_species(member.species, member.item))
        self.types.update(found.types)
        self.weak.update(found.weak)
        self.double_weak.update(found.double_weak)
        if to_id(member.ability or "") in FIRE_ABILITIES and found.fire_ability:
            self.weak["fire"] += 1
        self.freeze_dry += found.freeze_dry
        self.max_level += member.level == 100
        self.species.add(member.species)
        self.tera_blast |= member.species in TERA_BLAST_SPECIES or "terablast" in member.moves


Rule = Callable[[Profile, int, TeamCounts], bool]


def _compatible(found: Profile, counts: TeamCounts) -> bool:
    for side_a, side_b in INCOMPATIBLE:
        for mine, theirs in ((side_a, side_b), (side_b, side_a)):
            if found.species in mine and counts.species & theirs:
                return False
    return True


#: The rules in ``randomTeam()``'s order, each True when a Pokémon of this profile and level may join the team.
RULES: tuple[tuple[str, Rule], ...] = (
    ("type", lambda p, _, c: all(c.types[t] < TYPE_LIMIT for t in p.types)),
    ("weak", lambda p, _, c: all(c.weak[t] < WEAK_LIMIT for t in p.weak)),
    ("double weak", lambda p, _, c: all(c.double_weak[t] < DOUBLE_WEAK_LIMIT for t in p.double_weak)),
    ("fire ability", lambda p, _, c: not p.fire_ability or c.weak["fire"] < WEAK_LIMIT),
    ("freeze-dry", lambda p, _, c: not p.freeze_dry or c.freeze_dry < FREEZE_DRY_LIMIT),
    ("level 100", lambda p, level, c: level != 100 or c.max_level < MAX_LEVEL_LIMIT),
    ("compatible", lambda p, _, c: _compatible(p, c)),
    ("tera blast", lambda p, _, c: not (p.species in TERA_BLAST_SPECIES and c.tera_blast)),
)


def allowed(species: str, level: int, counts: TeamCounts, rules: int = len(RULES)) -> bool:
    """Whether `species` (dealt at `level`) may join the team of `counts` under the first `rules` rules."""
    found = profile(species)
    return all(check(found, level, counts) for _, check in RULES[:rules])
