"""The harness's own connection to the Showdown server: registers seeded games and receives their records.

It speaks to PokéBench's server plugin (showdown-server/plugin/pokebench.js) with
`/pokebench <verb> <token> ...` commands; the plugin answers with `|pokebench|...`
lines and sends each finished game's record to this connection.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import secrets
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from pokebench.showdown.address import ServerAddress


class AdminError(RuntimeError):
    """The server refused or did not answer a harness command."""


class SimulatorCrashed(AdminError):
    """The simulator process that ran a game died, or hung and was killed; the plugin reports it at once (the game
    is void). `cause`: "simulator crashed" or "simulator hung"."""

    def __init__(self, detail: str, cause: str = "simulator crashed") -> None:
        super().__init__(detail)
        self.cause = cause


#: User names beginning with this are reserved for the harness by the plugin: logging in under
#: one takes :func:`login_token` of the name, which only a holder of the admin token can make.
HARNESS_NAME_PREFIX = "pb"


#: What the plugin says when a harness name's login token does not match its admin token.
REFUSED_LOGIN = "are reserved for the PokéBench harness"


def login_token(admin_token: str, username: str) -> str:
    """The token a harness user sends with ``/trn NAME,0,TOKEN`` (HMAC-SHA256 of its user id)."""
    userid = "".join(c for c in username.lower() if c.isalnum())
    return hmac.new(admin_token.encode(), userid.encode(), hashlib.sha256).hexdigest()[:32]


class AdminClient:
    """One logged-in harness connection. Use ``async with AdminClient(address) as admin``."""

    def __init__(self, address: ServerAddress, timeout: float = 10.0) -> None:
        self.address = address
        self.timeout = timeout
        self.username = f"{HARNESS_NAME_PREFIX}harness{secrets.token_hex(4)}"
        self._ws: ClientConnection | None = None
        self._reader: asyncio.Task[None] | None = None
        self._logged_in = asyncio.Event()
        self._refused: str | None = None  # why the server refused the login (another admin token)
        self._replies: dict[tuple[str, str], asyncio.Future[str]] = {}
        self._records: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.closed = asyncio.Event()

    async def __aenter__(self) -> "AdminClient":
        self._ws = await asyncio.wait_for(connect(self.address.websocket_url, max_size=None), self.timeout)
        self._reader = asyncio.create_task(self._read())
        await asyncio.wait_for(self._logged_in.wait(), self.timeout)
        if self._refused is not None:
            await self.__aexit__()
            raise AdminError(self._refused)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._ws is not None:
            await self._ws.close()

    async def _send(self, text: str) -> None:
        assert self._ws is not None
        try:
            await self._ws.send(f"|{text}")
        except WebSocketException as err:  # the server died or dropped us: a refused command, not a crash
            raise AdminError(f"the connection to the Showdown server was lost ({err})") from err

    async def _read(self) -> None:
        assert self._ws is not None
        try:
            async for message in self._ws:
                for line in str(message).split("\n"):
                    await self._handle(line)
        except Exception:  # connection lost: every waiter learns it below
            pass
        finally:
            self.closed.set()
            waiters: list[asyncio.Future[Any]] = [*self._replies.values(), *self._records.values()]
            for waiter in waiters:
                if not waiter.done():  # an error of its own each: one raised elsewhere keeps its own traceback
                    waiter.set_exception(AdminError("the connection to the Showdown server was lost"))

    async def _handle(self, line: str) -> None:
        if line.startswith("|challstr|"):
            await self._log_in()
        elif line.startswith("|updateuser|"):
            name, logged_in = line.split("|")[2:4]
            if name.strip().lstrip(" ").lower().startswith(self.username) and logged_in == "1":
                self._logged_in.set()
        elif line.startswith("|nametaken|") and REFUSED_LOGIN in line:  # not a name in use: the token is not its
            self._refused = "the server refused the harness's login: it was started with another admin token"
            self._logged_in.set()
        elif line.startswith("|nametaken|"):
            self.username = f"{HARNESS_NAME_PREFIX}harness{secrets.token_hex(4)}"
            await self._log_in()
        elif line.startswith("|pokebench|"):
            _, _, kind, payload = line.split("|", 3)
            if kind == "record":
                record = json.loads(payload)
                record_waiter = self._records.pop(record["game_id"], None)
                if record_waiter is not None and not record_waiter.done():
                    record_waiter.set_result(record)
            elif kind == "crashed":
                report = json.loads(payload)
                record_waiter = self._records.pop(report["game_id"], None)
                if record_waiter is not None and not record_waiter.done():
                    record_waiter.set_exception(SimulatorCrashed(report.get("detail", "the simulator process died"),
                                                                 report.get("cause", "simulator crashed")))
            elif kind in ("refused", "error"):
                for reply_waiter in self._replies.values():
                    if not reply_waiter.done():
                        reply_waiter.set_exception(AdminError(f"the server refused a harness command: {payload}"))
                self._replies.clear()
            else:
                key = payload.split("|", 1)[0] if kind == "format" else ("" if kind == "pong" else payload)
                reply = self._replies.pop((kind, key), None)
                if reply is not None and not reply.done():
                    reply.set_result(payload)

    async def _log_in(self) -> None:
        reserved = self.username.lower().startswith(HARNESS_NAME_PREFIX)
        token = login_token(self.address.admin_token, self.username) if reserved else ""
        await self._send(f"/trn {self.username},0,{token}")

    async def _command(self, verb: str, argument: str, expect: tuple[str, str], timeout: float | None = None) -> str:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._replies[expect] = future
        try:
            await asyncio.wait_for(self._send(f"/pokebench {verb} {self.address.admin_token} {argument}"),
                                   timeout or self.timeout)
            return await asyncio.wait_for(future, timeout or self.timeout)
        finally:  # its reply may have failed meanwhile (the connection lost as the command was sent): read it
            if self._replies.get(expect) is future:
                del self._replies[expect]
            _let_go(future)

    async def ping(self, timeout: float | None = None) -> str:
        """The server's Showdown version, if it runs PokéBench's plugin and accepts our token.

        Raises ``asyncio.TimeoutError`` when no answer comes within `timeout` (a hung server)."""
        return await self._command("ping", "", ("pong", ""), timeout)

    async def format_info(self, battle_format: str) -> dict[str, Any]:
        """What the server knows of `battle_format`: exists, name, random_teams, game_type, similar."""
        reply = await self._command("format", battle_format, ("format", battle_format))
        return json.loads(reply.split("|", 1)[1])

    def expect_record(self, game_id: str) -> asyncio.Future[dict[str, Any]]:
        """A future that gets the record of `game_id` when its battle ends."""
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._records[game_id] = future
        return future

    def forget_record(self, game_id: str) -> None:
        """Stop waiting for `game_id`'s record (one that already failed, the connection lost before the game got to
        wait for it, is read)."""
        future = self._records.pop(game_id, None)
        if future is not None:
            _let_go(future)

    async def register(self, registration: dict[str, Any]) -> None:
        """Register the seeds and side order of the next battle between two users."""
        await self._command("register", json.dumps(registration), ("registered", registration["game_id"]))

    async def void(self, game_id: str) -> None:
        """End a registered game as a tie and drop its record (a harness error)."""
        self.forget_record(game_id)
        await self._command("void", game_id, ("voided", game_id))


def _let_go(future: asyncio.Future[Any]) -> None:
    """Stop waiting for `future`: cancel it, or read the exception it failed with, so that asyncio logs no "Future
    exception was never retrieved" when it is freed (the lost connection fails every waiter, awaited or not)."""
    if not future.done():
        future.cancel()
    elif not future.cancelled():
        future.exception()


async def ping(address: ServerAddress, timeout: float = 5.0) -> str:
    """Connect, log in and ping the plugin; raise if the server is not a PokéBench server."""
    async with AdminClient(address, timeout=timeout) as admin:
        return await admin.ping()
