"""Logged-in connections to the server, kept between games: the next game's player takes one over and renames it.

Each game has fresh poke-env players, and each used to open a websocket of its own, log in and close it at the
end: per game two connections, two handshakes and log-ins and two closes, ~100 ms of a game's slot and the
server's work for each. A connection whose game ended well (the arena has its record) is given back here
instead, and the next game's fresh player takes it over: it renames the user (Showdown's ``/trn`` with the
harness's login token for its own name, which Showdown handles as a log-in) and plays. Every game still has
its own names (derived from the game: the input logs do not change) and fresh players; only the websocket and
the task that reads it are shared. A connection of a game that went wrong is closed, as before, never given
back; one that is closed or closing when it is taken is dropped, and a fresh one opened.

The player's own ``PSClient`` object stays its own (its events, locks and whatever is hooked on it); it sends on
the shared websocket, and the reading task (``listen`` of the client that opened the connection) hands each
message to it. Room messages of an earlier game on the connection (the ``|deinit`` that follows its ``/leave``)
reach nobody. Everything here runs on poke-env's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from poke_env.ps_client import PSClient
from websockets.protocol import State


async def _nobody(message: str) -> None:
    """What an idle connection does with a message: nothing (it belongs to a game that is over)."""


@dataclass
class Connection:
    """One websocket and the client whose ``listen`` task reads it (the one that opened it)."""

    reader: PSClient
    url: str
    #: The battle rooms of the games played on it so far: their late messages are dropped.
    stale: set[str] = field(default_factory=set)

    def open(self) -> bool:
        listening = getattr(self.reader, "_listening_coroutine", None)
        websocket = getattr(self.reader, "websocket", None)
        return (listening is not None and not listening.done() and websocket is not None
                and websocket.state is State.OPEN)

    def lend(self, client: PSClient) -> None:
        """`client` (a fresh player's) sends and receives on this connection from now on."""
        client.websocket = self.reader.websocket
        client._listening_coroutine = self.reader._listening_coroutine  # what the seat watches for a closed connection
        stale, handle = self.stale, client._handle_message

        async def route(message: str) -> None:
            if message.startswith(">"):  # a room's: its name is the first line (not copied whole: a message is long)
                end = message.find("\n")
                if message[1:end if end >= 0 else None] in stale:
                    return
            await handle(message)

        self.reader._handle_message = route  # type: ignore[method-assign]  # listen() looks it up per message

    def idle(self, battles: list[str]) -> None:
        """The game on it is over: its rooms (`battles`, tags without the ``>``) are stale, and nobody reads."""
        self.stale.update(battles)
        self.reader._handle_message = _nobody  # type: ignore[method-assign]


class ConnectionPool:
    """The idle connections of one arena (to whichever server is current: `take` checks the address)."""

    def __init__(self) -> None:
        self._idle: list[Connection] = []

    def take(self, url: str) -> tuple[Connection | None, list[Connection]]:
        """An open idle connection to `url`, or None; and the idle ones found closed or to another server, which
        the caller closes."""
        dropped: list[Connection] = []
        while self._idle:
            connection = self._idle.pop()
            if connection.url == url and connection.open():
                return connection, dropped
            dropped.append(connection)
        return None, dropped

    def give(self, connection: Connection) -> None:
        self._idle.append(connection)

    def drain(self) -> list[Connection]:
        """Every idle connection, taken out (to close them: the arena is done)."""
        idle, self._idle = self._idle, []
        return idle


async def shut(connection: Connection, timeout: float = 5.0) -> None:
    """Close the websocket (if it is still open) and stop the task that reads it."""
    with contextlib.suppress(Exception):
        await asyncio.wait_for(connection.reader.websocket.close(), timeout)
    connection.reader._listening_coroutine.cancel()
