"""A battle position in PokéBench's own words, the one input of the engine bridge.

Two producers describe a position with these records, and one builder
(:mod:`pokebench.engine.state`) turns any of them into a poke-engine ``State``:

- *a player's information*: what one side knew at a decision (its own team exact, the
  opponent's revealed facts, the rest sampled from the pinned server's random-battle sets),
  from a poke-env ``Battle`` — the search bot during play, and the analysis of a stored game;
- *full information*: Showdown's own battle state at that decision, from the game's input log
  replayed in the pinned simulator — the analysis of a stored game.

Every name is a Showdown id (``toID``: lowercase letters and digits: ``"heavydutyboots"``,
``"ironhead"``, ``"zoroarkhisui"``), every type a lowercase type name (``"fire"``); the builder
maps them to the engine's names and refuses what the engine does not know (it would silently
become ``NONE``). Side one is always the side whose decision it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field as _field

#: Stat keys, as Showdown writes them.
STATS = ("atk", "def", "spa", "spd", "spe")
#: Boost keys, as Showdown writes them.
BOOSTS = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")


@dataclass
class MoveSlot:
    id: str
    pp: int
    disabled: bool = False


@dataclass
class MonSpec:
    """One Pokémon of a side, as it is now (hp, status, moves' PP...)."""

    species: str
    level: int
    types: tuple[str, ...]  # current types (after Terastallization, Soak...), one or two
    base_types: tuple[str, ...]
    hp: int
    max_hp: int
    stats: dict[str, int]  # keys STATS: the actual stats (not boosted)
    moves: list[MoveSlot]
    item: str  # "" when it holds none
    ability: str
    tera_type: str
    terastallized: bool = False
    status: str = ""  # Showdown's: "", "brn", "par", "slp", "frz", "psn", "tox"
    sleep_turns: int = 0  # turns asleep so far
    rest_turns: int = 0  # turns of Rest sleep left
    weight_kg: float = 0.0
    base_ability: str = ""  # "" means the same as ability

    @property
    def fainted(self) -> bool:
        return self.hp <= 0


#: ``SideSpec.last_move`` of an active Pokémon that has not moved since it switched in.
SWITCHED_IN = "switch"


@dataclass
class SideSpec:
    """One side: its Pokémon (at most six, in team order) and what is on its active slot and field."""

    mons: list[MonSpec]
    active: int  # index into mons
    boosts: dict[str, int] = _field(default_factory=dict)  # keys BOOSTS, only nonzero ones needed
    volatiles: set[str] = _field(default_factory=set)  # Showdown ids of the active's volatile statuses
    #: Side conditions as Showdown ids -> layers (spikes, toxicspikes) or turns left (reflect, tailwind...);
    #: 1 for those without either (stealthrock, stickyweb).
    conditions: dict[str, int] = _field(default_factory=dict)
    substitute_hp: int = 0
    toxic_count: int = 0  # turns of bad poison so far (the damage counter)
    force_switch: bool = False  # this side must choose a switch now
    #: This side's move of the turn is still to come: the other side's pivot move (U-turn...) went first and
    #: that side now chooses its switch-in (the engine's ``slow_uturn_move``).
    still_to_move: bool = False
    trapped: bool = False
    #: The active's last used move id; SWITCHED_IN when it has done nothing since it came in; "" for none
    #: (the engine then lets Fake Out work, and Encore fail).
    last_move: str = ""
    protect_streak: int = 0  # the active's Protects (and the like) in a row that worked
    wish: tuple[int, int] = (0, 0)  # (turns left, hp it heals)
    future_sight: tuple[int, int] = (0, 0)  # (turns left, index of the Pokémon that used it)
    #: Durations, as Showdown counts them (turns left), of the active's timed volatiles.
    volatile_turns: dict[str, int] = _field(default_factory=dict)

    @property
    def tera_used(self) -> bool:
        return any(mon.terastallized for mon in self.mons)


@dataclass
class FieldSpec:
    weather: str = ""  # Showdown ids: sunnyday, raindance, sandstorm, snow, desolateland, primordialsea...
    weather_turns: int = 0  # turns left; 0 when unknown or endless
    terrain: str = ""  # electricterrain, grassyterrain, mistyterrain, psychicterrain
    terrain_turns: int = 0
    trick_room: bool = False
    trick_room_turns: int = 0


@dataclass
class Position:
    """A decision point: side one is the side to move."""

    side_one: SideSpec
    side_two: SideSpec
    field: FieldSpec = _field(default_factory=FieldSpec)
    turn: int = 0
    #: What the producer could not represent or had to guess, one short line each (for the record).
    notes: list[str] = _field(default_factory=list)
