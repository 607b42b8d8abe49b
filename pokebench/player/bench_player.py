"""What every PokéBench competitor gets on top of a poke-env ``Player``.

:class:`BenchHooks` is mixed in front of any ``Player`` subclass (the arena does it
for user bots that do not inherit from :class:`BenchPlayer`). It gives

- ``self.rng``: a ``random.Random`` seeded from the game's seeds and the side, so a
  bot's own randomness repeats exactly; and for synchronous ``choose_move``
  implementations that use the module-level ``random`` (poke-env's baselines do),
  the global generator is swapped for the game's own state around each call (unless the
  class that defines ``choose_move`` says ``draws_from_global_random = False``);
- refusal counting: every ``|error|[Invalid choice]`` / ``[Unavailable choice]``
  from the simulator is counted and kept in ``self.last_choice_error`` (poke-env
  0.16.1 counts nothing, and then now and then sends Showdown's default move:
  ``DEFAULT_CHOICE_CHANCE = 0`` turns that off, so the bot chooses again);
- failure capture: an exception in ``choose_move`` is kept in ``self.failure`` and
  reported to the arena at once, instead of being swallowed while the battle
  stalls (``begin_game`` wraps the instance's own ``choose_move``, so this holds
  whatever the order of the base classes);
- an activity clock (``last_activity``, ``thinking``, ``thinking_since``) for the arena's watchdogs;
- an end: once the battle is over (won, tied, at the turn limit, voided: :meth:`end_game`)
  ``choose_move`` is not called again and a choice still being thought about is
  cancelled, so a player spends nothing (no API call) after its game;
- poke-env's tera blind spot fixed (see :mod:`pokebench.player.poke_env_fixes`).
"""

from __future__ import annotations

import inspect
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
import asyncio
from typing import TYPE_CHECKING, Any, Awaitable, Callable, List

from poke_env.battle import AbstractBattle
from poke_env.player import Player
from poke_env.player.battle_order import BattleOrder, _EmptyBattleOrder

from pokebench.player import poke_env_fixes
from pokebench.seeds import player_rng

poke_env_fixes.apply()


@dataclass
class GameContext:
    """What a player knows about the game it is about to play (set by the arena)."""

    game_id: str
    side: str  # "p1" or "p2"
    battle_seed: str
    team_seed: str
    extra: dict[str, Any] = field(default_factory=dict)
    #: A folder of this player's own in the run (made on demand by the player), for state that
    #: must travel with the run: logs, notes. None when the game is played outside a run.
    work_dir: Path | None = None


if TYPE_CHECKING:  # what the mixin is mixed into: its calls to poke-env's Player are checked
    _PlayerBase = Player
else:
    _PlayerBase = object


class BenchHooks(_PlayerBase):
    """Mixin for poke-env ``Player`` subclasses; see the module docstring."""

    DEFAULT_CHOICE_CHANCE = 0.0
    #: The Showdown formats this player can play; None: any random-team singles format (the run's
    #: plan refuses a format that one of its players does not list).
    supported_formats: tuple[str, ...] | None = None
    #: Set by begin_game; None until the arena gives the player a game.
    game: GameContext | None = None
    failure: BaseException | None = None
    #: Declared False by a class whose own ``choose_move`` draws only from ``self.rng``: its choices then skip
    #: swapping the module-level generator's state in and out (four copies of 625 numbers, ~20 µs a choice).
    #: Read from the class that defines the ``choose_move`` played, so a subclass with a ``choose_move`` of its
    #: own is swapped again unless it says so too.
    draws_from_global_random: bool = True

    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None] | None = None) -> None:
        """Reset the per-game state before the arena starts a game."""
        self.game = context
        self.rng = player_rng(context.battle_seed, context.team_seed, context.side)
        self._global_random_state = random.Random(self.rng.random()).getstate()
        self.refusals = 0
        self.choice_errors: List[str] = []
        self.last_choice_error: str | None = None
        self.failure = None
        self._on_failure = on_failure
        self.last_activity = time.monotonic()
        self.thinking = False
        self.thinking_since: float | None = None
        self.decisions = 0
        #: The game ends as a tie when this turn starts (the arena's plugin): no choice made then is played.
        self.turn_limit: int | None = context.extra.get("turn_limit")
        self.game_over = False
        self._thinking_task: asyncio.Future[BattleOrder] | None = None
        self._own_choose_move = getattr(type(self), "choose_move").__get__(self, type(self))
        chooser = next(klass for klass in type(self).__mro__ if "choose_move" in vars(klass))
        self._swaps_global_random = vars(chooser).get("draws_from_global_random", True)
        setattr(self, "choose_move", self._guarded_choose_move)  # the instance's choose_move wraps the class's

    # ---- poke-env overrides ------------------------------------------------------------------

    async def _handle_battle_message(self, split_messages: List[List[str]]) -> None:
        self.last_activity = time.monotonic()
        if not self.game_over:  # refusals after the end do not count
            for message in split_messages[1:]:
                if len(message) > 2 and message[1] == "error" and message[2].startswith(("[Invalid choice]", "[Unavailable choice]")):
                    self.refusals += 1
                    self.last_choice_error = message[2]
                    self.choice_errors.append(message[2])
        await super()._handle_battle_message(split_messages)

    # ---- the guarded choose_move ---------------------------------------------------------------
    # Installed on the instance by begin_game, so that it wraps the subclass's own choose_move
    # whatever the order of the bases (a bot's choose_move comes before the mixin in the MRO).

    def battle_over(self, battle: AbstractBattle) -> bool:
        """True once no choice of this player can matter: the game ended, was voided, or reached the turn limit."""
        return self.game_over or battle.finished or (self.turn_limit is not None and battle.turn >= self.turn_limit)

    def end_game(self) -> None:
        """The game is over (the arena has its record, or voids it): no more choices; cancel one in progress.

        Call it on poke-env's loop (``POKE_LOOP``), where ``choose_move`` runs.
        """
        self.game_over = True
        if self._thinking_task is not None and not self._thinking_task.done():
            self._thinking_task.cancel()

    async def end_game_settled(self, timeout: float = 5.0) -> None:
        """:meth:`end_game`, then wait (at most `timeout` s) for a cancelled choice to unwind, so that what it
        records on its way out (an LLM request in flight is paid) is in the player's log."""
        task = self._thinking_task
        self.end_game()
        if task is not None:
            await asyncio.wait([task], timeout=timeout)

    def _guarded_choose_move(self, battle: AbstractBattle) -> BattleOrder | Awaitable[BattleOrder]:
        if self.battle_over(battle):
            return _EmptyBattleOrder()  # poke-env sends nothing
        self.decisions += 1
        try:
            choice = self._choose_in_game_random(battle) if self._swaps_global_random else self._own_choose_move(battle)
        except Exception as err:
            self._fail(err)
            return self.choose_default_move()
        if inspect.isawaitable(choice):
            return self._await_choice(choice)
        return choice

    def _choose_in_game_random(self, battle: AbstractBattle) -> BattleOrder | Awaitable[BattleOrder]:
        """The bot's choice with the module-level generator in the game's own state, and the caller's back after."""
        saved = random.getstate()
        random.setstate(self._global_random_state)
        try:
            return self._own_choose_move(battle)
        finally:
            self._global_random_state = random.getstate()
            random.setstate(saved)

    async def _await_choice(self, choice: Awaitable[BattleOrder]) -> BattleOrder:
        self.thinking = True
        self.thinking_since = time.monotonic()
        task = self._thinking_task = asyncio.ensure_future(choice)
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.game_over and task.cancelled() and not (current is not None and current.cancelling()):
                return _EmptyBattleOrder()  # cancelled by end_game: the game is over
            raise
        except Exception as err:
            self._fail(err)
            return self.choose_default_move()
        finally:
            self.thinking = False
            self.thinking_since = None
            self._thinking_task = None
            self.last_activity = time.monotonic()

    def _fail(self, err: BaseException) -> None:
        if self.failure is None:
            self.failure = err
            if self._on_failure is not None:
                self._on_failure(err)


class BenchPlayer(BenchHooks, Player):
    """Base class for PokéBench bots: a poke-env ``Player`` with :class:`BenchHooks`.

    Subclass it and implement ``choose_move(self, battle)`` (plain or ``async``); use
    ``self.rng`` for any randomness so that runs repeat exactly.
    """


def with_bench_hooks(player_class: type[Player]) -> type[Player]:
    """`player_class` itself if it already has the hooks, else a subclass that has them."""
    if issubclass(player_class, BenchHooks):
        return player_class
    return type(player_class.__name__, (BenchHooks, player_class), {"__module__": player_class.__module__})
