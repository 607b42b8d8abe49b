"""Foul Play (pmariglia/foul-play, GPL-3.0) as a reference opponent, run as its own program.

Foul Play is not part of PokéBench: the user installs it (README, "Foul Play"), and
this adapter starts it from that installation, logged in to our local server in its
``accept_challenge`` mode. A run uses it like any other player (conf/player/foul_play.yaml);
the arena plays and records its games like every other game.

* Installation: options ``checkout`` and ``python``, by default ``$FOULPLAY_DIR`` and
  ``$FOULPLAY_PYTHON`` (or the checkout's ``.venv``). :meth:`FoulPlay.preflight` refuses a
  missing checkout, missing requirements, and a poke-engine built without
  terastallization (the default build plays gen 4 rules and never terastallizes); it makes
  the random-battle set table from the pinned server (sets.py).
* Foul Play runs through our launcher (launcher.py), which answers its
  login-server request and its set download locally, in its own process.
* One battle at a time per process: ``max_in_flight`` processes under different names
  (default: one per core, less one for the server and the other players). A process takes
  a game only once it waits for a challenge (see process.py).
* Failures: a process that exits, or owes a decision for ``decision_timeout`` seconds, or
  does not start the battle within ``accept_timeout``, fails its game at once (the arena
  voids it: a harness error, never a result). After a voided game the process group is
  killed; the next game starts a fresh process. A ``|nametaken|`` at login is retried with
  a new name after an exponential backoff.
* Logs: Foul Play's output per game in ``<log_dir>/<game_id>.log`` (search dumps dropped,
  capped), and per process name in ``<log_dir>/<name>.log`` until its first game. The
  default ``log_dir`` is the run's folder: ``runs/<run>/foulplay/`` (the run's name comes
  with each game; the process also runs in that folder).
* The summary of each game records the Foul Play commit, ``search_time_ms`` and the
  measured seconds per decision (a decision searches two sampled positions in turn, so
  ``search_time_ms: 100`` gives about 0.2 s).

``command`` replaces the launcher and Foul Play by another program that takes Foul Play's
arguments and logs like it (the tests' stand-in, tests/support/foul_play_standin.py); it is the only
test seam.
"""

from __future__ import annotations

import asyncio
import logging
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from pokebench.player.bench_player import GameContext
from pokebench.player.faults import HarnessFault
from pokebench.play.schedule import GameSpec
from pokebench.player.seats import ExternalCompetitor, Seat
from pokebench.showdown.server import ServerAddress
from pokebench.players.foul_play.process import FoulPlayProcess, LogSink
from pokebench.players.foul_play.sets import DEFAULT_TEAMS, ensure_sets

log = logging.getLogger(__name__)

PINNED_COMMIT = "6c467c08"
LAUNCHER = Path(__file__).with_name("launcher.py")
ENGINE_FLAGS = '--config-settings="build-args=--features poke-engine/terastallization --no-default-features"'
REBUILD = ("pip uninstall -y poke-engine && pip install -v --force-reinstall --no-cache-dir poke-engine==0.0.48 "
           + ENGINE_FLAGS)
INSTALL = (f"Install it (README, section Foul Play): git clone https://github.com/pmariglia/foul-play && cd foul-play "
           f"&& git checkout {PINNED_COMMIT} && python3 -m venv .venv && .venv/bin/pip install -r requirements.txt "
           f"(Rust is needed to build poke-engine 0.0.48; requirements.txt passes {ENGINE_FLAGS}). Then "
           "export FOULPLAY_DIR=/path/to/foul-play FOULPLAY_PYTHON=/path/to/foul-play/.venv/bin/python.")

# Run with the user's Python: can the engine terastallize? (0.0.48's Python API)
_ENGINE_CHECK = r"""
import sys
try:
    import requests, websockets
    from poke_engine import Move, Pokemon, Side, State, monte_carlo_tree_search
except ImportError as err:
    print("missing", err)
    sys.exit(3)
def mon():
    return Pokemon(id="pikachu", level=50, types=("electric", "typeless"), hp=100, maxhp=100,
                   tera_type="water", moves=[Move(id="tackle", pp=32)])
result = monte_carlo_tree_search(State(side_one=Side(pokemon=[mon()]), side_two=Side(pokemon=[mon()])), duration_ms=20)
print("tera" if any(o.move_choice.endswith("-tera") for o in result.side_one) else "no-tera")
"""


class FoulPlayError(HarnessFault):
    """Foul Play failed (exited, went silent, could not log in): a harness fault, so the arena
    records the game as a harness error and carries on."""


@dataclass(frozen=True)
class Installation:
    checkout: Path
    python: str
    commit: str


def find_installation(checkout: str | None = None, python: str | None = None) -> Installation:
    """The user's Foul Play, from the options or the environment; a ValueError says what to install."""
    checkout = checkout or os.environ.get("FOULPLAY_DIR")
    if not checkout:
        raise ValueError("Foul Play is not installed: set FOULPLAY_DIR (and FOULPLAY_PYTHON) or the `checkout` "
                         "option of conf/player/foul_play.yaml. " + INSTALL)
    path = Path(checkout).expanduser().resolve()
    if not (path / "run.py").is_file() or not (path / "fp").is_dir():
        raise ValueError(f"{path} is not a Foul Play checkout (it has no run.py and fp/). " + INSTALL)
    python = python or os.environ.get("FOULPLAY_PYTHON")
    if not python:
        candidates = [path / d / "bin" / "python" for d in (".venv", "venv")]
        found = [c for c in candidates if c.exists()]
        if not found:
            raise ValueError(f"Which Python runs Foul Play? Set FOULPLAY_PYTHON (or the `python` option) to the Python "
                             f"that has its requirements; {path}/.venv does not exist. " + INSTALL)
        python = str(found[0])
    try:
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = "unknown (not a git checkout)"
    return Installation(path, python, commit)


def check_engine(python: str) -> None:
    """Refuse a Python without Foul Play's requirements, or with a poke-engine that cannot terastallize."""
    try:
        proc = subprocess.run([python, "-c", _ENGINE_CHECK], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as err:
        raise ValueError(f"Cannot run Foul Play's Python {python!r} ({err}). " + INSTALL) from None
    answer = proc.stdout.strip().splitlines()[-1:] or [""]
    if proc.returncode == 3:
        raise ValueError(f"Foul Play's Python {python} lacks its requirements ({answer[0]}). " + INSTALL)
    if proc.returncode != 0:
        raise ValueError(f"Could not check poke-engine with {python}: {proc.stderr.strip()[-1500:]}. "
                         f"Foul Play at {PINNED_COMMIT} needs poke-engine 0.0.48 built for gen 9 with terastallization: "
                         f"{REBUILD}")
    if answer[0] != "tera":
        raise ValueError(f"The poke-engine of {python} was built without terastallization (the default build plays "
                         f"gen 4 rules and never terastallizes). Rebuild it with that Python: {REBUILD}")


def default_max_in_flight() -> int:
    """One process per core, less one core for the server and the other players; at least one."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


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
                "--search-parallelism", "1", "--run-count", "1000000000", "--log-level", "DEBUG", *o.extra_args]
        env = dict(os.environ, PYTHONUNBUFFERED="1", POKEBENCH_PARENT_PID=str(os.getpid()))
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

    def __init__(self, owner: "FoulPlay", slot: _Slot, address: ServerAddress, spec: GameSpec) -> None:
        self.owner = owner
        self.slot = slot
        self.address = address
        self.spec = spec
        self.username = slot.name
        self.process: FoulPlayProcess | None = None
        self.log_dir = owner.log_dir or Path("runs") / spec.run / "foulplay"
        self.log_path = self.log_dir / f"{spec.game_id}.log"
        self._failure: BaseException | None = None
        self._on_failure: Callable[[BaseException], None] = lambda exc: None
        self._watch: asyncio.Task[None] | None = None
        self._created = time.monotonic()
        self._released = False
        self._entry: dict[str, Any] | None = None

    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None]) -> None:
        self._on_failure = on_failure

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
        """Fail the game as soon as the process exits or owes a decision for too long."""
        timeout = self.owner.decision_timeout
        while self._failure is None:
            if process.exited.is_set():
                self._fail(FoulPlayError(f"Foul Play ({process.name}, pid {process.pid}) exited with code "
                                         f"{process.returncode} during the game; its output: {self.log_path}"))
            elif process.owed_since is not None and time.monotonic() - process.owed_since > timeout:
                self._fail(FoulPlayError(f"Foul Play ({process.name}) sent no decision for {timeout:.0f} s "
                                         f"(silent or stuck); its output: {self.log_path}"))
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
            "commit": o.commit, "search_time_ms": o.search_time_ms, "username": self.username,
            "decisions": len(seconds),
            "decision_ms": ({"mean": round(1000 * statistics.fmean(seconds), 1),
                             "median": round(1000 * statistics.median(seconds), 1),
                             "max": round(1000 * max(seconds), 1)} if seconds else None),
            "log": str(self.log_path),
        }


class FoulPlay(ExternalCompetitor):
    """Hands out seats backed by Foul Play processes; one instance serves a whole run."""

    def __init__(self, checkout: str | None = None, python: str | None = None, search_time_ms: int = 100,
                 pokemon_format: str = "gen9randombattle", max_in_flight: int | None = None,
                 log_dir: str | None = None, name_prefix: str = "foulplay", login_timeout: float = 60.0,
                 decision_timeout: float = 60.0, accept_timeout: float = 60.0, login_attempts: int = 5,
                 backoff: float = 2.0, sets_teams: int = DEFAULT_TEAMS, extra_args: Sequence[str] = (),
                 command: Sequence[str] | None = None) -> None:
        if not name_prefix.isalnum() or not name_prefix.islower() or len(name_prefix) > 12:
            raise ValueError(f"name_prefix must be at most 12 lowercase letters or digits, not {name_prefix!r}")
        self.search_time_ms = int(search_time_ms)
        self.pokemon_format = pokemon_format
        self.max_in_flight = int(max_in_flight or default_max_in_flight())
        self.log_dir = Path(log_dir) if log_dir else None
        self.name_prefix = name_prefix
        self.login_timeout = float(login_timeout)
        self.decision_timeout = float(decision_timeout)
        self.accept_timeout = float(accept_timeout)
        self.login_attempts = max(1, int(login_attempts))
        self.backoff = float(backoff)
        self.extra_args = [str(a) for a in extra_args]
        if command:
            self.program = [str(c) for c in command]
            self.commit: str | None = None
        else:
            install = find_installation(checkout, python)
            if not install.commit.startswith(PINNED_COMMIT):
                log.warning("Foul Play at %s is at commit %s; the method pins %s.", install.checkout, install.commit,
                            PINNED_COMMIT)
            sets = ensure_sets(pokemon_format, sets_teams)
            self.program = [install.python, str(LAUNCHER), "--checkout", str(install.checkout),
                            "--sets-dir", str(sets.parent), "--"]
            self.commit = install.commit
        self.slots = [_Slot(self, i) for i in range(self.max_in_flight)]
        #: one entry per game a process took: game_id, username, pid, start/end (time.monotonic())
        self.history: list[dict[str, Any]] = []
        self._free: asyncio.Queue[_Slot] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def preflight(cls, **options: Any) -> None:
        if options.get("command"):
            return
        install = find_installation(options.get("checkout"), options.get("python"))
        check_engine(install.python)
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
        return FoulPlaySeat(self, slot, address, spec)

    def release(self, slot: _Slot) -> None:
        if self._free is not None:
            self._free.put_nowait(slot)

    async def shutdown(self) -> None:
        await asyncio.gather(*(slot.stop() for slot in self.slots), return_exceptions=True)
