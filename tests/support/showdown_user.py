"""A plain Showdown client for the tests: what any local user can run against the server."""

from __future__ import annotations

import asyncio

from websockets.asyncio.client import connect

__all__ = ["User"]


class User:
    """A plain Showdown client: what any local user can run against the server."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.lines: list[str] = []
        self.cursor = 0

    async def __aenter__(self) -> "User":
        self.ws = await connect(self.url)
        self.reader = asyncio.create_task(self._read())
        await self.until(lambda line: line.startswith("|challstr|"))
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.reader.cancel()
        await self.ws.close()

    async def _read(self) -> None:
        async for message in self.ws:
            room = ""
            for line in str(message).split("\n"):
                if line.startswith(">"):
                    room = line[1:]
                self.lines.append(f"{room}{line}" if line.startswith("|init|") else line)

    async def send(self, text: str, room: str = "") -> None:
        await self.ws.send(f"{room}|{text}")

    async def until(self, match, timeout: float = 20.0) -> str:
        async def seek() -> str:  # from the line after the last one matched
            while True:
                while self.cursor < len(self.lines):
                    line = self.lines[self.cursor]
                    self.cursor += 1
                    if match(line):
                        return line
                await asyncio.sleep(0.05)
        return await asyncio.wait_for(seek(), timeout)

    async def log_in(self, name: str) -> str:
        """Try to take `name`; the server's answer (|updateuser| when it worked, |nametaken| when not)."""
        await self.send(f"/trn {name},0,")
        return await self.until(lambda line: line.startswith("|nametaken|") or (
            line.startswith("|updateuser|") and line.split("|")[2].strip().lower() == name.lower()))
