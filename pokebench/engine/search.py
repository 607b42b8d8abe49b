"""poke-engine's Monte-Carlo tree search (DUCT) on one position or an average over sampled ones.

:func:`search` runs the engine's MCTS on each ``State`` with the same :class:`Budget` and gives,
per action of side one, its share of the visits and its mean value (``total_score / visits``: side
one's expected score, 0 a loss and 1 a win, as the engine's evaluation estimates it), averaged over the
states. The actions are the engine's names: a move id (``"thunderbolt"``), the move with
Terastallization (``"thunderbolt-tera"``), a switch (``"switch charizard"``, the species id).

**The search has no seed**: poke-engine draws from its own unseeded generator, so the same
position and budget can give other visits and values, and in a close position another choice.
A budget in iterations fixes the work (the engine runs exactly that many); a budget in
milliseconds fixes the time, the iterations then depend on the machine and its load (the engine
looks at the clock every 1000 iterations).

poke-engine holds Python's GIL while it searches: a thread does not let other Python code run
meanwhile. :func:`search_text` takes a state as the engine's text and gives a picklable
:class:`StateSearch`, so that worker processes can search a decision's positions side by side
and :func:`combine` their results (the search bot does).

:func:`worst_cases_text` runs the engine's iterative-deepening expectiminimax instead (timed only: it has no
budget in iterations) and :func:`combine_worst_cases` ranks side one's actions by their worst case over side
two's replies, averaged over the states: the search bot's end-game option.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass
from typing import Mapping, Sequence

import poke_engine

from pokebench.engine.errors import EngineError, guarded


@dataclass(frozen=True)
class Budget:
    """A search budget per position: exactly `iterations`, else `duration_ms` of search."""

    iterations: int = 0
    duration_ms: int = 0
    threads: int = 1

    def __post_init__(self) -> None:
        if self.iterations < 0 or self.duration_ms < 0 or not (self.iterations or self.duration_ms):
            raise ValueError(f"a search budget needs iterations > 0 or duration_ms > 0, not {self}")
        if self.threads < 1:
            raise ValueError(f"a search needs at least one thread, not {self.threads}")


@dataclass(frozen=True)
class ActionValue:
    """One action of side one: its visits (summed over the states), its mean value (averaged over the states that
    offer it) and its share of the visits (averaged over all the states, 0 in those that do not offer it)."""

    action: str
    visits: int
    value: float
    share: float

    @property
    def move(self) -> str | None:
        """The move id, None for a switch."""
        return None if self.switch else self.action.removesuffix("-tera")

    @property
    def terastallize(self) -> bool:
        return self.action.endswith("-tera")

    @property
    def switch(self) -> str | None:
        """The species id switched in, None for a move."""
        return self.action.removeprefix("switch ") if self.action.startswith("switch ") else None


@dataclass(frozen=True)
class SearchResult:
    """Side one's actions, most visited first; the engine's choice is the first."""

    actions: list[ActionValue]
    iterations: int  # over all the states
    states: int
    #: Actions some states offered and others did not (e.g. a sampled trapping ability): no share in the others.
    partial_actions: tuple[str, ...] = ()
    #: "mcts", or "expectiminimax" (:func:`combine_worst_cases`: then `iterations` is 0 and `depth` the least
    #: depth its states' searches completed).
    method: str = "mcts"
    depth: int | None = None

    @property
    def best(self) -> ActionValue:
        return self.actions[0]


@dataclass(frozen=True)
class StateSearch:
    """One state's search: side one's actions as ``{action: (visits, total_score)}`` (picklable, for a worker)."""

    actions: dict[str, tuple[int, float]]
    iterations: int


def search_state(state: poke_engine.State, budget: Budget) -> StateSearch:
    """The engine's MCTS on one state."""
    result = guarded("searching", lambda: poke_engine.monte_carlo_tree_search(
        state, duration_ms=budget.duration_ms, iterations=budget.iterations, threads=budget.threads))
    return StateSearch({o.move_choice: (o.visits, o.total_score) for o in result.side_one}, result.total_visits)


def search_text(text: str, budget: Budget) -> StateSearch:
    """:func:`search_state` on a state given as ``State.to_string()`` (a worker process's task)."""
    return search_state(read_state(text), budget)


def read_state(text: str) -> poke_engine.State:
    """A state from its ``State.to_string()`` text (a worker's task arrives so)."""
    return guarded("reading a state", functools.partial(poke_engine.State.from_string, text))


def offered_actions(per_state: Sequence[Mapping[str, object]]) -> set[str]:
    """The actions any of the states' searches gives side one; an EngineError for no state, or no action."""
    if not per_state:
        raise EngineError("nothing to search: no position given")
    offered = set().union(*per_state)
    if not offered:
        raise EngineError(f"the {len(per_state)} positions give side one no action")
    return offered


def combine(searches: Sequence[StateSearch]) -> SearchResult:
    """Side one's actions over several states' searches, the most visited first: each state's share of its
    visits averaged over the states (each sampled state counts the same, however many iterations its search
    bought in its time), mean values averaged over the states that offer the action, visits summed. An action
    some states do not offer (a sampled trapping ability takes the switches away) keeps its share of the others."""
    per_state = [s.actions for s in searches]
    offered = offered_actions(per_state)
    totals = [max(1, sum(visits for visits, _ in state.values())) for state in per_state]
    actions, partial = [], []
    for name in offered:
        where = [(state[name], total) for state, total in zip(per_state, totals) if name in state]
        actions.append(ActionValue(name, sum(visits for (visits, _), _ in where),
                                   statistics.fmean(score / max(1, visits) for (visits, score), _ in where),
                                   sum(visits / total for (visits, _), total in where) / len(searches)))
        if len(where) < len(searches):
            partial.append(name)
    actions.sort(key=lambda a: (-a.share, -a.value, a.action))
    return SearchResult(actions, sum(s.iterations for s in searches), len(searches), tuple(sorted(partial)))


def search(states: Sequence[poke_engine.State], budget: Budget) -> SearchResult:
    """MCTS on each state, side one's actions combined over them (:func:`combine`)."""
    return combine([search_state(state, budget) for state in states])


def search_texts(texts: Sequence[str], budget: Budget) -> SearchResult:
    """:func:`search` on states given as ``State.to_string()`` (picklable: for a worker process)."""
    return combine([search_text(text, budget) for text in texts])


#: How poke-engine's MCTS turns an evaluation (points) into side one's expected score (``sigmoid`` in its
#: ``mcts.rs``: about 200 points is nearly a win); used for the expectiminimax's values, to log them on one scale.
EVALUATION_SCALE = 0.0125


@dataclass(frozen=True)
class StateWorstCases:
    """One state's expectiminimax: each action of side one with its worst evaluation over side two's replies
    (points, as the engine evaluates; picklable, for a worker), and the depth the search completed."""

    worst: dict[str, float]
    depth: int


def worst_cases_text(text: str, budget: Budget) -> StateWorstCases:
    """The engine's iterative-deepening expectiminimax on a state given as ``State.to_string()``, for
    ``budget.duration_ms`` (the engine always takes that long: it searches deeper until the time is up and gives
    the last depth it completed). The engine prunes (alpha-beta): a row stops at the first reply worse than the best
    row's worst case, so the state's best action is exact and another's value is the minimum over the replies
    searched, a bound above its worst case and below the best's (averaged over the states as it is)."""
    if not budget.duration_ms:
        raise EngineError(f"the engine's expectiminimax is timed: it needs a budget in milliseconds, not {budget}")
    state = read_state(text)
    result = guarded("searching", lambda: poke_engine.iterative_deepening_expectiminimax(state, budget.duration_ms))
    replies = len(result.side_two)
    worst: dict[str, float] = {}
    for row, action in enumerate(result.side_one):
        scores = [x for x in result.matrix[row * replies:(row + 1) * replies] if x is not None and math.isfinite(x)]
        if scores:
            worst[action] = min(scores)
    # the engine counts the depth in a signed byte: in a position that ends in a few forced turns it deepens
    # past 127 within the time, and the count wraps below 0
    return StateWorstCases(worst, result.depth_searched % 256)


def combine_worst_cases(searches: Sequence[StateWorstCases]) -> SearchResult:
    """Side one's actions over several states' expectiminimax, best first: the worst case of each action averaged
    over the states that offer it, as side one's expected score (:data:`EVALUATION_SCALE`). The first action has
    the whole share, the others none (a maximin choice is one action, not a mix); visits are 0 (no sampling)."""
    offered = offered_actions([s.worst for s in searches])
    values = {name: statistics.fmean(s.worst[name] for s in searches if name in s.worst) for name in offered}
    ranked = sorted(offered, key=lambda name: (-values[name], name))
    actions = [ActionValue(name, 0, 1 / (1 + math.exp(-EVALUATION_SCALE * values[name])), float(i == 0))
               for i, name in enumerate(ranked)]
    partial = sorted(name for name in offered if any(name not in s.worst for s in searches))
    return SearchResult(actions, 0, len(searches), tuple(partial), "expectiminimax", min(s.depth for s in searches))
