"""The fault sweep's strikes: one fault, delivered once, at one phase of a game's life (tests/test_fault_sweep.py).

A run of the sweep plays in the test's own process (on a server the test module lends it) with a player whose
class comes from here (``players.NAME._target_=support.fault_sweep.FaultyRandom`` or ``FaultyLLM``). The class
is the bot or LLM player the harness knows, plus a hook at each moment poke-env calls it: the ``challstr``
that starts its log-in, the rename of a connection it took over from an earlier game (a player that saw no
``challstr``; the test wraps the seat's ``_rename``), its challenge or accept, a choice mid-turn, a forced switch, the end of its battle. The
test adds the moments the harness passes without a player (a game being stored, the server being restarted) by
wrapping those two methods. At the first moment of the swept phase the fault strikes for real: the server
SIGSTOPped (until the harness kills it; or paused past the liveness time-out, then going on), the server or its simulator SIGKILLed, its
simulator SIGSTOPped for good (until the server's plugin kills it as hung), the
player's websocket torn down without a close frame, or the model endpoint hanging or hanging up on each attempt
of the next answer. Nothing here changes what the harness does; it only chooses when the fault comes.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from poke_env.concurrency import POKE_LOOP

from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.players.llm import LLMPlayer
from pokebench.players.random_bot import RandomBot
from pokebench.showdown.server import LocalShowdown
from support.processes import cmdline, descendants, is_gone

PHASES = ("login", "rename", "challenge", "mid-turn", "forced-switch", "storing", "end-of-game", "retry-round",
          "server-restart")
#: Seconds after which the test continues a hung server that the harness did not kill (and the case fails).
HANG_BOUND = 60.0
FAULTS = ("server-hang", "server-pause", "server-killed", "simulator-killed", "simulator-hang", "websocket-dropped",
          "harness-dropped", "llm-hangs", "llm-closes")
#: The faults that kill a simulator process (the hung one is killed by the server's plugin): Showdown starts at most
#: five in its place in half an hour, so the test gives such a case a fresh server after four.
SIMULATOR_FAULTS = ("simulator-killed", "simulator-hang")


@dataclass
class Sweep:
    """One case: `fault` strikes once, at the first moment of `phase`."""

    phase: str
    fault: str
    server: LocalShowdown
    pause_seconds: float  # how long a paused server stays stopped (past the liveness time-out, then it goes on)
    api: LocalOpenAI | None = None
    attempts: int = 2  # the model's max_attempts: an endpoint fault spoils every attempt of one answer
    llm_timeout: float = 1.0
    struck: list[str] = field(default_factory=list)  # what the fault hit, for the test's report
    missed: list[str] = field(default_factory=list)  # what the harness failed to do about it
    armed: bool = True
    #: Set for the phases that need an earlier fault first (a crash before a retry round, a kill before a restart).
    prepared: bool = False
    begun: dict[str, int] = field(default_factory=dict)  # game id -> times a faulty player began it
    players: list[Any] = field(default_factory=list)
    drop_next_login: bool = False
    #: The arena's own connection to the server (its admin client) and the loop it runs on; dropped by
    #: "harness-dropped" (as a pause past the websocket's keep-alive and short of the liveness time-out drops it).
    harness: Any = None
    harness_loop: Any = None
    drop_next_harness: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    # ---- when -----------------------------------------------------------------------------------
    def at(self, phase: str, player: Any = None) -> None:
        """A faulty player (or the test's wrapper) is at `phase`: strike if it is the swept one, once."""
        with self.lock:
            if not self.armed or phase != self.phase or self.phase in ("retry-round", "server-restart"):
                return
            self.armed = False
        self.strike(player)

    def decision(self, player: Any, battle: Any) -> None:
        """A faulty player is about to choose: mid-turn, a forced switch, a retry round's game, a restart's cause."""
        if battle.force_switch:
            self.at("forced-switch", player)
        elif battle.turn >= 2:
            self.at("mid-turn", player)
        game_id = player.game.game_id
        with self.lock:
            first_try = self.begun.get(game_id, 0) == 1
            cause = self.phase in ("retry-round", "server-restart") and not self.prepared and first_try
            replayed = self.phase == "retry-round" and self.armed and self.prepared and not first_try
            if cause:
                self.prepared = True
            if replayed:
                self.armed = False
        if cause and self.phase == "retry-round":
            raise RuntimeError("a deliberate crash: its game is played again in the retry round")
        if cause:  # the server dies; the fault strikes while the harness restarts it
            os.kill(self._server_pid(), signal.SIGKILL)
        if replayed:
            self.strike(player)

    def restarting(self) -> None:
        """The harness is (re)starting the server and waits for it to answer: the server-restart phase."""
        with self.lock:
            if not (self.phase == "server-restart" and self.prepared and self.armed):
                return
            self.armed = False
        self.strike(None)

    def logging_in(self, player: Any) -> None:
        player.sweep_saw_challstr = True
        self.at("login", player)

    def renaming(self, client: Any) -> None:
        """The seat sends ``/trn`` for `client`: a log-in if its player saw a ``challstr``, else a rename."""
        player = next((p for p in self.players if p.ps_client is client), None)
        if player is not None and not getattr(player, "sweep_saw_challstr", False):
            self.at("rename", player)
        if self.drop_next_login:  # any player's client: the one that logs in first after a restart need not be faulty
            self.drop_next_login = False
            self._drop(client)

    def harness_connected(self, admin: Any, loop: Any) -> None:
        """The arena made its connection to the server (at the start, or after a fault)."""
        self.harness, self.harness_loop = admin, loop
        if self.drop_next_harness:
            self.drop_next_harness = False
            self._drop_harness()

    # ---- what -----------------------------------------------------------------------------------
    def _server_pid(self) -> int:
        assert self.server.process is not None
        return self.server.process.pid

    def strike(self, player: Any) -> None:
        pid = self._server_pid()
        if self.fault == "server-hang":  # stopped until the harness kills it (after HANG_BOUND s the test gives up)
            os.kill(pid, signal.SIGSTOP)
            threading.Timer(HANG_BOUND, self._not_killed, (pid, "server")).start()
            self.struck.append(f"server {pid} stopped")
        elif self.fault == "server-pause":  # it goes on by itself: the players' connections to it must not linger
            os.kill(pid, signal.SIGSTOP)
            threading.Timer(self.pause_seconds, _signal, (pid, signal.SIGCONT)).start()
            self.struck.append(f"server {pid} stopped for {self.pause_seconds:g} s")
        elif self.fault == "server-killed":
            os.kill(pid, signal.SIGKILL)
            self.struck.append(f"server {pid} killed")
        elif self.fault in SIMULATOR_FAULTS:  # a booting server may not have spawned it yet: as soon as it has
            threading.Thread(target=self._strike_simulator, args=(pid,), daemon=True).start()
        elif self.fault == "websocket-dropped":
            # a player renaming a connection it took over is not logged in yet: its own connection is the one
            renaming = self.phase == "rename" and player is not None
            target = player if renaming or _connected(player) else next(
                (p for p in self.players if _connected(p)), None)
            if target is None:  # no player is connected now (the server restarts): the next one to log in
                self.drop_next_login = True
            else:
                self._drop(target.ps_client)
        elif self.fault == "harness-dropped":  # the server runs on: the games it still plays must be voided there
            if self.harness is None or self.harness.closed.is_set():
                self.drop_next_harness = True
            else:
                self._drop_harness()
        else:
            assert self.api is not None
            self.api.policy = _spoiled(self, hang_up=self.fault == "llm-closes")  # `struck` says each one spoiled

    def _not_killed(self, pid: int, what: str) -> None:
        if not is_gone(pid):
            self.missed.append(f"the hung {what} {pid} was not killed within {HANG_BOUND:g} s")
            _signal(pid, signal.SIGKILL if what == "simulator" else signal.SIGCONT)

    def _strike_simulator(self, server_pid: int) -> None:
        """Kill the server's simulator processes, or stop them for good (the server must kill them as hung)."""
        hang = self.fault == "simulator-hang"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sims = [p for p in descendants(server_pid) if "room-battle.js" in cmdline(p)]
            if sims:
                for sim in sims:
                    _signal(sim, signal.SIGSTOP if hang else signal.SIGKILL)
                    if hang:
                        threading.Timer(HANG_BOUND, self._not_killed, (sim, "simulator")).start()
                self.struck.append(f"simulator(s) {sims} of server {server_pid} {'stopped' if hang else 'killed'}")
                return
            time.sleep(0.02)

    def _drop_harness(self) -> None:
        self._reset(self.harness_loop, self.harness._ws.transport, "the harness's own connection to the server")

    def _drop(self, client: Any) -> None:
        self._reset(POKE_LOOP, client.websocket.transport, f"the websocket of {client.username}")

    def _reset(self, loop: Any, transport: Any, what: str) -> None:
        loop.call_soon_threadsafe(transport.abort)  # a TCP reset, no close frame
        self.struck.append(f"{what} dropped")


def _signal(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _connected(player: Any) -> bool:
    if player is None or getattr(player, "game_over", True):
        return False
    client = player.ps_client
    listening = getattr(client, "_listening_coroutine", None)
    return client.logged_in.is_set() and listening is not None and not listening.done()


def _spoiled(sweep: Sweep, hang_up: bool) -> Any:
    """A policy that spoils the next `attempts` requests (a hang past the client's time-out, or a hang-up)."""
    left = [sweep.attempts]

    def policy(request: ChatRequest) -> Reply | str:
        with sweep.lock:
            spoil = left[0] > 0
            left[0] -= 1
        if not spoil:
            return hashed_policy(request)
        sweep.struck.append(f"request {request.index} {'hung up on' if hang_up else 'left hanging'}")
        return Reply(hang_up=True) if hang_up else Reply(text=hashed_policy(request), delay=sweep.llm_timeout + 1)

    return policy


#: The case being played (set by the test for one run; None outside the sweep).
SWEEP: Sweep | None = None


class SweepHooks:
    """Mixed in front of a player class: tells :data:`SWEEP` each moment of the player's game."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        client = self.ps_client  # type: ignore[attr-defined]
        handle, challenge, accept = client._handle_message, client.challenge, client.accept_challenge

        async def on_message(message: str) -> None:
            if message.startswith("|challstr|") and SWEEP is not None:
                SWEEP.logging_in(self)
            await handle(message)

        async def on_challenge(*args: Any) -> None:
            if SWEEP is not None:
                SWEEP.at("challenge", self)
            await challenge(*args)

        async def on_accept(*args: Any) -> None:
            if SWEEP is not None:
                SWEEP.at("challenge", self)
            await accept(*args)

        client._handle_message, client.challenge, client.accept_challenge = on_message, on_challenge, on_accept
        if SWEEP is not None:
            SWEEP.players.append(self)

    def begin_game(self, context: Any, on_failure: Any = None) -> None:
        super().begin_game(context, on_failure)  # type: ignore[misc]
        if SWEEP is not None:
            with SWEEP.lock:
                SWEEP.begun[context.game_id] = SWEEP.begun.get(context.game_id, 0) + 1

    def choose_move(self, battle: Any) -> Any:
        if SWEEP is not None:
            SWEEP.decision(self, battle)
        return super().choose_move(battle)  # type: ignore[misc]

    def _battle_finished_callback(self, battle: Any) -> None:
        if SWEEP is not None:
            SWEEP.at("end-of-game", self)
        super()._battle_finished_callback(battle)  # type: ignore[misc]


class FaultyRandom(SweepHooks, RandomBot):
    """The random bot, with the sweep's hooks."""

    __signature__ = inspect.signature(RandomBot)  # the options the run's plan checks


class FaultyLLM(SweepHooks, LLMPlayer):
    """The LLM player, with the sweep's hooks."""

    __signature__ = inspect.signature(LLMPlayer)
