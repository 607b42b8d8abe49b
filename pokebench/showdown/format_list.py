"""The list of formats Showdown sends every connection as it connects, saved once at install.

Showdown builds that list (the ``|formats|`` line) at a server's first connection from the rule table of
every format it shows, which loads the data of every mod they name: about 2 s of CPU, two thirds of a
server's start, and the harness's first connection waits for it. The list depends only on the installed
Showdown, so ``pokebench-server install`` saves the one its server sends (:func:`pokebench.showdown.server.
save_format_list`), and every server the harness starts is given the file and sends it as saved
(``showdown-server/scripts/saved_format_list.js``, which checks that the file's first line is the version of
the Showdown it runs in; otherwise Showdown builds its own, as before).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from websockets.asyncio.client import connect
from websockets.exceptions import WebSocketException

from pokebench import paths
from pokebench.showdown.address import ServerAddress
from pokebench.showdown.errors import ServerError
from pokebench.util import atomic_write_text

__all__ = ["FILE", "installed_path", "sent_by", "save"]

#: The saved list's file in the generated folder: the Showdown version on its first line, the list on its second.
FILE = "format-list.txt"


def installed_path() -> Path:
    """Where the install saves the list (in the generated folder)."""
    return paths.generated_dir() / FILE


async def sent_by(address: ServerAddress, timeout: float = 60.0) -> str:
    """The ``|formats|...`` line the server at `address` sends a new connection."""
    try:
        async with asyncio.timeout(timeout), connect(address.websocket_url, max_size=None) as websocket:
            async for message in websocket:
                for line in str(message).split("\n"):
                    if line.startswith("|formats"):
                        return line
    except (OSError, TimeoutError, WebSocketException) as err:
        raise ServerError(f"The Showdown server at {address.websocket_url} did not send its list of formats "
                          f"({err!r})") from err
    raise ServerError(f"The Showdown server at {address.websocket_url} closed the connection before sending "
                      "its list of formats")


def save(listed: str, version: str, path: Path | None = None) -> Path:
    """Write `listed` as the list of Showdown `version` to `path` (the install's by default), whole or not at all."""
    path = path or installed_path()
    atomic_write_text(path, f"{version}\n{listed}")
    return path
