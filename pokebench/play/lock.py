"""One process per run store: a second process on the same run stops at once, naming the first.

Two processes on one run would both play every missing game (and pay for it twice). The
lock is an OS file lock (``flock``), so it is released when its process ends however it
ends, also by SIGKILL; there is never a stale lock to remove by hand.

A run folder has one folder lock, ``runs/NAME/.lock``: the whole run takes it exclusively,
a shard (``shard=I/N``) takes it shared, so the shards of a run play side by side while a
whole run and a shard never do (the whole run would play what the shard is playing). Each
store also has its own lock, ``<store>.lock``, exclusive, holding its process's pid and host name
(on a cluster a pid alone names nothing): a refused process names the holder of what it wanted,
the store's holder, or for the run folder the holders of its stores.

A start that stored nothing (refused at pre-flight, say) leaves no lock file behind: a lock file is
removed while it is held exclusively and its store does not exist, and whoever locks a file checks
afterwards that it is still the one at its path (else it locks the new one).
"""

from __future__ import annotations

import fcntl
import os
import socket
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from pokebench.util import lock_file

__all__ = ["RunLock", "RunLockedError"]


class RunLockedError(RuntimeError):
    """Another process plays this run (or this shard of it); the message names its pid and host."""


def _held_by(lock_file: Path) -> tuple[int, str] | None:
    """(pid, host) written in a lock file that some process holds right now, else None (-1, "": unknown)."""
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, host = os.pread(fd, 300, 0).decode(errors="replace").strip().partition(" ")
            return (int(pid) if pid.isdigit() else -1), host
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def _describe(holder: tuple[int, str]) -> str:
    pid, host = holder
    return f"process {pid} on {host or 'an unknown host'}" if pid > 0 else "another process"


class RunLock:
    """``with RunLock(run_dir, store_path, shard=...)``: hold the run (or one shard of it) for this process."""

    def __init__(self, run_dir: Path, store_path: Path, shard: bool = False) -> None:
        self.run_dir = Path(run_dir)
        self.store_path = Path(store_path)
        self.shard = shard
        self._fds: list[int] = []

    @property
    def store_lock(self) -> Path:
        return self.store_path.with_name(self.store_path.name + ".lock")

    def _holders(self, contested: Path) -> list[tuple[int, str]]:
        """Who holds `contested`: its own holder for a store's lock; for the run folder's, the holders of its stores."""
        files = [contested] if contested != self.run_dir / ".lock" else sorted(self.run_dir.glob("*.sqlite.lock"))
        return sorted({held for path in files if (held := _held_by(path)) is not None})

    def _refuse(self, contested: Path) -> NoReturn:
        holders = self._holders(contested)
        who = ", ".join(_describe(h) for h in holders) or "another process"
        # a shard refused at the folder's lock is refused by the whole run, not by a shard of its own name
        what = f"shard {self.store_path.stem}" if self.shard and contested == self.store_lock else "run"
        here = socket.gethostname()
        stop = "; ".join(f"`kill {pid}`" + ("" if host == here else f" on {host}") for pid, host in holders if pid > 0)
        raise RunLockedError(
            f"The {what} in {self.run_dir} is being played by {who}. Two processes on one run would play the "
            f"same games twice; wait until it ends (or stop it{f': {stop}' if stop else ''}) "
            "and start again: the run resumes where it stopped.")

    def _lock(self, path: Path, mode: int) -> int:
        fd = lock_file(path, mode | fcntl.LOCK_NB)  # a lock file removed by its last holder (see release) is made again
        if fd is None:
            self.release()
            self._refuse(path)
        self._fds.append(fd)
        return fd

    def acquire(self) -> "RunLock":
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock(self.run_dir / ".lock", fcntl.LOCK_SH if self.shard else fcntl.LOCK_EX)
        fd = self._lock(self.store_lock, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
        return self

    def release(self) -> None:
        if len(self._fds) == 2 and not self.store_path.exists():  # nothing stored: no lock file is left
            self.store_lock.unlink(missing_ok=True)
            if not self.shard and not any(self.run_dir.glob("*.sqlite")):
                (self.run_dir / ".lock").unlink(missing_ok=True)
                if not any(self.run_dir.iterdir()):
                    self.run_dir.rmdir()
        for fd in self._fds:
            os.close(fd)  # closing the descriptor drops its flock
        self._fds.clear()

    def __enter__(self) -> "RunLock":
        return self.acquire()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
