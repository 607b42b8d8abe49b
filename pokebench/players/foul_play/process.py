"""One life of a Foul Play process: start it in its own process group, read what it says, kill the group.

The adapter learns everything from Foul Play's standard output at log level DEBUG, where
Foul Play logs its whole websocket traffic (``Received message from websocket: ...`` and
``Sending message to websocket: ...``, fp/websocket_client.py) and says when it waits for
a challenge (``Waiting for a <format> challenge``, its accept_challenge loop):

* logged in: the *server's* ``|updateuser| NAME|1|...`` for our name, as Foul Play
  received it. Not Foul Play's own "Successfully logged in", which it prints before the
  server has answered; and not ``/cmd userdetails NAME`` on a connection of our own,
  which cannot tell our process from another user who holds the name.
* name taken: the server's ``|nametaken|`` (Foul Play ignores it and plays on as a guest).
* ready for a challenge: ``Waiting for a ... challenge``. Between two battles Foul Play
  first leaves the old room and drops every message until the room's ``deinit``; a
  challenge sent then would be lost, so a process takes its next game only after this line.
* a decision is due from a ``|request|`` (not ``"wait"``) until Foul Play sends its
  ``/choose``, ``/switch`` or ``/team``; the gap is the measured time per decision, one
  row of :attr:`FoulPlayProcess.decisions` each (turn from the last ``|turn|`` line, the
  choice sent). A refused choice (``|error|[Invalid choice]``) marks its row and makes a
  decision due again.
* alive: the launcher writes a byte to a pipe of its own every :data:`HEARTBEAT_INTERVAL`
  seconds, from a thread of Foul Play's main process (``POKEBENCH_HEARTBEAT_FD``). The
  output alone cannot tell a frozen process (SIGSTOP, or stuck outside Python) that waits
  for a request from one whose opponent is slow: Foul Play prints a request only once it
  reads it. :attr:`FoulPlayProcess.heartbeat_age` is None until the first beat (a
  ``command`` without the heartbeat is not watched this way).

Foul Play's search runs in worker processes that inherit the websocket; killing only the
main process would leave a worker holding the connection (and the name: a restart would
get ``|nametaken|``). So the process starts in a new session and we kill its whole group.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

#: A line longer than this is cut in the log file (requests are a few kB; search dumps are larger).
LINE_CAP = 4000
#: A game's log file stops growing at this size (a note says so).
LOG_CAP_BYTES = 5_000_000
#: Foul Play's debug lines that dump whole search states (megabytes per game): never logged.
DROPPED = ("Calling with ", "Calling calculate damage with state", "Received battle JSON from server")
_READ_LIMIT = 1 << 20
#: Seconds between two heartbeats of the launcher (launcher.py writes them).
HEARTBEAT_INTERVAL = 0.5
HEARTBEAT_ENV = "POKEBENCH_HEARTBEAT_FD"


def toid(name: str) -> str:
    """Showdown's user id of a name (what the server compares)."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


class LogSink:
    """An append-only text file with a size cap; long lines are cut, search dumps dropped."""

    def __init__(self, path: Path, cap_bytes: int = LOG_CAP_BYTES) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = open(path, "a", encoding="utf-8", errors="replace")
        self._left = cap_bytes

    def write(self, line: str) -> None:
        if self._file is None or self._left <= 0 or any(marker in line for marker in DROPPED):
            return
        if len(line) > LINE_CAP:
            line = f"{line[:LINE_CAP]} … [{len(line) - LINE_CAP} characters cut]"
        self._left -= len(line) + 1
        self._file.write(line + "\n")
        if self._left <= 0:
            self._file.write(f"[PokéBench: log capped at {LOG_CAP_BYTES} bytes]\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


@dataclass
class SentChoice:
    """One choice Foul Play sent to Showdown."""

    turn: int
    seconds: float  # from the request to the choice
    choice: str
    refused: bool = False  # Showdown refused it


class FoulPlayProcess:
    """One started Foul Play (or stand-in) process and what its output says about it."""

    def __init__(self, command: list[str], name: str, cwd: Path, env: dict[str, str], sink: LogSink) -> None:
        self.command = command
        self.name = name
        self.cwd = cwd
        self.env = env
        self.sink = sink
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_at = time.monotonic()
        self.last_output = self.started_at
        self.logged_in = asyncio.Event()
        self.login_answer = asyncio.Event()  # logged in, name taken, or exited
        self.nametaken: str | None = None
        self.waiting = asyncio.Event()  # ready for a challenge
        self.battle_started = asyncio.Event()
        self.exited = asyncio.Event()
        self.returncode: int | None = None
        self.battle_tag: str | None = None
        self.owed_since: float | None = None
        #: this game's decisions, in order
        self.decisions: list[SentChoice] = []
        self.turn = 0
        self.last_heartbeat: float | None = None
        self._reader: asyncio.Task[None] | None = None
        self._waiter: asyncio.Task[None] | None = None
        self._transport: asyncio.BaseTransport | None = None
        self._beats: asyncio.BaseTransport | None = None

    @property
    def decision_seconds(self) -> list[float]:
        return [d.seconds for d in self.decisions]

    @property
    def heartbeat_age(self) -> float | None:
        """Seconds since the last heartbeat; None before the first one."""
        return None if self.last_heartbeat is None else time.monotonic() - self.last_heartbeat

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def start(self) -> None:
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.sink.write(f"=== PokéBench: starting {self.name}: {' '.join(self.command)}")
        beat_read, beat_write = os.pipe()
        # subprocess.Popen, not asyncio's: asyncio's wait() returns only once the output pipe
        # is closed, which a surviving search worker would keep open.
        try:
            self.proc = subprocess.Popen(
                self.command, cwd=self.cwd, env={**self.env, HEARTBEAT_ENV: str(beat_write)}, stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, pass_fds=(beat_write,),
                start_new_session=True,  # its own process group, search workers included
            )
        except BaseException:
            os.close(beat_read)
            raise
        finally:
            os.close(beat_write)
        assert self.proc.stdout is not None
        reader = asyncio.StreamReader(limit=_READ_LIMIT)
        loop = asyncio.get_running_loop()
        self._transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), self.proc.stdout)
        self._beats, _ = await loop.connect_read_pipe(lambda: _Heartbeats(self), os.fdopen(beat_read, "rb", 0))
        self._reader = asyncio.create_task(self._read(reader))
        self._waiter = asyncio.create_task(self._wait())

    # ---- reading ---------------------------------------------------------------------------
    async def _read(self, reader: asyncio.StreamReader) -> None:
        buffer, skipping = b"", False
        while chunk := await reader.read(65536):
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line, buffer = buffer[:end], buffer[end + 1:]
                if not skipping:
                    self._on_line(line.decode("utf-8", errors="replace"))
                skipping = False
            if len(buffer) > _READ_LIMIT:  # a giant line: keep its head, skip to its end
                if not skipping:
                    self._on_line(buffer[:LINE_CAP].decode("utf-8", errors="replace"))
                buffer, skipping = b"", True
        if buffer and not skipping:
            self._on_line(buffer.decode("utf-8", errors="replace"))

    async def _wait(self) -> None:
        """Notice the main process's exit at once, then end its group and the output."""
        assert self.proc is not None
        while (code := self.proc.poll()) is None:
            await asyncio.sleep(0.1)
        self.returncode = code
        self.kill_group()  # its workers must not outlive it (they hold the connection)
        if self._reader is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._reader), 10)
            except asyncio.TimeoutError:
                pass
        for transport in (self._transport, self._beats):
            if transport is not None:
                transport.close()
        self.sink.write(f"=== PokéBench: {self.name} (pid {self.proc.pid}) exited with code {code}")
        self.exited.set()
        self.login_answer.set()

    def _on_line(self, line: str) -> None:
        now = time.monotonic()
        self.last_output = now
        self.sink.write(line)
        if "|nametaken|" in line:
            self.nametaken = line.split("|nametaken|", 1)[1]
            self.login_answer.set()
        if "|updateuser|" in line:
            fields = line.split("|updateuser|", 1)[1].split("|")
            if len(fields) > 1 and toid(fields[0]) == toid(self.name) and fields[1].strip() == "1":
                self.logged_in.set()
                self.login_answer.set()
        if "Waiting for a" in line and "challenge" in line:
            self.owed_since = None
            self.waiting.set()
        if "websocket: >battle-" in line:
            tag = line.split("websocket: >", 1)[1].strip()
            if tag != self.battle_tag:
                self.battle_tag = tag
                self.waiting.clear()
                self.battle_started.set()
        if line.startswith("|request|"):
            self._on_request(line[len("|request|"):], now)
        elif line.startswith("|turn|"):
            self.turn = int(line[6:]) if line[6:].strip().isdigit() else self.turn
        elif line.startswith("|win|") or line == "|tie" or line.startswith("|tie|"):
            self.owed_since = None
        elif line.startswith(("|error|[Invalid choice]", "|error|[Unavailable choice]")):
            if self.decisions:
                self.decisions[-1].refused = True
            self.owed_since = self.owed_since or now  # the choice was refused: a decision is due again
        elif "to websocket: battle-" in line and (choice := _choice(line)) is not None:
            if self.owed_since is not None:
                self.decisions.append(SentChoice(self.turn, now - self.owed_since, choice))
                self.owed_since = None

    def _on_request(self, payload: str, now: float) -> None:
        try:
            request = json.loads(payload) if payload.strip() else None
        except ValueError:
            return
        if isinstance(request, dict) and not request.get("wait") and self.owed_since is None:
            self.owed_since = now

    # ---- assignment and end ----------------------------------------------------------------
    def new_game(self, sink: LogSink) -> None:
        """Route the output to a game's log and measure its decisions from here on."""
        old, self.sink = self.sink, sink
        old.close()
        self.battle_started.clear()
        self.decisions = []
        self.turn = 0

    @property
    def alive(self) -> bool:
        return self.proc is not None and not self.exited.is_set()

    def kill_group(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    async def kill(self) -> None:
        """Kill the whole group and wait until the main process is reaped and the output closed."""
        self.kill_group()
        if self._waiter is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._waiter), 15)
            except asyncio.TimeoutError:
                pass
        self.sink.close()


def _choice(line: str) -> str | None:
    """The choice in Foul Play's ``Sending message to websocket: battle-…|/choose move x|rqid``, or None."""
    message = line.split("to websocket: ", 1)[1]
    for command, prefix in (("|/choose ", ""), ("|/switch ", "switch "), ("|/team ", "team ")):
        if command in message:
            return prefix + message.split(command, 1)[1].split("|", 1)[0].strip()
    return None


class _Heartbeats(asyncio.Protocol):
    """Reads the launcher's heartbeat pipe: each byte is a sign that the main process runs."""

    def __init__(self, process: FoulPlayProcess) -> None:
        self.process = process

    def data_received(self, data: bytes) -> None:
        self.process.last_heartbeat = time.monotonic()
