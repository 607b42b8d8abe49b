"""Plays planned games on a PokéBench Showdown server, several at once.

For each game the arena takes one seat per side (a fresh poke-env player, or a
process of an external program such as Foul Play; see :mod:`pokebench.player.seats`),
registers the game's seeds and side order with the server plugin, lets the players
battle by the ordinary challenge protocol, and returns the record that the plugin
sends when the battle ends.

A game that cannot finish (a player raised, the battle stalled, the server died or
hung, its simulator process crashed, a player's connection failed or closed, at whatever
moment of the game) is voided and returned as a :class:`HarnessError`: the caller records
it and plays the game again; it never becomes a result.

The server is watched while games are in flight: its process must be alive, and the
plugin must answer a ping within ``liveness_timeout`` seconds. A server that does not
(SIGSTOPped, hung) is killed and restarted, like one that died; a simulator child that
dies is reported by the plugin at once and voids only its own games.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncGenerator, Awaitable, Callable, Protocol, Sequence

from poke_env.data import GenData
from websockets.exceptions import WebSocketException

from pokebench.player.bench_player import BenchPlayer, GameContext
from pokebench.player.connections import ConnectionPool, shut
from pokebench.player.decisions import DecisionRecord
from pokebench.player.faults import HarnessFault, RunStopper, fault_text
from pokebench.games import GameSpec
from pokebench.player.seats import ExternalCompetitor, PokeEnvSeat, Seat, in_poke_loop, showdown_username
from pokebench.showdown.address import ServerAddress
from pokebench.showdown.admin import AdminClient, AdminError, SimulatorCrashed
from pokebench.util import utc_now

log = logging.getLogger(__name__)

#: A BenchPlayer class (or factory of fresh ones: poke-env players with the hooks), or an external competitor.
PlayerFactory = Callable[..., BenchPlayer] | ExternalCompetitor


class ShowdownServer(Protocol):
    restarts: int

    @property
    def address(self) -> ServerAddress | None: ...  # None until it is started

    def is_alive(self) -> bool: ...
    def mark_for_restart(self, address: ServerAddress | None, why: str) -> None: ...
    def ensure_running(self, unresponsive: bool = False) -> bool: ...


@functools.cache
def _settle_heap(battle_format: str) -> None:
    """Once per process and format, before its first game: poke-env's data for the format loaded (species, moves,
    learnsets: most of the objects the process holds) and every object alive then kept out of the garbage
    collector's work from now on (``gc.freeze``); they live as long as the process anyway. Without it each full
    collection walked them all on poke-env's loop: 0.2-0.5 s in which no game moved, and a quarter of the
    Python time per turn of Random against Random went to collections (100 games, 8 in flight)."""
    with contextlib.suppress(Exception):  # a format poke-env does not know: its players load what they need
        GenData.from_format(battle_format)
    gc.collect()
    gc.freeze()


@dataclass
class GameResult:
    spec: GameSpec
    record: dict[str, Any]
    players: dict[str, Any]
    started_at: str
    decisions: list[DecisionRecord] = field(default_factory=list)


@dataclass
class HarnessError:
    spec: GameSpec
    cause: str
    detail: str
    #: What the players had done when the game was voided (their spend is kept, the game is not).
    players: dict[str, Any] = field(default_factory=dict)
    decisions: list[DecisionRecord] = field(default_factory=list)
    #: A player failed with an error no retry can fix (a :class:`RunStopper`): the run should stop.
    fatal: bool = False

    @property
    def description(self) -> str:
        """The cause, and the detail in brackets where it says more (a game no seat explains has the cause as detail)."""
        return f"{self.cause} ({self.detail})" if self.detail not in ("", self.cause) else self.cause


@dataclass
class NotStarted:
    """A game the arena did not start because ``admit`` said no (e.g. a spending cap)."""

    spec: GameSpec
    reason: str


@dataclass
class _Connection:
    """The harness's connection to one life of the server; replaced when the server restarts."""

    admin: AdminClient
    address: ServerAddress
    dead: asyncio.Event = field(default_factory=asyncio.Event)
    #: Why `dead` was set: "server died", "server hung" when it stopped answering pings, or "server connection
    #: lost" when the connection closed while the server ran on.
    cause: str = "server died"
    detail: str = ""


class Arena:
    """Plays games; ``async for outcome in arena.play(specs)`` yields each result or harness error."""

    def __init__(self, server: ShowdownServer, factories: dict[str, PlayerFactory], battle_format: str,
                 turn_limit: int, concurrency: int, per_player_limits: dict[str, int] | None = None,
                 stall_timeout: float = 300.0, matchup_order: Sequence[str] = (),
                 work_root: Path | None = None, admit: Callable[[GameSpec], str | None] | None = None,
                 settle: Callable[[GameResult | HarnessError], None] | None = None,
                 liveness_timeout: float = 30.0, stopped: Callable[[HarnessError], None] | None = None) -> None:
        self.server = server
        self.factories = factories
        self.battle_format = battle_format
        self.turn_limit = turn_limit
        self.concurrency = max(1, concurrency)
        self.stall_timeout = stall_timeout
        self.liveness_timeout = liveness_timeout
        self.liveness_interval = min(5.0, max(0.5, liveness_timeout / 2))
        self.work_root = work_root  # players' working folders: <work_root>/<player>/
        self.admit = admit  # asked just before a game starts: None to play it, or the reason not to
        self.settle = settle  # told of each game's end before the next game can be admitted
        #: Told of each game voided because the run stopped (Ctrl-C, SIGTERM, an error no retry fixes): the
        #: answers its players were given are paid, so they must be written although no outcome is yielded.
        self.stopped = stopped
        self.matchup_index = {m: i for i, m in enumerate(matchup_order)}
        self._limits = {name: asyncio.Semaphore(n) for name, n in (per_player_limits or {}).items() if n}
        self._connection: _Connection | None = None
        self._reconnect_lock = asyncio.Lock()
        self._in_flight: dict[str, dict[str, Seat]] = {}  # game id -> its seats, while it is played
        self._pool = ConnectionPool()  # poke-env players' connections between games (used on poke-env's loop)

    # ---- the server connection -----------------------------------------------------------
    async def _connect(self) -> _Connection:
        address = self.server.address
        if address is None:
            raise RuntimeError("the arena was given a Showdown server that is not started: start it first")
        admin = AdminClient(address, timeout=self.liveness_timeout)
        await admin.__aenter__()
        return _Connection(admin, address)

    async def _current(self) -> _Connection:
        async with self._reconnect_lock:
            conn = self._connection
            if conn is not None and not conn.dead.is_set() and not conn.admin.closed.is_set():
                return conn
            if conn is not None:
                await self._settle_closed(conn)  # closed under us before the watcher saw it
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(conn.admin.__aexit__(None, None, None), 5)
            # a server marked hung is restarted even if it answers again by now: the games voided meanwhile must not go on
            await asyncio.to_thread(self.server.ensure_running, conn is not None and conn.cause == "server hung")
            try:
                self._connection = await self._connect()
            except (OSError, asyncio.TimeoutError, AdminError, WebSocketException) as err:
                # No log-in within the deadline: restarted if it does not answer a ping either (it hangs),
                # then one more attempt; a second failure makes this game a harness error.
                log.warning("Could not connect to the Showdown server (%s); checking that it answers.", fault_text(err))
                await asyncio.to_thread(self.server.ensure_running, True)
                self._connection = await self._connect()
            return self._connection

    async def _outlived(self, grace: float = 1.0) -> bool:
        """Whether the server still runs `grace` seconds after a connection to it closed: a killed server closes
        its connections a moment before its process is seen to end."""
        deadline = time.monotonic() + grace
        while self.server.is_alive():
            if time.monotonic() >= deadline:
                return True
            await asyncio.sleep(0.1)
        return False

    async def _settle_closed(self, conn: _Connection) -> None:
        """Mark `conn`, whose connection closed, dead with its cause: the server died, or it runs on (then it is
        marked for restart). At once, whoever sees the close first: a round of games that ends with the game the
        close voided must leave the server marked, or the next round meets that game's players in it."""
        outlived = await self._outlived()
        if conn.dead.is_set():
            return
        if outlived:
            self._lost(conn)
        conn.dead.set()

    def _condemn(self, conn: _Connection, cause: str, detail: str, why: str) -> None:
        """End `conn` for a server that failed the harness while its process runs on (`why` says how, for the
        restart's line): whoever connects next restarts it, should this arena stop before it does."""
        conn.cause, conn.detail = cause, detail
        self.server.mark_for_restart(conn.address, why)
        conn.dead.set()

    def _lost(self, conn: _Connection) -> None:
        """The connection closed while the server runs on (a pause past the websocket's keep-alive drops the
        connection, not the server): the games it still plays there would keep their players' names, and their
        replays under the same names stall. So it is restarted, as a hung one is."""
        log.warning("The harness's connection to the Showdown server closed while the server ran on.")
        self._condemn(conn, "server connection lost", "the harness's own connection to the server closed",
                      "dropped the harness's connection")

    async def _watch_server(self) -> None:
        """Mark the connection dead when the server exits, drops us, or misses the liveness deadline."""
        last_ping = time.monotonic()
        while True:
            await asyncio.sleep(0.5)
            conn = self._connection
            if conn is None or conn.dead.is_set():
                continue
            if not self.server.is_alive():
                conn.dead.set()
            elif conn.admin.closed.is_set():
                await self._settle_closed(conn)
                if conn.cause == "server connection lost":
                    with contextlib.suppress(Exception):  # restart it now, not when the next game starts
                        await self._current()
            elif time.monotonic() - last_ping >= self.liveness_interval:
                last_ping = time.monotonic()
                try:
                    await conn.admin.ping(timeout=self.liveness_timeout)
                except asyncio.TimeoutError:
                    if self._connection is conn and not conn.dead.is_set():
                        log.warning("The Showdown server did not answer a ping within %g s.", self.liveness_timeout)
                        self._condemn(conn, "server hung",
                                      f"no answer to the liveness ping within {self.liveness_timeout:g} s",
                                      "did not answer the harness in time")
                        with contextlib.suppress(Exception):  # restart it now, not when the next game starts
                            await self._current()
                except Exception:  # a refused or lost command: the checks above see a lost connection
                    pass  # (the watcher itself must outlive any fault: without it a hang is never seen)

    # ---- playing --------------------------------------------------------------------------
    async def play(self, specs: Sequence[GameSpec]) -> AsyncGenerator[GameResult | HarnessError | NotStarted, None]:
        _settle_heap(self.battle_format)
        gate = asyncio.Semaphore(self.concurrency)
        watcher = asyncio.create_task(self._watch_server())

        async def one(spec: GameSpec) -> GameResult | HarnessError | NotStarted:
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
            await self._close_idle()

    async def _close_idle(self) -> None:
        """Close the players' connections kept for games that will not come."""
        async def close_all() -> None:
            await asyncio.gather(*(shut(connection) for connection in self._pool.drain()))

        with contextlib.suppress(Exception):
            await in_poke_loop(close_all(), timeout=10)

    async def _play_limited(self, spec: GameSpec) -> GameResult | HarnessError | NotStarted:
        limits = [self._limits[name] for name in sorted({spec.p1, spec.p2}) if name in self._limits]
        for sem in limits:
            await sem.acquire()
        try:
            reason = self.admit(spec) if self.admit is not None else None
            if reason is not None:
                return NotStarted(spec, reason)
            outcome = await self.play_one(spec)
            if self.settle is not None:
                self.settle(outcome)
            return outcome
        finally:
            for sem in limits:
                sem.release()

    async def _make_seat(self, name: str, spec: GameSpec, side: str, address: ServerAddress) -> Seat:
        factory = self.factories[name]
        if isinstance(factory, ExternalCompetitor):
            return await factory.seat(address, spec, side)
        username = showdown_username(name, self.matchup_index.get(spec.matchup, 0), spec)
        return await PokeEnvSeat.create(factory, username, address, self.battle_format, self._pool)

    async def play_one(self, spec: GameSpec) -> GameResult | HarnessError:
        """Play one game start to end; never raises for a game-level failure."""
        try:
            conn = await self._current()
        except Exception as err:  # the server cannot be (re)started: a harness error for this game
            return HarnessError(spec, "server unavailable", fault_text(err))
        started_at = utc_now()
        seats: dict[str, Seat] = {}
        failure = asyncio.Event()
        loop = asyncio.get_running_loop()
        healthy = False
        battle_tasks: list[asyncio.Future[None]] = []

        def on_failure(_err: BaseException) -> None:  # called from poke-env's thread
            loop.call_soon_threadsafe(failure.set)

        self._in_flight[spec.game_id] = seats
        try:
            for side, name, team_seed in (("p1", spec.p1, spec.p1_team_seed), ("p2", spec.p2, spec.p2_team_seed)):
                seats[side] = await self._make_seat(name, spec, side, conn.address)
                context = GameContext(spec.game_id, side, spec.battle_seed, team_seed,
                                      extra={"player": name, "run": spec.run, "turn_limit": self.turn_limit},
                                      work_dir=self.work_root / name if self.work_root else None)
                seats[side].begin_game(context, on_failure)
            await self._unless_dead(conn, asyncio.gather(*(seat.ready() for seat in seats.values())))
            challenger, acceptor = ("p1", "p2") if seats["p1"].can_challenge else ("p2", "p1")
            if not seats[challenger].can_challenge:
                raise ValueError(f"neither {spec.p1} nor {spec.p2} can send a challenge: two external programs cannot meet")
            record_future = conn.admin.expect_record(spec.game_id)
            await conn.admin.register({
                "game_id": spec.game_id, "format": self.battle_format,
                "p1": seats["p1"].username, "p2": seats["p2"].username,
                "battle_seed": spec.battle_seed, "p1_team_seed": spec.p1_team_seed,
                "p2_team_seed": spec.p2_team_seed, "turn_limit": self.turn_limit,
            })
            battle_tasks += [
                asyncio.ensure_future(seats[acceptor].accept(seats[challenger].username)),
                asyncio.ensure_future(seats[challenger].challenge(seats[acceptor].username)),
            ]
            outcome = await self._wait_for_end(record_future, failure, conn, seats, battle_tasks)
            if isinstance(outcome, tuple):
                cause, detail = outcome
                await self._void(conn, spec)
                players, decisions = await self._finish(spec, seats)
                stoppers = [f"{seat.failure}" for seat in seats.values() if isinstance(seat.failure, RunStopper)]
                return HarnessError(spec, cause, "; ".join(stoppers) or detail or self._failure_detail(seats, cause),
                                    players, decisions, fatal=bool(stoppers))
            players, decisions = await self._finish(spec, seats)  # first: no player acts after the end
            await asyncio.wait(battle_tasks, timeout=30)
            healthy = True
            for summary in players.values():  # a player that had to give up says why (e.g. context_length)
                if summary.get("end_reason"):
                    outcome = {**outcome, "end_reason": summary["end_reason"]}
            return GameResult(spec, outcome, players, started_at, decisions)
        except (AdminError, HarnessFault, asyncio.TimeoutError, OSError, ValueError) as err:
            await self._void(conn, spec)
            players, decisions = await self._finish(spec, seats)
            return HarnessError(spec, conn.cause if conn.dead.is_set() else "harness connection failed", fault_text(err),
                                players, decisions, fatal=isinstance(err, RunStopper))
        except asyncio.CancelledError:  # the run stops: the game in flight is voided, not left running
            await self._void(conn, spec)
            players, decisions = await self._finish(spec, seats)
            if self.stopped is not None and decisions:  # paid answers; a game that asked nothing leaves no trace
                try:
                    self.stopped(HarnessError(spec, "run stopped", "the run stopped with the game in flight",
                                              players, decisions))
                except Exception:  # a store that cannot be written: the run's own error says so
                    log.exception("Could not record the answers of %s, voided as the run stopped.", spec.game_id)
            raise
        finally:
            self._in_flight.pop(spec.game_id, None)
            conn.admin.forget_record(spec.game_id)
            for task in battle_tasks:  # a voided game's challenge/accept may still be pending
                task.cancel()
            await asyncio.gather(*battle_tasks, return_exceptions=True)
            await asyncio.gather(*(seat.close(healthy) for seat in seats.values()), return_exceptions=True)

    def live_decisions(self) -> list[DecisionRecord]:
        """The decisions logged so far in the games being played (an LLM's answers as they arrive)."""
        return [d for seats in list(self._in_flight.values()) for seat in list(seats.values()) for d in seat.decisions()]

    @staticmethod
    async def _finish(spec: GameSpec, seats: dict[str, Seat]) -> tuple[dict[str, Any], list[DecisionRecord]]:
        """Stop every seat and take the players' summaries and decisions, together and once."""
        players: dict[str, Any] = {}
        decisions: list[DecisionRecord] = []
        for side, name in (("p1", spec.p1), ("p2", spec.p2)):
            if side not in seats:
                continue
            try:
                summary, logged = await seats[side].finish()
            except Exception:  # a seat that cannot say more has nothing more to record
                summary, logged = {}, []
            players[side] = {"player": name, "username": seats[side].username, **summary}
            decisions.extend(logged)
        return players, decisions

    async def _wait_for_end(self, record_future: asyncio.Future[dict[str, Any]], failure: asyncio.Event,
                            conn: _Connection, seats: dict[str, Seat],
                            battle_tasks: Sequence[asyncio.Future[None]] = ()) -> dict[str, Any] | tuple[str, str]:
        """The game's record, or the cause of a harness error and its detail ("" if the seats say it).

        A seat's challenge or accept that raised, or a seat whose connection closed, ends the game at once
        (the server would wait for that player forever: the battle timer is off)."""
        failed = asyncio.ensure_future(failure.wait())
        died = asyncio.ensure_future(conn.dead.wait())
        try:
            while True:
                watched = [task for task in battle_tasks if not task.done()]
                waiting: set[asyncio.Future[Any]] = {record_future, failed, died, *watched}
                done, _ = await asyncio.wait(waiting, timeout=1.0,
                                             return_when=asyncio.FIRST_COMPLETED)
                if record_future in done:
                    error = record_future.exception()
                    if error is None:
                        return record_future.result()
                    if isinstance(error, SimulatorCrashed):
                        return error.cause, str(error)
                    await self._settle_closed(conn)  # the server died or hung, or it dropped the connection
                    return conn.cause, conn.detail
                if failed in done:
                    return "player failed", ""
                if died in done:
                    return conn.cause, conn.detail
                raised = [task.exception() for task in battle_tasks if task.done() and not task.cancelled()]
                lost = [fault_text(err) for err in raised if err is not None]
                lost += [f"{side}: {seat.connection_lost}" for side, seat in seats.items() if seat.connection_lost]
                if lost:
                    if not self.server.is_alive():  # its players' connections closed with it
                        return "server died", ""
                    return "player connection lost", "; ".join(lost)
                now = time.monotonic()
                idle = now - max(seat.idle_since for seat in seats.values())
                if idle > self.stall_timeout and not any(seat.thinking for seat in seats.values()):
                    return f"battle stalled ({self.stall_timeout:.0f} s without a message)", ""
                for seat in seats.values():  # a thinking player has a bound of its own
                    since, bound = seat.thinking_since, seat.think_bound
                    if seat.thinking and since is not None and bound is not None and now - since > bound:
                        return f"player thinking too long ({now - since:.0f} s, bound {bound:.0f} s)", ""
        finally:
            failed.cancel()
            died.cancel()

    @staticmethod
    async def _unless_dead(conn: _Connection, step: Awaitable[Any]) -> None:
        """Await `step` (players logging in), or raise a :class:`HarnessFault` as soon as the server dies or hangs."""
        task, died = asyncio.ensure_future(step), asyncio.ensure_future(conn.dead.wait())
        try:
            done, _ = await asyncio.wait({task, died}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            died.cancel()
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
        if task not in done:
            raise HarnessFault(f"{conn.cause} while the players logged in ({conn.detail or 'no detail'})")
        task.result()

    async def _void(self, conn: _Connection, spec: GameSpec) -> None:
        if conn.dead.is_set():
            return
        try:
            await conn.admin.void(spec.game_id)
        except Exception:  # the server is gone, or it runs on with the game, unreached: then it is restarted
            if conn.admin.closed.is_set():
                await self._settle_closed(conn)

    @staticmethod
    def _failure_detail(seats: dict[str, Seat], cause: str) -> str:
        failures = [f"{side}: {fault_text(seat.failure)}" for side, seat in seats.items() if seat.failure]
        return "; ".join(failures) or cause
