"""What a cluster asks of each shard: its own server state, the job's CPUs, logs that keep every attempt."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from support.games import BOTS, REPO_DIR, play, results
from pokebench.paths import showdown_package_dir
from pokebench.play.schedule import build_schedule
from pokebench.showdown.server import LocalShowdown
from pokebench.showdown.state import new_server_root

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

#: The system calls that create, change or remove a file.
WRITE_CALLS = "openat,open,creat,rename,renameat,renameat2,mkdir,mkdirat,unlink,unlinkat,symlink,symlinkat,link"


def written_paths(trace: Path) -> set[str]:
    """The files a traced process tree opened for writing, created, renamed or removed (outside /dev)."""
    paths: set[str] = set()
    for line in trace.read_text().splitlines():
        opened = re.search(r'\b(?:openat|open|creat)\((?:AT_FDCWD, )?"([^"]+)", ([A-Z_|]+)', line)
        if opened and re.search(r"O_WRONLY|O_RDWR|O_CREAT", opened.group(2)):
            paths.add(opened.group(1))
        elif re.match(r"\d+ +(?:rename|renameat2?|mkdirat?|unlinkat?|symlinkat?|link)\(", line):
            paths.update(re.findall(r'"([^"]+)"', line))
    return {p for p in paths if not p.startswith("/dev/")}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to watch the servers' files")
def test_two_servers_from_one_checkout_share_no_writable_file_and_each_start_appends_its_log(tmp_path):
    servers = {name: LocalShowdown(log_path=tmp_path / f"{name}.log", launch_prefix=[
        "strace", "-f", "-qq", "-e", f"trace={WRITE_CALLS}", "-o", str(tmp_path / f"{name}.trace")]) for name in "ab"}
    roots: dict[str, Path] = {}
    try:
        for name, server in servers.items():
            try:
                server.start()
            except Exception as err:  # e.g. ptrace not permitted in this container
                pytest.skip(f"cannot run the server under strace here: {err}")
            assert server.root is not None
            roots[name] = server.root
        spec = build_schedule("state", "state", 1, [("random", "max-damage")])[0]
        for server in servers.values():  # a battle makes Showdown write its state (logs/lastbattle.txt)
            results(play(server, [spec], BOTS))
    finally:
        for server in servers.values():
            server.stop()
    written = {name: written_paths(tmp_path / f"{name}.trace") for name in servers}
    for name, root in roots.items():
        assert f"{root}/logs/lastbattle.txt" in written[name]  # strace saw Showdown write its state...
        assert {p for p in written[name] if not p.startswith(f"{root}/")} == set()  # ...and only in its own root
        assert not root.exists()  # removed when the server stopped
    assert roots["a"] != roots["b"] and not written["a"] & written["b"]
    install = str(showdown_package_dir().resolve())
    assert not [p for paths in written.values() for p in paths if p.startswith(install)]

    server = servers["a"]  # started again (a resumed shard, a restart): its log keeps the first attempt
    server.launch_prefix = ()
    first = (tmp_path / "a.log").read_text()
    with server:
        pass
    log = (tmp_path / "a.log").read_text()
    assert log.startswith(first) and len(log) > len(first)
    starts = re.findall(r"^--- \S+ PokéBench starts the server on (\S+) ", log, flags=re.M)
    assert starts == [socket.gethostname()] * 2


@pytest.mark.skipif(shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2,
                    reason="needs taskset and at least 2 CPUs to tell one CPU from the machine's")
def test_the_embedded_server_gets_a_simulator_per_cpu_the_process_may_use_not_per_core_of_the_machine():
    cpu = str(min(os.sched_getaffinity(0)))
    child = ("from pathlib import Path; from omegaconf import OmegaConf; from pokebench.play.runner import _server; "
             "cfg = OmegaConf.create({'server': {'port': None, 'sim_processes': None, 'liveness_timeout': 30}}); "
             "print(_server(cfg, Path('unused.log')).sim_processes)")
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    pinned = subprocess.run(["taskset", "-c", cpu, sys.executable, "-c", child], env=env, capture_output=True,
                            text=True, check=True)
    free = subprocess.run([sys.executable, "-c", child], env=env, capture_output=True, text=True, check=True)
    assert int(pinned.stdout) == 1  # a job given one CPU (srun -c1, taskset) starts one simulator
    assert int(free.stdout) == len(os.sched_getaffinity(0)) > 1


def test_a_killed_harness_leaves_a_server_root_that_the_next_server_start_removes(tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from pokebench.paths import "
         "showdown_package_dir; from pokebench.showdown.state import new_server_root; "
         "print(new_server_root(showdown_package_dir(), Path(sys.argv[1]))[0], flush=True); time.sleep(60)",
         str(tmp_path)], env=dict(os.environ, PYTHONPATH=str(REPO_DIR)), stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        killed_root = Path(holder.stdout.readline().strip())
        live_root, hold = new_server_root(showdown_package_dir(), tmp_path)  # the holder runs: its root stays
        assert killed_root.is_dir() and (killed_root / "config" / "config.js").is_file()
        holder.kill()
        holder.wait()
        other_root, other_hold = new_server_root(showdown_package_dir(), tmp_path)
        assert not killed_root.exists()  # SIGKILL freed its lock: the next start removed it
        assert live_root.is_dir() and other_root.is_dir()  # a root whose harness lives is never touched
        os.close(hold)
        os.close(other_hold)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()


def test_a_root_being_made_is_never_taken_for_a_stale_one(tmp_path, monkeypatch):
    """Another harness may look for stale roots at any moment of this one's making its own, even between the
    owner file's creation and its lock (under load a process can wait there for a while)."""
    from pokebench.showdown import state

    lock = state.fcntl.flock
    looked: list[bool] = []

    def another_harness_looks_first(fd: int, operation: int) -> None:
        if operation == state.fcntl.LOCK_EX and not looked:  # this harness's lock, not the check's own attempt
            looked.append(True)
            state.remove_stale_roots(tmp_path)
        lock(fd, operation)

    monkeypatch.setattr(state.fcntl, "flock", another_harness_looks_first)
    root, hold = new_server_root(showdown_package_dir(), tmp_path)
    try:
        assert looked and (root / "config" / "config.js").is_file() and (root / "dist").exists()
        assert [p.name for p in root.glob(".pokebench-owner*")] == [state.OWNER_FILE]  # not removed meanwhile
        monkeypatch.setattr(state.fcntl, "flock", lock)
        state.remove_stale_roots(tmp_path)  # held: still not stale
        assert (root / "dist").exists()
    finally:
        os.close(hold)
