"""Where a server listens (:class:`ServerAddress`): what the server process hands out and every client of it takes."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ServerAddress"]


@dataclass(frozen=True)
class ServerAddress:
    """Where a PokéBench-ready Showdown server listens, and the secret that lets the harness register games."""

    host: str
    port: int
    admin_token: str

    @property
    def websocket_url(self) -> str:
        return f"ws://{self.host}:{self.port}/showdown/websocket"
