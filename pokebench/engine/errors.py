"""The engine bridge's one error, and the guard around every call into poke-engine."""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


class EngineError(ValueError):
    """A position the engine cannot take, or an engine that failed on it; the message names the field."""


def guarded(what: str, call: Callable[[], T]) -> T:
    """``call()``, with any failure inside poke-engine turned into an :class:`EngineError`.

    A Rust panic (a bad enum name reaching the engine) surfaces as ``pyo3_runtime.PanicException``,
    which derives from ``BaseException``, not ``Exception``: an ``except Exception`` lets it through.
    """
    try:
        return call()
    except (KeyboardInterrupt, SystemExit):
        raise
    except EngineError:
        raise
    except BaseException as err:  # noqa: BLE001 - the panic is a BaseException (docstring)
        raise EngineError(f"poke-engine failed {what}: {type(err).__name__}: {err}") from None
