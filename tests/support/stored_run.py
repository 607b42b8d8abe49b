"""One small stored run, played once per test session, for the tests that only read a run.

The stored run is ``bots-smoke`` with ``pairs=1`` (6 games), not published, played once per test session on
the worker's server (:mod:`support.existing_server`): by the first xdist worker that needs it, under a file
lock in the folder the workers share, while the others wait for it. It is read-only: a test that writes (an
analysis cache, a rerun) works on a copy (:func:`copy_of`); the session fixture (``stored_run`` in
tests/conftest.py) checks at its end that no test changed it.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from pokebench.showdown.server import LocalShowdown

from support.existing_server import on_server
from support.games import REPO_DIR

NAME = "bots-smoke"
ARGS = ("+run=bots-smoke", "pairs=1", "publish=false")
_PLAYED = "played.sha256"


def play_once(shared: Path, server: LocalShowdown) -> Path:
    """The stored run's runs/ folder under `shared`, played on `server` unless a worker has played it already."""
    folder = shared / "stored-run"
    with open(shared / "stored-run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not (folder / _PLAYED).exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that failed to play it left a part
            folder.mkdir()
            overrides, env = on_server(server)
            done = subprocess.run([sys.executable, "-m", "pokebench", *ARGS, *overrides], cwd=folder,
                                  env=dict(os.environ, PYTHONPATH=str(REPO_DIR), **env), capture_output=True,
                                  text=True, timeout=900)
            assert done.returncode == 0, done.stderr[-3000:]
            (folder / _PLAYED).write_text(digest(folder / "runs"))
    return folder / "runs"


def digest(runs: Path) -> str:
    """SHA-256 over every file's path and bytes under `runs`."""
    sha = hashlib.sha256()
    for path in sorted(p for p in runs.rglob("*") if p.is_file()):
        sha.update(str(path.relative_to(runs)).encode() + b"\0" + path.read_bytes())
    return sha.hexdigest()


def unchanged(runs: Path) -> bool:
    return digest(runs) == (runs.parent / _PLAYED).read_text()


def copy_of(runs: Path, where: Path) -> Path:
    """A copy of the stored run's runs/ folder in `where` (for a test that writes into it)."""
    return Path(shutil.copytree(runs, where / "runs"))
