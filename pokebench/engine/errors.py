"""The engine bridge's one error, and the guard around every call into poke-engine."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from typing import IO, Callable, Iterator, TypeVar

T = TypeVar("T")

#: Where Rust's panic hook says a panic happened: "panicked at src/mcts.rs:114:33:".
_PANIC_SITE = re.compile(r"panicked at ([^\s:]+:\d+:\d+)")


class EngineError(ValueError):
    """A position the engine cannot take, or an engine that failed on it; the message names the field."""


_held_file: IO[bytes] | None = None  # set by hold_panic_output: one file per worker, reused by every call


def hold_panic_output() -> None:
    """From now on, keep a panic's output out of this process's file descriptor 2 (see :func:`guarded`).

    Only for a process whose work is engine calls one at a time (a search or analysis worker):
    while a call runs, what any other thread of the process writes to descriptor 2 is held too.
    """
    global _held_file
    if _held_file is None:
        _held_file = tempfile.TemporaryFile()


def guarded(what: str, call: Callable[[], T]) -> T:
    """``call()``, with any failure inside poke-engine turned into an :class:`EngineError`.

    A Rust panic (a bad enum name reaching the engine, a search on a position it cannot score)
    surfaces as ``pyo3_runtime.PanicException``, which derives from ``BaseException``, not
    ``Exception``: an ``except Exception`` lets it through. Rust's panic hook writes the panic (and,
    with ``RUST_BACKTRACE`` set, a backtrace) straight to file descriptor 2; in a worker process
    (:func:`hold_panic_output`) that output is held back during the call and only the panic's site
    goes into the error: a run's output gets no dump per panic.
    """
    with _stderr_held() as held:
        try:
            return call()
        except (KeyboardInterrupt, SystemExit):
            raise
        except EngineError:
            raise
        except BaseException as err:  # noqa: BLE001 - the panic is a BaseException (docstring)
            site = _PANIC_SITE.search(held())
            where = f" (at poke-engine's {site.group(1)})" if site else ""
            held.discard()
            raise EngineError(f"poke-engine failed {what}: {type(err).__name__}: {err}{where}") from None


class _Held:
    """What a call wrote to file descriptor 2, kept in a temporary file."""

    def __init__(self, file: IO[bytes] | None) -> None:
        self.file = file
        self.kept = True

    def __call__(self) -> str:
        if self.file is None:
            return ""
        self.file.seek(0)
        return self.file.read().decode("utf-8", "replace")

    def discard(self) -> None:
        self.kept = False


@contextlib.contextmanager
def _stderr_held() -> Iterator[_Held]:
    """File descriptor 2 into a temporary file for the block, in a process that holds (:func:`hold_panic_output`).

    What the block wrote is written back after it unless the block discarded it (a panic whose
    site went into the error).
    """
    file = _held_file
    if file is None:
        yield _Held(None)
        return
    file.seek(0)
    file.truncate()
    held = _Held(file)
    sys.stderr.flush()
    saved = os.dup(2)
    os.dup2(file.fileno(), 2)
    try:
        yield held
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        text = held()
        if held.kept and text:
            sys.stderr.write(text)
            sys.stderr.flush()
