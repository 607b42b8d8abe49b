"""Foul Play (pmariglia/foul-play, GPL-3.0) as a reference opponent, run as its own program.

Foul Play is not part of PokéBench: the user installs it (README, "Foul Play";
installation.py says where PokéBench looks), and this adapter starts it from that
installation, logged in to our local server in its ``accept_challenge`` mode. A run uses it
like any other player (conf/player/foul_play.yaml); the arena plays and records its games
like every other game.

* Installation: :func:`~pokebench.players.foul_play.installation.find_installation`.
  :meth:`FoulPlay.preflight` refuses a missing checkout, missing requirements, and a
  poke-engine built without terastallization; it makes the random-battle set table from
  the pinned server (sets.py). Another commit than the method's plays, with a warning.
* Foul Play runs through our launcher (launcher.py), which answers its login-server
  request and its set download locally, in its own process, and beats a heartbeat.
* Search: ``search_ms_per_move`` (the method's "200 ms per move") is Foul Play's search
  time per decision. Foul Play's own ``--search-time-ms`` is per sampled position, and at
  25c976f each decision searches 4 positions at half that time early in a game and 2 at
  the full time later (see :data:`POSITIONS_TIME`), one after the other: so
  ``--search-time-ms`` is ``search_ms_per_move / 2`` (recorded as ``search_time_ms``).
* One battle at a time per process: ``max_in_flight`` processes under different names
  (default: one per core, less one for the server and the other players). A process takes
  a game only once it waits for a challenge (see process.py).
* Failures: a process that exits, owes a decision for ``decision_timeout`` seconds, stops
  beating its heartbeat (frozen: searching or waiting for a request) for
  half of ``decision_timeout`` (at least 5 s, at most 15 s), or does not start the battle within
  ``accept_timeout``, fails its game at once (the arena voids it: a harness error, never a
  result, played again at the next start). After a voided game the process group is
  killed; the next game starts a fresh process. A ``|nametaken|`` at login is retried with
  a new name after an exponential backoff.
* Logs: Foul Play's output per game in ``<log_dir>/<game_id>.log`` (search dumps dropped,
  capped), and per process name in ``<log_dir>/<name>.log`` until its first game. The
  default ``log_dir`` is the player's folder in the run (``GameContext.work_dir``); outside
  a run, a temporary folder.
* Figures: one decision row per choice (turn, ``latency_s`` from the request to the choice,
  the choice), published like every player's time per decision; the summary of each game
  records the Foul Play commit, the poke-engine version and the search settings.

``command`` replaces the launcher and Foul Play by another program that takes Foul Play's
arguments and logs like it (the tests' stand-in, tests/support/foul_play_standin.py); it is the only
test seam.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from pokebench.player.bench_player import GameContext
from pokebench.player.decisions import DecisionRecord
from pokebench.player.faults import HarnessFault, RunStopper
from pokebench.games import GameSpec
from pokebench.player.seats import ExternalCompetitor, Seat
from pokebench.results.redaction import without_secrets
from pokebench.showdown.address import ServerAddress
from pokebench.util import usable_cpus
from pokebench.players.foul_play.installation import (LAUNCHER, PINNED_COMMIT, check_engine, check_layout,
                                                       engine_version, find_installation)
from pokebench.players.foul_play.launcher import EXIT_UNSUPPORTED
from pokebench.players.foul_play.process import HEARTBEAT_INTERVAL, FoulPlayProcess, LogSink
from pokebench.players.foul_play.sets import DEFAULT_TEAMS, ensure_sets

log = logging.getLogger(__name__)

#: Foul Play (25c976f, random battles, no battle timer, one search process) searches each
#: decision for 2 × its --search-time-ms: early in a game (at most 3 of the opponent's
#: Pokémon seen, the active one's moves unknown) 4 sampled positions at half the time
#: each, later 2 positions at the full time (fp/modes/random_battle.py, search_params),
#: one after the other.
POSITIONS_TIME = 2


class FoulPlayError(HarnessFault):
    """Foul Play failed (exited, froze, went silent, could not log in): a harness fault, so the
    arena records the game as a harness error and carries on."""


class FoulPlayUnsupported(FoulPlayError, RunStopper):
    """The launcher refused the checkout's layout (exit 78): every later start would too, so the run stops
    (the checkout changed under a run whose pre-flight check had passed)."""


def search_time_per_position(search_ms_per_move: int) -> int:
    """Foul Play's --search-time-ms for a search time per decision; a ValueError for a bad value."""
    value = int(search_ms_per_move) // POSITIONS_TIME
    if value < 2:
        raise ValueError(f"Foul Play's search_ms_per_move must be at least {2 * POSITIONS_TIME} ms (it is split over "
                         f"the sampled positions), not {search_ms_per_move}.")
    return value


def default_max_in_flight() -> int:
    """One process per core, less one core for the server and the other players; at least one."""
    return max(1, usable_cpus() - 1)


class _Slot:
    """A process name and its current process, restarted when it fails; serves one game at a time."""

    def __init__(self, owner: "FoulPlay", index: int) -> None:
        self.owner = owner
        self.base_name = f"{owner.name_prefix}{index + 1}"
        self.name = self.base_name
        self.renames = 0
        self.starts = 0
        self.process: FoulPlayProcess | None = None
        self.address: ServerAddress | None = None

    async def _start(self, address: ServerAddress, log_dir: Path) -> FoulPlayProcess:
        o = self.owner
        self.starts += 1
        self.address = address
        args = ["--websocket-uri", address.websocket_url, "--ps-username", self.name, "--bot-mode", "accept_challenge",
                "--pokemon-format", o.pokemon_format, "--search-time-ms", str(o.search_time_ms),
                "--search-parallelism", "1", "--search-threads", "1", "--run-count", "1000000000",
                "--log-level", "DEBUG", *o.extra_args]
        env = dict(without_secrets(), PYTHONUNBUFFERED="1", POKEBENCH_PARENT_PID=str(os.getpid()))
        process = FoulPlayProcess([*o.program, *args], self.name, log_dir, env, LogSink(log_dir / f"{self.name}.log"))
        await process.start()
        self.process = process
        return process

    async def stop(self) -> None:
        if self.process is not None:
            await self.process.kill()
            self.process = None

    async def prepare(self, address: ServerAddress, log_dir: Path) -> FoulPlayProcess:
        """A logged-in process waiting for a challenge: the current one, or a fresh one."""
        o = self.owner
        problems: list[str] = []
        for attempt in range(o.login_attempts):
            process = self.process
            if process is not None and (not process.alive or self.address != address):
                await self.stop()
                process = None
            if process is not None and process.logged_in.is_set():
                try:
                    await asyncio.wait_for(process.waiting.wait(), o.login_timeout)
                    return process
                except asyncio.TimeoutError:
                    problems.append(f"{self.name} did not return to waiting for a challenge")
                    await self.stop()
                    process = None
            if process is None:
                process = await self._start(address, log_dir)
            outcome = await self._login(process)
            if outcome == "ok":
                return process
            if process.returncode == EXIT_UNSUPPORTED:
                raise FoulPlayUnsupported(f"Foul Play's launcher refused its checkout (exit {EXIT_UNSUPPORTED}: the layout "
                                          f"changed during the run; {process.name}'s output in {log_dir} says how). "
                                          f"Check out the pinned commit {PINNED_COMMIT} again, or point FOULPLAY_DIR "
                                          "at a checkout of it, and start the run again.")
            problems.append(outcome)
            await self.stop()
            delay = min(o.backoff * 2 ** attempt, 30.0)
            if process.nametaken is not None:
                self.renames += 1
                self.name = f"{self.base_name}r{self.renames}"
            log.warning("Foul Play %s: %s; retrying as %s in %.1f s", process.name, outcome, self.name, delay)
            await asyncio.sleep(delay)
        raise FoulPlayError(f"Foul Play could not log in after {o.login_attempts} attempts: {'; '.join(problems)} "
                            f"(see {log_dir})")

    async def _login(self, process: FoulPlayProcess) -> str:
        timeout = self.owner.login_timeout
        try:
            await asyncio.wait_for(process.login_answer.wait(), timeout)
            if process.logged_in.is_set():
                await asyncio.wait_for(process.waiting.wait(), timeout)
                return "ok"
        except asyncio.TimeoutError:
            return f"{process.name} was not logged in after {timeout:.0f} s"
        if process.nametaken is not None:
            return f"name {process.name} taken ({process.nametaken})"
        return f"{process.name} exited with code {process.returncode} before it was logged in"


class FoulPlaySeat(Seat):
    """Foul Play's side of one game: a process that accepts the opponent's challenge."""

    can_challenge = False

    def __init__(self, owner: "FoulPlay", slot: _Slot, address: ServerAddress, spec: GameSpec, side: str) -> None:
        self.owner = owner
        self.slot = slot
        self.address = address
        self.spec = spec
        self.username = slot.name
        self.process: FoulPlayProcess | None = None
        self.side = side
        self.player = "foul-play"
        self._log_dir = owner.log_dir  # None: the run's folder (begin_game), or outside a run the owner's scratch folder
        self._failure: BaseException | None = None
        self._on_failure: Callable[[BaseException], None] = lambda exc: None
        self._watch: asyncio.Task[None] | None = None
        self._created = time.monotonic()
        self._released = False
        self._entry: dict[str, Any] | None = None

    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None]) -> None:
        self._on_failure = on_failure
        self.side = context.side
        self.player = str(context.extra.get("player", self.player))
        if self.owner.log_dir is None and context.work_dir is not None:
            self._log_dir = Path(context.work_dir)

    @property
    def log_dir(self) -> Path:
        """Where Foul Play's output goes; the owner makes its scratch folder only for a game played outside a run."""
        return self._log_dir or self.owner.scratch_dir()

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.spec.game_id}.log"

    def _fail(self, exc: BaseException) -> None:
        if self._failure is None:
            self._failure = exc
            log.warning("Foul Play in %s: %s", self.spec.game_id, exc)
            self._on_failure(exc)

    async def ready(self) -> None:
        process = await self.slot.prepare(self.address, self.log_dir)
        self.username = self.slot.name
        self.process = process
        process.new_game(LogSink(self.log_path))
        process.sink.write(f"=== PokéBench: game {self.spec.game_id} as {process.name} (pid {process.pid})")
        self._entry = {"game_id": self.spec.game_id, "username": process.name, "pid": process.pid,
                       "start": time.monotonic(), "end": None}
        self.owner.history.append(self._entry)
        self._watch = asyncio.create_task(self._watchdog(process))

    async def _watchdog(self, process: FoulPlayProcess) -> None:
        """Fail the game as soon as the process exits, owes a decision for too long, or freezes."""
        timeout, frozen_after = self.owner.decision_timeout, self.owner.freeze_timeout
        while self._failure is None:
            silent = process.heartbeat_age
            if process.exited.is_set():
                self._fail(FoulPlayError(f"Foul Play ({process.name}, pid {process.pid}) exited with code "
                                         f"{process.returncode} during the game; its output: {self.log_path}"))
            elif process.owed_since is not None and time.monotonic() - process.owed_since > timeout:
                self._fail(FoulPlayError(f"Foul Play ({process.name}) sent no decision for {timeout:.0f} s "
                                         f"(silent or stuck); its output: {self.log_path}"))
            elif silent is not None and silent > frozen_after:
                state = "searching" if process.owed_since is not None else "waiting for a request"
                self._fail(FoulPlayError(f"Foul Play ({process.name}, pid {process.pid}) is frozen: no heartbeat for "
                                         f"{frozen_after:g} s while {state}; its output: {self.log_path}"))
            await asyncio.sleep(0.2)

    async def accept(self, opponent: str) -> None:
        """Foul Play accepts by itself; return once the battle has started (or fail the game)."""
        assert self.process is not None
        started = asyncio.ensure_future(self.process.battle_started.wait())
        exited = asyncio.ensure_future(self.process.exited.wait())
        try:
            await asyncio.wait({started, exited}, timeout=self.owner.accept_timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            started.cancel()
            exited.cancel()
        if not self.process.battle_started.is_set() and not self.process.exited.is_set():
            self._fail(FoulPlayError(f"Foul Play ({self.process.name}) did not start the battle against {opponent} "
                                     f"within {self.owner.accept_timeout:.0f} s; its output: {self.log_path}"))

    async def close(self, healthy: bool) -> None:
        if self._released:
            return
        self._released = True
        if self._watch is not None:
            self._watch.cancel()
        if self._entry is not None:
            self._entry["end"] = time.monotonic()
        try:
            if not healthy or self._failure is not None:
                await self.slot.stop()  # a fresh process for the next game
        finally:
            self.owner.release(self.slot)

    @property
    def idle_since(self) -> float:
        return self.process.last_output if self.process is not None else self._created

    @property
    def failure(self) -> BaseException | None:
        return self._failure

    def summary(self) -> dict[str, Any]:
        seconds = list(self.process.decision_seconds) if self.process is not None else []
        o = self.owner
        return {
            "class": "FoulPlay", "program": "Foul Play (pmariglia/foul-play), its own process",
            "searches_with_engine": True,  # Foul Play searches with poke-engine, the decision analysis's engine
            "commit": o.commit, "engine": o.engine, **o.search_settings(), "username": self.username,
            "decisions": len(seconds),
            "decision_ms": ({"mean": round(1000 * statistics.fmean(seconds), 1),
                             "median": round(1000 * statistics.median(seconds), 1),
                             "max": round(1000 * max(seconds), 1)} if seconds else None),
            "log": str(self.log_path),
        }

    def decisions(self) -> list[DecisionRecord]:
        """One record per choice Foul Play sent."""
        rows = self.process.decisions if self.process is not None else []
        return [DecisionRecord(self.side, self.player, turn=d.turn, decision=i, latency_s=round(d.seconds, 4),
                               action=d.choice, refusal=d.refused) for i, d in enumerate(rows)]


class FoulPlay(ExternalCompetitor):
    """Hands out seats backed by Foul Play processes; one instance serves a whole run."""

    #: Foul Play's engine (poke-engine built with terastallization) and its set tables are Gen 9 Random Battle's.
    supported_formats = ("gen9randombattle",)

    def __init__(self, checkout: str | None = None, python: str | None = None, search_ms_per_move: int = 200,
                 pokemon_format: str = "gen9randombattle", max_in_flight: int | None = None,
                 log_dir: str | None = None, name_prefix: str = "foulplay", login_timeout: float = 60.0,
                 decision_timeout: float = 60.0, accept_timeout: float = 60.0, login_attempts: int = 5,
                 backoff: float = 2.0, sets_teams: int = DEFAULT_TEAMS, extra_args: Sequence[str] = (),
                 command: Sequence[str] | None = None) -> None:
        if not name_prefix.isalnum() or not name_prefix.islower() or len(name_prefix) > 12:
            raise ValueError(f"name_prefix must be at most 12 lowercase letters or digits, not {name_prefix!r}")
        self.search_time_ms = search_time_per_position(search_ms_per_move)
        self.pokemon_format = pokemon_format
        self.max_in_flight = int(max_in_flight or default_max_in_flight())
        self.log_dir = Path(log_dir) if log_dir else None
        self.name_prefix = name_prefix
        self.login_timeout = float(login_timeout)
        self.decision_timeout = float(decision_timeout)
        # a heartbeat comes every HEARTBEAT_INTERVAL s: a few late ones on a loaded machine are no freeze
        self.freeze_timeout = max(10 * HEARTBEAT_INTERVAL, min(self.decision_timeout / 2, 15.0))
        self.accept_timeout = float(accept_timeout)
        self.login_attempts = max(1, int(login_attempts))
        self.backoff = float(backoff)
        self.extra_args = [str(a) for a in extra_args]
        self._scratch: Path | None = None
        if command:
            self.program = [str(c) for c in command]
            self.commit: str | None = None
            self.engine: str | None = None
        else:
            install = find_installation(checkout, python)
            if not install.pinned:
                log.warning("Foul Play at %s is at commit %s; the method pins %s. It plays; each record keeps the "
                            "commit.", install.checkout, install.commit, PINNED_COMMIT)
            sets = ensure_sets(pokemon_format, sets_teams)
            self.program = [install.python, str(LAUNCHER), "--checkout", str(install.checkout),
                            "--sets-dir", str(sets.parent), "--"]
            self.commit = install.commit
            self.engine = f"poke-engine {engine_version(install.python)}"
        self.slots = [_Slot(self, i) for i in range(self.max_in_flight)]
        #: one entry per game a process took: game_id, username, pid, start/end (time.monotonic())
        self.history: list[dict[str, Any]] = []
        self._free: asyncio.Queue[_Slot] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def search_settings(self) -> dict[str, Any]:
        """What each game's record keeps of the search (module docstring, "Search")."""
        return {"search_ms_per_move": POSITIONS_TIME * self.search_time_ms, "search_time_ms": self.search_time_ms,
                "search_positions": "4 at search_time_ms/2 early in a game, else 2 at search_time_ms, in turn",
                "search_parallelism": 1, "search_threads": 1}

    def scratch_dir(self) -> Path:
        """Foul Play's folder for games played outside a run (no work_dir): one temporary folder."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="pokebench-foulplay-"))
        return self._scratch

    @classmethod
    def preflight(cls, **options: Any) -> None:
        search_time_per_position(options.get("search_ms_per_move", 200))
        if options.get("command"):
            return
        install = find_installation(options.get("checkout"), options.get("python"))
        check_engine(install.python)
        check_layout(install)
        ensure_sets(options.get("pokemon_format", "gen9randombattle"), int(options.get("sets_teams", DEFAULT_TEAMS)))

    def _bind_loop(self) -> asyncio.Queue[_Slot]:
        loop = asyncio.get_running_loop()
        if self._free is None or self._loop is not loop:
            for slot in self.slots:  # processes of an earlier event loop cannot be used from this one
                if slot.process is not None:
                    slot.process.kill_group()
                    slot.process = None
            self._loop, self._free = loop, asyncio.Queue()
            for slot in self.slots:
                self._free.put_nowait(slot)
        return self._free

    async def seat(self, address: ServerAddress, spec: GameSpec, side: str) -> Seat:
        slot = await self._bind_loop().get()
        return FoulPlaySeat(self, slot, address, spec, side)

    def release(self, slot: _Slot) -> None:
        if self._free is not None:
            self._free.put_nowait(slot)

    async def shutdown(self) -> None:
        await asyncio.gather(*(slot.stop() for slot in self.slots), return_exceptions=True)
