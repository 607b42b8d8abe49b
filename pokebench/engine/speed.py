"""A random-battle set's speed, and who a turn's order says was faster: for the set inference's move-order evidence.

Showdown orders a turn's actions by priority bracket, then by speed (reversed under Trick Room; a tie
at random). A random-battle set's Speed stat follows from its species, its level and the generator's
85 EVs and 31 IVs with a neutral nature (0 and 0 for a Trick Room or Gyro Ball set,
``data/random-battles/gen9/teams.ts``); the battle multiplies it by boosts, paralysis, Tailwind, the
item (Choice Scarf, Iron Ball) and the ability (Swift Swim in rain...).
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from poke_env.data import GenData

from pokebench.engine.sets import RandomSet

__all__ = ["Conditions", "SpeedOrder", "UNORDERED_ITEMS", "effective_speed", "move_priority", "speed_stat"]

#: Random battles' speed EVs and IVs (``data/random-battles/gen9/teams.ts``: 85 and 31; 0 and 0 for sets with
#: these moves).
SPEED_EVS, SPEED_IVS = 85, 31
SLOW_SETS = frozenset({"trickroom", "gyroball"})
_WEATHER_SPEED = {"swiftswim": ("raindance", "primordialsea"), "chlorophyll": ("sunnyday", "desolateland"),
                  "sandrush": ("sandstorm",), "slushrush": ("snow", "snowscape", "hail")}
#: Abilities that change who moves first within a priority bracket in ways a speed does not say.
_UNORDERED_ABILITIES = frozenset({"stall", "myceliummight", "quickdraw", "galewings", "slowstart"})
UNORDERED_ITEMS = frozenset({"laggingtail", "fullincense", "quickclaw", "custapberry"})


def to_id(text: str) -> str:
    """A name as a Showdown id (``Heavy-Duty Boots`` -> ``heavydutyboots``)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


@functools.lru_cache(maxsize=1)
def dex() -> GenData:
    """poke-env's Gen 9 data (the Pokédex's base stats and types, the moves' priorities)."""
    return GenData.from_gen(9)


def speed_stat(base: int, level: int, slow: bool = False) -> int:
    """A random-battle set's Speed stat (neutral nature; `slow`: a Trick Room or Gyro Ball set's 0 EVs and IVs)."""
    evs, ivs = (0, 0) if slow else (SPEED_EVS, SPEED_IVS)
    return (2 * base + ivs + evs // 4) * level // 100 + 5


def _boosted(stat: int, stage: int) -> int:
    stage = max(-6, min(6, stage))
    return stat * (2 + stage) // 2 if stage >= 0 else stat * 2 // (2 - stage)


@dataclass(frozen=True)
class Conditions:
    """What a side's speed depends on at a moment, beside its set: what the battle showed."""

    boost: int = 0
    paralysed: bool = False
    statused: bool = False
    tailwind: bool = False
    weather: str = ""
    terrain: str = ""
    speed_boosted: bool = False  # Protosynthesis or Quark Drive on Speed


def effective_speed(stat: int, ability: str, item: str, cond: Conditions) -> float:
    """The speed Showdown orders actions by (its chained modifiers multiplied, not rounded per step)."""
    mult = 1.0
    if item == "choicescarf":
        mult *= 1.5
    elif item == "ironball":
        mult *= 0.5
    if cond.weather in _WEATHER_SPEED.get(ability, ()) or (ability == "surgesurfer" and cond.terrain == "electricterrain"):
        mult *= 2
    if ability == "quickfeet" and cond.statused:
        mult *= 1.5
    elif cond.paralysed:
        mult *= 0.5
    if cond.speed_boosted:
        mult *= 1.5
    if cond.tailwind:
        mult *= 2
    return math.floor(_boosted(stat, cond.boost) * mult)


def move_priority(move: str, ability: str, terrain: str) -> int | None:
    """A move's priority bracket with the user's ability; None when it is not the speeds that order it."""
    entry = dex().moves.get(move)
    if entry is None or ability in _UNORDERED_ABILITIES:
        return None
    priority = int(entry.get("priority", 0))
    if ability == "prankster" and entry.get("category") == "Status":
        priority += 1
    if ability == "triage" and "heal" in entry.get("flags", {}):
        priority += 3
    if move == "grassyglide" and terrain == "grassyterrain":
        priority += 1
    return priority


@dataclass(frozen=True)
class SpeedOrder:
    """A turn both sides used a move: who went first, and all but the opponent's set that decided it."""

    opponent_first: bool
    species: str
    level: int
    opponent_move: str
    opponent_cond: Conditions
    our_priority: int
    our_speed: float
    trick_room: bool

    def allows(self, candidate: RandomSet) -> bool:
        if candidate.item in UNORDERED_ITEMS:
            return True
        theirs = move_priority(self.opponent_move, candidate.ability, self.opponent_cond.terrain)
        if theirs is None:
            return True
        if theirs != self.our_priority:
            return (theirs > self.our_priority) == self.opponent_first
        base = int(dex().pokedex[self.species]["baseStats"]["spe"])
        stat = speed_stat(base, candidate.level, slow=bool(SLOW_SETS & set(candidate.moves)))
        speed = effective_speed(stat, candidate.ability, candidate.item, self.opponent_cond)
        if abs(speed - self.our_speed) <= 1:  # a tie (or the modifiers' rounding): either order
            return True
        return (speed > self.our_speed) != self.trick_room if self.opponent_first else (speed < self.our_speed) != self.trick_room
