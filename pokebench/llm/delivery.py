"""Whether a chat request cut off by a cancellation had reached the provider, so was served and is paid.

A game that ends, or a run that stops, cancels the request its player has in flight. If the request's body had been
sent whole, the provider has it: it answers and bills it, and the player records it (its tokens unknown). If the
cancellation came before that (while the request was being built, waited for a connection or sent its headers), the
provider never saw it and nothing is owed. Only the HTTP client knows which: the shared client's request hook gives
every request watched by :func:`watch_delivery` httpcore's ``trace`` extension, whose ``send_request_body.started``
event marks it delivered; the client's :func:`settled_unless_cut_off` marks it settled once its attempt ends any
other way than by a cancellation; :func:`recorded_if_cut_off` records it when it is cut off after delivery.

Why ``.started`` and not ``.complete``: the body is one chunk (the client's JSON), and the socket stream hands a chunk
to the transport before the write's first suspension, so a cancellation after ``.started`` finds the body handed
over. It then lands at the write's closing checkpoint, before ``.complete``: marking there left such a paid request
unrecorded (measured: 6 of 700 cancellations, every one answered by the server). The cancellations that come before
``.started`` land while connecting or writing the headers, and the server never answers those.

One race is left, on the safe side: a body larger than the transport's buffer (about 64 KiB, a long conversation)
waits for the buffer to drain after its write; cut off there, the connection is closed and the rest is discarded,
so a request the provider never got whole is recorded as paid. On loopback it drained every time (300 KB bodies).
"""

from __future__ import annotations

import asyncio
import contextlib
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

__all__ = ["CUT_OFF", "Delivery", "watch_delivery", "recorded_if_cut_off", "cut_off_fields",
           "settled_unless_cut_off", "trace_delivery"]

#: The ``error`` of the record of a request cut off once the provider had it (its tokens and cost unknown).
CUT_OFF = "cancelled"


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


@contextlib.contextmanager
def recorded_if_cut_off(record: Callable[[], None]) -> Iterator[None]:
    """Call `record` when the block is cancelled with a request the provider has (served and paid); re-raise."""
    with watch_delivery() as delivery:
        try:
            yield
        except asyncio.CancelledError:
            if delivery.in_flight:
                record()
            raise


def cut_off_fields(cause: str, what: str) -> dict[str, str]:
    """The ``error`` and ``error_detail`` of a cut-off request's record: `cause` (the game ended, the run stopped)
    while this `what` (request, call) was in flight."""
    return {"error": CUT_OFF,
            "error_detail": f"{cause} while this {what} was in flight (served and paid, its tokens unknown)"}


@contextlib.contextmanager
def settled_unless_cut_off() -> Iterator[None]:
    """One attempt of a request: once it ends any other way than by a cancellation (answered, refused, timed out,
    failed), nothing of it is in flight."""
    cut_off = False
    try:
        yield
    except asyncio.CancelledError:
        cut_off = True
        raise
    finally:
        delivery = _watched.get()
        if delivery is not None and not cut_off:
            delivery.in_flight = False


async def trace_delivery(request: Any) -> None:
    """An HTTP client's request hook: a watched request is marked in flight once its body is handed to the socket."""
    delivery = _watched.get()
    if delivery is None:
        return

    async def trace(event: str, info: Mapping[str, Any]) -> None:
        if event.endswith("send_request_body.started"):
            delivery.in_flight = True

    request.extensions["trace"] = trace
