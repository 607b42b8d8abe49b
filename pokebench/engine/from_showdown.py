"""Full information at a stored decision: Showdown's own battle state as a :class:`Position`.

:func:`game_positions` replays stored games' input logs in the pinned simulator
(``showdown-server/scripts/positions.js``) and returns every decision point of each game: the
side to move, its request and its own protocol lines so far, the choice it made, and the
battle's state for both sides exactly as Showdown holds it. :func:`position_from_showdown`
turns that state into a ``Position`` with the deciding side as side one;
:func:`engine_action` names a Showdown choice (``move moonblast terastallize``, ``switch 3``)
as the engine names its actions (``moonblast-tera``, ``switch florges``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass
from typing import Any, Iterable

from pokebench.engine.errors import EngineError
from pokebench.engine.position import BOOSTS, STATS, FieldSpec, MonSpec, MoveSlot, Position, SideSpec
from pokebench.engine.speed import to_id
from pokebench.engine.state import representable
from pokebench.showdown.node import run_script

__all__ = ["Decision", "GamePositions", "game_positions", "position_from_showdown", "position_of_state", "engine_action", "other_side"]


@dataclass
class Decision:
    """One decision point of a stored game (``positions.js``'s record)."""

    index: int  # order among the game's decision points, both sides
    side: str  # "p1" or "p2": the side to move
    turn: int
    request: dict[str, Any]  # Showdown's request to that side
    messages: int  # how many of the side's protocol lines it had received (its request the last)
    choice: str  # Showdown's normalised choice ("move moonblast terastallize", "switch 3"); "" if none
    state: dict[str, Any]  # Showdown's battle state (positions.js dumpState)


@dataclass
class GamePositions:
    """A stored game replayed: each side's protocol lines and every decision point."""

    id: str
    messages: dict[str, list[str]]
    decisions: list[Decision]
    #: Showdown's battle state when the game ended (None if the input log stops before the end).
    final: dict[str, Any] | None = None

    def side_decisions(self, side: str) -> list[Decision]:
        return [d for d in self.decisions if d.side == side]


def other_side(side: str) -> str:
    return "p2" if side == "p1" else "p1"


#: Games replayed per simulator process: 2,100 games in one failed with Node's ``write ENOBUFS`` on its output.
GAMES_PER_REPLAY = 200


def game_positions(games: Iterable[tuple[str, list[str]]], timeout: float = 1800) -> list[GamePositions]:
    """Every decision point of each ``(id, input_log)`` game, replayed in the pinned simulator (a process per
    :data:`GAMES_PER_REPLAY` games; `timeout` is each process's)."""
    games = list(games)
    found = []
    for start in range(0, len(games), GAMES_PER_REPLAY):
        stdin = "".join(json.dumps({"id": gid, "input_log": list(log)}) + "\n"
                        for gid, log in games[start:start + GAMES_PER_REPLAY])
        for line in run_script("positions.js", timeout=timeout, stdin=stdin).splitlines():
            if line.strip():
                raw = json.loads(line)
                found.append(GamePositions(raw["id"], raw["messages"], [Decision(**d) for d in raw["decisions"]],
                                           raw.get("final")))
    return found


def _type(name: str) -> str:
    return "typeless" if name in ("???", "") else name.lower()


def _mon(mon: dict[str, Any], side: str, index: int) -> MonSpec:
    status_state = mon["status_state"]
    status = "" if mon["status"] == "fnt" else mon["status"]  # a fainted Pokémon has 0 HP and no status
    sleep_turns = rest_turns = 0
    if status == "slp":
        left = int(status_state.get("time", 0))
        # Only Rest puts a Pokémon to sleep by its own doing: the sleep's source is itself.
        if status_state.get("source") == {"side": side, "position": index}:
            rest_turns = left
        else:
            sleep_turns = int(status_state.get("startTime", left)) - left
    return MonSpec(
        species=mon["species"], level=mon["level"], types=tuple(_type(t) for t in mon["types"]),
        base_types=tuple(_type(t) for t in mon["base_types"]), hp=mon["hp"], max_hp=mon["maxhp"],
        stats={k: mon["stats"][k] for k in STATS},
        moves=[MoveSlot(m["id"], m["pp"], m["disabled"]) for m in mon["moves"]],
        item=mon["item"], ability=mon["ability"], tera_type=_type(mon["tera_type"]),
        terastallized=bool(mon["terastallized"]), status=status, sleep_turns=sleep_turns, rest_turns=rest_turns,
        weight_kg=mon["weightkg"], base_ability=mon["base_ability"])


def _turns_left(state: dict[str, Any]) -> int:
    """An effect's turns left; a locked move (Outrage...) keeps its own in ``trueDuration`` (its ``duration`` is
    renewed every turn)."""
    return int(state.get("trueDuration") or state.get("duration") or 0)


#: Abilities whose volatile boosts the best stat: the engine names it with the stat (``quarkdrivedef``), as Showdown's
#: ``-start`` line does; Showdown's state keeps the stat apart (``bestStat``).
BEST_STAT_VOLATILES = frozenset({"protosynthesis", "quarkdrive"})


def _boosting(volatile: str, state: dict[str, Any]) -> str:
    return volatile + state.get("bestStat", "") if volatile in BEST_STAT_VOLATILES else volatile


def _side(side_id: str, sides: dict[str, Any], turn: int, notes: list[str], label: str) -> SideSpec:
    side, other = sides[side_id], sides[other_side(side_id)]
    active_index = side["active"][0]
    active = side["pokemon"][active_index]
    conditions = {}
    for cid, state in side["side_conditions"].items():
        conditions[cid] = int(state.get("layers") or _turns_left(state) or 1)
    volatiles = {_boosting(vid, state) for vid, state in active["volatiles"].items()}
    volatile_turns = {vid: _turns_left(state) for vid, state in active["volatiles"].items() if _turns_left(state)}
    # Showdown's `stall` triples its counter at each Protect (and the like) in a row that worked: 3, 9, 27...
    stall_counter = int(active["volatiles"].get("stall", {}).get("counter") or 1)
    protect_streak = round(math.log(stall_counter, 3))
    wish = (0, 0)
    slot = side["slot_conditions"][0] if side["slot_conditions"] else {}
    if "wish" in slot:
        wish = (max(1, slot["wish"].get("startingTurn", turn) + 2 - turn), int(slot["wish"].get("hp", 0)))
    # Showdown keeps a Future Sight on its target's slot; the engine on the side that used it.
    future = (0, 0)
    foe_slot = other["slot_conditions"][0] if other["slot_conditions"] else {}
    if "futuremove" in foe_slot:
        source = foe_slot["futuremove"].get("source") or {}
        future = (max(1, foe_slot["futuremove"].get("endingTurn", turn) - turn + 1), int(source.get("position", 0)))
    if len(active["moves"]) > 4:
        notes.append(f"{label}: {active['species']} has {len(active['moves'])} moves; the engine keeps four")
    return SideSpec(
        mons=_tera_spent(side["pokemon"], [_mon(m, side_id, i) for i, m in enumerate(side["pokemon"])]),
        active=active_index,
        boosts={k: active["boosts"][k] for k in BOOSTS if active["boosts"].get(k)},
        volatiles=volatiles, conditions=conditions,
        substitute_hp=int(active["volatiles"].get("substitute", {}).get("hp", 0)),
        toxic_count=int(active["status_state"].get("stage", 0)) if active["status"] == "tox" else 0,
        force_switch=side["force_switch"], still_to_move=side["still_to_move"], trapped=side["trapped"],
        last_move=active["last_move"],
        protect_streak=protect_streak, wish=wish, future_sight=future, volatile_turns=volatile_turns)


def _tera_spent(dumped: list[dict[str, Any]], mons: list[MonSpec]) -> list[MonSpec]:
    """`mons`, a fainted one marked Terastallized when the side's Terastallization is spent but no Pokémon shows it:
    Showdown forgets a Pokémon's Terastallization when it faints (the engine would offer the side another)."""
    if any(m.terastallized for m in mons) or any(d["can_terastallize"] for d in dumped):
        return mons
    fainted = next((i for i, m in enumerate(mons) if m.fainted), None)
    if fainted is not None:
        mons[fainted] = dataclasses.replace(mons[fainted], terastallized=True)
    return mons


def _field(field: dict[str, Any]) -> FieldSpec:
    trick_room = field["pseudo_weather"].get("trickroom")
    return FieldSpec(weather=field["weather"], weather_turns=_turns_left(field["weather_state"]),
                     terrain=field["terrain"], terrain_turns=_turns_left(field["terrain_state"]),
                     trick_room=trick_room is not None, trick_room_turns=_turns_left(trick_room or {}))


def position_from_showdown(decision: Decision) -> Position:
    """The full-information position of `decision`, its deciding side as side one.

    The volatiles and side conditions the engine lacks are dropped and noted (``representable``).
    """
    return position_of_state(decision.state, decision.side, f"decision {decision.index}")


def position_of_state(state: dict[str, Any], me: str, label: str = "the state") -> Position:
    """The full-information position of Showdown's battle `state` (``positions.js``), side `me` as side one."""
    foe = other_side(me)
    sides = state["sides"]
    if me not in sides or foe not in sides:
        raise EngineError(f"{label}: the state has sides {sorted(sides)}, not p1 and p2")
    notes: list[str] = []
    position = Position(side_one=_side(me, sides, state["turn"], notes, "side_one"),
                        side_two=_side(foe, sides, state["turn"], notes, "side_two"),
                        field=_field(state["field"]), turn=state["turn"], notes=notes)
    return representable(position)


def engine_action(choice: str, side: dict[str, Any]) -> str:
    """A Showdown choice as the engine names the action (`side`: the deciding side's state).

    ``move ID`` is ``ID``, with Terastallization ``ID-tera``; ``switch N`` is ``switch SPECIES``
    (the N-th Pokémon of the side, in Showdown's current order), and so is a poke-env order's ``switch NAME``
    (``switch Iron Leaves``; a cosmetic forme by its species: ``Florges`` for ``florgesorange``); anything else
    is returned as is.
    """
    words = choice.split()
    if len(words) >= 2 and words[0] == "move":
        return words[1] + ("-tera" if "terastallize" in words[2:] else "")
    if len(words) == 2 and words[0] == "switch" and words[1].isdigit():
        index = int(words[1]) - 1
        if not 0 <= index < len(side["pokemon"]):
            raise EngineError(f"choice {choice!r}: the side has {len(side['pokemon'])} Pokémon")
        return "switch " + side["pokemon"][index]["species"]
    if len(words) >= 2 and words[0] == "switch":
        wanted = to_id("".join(words[1:]))
        for match in (str.__eq__, str.startswith):
            found = [m for m in side["pokemon"] if match(to_id(m["species"]), wanted)]
            if len(found) == 1:
                return "switch " + found[0]["species"]
        raise EngineError(f"choice {choice!r}: the side has no such Pokémon "
                          f"({', '.join(str(m['species']) for m in side['pokemon'])})")
    return choice
