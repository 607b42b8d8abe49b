"""The engine's damage checked against Showdown's: what poke-engine computes for a move, against what it dealt.

For every turn of a stored game where both sides chose a move, the full-information state at the
start of the turn (:mod:`pokebench.engine.from_showdown`; a Terastallization chosen for the turn
applied first) gives poke-engine's damage of each side's move on the other
(``poke_engine.calculate_damage``, with the order the moves were used in). The damage Showdown
dealt is the target's HP change on the hit, read from the target side's own protocol lines
(exact HP, not percentages).

``calculate_damage`` gives two numbers per move: the highest roll and the highest critical roll.
A roll is 85–100% of the highest, and Showdown rounds after the roll, so a hit is *contained*
when it lies in ``[0.85 × highest − slack, highest]`` (slack: 2 HP and 1% for the rounding), or in
the critical range when Showdown says the hit was critical. Every hit is given one kind:

- ``contained``, ``contained (critical hit)``, ``contained (capped by the target's HP)``
  (a knock-out or Focus Sash/Sturdy leaves less than the roll), ``contained (multi-hit)``;
- not compared (the move did no damage to HP): ``substitute``, ``protected``, ``missed``,
  ``immune``, ``failed``, ``no damage line`` (e.g. Disguise), ``engine computes no damage``;
- mismatches: ``changed earlier in the turn`` (a chance effect of the first move, e.g. Moonblast's
  Special Attack drop, that the engine's calculation does not assume), ``engine too high``,
  ``engine too low``, ``multi-hit: other number of hits`` (the engine counts a fixed number of hits;
  Showdown rolls 2–5, or stops when the target or the user faints), ``engine error`` (no state).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

import poke_engine

from pokebench.engine.errors import EngineError, guarded
from pokebench.engine.from_showdown import Decision, GamePositions, position_from_showdown
from pokebench.engine.position import Position
from pokebench.engine.state import build_state

__all__ = ["Hit", "check_game", "summarise", "CONTAINED", "NOT_COMPARED"]

CONTAINED = ("contained", "contained (critical hit)", "contained (capped by the target's HP)", "contained (multi-hit)")
NOT_COMPARED = ("substitute", "protected", "missed", "immune", "failed", "no damage line", "engine computes no damage")
_HP = re.compile(r"^(\d+)(?:/(\d+))?")
#: Lines of a change earlier in a turn that can alter a later hit (a secondary effect's unboost, a burn...).
_CHANGES = ("-boost", "-unboost", "-setboost", "-clearboost", "-clearallboost", "-status", "-weather", "-fieldstart",
            "-sidestart", "-enditem", "-item", "-start", "-transform", "-formechange")
_END = ("move", "switch", "drag", "upkeep", "turn", "cant", "-terastallize", "replace", "detailschange")


@dataclass
class Hit:
    """One move of one side on the other, as Showdown dealt it and as the engine computes it."""

    game: str
    turn: int
    side: str  # the attacker's side
    move: str
    dealt: int | None  # HP the target lost to it (None: no HP change to compare)
    highest: int  # the engine's highest roll
    highest_crit: int
    crit: bool
    hits: int
    kind: str


def _hp(text: str) -> int:
    match = _HP.match(text.strip())
    return int(match.group(1)) if match else 0


def _ident(text: str) -> str:
    """``p2a: Terrakion`` -> ``p2``."""
    return text[:2]


def _block(lines: list[str], start: int) -> list[list[str]]:
    """The split lines after the move line at `start`, up to the next action."""
    out = []
    for line in lines[start + 1:]:
        parts = line.split("|")
        if len(parts) > 1 and parts[1] in _END:
            break
        out.append(parts)
    return out


def _with_tera(position: Position, choices: dict[str, str], order: tuple[str, str]) -> Position:
    """The position with the Terastallizations chosen for the turn done (they come before any move)."""
    sides = {}
    for label, side_id in zip(("side_one", "side_two"), order):
        side = getattr(position, label)
        if "terastallize" in choices[side_id].split():
            mon = side.mons[side.active]
            types = mon.types if mon.tera_type == "stellar" else (mon.tera_type,)
            mons = list(side.mons)
            mons[side.active] = dataclasses.replace(mon, terastallized=True, types=types)
            side = dataclasses.replace(side, mons=mons)
        sides[label] = side
    return dataclasses.replace(position, **sides)


def _range(highest: int, slack_share: float = 0.01, slack: int = 2) -> tuple[int, int]:
    return max(0, math.floor(0.85 * highest - slack_share * highest) - slack), highest


def _classify(block: list[list[str]], target: str, hp_before: int, highest: int, highest_crit: int,
              ) -> tuple[int | None, bool, int, str]:
    """(HP dealt, critical, hits, kind) of a move's block of lines on `target` (a side id)."""
    crit = any(p[1] == "-crit" for p in block if len(p) > 1)
    counted = [int(p[3]) for p in block if len(p) > 3 and p[1] == "-hitcount"]
    hits = counted[0] if counted else 1
    for kind, test in (("substitute", lambda p: "Substitute" in "|".join(p) and p[1] in ("-activate", "-end")),
                       ("protected", lambda p: p[1] == "-activate" and "Protect" in "|".join(p)),
                       ("missed", lambda p: p[1] == "-miss"), ("immune", lambda p: p[1] == "-immune"),
                       ("failed", lambda p: p[1] == "-fail")):
        if any(len(p) > 1 and test(p) for p in block):
            return None, crit, hits, kind
    hp_after = None
    for p in block:
        if len(p) > 3 and p[1] == "-damage" and _ident(p[2]) == target and not any("[from]" in x for x in p[4:]):
            hp_after = _hp(p[3])
    if hp_after is None:
        return None, crit, hits, "engine computes no damage" if highest == 0 else "no damage line"
    dealt = hp_before - hp_after
    low, high = _range(highest)
    low_crit, high_crit = _range(highest_crit)
    if counted:  # the engine's damage is the total of the number of hits it assumes (Triple Axel: three)
        ok = low <= dealt <= (high_crit if crit else high) or (hp_after <= 1 and dealt <= high_crit)
        return dealt, crit, hits, "contained (multi-hit)" if ok else "multi-hit: other number of hits"
    if low <= dealt <= high:
        return dealt, crit, hits, "contained"
    if crit and low_crit <= dealt <= high_crit:
        return dealt, crit, hits, "contained (critical hit)"
    if hp_after <= 1 and dealt <= (high_crit if crit else high):
        return dealt, crit, hits, "contained (capped by the target's HP)"
    return dealt, crit, hits, "engine too high" if dealt < low else "engine too low"


def _turn_hits(game: GamePositions, first: Decision, second: Decision) -> list[Hit]:
    """The hits of a turn where both sides chose a move (`first` is p1's decision, `second` p2's)."""
    choices = {first.side: first.choice, second.side: second.choice}
    moves = {side: choice.split()[1] for side, choice in choices.items()}
    # Who moved first, from the spectator-equal part of either side's lines (p1's view here).
    lines = game.messages["p1"][first.messages:]
    end = next((i for i, line in enumerate(lines) if line.startswith("|turn|")), len(lines))
    movers = [line.split("|")[2][:2] for line in lines[:end] if line.startswith("|move|")
              and "[from]" not in line]
    if not movers:
        return []
    try:
        position = _with_tera(position_from_showdown(first), choices, ("p1", "p2"))
        state = build_state(position)
        rolls = guarded("calculating damage", lambda: poke_engine.calculate_damage(
            state, moves["p1"], moves["p2"], movers[0] == "p1"))
    except EngineError as err:
        return [Hit(game.id, first.turn, side, moves[side], None, 0, 0, False, 1, f"engine error: {err}"[:200])
                for side in ("p1", "p2")]
    out = []
    for side, (highest, highest_crit) in zip(("p1", "p2"), rolls):
        target = "p2" if side == "p1" else "p1"
        decision = second if target == second.side else first
        view = game.messages[target][decision.messages:]
        stop = next((i for i, line in enumerate(view) if line.startswith("|turn|")), len(view))
        view = view[:stop]
        hp = decision.state["sides"][target]["pokemon"][decision.state["sides"][target]["active"][0]]["hp"]
        changed = ""  # a chance effect earlier in the turn the engine's calculation does not know of
        for i, line in enumerate(view):
            parts = line.split("|")
            if len(parts) > 1 and parts[1] in _CHANGES and not changed:
                changed = parts[1].lstrip("-")
            if len(parts) > 3 and parts[1] in ("-damage", "-heal", "-sethp") and _ident(parts[2]) == target:
                hp = _hp(parts[3])  # the target's HP up to the attacker's move
            if parts[1:2] == ["switch"] and _ident(parts[2]) == target:
                break  # the target left: later hits are on another Pokémon
            if parts[1:2] == ["move"] and _ident(parts[2]) == side and "[from]" not in line:
                block = _block(view, i)
                dealt, crit, hits, kind = _classify(block, target, hp, int(highest), int(highest_crit))
                if kind.startswith("engine too") and changed:
                    kind = f"changed earlier in the turn: {changed}"
                out.append(Hit(game.id, first.turn, side, moves[side], dealt, int(highest), int(highest_crit),
                               crit, hits, kind))
                break
    return out


def check_game(game: GamePositions) -> list[Hit]:
    """Every hit of the turns of `game` where both sides chose a move."""
    hits = []
    by_turn: dict[int, dict[str, Decision]] = {}
    for decision in game.decisions:
        if not decision.request.get("forceSwitch") and decision.choice.startswith("move "):
            by_turn.setdefault(decision.turn, {}).setdefault(decision.side, decision)
    for turn, sides in sorted(by_turn.items()):
        if "p1" in sides and "p2" in sides:
            hits += _turn_hits(game, sides["p1"], sides["p2"])
    return hits


def summarise(hits: Iterable[Hit]) -> tuple[float, int, Counter[str]]:
    """(share contained of the compared hits, compared hits, count of every kind). A knock-out is
    contained whenever the engine's roll reaches the HP taken: ``kinds`` tells them apart."""
    kinds = Counter(h.kind.split(":")[0] for h in hits)
    compared = sum(n for kind, n in kinds.items() if kind not in NOT_COMPARED)
    contained = sum(kinds[k] for k in CONTAINED)
    return (contained / compared if compared else 0.0), compared, kinds
