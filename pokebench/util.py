"""Small helpers every stage uses: UTC timestamps, atomic file writes, file locks, the CPUs this process may
use, what counts as a secret."""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

__all__ = ["utc_now", "atomic_write_text", "lock_file", "usable_cpus", "is_secret", "MIN_SECRET_CHARS", "parse_shard"]

#: A shorter value is not blanked out as a secret: a one-letter "key" would maim every word it is in.
MIN_SECRET_CHARS = 8


def is_secret(value: str | None) -> bool:
    """True for a value long enough to be a secret worth blanking out of what is written."""
    return value is not None and len(value.strip()) >= MIN_SECRET_CHARS


def utc_now() -> str:
    """The current time in UTC, ISO 8601 with milliseconds and a ``Z``: ``2026-12-01T07:23:22.123Z``.

    The one timestamp format of PokéBench's records (``started_at``, ``ended_at``, ``created_at``).
    """
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that a reader sees the whole old file or the whole new one, never half.

    A temporary file of its own beside it (concurrent writers never share one), flushed and
    fsynced, then ``os.replace``; the temporary file is removed if anything fails.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _same_file(fd: int, path: Path) -> bool:
    """Whether the open file `fd` is still the file at `path`."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False


def lock_file(path: Path, mode: int) -> int | None:
    """Open `path` (made if missing, its folder too) and ``flock`` it with `mode`; the open descriptor.

    A holder may remove its lock file while it holds it, so that nothing is left behind; whoever
    locked the removed file meanwhile locks the new one. With ``fcntl.LOCK_NB`` in `mode`, None when
    another process holds the lock. The lock is released when the descriptor closes or its process ends.
    """
    refused = 0  # opens refused with the folder there: a folder that takes no files (/proc), not a race
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # the last holder removed the folder it had made for the lock: make it again
            refused += path.parent.is_dir()
            if refused > 3:
                raise
            path.parent.mkdir(parents=True, exist_ok=True)
            continue
        try:
            fcntl.flock(fd, mode)
        except BlockingIOError:
            os.close(fd)
            return None
        if _same_file(fd, path):
            return fd
        os.close(fd)  # removed by its holder between our open and our lock: lock the new one


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity: a SLURM job's ``-c``, a ``taskset``), not the machine's."""
    return max(1, len(os.sched_getaffinity(0)))


def parse_shard(value: object) -> tuple[int, int]:
    """``"I/N"`` -> (I, N) with 0 <= I < N (a run's ``shard=I/N``, ``pokebench analyse --shard I/N``); a
    ValueError that shows the form otherwise."""
    try:
        index, count = (int(part) for part in str(value).split("/"))
    except ValueError:
        index = count = -1
    if not 0 <= index < count:
        raise ValueError(f"a shard looks like I/N with 0 <= I < N (e.g. 0/4), not {value!r}")
    return index, count
