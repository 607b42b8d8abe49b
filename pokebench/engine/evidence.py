"""What one player's own protocol lines say of each opposing Pokémon's set: the set inference's evidence.

:func:`read_facts` walks the lines poke-env parsed for one side (``battle._replay_data``) in order,
keeping what the checks need (the actives, HP shown, boosts, statuses, side conditions, weather,
terrain, Trick Room, each Pokémon's items), and gives for each opposing Pokémon its hard
constraints (:class:`Facts`: the item it started with, the moves it used itself) and the
checks (:class:`Check`) the lines found (:mod:`pokebench.engine.inference` says which and why).
It reads the player's own team (its exact Speed, item, ability) and nothing of the opponent's but
what the lines showed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

from poke_env.battle import AbstractBattle, Pokemon

from pokebench.engine.sets import RandomSet, Revealed
from pokebench.engine.speed import UNORDERED_ITEMS, Conditions, SpeedOrder, dex, effective_speed, move_priority, to_id

__all__ = ["EVIDENCE", "Check", "Facts", "read_facts"]

#: The kinds of evidence beyond the hard constraints (all used by default).
EVIDENCE = frozenset({"hazards", "life-orb", "leftovers", "choice", "speed", "regenerator"})
CHOICE_ITEMS = frozenset({"choiceband", "choicespecs", "choicescarf"})
_HAZARD_PROOF = frozenset({"heavydutyboots"})
#: Lines that end what a move or a switch-in did (the next action, the turn's end).
_ACTION = frozenset({"move", "switch", "drag", "cant", "turn", "upkeep"})
#: A line with these makes a turn's order not the speeds' (a boosted or reordered action).
_REORDERED = ("item: Quick Claw", "Custap Berry", "ability: Quick Draw", "move: After You", "move: Quash",
              "move: Instruct")
_STEALS = ("move: Thief", "move: Covet", "ability: Magician", "ability: Pickpocket")
_SWAPS = ("move: Trick", "move: Switcheroo")


@dataclass(frozen=True)
class Check:
    """One piece of evidence about one opposing Pokémon: the sets it allows."""

    kind: str  # one of EVIDENCE
    turn: int
    why: str
    test: Callable[[RandomSet], bool] = field(compare=False, repr=False)


@dataclass
class Facts:
    """What one player's battle says of one opposing Pokémon: hard constraints and checks."""

    revealed: Revealed
    checks: list[Check] = field(default_factory=list)


def team_key(ident: str) -> str:
    """``p2a: Name`` -> ``p2: Name`` (poke-env's team key)."""
    ident = ident.strip()
    return ident[:2] + ident[3:] if len(ident) > 3 and ident[2] != ":" else ident


def _from(parts: Sequence[str]) -> str:
    return next((p[6:].strip() for p in parts if p.startswith("[from]")), "")


def _of(parts: Sequence[str]) -> str:
    return next((team_key(p[4:]) for p in parts if p.startswith("[of]")), "")


def _percent(condition: str) -> int:
    """``58/100 par`` -> 58; ``150/200`` -> 75; ``0 fnt`` -> 0."""
    shown = condition.split()[0] if condition.strip() else "0"
    now, _, whole = shown.partition("/")
    try:
        return 100 * int(now) // int(whole) if whole else 0 if now == "0" else 100
    except ValueError:
        return 100


def _is_action(parts: Sequence[str]) -> bool:
    """A ``move`` line of an action of its own (not a move called or reflected; a locked-in move is one)."""
    source = _from(parts)
    return not source or to_id(source) == "lockedmove"


@dataclass
class _Pending:
    """A switch-in's hazards or a hit's recoil, open until the next action shows whether it happened."""

    kind: str
    key: str
    turn: int
    hazards: tuple[str, ...] = ()
    took: set[str] = field(default_factory=set)
    hit: bool = False
    recoiled: bool = False
    fainted: bool = False


@dataclass(frozen=True)
class _Snapshot:
    """The battle when a turn's first move started: the actives, Trick Room, each side's speed conditions."""

    active: dict[str, str]
    trick_room: bool
    ours: Conditions
    theirs: Conditions


@dataclass(frozen=True)
class _Order:
    """A turn whose first two actions were a move of each side (its speed check is made after the walk)."""

    theirs: str
    mine: str
    opponent_first: bool
    opponent_move: str
    our_move: str
    snapshot: _Snapshot
    turn: int


class _Reader:
    """Reads one side's protocol lines in order; keeps what the checks need and collects them."""

    def __init__(self, battle: AbstractBattle) -> None:
        self.battle = battle
        self.me = battle.player_role or "p1"
        self.them = "p2" if self.me == "p1" else "p1"
        self.turn = 0
        self.active: dict[str, str] = {}
        self.boosts: dict[str, int] = {}
        self.status: dict[str, str] = {}
        self.speed_boosted: set[str] = set()
        self.uncertain: set[str] = set()  # speed or ability no longer known (Transform, Baton Pass, Skill Swap...)
        self.conditions: dict[str, dict[str, int]] = {"p1": {}, "p2": {}}
        self.weather = ""
        self.fields: set[str] = set()
        self.original_item: dict[str, str] = {}
        self.item_changed: set[str] = set()
        self.moves: dict[str, set[str]] = {}
        self.stay_moves: dict[str, set[str]] = {}
        self.checks: dict[str, list[Check]] = {}
        self.pending: list[_Pending] = []
        self.trick: tuple[str, str, bool, bool] | None = None
        self.turn_first: tuple[str, str, _Snapshot] | None = None
        self.turn_reordered = False
        self.turn_done = False
        self.last_move: dict[str, str] = {}
        self.our_illusion = any(m.ability == "illusion" for m in battle.team.values())
        #: At each Pokémon's latest switch-in: its checks so far, the moves it showed since, whether its item was
        #: known, the speed orders so far.
        self.stay: dict[str, tuple[int, set[str], bool, int]] = {}
        self.orders: list[_Order] = []
        self.hp: dict[str, int] = {}  # the HP shown last, in percent
        self.heal_blocked: set[str] = set()
        self.residual: tuple[str, int] | None = None  # the opponent's active and its HP when the end of turn began
        self.healed = False

    # ---- the walk ------------------------------------------------------------------------------

    def read(self, lines: Iterable[Sequence[str]]) -> None:
        for parts in lines:
            if len(parts) < 2:
                continue
            kind = parts[1]
            if kind in _ACTION:
                self._close(parts)
            handler = getattr(self, "_on_" + kind.lstrip("-").replace("-", "_"), None)
            if handler is not None and len(parts) > 2:
                handler(parts)
            elif kind == "":
                self._residual_starts()
            elif kind == "upkeep":
                self._residual_ends()
            self._watch(parts)
        self._close(["", "turn"])

    def _add(self, key: str, kind: str, why: str, test: Callable[[RandomSet], bool]) -> None:
        found = self.checks.setdefault(key, [])
        if key[:2] == self.them and all(c.why != why for c in found):  # the same fact twice says nothing more
            found.append(Check(kind, self.turn, why, test))

    def _watch(self, parts: Sequence[str]) -> None:
        """Item facts any line shows (``[from] item: Leftovers``), and open switch-ins' and hits' outcomes."""
        kind = parts[1]
        text = "|".join(parts)
        if any(r in text for r in _REORDERED):
            self.turn_reordered = True
        if "Speed Swap" in text and len(parts) > 2:
            self.uncertain |= {team_key(parts[2]), _of(parts)}
        source = _from(parts)
        if kind not in ("-item", "-enditem") and source.startswith("item:") and len(parts) > 2:
            self._held(_of(parts) or team_key(parts[2]), source[5:])
        if kind == "-activate" and len(parts) > 4 and parts[3] == "move: Poltergeist":
            self._held(team_key(parts[2]), parts[4])
        target = team_key(parts[2]) if len(parts) > 2 else ""
        if kind in ("-damage", "-heal", "-sethp") and len(parts) > 3:
            self.hp[target] = _percent(parts[3])
            if self.residual is not None and target == self.residual[0] and (
                    kind != "-damage" or source == "item: Black Sludge"):
                self.healed = True  # healed (by Leftovers, or Wish... before them: then they had nothing to do)
        if "Heal Block" in text and len(parts) > 2:
            (self.heal_blocked.discard if kind == "-end" else self.heal_blocked.add)(target)
        for pending in self.pending:
            if kind == "-damage" and target == pending.key and source in ("Stealth Rock", "Spikes"):
                pending.took.add(to_id(source))
            if pending.kind != "recoil":
                continue
            if kind == "-damage" and target[:2] != pending.key[:2] and not source:
                pending.hit = True
            if target == pending.key and source == "item: Life Orb":
                pending.recoiled = True
            if target == pending.key and (kind == "faint" or (kind == "-damage" and len(parts) > 3 and parts[3].endswith("fnt"))):
                pending.fainted = True

    def _residual_starts(self) -> None:
        """A blank line: the end of turn's effects follow (or a turn's actions; then no upkeep comes before them)."""
        key = self.active.get(self.them, "")
        self.residual = (key, self.hp.get(key, 100)) if key and key not in self.heal_blocked else None
        self.healed = False

    def _residual_ends(self) -> None:
        """Upkeep: an opponent damaged when the end of turn began, that stayed in and was healed by nothing
        (Leftovers would have), holds no Leftovers (nor Black Sludge)."""
        if self.residual is None:
            return
        key, hp = self.residual
        self.residual = None
        if (0 < hp < 100 and not self.healed and self.active.get(self.them) == key and self.hp.get(key, 0) > 0
                and key not in self.item_changed and "grassyterrain" not in self.fields):
            self._add(key, "leftovers", "damaged at the end of a turn and not healed: not Leftovers or Black Sludge",
                      lambda s: s.item not in ("leftovers", "blacksludge") or s.ability == "klutz")

    def _close(self, parts: Sequence[str]) -> None:
        """The action `parts` starts ends what is open: a switch-in's hazards (unless its side's next
        switch-in is the same turn's other side) and a move's hit."""
        still = []
        for pending in self.pending:
            if parts[1] in ("switch", "drag") and len(parts) > 2 and parts[2][:2] != pending.key[:2] and pending.kind == "hazards":
                still.append(pending)  # the other side's switch-in of the same moment
                continue
            self._settle(pending)
        self.pending = still

    def _settle(self, pending: _Pending) -> None:
        key = pending.key
        if key in self.item_changed:
            return
        if pending.kind == "hazards":
            for hazard in pending.hazards:
                name = "Stealth Rock" if hazard == "stealthrock" else "Spikes"
                if hazard in pending.took:
                    self._add(key, "hazards", f"took {name} damage switching in: not Heavy-Duty Boots",
                              lambda s: s.item not in _HAZARD_PROOF and s.ability != "magicguard")
                elif hazard == "stealthrock":
                    self._add(key, "hazards", "no Stealth Rock damage switching in: Heavy-Duty Boots or Magic Guard",
                              lambda s: s.item in _HAZARD_PROOF or s.ability == "magicguard")
                else:
                    self._add(key, "hazards", "no Spikes damage switching in (grounded): Heavy-Duty Boots or the like",
                              lambda s: (s.item in _HAZARD_PROOF | {"airballoon"}
                                         or s.ability in ("magicguard", "levitate")))
        elif pending.hit and not pending.recoiled and not pending.fainted:
            self._add(key, "life-orb", "a damaging hit without Life Orb recoil: not Life Orb",
                      lambda s: s.item != "lifeorb" or s.ability in ("magicguard", "sheerforce"))

    # ---- items -----------------------------------------------------------------------------------

    def _held(self, key: str, item: str) -> None:
        """`key` is shown holding `item`: its starting item, if no item line changed it before."""
        if key and key not in self.item_changed:
            self.original_item.setdefault(key, to_id(item) or "none")

    def _on_item(self, parts: Sequence[str]) -> None:
        key, item, source, victim = team_key(parts[2]), parts[3] if len(parts) > 3 else "", _from(parts), _of(parts)
        if source in _SWAPS and self.trick is not None:
            first, second, first_changed, second_changed = self.trick
            partner, before = (second, second_changed) if key == first else (first, first_changed)
            if not before:
                self.original_item.setdefault(partner, to_id(item))
        elif source in _STEALS and victim:
            self._held(victim, item)
            self.item_changed.add(victim)
        elif not source or source.startswith("ability: Frisk"):
            self._held(key, item)
        self.item_changed.add(key)

    def _on_enditem(self, parts: Sequence[str]) -> None:
        key = team_key(parts[2])
        self._held(key, parts[3] if len(parts) > 3 else "")
        self.item_changed.add(key)

    def _on_activate(self, parts: Sequence[str]) -> None:
        if len(parts) > 3 and parts[3] in _SWAPS:
            first, second = team_key(parts[2]), _of(parts)
            self.trick = (first, second, first in self.item_changed, second in self.item_changed)
            self.item_changed |= {first, second}
        elif len(parts) > 3 and parts[3].startswith("item: "):
            self._held(team_key(parts[2]), parts[3][6:])

    # ---- the field -----------------------------------------------------------------------------

    def _on_turn(self, parts: Sequence[str]) -> None:
        self.turn = int(parts[2]) if parts[2].isdigit() else self.turn
        self.turn_first = None
        self.turn_reordered = False
        self.turn_done = False

    def _on_switch(self, parts: Sequence[str]) -> None:
        side, key = parts[2][:2], team_key(parts[2])
        left = self.active.get(side)
        if left is not None:
            self.boosts.pop(left, None)
            self.speed_boosted.discard(left)
            self.stay_moves.pop(left, None)
            self.uncertain.discard(left)
        if self.last_move.get(side) == "batonpass":
            self.uncertain.add(key)
        self.last_move.pop(side, None)
        if left is not None:
            self.heal_blocked.discard(left)
        self.active[side] = key
        shown = _percent(parts[4]) if len(parts) > 4 else 100
        if side == self.them and 0 < self.hp.get(key, 100) <= 95:  # back in, having left with HP to regain
            self._regenerated(key, self.hp[key], shown)
        self.hp[key] = shown
        self.stay[key] = (len(self.checks.get(key, [])), set(), key in self.original_item, len(self.orders))
        condition = parts[4].split() if len(parts) > 4 else []
        self.status[key] = condition[1] if len(condition) > 1 else ""
        hazards = tuple(h for h in ("stealthrock", "spikes") if self.conditions[side].get(h)
                        and (h == "stealthrock" or self._grounded(parts[3])))
        if hazards and side == self.them:
            self.pending.append(_Pending("hazards", key, self.turn, hazards))

    _on_drag = _on_switch

    def _regenerated(self, key: str, left: int, back: int) -> None:
        """Back with a third more HP than it left with: Regenerator (no line shows the heal); with the same: not."""
        if abs(back - min(100.0, left + 100 / 3)) <= 2:
            self._add(key, "regenerator", "back with a third more HP than it left with: Regenerator",
                      lambda s: s.ability == "regenerator")
        elif abs(back - left) <= 1:
            self._add(key, "regenerator", "back with the HP it left with: not Regenerator",
                      lambda s: s.ability != "regenerator")

    def _on_replace(self, parts: Sequence[str]) -> None:
        """Illusion broken: what the lines since the switch-in said of the disguise was of this Pokémon."""
        side, key = parts[2][:2], team_key(parts[2])
        disguise = self.active.get(side)
        if disguise is not None and disguise in self.stay:
            checks, moves, had_item, orders = self.stay[disguise]
            self.orders[orders:] = [o for o in self.orders[orders:] if o.theirs != disguise]
            moved = self.checks.get(disguise, [])[checks:]
            del self.checks.get(disguise, [])[checks:]
            self.checks.setdefault(key, []).extend(c for c in moved if c.kind != "speed")  # its speed is not the disguise's
            self.moves.setdefault(key, set()).update(moves)
            self.moves[disguise] = self.moves.get(disguise, set()) - moves
            if not had_item and disguise in self.original_item:
                self.original_item.setdefault(key, self.original_item.pop(disguise))
        self.uncertain.add(key)
        self.active[side] = key

    def _grounded(self, details: str) -> bool:
        species = to_id(details.split(",")[0])
        entry = dex().pokedex.get(species, {})
        return "gravity" not in self.fields and "Flying" not in entry.get("types", ["Flying"])

    def _on_sidestart(self, parts: Sequence[str]) -> None:
        name = to_id(parts[3].removeprefix("move: ")) if len(parts) > 3 else ""
        side = self.conditions[parts[2][:2]]
        side[name] = side.get(name, 0) + 1

    def _on_sideend(self, parts: Sequence[str]) -> None:
        name = to_id(parts[3].removeprefix("move: ")) if len(parts) > 3 else ""
        self.conditions[parts[2][:2]].pop(name, None)

    def _on_swapsideconditions(self, parts: Sequence[str]) -> None:
        self.conditions = {"p1": self.conditions["p2"], "p2": self.conditions["p1"]}

    def _on_weather(self, parts: Sequence[str]) -> None:
        self.weather = "" if parts[2] == "none" else to_id(parts[2])

    def _on_fieldstart(self, parts: Sequence[str]) -> None:
        name = to_id(parts[2].removeprefix("move: "))
        if name.endswith("terrain"):
            self.fields = {f for f in self.fields if not f.endswith("terrain")}
        self.fields.add(name)

    def _on_fieldend(self, parts: Sequence[str]) -> None:
        self.fields.discard(to_id(parts[2].removeprefix("move: ")))

    # ---- the Pokémon -----------------------------------------------------------------------------

    def _on_status(self, parts: Sequence[str]) -> None:
        self.status[team_key(parts[2])] = parts[3] if len(parts) > 3 else ""

    def _on_curestatus(self, parts: Sequence[str]) -> None:
        self.status[team_key(parts[2])] = ""

    def _boost(self, parts: Sequence[str], sign: int) -> None:
        if len(parts) > 4 and parts[3] == "spe" and parts[4].lstrip("-").isdigit():
            key = team_key(parts[2])
            self.boosts[key] = max(-6, min(6, self.boosts.get(key, 0) + sign * int(parts[4])))

    def _on_boost(self, parts: Sequence[str]) -> None:
        self._boost(parts, 1)

    def _on_unboost(self, parts: Sequence[str]) -> None:
        self._boost(parts, -1)

    def _on_setboost(self, parts: Sequence[str]) -> None:
        if len(parts) > 4 and parts[3] == "spe":
            self.boosts[team_key(parts[2])] = int(parts[4])

    def _on_clearboost(self, parts: Sequence[str]) -> None:
        self.boosts.pop(team_key(parts[2]), None)

    def _on_clearallboost(self, parts: Sequence[str]) -> None:
        self.boosts.clear()

    def _on_clearnegativeboost(self, parts: Sequence[str]) -> None:
        key = team_key(parts[2])
        self.boosts[key] = max(0, self.boosts.get(key, 0))

    def _unknown_speed(self, parts: Sequence[str]) -> None:
        self.uncertain.add(team_key(parts[2]))

    _on_copyboost = _on_swapboost = _on_invertboost = _on_transform = _on_endability = _unknown_speed

    def _on_ability(self, parts: Sequence[str]) -> None:
        source = _from(parts)
        if source.startswith("move:") or to_id(source) in ("abilitymummy", "abilitylingeringaroma",
                                                          "abilitywanderingspirit", "abilitytrace"):
            self.uncertain.add(team_key(parts[2]))

    def _on_start(self, parts: Sequence[str]) -> None:
        if len(parts) > 3 and to_id(parts[3]) in ("protosynthesisspe", "quarkdrivespe"):
            self.speed_boosted.add(team_key(parts[2]))

    def _on_end(self, parts: Sequence[str]) -> None:
        if len(parts) > 3 and to_id(parts[3]) in ("protosynthesis", "quarkdrive"):
            self.speed_boosted.discard(team_key(parts[2]))

    def _on_move(self, parts: Sequence[str]) -> None:
        key, move = team_key(parts[2]), to_id(parts[3]) if len(parts) > 3 else ""
        source = to_id(_from(parts))
        if key in self.uncertain and key[:2] == self.them:
            return  # moves of a transformed (or disguised) Pokémon are not its set's
        if source in ("", "lockedmove", "sleeptalk"):
            if move not in self.moves.setdefault(key, set()) and key in self.stay:
                self.stay[key][1].add(move)
            self.moves[key].add(move)
        if not _is_action(parts):
            return
        self.last_move[key[:2]] = move
        if key[:2] == self.them:
            self._choice(key, move)
            entry = dex().moves.get(move, {})
            if entry.get("category") in ("Physical", "Special") and key not in self.item_changed:
                self.pending.append(_Pending("recoil", key, self.turn))
        self._order(key, move)

    def _choice(self, key: str, move: str) -> None:
        used = self.stay_moves.setdefault(key, set())
        if move == "struggle" or key in self.item_changed or "magicroom" in self.fields:
            return
        if used and move not in used and len(used) == 1:
            self._add(key, "choice", f"used {sorted(used)[0]} then {move} without switching: no Choice item",
                      lambda s: s.item not in CHOICE_ITEMS or s.ability == "klutz")
        used.add(move)

    # ---- move order ------------------------------------------------------------------------------

    def _conditions(self, key: str) -> Conditions:
        status = self.status.get(key, "")
        return Conditions(boost=self.boosts.get(key, 0), paralysed=status == "par", statused=bool(status),
                          tailwind=bool(self.conditions[key[:2]].get("tailwind")), weather=self.weather,
                          terrain=next((f for f in self.fields if f.endswith("terrain")), ""),
                          speed_boosted=key in self.speed_boosted)

    def _order(self, key: str, move: str) -> None:
        """The turn's first two actions, when they are one move of each side: a speed check."""
        if self.turn_done or not self.turn:
            return
        if self.turn_first is None:
            self.turn_first = (key, move, _Snapshot(dict(self.active), "trickroom" in self.fields,
                                                    self._conditions(self.active.get(self.me, "")),
                                                    self._conditions(self.active.get(self.them, ""))))
            return
        self.turn_done = True
        first, first_move, snapshot = self.turn_first
        if first[:2] == key[:2] or self.turn_reordered or snapshot.active.get(key[:2]) != key:
            return
        mine, theirs = (first, key) if first[:2] == self.me else (key, first)
        my_move, their_move = (first_move, move) if first[:2] == self.me else (move, first_move)
        if ({mine, theirs} & (self.uncertain | self.item_changed)) or self.our_illusion:
            return
        self.orders.append(_Order(theirs, mine, first == theirs, their_move, my_move, snapshot, self.turn))

    def finish(self) -> None:
        """The speed checks, once the walk has shown which item our Pokémon held then (the one they started with)."""
        for order in self.orders:
            own, opponent = self.battle.team.get(order.mine), self.battle.opponent_team.get(order.theirs)
            if order.mine in self.original_item:
                item = self.original_item[order.mine]
            elif order.mine not in self.item_changed and own is not None:
                item = own.item or ""
            else:
                continue
            check = _speed_check(own, opponent, item, order)
            if check is not None:
                self.turn = order.turn
                self._add(order.theirs, "speed", f"turn {order.turn}: {order.opponent_move} went "
                          f"{'first' if check.opponent_first else 'second'} against our {order.our_move} "
                          f"(our speed {check.our_speed:g})", check.allows)


def _speed_check(own: Pokemon | None, opponent: Pokemon | None, item: str, order: _Order) -> SpeedOrder | None:
    """The speed check of one turn's order, or None when something it needs is not known."""
    if own is None or opponent is None or not own.stats.get("spe") or item in UNORDERED_ITEMS:
        return None
    ability = own.ability or ""
    snapshot = order.snapshot
    our_priority = move_priority(order.our_move, ability, snapshot.ours.terrain)
    species = to_id(opponent.species)
    if our_priority is None or species not in dex().pokedex or ability in ("cloudnine", "airlock"):
        return None
    return SpeedOrder(opponent_first=order.opponent_first, species=species, level=opponent.level,
                      opponent_move=order.opponent_move, opponent_cond=snapshot.theirs, our_priority=our_priority,
                      our_speed=effective_speed(int(own.stats["spe"] or 0), ability, item, snapshot.ours),
                      trick_room=snapshot.trick_room)


def _revealed(battle: AbstractBattle, key: str, reader: _Reader) -> Revealed:
    mon = battle.opponent_team[key]
    item = reader.original_item.get(key)
    if item is None and key not in reader.item_changed and mon.item not in (None, "", "unknown_item"):
        item = mon.item  # a line the reader does not read showed it
    tera = mon.tera_type.name.lower() if mon.is_terastallized and mon.tera_type else None
    return Revealed(species=mon.species, level=mon.level, moves=frozenset(reader.moves.get(key, set())), item=item,
                    ability=mon.ability or None, tera_type=tera)


def read_facts(battle: AbstractBattle) -> dict[str, Facts]:
    """Each opposing Pokémon's facts (by species) from `battle`'s own lines and its own team."""
    reader = _Reader(battle)
    reader.read(battle._replay_data)  # every line poke-env parsed for this side (no public copy in 0.16.1)
    reader.finish()
    return {mon.species: Facts(_revealed(battle, key, reader), reader.checks.get(key, []))
            for key, mon in battle.opponent_team.items()}
