"""A folder of its own for each Showdown server: its code shared, its writable files its own.

Showdown writes its state (``logs/lastbattle.txt``, ``config/chatrooms.json``,
``config/chat-plugins/*.json``, ...) relative to its package folder, whatever the working
folder (``lib/fs.ts`` resolves every path from its own file's location). Two servers started
from one install would write the same files, and the shards of a run do exactly that
(``CRASH: ENOENT rename`` when one renames the temporary file the other just renamed).

:func:`server_root` makes a root that looks like the package: every entry a symbolic link to
the install, except the folders Showdown writes to. Those are real folders of this root:
``logs/`` and ``config/chat-plugins/`` (nothing but state) start empty; in ``config/`` and
``databases/`` the files are copies (Showdown writes some of them in place) and the folders of
schemas links. Node started with ``--preserve-symlinks`` and ``--preserve-symlinks-main``
(:data:`NODE_FLAGS`) keeps the paths of the links, so Showdown takes this root for its own and
writes only here; its simulator processes inherit the flags.

A root lives in the temporary folder and is removed when its server stops. A harness killed
with SIGKILL cannot remove it: the root holds a file its harness keeps locked (``flock``, freed
however the process ends), and :func:`new_server_root` removes the roots nobody holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

__all__ = ["NODE_FLAGS", "STATE_DIRS", "MIXED_DIRS", "ROOT_PREFIX", "server_root", "new_server_root"]

#: Node's flags that keep a linked file's own path (Showdown's root) instead of its target's.
NODE_FLAGS = ("--preserve-symlinks", "--preserve-symlinks-main")

#: How the roots in the temporary folder are named.
ROOT_PREFIX = "pokebench-showdown-"
#: The file of a root that its harness holds locked while the root is in use.
OWNER_FILE = ".pokebench-owner"

#: The package's folders that hold only Showdown's state: each server starts with them empty.
STATE_DIRS = ("logs", "logs/repl", "config/chat-plugins")
#: The package's folders that hold files Showdown reads and writes: each server gets copies.
MIXED_DIRS = ("config", "databases")


def _mirror(source: Path, target: Path, rel: str) -> None:
    """Fill `target`, the writable folder `rel` of the new root, from the package's folder `source`."""
    target.mkdir(parents=True, exist_ok=True)
    for entry in sorted(source.iterdir()):
        sub = f"{rel}/{entry.name}" if rel else entry.name
        if sub in MIXED_DIRS:
            _mirror(entry, target / entry.name, sub)
        elif sub in STATE_DIRS:
            (target / entry.name).mkdir()
        elif entry.is_file() and rel in MIXED_DIRS:
            shutil.copyfile(entry, target / entry.name)
        else:
            (target / entry.name).symlink_to(entry)


def server_root(package_dir: Path, root: Path) -> Path:
    """Make `root` (a new or empty folder) a Showdown root over the install in `package_dir`; returns `root`.

    The npm dependencies next to the package are linked as ``root/node_modules``: with the links'
    paths kept, Node looks for them from the root.
    """
    package_dir = package_dir.resolve()
    _mirror(package_dir, root, "")
    for rel in STATE_DIRS:
        (root / rel).mkdir(parents=True, exist_ok=True)
    if not (root / "node_modules").exists():
        (root / "node_modules").symlink_to(package_dir.parent)
    return root


def _held(lock_file: Path) -> bool:
    try:
        fd = os.open(lock_file, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def remove_stale_roots(temp_dir: Path) -> None:
    """Remove the roots in `temp_dir` that no live harness holds (their harness was killed)."""
    for root in temp_dir.glob(f"{ROOT_PREFIX}*"):
        owner = root / OWNER_FILE
        if owner.exists() and not _held(owner):
            shutil.rmtree(root, ignore_errors=True)


def new_server_root(package_dir: Path, temp_dir: Path | None = None) -> tuple[Path, int]:
    """A new root in `temp_dir` (the temporary folder) over `package_dir`, and the descriptor that holds it
    (close it, then remove the root, when its server stops); stale roots of killed harnesses go first."""
    temp_dir = temp_dir or Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        remove_stale_roots(temp_dir)
    root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX, dir=temp_dir))
    # The owner file takes its name only once locked: created under its name and then locked, it was a stale
    # root's for a moment, and another harness starting a server then removed the new root (seen in CI: the
    # server's first file was missing)
    unnamed = root / f"{OWNER_FILE}.new"
    fd = os.open(unnamed, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    unnamed.rename(root / OWNER_FILE)
    return server_root(package_dir, root), fd
