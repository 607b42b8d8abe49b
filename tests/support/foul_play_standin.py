"""A stand-in for Foul Play in the adapter's tests: its command line, protocol and log lines, a trivial player.

It speaks to the server as Foul Play does (fp/websocket_client.py, fp/main.py): waits for
``|challstr|``, logs in with ``/trn NAME,0,`` (the empty assertion our launcher gives the
real Foul Play), sends ``/utm None``, says ``Waiting for a <format> challenge``, accepts the
first ``|pm|`` challenge addressed to it in that format, answers every request (with
``/choose default``), and after ``|win|``/``|tie`` leaves the room, dropping every message
until the room's ``deinit`` (as Foul Play does: a challenge sent then is lost). It logs its
websocket traffic at DEBUG in Foul Play's format, which is all the adapter reads.

Like Foul Play's search pool it starts a worker process that inherits the websocket and
lives until PokéBench's process is gone: killing only the main process leaves the worker
holding the connection.

It beats the launcher's heartbeat (launcher.start_heartbeat), as the real Foul Play does
when it runs through the launcher.

Faults, for the tests:
  --crash-once FILE    exit with code 3 at the game's third request, if FILE does not exist (creates it)
  --silent-once FILE   at the game's third request, answer nothing more (connected, alive), likewise once
  --stop-searching-once FILE   at the game's third request, SIGSTOP itself before answering, likewise once
  --stop-waiting-once FILE     at the game's third request, answer, then SIGSTOP itself, likewise once
  --unsupported-if FILE        exit at start as the launcher does for a checkout of another layout (code 78), if
                               FILE exists (with --crash-once FILE: the checkout changed after the first game began)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path

import websockets

from pokebench.players.foul_play import launcher
from pokebench.players.foul_play.launcher import start_heartbeat

log = logging.getLogger("standin")
#: Variables the tests plant in PokéBench's environment: a model's key and the server's admin token.
PLANTED_SECRETS = ("POKEBENCH_PLANTED_API_KEY", "POKEBENCH_ADMIN_TOKEN")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    for flag in ("--websocket-uri", "--ps-username", "--bot-mode", "--pokemon-format"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--run-count", type=int, default=1)
    parser.add_argument("--log-level", default="DEBUG")
    parser.add_argument("--crash-once", type=Path)
    parser.add_argument("--silent-once", type=Path)
    parser.add_argument("--stop-searching-once", type=Path)
    parser.add_argument("--stop-waiting-once", type=Path)
    parser.add_argument("--unsupported-if", type=Path)
    parser.add_argument("--login-delay", type=float, default=0.3, help="Foul Play sleeps 3 s after /trn")
    args, _ = parser.parse_known_args()  # --search-time-ms and the rest: Foul Play's, ignored
    return args


def start_worker() -> None:
    """A child that inherits every descriptor (the websocket too) and waits, like a search worker."""
    if os.fork() == 0:
        parent = int(os.environ.get("POKEBENCH_PARENT_PID", "0") or 0)
        while True:
            time.sleep(1.0)
            try:
                if parent > 0:
                    os.kill(parent, 0)
            except ProcessLookupError:
                os._exit(0)


def fault_now(flag_file: Path | None) -> bool:
    if flag_file is None or flag_file.exists():
        return False
    flag_file.write_text("done")
    return True


class StandIn:
    def __init__(self, args: argparse.Namespace, ws: websockets.ClientConnection) -> None:
        self.args = args
        self.ws = ws

    async def receive(self) -> str:
        message = await self.ws.recv()
        log.debug("Received message from websocket: %s", message)
        return str(message)

    async def send(self, room: str, text: str) -> None:
        message = f"{room}|{text}"
        log.debug("Sending message to websocket: %s", message)
        await self.ws.send(message)

    async def login(self) -> None:
        while not (await self.receive()).startswith("|challstr|"):
            pass
        await self.send("", f"/trn {self.args.ps_username},0,")
        start_worker()
        await asyncio.sleep(self.args.login_delay)

    async def accept_challenge(self) -> None:
        log.info("Waiting for a %s challenge", self.args.pokemon_format)
        while True:
            message = await self.receive()
            if self.is_challenge(message):
                await self.send("", f"/accept {message.split('|')[2].strip()}")
                return

    def is_challenge(self, message: str) -> bool:
        """Foul Play's test: `|pm| FROM| TO|/challenge FORMAT|FORMAT|||`, to us, in our format."""
        parts = message.split("|")
        return (len(parts) == 9 and parts[1] == "pm" and parts[3].strip() == self.args.ps_username
                and parts[4].startswith("/challenge") and parts[5] == self.args.pokemon_format)

    async def battle(self) -> None:
        tag, requests_seen = None, 0
        while True:
            message = await self.receive()
            if self.is_challenge(message):
                log.error("STANDIN-ERROR: a challenge arrived during a battle")
            if not message.startswith(">battle-"):
                continue
            room, _, body = message.partition("\n")
            tag = tag or room[1:].strip()
            if room[1:].strip() != tag:
                continue
            for line in body.split("\n"):
                if line.startswith("|win|") or line == "|tie" or line.startswith("|tie|"):
                    await self.send("", f"/leave {tag}")
                    while not (tag in (m := await self.receive()) and "deinit" in m):
                        pass
                    return
                if not line.startswith("|request|") or not line[9:].strip():
                    continue
                request = json.loads(line[9:])
                if request.get("wait"):
                    continue
                requests_seen += 1
                if requests_seen == 3 and fault_now(self.args.crash_once):
                    log.error("Traceback (most recent call last):\nRuntimeError: stand-in crash (test fault)")
                    os._exit(3)
                if requests_seen == 3 and fault_now(self.args.silent_once):
                    log.info("stand-in goes silent (test fault)")
                    await asyncio.Event().wait()
                if requests_seen == 3 and fault_now(self.args.stop_searching_once):
                    log.info("stand-in stops itself before it answers (test fault)")
                    os.kill(os.getpid(), signal.SIGSTOP)
                await self.send(tag, f"/choose default|{request.get('rqid', '')}")
                if requests_seen == 3 and fault_now(self.args.stop_waiting_once):
                    log.info("stand-in stops itself after it answered (test fault)")
                    os.kill(os.getpid(), signal.SIGSTOP)


async def main() -> None:
    start_heartbeat()
    args = parse_args()
    if args.unsupported_if is not None and args.unsupported_if.exists():
        launcher._unsupported("the stand-in's checkout changed")
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(levelname)-8s %(message)s"))
    logging.basicConfig(level=args.log_level, handlers=[handler])
    logging.getLogger("websockets").setLevel(logging.INFO)  # as Foul Play does
    given = sorted(name for name in os.environ if name in PLANTED_SECRETS)
    if given:  # Foul Play needs no key of PokéBench's: none may reach it
        log.error("STANDIN-ERROR: given the secrets %s", given)
    async with websockets.connect(args.websocket_uri, max_size=None) as ws:
        standin = StandIn(args, ws)
        await standin.login()
        for _ in range(args.run_count):
            await standin.send("", "/utm None")
            await standin.accept_challenge()
            await standin.battle()


if __name__ == "__main__":
    asyncio.run(main())
