"""The pinned Pokémon Showdown server: install it, check it, start it, watch it, stop it.

The embedded default is a child process on a free port of 127.0.0.1 that the
harness starts itself (:class:`LocalShowdown`). A user can instead point the
harness at a server that already runs PokéBench's plugin (:class:`RemoteShowdown`).

Command line::

    pokebench-server install   # npm ci, our config and plugin, the exported data, the saved list of formats (make setup runs it)
    pokebench-server check     # say what is missing, and how to fix it
    pokebench-server start     # run a server in the foreground (for debugging)

(``python -m pokebench.cli.server ...`` is the same.)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import asyncio
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import BinaryIO, Literal, Sequence

from pokebench import paths
from pokebench.invocation import module_command
from pokebench.showdown import format_list
from pokebench.showdown.address import ServerAddress
from pokebench.showdown.admin import AdminError, ping
from pokebench.showdown.errors import ServerError
from pokebench.showdown.node import export_generated, node_command, node_env, node_version, script_path
from pokebench.showdown.state import NODE_FLAGS, new_server_root
from pokebench.util import usable_cpus, utc_now

log = logging.getLogger(__name__)

#: Where the duplicate rolls of a mirror pair are installed (loaded before the simulator by every node process).
DUPLICATE_ROLLS = "dist/sim/pokebench-duplicate-rolls.js"
#: (our file, where Showdown reads it), relative to the server's sources and the npm package.
INSTALLED_FILES = (
    ("config/config.js", "config/config.js"),
    ("plugin/pokebench.js", "dist/server/chat-plugins/pokebench.js"),
    ("plugin/duplicate-rolls.js", DUPLICATE_ROLLS),
)
#: Folders the npm tarball lacks and the server writes to (it dies without logs/repl).
RUNTIME_DIRS = ("logs/repl", "config/chat-plugins")


@functools.cache
def pinned_version() -> str:
    """The pokemon-showdown version PokéBench pins (``showdown-server/package.json``)."""
    manifest = paths.server_sources_dir() / "package.json"
    return json.loads(manifest.read_text())["dependencies"]["pokemon-showdown"]


# --------------------------------------------------------------------------- install


def installed_version(package_dir: Path | None = None) -> str | None:
    """The version of the pokemon-showdown package in node_modules, or None."""
    manifest = (package_dir or paths.showdown_package_dir()) / "package.json"
    try:
        return json.loads(manifest.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def check_installation(package_dir: Path | None = None) -> None:
    """Raise a :class:`ServerError` naming the problem and its fix if the server is not ready to start."""
    package_dir = package_dir or paths.showdown_package_dir()
    node_version()
    version = installed_version(package_dir)
    fix = "Run `make setup` in a checkout, or `pokebench-server install` where PokéBench is installed."
    if version is None:
        raise ServerError(f"The pinned Showdown server is not installed in {package_dir}. {fix}")
    if version != pinned_version():
        raise ServerError(
            f"{package_dir} holds pokemon-showdown {version}, but PokéBench pins {pinned_version()}. {fix}"
        )
    missing = [p for p in ("pokemon-showdown", "dist/server/index.js", "dist/sim/battle.js") if not (package_dir / p).exists()]
    if missing:
        raise ServerError(f"The Showdown install in {package_dir} is half-written (missing {', '.join(missing)}). {fix}")
    stale = [dst for src, dst in INSTALLED_FILES if not _same_file(paths.server_sources_dir() / src, package_dir / dst)]
    if stale:
        raise ServerError(
            f"PokéBench's server files are missing or out of date in the Showdown install ({', '.join(stale)}). "
            "Run `pokebench-server install` (part of `make setup`)."
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def _npm_ci(server_dir: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise ServerError("npm is missing: install Node.js 20 with npm (https://nodejs.org), then run the install again.")
    done = subprocess.run([npm, "ci", "--omit=optional", "--no-audit", "--no-fund", "--loglevel=error"],
                          cwd=server_dir, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise ServerError(f"`npm ci` failed in {server_dir}: {(done.stderr or done.stdout).strip()[-2000:]}")


def install() -> None:
    """Install the pinned server where PokéBench finds it, ready to start, with its generated data.

    Outside a checkout the sources shipped in the package are first copied to the data folder
    (:func:`pokebench.paths.server_dir`). ``npm ci`` runs when the pinned version is not installed;
    then our config and plugin are copied into the npm package, the folders it needs are made, and
    the data the renderers read are exported (:func:`pokebench.showdown.node.export_generated`), and the list of
    formats the server sends each connection is saved (:func:`save_format_list`).
    """
    node_version()
    sources, target_dir = paths.server_sources_dir(), paths.server_dir()
    if sources != target_dir:
        for rel in ("package.json", "package-lock.json", *(src for src, _ in INSTALLED_FILES)):
            (target_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sources / rel, target_dir / rel)
    package_dir = paths.showdown_package_dir()
    if installed_version() != pinned_version():
        _npm_ci(target_dir)
    for rel in RUNTIME_DIRS:
        (package_dir / rel).mkdir(parents=True, exist_ok=True)
    for src, dst in INSTALLED_FILES:
        target = package_dir / dst
        temp = target.with_name(target.name + ".tmp")
        shutil.copyfile(sources / src, temp)
        os.replace(temp, target)  # never a half-copied plugin
    check_installation()
    export_generated()
    save_format_list()


def save_format_list() -> Path:
    """Save the list of formats the installed server sends each connection; the servers PokéBench starts then
    send it as saved instead of building it (:mod:`pokebench.showdown.format_list` says why)."""
    with LocalShowdown(saved_formats=None) as server:
        assert server.address is not None
        listed = asyncio.run(format_list.sent_by(server.address))
    version = installed_version()
    assert version is not None  # check_installation passed
    return format_list.save(listed, version)


# --------------------------------------------------------------------------- running servers


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


#: How many free ports a server without a requested port tries before it gives up.
PORT_TRIES = 5


class LocalShowdown:
    """The pinned server as a child process on 127.0.0.1 (the embedded default).

    Use as a context manager: the server stops when the block ends, also on
    Ctrl-C. :meth:`ensure_running` restarts it if it died (the games that were in
    flight are then harness errors, which the caller records and plays again).
    """

    def __init__(self, port: int | None = None, sim_processes: int = 1, log_path: Path | None = None,
                 startup_timeout: float = 60.0, launch_prefix: Sequence[str] = (),
                 saved_formats: Path | Literal["installed"] | None = "installed", simulator_timeout: float = 30.0) -> None:
        self.requested_port = port
        #: A command the server is started under (e.g. ``nice -n 5``, or ``strace`` in a test).
        self.launch_prefix = tuple(launch_prefix)
        self.sim_processes = max(1, sim_processes)
        self.log_path = log_path
        self.startup_timeout = startup_timeout
        #: The saved list of formats the server sends each connection: the install's, a file's, or None (Showdown
        #: builds its own at the first connection, about 2 s of CPU).
        self.saved_formats = saved_formats
        #: Seconds a simulator process may leave the plugin's question unanswered before the plugin kills it as hung
        #: (its games are voided at once, and Showdown starts another): a run gives its liveness time-out.
        self.simulator_timeout = simulator_timeout
        self.admin_token = secrets.token_hex(16)
        self.process: subprocess.Popen[bytes] | None = None
        #: This server's own Showdown root (:mod:`pokebench.showdown.state`), removed when it stops.
        self.root: Path | None = None
        self._root_hold = -1
        self.address: ServerAddress | None = None
        self.restarts = 0
        self._log_file: BinaryIO | None = None
        # The arena restarts the server from worker threads (its watcher, a game's reconnect): one at a time.
        self._lifecycle = threading.RLock()
        #: The address at which a caller saw the server fail it, and how (:meth:`mark_for_restart`).
        self._marked: tuple[ServerAddress | None, str] = (None, "")

    # The context-manager protocol ------------------------------------------------------------
    def __enter__(self) -> "LocalShowdown":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # Lifecycle -------------------------------------------------------------------------------
    def start(self) -> ServerAddress:
        with self._lifecycle:
            return self._start()

    def _start(self) -> ServerAddress:
        """Start on the requested port, else on a free one: a free port can be taken by another program
        between our pick and the server's listen (parallel test workers, shards on one machine); then the
        server starts again on another free port, up to :data:`PORT_TRIES` times."""
        check_installation()
        for attempt in range(1, PORT_TRIES + 1):
            port = self.requested_port or free_port()
            if port_is_taken(port):
                if self.requested_port is None and attempt < PORT_TRIES:
                    continue
                raise ServerError(
                    f"Port {port} on 127.0.0.1 is already in use. Choose another with `server.port=N`, "
                    "or leave `server.port` unset so PokéBench picks a free one."
                )
            try:
                return self._start_on(port)
            except ServerError:
                if self.requested_port is not None or attempt == PORT_TRIES or not port_is_taken(port):
                    raise
                log.info("Port %d was taken while the server started; starting it on another free port.", port)
        raise AssertionError("unreachable")

    def _start_on(self, port: int) -> ServerAddress:
        env = node_env(POKEBENCH_ADMIN_TOKEN=self.admin_token, POKEBENCH_SIM_PROCESSES=str(self.sim_processes),
                       POKEBENCH_PARENT_PID=str(os.getpid()), POKEBENCH_SIMULATOR_TIMEOUT=f"{self.simulator_timeout:g}")
        listed = format_list.installed_path() if self.saved_formats == "installed" else self.saved_formats
        if listed is not None and listed.is_file():
            env["POKEBENCH_FORMAT_LIST"] = str(listed)
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "ab")  # every start appends: an earlier attempt's log stays
            self._log_file.write(f"--- {utc_now()} PokéBench starts the server on {socket.gethostname()} "
                                 f"(harness pid {os.getpid()}, port {port}) ---\n".encode())
            self._log_file.flush()
        self.root, self._root_hold = new_server_root(paths.showdown_package_dir())
        self.process = subprocess.Popen(
            # parent_watch.js, loaded before Showdown: the server exits once this process is gone, from its first instant
            [*self.launch_prefix, *node_command(*NODE_FLAGS, "--require", str(script_path("parent_watch.js")),
                                                "--require", str(script_path("saved_format_list.js")),
                                                "--require", str(self.root / DUPLICATE_ROLLS),
                                                "pokemon-showdown", "start", "--skip-build", "--no-security", str(port))],
            cwd=self.root, env=env, stdin=subprocess.DEVNULL,
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
        assert self.process is not None and self.address is not None
        deadline = time.monotonic() + self.startup_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ServerError(
                    f"The Showdown server exited at start (code {self.process.returncode}). "
                    f"See its output in {self.log_path or 'the server log'}; `pokebench-server check` "
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

    def mark_for_restart(self, address: ServerAddress | None, why: str) -> None:
        """A caller saw the server at `address` fail it (`why`: it missed the liveness deadline, or it dropped the
        caller's connection and ran on): whoever calls :meth:`ensure_running` next restarts it, even if the caller
        that saw it is stopped before it could (a round of games that ends with the game the fault voided). No lock:
        the caller is the arena's event loop, which a restart in progress must not hold up, and an address from
        before that restart no longer matches."""
        self._marked = (address, why)

    def ensure_running(self, unresponsive: bool = False) -> bool:
        """Restart the server if it died, or if it is `unresponsive` (it did not answer the
        harness's ping in time: hung, or stopped) and does not answer now; True if it had to be restarted.

        A server marked at its address by :meth:`mark_for_restart` is restarted even if it answers by now (a
        SIGSTOP that ended): the games voided meanwhile would otherwise go on in it behind the harness's back, and
        their players' names stay taken in it. Not if it was restarted since (its address changed)."""
        with self._lifecycle:
            marked, marked_why = self._marked
            missed = self.address is not None and self.address == marked
            if self.is_alive() and not missed and not (unresponsive and self._unanswered()):
                return False
            if not self.is_alive():
                why = "had died"
            else:
                why = marked_why if missed else "did not answer the harness in time"
            self.stop(kill=unresponsive)
            self.requested_port = None  # the old port may be held by a lingering child
            self.restarts += 1
            self.start()
            log.warning("The Showdown server %s; it was restarted (restart %d).", why, self.restarts)
            return True

    def _unanswered(self) -> bool:
        """True unless the server answers a ping now (another caller may have restarted it already)."""
        assert self.address is not None
        try:
            asyncio.run(ping(self.address, timeout=2.0))
        except (OSError, asyncio.TimeoutError, ConnectionError, RuntimeError):
            return True
        return False

    def stop(self, kill: bool = False) -> None:
        """Stop the server and its simulators; `kill`: at once with SIGKILL (a hung server ignores SIGTERM)."""
        with self._lifecycle:
            self._stop(kill)

    def _stop(self, kill: bool) -> None:
        if self.process is not None and self.process.poll() is None and kill:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=5)
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
        if self.root is not None:
            os.close(self._root_hold)
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
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
        try:
            asyncio.run(ping(self.address, timeout=5.0))
        except AdminError as err:
            raise ServerError(
                f"The PokéBench Showdown server at {self.address.host}:{self.address.port} answers, but {err}. Set "
                "POKEBENCH_ADMIN_TOKEN to the token `pokebench-server start` printed when it started that server."
            ) from None
        except (OSError, asyncio.TimeoutError, ConnectionError) as err:
            raise ServerError(
                f"No PokéBench Showdown server answers at {self.address.host}:{self.address.port} ({err}). "
                "Start one with `pokebench-server start`, or drop `server.port` to let PokéBench start its own."
            ) from err
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def is_alive(self) -> bool:
        return True

    def mark_for_restart(self, address: ServerAddress | None, why: str) -> None:
        return None  # not ours to restart

    def ensure_running(self, unresponsive: bool = False) -> bool:
        return False  # not ours to restart: its games keep ending in harness errors until it answers again


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="pokebench-server",
        description="The pinned Pokémon Showdown server with PokéBench's plugin. A run starts one of its own; "
                    "these commands install it, check it, or start one that runs point at with server.port=PORT.",
        epilog=f"Example:\n  pokebench-server start --port 8000\n  export POKEBENCH_ADMIN_TOKEN=...  # as it prints\n"
               f"  {module_command('+run=bots-smoke', 'server.port=8000')}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="install the pinned server (npm ci), PokéBench's config and plugin, and its exported data")
    sub.add_parser("check", help="check that the pinned server is installed and ready")
    start = sub.add_parser("start", help="run the server in the foreground until Ctrl-C; it prints the admin token "
                                         "that runs on it need (POKEBENCH_ADMIN_TOKEN)")
    start.add_argument("--port", type=int, default=8000, help="the port on 127.0.0.1 (default: 8000)")
    start.add_argument("--sim-processes", type=int, default=usable_cpus(),
                       help=f"simulator processes (default: the usable CPUs, {usable_cpus()} here)")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install()
            print(f"Showdown {pinned_version()} is ready in {paths.showdown_package_dir()}")
        elif args.command == "check":
            check_installation()
            print(f"Showdown {pinned_version()} is installed and ready (Node.js {'.'.join(map(str, node_version()))}).")
        else:
            with LocalShowdown(port=args.port, sim_processes=args.sim_processes) as server:
                print(f"Showdown {pinned_version()} listens on ws://127.0.0.1:{args.port}/showdown/websocket")
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
