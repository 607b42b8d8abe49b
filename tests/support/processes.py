"""Finding the processes of a run (its server, the simulators), for the tests that inject faults."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence


@contextlib.contextmanager
def started(args: Sequence[str], **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """``subprocess.Popen(args, text=True, **popen)``; killed and reaped on the way out if it still runs."""
    proc = subprocess.Popen(args, text=True, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> object:
    """Poll `condition` until it is true; an AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def _stat(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, grandchildren...)."""
    parents: dict[int, int] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and (fields := _stat(int(proc.name))) and fields[0] != "Z":
            parents[int(proc.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def server_process(run_pid: int) -> int | None:
    """The Showdown server started by the run `run_pid` (its main node process)."""
    return next((p for p in descendants(run_pid) if "pokemon-showdown start" in cmdline(p)), None)


def simulator_processes(run_pid: int) -> list[int]:
    return [p for p in descendants(run_pid) if "room-battle.js" in cmdline(p)]


def is_gone(pid: int) -> bool:
    fields = _stat(pid)
    return not fields or fields[0] == "Z"
