"""What one side's own protocol lines say of a battle that poke-env's ``Battle`` does not keep, or keeps wrong.

poke-env 0.16.1 keeps a Pokémon's base species after a forme change (a busted Mimikyu stays ``mimikyu``), a Must
Recharge until the next move (past the turn spent recharging), no lock of Outrage and the like, no Truant turn,
counts bad poison by turns (one too many when the poison came after the turn's poison damage), and counts the
weather's and the terrain's turns from the turn number (one off when they began after the turn's end, as a
replacement's Drizzle does). :func:`read_lines` walks the lines poke-env parsed for the side
(``battle._replay_data``) once and returns :class:`LineFacts`, with Showdown's own counts: ends of turn are its
``|upkeep`` lines.

Pokémon are named by poke-env's team key (``p2: Snorlax``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pokebench.engine.evidence import team_key
from pokebench.engine.speed import to_id

#: Moves that lock their user in for two or three turns, then confuse it (``-start|…|confusion|[fatigue]``).
LOCKING_MOVES = frozenset({"outrage", "petaldance", "thrash", "ragingfury"})
#: Showdown's turns of Taunt and Encore, one more when they came after their target had moved that turn.
TIMED_TURNS = {"taunt": 3, "encore": 3}
#: How Showdown's ``-start`` and ``-end`` lines name them.
_TIMED_NAMES = {"move: Taunt": "taunt", "Encore": "encore"}
#: A lock ends when its move does not go through (the line right after the move's).
_NOT_THROUGH = frozenset({"-miss", "-fail", "-immune"})
#: Screens: 5 turns, 8 when the Pokémon that set them holds a Light Clay (which no line shows).
SCREENS = frozenset({"reflect", "lightscreen", "auroraveil"})


@dataclass
class LineFacts:
    #: Each Pokémon's species id as it is now, forme changes included (``mimikyubusted``, ``palafinhero``).
    formes: dict[str, str] = field(default_factory=dict)
    #: Pokémon asleep from their own Rest -> the moves they could not make since.
    rested: dict[str, int] = field(default_factory=dict)
    #: Each side ("p1") with a Wish still to heal -> (the turn it was made, the wisher).
    wishes: dict[str, tuple[int, str]] = field(default_factory=dict)
    #: Ends of turn since the weather, and since the terrain, began.
    weather_ends: int = 0
    terrain_ends: int = 0
    #: Pokémon that must spend this turn recharging (Hyper Beam...).
    recharging: set[str] = field(default_factory=set)
    #: Pokémon locked into a move (Outrage...) -> its uses so far.
    locked: dict[str, int] = field(default_factory=dict)
    #: Pokémon badly poisoned -> the poison's damage so far since it began or the Pokémon came in (Showdown's stage).
    toxic_stage: dict[str, int] = field(default_factory=dict)
    #: Pokémon under Taunt or Encore -> {"taunt": turns left, ...} (the end of this turn counts as one).
    timed: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Pokémon that moved last time they could: with Truant they loaf this turn.
    truant: set[str] = field(default_factory=set)
    #: Each side's screens, (side, screen) -> the Pokémon that set it: ``("p2", "auroraveil") -> "p2: Ninetales"``.
    screens: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Pokémon transformed (Transform, Imposter) -> the Pokémon they copied.
    transformed: dict[str, str] = field(default_factory=dict)
    #: Pokémon -> the items a line showed it lose (knocked off, eaten, used...): what it held before.
    lost_items: dict[str, set[str]] = field(default_factory=dict)
    #: This turn's end has come (``|upkeep``; a replacement for a Pokémon that fainted is chosen after it): the
    #: timed conditions have one turn less than the turn number says.
    past_upkeep: bool = False


def read_lines(lines: Iterable[Sequence[str]]) -> LineFacts:
    """The :class:`LineFacts` of a side's protocol lines, split on ``|`` (the first part empty)."""
    facts = LineFacts()
    turn, acted, locking = 0, set[str](), ""  # the Pokémon that acted this turn; a locking move's user just now
    movers: dict[str, str] = {}  # each side's Pokémon that last moved
    for parts in lines:
        kind = parts[1] if len(parts) > 1 else ""
        who = team_key(parts[2]) if len(parts) > 2 and parts[2][:1] == "p" else ""
        if locking and kind in _NOT_THROUGH:
            facts.locked.pop(locking, None)
        locking = ""
        if kind == "turn":
            turn, acted = int(parts[2]), set()
            facts.past_upkeep = False
        elif kind == "upkeep":
            facts.past_upkeep = True
            facts.weather_ends += 1
            facts.terrain_ends += 1
            for timed in facts.timed.values():
                for name in timed:
                    timed[name] -= 1
        elif kind in ("switch", "drag", "detailschange", "-formechange"):  # a forme shown as it is now
            facts.formes[who] = to_id(parts[3].split(",")[0])
            if kind in ("switch", "drag"):
                _left(facts, who)
                facts.transformed = {k: v for k, v in facts.transformed.items() if k[:2] != who[:2]}  # one active a side
        elif kind == "faint":
            _left(facts, who)
        elif kind == "move":
            locking = _moved(facts, who, parts, turn)
            acted.add(who)
            movers[who[:2]] = who
        elif kind == "-enditem":
            facts.lost_items.setdefault(who, set()).add(to_id(parts[3]))
        elif kind == "-transform":
            facts.transformed[who] = team_key(parts[3])
        elif kind == "-sidestart" and (screen := to_id(parts[3].removeprefix("move: "))) in SCREENS:
            facts.screens[who[:2], screen] = movers.get(who[:2], "")
        elif kind == "cant":
            _could_not_move(facts, who, parts[3])
            acted.add(who)
        elif kind == "-status":
            _status(facts, who, parts)
        elif kind == "-curestatus":
            facts.rested.pop(who, None)
            facts.toxic_stage.pop(who, None)
        elif kind == "-damage" and "[from] psn" in parts[4:] or kind == "-heal" and "[from] ability: Poison Heal" in parts[4:]:
            if who in facts.toxic_stage:
                facts.toxic_stage[who] += 1
        elif kind == "-weather" and parts[2] != "none" and "[upkeep]" not in parts:
            facts.weather_ends = 0
        elif kind == "-fieldstart" and parts[2].endswith("Terrain"):
            facts.terrain_ends = 0
        elif kind == "-mustrecharge":
            facts.recharging.add(who)
        elif kind == "-start":
            _started(facts, who, parts, acted)
        elif kind == "-end" and parts[3] in _TIMED_NAMES:
            facts.timed.get(who, {}).pop(_TIMED_NAMES[parts[3]], None)
    return facts


def _left(facts: LineFacts, who: str) -> None:
    """What ends when a Pokémon leaves the field (at a switch-in it has left before, or it fainted)."""
    facts.recharging.discard(who)
    facts.locked.pop(who, None)
    facts.timed.pop(who, None)
    facts.truant.discard(who)
    facts.transformed.pop(who, None)  # fainted
    if who in facts.toxic_stage:
        facts.toxic_stage[who] = 0


def _moved(facts: LineFacts, who: str, parts: Sequence[str], turn: int) -> str:
    """A move line; the user's key when it is a locking move that may go on (else "")."""
    move = to_id(parts[3])
    sources = [p.removeprefix("[from]").strip() for p in parts[4:] if p.startswith("[from]")]
    called = any(source != "lockedmove" for source in sources)  # by Sleep Talk...
    if not called:
        facts.truant.add(who)
    if move == "wish" and facts.wishes.get(who[:2], (-9, ""))[0] < turn - 1:  # one pending: this one fails
        facts.wishes[who[:2]] = (turn, who)
    if move in LOCKING_MOVES and not called:
        facts.locked[who] = facts.locked.get(who, 0) + 1 if "lockedmove" in sources else 1
        return who
    if not called:
        facts.locked.pop(who, None)
    return ""


def _could_not_move(facts: LineFacts, who: str, why: str) -> None:
    facts.recharging.discard(who)
    facts.locked.pop(who, None)
    if why in ("ability: Truant", "recharge"):  # recharging ends a Truant turn too
        facts.truant.discard(who)
    elif why == "slp" and who in facts.rested:
        facts.rested[who] += 1


def _status(facts: LineFacts, who: str, parts: Sequence[str]) -> None:
    status = parts[3]
    if status == "slp":
        facts.locked.pop(who, None)  # sleep ends a lock
        if "[from] move: Rest" in parts[4:]:
            facts.rested[who] = 0
        else:
            facts.rested.pop(who, None)
    elif status == "tox":
        facts.toxic_stage[who] = 0


def _started(facts: LineFacts, who: str, parts: Sequence[str], acted: set[str]) -> None:
    effect = parts[3]
    if effect == "confusion" and "[fatigue]" in parts[4:]:
        facts.locked.pop(who, None)
    elif effect in _TIMED_NAMES:
        name = _TIMED_NAMES[effect]
        facts.timed.setdefault(who, {})[name] = TIMED_TURNS[name] + (who in acted)
