"""Showdown ids to poke-engine names, refusing a name the engine does not know.

poke-engine 0.0.48 names species, moves, items, abilities, types and volatile statuses as
Showdown ids do (it upper-cases them: ``heavydutyboots`` is ``HEAVYDUTYBOOTS``), but it turns
a name it does not know into ``NONE`` (``TYPELESS`` for a type, ``UNKNOWNITEM`` for an item)
without a word: a position would silently lose a Pokémon's item or a move. :func:`engine_name`
therefore asks the engine itself: it serialises a probe with the name and with a name no game
has; the same text means the engine does not know the name, and an :class:`EngineError` names
the field and the value.
Statuses, weather, terrain, side conditions and timed volatiles have fixed names: the maps
below.
"""

from __future__ import annotations

import functools

from poke_engine import Move, Pokemon, Side, State

from pokebench.engine.errors import EngineError, guarded

#: Showdown's status -> the engine's.
STATUS = {"": "none", "brn": "burn", "par": "paralyze", "slp": "sleep", "frz": "freeze", "psn": "poison",
          "tox": "toxic"}
#: Showdown's weather -> the engine's (Delta Stream's strong winds have no engine weather: state.py).
WEATHER = {"": "none", "sunnyday": "sun", "raindance": "rain", "sandstorm": "sand", "snow": "snow",
           "snowscape": "snow", "hail": "hail", "desolateland": "harshsun", "primordialsea": "heavyrain"}
TERRAIN = {"": "none", "electricterrain": "electricterrain", "grassyterrain": "grassyterrain",
           "mistyterrain": "mistyterrain", "psychicterrain": "psychicterrain"}
#: Showdown's side conditions -> ``poke_engine.SideConditions`` fields (layers or turns left).
SIDE_CONDITIONS = {"spikes": "spikes", "toxicspikes": "toxic_spikes", "stealthrock": "stealth_rock",
                   "stickyweb": "sticky_web", "tailwind": "tailwind", "luckychant": "lucky_chant",
                   "reflect": "reflect", "lightscreen": "light_screen", "auroraveil": "aurora_veil",
                   "safeguard": "safeguard", "mist": "mist", "healingwish": "healing_wish",
                   "lunardance": "lunar_dance", "craftyshield": "crafty_shield", "matblock": "mat_block",
                   "quickguard": "quick_guard", "wideguard": "wide_guard"}
#: The timed volatiles whose turns the engine keeps (``VolatileStatusDurations`` fields).
VOLATILE_DURATIONS = ("confusion", "encore", "lockedmove", "slowstart", "taunt", "yawn")

_KINDS = ("species", "move", "item", "ability", "type", "volatile")
_NO_SUCH_NAME = "pokebenchnosuchname"


def _probe(kind: str, name: str) -> str:
    """The engine's text of a small state holding `name` as a `kind`."""
    mon: dict[str, object] = {}
    side: dict[str, object] = {}
    if kind == "species":
        mon["id"] = name
    elif kind == "move":
        mon["moves"] = [Move(id=name)]
    elif kind in ("item", "ability"):
        mon[kind] = name
    elif kind == "type":
        mon["types"] = (name, "typeless")
    else:
        side["volatile_statuses"] = {name}
    state = State(side_one=Side(pokemon=[Pokemon(**mon)], **side))
    return guarded(f"on the {kind} {name!r}", state.to_string)


@functools.lru_cache(maxsize=None)
def knows(kind: str, name: str) -> bool:
    """Whether poke-engine has `name` (a Showdown id) as a `kind` (see ``_KINDS``)."""
    if kind not in _KINDS:
        raise ValueError(f"unknown kind of name {kind!r}: one of {_KINDS}")
    blank = "typeless" if kind == "type" else "none"
    return name == blank or _probe(kind, name) != _probe(kind, _NO_SUCH_NAME)


def engine_name(kind: str, name: str, where: str) -> str:
    """`name` as the engine spells it; an :class:`EngineError` naming `where` if the engine does not know it."""
    if not knows(kind, name):
        raise EngineError(f"{where}: poke-engine does not know the {kind} {name!r} (it would become NONE)")
    return name


def mapped(table: dict[str, str], name: str, where: str, what: str) -> str:
    """`table[name]`, or an :class:`EngineError` naming `where` and the names the engine has."""
    try:
        return table[name]
    except KeyError:
        raise EngineError(f"{where}: poke-engine has no {what} {name!r} (it has {sorted(table)})") from None
