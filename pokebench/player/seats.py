"""A seat is one side of one game: a logged-in Showdown user that will play it.

The arena only talks to seats. :class:`PokeEnvSeat` wraps a fresh poke-env player
(with PokéBench's hooks); an :class:`ExternalCompetitor` (a program of its own, such
as Foul Play) hands out seats backed by its processes. A run's player config names
either kind with ``_target_``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import pickle
import re
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from poke_env import AccountConfiguration, ServerConfiguration
from poke_env.concurrency import POKE_LOOP

from pokebench.player.bench_player import BenchPlayer, GameContext
from pokebench.player.connections import Connection, ConnectionPool, shut
from pokebench.player.decisions import DecisionRecord
from pokebench.player.faults import HarnessFault, fault_text
from pokebench.player.hooks import BoundsThinking, LogsDecisions, SearchesWithEngine, SummarizesGame
from pokebench.showdown.admin import HARNESS_NAME_PREFIX, login_token
from pokebench.showdown.address import ServerAddress

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from pokebench.games import GameSpec

T = TypeVar("T")

#: Seconds a poke-env player may take to log in once its connection is open.
LOGIN_TIMEOUT = 30.0


def _quiet_task_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """poke-env handles each message in a task of its own that nobody awaits: one that fails (a message handled
    after its connection closed) would print a traceback when collected. Its game's seat sees the closed
    connection and the arena voids the game; here it is one line of debug log."""
    log.debug("poke-env: %s (%r)", context.get("message"), context.get("exception"))


POKE_LOOP.call_soon_threadsafe(POKE_LOOP.set_exception_handler, _quiet_task_errors)


async def in_poke_loop(coro: Any, timeout: float | None = None) -> Any:
    """Run a coroutine on poke-env's own event loop (where its players live) and await it here."""
    future = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, POKE_LOOP))
    return await asyncio.wait_for(future, timeout)


def showdown_username(player: str, matchup_index: int, spec: GameSpec) -> str:
    """A Showdown name (at most 18 characters) unique among the games that can run at once, and
    the same for the same game in every run of a config (it is part of the input log).

    It begins with the harness's prefix, so the plugin lets only the harness log in under it
    (see :func:`pokebench.showdown.admin.login_token`)."""
    slug = re.sub(r"[^a-z0-9]", "", player.lower())[:7] or "player"
    return f"{HARNESS_NAME_PREFIX}{slug}{matchup_index:02d}{spec.pair:05d}{'ab'[spec.game - 1]}{'12'[spec.p1 != player]}"


def _log_in_with_token(player: BenchPlayer, token: str) -> None:
    """Make the player's client send the harness's login token for its reserved name.

    Nothing else: poke-env's own log-in then changes the avatar, which first polls for the log-in
    every millisecond and fails an assertion (in a task nobody awaits) when it has not come in 5 s;
    the plugin gives every harness player the same avatar anyway."""
    client = player.ps_client

    async def log_in(split_message: list[str]) -> None:
        await _rename(client, token)

    # poke-env's client has no hook for how it logs in: this one client's method is replaced
    client.log_in = log_in  # type: ignore[method-assign]


async def _rename(client: Any, token: str) -> None:
    """Log in (or, on a connection taken over from an earlier game, rename) as the client's own name."""
    await client.send_message(f"/trn {client.username},0,{token}")


def snapshot(value: T) -> T:
    """A deep copy of a seat's summary and decisions: pickled and read back, a few times faster than
    ``copy.deepcopy`` on a game's policy record; whatever does not pickle is copied by ``copy.deepcopy``."""
    try:
        return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))  # our own bytes, read back at once
    except Exception:
        return copy.deepcopy(value)


class Seat(ABC):
    """What the arena needs from one side of one game."""

    username: str
    can_challenge: bool = True

    @abstractmethod
    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None]) -> None: ...

    @abstractmethod
    async def ready(self) -> None:
        """Return once the user is logged in (the server confirmed it)."""

    async def challenge(self, opponent: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} only accepts challenges")

    @abstractmethod
    async def accept(self, opponent: str) -> None:
        """Accept the opponent's challenge; may return when the battle is over."""

    @abstractmethod
    async def close(self, healthy: bool) -> None:
        """The game is over (or voided, `healthy` False): release the seat."""

    @property
    @abstractmethod
    def idle_since(self) -> float:
        """time.monotonic() of the seat's last sign of life."""

    @property
    def thinking(self) -> bool:
        return False

    @property
    def thinking_since(self) -> float | None:
        """time.monotonic() when the current choice started, or None when the seat is not thinking."""
        return None

    @property
    def think_bound(self) -> float | None:
        """The longest one choice may take (e.g. a model's deadline × attempts + waits); None: unbounded."""
        return None

    @property
    def failure(self) -> BaseException | None:
        return None

    @property
    def connection_lost(self) -> str | None:
        """Why the seat's own connection to the server is gone while its game is played, or None."""
        return None

    def summary(self) -> dict[str, Any]:
        return {}

    def decisions(self) -> list[DecisionRecord]:
        return []

    async def finish(self) -> tuple[dict[str, Any], list[DecisionRecord]]:
        """The game is over: stop the player (no more choices, nothing more spent) and take its summary and
        decisions together, once; nothing the player does afterwards changes them."""
        return snapshot((self.summary(), self.decisions()))


class PokeEnvSeat(Seat):
    """A fresh poke-env player (PokéBench hooks mixed in) for exactly one game, on a connection of its own or one
    taken over from an earlier game (`pool`, see :mod:`pokebench.player.connections`)."""

    def __init__(self, factory: Callable[..., BenchPlayer], username: str, address: ServerAddress,
                 battle_format: str, pool: ConnectionPool | None = None) -> None:
        self.username = username
        self.player: BenchPlayer = factory(  # the arena gives every poke-env player the hooks
            account_configuration=AccountConfiguration(username, None),
            server_configuration=ServerConfiguration(address.websocket_url, "http://127.0.0.1:9/unused"),
            battle_format=battle_format,
            max_concurrent_battles=1,
            start_timer_on_battle_start=False,
            log_level=logging.CRITICAL + 1,  # poke-env says nothing: what it meets reaches the arena, which records it
            start_listening=False,
        )
        self.pool = pool
        self.token = login_token(address.admin_token, username)
        client = self.player.ps_client
        taken, dropped = pool.take(address.websocket_url) if pool is not None else (None, [])
        for connection in dropped:
            asyncio.ensure_future(shut(connection))
        if taken is None:
            _log_in_with_token(self.player, self.token)
            client._listening_coroutine = asyncio.run_coroutine_threadsafe(client.listen(), client.loop)
            taken = Connection(client, address.websocket_url)
        else:
            taken.lend(client)
        self.connection = taken
        #: Whether the seat's connection was taken over from an earlier game (it renames instead of logging in).
        self.renames = taken.reader is not client

    @classmethod
    async def create(cls, factory: Callable[..., BenchPlayer], username: str, address: ServerAddress,
                     battle_format: str, pool: ConnectionPool | None = None) -> "PokeEnvSeat":
        """The seat, built on poke-env's loop in one step and awaited. Built elsewhere, poke-env's ``Player``
        makes each of its queues, events and locks on its loop with a blocking call, nine round trips per player
        that stop the caller's loop (the arena's) while poke-env's loop is busy with the games in flight.
        On a connection taken over, the rename is sent here; `ready` waits for it as for a log-in."""
        async def build() -> PokeEnvSeat:
            seat = cls(factory, username, address, battle_format, pool)
            if seat.renames:
                with contextlib.suppress(Exception):  # a connection that closed now: `ready` says so
                    await _rename(seat.player.ps_client, seat.token)
            return seat

        return await in_poke_loop(build())

    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None]) -> None:
        self.player.begin_game(context, on_failure)

    async def _library(self, what: str, call: Awaitable[T]) -> T:
        """Await a call into poke-env; whatever it raises (its assertions, a closed websocket, a time-out) is a
        :class:`HarnessFault` of this game that says what the seat was doing, never an error of the run."""
        try:
            return await call
        except HarnessFault:
            raise
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():  # the arena cancels: not a fault
                raise
            raise HarnessFault(f"{self.username} could not {what}: poke-env cancelled it") from None
        except Exception as err:
            raise HarnessFault(f"{self.username} could not {what}: {fault_text(err)}") from err

    async def ready(self) -> None:
        """Logged in, or a :class:`HarnessFault` as soon as the connection closes or `LOGIN_TIMEOUT` passes
        (poke-env's own ``wait_for_login`` would poll out its whole wait, then fail an assertion)."""
        client = self.player.ps_client
        listening = client._listening_coroutine

        async def logged_in_or_closed() -> None:
            closed = asyncio.wrap_future(listening)
            login = asyncio.ensure_future(client.logged_in.wait())
            try:
                await asyncio.wait({closed, login}, timeout=LOGIN_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
            finally:
                login.cancel()
            if client.logged_in.is_set():
                return
            raise HarnessFault(f"{self.username} was not logged in: "
                               + ("its connection closed first" if listening.done()
                                  else f"no confirmation within {LOGIN_TIMEOUT:g} s"))

        await self._library("log in", in_poke_loop(logged_in_or_closed(), timeout=LOGIN_TIMEOUT + 5))

    async def challenge(self, opponent: str) -> None:
        await self._library(f"challenge {opponent}", self.player.send_challenges(opponent, 1))

    async def accept(self, opponent: str) -> None:
        await self._library(f"accept the challenge of {opponent}", self.player.accept_challenges(opponent, 1))

    async def close(self, healthy: bool) -> None:
        """A healthy game's open connection goes back to the pool for the next game; any other is closed.

        The logger poke-env made for the player's name is dropped from ``logging``'s registry: every name is
        one game's, and each logger made after it walked them all (``setLevel``), 1 ms a player at 20,000."""
        logging.Logger.manager.loggerDict.pop(self.username, None)
        if healthy and self.pool is not None:
            pool = self.pool

            async def give_back() -> bool:
                if not self.connection.open():
                    return False
                self.connection.idle(list(self.player.battles))
                pool.give(self.connection)
                return True

            with contextlib.suppress(Exception):
                if await in_poke_loop(give_back(), timeout=5):
                    return
        client = self.player.ps_client
        try:
            await in_poke_loop(client.stop_listening(), timeout=5)
        except Exception:  # already closed by the server, or never opened
            pass
        # A connection still being opened (to a server that was stopped and goes on later) must not log in
        # afterwards: it would hold this game's name on the server, and its replay could never log in.
        client._listening_coroutine.cancel()

    @property
    def connection_lost(self) -> str | None:
        listening = self.player.ps_client._listening_coroutine
        return f"the websocket of {self.username} closed" if listening is not None and listening.done() else None

    @property
    def idle_since(self) -> float:
        return self.player.last_activity

    @property
    def thinking(self) -> bool:
        return self.player.thinking

    @property
    def thinking_since(self) -> float | None:
        return self.player.thinking_since

    @property
    def think_bound(self) -> float | None:
        return self.player.think_bound() if isinstance(self.player, BoundsThinking) else None

    @property
    def failure(self) -> BaseException | None:
        return self.player.failure

    async def finish(self) -> tuple[dict[str, Any], list[DecisionRecord]]:
        async def on_poke_loop() -> tuple[dict[str, Any], list[DecisionRecord]]:
            # on the loop where the player decides: no decision can start after end_game or interleave with the snapshot
            await self.player.end_game_settled()
            return snapshot((self.summary(), self.decisions()))

        return await in_poke_loop(on_poke_loop(), timeout=10)

    def summary(self) -> dict[str, Any]:
        p = self.player
        return {"class": type(p).__name__, "decisions": p.decisions, "refusals": p.refusals,
                "choice_errors": p.choice_errors, **(p.game_summary() if isinstance(p, SummarizesGame) else {}),
                **({"searches_with_engine": True} if isinstance(p, SearchesWithEngine) and p.searches_with_engine
                   else {})}

    def decisions(self) -> list[DecisionRecord]:
        return list(self.player.decision_log) if isinstance(self.player, LogsDecisions) else []


class ExternalCompetitor(ABC):
    """A competitor that runs as its own program (e.g. Foul Play) and only accepts challenges.

    One instance serves a whole run; the arena asks it for a seat per game and closes
    the seat when the game is over. ``max_in_flight`` bounds its games at once.
    """

    max_in_flight: int = 1

    @classmethod
    def preflight(cls, **options: Any) -> None:
        """Raise a ValueError naming what to install or set, before any game is played."""

    @abstractmethod
    async def seat(self, address: ServerAddress, spec: GameSpec, side: str) -> Seat: ...

    async def shutdown(self) -> None:
        """Stop every process of the competitor (the run is over)."""
