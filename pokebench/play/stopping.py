"""A run's event loop, stopped by SIGTERM as by Ctrl-C whatever SIGINT's handler is.

``asyncio.run`` stops gracefully on Ctrl-C only where SIGINT has Python's default handler: it cancels its main
task, whose cleanup voids the games in flight and writes their answers, and raises KeyboardInterrupt once that is
done. A script's background job starts with SIGINT ignored, and Python keeps it so. There asyncio installs no
handler, and the KeyboardInterrupt that SIGTERM raised in the loop cancelled every task at once: the run took 30 s to
stop. :func:`run_main` keeps its running main task where :func:`interrupt` cancels it the way asyncio's Ctrl-C does.
"""

from __future__ import annotations

import asyncio
from typing import Any, Coroutine, TypeVar

T = TypeVar("T")

_main_tasks: list[asyncio.Task[Any]] = []
_interrupted = False


def run_main(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)``; after :func:`interrupt`, a KeyboardInterrupt once `coro`'s cleanup is done."""
    global _interrupted
    _interrupted = False

    async def main() -> T:
        task = asyncio.current_task()
        assert task is not None
        _main_tasks.append(task)
        try:
            return await coro
        finally:
            _main_tasks.remove(task)

    try:
        result = asyncio.run(main())
    except asyncio.CancelledError:
        if _interrupted:
            raise KeyboardInterrupt from None
        raise
    if _interrupted:
        raise KeyboardInterrupt
    return result


def interrupt() -> bool:
    """Cancel the running :func:`run_main`'s task, as asyncio's Ctrl-C does (from a signal handler); False when none
    runs, or when it was interrupted already (the caller then raises KeyboardInterrupt: a second signal forces)."""
    global _interrupted
    if not _main_tasks or _interrupted:
        return False
    _interrupted = True
    task = _main_tasks[-1]
    task.get_loop().call_soon_threadsafe(task.cancel)
    return True
