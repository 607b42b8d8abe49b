"""The search bot: poke-engine's Monte-Carlo tree search from the player's own information.

At each decision it builds ``samples`` positions of what it knows (:mod:`pokebench.engine.from_battle`:
its own team exact, the opponent's revealed facts, the rest sampled from the pinned server's
random-battle sets by what the battle showed (:mod:`pokebench.engine.inference`; ``inference=False``:
by the revealed facts alone) with the game's seeded ``self.rng``; never the opponent's hidden team), runs
the engine's MCTS on each, the positions side by side on the search workers, and plays the action most
visited over the samples, Terastallization included. The budget is per decision (``decision_ms``: the
method's 200 ms per move, shared by the positions, ``workers`` at a time) unless one is given per
position (``iterations``, for reproducible work: the engine then runs exactly that many; else ``duration_ms``). If the engine's
action cannot be played (a name that maps to no offered move or switch, a position the engine
refuses or fails on), it plays the next-ranked action that can, else a random legal one, and logs why;
a failed search's error is the decision's ``engine_error``.

**Its games are not byte-reproducible**: the engine's search has no seed. The samples repeat
(the game's seeds); the search's visits do not. Each game's record keeps the settings and the
engine version (``game_summary``); each decision row its time, action, visits and value.

poke-engine holds Python's GIL while it searches, so the search runs in worker processes
(``workers``, shared by the players of one process): a search does not stall the other games
on poke-env's event loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import multiprocessing
import os
import random
import statistics
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence, TypeVar

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

from pokebench.engine.check import EngineUnavailable, check_engine
from pokebench.engine.errors import EngineError, hold_panic_output
from pokebench.engine.position import Position
from pokebench.engine.inference import EVIDENCE
from pokebench.engine.sets import SetTable
from pokebench.player.bench_player import BenchPlayer
from pokebench.player.decisions import DecisionRecord

if TYPE_CHECKING:  # the engine's modules need poke-engine: imported once the check has passed
    from pokebench.engine.search import ActionValue, Budget, SearchResult

T = TypeVar("T")  # what a searcher on the pool gives per position
#: What a run that lists the search bot can do on a machine without the engine.
WITHOUT_IT = ("Or play the run without the search bot: add '~players.search' matchups=all to the command line "
              "(its other players, all against all).")

_POOL: concurrent.futures.ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
#: When the process's search workers last finished a search (time.monotonic): a pool that finishes none for
#: longer than a decision's search_timeout while searches wait on it is taken for hung.
_LAST_SEARCH_DONE = 0.0


def search_pool(workers: int) -> concurrent.futures.ProcessPoolExecutor:
    """The process's search workers (made at the first search; spawned, not forked: poke-env runs threads)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ProcessPoolExecutor(max_workers=workers,
                                                           mp_context=multiprocessing.get_context("spawn"),
                                                           initializer=hold_panic_output)
        return _POOL


def default_workers() -> int:
    """Search workers when a config gives none: the cores less one (poke-env's loop and the server need one), at least 1."""
    return max(1, (os.cpu_count() or 2) - 1)


def search_workers(workers: int | None) -> int:
    """The config's `workers` (null: :func:`default_workers`); a ValueError for fewer than 1."""
    if workers is None:
        return default_workers()
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be 1 or more (or null: the cores less one), not {workers!r}")
    return workers


def position_budget(iterations: int, duration_ms: int, decision_ms: int, samples: int, workers: int) -> Budget:
    """Each sampled position's search budget: `iterations` if given, else `duration_ms`, else the decision's
    `decision_ms` shared by its `samples` positions, searched `workers` at a time (a ValueError says what is wrong)."""
    from pokebench.engine.search import Budget

    if samples < 1:
        raise ValueError(f"samples must be at least 1, not {samples}")
    if iterations or duration_ms:
        return Budget(iterations=iterations, duration_ms=0 if iterations else duration_ms)
    if decision_ms <= 0:
        raise ValueError("a search budget needs iterations > 0, duration_ms > 0 (per position) or decision_ms > 0 "
                         f"(per decision), not iterations={iterations}, duration_ms={duration_ms}, "
                         f"decision_ms={decision_ms}")
    rounds = -(-samples // min(samples, max(1, workers)))
    if decision_ms < rounds:
        raise ValueError(f"decision_ms={decision_ms} is less than 1 ms per sampled position ({samples} samples, "
                         f"{workers} workers): raise it or lower samples")
    return Budget(duration_ms=decision_ms // rounds)


def near_best(actions: Sequence[ActionValue], fraction: float, rng: random.Random) -> ActionValue:
    """One of `actions` (most visited first) with at least `fraction` of the first's share of the visits, drawn in
    proportion to its share; with `fraction` 1 the first. In a simultaneous-move game a deterministic choice can be
    read and answered; drawing among the actions the search rates nearly as well costs little and cannot."""
    check_near_best(fraction)
    near = [a for a in actions if a.share >= fraction * actions[0].share]
    if fraction == 1 or len(near) == 1:
        return actions[0]
    return rng.choices(near, weights=[a.share for a in near])[0]


def check_endgame(left: int, budget: Budget) -> int:
    """`left` if it is a valid ``endgame`` for `budget` (0: never; the engine's expectiminimax is timed only), else
    a ValueError."""
    if isinstance(left, bool) or not isinstance(left, int) or not 0 <= left <= 12:
        raise ValueError(f"endgame must be a number of Pokémon left on both sides together, 0 to 12, not {left!r}")
    if left and not budget.duration_ms:
        raise ValueError("endgame needs a time budget (decision_ms or duration_ms): the engine's expectiminimax "
                         "has no budget in iterations; with iterations, set endgame=0 (players.NAME.endgame=0)")
    return left


def check_near_best(fraction: float) -> None:
    """A ValueError unless 0 < `fraction` <= 1."""
    if not 0 < fraction <= 1:
        raise ValueError(f"near_best must be more than 0 and at most 1, not {fraction}")


def switch_target(switches: Sequence[Any], engine_id: str) -> Any | None:
    """The available switch the engine's ``switch <id>`` names. The position gives a Pokémon its forme of the moment
    (``morpekohangry``, ``cramorantgulping``) where poke-env keeps the base species, and a forme's id begins with its
    base species'; so the one switch whose species begins the id, when no species is the id itself."""
    exact = [m for m in switches if m.species == engine_id]
    near = exact or [m for m in switches if engine_id.startswith(m.species)]
    return near[0] if len(near) == 1 else None


def is_early(battle: AbstractBattle) -> bool:
    """Early in a game: the opponent has shown at most 3 Pokémon and its active one, alive, no move yet (much is
    unknown, so more sampled positions pay; Foul Play's criterion, read in its code)."""
    active = battle.opponent_active_pokemon
    return (len(battle.opponent_team) <= 3 and active is not None and not active.fainted
            and not active.moves)


def pokemon_left(battle: AbstractBattle) -> int:
    """The Pokémon not fainted on both sides together, the opponent's not yet seen counted as alive (a random
    battle's team is six)."""
    own = sum(not mon.fainted for mon in battle.team.values())
    seen = battle.opponent_team.values()
    return own + sum(not mon.fainted for mon in seen) + max(0, 6 - len(seen))


def _drop_pool(broken: concurrent.futures.ProcessPoolExecutor) -> None:
    """Forget `broken`: the next search makes new workers. No cancel_futures: with workers dead, Python 3.11's
    pool thread prints a traceback for each future cancelled under it."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is broken:
            _POOL = None
    broken.shutdown(wait=False)


def _kill_pool(hung: concurrent.futures.ProcessPoolExecutor) -> None:
    """Kill `hung`'s workers (its searches then fail as a broken pool) and forget it."""
    for process in list((hung._processes or {}).values()):  # kill() of one already gone does nothing
        process.kill()
    _drop_pool(hung)


def _search_done(_: concurrent.futures.Future[Any]) -> None:
    global _LAST_SEARCH_DONE
    _LAST_SEARCH_DONE = time.monotonic()


async def search_on_pool(pool: concurrent.futures.ProcessPoolExecutor, searcher: Callable[[str, Budget], T],
                         texts: Sequence[str], budget: Budget, timeout: float) -> list[T]:
    """`searcher`'s searches of `texts` on `pool`, side by side (the engine's MCTS, ``search_text``, or its
    expectiminimax). An EngineError if a worker died, or if the pool finished no search (of any decision of this
    process) for `timeout` seconds while these waited: a worker stopped or stuck in the engine would hold every later
    search of the run, so the pool is then killed and replaced."""
    started = time.monotonic()
    futures = [pool.submit(searcher, text, budget) for text in texts]
    for future in futures:
        future.add_done_callback(_search_done)
    waiting = [asyncio.wrap_future(f) for f in futures]
    try:
        pending = set(waiting)
        while pending:
            _, pending = await asyncio.wait(pending, timeout=min(1.0, timeout))
            if pending and time.monotonic() - max(_LAST_SEARCH_DONE, started) > timeout:
                _kill_pool(pool)
                await asyncio.wait(pending, timeout=10)
                raise EngineError(f"the search workers finished no search in {timeout:g} s: taken for hung, "
                                  "killed and replaced")
        return [w.result() for w in waiting]
    except concurrent.futures.process.BrokenProcessPool:
        _drop_pool(pool)
        raise EngineError("the search worker died") from None
    except asyncio.CancelledError:
        for w in waiting:
            w.cancel()
        raise
    finally:
        for w in waiting:  # read every outcome: no "exception was never retrieved" at exit
            if w.done() and not w.cancelled():
                w.exception()


class SearchBot(BenchPlayer):
    """MCTS over sampled positions of the player's own information (module docstring)."""

    supported_formats = ("gen9randombattle",)
    #: It searches with poke-engine, the decision analysis's engine (:class:`~pokebench.player.hooks.SearchesWithEngine`).
    searches_with_engine = True

    def __init__(self, iterations: int = 0, duration_ms: int = 0, decision_ms: int = 200, samples: int = 4,
                 early_samples: int = 0, near_best: float = 1.0, workers: int | None = None, inference: bool = True,
                 search_timeout: float = 60.0, endgame: int = 0, **kwargs: Any) -> None:
        self.engine = check_engine()
        self.workers = search_workers(workers)
        self.budget = position_budget(iterations, duration_ms, decision_ms, samples, self.workers)
        self.early_budget = position_budget(iterations, duration_ms, decision_ms, early_samples or samples, self.workers)
        self.decision_ms = 0 if iterations or duration_ms else decision_ms
        self.samples = samples
        self.early_samples = early_samples or samples
        check_near_best(near_best)
        self.near_best = near_best
        self.search_timeout = search_timeout
        self.endgame = check_endgame(endgame, self.budget)
        self.sets = SetTable.load()
        # the evidence the opponent's sets are inferred from (pokebench/engine/inference.py); off: revealed facts alone
        self.evidence = EVIDENCE if inference else frozenset()
        super().__init__(**kwargs)
        self.decision_log: list[DecisionRecord] = []
        self.fallbacks: list[str] = []

    @classmethod
    def preflight(cls, iterations: int = 0, duration_ms: int = 0, decision_ms: int = 200, samples: int = 4,
                  early_samples: int = 0, near_best: float = 1.0, workers: int | None = None,
                  search_timeout: float = 60.0, endgame: int = 0, **_: Any) -> None:
        """Before any game: the engine (Gen 9, Terastallization) and the set table; a RuntimeError says what is wrong."""
        try:
            check_engine()
        except EngineUnavailable as err:
            raise EngineUnavailable(f"{err} {WITHOUT_IT}") from None
        try:
            if early_samples < 0:
                raise ValueError(f"early_samples must be 0 (samples throughout) or more, not {early_samples}")
            for count in (samples, early_samples or samples):
                budget = position_budget(iterations, duration_ms, decision_ms, count, search_workers(workers))
                if budget.duration_ms >= 1000 * search_timeout:
                    raise ValueError(f"a position's search ({budget.duration_ms} ms) would be taken for hung at "
                                     f"search_timeout={search_timeout:g} s: raise search_timeout")
            check_near_best(near_best)
            check_endgame(endgame, budget)  # a time budget, or one in iterations, for either count alike
        except ValueError as err:
            raise RuntimeError(f"search bot: {err}") from None
        SetTable.load()

    def settings(self) -> dict[str, Any]:
        return {"iterations": self.budget.iterations, "duration_ms": self.budget.duration_ms,
                "decision_ms": self.decision_ms, "samples": self.samples, "early_samples": self.early_samples,
                "near_best": self.near_best, "inference": bool(self.evidence), "endgame": self.endgame,
                "engine": self.engine, "seeded": False}

    def begin_game(self, context: Any, on_failure: Any = None) -> None:
        super().begin_game(context, on_failure)
        self.decision_log = []
        self.fallbacks = []

    async def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        started = time.monotonic()
        result: SearchResult | None = None
        only = battle.valid_orders
        if len(only) == 1:  # nothing to choose (a recharge turn, one Pokémon left to send in): no search
            self._log(battle, started, only[0], None, None, None)
            return only[0]
        failure: str | None = None
        try:
            result = await self._search(battle)
            order, action = self._order(battle, result)
        except EngineError as err:
            failure = str(err)
            order, action = self._fallback(battle, failure), None
        self._log(battle, started, order, action, result, failure)
        return order

    async def _search(self, battle: AbstractBattle) -> SearchResult:
        """The engine's MCTS on the decision's sampled positions; its expectiminimax once at most `endgame`
        Pokémon are left on both sides together."""
        from pokebench.engine.search import combine, combine_worst_cases, search_text, worst_cases_text

        early = is_early(battle)
        texts = self.state_texts(battle, self.early_samples if early else self.samples)
        budget = self.early_budget if early else self.budget
        pool = search_pool(self.workers)
        if self.endgame and pokemon_left(battle) <= self.endgame:
            return combine_worst_cases(await search_on_pool(pool, worst_cases_text, texts, budget, self.search_timeout))
        return combine(await search_on_pool(pool, search_text, texts, budget, self.search_timeout))

    def state_texts(self, battle: AbstractBattle, samples: int) -> list[str]:
        """The engine's states (as text, for the worker) of :meth:`positions`."""
        from pokebench.engine.state import build_state

        return [build_state(p).to_string() for p in self.positions(battle, samples)]

    def positions(self, battle: AbstractBattle, samples: int) -> list[Position]:
        """`samples` sampled positions of what this player knows now (its own information only)."""
        from pokebench.engine.from_battle import positions_from_battle

        return positions_from_battle(battle, self.sets, self.rng, samples, self.evidence)

    def _order(self, battle: AbstractBattle, result: SearchResult) -> tuple[BattleOrder, ActionValue | None]:
        """The :func:`near_best` of the actions that map to an offered order (a fallback when none does)."""
        offered = {a: o for a in result.actions if (o := self._to_order(battle, a)) is not None}
        if not offered:
            return self._fallback(battle, f"none of the engine's actions {[a.action for a in result.actions]} is offered"), None
        first = next(iter(offered))
        if first is not result.best:
            self._note(f"turn {battle.turn}: the engine's {result.best.action!r} is not offered; "
                       f"its #{result.actions.index(first) + 1}, {first.action!r}, is the best offered")
        action = near_best(list(offered), self.near_best, self.rng)
        return offered[action], action

    def _to_order(self, battle: AbstractBattle, action: ActionValue) -> BattleOrder | None:
        if action.switch is not None:
            mon = switch_target(battle.available_switches, action.switch)
            return self.create_order(mon) if mon is not None else None
        move = next((m for m in battle.available_moves if m.id == action.move), None)
        if move is None or (action.terastallize and not battle.can_tera):
            return None
        return self.create_order(move, terastallize=action.terastallize)

    def _fallback(self, battle: AbstractBattle, reason: str) -> BattleOrder:
        self._note(f"turn {battle.turn}: {reason}; a random legal choice played")
        orders = battle.valid_orders
        return self.rng.choice(orders) if orders else self.choose_default_move()

    def _note(self, reason: str) -> None:
        self.fallbacks.append(reason)
        self.logger.warning("search bot: %s", reason)

    def _log(self, battle: AbstractBattle, started: float, order: BattleOrder, action: ActionValue | None,
             result: SearchResult | None, failure: str | None) -> None:
        self.decision_log.append(DecisionRecord(
            side=self.game.side if self.game else "", player=(self.game.extra.get("player") if self.game else None) or "search",
            turn=battle.turn, decision=len(self.decision_log), latency_s=round(time.monotonic() - started, 4),
            action=order.message,
            extra={"engine_action": action.action if action else None,
                   "engine_value": round(action.value, 4) if action else None,
                   "engine_visits": action.visits if action else None,
                   "engine_iterations": result.iterations if result else None,
                   "engine_positions": result.states if result else None,
                   "engine_method": result.method if result else None,
                   "engine_depth": result.depth if result else None,
                   # why the engine gave no action (the decision fell back to a random legal one)
                   "engine_error": failure},
        ))

    def game_summary(self) -> dict[str, Any]:
        seconds = [d.latency_s for d in self.decision_log if d.latency_s is not None]
        return {"search": self.settings(), "fallbacks": len(self.fallbacks), "fallback_reasons": self.fallbacks[:20],
                "decision_ms": ({"mean": round(1000 * statistics.fmean(seconds), 1),
                                 "median": round(1000 * statistics.median(seconds), 1),
                                 "max": round(1000 * max(seconds), 1)} if seconds else None)}
