"""A player's information at a decision, from its poke-env ``Battle``: positions for the engine.

:func:`positions_from_battle` is a pure function of the ``Battle`` (what that side's own protocol
lines and requests told it), the set table and the random generator:

- its own team exactly as Showdown's request gives it (stats, HP, moves and PP, item, ability,
  tera type, Terastallization used);
- the opponent's Pokémon with only what was revealed (species, level, shown HP percentage,
  status, moves used, item and ability once shown, tera type once it terastallized), the rest
  sampled from the pinned server's random-battle sets by what the battle showed
  (:class:`~pokebench.engine.inference.SetBelief`: the table's counts, the revealed facts, and
  the evidence of hazards, recoil, Choice locks and move order), and the Pokémon not yet seen
  sampled too (six in all);
- the field, boosts, volatile statuses and side conditions as poke-env tracks them, a forced switch;
  what poke-env does not keep, or keeps wrong, read from the same lines (:mod:`pokebench.engine.battle_lines`:
  formes, Rest, Wish, Must Recharge, move locks, Truant, bad poison's stage, Taunt's and Encore's turns, the
  weather's and the terrain's).

It never reads the opponent's hidden team: poke-env's ``Battle`` of one side holds none of it.
What it cannot know exactly is approximated as :data:`pokebench.engine.state.APPROXIMATIONS`
lists, and noted in ``Position.notes``.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections.abc import Container

from poke_env.battle import AbstractBattle, Effect, Pokemon, PokemonType, Status
from poke_env.battle.side_condition import STACKABLE_CONDITIONS
from poke_env.data import GenData
from poke_env.data.normalize import to_id_str
from poke_env.stats import compute_raw_stats

from pokebench.engine.errors import EngineError
from pokebench.engine.battle_lines import LineFacts, read_lines
from pokebench.engine.evidence import CHOICE_ITEMS
from pokebench.engine.position import STATS, SWITCHED_IN, FieldSpec, MonSpec, MoveSlot, Position, SideSpec
from pokebench.engine.inference import EVIDENCE, SetBelief
from pokebench.engine.sets import RandomSet, Revealed, SetTable
from pokebench.engine.names import knows
from pokebench.engine.state import COUNTED_UP, MAX_MOVES, MAX_MONS, MAX_SLEEP_TURNS, representable
from pokebench.engine.team_rules import Member

#: Random battles' EVs and IVs for a set the generator does not say otherwise of.
RANDOM_BATTLE_EVS = 84
RANDOM_BATTLE_IVS = 31
#: Turns of weather, terrain, Trick Room and screens without their extenders (Light Clay, rocks...).
DEFAULT_TURNS = {"weather": 5, "terrain": 5, "trickroom": 5, "reflect": 5, "lightscreen": 5, "auroraveil": 5,
                 "safeguard": 5, "mist": 5, "tailwind": 4, "luckychant": 5}
#: A screen's turns when the Pokémon that set it holds a Light Clay (battle_lines.SCREENS).
LIGHT_CLAY_TURNS = 8
#: The PP of each move a transformed Pokémon copied.
TRANSFORMED_PP = 5
_STATUS = {Status.BRN: "brn", Status.PAR: "par", Status.SLP: "slp", Status.FRZ: "frz", Status.PSN: "psn",
           Status.TOX: "tox"}
_UNKNOWN_ITEM = "unknown_item"
#: poke-env's effects of a partial trap (Whirlpool, Fire Spin...): the engine's one volatile for them, which holds
#: the Pokémon in and hurts it each end of turn.
PARTIAL_TRAPS = frozenset({Effect.BIND, Effect.CLAMP, Effect.FIRE_SPIN, Effect.INFESTATION, Effect.MAGMA_STORM,
                           Effect.PARTIALLY_TRAPPED, Effect.SAND_TOMB, Effect.SNAP_TRAP, Effect.THUNDER_CAGE,
                           Effect.WHIRLPOOL, Effect.WRAP})
#: Rest's sleep as the engine counts it when the Pokémon falls asleep: it wakes at its third move from then.
REST_TURNS = 3
#: Moves that switch their user out at once, the foe's move of the turn still to come when they go first.
PIVOT_MOVES = frozenset({"uturn", "voltswitch", "flipturn", "partingshot", "teleport", "shedtail", "batonpass",
                         "chillyreception"})


def positions_from_battle(battle: AbstractBattle, sets: SetTable, rng: random.Random, samples: int,
                          evidence: frozenset[str] = EVIDENCE) -> list[Position]:
    """`samples` positions of what `battle`'s player knows (each with its own draws), the opponent's
    sets inferred from `sets` and the battle with the kinds of `evidence` (none: the revealed facts alone).
    What the battle alone decides (our side, the field, whether the opponent still moves this turn) is read once
    and shared by the positions; only the opponent's unknowns are drawn for each."""
    belief = SetBelief.from_battle(sets, battle, evidence)
    facts = read_lines(battle._replay_data)  # every line poke-env parsed for this side
    own, field, still_to_move = _own_side(battle, facts), _field(battle, facts), _opponent_still_to_move(battle)
    positions = []
    for _ in range(samples):
        notes: list[str] = []
        opponent = _opponent_side(battle, belief, rng, notes, still_to_move, facts, own)
        position = representable(Position(side_one=own, side_two=opponent, field=field, turn=battle.turn,
                                          notes=notes))
        position.notes.extend(belief.fallbacks)
        positions.append(position)
    return positions


@functools.lru_cache(maxsize=1)
def _dex() -> GenData:
    return GenData.from_gen(9)


def _species_entry(species: str) -> dict:
    try:
        return _dex().pokedex[species]
    except KeyError:
        raise EngineError(f"poke-env's Pokédex has no species {species!r}") from None


def _max_pp(move: str) -> int:
    """A move's PP with PP Ups, as random battles deal it."""
    return int(_dex().moves.get(move, {}).get("pp", 8)) * 8 // 5


def _type_id(kind: PokemonType) -> str:
    return "typeless" if kind == PokemonType.THREE_QUESTION_MARKS else kind.name.lower()


def _base_types(species: str) -> tuple[str, ...]:
    return tuple(t.lower() for t in _species_entry(species)["types"])


def _current_types(mon: Pokemon) -> tuple[str, ...]:
    return tuple(_type_id(t) for t in mon.types)


def _status(mon: Pokemon) -> str:
    return _STATUS.get(mon.status, "") if mon.status is not None and not mon.fainted else ""


def _status_turns(mon: Pokemon, status: str) -> int:
    return mon.status_counter if mon.status is not None and _STATUS.get(mon.status) == status else 0


def _sleep_turns(mon: Pokemon) -> int:
    """Turns asleep so far, at most :data:`MAX_SLEEP_TURNS`: poke-env's counter runs past it.

    poke-env adds one for every move made asleep (Sleep Talk and the move it calls count twice a
    turn) and keeps a bad poison's count when Rest puts the Pokémon to sleep; a Gen 9 sleep ends
    by its fourth turn.
    """
    return min(_status_turns(mon, "slp"), MAX_SLEEP_TURNS)


def _forme(mon: Pokemon, key: str, facts: LineFacts) -> str:
    """The Pokémon's species as it is now (poke-env keeps the base species through a forme change), if the engine
    knows that forme (else the base species)."""
    forme = facts.formes.get(key, mon.species)
    return forme if forme != mon.species and knows("species", forme) else mon.species


def _wish(wish: tuple[int, str] | None, turn: int, max_hps: dict[str, int]) -> tuple[int, int]:
    """``SideSpec.wish``: turns left as Showdown counts them (the full information's way), half the wisher's HP
    (`max_hps`: the side's Pokémon's by team key)."""
    if wish is None or wish[0] + 2 - turn < 1:  # none, or healed at the end of the turn after it was made
        return (0, 0)
    made, wisher = wish
    return (made + 2 - turn, max_hps.get(wisher, 0) // 2)


def _sleep(mon: Pokemon, rested_turns: int | None) -> tuple[int, int]:
    """``MonSpec``'s (rest_turns, sleep_turns): after Rest the turns it has left (3 when it fell asleep, as the
    engine counts them), else the turns asleep so far."""
    if rested_turns is not None and _status(mon) == "slp":
        return max(1, REST_TURNS - rested_turns), 0
    return 0, _sleep_turns(mon)


def _estimated_stats(species: str, level: int) -> tuple[int, dict[str, int]]:
    """Max HP and stats from base stats and level, with random battles' EVs and IVs and a neutral nature."""
    _species_entry(species)
    raw = compute_raw_stats(species, [RANDOM_BATTLE_EVS] * 6, [RANDOM_BATTLE_IVS] * 6, level, "serious", _dex())
    return raw[0], dict(zip(STATS, raw[1:]))


def _own_mon(mon: Pokemon, key: str, facts: LineFacts) -> MonSpec:
    rest_turns, sleep_turns = _sleep(mon, facts.rested.get(key))
    species = _forme(mon, key, facts)
    stats = {k: int(mon.stats[k] or 0) for k in STATS}
    moves = [MoveSlot(m.id, m.current_pp) for m in list(mon.moves.values())[:MAX_MOVES]]
    tera = _type_id(mon.tera_type) if mon.tera_type is not None else ""
    return MonSpec(species=species, level=mon.level, types=_current_types(mon),
                   base_types=_base_types(species), hp=mon.current_hp or 0, max_hp=mon.max_hp or 1,
                   stats=stats, moves=moves, item=mon.item or "", ability=mon.ability or "",
                   tera_type=tera, terastallized=mon.is_terastallized, status=_status(mon),
                   rest_turns=rest_turns, sleep_turns=sleep_turns, weight_kg=mon.weight)


def _volatiles(mon: Pokemon | None, key: str, facts: LineFacts) -> set[str]:
    """The active's volatile statuses: poke-env's effects (a partial trap as the engine's one), and from the lines
    a Must Recharge still to serve, a move lock (Outrage...) and a Truant turn."""
    if mon is None:
        return set()
    found = {"partiallytrapped" if effect in PARTIAL_TRAPS else effect.name.lower().replace("_", "")
             for effect in mon.effects}
    if key in facts.recharging:
        found.add("mustrecharge")
    if key in facts.locked:
        found.add("lockedmove")
    if key in facts.truant and mon.ability == "truant":
        found.add("truant")
    return found


def _volatile_turns(volatiles: set[str], key: str, facts: LineFacts) -> dict[str, int]:
    """Turns left, as Showdown counts them, of the active's timed volatiles the engine keeps: Taunt and Encore from
    the lines (3 ends of turn, 4 when they came after their target moved), a move lock's of the three turns the
    engine plays it for, Yawn's sleep at this end of turn (a Yawn still pending at a decision has one end of turn
    left)."""
    turns = {name: left for name, left in facts.timed.get(key, {}).items() if left > 0}
    if "lockedmove" in volatiles:
        turns["lockedmove"] = max(1, COUNTED_UP["lockedmove"] - facts.locked.get(key, 0))
    if "yawn" in volatiles:
        turns["yawn"] = 1
    return turns


def _conditions(conditions: dict, turn: int, light_clay: Container[str] = ()) -> dict[str, int]:
    """poke-env's side conditions (layers of Spikes and Toxic Spikes; for the others the turn they started) as
    layers, turns left, or 1 (Stealth Rock, Sticky Web: the engine hurts a switch-in only at 1); the screens in
    `light_clay` last 8 turns."""
    out = {}
    for condition, value in conditions.items():
        name = condition.name.lower().replace("_", "")
        duration = LIGHT_CLAY_TURNS if name in light_clay else DEFAULT_TURNS.get(name)
        if condition in STACKABLE_CONDITIONS:
            out[name] = value
        elif duration:
            out[name] = max(1, duration - (turn - value))
        else:
            out[name] = 1
    return out


def _last_move(active: Pokemon | None) -> str:
    """The active's last used move as ``SideSpec.last_move`` wants it (poke-env forgets it at a switch)."""
    if active is None:
        return ""
    if active.last_move is not None:
        return active.last_move.id
    return SWITCHED_IN if active.first_turn else ""


def _side(battle: AbstractBattle, facts: LineFacts, keyed: list[tuple[str, Pokemon]], mons: list[MonSpec],
          active: Pokemon | None, conditions: dict, force_switch: bool = False, trapped: bool = False,
          locked_to: str = "", still_to_move: bool = False, wish: tuple[int, int] = (0, 0)) -> SideSpec:
    index = next((i for i, (_, m) in enumerate(keyed) if m is active), 0)
    key, mon = keyed[index][0] if keyed else "", mons[index]
    volatiles = _volatiles(active, key, facts)
    items = {k: spec.item for (k, _), spec in zip(keyed, mons)}  # shown or drawn
    light_clay = {screen for (side, screen), setter in facts.screens.items() if side == key[:2] and (
        items.get(setter) == "lightclay" or "lightclay" in facts.lost_items.get(setter, ()))}  # then, if not now
    return SideSpec(
        mons=mons, active=index, boosts={k: v for k, v in (active.boosts if active else {}).items() if v},
        volatiles=volatiles, volatile_turns=_volatile_turns(volatiles, key, facts),
        conditions=_conditions(conditions, battle.turn + facts.past_upkeep, light_clay),
        substitute_hp=mon.max_hp // 4 if "substitute" in volatiles else 0,
        toxic_count=facts.toxic_stage.get(key, 0) if mon.status == "tox" else 0, force_switch=force_switch,
        still_to_move=still_to_move, trapped=trapped, last_move=locked_to or _last_move(active),
        protect_streak=active.protect_counter if active is not None else 0, wish=wish)


def _own_side(battle: AbstractBattle, facts: LineFacts) -> SideSpec:
    keyed = list(battle.team.items())[:MAX_MONS]
    mons = [_own_mon(m, key, facts) for key, m in keyed]
    active = battle.active_pokemon
    if active is not None and battle.available_moves:
        offered = {m.id for m in battle.available_moves}
        index = next((i for i, (_, m) in enumerate(keyed) if m is active), None)
        if index is not None:  # a move the request does not offer now is disabled (Disable, Taunt, Choice lock...)
            for slot in mons[index].moves:
                slot.disabled = slot.id not in offered
    # the move an Encore (or a lock) keeps it to is the one the request offers alone
    locked_to = battle.available_moves[0].id if len(battle.available_moves) == 1 else ""
    wish = _wish(facts.wishes.get(battle.player_role or ""), battle.turn, {key: m.max_hp or 0 for key, m in keyed})
    return _side(battle, facts, keyed, mons, active, battle.side_conditions,
                 force_switch=bool(battle.force_switch), trapped=bool(battle.trapped), locked_to=locked_to, wish=wish)


def _sample_for(mon: Pokemon, belief: SetBelief, rng: random.Random, notes: list[str]) -> RandomSet | None:
    chosen, why = belief.sample_set(mon.species, rng)
    if why:
        notes.append(why)
    return chosen


def _opponent_mon(mon: Pokemon, key: str, chosen: RandomSet | None, facts: LineFacts) -> MonSpec:
    rest_turns, sleep_turns = _sleep(mon, facts.rested.get(key))
    species = _forme(mon, key, facts)
    max_hp, stats = _estimated_stats(species, mon.level)
    revealed = list(mon.moves)
    extra = [m for m in (chosen.moves if chosen else ()) if m not in revealed]
    move_ids = (revealed + extra)[:MAX_MOVES]
    moves = [MoveSlot(m, mon.moves[m].current_pp if m in mon.moves else _max_pp(m)) for m in move_ids]
    if mon.item == _UNKNOWN_ITEM:
        item = chosen.item if chosen and chosen.item != "none" else ""
    else:  # shown, or known to hold nothing: poke-env's None after a line showed it lose its item (used, knocked off)
        item = mon.item or ""
    ability = mon.ability or (chosen.ability if chosen else "") or "noability"
    tera = _type_id(mon.tera_type) if mon.is_terastallized and mon.tera_type else (chosen.tera_type if chosen else "")
    hp = 0 if mon.fainted else max(1, round(mon.current_hp_fraction * max_hp))
    if hp and not mon.active and ability == "regenerator":
        hp = min(max_hp, hp + max_hp // 3)  # healed unseen at its switch-out, since its HP was last shown
    return MonSpec(species=species, level=mon.level, types=_current_types(mon),
                   base_types=_base_types(species), hp=hp, max_hp=max_hp, stats=stats, moves=moves,
                   item=item, ability=ability, tera_type=tera or "typeless",
                   terastallized=mon.is_terastallized, status=_status(mon),
                   rest_turns=rest_turns, sleep_turns=sleep_turns, weight_kg=mon.weight)


def _transformed(mon: MonSpec, into: MonSpec) -> MonSpec:
    """`mon` transformed into `into` (Showdown's Transform): `into`'s species, types (but its own Tera type once
    Terastallized), stats but HP, moves (5 PP each, less what it used since), ability and weight; its own level, HP,
    item, status and Tera type."""
    used = {slot.id: slot.pp for slot in mon.moves}
    types = mon.types if mon.terastallized else into.types
    moves = [MoveSlot(s.id, min(TRANSFORMED_PP, used.get(s.id, TRANSFORMED_PP))) for s in into.moves]
    return dataclasses.replace(mon, species=into.species, types=types, base_types=into.base_types,
                               stats=dict(into.stats), moves=moves, ability=into.ability, weight_kg=into.weight_kg)


def _unseen_mon(chosen: RandomSet) -> MonSpec:
    max_hp, stats = _estimated_stats(chosen.species, chosen.level)
    entry = _species_entry(chosen.species)
    types = _base_types(chosen.species)
    return MonSpec(species=chosen.species, level=chosen.level, types=types, base_types=types, hp=max_hp,
                   max_hp=max_hp, stats=stats,
                   moves=[MoveSlot(m, _max_pp(m)) for m in chosen.moves[:MAX_MOVES]],
                   item="" if chosen.item == "none" else chosen.item, ability=chosen.ability,
                   tera_type=chosen.tera_type or "typeless", weight_kg=float(entry.get("weightkg", 0.0)))


def _opponent_side(battle: AbstractBattle, belief: SetBelief, rng: random.Random, notes: list[str],
                   still_to_move: bool, facts: LineFacts, own: SideSpec) -> SideSpec:
    keyed = list(battle.opponent_team.items())[:MAX_MONS]
    ordered = [m for _, m in keyed]
    chosen = [_sample_for(m, belief, rng, notes) for m in ordered]
    mons = [_opponent_mon(m, key, c, facts) for (key, m), c in zip(keyed, chosen)]
    our_keys = list(battle.team)[:MAX_MONS]
    for i, (key, _) in enumerate(keyed):  # a Ditto that copied one of our Pokémon, whose set we know
        if facts.transformed.get(key) in our_keys:
            mons[i] = _transformed(mons[i], own.mons[our_keys.index(facts.transformed[key])])
    excluded = {m.species for m in ordered} | {m.base_species for m in ordered}
    # the team the generator's rules see: the revealed Pokémon (their sampled sets) and those drawn so far
    team: list[Member] = [c or Revealed(m.species, m.level, frozenset(m.moves), ability=m.ability or None)
                          for m, c in zip(ordered, chosen)]
    while len(mons) < MAX_MONS:
        drawn = belief.sample_unseen(excluded, rng, team)
        excluded |= {drawn.species, SetTable.base(drawn.species)}
        team.append(drawn)
        mons.append(_unseen_mon(drawn))
    if battle.opponent_active_pokemon is None:
        notes.append("side_two: no active Pokémon shown; the first one taken")
    wish = _wish(facts.wishes.get(battle.opponent_role or ""), battle.turn,
                 {key: spec.max_hp for (key, _), spec in zip(keyed, mons)})
    active = battle.opponent_active_pokemon
    # both actives fainted in one turn: the opponent chooses its replacement as we choose ours (after our pivot
    # knocked it out, it chooses once it has seen our switch-in)
    replacing = bool(battle.force_switch) and all(m is not None and m.fainted for m in (active, battle.active_pokemon))
    side = _side(battle, facts, keyed, mons, active, battle.opponent_side_conditions, force_switch=replacing,
                 still_to_move=still_to_move, wish=wish)
    _hold_to_choice(side)
    return side


def _opponent_still_to_move(battle: AbstractBattle) -> bool:
    """Whether we choose a switch-in because our pivot move (U-turn...) went first this turn, before the
    opponent acted: its move comes after our switch-in (read from this turn's lines, the last ones parsed)."""
    if not battle.force_switch:
        return False
    ours, theirs = battle.player_role, battle.opponent_role
    last_ours: list[str] = []  # our latest move line of the turn
    for parts in reversed(battle._replay_data):  # every line poke-env parsed for this side, back to the turn's start
        kind, who = (parts[1:3] + ["", ""])[:2]
        if kind == "turn":
            break
        if who.startswith(f"{theirs}a") and kind in ("move", "cant", "switch", "drag", "faint"):
            return False  # it has acted this turn (or is gone)
        if kind == "move" and who.startswith(f"{ours}a") and not last_ours:
            last_ours = parts
    return bool(last_ours) and to_id_str(last_ours[3]) in PIVOT_MOVES and not any(
        p.startswith("[from]") for p in last_ours[4:])


def _hold_to_choice(side: SideSpec) -> None:
    """A Choice item (shown or drawn) holds the active Pokémon to the move it last used: the other moves are
    disabled (the engine locks a Choice only after a move in its own tree; the request does it for our side)."""
    mon = side.mons[side.active]
    if mon.item in CHOICE_ITEMS and mon.ability != "klutz" and any(slot.id == side.last_move for slot in mon.moves):
        for slot in mon.moves:
            slot.disabled = slot.id != side.last_move


def _started(entries: dict, turn: int, name: str) -> int:
    """Turns left of a field effect that started at turn `entries[...]` (the default duration)."""
    started = next(iter(entries.values()), turn)
    return max(1, DEFAULT_TURNS[name] - (turn - started))


def _field(battle: AbstractBattle, facts: LineFacts) -> FieldSpec:
    """The field; the weather's and the terrain's turns left from the ends of turn since they began (the lines')."""
    weather = next(iter(battle.weather), None)
    terrains = {f: t for f, t in battle.fields.items() if f.name.endswith("_TERRAIN")}
    trick_room = {f: t for f, t in battle.fields.items() if f.name == "TRICK_ROOM"}
    return FieldSpec(
        weather=weather.name.lower() if weather is not None else "",
        weather_turns=max(1, DEFAULT_TURNS["weather"] - facts.weather_ends) if weather is not None else 0,
        terrain=next(iter(terrains)).name.lower().replace("_", "") if terrains else "",
        terrain_turns=max(1, DEFAULT_TURNS["terrain"] - facts.terrain_ends) if terrains else 0,
        trick_room=bool(trick_room),
        trick_room_turns=_started(trick_room, battle.turn + facts.past_upkeep, "trickroom") if trick_room else 0)
