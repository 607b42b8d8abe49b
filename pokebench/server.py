"""The pinned Pokémon Showdown server: install it, start it, watch it, stop it.

The embedded default is a child process on a free port of 127.0.0.1 that the
harness starts itself (:class:`LocalShowdown`). A user can instead point the
harness at a server that already runs PokéBench's plugin (:class:`RemoteShowdown`).

Command line::

    python -m pokebench.server install   # copy our config and plugin into the npm package
    python -m pokebench.server check     # say what is missing, and how to fix it
    python -m pokebench.server start     # run a server in the foreground (for debugging)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
SERVER_DIR = REPO_DIR / "showdown-server"
PACKAGE_DIR = SERVER_DIR / "node_modules" / "pokemon-showdown"
PINNED_VERSION = json.loads((SERVER_DIR / "package.json").read_text())["dependencies"]["pokemon-showdown"]
MIN_NODE_MAJOR = 18

#: (our file, where Showdown reads it), relative to SERVER_DIR and PACKAGE_DIR.
INSTALLED_FILES = (
    ("config/config.js", "config/config.js"),
    ("plugin/pokebench.js", "dist/server/chat-plugins/pokebench.js"),
)
#: Folders the npm tarball lacks and the server writes to (it dies without logs/repl).
RUNTIME_DIRS = ("logs/repl", "config/chat-plugins")


class ServerError(RuntimeError):
    """The Showdown server cannot be installed, started or reached; the message says how to fix it."""


# --------------------------------------------------------------------------- install


def node_version(node: str = "node") -> tuple[int, ...]:
    """The version of Node.js on PATH, or a :class:`ServerError` that says how to get it."""
    exe = shutil.which(node)
    if exe is None:
        raise ServerError(
            f"Node.js is not installed (no `{node}` on PATH). PokéBench's Showdown server "
            f"needs Node.js {MIN_NODE_MAJOR} or newer (20 recommended): install it from "
            "https://nodejs.org or your package manager, then run `make setup`."
        )
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    match = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.strip())
    if not match:
        raise ServerError(f"Could not read the Node.js version from `{exe} --version` (got {out!r}).")
    version = tuple(int(x) for x in match.groups())
    if version[0] < MIN_NODE_MAJOR:
        raise ServerError(
            f"Node.js {out.strip()} is too old: Showdown {PINNED_VERSION} needs Node.js "
            f"{MIN_NODE_MAJOR} or newer (20 recommended). Upgrade Node.js, then run `make setup`."
        )
    return version


def installed_version(package_dir: Path = PACKAGE_DIR) -> str | None:
    """The version of the pokemon-showdown package in node_modules, or None."""
    manifest = package_dir / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def check_installation(package_dir: Path = PACKAGE_DIR) -> None:
    """Raise a :class:`ServerError` naming the problem and its fix if the server is not ready to start."""
    node_version()
    version = installed_version(package_dir)
    fix = "Run `make setup` (or `cd showdown-server && npm ci --omit=optional && cd .. && python -m pokebench.server install`)."
    if version is None:
        raise ServerError(f"The pinned Showdown server is not installed in {package_dir}. {fix}")
    if version != PINNED_VERSION:
        raise ServerError(
            f"{package_dir} holds pokemon-showdown {version}, but PokéBench pins {PINNED_VERSION}. {fix}"
        )
    missing = [p for p in ("pokemon-showdown", "dist/server/index.js", "dist/sim/battle.js") if not (package_dir / p).exists()]
    if missing:
        raise ServerError(f"The Showdown install in {package_dir} is half-written (missing {', '.join(missing)}). {fix}")
    stale = [dst for src, dst in INSTALLED_FILES if not _same_file(SERVER_DIR / src, package_dir / dst)]
    if stale:
        raise ServerError(
            f"PokéBench's server files are missing or out of date in the Showdown install ({', '.join(stale)}). "
            "Run `python -m pokebench.server install` (part of `make setup`)."
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def install() -> None:
    """Copy our config and plugin into the npm package and create the folders it needs."""
    node_version()
    if installed_version() is None:
        raise ServerError(
            f"pokemon-showdown is not in {PACKAGE_DIR}: run `npm ci` in {SERVER_DIR} first (`make setup` does both)."
        )
    for rel in RUNTIME_DIRS:
        (PACKAGE_DIR / rel).mkdir(parents=True, exist_ok=True)
    for src, dst in INSTALLED_FILES:
        target = PACKAGE_DIR / dst
        temp = target.with_name(target.name + ".tmp")
        shutil.copyfile(SERVER_DIR / src, temp)
        os.replace(temp, target)  # never a half-copied plugin
    check_installation()


# --------------------------------------------------------------------------- running servers


@dataclass(frozen=True)
class ServerAddress:
    """Where a PokéBench-ready Showdown server listens, and the secret that lets the harness register games."""

    host: str
    port: int
    admin_token: str

    @property
    def websocket_url(self) -> str:
        return f"ws://{self.host}:{self.port}/showdown/websocket"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on `host` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_is_taken(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
        return False


class LocalShowdown:
    """The pinned server as a child process on 127.0.0.1 (the embedded default).

    Use as a context manager: the server stops when the block ends, also on
    Ctrl-C. :meth:`ensure_running` restarts it if it died (the games that were in
    flight are then harness errors, which the caller records and plays again).
    """

    def __init__(self, port: int | None = None, sim_processes: int = 1, log_path: Path | None = None,
                 startup_timeout: float = 60.0) -> None:
        self.requested_port = port
        self.sim_processes = max(1, sim_processes)
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        self.admin_token = secrets.token_hex(16)
        self.process: subprocess.Popen[bytes] | None = None
        self.address: ServerAddress | None = None
        self.restarts = 0
        self._log_file = None

    # The context-manager protocol ------------------------------------------------------------
    def __enter__(self) -> "LocalShowdown":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Lifecycle -------------------------------------------------------------------------------
    def start(self) -> ServerAddress:
        check_installation()
        port = self.requested_port or free_port()
        if port_is_taken(port):
            raise ServerError(
                f"Port {port} on 127.0.0.1 is already in use. Choose another with `server.port=N`, "
                "or leave `server.port` unset so PokéBench picks a free one."
            )
        env = dict(os.environ, POKEBENCH_ADMIN_TOKEN=self.admin_token, POKEBENCH_SIM_PROCESSES=str(self.sim_processes),
                   POKEBENCH_PARENT_PID=str(os.getpid()))
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            ["node", "pokemon-showdown", "start", "--skip-build", "--no-security", str(port)],
            cwd=PACKAGE_DIR, env=env, stdin=subprocess.DEVNULL,
            stdout=self._log_file or subprocess.DEVNULL, stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: we stop the simulators with it
        )
        self.address = ServerAddress("127.0.0.1", port, self.admin_token)
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self.address

    def _wait_until_ready(self) -> None:
        from pokebench.showdown_admin import ping

        assert self.process is not None and self.address is not None
        deadline = time.monotonic() + self.startup_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(
                    f"The Showdown server exited at start (code {self.process.returncode}). "
                    f"See its output in {self.log_path or 'the server log'}; `python -m pokebench.server check` "
                    "names common causes."
                )
            try:
                asyncio.run(ping(self.address, timeout=2.0))
                return
            except (OSError, asyncio.TimeoutError, ConnectionError) as err:
                last_error = err
                time.sleep(0.2)
        raise ServerError(
            f"The Showdown server did not answer on port {self.address.port} within {self.startup_timeout:.0f} s "
            f"(last error: {last_error}). If another program holds that port, leave `server.port` unset."
        )

    def is_alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def ensure_running(self) -> bool:
        """Restart the server if it died; True if it had to be restarted."""
        if self.is_alive():
            return False
        self.stop()
        self.requested_port = None  # the old port may be held by a lingering child
        self.restarts += 1
        self.start()
        return True

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=5)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.process.wait(timeout=5)
        if self.process is not None:
            try:  # the simulator children share the group; make sure none outlives us
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process = None
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


class RemoteShowdown:
    """A server that is already running PokéBench's plugin; the harness only connects to it."""

    def __init__(self, host: str, port: int, admin_token: str | None) -> None:
        if not admin_token:
            raise ServerError(
                "To use a server that is already running, set POKEBENCH_ADMIN_TOKEN to the token that server "
                "was started with (the plugin refuses game registrations without it)."
            )
        self.address = ServerAddress(host, port, admin_token)
        self.restarts = 0

    def __enter__(self) -> "RemoteShowdown":
        from pokebench.showdown_admin import ping

        try:
            asyncio.run(ping(self.address, timeout=5.0))
        except (OSError, asyncio.TimeoutError, ConnectionError) as err:
            raise ServerError(
                f"No PokéBench Showdown server answers at {self.address.host}:{self.address.port} ({err}). "
                "Start one with `python -m pokebench.server start`, or drop `server.port` to let PokéBench start its own."
            ) from err
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def is_alive(self) -> bool:
        return True

    def ensure_running(self) -> bool:
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pokebench.server", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="copy PokéBench's config and plugin into the installed npm package")
    sub.add_parser("check", help="check that the pinned server is installed and ready")
    start = sub.add_parser("start", help="run the server in the foreground until Ctrl-C")
    start.add_argument("--port", type=int, default=8000)
    start.add_argument("--sim-processes", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install()
            print(f"Showdown {PINNED_VERSION} is ready in {PACKAGE_DIR}")
        elif args.command == "check":
            check_installation()
            print(f"Showdown {PINNED_VERSION} is installed and ready (Node.js {'.'.join(map(str, node_version()))}).")
        else:
            with LocalShowdown(port=args.port, sim_processes=args.sim_processes) as server:
                print(f"Showdown {PINNED_VERSION} listens on ws://127.0.0.1:{args.port}/showdown/websocket")
                print(f"export POKEBENCH_ADMIN_TOKEN={server.admin_token}  # for `server.port={args.port}` runs")
                while server.is_alive():
                    time.sleep(1)
                print("The server exited.", file=sys.stderr)
                return 1
    except ServerError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
