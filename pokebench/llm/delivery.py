"""Whether a chat request cut off by a cancellation had reached the provider, so was served and is paid.

A game that ends, or a run that stops, cancels the request its player has in flight. If the request's body had been
sent whole, the provider has it: it answers and bills it, and the player records it (its tokens unknown). If the
cancellation came before that (while the request was being built, waited for a connection or was being written), the
provider never saw it and nothing is owed. Only the HTTP client knows which: the shared client's request hook gives
every request watched by :func:`watch_delivery` httpcore's ``trace`` extension, whose
``send_request_body.complete`` event marks it delivered; :meth:`ChatClient._send <pokebench.llm.client.ChatClient>`
marks it settled once its attempt ends any other way than by a cancellation.

One race is left: a body larger than the transport's buffer (about 64 KiB, a long conversation) may wait for the
buffer to drain after its last write; cut off there, the connection is closed and what was left is discarded, so
the provider does not get it whole, unless the buffer drains in the loop's one turn before the abort (then a paid
request goes unrecorded). Marking earlier (at ``.started``) would instead record requests the provider never got.
"""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

__all__ = ["Delivery", "watch_delivery", "settled", "trace_delivery"]


@dataclass
class Delivery:
    """The state of the requests made while it is watched: ``in_flight`` when one was delivered, unanswered."""

    in_flight: bool = False


_watched: ContextVar[Delivery | None] = ContextVar("pokebench_delivery", default=None)


@contextlib.contextmanager
def watch_delivery() -> Iterator[Delivery]:
    """Watch the requests made in this block (and in the tasks it starts): read ``in_flight`` when it is cancelled."""
    delivery = Delivery()
    token = _watched.set(delivery)
    try:
        yield delivery
    finally:
        _watched.reset(token)


def settled() -> None:
    """The watched request's attempt ended (answered, refused, timed out, failed): nothing of it is in flight."""
    delivery = _watched.get()
    if delivery is not None:
        delivery.in_flight = False


async def trace_delivery(request: Any) -> None:
    """An HTTP client's request hook: a watched request is marked in flight once its body is sent whole."""
    delivery = _watched.get()
    if delivery is None:
        return

    async def trace(event: str, info: Mapping[str, Any]) -> None:
        if event.endswith("send_request_body.complete"):
            delivery.in_flight = True

    request.extensions["trace"] = trace
