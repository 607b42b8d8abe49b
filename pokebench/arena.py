"""Plays planned games on a PokéBench Showdown server, several at once.

For each game the arena logs in one fresh poke-env player per side (with names
derived from the game, so the same config gives the same battle and input logs),
registers the game's seeds and side order with the server plugin, lets the players
battle by the ordinary challenge protocol, and returns the record that the plugin
sends when the battle ends.

A game that cannot finish (a player raised, the battle stalled, the server died)
is voided and returned as a :class:`HarnessError`: the caller records it and the
game is played again on the next start; it never becomes a result.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Protocol, Sequence

from poke_env import AccountConfiguration, ServerConfiguration
from poke_env.concurrency import POKE_LOOP
from poke_env.player import Player

from pokebench.bench_player import GameContext
from pokebench.schedule import GameSpec
from pokebench.server import ServerAddress
from pokebench.showdown_admin import AdminClient, AdminError
from pokebench.store import now

log = logging.getLogger(__name__)

PlayerFactory = Callable[..., Player]


class ShowdownServer(Protocol):
    address: ServerAddress
    restarts: int

    def is_alive(self) -> bool: ...
    def ensure_running(self) -> bool: ...


@dataclass
class GameResult:
    spec: GameSpec
    record: dict[str, Any]
    players: dict[str, Any]
    started_at: str
    decisions: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class HarnessError:
    spec: GameSpec
    cause: str
    detail: str


def showdown_username(player: str, matchup_index: int, spec: GameSpec) -> str:
    """A Showdown name (at most 18 characters) unique among the games that can run at once."""
    slug = re.sub(r"[^a-z0-9]", "", player.lower())[:7] or "player"
    return f"{slug}{matchup_index:02d}{spec.pair:05d}{'ab'[spec.game - 1]}{'12'[spec.p1 != player]}"


async def in_poke_loop(coro: Any, timeout: float | None = None) -> Any:
    """Run a coroutine on poke-env's own event loop (where its players live) and await it here."""
    future = asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, POKE_LOOP))
    return await asyncio.wait_for(future, timeout)


@dataclass
class _Connection:
    """The harness's connection to one life of the server; replaced when the server restarts."""

    admin: AdminClient
    address: ServerAddress
    dead: asyncio.Event = field(default_factory=asyncio.Event)


class Arena:
    """Plays games; ``async for outcome in arena.play(specs)`` yields each result or harness error."""

    def __init__(self, server: ShowdownServer, factories: dict[str, PlayerFactory], battle_format: str,
                 turn_limit: int, concurrency: int, per_player_limits: dict[str, int] | None = None,
                 stall_timeout: float = 300.0, matchup_order: Sequence[str] = ()) -> None:
        self.server = server
        self.factories = factories
        self.battle_format = battle_format
        self.turn_limit = turn_limit
        self.concurrency = max(1, concurrency)
        self.stall_timeout = stall_timeout
        self.matchup_index = {m: i for i, m in enumerate(matchup_order)}
        self._limits = {name: asyncio.Semaphore(n) for name, n in (per_player_limits or {}).items() if n}
        self._connection: _Connection | None = None
        self._reconnect_lock = asyncio.Lock()

    # ---- the server connection -----------------------------------------------------------
    async def _connect(self) -> _Connection:
        admin = AdminClient(self.server.address)
        await admin.__aenter__()
        return _Connection(admin, self.server.address)

    async def _current(self) -> _Connection:
        async with self._reconnect_lock:
            conn = self._connection
            if conn is not None and not conn.dead.is_set() and not conn.admin.closed.is_set():
                return conn
            if conn is not None:
                conn.dead.set()
                await conn.admin.__aexit__(None, None, None)
            if await asyncio.to_thread(self.server.ensure_running):
                log.warning("The Showdown server had died and was restarted (restart %d).", self.server.restarts)
            self._connection = await self._connect()
            return self._connection

    async def _watch_server(self) -> None:
        while True:
            await asyncio.sleep(0.5)
            conn = self._connection
            if conn is not None and (not self.server.is_alive() or conn.admin.closed.is_set()):
                conn.dead.set()

    # ---- playing --------------------------------------------------------------------------
    async def play(self, specs: Sequence[GameSpec]) -> AsyncIterator[GameResult | HarnessError]:
        gate = asyncio.Semaphore(self.concurrency)
        watcher = asyncio.create_task(self._watch_server())

        async def one(spec: GameSpec) -> GameResult | HarnessError:
            async with gate:
                return await self._play_limited(spec)

        tasks = [asyncio.create_task(one(spec)) for spec in specs]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            watcher.cancel()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self._connection is not None:
                await self._connection.admin.__aexit__(None, None, None)

    async def _play_limited(self, spec: GameSpec) -> GameResult | HarnessError:
        limits = [self._limits[name] for name in sorted({spec.p1, spec.p2}) if name in self._limits]
        for sem in limits:
            await sem.acquire()
        try:
            return await self.play_one(spec)
        finally:
            for sem in limits:
                sem.release()

    def _make_player(self, name: str, spec: GameSpec, address: ServerAddress) -> Player:
        username = showdown_username(name, self.matchup_index.get(spec.matchup, 0), spec)
        return self.factories[name](
            account_configuration=AccountConfiguration(username, None),
            server_configuration=ServerConfiguration(address.websocket_url, "http://127.0.0.1:9/unused"),
            battle_format=self.battle_format,
            max_concurrent_battles=1,
            start_timer_on_battle_start=False,
            log_level=logging.CRITICAL,
        )

    async def play_one(self, spec: GameSpec) -> GameResult | HarnessError:
        """Play one game start to end; never raises for a game-level failure."""
        try:
            conn = await self._current()
        except Exception as err:  # the server cannot be (re)started: a harness error for this game
            return HarnessError(spec, "server unavailable", repr(err))
        started_at = now()
        seats: dict[str, Player] = {}
        failure = asyncio.Event()
        loop = asyncio.get_running_loop()
        try:
            for side, name, team_seed in (("p1", spec.p1, spec.p1_team_seed), ("p2", spec.p2, spec.p2_team_seed)):
                player = self._make_player(name, spec, conn.address)
                player.begin_game(GameContext(spec.game_id, side, spec.battle_seed, team_seed),
                                  on_failure=lambda _err: loop.call_soon_threadsafe(failure.set))
                seats[side] = player
            for player in seats.values():
                await in_poke_loop(player.ps_client.wait_for_login(wait_for=30), timeout=35)
            record_future = conn.admin.expect_record(spec.game_id)
            await conn.admin.register({
                "game_id": spec.game_id, "format": self.battle_format,
                "p1": seats["p1"].username, "p2": seats["p2"].username,
                "battle_seed": spec.battle_seed, "p1_team_seed": spec.p1_team_seed,
                "p2_team_seed": spec.p2_team_seed, "turn_limit": self.turn_limit,
            })
            battle_tasks = [
                asyncio.ensure_future(seats["p2"].accept_challenges(seats["p1"].username, 1)),
                asyncio.ensure_future(seats["p1"].send_challenges(seats["p2"].username, 1)),
            ]
            outcome = await self._wait_for_end(record_future, failure, conn, seats)
            if isinstance(outcome, str):
                await self._void(conn, spec)
                return HarnessError(spec, outcome, self._failure_detail(seats, outcome))
            await asyncio.wait(battle_tasks, timeout=30)
            return GameResult(spec, outcome, self._player_summary(spec, seats), started_at,
                              self._decisions(seats))
        except (AdminError, AssertionError, asyncio.TimeoutError, OSError) as err:
            await self._void(conn, spec)
            return HarnessError(spec, "harness connection failed", repr(err))
        finally:
            conn.admin.forget_record(spec.game_id)
            for player in seats.values():
                try:
                    await in_poke_loop(player.ps_client.stop_listening(), timeout=5)
                except Exception:  # already closed by the server
                    pass

    async def _wait_for_end(self, record_future: asyncio.Future[dict[str, Any]], failure: asyncio.Event,
                            conn: _Connection, seats: dict[str, Player]) -> dict[str, Any] | str:
        """The game's record, or the cause of a harness error."""
        failed = asyncio.ensure_future(failure.wait())
        died = asyncio.ensure_future(conn.dead.wait())
        try:
            while True:
                done, _ = await asyncio.wait({record_future, failed, died}, timeout=1.0,
                                             return_when=asyncio.FIRST_COMPLETED)
                if record_future in done:
                    try:
                        return record_future.result()
                    except AdminError:
                        return "server connection lost"
                if failed in done:
                    return "player raised an exception"
                if died in done:
                    return "server died"
                idle = time.monotonic() - max(p.last_activity for p in seats.values())
                if idle > self.stall_timeout and not any(p.thinking for p in seats.values()):
                    return f"battle stalled ({self.stall_timeout:.0f} s without a message)"
        finally:
            failed.cancel()
            died.cancel()

    async def _void(self, conn: _Connection, spec: GameSpec) -> None:
        if conn.dead.is_set():
            return
        try:
            await conn.admin.void(spec.game_id)
        except Exception:  # the server is gone; nothing left to void
            pass

    @staticmethod
    def _failure_detail(seats: dict[str, Player], cause: str) -> str:
        failures = [f"{side} ({type(p).__name__}): {p.failure!r}" for side, p in seats.items() if p.failure]
        return "; ".join(failures) or cause

    @staticmethod
    def _player_summary(spec: GameSpec, seats: dict[str, Player]) -> dict[str, Any]:
        return {
            side: {"player": name, "username": seats[side].username, "class": type(seats[side]).__name__,
                   "decisions": seats[side].decisions, "refusals": seats[side].refusals,
                   "choice_errors": seats[side].choice_errors, **getattr(seats[side], "game_summary", lambda: {})()}
            for side, name in (("p1", spec.p1), ("p2", spec.p2))
        }

    @staticmethod
    def _decisions(seats: dict[str, Player]) -> list[dict[str, Any]]:
        return [d for side in ("p1", "p2") for d in getattr(seats[side], "decision_log", [])]
