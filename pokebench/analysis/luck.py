"""The luck of every turn of a stored game, and the game's luck-adjusted score.

GNU Backgammon's luck analysis, and AIVAT's (Burch et al., AAAI 2018) chance correction: before
the chance of a turn is drawn, value every outcome it can have; the turn's luck for side one is

    luck = V(what happened) − Σ_k p_k · V(outcome k)

with V side one's win probability (:mod:`pokebench.analysis.value`). Over its outcomes a turn's luck
weighs to zero whatever V is, so the game's *adjusted score* = score − Σ luck has the score's
expectation, and less variance as far as V tracks what the chance did.

A turn here is a move turn: both sides' choices at its start, from the full-information position
(the input log replayed in the pinned simulator, side one = p1). The outcomes are poke-engine's
(``generate_instructions``: hits, misses, critical hits, secondary effects, speed ties, sleep and
confusion turns, with their probabilities), each crossed with the sixteen damage rolls of the first
hit each side takes (:func:`_hits`): the engine branches on a roll only where it decides a knock-out. *What happened* is the
(outcome, rolls) nearest the next real position (HP and status of every Pokémon, the active ones
and their boosts): it is valued by the same V as the other outcomes, on the engine's own footing.
Everything that is approximated is listed in :data:`APPROXIMATIONS`.

AIVAT's second correction, for a player whose policy is known (a bot that draws at random and records what it
drew from: :mod:`pokebench.player.policy`): its own draw is luck too. With Q(a, b) the turn's expected V for the
choices a and b (its outcomes and rolls weighed), side one's draw a* against side two's actual b* adds

    action luck = Q(a*, b*) − Σ_a π(a) · Q(a, b*)

(and side two's draw b* adds Q(a*, b*) − Σ_b π(b) · Q(a*, b), still side one's luck). Given the other side's
choice, which cannot depend on the draw (the choices are simultaneous), each weighs to zero over the policy:
the adjusted score keeps its expectation, whatever the other side's policy, known or not. It is added with the
fixed weight :data:`ACTION_WEIGHT` (any fixed weight keeps the expectation), chosen on games of their own.

V knows the position, not the players: where one player is much the stronger, V is far from the game's real odds,
and luck it measures in positions the stronger player wins anyway is noise (over a whole ladder of bots it added
variance in the lopsided matchups). So each game's luck is also measured with V's log-odds shifted by each of
:data:`SKILL_SHIFTS` (times the turn's share of HP left), and pokebench/analysis/luck_rows.py takes the shift of the
game's matchup from the *other* mirror pairs' results: a shift chosen without the game's own chance keeps the
adjusted score unbiased, like any V.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np
import poke_engine

from pokebench.analysis.settings import ACTION_WEIGHT, SKILL_SHIFTS
from pokebench.analysis.value import Snapshot, ValueModel
from pokebench.engine.errors import EngineError, guarded
from pokebench.engine.from_showdown import Decision, GamePositions, engine_action, position_of_state
from pokebench.engine.state import build_state

__all__ = ["APPROXIMATIONS", "ROLLS", "TurnLuck", "TurnOutcomes", "MoveTurn", "KnownPolicy", "move_turns", "game_luck",
           "turn_luck", "turn_outcomes", "turn_shifts", "expected_value", "action_luck", "EVENTS"]

#: The index of shift 0 in SKILL_SHIFTS (and in a turn's shifts): V's own value.
NO_SHIFT = SKILL_SHIFTS.index(0.0)
#: Showdown's damage rolls: 85 to 100 % of the damage, each 1 in 16; the engine's damage is the mean roll.
ROLLS = np.arange(85, 101) / 92.5
#: The chance events a turn's luck is named by (luck_turns.csv ``event``).
EVENTS = ("critical hit", "miss", "secondary effect", "speed tie", "damage roll", "sleep/confusion", "other")

#: What the luck analysis approximates, and how (with the engine bridge's own: engine/state.py).
APPROXIMATIONS: dict[str, str] = {
    "value function": "a logistic of HP, Pokémon left, status, boosts, hazards, Terastallization left and speed "
    "(value.py), fitted on bot games of their own seeds; no item, ability, move or type matchup enters it",
    "chance model": "poke-engine 0.0.48's outcomes and probabilities (generate_instructions); where the engine's "
    "mechanics differ from Showdown's, the probabilities do too",
    "damage rolls": "the engine branches on them only where a roll decides a knock-out (the knocking-out rolls with "
    "a critical hit as one outcome, the surviving rolls at their mean as another), else takes the mean roll: the "
    "first hit each side takes in an outcome is given the sixteen rolls (85-100 % of the engine's damage, taken "
    "as the mean roll), the target's HP alone changing (what a different roll changes later in the turn is not "
    "followed); a hit that knocks out keeps its knock-out; in the surviving outcome the spread can reach 0 HP, a "
    "knock-out that outcome excludes (clipping it at 1 HP removed no variance: docs/analysis.md)",
    "multi-hit moves": "the engine's hit count; only the first hit has rolls",
    "pivot turns (U-turn, Volt Switch, Flip Turn...)": "the turn is valued up to the pivot's switch (the next real "
    "position); the chance of the rest of the turn (the other side's move after the switch) is not measured",
    "forced switches": "no chance of their own: not turns of the luck",
    "recharge and Struggle": "a turn spent recharging is the engine's 'none' (no action); a turn of Struggle, which "
    "the engine has no move for, is not valued (its error in luck_turns.csv)",
    "what happened": "the engine outcome and rolls nearest the next real position (which Pokémon are knocked out "
    "first, then HP fraction and status of every Pokémon, the active Pokémon and their boosts); a draw the engine did "
    "not list counts as its nearest one",
    "end-of-turn effects": "as the engine plays them in the outcome (weather, Leftovers, poison...); their own "
    "chance, if any, only as far as the engine branches on it",
    "Terastallization": "part of the choice (the engine's '-tera' action): no chance of its own",
    "a known policy's draws (action luck)": "only move turns of a bot that records its policy; a turn where the "
    "bot chose more than once (Showdown refused a choice) or where one of the orders it drew from is not an action "
    "the engine takes has no action luck (so a refused draw is not corrected for)",
}

_DAMAGE = re.compile(r"^Damage Side(One|Two): (\d+)$")
_SWITCH = re.compile(r"^Switch Side(One|Two): P(\d) -> P(\d)$")
_SECONDARY = re.compile(r"^(ChangeStatus|Boost|ApplyVolatileStatus)\b")
_SLEEP_OR_CONFUSION = re.compile(r"(Sleep|SLEEP|Confusion|CONFUSION|Rest)")
#: Weights of the distance between an outcome and the real position, per Pokémon: a knock-out is categorical (a
#: Pokémon standing in one and fainted in the other is farther than any HP difference), then status, then boosts.
_FAINT_WEIGHT = 4.0
_STATUS_WEIGHT = 0.5
_BOOST_WEIGHT = 0.1


@dataclass
class TurnLuck:
    """One move turn: side one's values and luck (luck_turns.csv)."""

    turn: int
    v_before: float
    v_after: float
    expected: float
    luck: float
    outcomes: int
    event: str
    roll_luck: float  # the part of the luck from the damage rolls of the outcome that happened
    v_real: float  # V of the next real position itself (the alternative "what happened", for measuring its bias)
    shifts: np.ndarray  # this turn's shifts of V's log-odds: SKILL_SHIFTS × the share of HP left (turn_shifts)
    expected_by_shift: np.ndarray  # `expected` with V shifted by each of them (at NO_SHIFT: `expected`)
    luck_by_shift: np.ndarray  # `luck` with V shifted by each of them (at NO_SHIFT: `luck`)


@dataclass
class _Outcome:
    probability: float
    texts: list[str]
    snapshot: Snapshot
    hp_one: np.ndarray  # rows: the damage roll combinations (n × side one's Pokémon)
    hp_two: np.ndarray
    state: poke_engine.State  # the engine's state after it (benchmarks/luck_variates.py reads its damage)


def _hits(before: Snapshot, texts: list[str]) -> list[tuple[int, int, int]]:
    """(side 0/1, Pokémon index, engine damage) of the first hit each side takes, switches followed.

    The first ``Damage`` of a side that does not come straight after its own switch-in (hazards) is
    taken as a move's hit; a residual (poison, weather) that comes first is then rolled too (see
    APPROXIMATIONS).
    """
    active = [before.one.active, before.two.active]
    hit: dict[int, tuple[int, int, int]] = {}
    just_switched = [False, False]
    for text in texts:
        if switch := _SWITCH.match(text):
            side = 0 if switch.group(1) == "One" else 1
            active[side] = int(switch.group(3))
            just_switched[side] = True
            continue
        if damage := _DAMAGE.match(text):
            side = 0 if damage.group(1) == "One" else 1
            if side not in hit and not just_switched[side]:
                hit[side] = (side, active[side], int(damage.group(2)))
            just_switched[side] = False
    return list(hit.values())


def _rolled(after: Snapshot, hits: list[tuple[int, int, int]]) -> tuple[np.ndarray, np.ndarray]:
    """The HP of both sides (rows) for every combination of the hits' sixteen rolls."""
    rows = [after.one.hp[None, :].copy(), after.two.hp[None, :].copy()]
    for side, index, damage in hits:
        target = after.one if side == 0 else after.two
        if target.hp[index] <= 0:  # knocked out at the engine's damage: kept (APPROXIMATIONS)
            continue
        spread = np.clip(target.hp[index] + damage - np.floor(damage * ROLLS), 0, target.maxhp[index])
        count = len(rows[0])
        rows = [np.repeat(r, len(ROLLS), axis=0) for r in rows]
        rows[side][:, index] = np.tile(spread, count)
    return rows[0], rows[1]


def _same_mons(mine: tuple[str, ...], theirs: tuple[str, ...]) -> list[int]:
    """For each Pokémon of `mine`, its index in `theirs` (Showdown reorders a side on switches); one whose forme
    changed during the turn (Meloetta's Relic Song, Minior...) is paired with the one left unpaired."""
    where = {mon: i for i, mon in enumerate(theirs)}
    left = [i for i, mon in enumerate(theirs) if mon not in set(mine)]
    order = []
    for mon in mine:
        if mon in where:
            order.append(where[mon])
        elif left:
            order.append(left.pop(0))
        else:
            raise EngineError(f"the next position's team {sorted(theirs)} is not the turn's {sorted(mine)}")
    return order


def _distance(outcome: _Outcome, real: Snapshot) -> np.ndarray:
    """Per roll row: how far the outcome is from the real position (knock-outs, HP fractions, status, actives,
    boosts)."""
    out = np.zeros(len(outcome.hp_one))
    for mine, theirs, hp in ((outcome.snapshot.one, real.one, outcome.hp_one),
                             (outcome.snapshot.two, real.two, outcome.hp_two)):
        order = _same_mons(mine.ids, theirs.ids)
        out = out + np.abs(hp / mine.maxhp - theirs.hp[order] / theirs.maxhp[order]).sum(axis=1)
        out = out + _FAINT_WEIGHT * ((hp > 0) != (theirs.hp[order] > 0)[None, :]).sum(axis=1)
        out = out + _STATUS_WEIGHT * sum(a != theirs.status[b] for a, b in zip(mine.status, order))
        out = out + (mine.ids[mine.active] != theirs.ids[theirs.active])
        out = out + _BOOST_WEIGHT * sum(abs(a - b) for a, b in zip(mine.boosts, theirs.boosts))
    return out


def _event(outcomes: list[_Outcome], happened: int, roll_luck: float, luck: float) -> str:
    """The chance event the turn's luck is named by (:data:`EVENTS`), "" when it had no luck."""
    if len(outcomes) == 1 and len(outcomes[0].hp_one) * len(outcomes[0].hp_two) == 1:
        return ""
    if abs(roll_luck) >= abs(luck - roll_luck):
        return "damage roll"
    modal = max(range(len(outcomes)), key=lambda k: outcomes[k].probability)
    if happened == modal:
        return "other"
    mine, usual = outcomes[happened].texts, outcomes[modal].texts
    if any(_SLEEP_OR_CONFUSION.search(t) for t in set(mine) ^ set(usual)):
        return "sleep/confusion"
    hit = {side: damage for side, _, damage in _hits(outcomes[happened].snapshot, mine)}
    usual_hit = {side: damage for side, _, damage in _hits(outcomes[modal].snapshot, usual)}
    if set(usual_hit) - set(hit) or set(hit) - set(usual_hit):
        return "miss"
    if any(hit[s] > 1.3 * usual_hit[s] for s in hit):
        return "critical hit"
    if {t for t in mine if _SECONDARY.match(t)} != {t for t in usual if _SECONDARY.match(t)}:
        return "secondary effect"
    first = [t for t in mine if _DAMAGE.match(t)][:1]
    usual_first = [t for t in usual if _DAMAGE.match(t)][:1]
    if first and usual_first and first[0].split(":")[0] != usual_first[0].split(":")[0]:
        return "speed tie"
    return "other"


@dataclass
class TurnOutcomes:
    """A move turn's chance before any value: its outcomes × rolls, their probabilities, and what happened."""

    outcomes: list[_Outcome]
    weights: np.ndarray  # per outcome, normalised to sum to 1
    happened: int  # the outcome nearest the next real position
    row: int  # its roll row nearest it

    def rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Every outcome × roll row: its features (:meth:`Snapshot.features`), its finished value (NaN while the
        game goes on), its probability; and the index of the row that happened (benchmarks/luck_value_fit.py fits
        V on these)."""
        features = [o.snapshot.features(o.hp_one, o.hp_two) for o in self.outcomes]
        finished = [o.snapshot.finished(o.hp_one, o.hp_two) for o in self.outcomes]
        weights = [np.full(len(f), w / len(f)) for f, w in zip(features, self.weights)]
        return (np.vstack(features), np.concatenate(finished), np.concatenate(weights),
                sum(len(f) for f in features[:self.happened]) + self.row)


def turn_outcomes(state: poke_engine.State, one: str, two: str, real: Snapshot) -> TurnOutcomes:
    """The outcomes of one move turn: `state` before it (side one = p1), the sides' engine actions, the next real
    position."""
    outcomes, weights = _listed(state, one, two)
    distances = [_distance(o, real) for o in outcomes]
    happened = min(range(len(outcomes)), key=lambda k: float(distances[k].min()))
    return TurnOutcomes(outcomes, weights, happened, int(np.argmin(distances[happened])))


def _listed(state: poke_engine.State, one: str, two: str) -> tuple[list[_Outcome], np.ndarray]:
    """The turn's outcomes for the engine actions `one` and `two`, with their rolls, and their probabilities."""
    before = Snapshot.of(state)
    listed = guarded("listing the turn's outcomes", lambda: poke_engine.generate_instructions(state, one, two))
    if not listed:
        raise EngineError(f"the engine lists no outcome for {one!r} against {two!r}")
    outcomes = []
    for item in listed:
        texts = [repr(i) for i in item.instruction_list]
        after_state = guarded("applying an outcome", lambda: state.apply_instructions(item))
        after = Snapshot.of(after_state)
        hp_one, hp_two = _rolled(after, _hits(before, texts))
        outcomes.append(_Outcome(item.percentage / 100, texts, after, hp_one, hp_two, after_state))
    total = sum(o.probability for o in outcomes)
    return outcomes, np.array([o.probability / total for o in outcomes])


def expected_value(state: poke_engine.State, one: str, two: str, model: ValueModel,
                   shifts: np.ndarray | None = None) -> np.ndarray:
    """Q(one, two): the turn's expected V (side one's) over its outcomes and rolls, for these engine actions, per
    shift of V (:meth:`ValueModel.shifted`; default: one, none)."""
    outcomes, weights = _listed(state, one, two)
    shifts = np.zeros(1) if shifts is None else shifts
    return weights @ np.array([model.shifted(o.snapshot, shifts, o.hp_one, o.hp_two).mean(axis=0) for o in outcomes])


def turn_shifts(before: Snapshot) -> np.ndarray:
    """The turn's shifts of V's log-odds, one per game-level shift of :data:`SKILL_SHIFTS`: that shift times the share
    of HP left in the position `before` the turn, so that a stronger player's edge counts for the game still to
    play."""
    return np.asarray(SKILL_SHIFTS) * before.hp_left()


@dataclass(frozen=True)
class KnownPolicy:
    """A side's policy at one move choice, as its bot recorded it: each engine action's probability."""

    probabilities: dict[str, float]  # engine action, as generate_instructions takes it -> probability
    chosen: str  # the engine action it drew

    @classmethod
    def of(cls, entry: dict[str, Any], side: dict[str, Any]) -> "KnownPolicy":
        """From a recorded entry (:mod:`pokebench.player.policy`) and the deciding side's state; an EngineError
        when an order is not an action the engine takes."""
        orders = [_engine_choice(order, side) for order in entry["orders"]]
        epsilon = float(entry["epsilon"])
        probabilities: dict[str, float] = {}
        for action in orders:
            probabilities[action] = probabilities.get(action, 0.0) + epsilon / len(orders)
        if entry.get("greedy") is not None and epsilon < 1:
            greedy = _engine_choice(entry["greedy"], side)
            probabilities[greedy] = probabilities.get(greedy, 0.0) + 1.0 - epsilon
        return cls(probabilities, _engine_choice(entry["choice"], side))


def action_luck(state: poke_engine.State, one: str, two: str, expected: np.ndarray, model: ValueModel,
                policy_one: KnownPolicy | None, policy_two: KnownPolicy | None,
                shifts: np.ndarray | None = None) -> np.ndarray:
    """Side one's luck from the sides' known random draws this turn (module docstring): :data:`ACTION_WEIGHT` × (Q
    of what each drew less its policy's mean Q, the other side's actual choice held), per shift of V (default: one,
    none); `expected` is Q(one, two) per shift."""
    sides: tuple[tuple[KnownPolicy | None, str, Callable[[str], np.ndarray]], ...] = (
        (policy_one, one, lambda a: expected_value(state, a, two, model, shifts)),  # side two's choice held
        (policy_two, two, lambda b: expected_value(state, one, b, model, shifts)))
    luck = np.zeros_like(expected)
    for policy, actual, q in sides:
        if policy is None or policy.chosen != actual:
            continue
        try:  # an alternative the engine cannot take: no action luck from this side (whatever it drew)
            mean = sum(p * (expected if action == actual else q(action)) for action, p in policy.probabilities.items())
        except EngineError:
            continue
        luck += ACTION_WEIGHT * (expected - mean)
    return luck


def turn_luck(state: poke_engine.State, one: str, two: str, real: Snapshot, model: ValueModel,
              turn: int) -> tuple[TurnLuck, list[tuple[float, float]]]:
    """The luck of one move turn (:func:`turn_outcomes`' arguments). Also every (probability, luck had it
    happened) pair of the turn's outcome × roll rows, which weigh to zero."""
    chance = turn_outcomes(state, one, two, real)
    outcomes, weights, happened = chance.outcomes, chance.weights, chance.happened
    before = Snapshot.of(state)
    shifts = turn_shifts(before)
    shifted = [model.shifted(o.snapshot, shifts, o.hp_one, o.hp_two) for o in outcomes]  # rows × shifts
    expected_by_shift = weights @ np.array([v.mean(axis=0) for v in shifted])
    values = [v[:, NO_SHIFT] for v in shifted]
    means = np.array([v.mean() for v in values])
    expected = float(weights @ means)
    v_after = float(values[happened][chance.row])
    luck = v_after - expected
    roll_luck = v_after - float(means[happened])
    pairs = [(float(w) / len(v), float(x) - expected) for w, v in zip(weights, values) for x in v]
    return (TurnLuck(turn, float(model.of_snapshot(before)[0]), v_after, expected, luck, len(outcomes),
                     _event(outcomes, happened, roll_luck, luck), roll_luck, float(model.of_snapshot(real)[0]),
                     shifts, expected_by_shift, shifted[happened][chance.row] - expected_by_shift), pairs)


def _choice(decision: Decision) -> str:
    """The engine's name of the decision's choice as ``generate_instructions`` takes it (a switch: the species)."""
    return _engine_choice(decision.choice, decision.state["sides"][decision.side])


def _engine_choice(choice: str, side: dict[str, Any]) -> str:
    """A choice (``move ID [terastallize]``, ``switch N``, or a bot's ``switch NAME``) as ``generate_instructions``
    takes it (a switch: the species alone; a turn spent recharging after Hyper Beam and the like, which Showdown
    records as ``move recharge``: the engine's ``none``, no action, so that the other side's chance is measured)."""
    if choice.split()[:2] == ["move", "recharge"]:
        return "none"
    return engine_action(choice, side).removeprefix("switch ")


def _real(state: dict[str, Any]) -> Snapshot:
    return Snapshot.of(build_state(position_of_state(state, "p1")))


@dataclass(frozen=True)
class MoveTurn:
    """A move turn of a game: both sides' decisions at its start and the state after it (None: the log stops)."""

    first: Decision  # p1's
    other: Decision  # p2's
    real_state: dict[str, Any] | None

    def position(self) -> tuple[poke_engine.State, str, str, Snapshot]:
        """What :func:`turn_outcomes` takes: the state before the turn, both engine actions, the next position."""
        if self.real_state is None:
            raise EngineError("the input log stops before the turn's end")
        return (build_state(position_of_state(self.first.state, "p1")), _choice(self.first), _choice(self.other),
                _real(self.real_state))


def move_turns(game: GamePositions) -> Iterator[MoveTurn]:
    """The game's move turns: both sides chose at the turn's start (forced switches have no chance of their own)."""
    decisions = game.decisions
    for i, first in enumerate(decisions):
        if first.side != "p1" or first.request.get("forceSwitch") or not first.choice:
            continue
        other = next((d for d in decisions[i + 1:] if d.turn == first.turn and d.side == "p2"
                      and not d.request.get("forceSwitch")), None)
        if other is None or not other.choice:
            continue
        after = next((d for d in decisions[other.index + 1:]), None)
        yield MoveTurn(first, other, after.state if after is not None else game.final)


def _policy(policies: dict[str, list[dict[str, Any]]], decision: Decision) -> KnownPolicy | None:
    """The decision's recorded policy: its side's one entry of that turn (none, or several: a refused choice
    drawn again, gives None); None too when one of its orders is not an engine action."""
    entries = [e for e in policies.get(decision.side) or [] if e.get("turn") == decision.turn]
    if len(entries) != 1:
        return None
    try:
        return KnownPolicy.of(entries[0], decision.state["sides"][decision.side])
    except EngineError:
        return None


def game_luck(game: GamePositions, model: ValueModel,
              policies: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, Any]:
    """Every move turn's luck (the cache's entry of the game: ``turns``, ``start``, ``turns_failed``, ``error``);
    with `policies` (side -> a bot's recorded policy, :mod:`pokebench.player.policy`) its draws' luck too; and
    ``luck_by_shift_p1``, the game's luck (chance and draws) with V shifted by each of :data:`SKILL_SHIFTS` (times
    each turn's share of HP left: :func:`turn_shifts`), of which pokebench/analysis/luck_rows.py takes one.

    A turn the engine cannot take is counted in ``turns_failed`` with its error; a game with no move turn
    that could be valued has ``error`` set (its luck is then 0, never dropped).
    """
    turns: list[dict[str, Any]] = []
    failed = 0
    start: float | None = None
    by_shift = np.zeros(len(SKILL_SHIFTS))
    for move_turn in move_turns(game):
        try:
            state, one, two, real = move_turn.position()
            if start is None:
                start = model(state) - 0.5
            luck, _ = turn_luck(state, one, two, real, model, move_turn.first.turn)
            drawn = np.zeros(len(SKILL_SHIFTS)) if not policies else action_luck(
                state, one, two, luck.expected_by_shift, model, _policy(policies, move_turn.first),
                _policy(policies, move_turn.other), luck.shifts)
            by_shift += luck.luck_by_shift + drawn
            turns.append({"turn": luck.turn, "v_before": round(luck.v_before, 6), "v_after": round(luck.v_after, 6),
                          "expected": round(luck.expected, 6),
                          "luck_p1": round(float(luck.luck + drawn[NO_SHIFT]), 6),
                          "roll_luck": round(luck.roll_luck, 6), "action_luck": round(float(drawn[NO_SHIFT]), 6),
                          "outcomes": luck.outcomes, "event": luck.event, "v_real": round(luck.v_real, 6),
                          "error": None})
        except EngineError as err:
            failed += 1
            turns.append({"turn": move_turn.first.turn, "v_before": None, "v_after": None, "expected": None,
                          "luck_p1": 0.0, "roll_luck": 0.0, "action_luck": 0.0, "outcomes": 0, "event": "",
                          "v_real": None, "error": str(err)})
    analysed = sum(t["error"] is None for t in turns)
    return {"turns": turns, "start_p1": round(start, 6) if start is not None else None, "turns_failed": failed,
            "luck_by_shift_p1": [round(float(x), 6) for x in by_shift],
            "error": None if analysed else "no move turn the engine could value"
            + (f" ({failed} failed: {turns[0]['error']})" if failed else "")}
