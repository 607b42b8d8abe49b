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
"""

from __future__ import annotations

import functools
import statistics
from dataclasses import dataclass
from typing import Sequence

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
    return search_state(guarded("reading a state", functools.partial(poke_engine.State.from_string, text)), budget)


def combine(searches: Sequence[StateSearch]) -> SearchResult:
    """Side one's actions over several states' searches, the most visited first: each state's share of its
    visits averaged over the states (each sampled state counts the same, however many iterations its search
    bought in its time), mean values averaged over the states that offer the action, visits summed. An action
    some states do not offer (a sampled trapping ability takes the switches away) keeps its share of the others."""
    if not searches:
        raise EngineError("nothing to search: no position given")
    per_state = [s.actions for s in searches]
    offered = set().union(*per_state)
    if not offered:
        raise EngineError(f"the {len(searches)} positions give side one no action")
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
