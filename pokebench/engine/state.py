"""A :class:`~pokebench.engine.position.Position` as a poke-engine ``State``.

:func:`build_state` maps every Showdown id to the engine's name (:mod:`pokebench.engine.names`)
and refuses, with an :class:`EngineError` naming the field and the value, a name the engine does
not know (it would silently become ``NONE``). :func:`representable` is what a producer calls
first: it drops the volatile statuses and side conditions the engine lacks and notes each.

What the engine cannot represent, and how it is approximated: :data:`APPROXIMATIONS`, the one
list (the producers add a note to ``Position.notes`` whenever one of them applies).

A fainted Pokémon stays itself with 0 HP: replaced by ``Pokemon.create_fainted()`` a fainted
Terastallized Pokémon would give its side Terastallization back.
"""

from __future__ import annotations

import dataclasses

from poke_engine import Move, Pokemon, Side, SideConditions, State, VolatileStatusDurations

from pokebench.engine.errors import EngineError, guarded
from pokebench.engine.names import (SIDE_CONDITIONS, STATUS, TERRAIN, VOLATILE_DURATIONS, WEATHER, engine_name,
                                    knows, mapped)
from pokebench.engine.position import SWITCHED_IN, FieldSpec, MonSpec, Position, SideSpec

#: Items of the random-battle sets that poke-engine 0.0.48 does not have.
ITEMS_HELD_AS_NONE = frozenset({"leppaberry", "lightclay", "scopelens"})
#: Turns asleep (not Rest's sleep) the Gen 9 engine can take: it wakes a Pokémon with chance
#: 1 / (4 - turns), so 4 divides by zero (a non-finite chance: its search panics) and more is negative.
MAX_SLEEP_TURNS = 3
#: Every field of a battle the engine cannot hold, and what the bridge does instead.
APPROXIMATIONS: dict[str, str] = {
    "volatile statuses": "the ones poke-engine 0.0.48 lacks are dropped (representable(); each noted)",
    "Encore": "needs the encored move as the last move (the engine panics otherwise): dropped when it is unknown",
    "side conditions": "the ones without a SideConditions field are dropped (representable(); each noted)",
    "timed volatiles": f"only {', '.join(VOLATILE_DURATIONS)} keep their turns (COUNTED_UP: converted to the "
    "engine's counts up); others last until removed; a player reads Taunt's and Encore's turns from the lines "
    "(battle_lines.py), a move lock's as if it lasted 3 turns (Showdown draws 2 or 3), and no confusion's",
    "weather and terrain turns": "0 when unknown: the engine then never ends them",
    "Delta Stream": "strong winds have no engine weather: no weather",
    "moves beyond four": "the engine holds four moves per Pokémon (Showdown's random battles deal at most four)",
    "last move": "kept only as a slot of the active Pokémon's moves, or as its switch-in when it has not moved since; "
                 "otherwise none",
    "items poke-engine lacks": f"{', '.join(sorted(ITEMS_HELD_AS_NONE))}: held as no item (0.0.48 has none of "
    "them; the random-battle sets deal them); a screen up at the decision keeps the turns its setter's Light Clay "
    "(shown or drawn) gives it, one set in the search lasts 5",
    "nature and EVs": "the engine's defaults (serious, 85 each): the stats themselves are given",
    "opponent's unrevealed facts (player's information)": "sampled from the pinned server's random-battle sets "
    "(sets.py; a Pokémon not yet seen under the generator's team rules, team_rules.py); its stats from base "
    "stats, level, 84 EVs and 31 IVs; its HP from the shown percentage",
    "Choice lock (full information)": "its volatile is dropped; the moves it locks out are disabled, as Showdown's "
    "request disables them",
    "Future Sight (full information)": "Showdown keeps it on the target's slot; the engine on the user's side, "
    "with the turns left",
    "illusion": "the player's information takes the Pokémon shown as the one there",
    "Regenerator (player's information)": "an opponent's benched Pokémon whose ability is Regenerator (shown or "
    "drawn) has a third of its HP back on its last shown HP: Showdown does not show the heal at the switch-out "
    "(nor a Neutralizing Gas that stopped it)",
    "turns asleep (player's information)": f"poke-env's count, at most {MAX_SLEEP_TURNS}: it counts each move made asleep "
    "(Sleep Talk's twice a turn) and a bad poison's turns before Rest; after the Pokémon's own Rest, Rest's turns left "
    "from the turns it could not move since",
}
#: The timed volatiles the engine counts up from 0 at their start, and the turns each lasts there (Taunt's third
#: move, Encore's third, a locked move's third, Yawn's second end of turn); the others it counts down, as Showdown.
COUNTED_UP = {"taunt": 3, "encore": 3, "lockedmove": 3, "yawn": 2}
_BOOSTS = {"atk": "attack_boost", "def": "defense_boost", "spa": "special_attack_boost",
           "spd": "special_defense_boost", "spe": "speed_boost", "accuracy": "accuracy_boost",
           "evasion": "evasion_boost"}
_STATS = {"atk": "attack", "def": "defense", "spa": "special_attack", "spd": "special_defense", "spe": "speed"}
MAX_MOVES = 4
MAX_MONS = 6


def representable(position: Position) -> Position:
    """A copy of `position` without the volatiles and side conditions the engine lacks, each noted."""
    notes = list(position.notes)
    sides = []
    for label, side in (("side_one", position.side_one), ("side_two", position.side_two)):
        slots = {m.id for m in side.mons[side.active].moves} if side.mons else set()
        dropped_v = sorted(v for v in side.volatiles if not knows("volatile", v)
                           or (v == "encore" and side.last_move not in slots))
        dropped_c = sorted(c for c in side.conditions if c not in SIDE_CONDITIONS)
        notes += [f"{label}: volatile {v!r} dropped (poke-engine lacks it, or Encore without the encored move)"
                  for v in dropped_v]
        notes += [f"{label}: side condition {c!r} dropped (poke-engine lacks it)" for c in dropped_c]
        sides.append(dataclasses.replace(
            side, volatiles={v for v in side.volatiles if v not in dropped_v},
            conditions={c: n for c, n in side.conditions.items() if c not in dropped_c}))
    return dataclasses.replace(position, side_one=sides[0], side_two=sides[1], notes=notes)


def build_state(position: Position) -> State:
    """The engine's ``State`` of `position`; an :class:`EngineError` names any field it cannot take."""
    state = State(side_one=_side(position.side_one, "side_one"), side_two=_side(position.side_two, "side_two"),
                  **_field(position.field))
    guarded("on the position", state.to_string)  # a panic on a bad enum surfaces here, not in the search
    return state


def _types(types: tuple[str, ...], where: str) -> tuple[str, str]:
    if not 1 <= len(types) <= 2:
        raise EngineError(f"{where}: one or two types, not {types!r}")
    named = [engine_name("type", t, where) for t in types]
    return (named[0], named[1] if len(named) > 1 else "typeless")


def _mon(mon: MonSpec, where: str) -> Pokemon:
    if len(mon.moves) > MAX_MOVES:
        raise EngineError(f"{where}.moves: the engine holds {MAX_MOVES} moves, not {len(mon.moves)}")
    if not 0 <= mon.sleep_turns <= MAX_SLEEP_TURNS:
        raise EngineError(f"{where}.sleep_turns: 0 to {MAX_SLEEP_TURNS} turns asleep in Gen 9, not {mon.sleep_turns} "
                          "(poke-engine's chance to wake would not be a probability)")
    stats = {_STATS[k]: int(mon.stats[k]) for k in _STATS}
    return Pokemon(
        id=engine_name("species", mon.species, f"{where}.species"), level=mon.level,
        # The engine applies Terastallization itself (defence from tera_type, STAB from both): a
        # Terastallized Pokémon keeps its types from before (checked against Showdown: damage_check.py).
        types=_types(mon.base_types if mon.terastallized else mon.types, f"{where}.types"),
        base_types=_types(mon.base_types, f"{where}.base_types"),
        hp=max(0, mon.hp), maxhp=mon.max_hp,
        ability=engine_name("ability", mon.ability, f"{where}.ability"),
        base_ability=engine_name("ability", mon.base_ability or mon.ability, f"{where}.base_ability"),
        item=engine_name("item", "none" if not mon.item or mon.item in ITEMS_HELD_AS_NONE else mon.item,
                         f"{where}.item"),
        status=mapped(STATUS, mon.status, f"{where}.status", "status"),
        rest_turns=mon.rest_turns, sleep_turns=mon.sleep_turns, weight_kg=mon.weight_kg,
        moves=[Move(id=engine_name("move", m.id, f"{where}.moves[{i}]"), pp=m.pp, disabled=m.disabled)
               for i, m in enumerate(mon.moves)],
        terastallized=mon.terastallized,
        tera_type=engine_name("type", mon.tera_type or "typeless", f"{where}.tera_type"), **stats)


def _side(side: SideSpec, where: str) -> Side:
    if not side.mons or len(side.mons) > MAX_MONS or not 0 <= side.active < len(side.mons):
        raise EngineError(f"{where}: 1 to {MAX_MONS} Pokémon and an active one among them "
                          f"(got {len(side.mons)}, active {side.active})")
    conditions = {mapped(SIDE_CONDITIONS, c, f"{where}.conditions", "side condition"): n
                  for c, n in side.conditions.items()}
    active = side.mons[side.active]
    slots = [m.id for m in active.moves]
    return Side(
        pokemon=[_mon(m, f"{where}.mons[{i}]") for i, m in enumerate(side.mons)],
        active_index=str(side.active),  # the engine takes the index as text
        side_conditions=SideConditions(toxic_count=side.toxic_count, protect=side.protect_streak, **conditions),
        volatile_statuses={engine_name("volatile", v, f"{where}.volatiles") for v in side.volatiles},
        volatile_status_durations=_durations(side.volatile_turns),
        substitute_health=side.substitute_hp, force_switch=side.force_switch, force_trapped=side.trapped,
        slow_uturn_move=side.still_to_move,
        last_used_move=_last_used_move(side, slots),
        wish=side.wish, future_sight=(side.future_sight[0], str(side.future_sight[1])),
        **{_BOOSTS[k]: n for k, n in side.boosts.items()})


def _durations(turns_left: dict[str, int]) -> VolatileStatusDurations:
    """The engine's counters of timed volatiles from their turns left: it counts Taunt, Encore, a locked move and
    Yawn *up* from 0 and ends them at a count (:data:`COUNTED_UP`), where Showdown counts turns left down."""
    counters = {}
    for name, left in turns_left.items():
        if name in VOLATILE_DURATIONS:
            total = COUNTED_UP.get(name)
            counters[name] = left if total is None else min(total - 1, max(0, total - left))
    return VolatileStatusDurations(**counters)


def _last_used_move(side: SideSpec, slots: list[str]) -> str:
    if side.last_move == SWITCHED_IN:
        return f"switch:{side.active}"
    return f"move:{slots.index(side.last_move)}" if side.last_move in slots else "move:none"


def _field(field: FieldSpec) -> dict[str, object]:
    weather = "none" if field.weather == "deltastream" else mapped(WEATHER, field.weather, "field.weather", "weather")
    return {"weather": weather, "weather_turns_remaining": field.weather_turns,
            "terrain": mapped(TERRAIN, field.terrain, "field.terrain", "terrain"),
            "terrain_turns_remaining": field.terrain_turns,
            "trick_room": field.trick_room, "trick_room_turns_remaining": field.trick_room_turns}
