"""Faults injected into real runs: a hung server, a killed simulator, a second process, damaged stores.

Each run is a real `python -m pokebench` with its own pinned Showdown server; each test is
bounded by the time-outs of its subprocess calls. What is asserted is what the issue asks:
the run finishes in one start, no game is lost, none is counted twice, and the harness
error that the fault caused is recorded with its cause.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest

from support.games import REPO_DIR
from support.kill_when_stored import stored_games
from support.processes import is_gone, server_process, simulator_processes, started, wait_for
from pokebench.play.schedule import build_schedule
from pokebench.results.store import MIGRATIONS, RunStore

ENV = dict(os.environ, PYTHONPATH=f"{REPO_DIR}{os.pathsep}{REPO_DIR / 'tests'}")
SLOW_RUN = ("+run=bots-smoke", "+players.slow._target_=support.crashing_bots.SlowBot", "matchups=[[slow,random]]",
            "publish=false")


def pokebench_args(*overrides: str) -> list[str]:
    return [sys.executable, "-m", "pokebench", *overrides]


def planned_ids(name: str, pairs: int, matchups: list[tuple[str, str]]) -> list[str]:
    return sorted(s.game_id for s in build_schedule(name, "pokebench-2026", pairs, matchups))


# ---- the server hangs, a simulator dies ----------------------------------------------------------

def _fault_mid_run(tmp_path: Path, name: str, inject: Callable[[int], int], *overrides: str) -> tuple[str, int]:
    """Start a slow run, inject a fault once its 4 games are in flight; return (output, the process hit)."""
    args = pokebench_args(*SLOW_RUN, "pairs=2", "concurrency=4", f"name={name}", *overrides)
    with started(args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT) as proc:
        # the store is made once the server has said it knows the format, just before the first game
        wait_for(lambda: (tmp_path / "runs" / name / "store.sqlite").exists(), 90, "the run's first games")
        time.sleep(2)  # SlowBot takes 0.2 s per decision: the four games are in flight now
        victim = inject(proc.pid)
        output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, output[-3000:]
    return output, victim


def _assert_complete_once(tmp_path: Path, name: str, cause: str) -> None:
    with RunStore.open_existing(tmp_path / "runs" / name / "store.sqlite") as store:
        games = store.games()
        errors = store.harness_errors()
    assert sorted(games.game_id) == planned_ids(name, 2, [("slow", "random")])  # none lost, none twice
    assert cause in set(errors.cause), errors
    assert set(errors.game_id) <= set(games.game_id)


@pytest.mark.slow
def test_a_sigstopped_server_is_restarted_within_the_liveness_deadline_and_the_run_ends_in_one_start(tmp_path):
    def stop_server(run_pid: int) -> int:
        pid = server_process(run_pid)
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        return pid

    output, stopped = _fault_mid_run(tmp_path, "hang", stop_server, "server.liveness_timeout=3")
    assert "did not answer a ping within 3 s" in output
    assert "did not answer the harness in time; it was restarted" in output
    assert is_gone(stopped), "the hung server was not killed"
    _assert_complete_once(tmp_path, "hang", "server hung")


@pytest.mark.server
def test_a_server_seen_hung_is_restarted_by_the_next_arena_even_when_the_one_that_saw_it_stopped_first(tmp_path):
    """The fault sweep's retry round × server pause, made certain: a round's last game is voided as the server
    misses the liveness deadline, and the round ends (its arena's watcher cancelled) before the restart began.
    The next round's arena must not play on in the old server, where the voided game may still hold its names."""
    from pokebench.play.arena import Arena
    from pokebench.showdown.server import LocalShowdown

    async def seen_hung_then_stopped(server: LocalShowdown) -> None:
        arena = Arena(server, {}, "gen9randombattle", 300, 1, liveness_timeout=1.0)
        conn = await arena._current()
        watcher = asyncio.create_task(arena._watch_server())
        os.kill(pid, signal.SIGSTOP)
        while not conn.dead.is_set():
            await asyncio.sleep(0.02)
        watcher.cancel()  # the round is over: its arena stops watching, mid-way to the restart
        await asyncio.gather(watcher, return_exceptions=True)
        os.kill(pid, signal.SIGCONT)  # the pause ends by itself
        await Arena(server, {}, "gen9randombattle", 300, 1, liveness_timeout=1.0)._current()

    with LocalShowdown(sim_processes=1, log_path=tmp_path / "showdown.log") as server:
        assert server.process is not None
        pid, address = server.process.pid, server.address
        asyncio.run(seen_hung_then_stopped(server))
        assert server.restarts == 1 and server.address != address
        assert is_gone(pid), "the server seen hung was not killed"


@pytest.mark.server
def test_a_game_voided_as_the_harness_connection_drops_leaves_the_server_marked_for_the_next_arena(tmp_path):
    """The fault sweep's retry round × harness dropped, made certain (it failed CI once): the game waiting for its
    record learns of the drop before the watcher's look, and its round ends there. The server runs on with that
    game and its players' names: the next round's arena must restart it, not replay the game beside it."""
    from pokebench.play.arena import Arena
    from pokebench.showdown.server import LocalShowdown

    async def dropped_then_round_over(server: LocalShowdown) -> tuple[str, str]:
        arena = Arena(server, {}, "gen9randombattle", 300, 1, liveness_timeout=5.0)
        conn = await arena._current()
        record = conn.admin.expect_record("a-game")
        conn.admin._ws.transport.abort()  # a TCP reset; no watcher runs: the round's game sees it first
        await conn.admin.closed.wait()
        cause = await arena._wait_for_end(record, asyncio.Event(), conn, {})
        await Arena(server, {}, "gen9randombattle", 300, 1, liveness_timeout=5.0)._current()
        return cause

    with LocalShowdown(sim_processes=1, log_path=tmp_path / "showdown.log") as server:
        assert server.process is not None
        pid, address = server.process.pid, server.address
        cause = asyncio.run(dropped_then_round_over(server))
        assert cause == ("server connection lost", "the harness's own connection to the server closed")
        assert server.restarts == 1 and server.address != address
        assert is_gone(pid), "the server that ran on with the voided game was not stopped"


@pytest.mark.slow
@pytest.mark.parametrize(("fault", "sig", "cause", "words"), [
    ("killed", signal.SIGKILL, "simulator crashed", "simulator process {pid} died"),
    # stopped for good: Showdown would give it every new battle (it has the fewest once its games are voided)
    ("hung", signal.SIGSTOP, "simulator hung", "simulator process {pid} answered nothing in 3 s and was killed"),
])
def test_a_killed_or_hung_simulator_process_voids_its_games_at_once_and_the_run_ends_in_one_start(
        tmp_path, fault, sig, cause, words):
    struck: list[int] = []

    def strike_simulator(run_pid: int) -> int:
        sims = simulator_processes(run_pid)
        assert len(sims) == 2
        os.kill(sims[0], sig)
        struck.append(sims[0])
        return sims[0]

    name = f"sim{fault}"
    try:  # stall_timeout=600: only the plugin's report can void those games before the run's time-out
        _, victim = _fault_mid_run(tmp_path, name, strike_simulator, "server.sim_processes=2", "stall_timeout=600",
                                   "server.liveness_timeout=3")
    finally:
        for pid in struck:  # a stopped process the plugin did not kill would outlive the test
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    with RunStore.open_existing(tmp_path / "runs" / name / "store.sqlite") as store:
        errors = store.harness_errors()
    voided = errors[errors.cause == cause]
    assert len(voided) and all(words.format(pid=victim) in d for d in voided.detail), errors
    _assert_complete_once(tmp_path, name, cause)


# ---- one process per run -------------------------------------------------------------------------

@pytest.mark.slow
def test_a_second_process_on_a_running_run_stops_at_once_naming_the_first(tmp_path):
    # the first run's games wait for the test (the hold file): on a loaded machine a run of 2 slow games
    # could otherwise end before the second process gets as far as the run's lock
    hold = tmp_path / "hold"
    hold.touch()
    args = pokebench_args("+run=bots-smoke", "+players.slow._target_=support.crashing_bots.HeldBot",
                          "matchups=[[slow,random]]", "publish=false", "pairs=1", "name=locked")
    env = dict(ENV, HOLD_FILE=str(hold))
    first = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: server_process(first.pid), 60, "the first run's server")
        for extra in ((), ("shard=0/2",)):  # the same run, or a shard of it while the whole run plays
            second = subprocess.run(args + list(extra), cwd=tmp_path, env=env, capture_output=True, text=True,
                                    timeout=120)
            assert second.returncode == 2, second.stderr[-2000:]
            assert f"is being played by process {first.pid}" in second.stderr
            assert "Traceback" not in second.stderr
        hold.unlink()
        _, stderr = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, stderr[-2000:]
    run_dir = tmp_path / "runs" / "locked"
    assert not (run_dir / "shard-0-of-2.sqlite").exists()
    with RunStore.open_existing(run_dir / "store.sqlite") as store:
        assert sorted(store.done_game_ids()) == planned_ids("locked", 1, [("slow", "random")])


def test_shards_of_one_run_hold_the_run_together_but_not_the_same_shard(tmp_path):
    from pokebench.play.lock import RunLock, RunLockedError

    run_dir = tmp_path / "run"

    def hold(shard: int) -> subprocess.Popen[str]:
        holder = subprocess.Popen(
            [sys.executable, "-c", "import sys, time; from pathlib import Path; from pokebench.play.lock import RunLock; "
             f"lock = RunLock(Path(sys.argv[1]), Path(sys.argv[1]) / 'shard-{shard}-of-3.sqlite', shard=True).acquire(); "
             "print('held', flush=True); time.sleep(60)", str(run_dir)],
            env=ENV, stdout=subprocess.PIPE, text=True)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        return holder

    holders = [hold(0), hold(1)]
    here = socket.gethostname()
    try:
        with RunLock(run_dir, run_dir / "shard-2-of-3.sqlite", shard=True):
            pass  # another shard plays beside them
        with pytest.raises(RunLockedError) as refused:
            RunLock(run_dir, run_dir / "shard-0-of-3.sqlite", shard=True).acquire()
        # only the holder of the contested shard, with its host (on a cluster a pid alone names nothing)
        assert f"shard shard-0-of-3 in {run_dir} is being played by process {holders[0].pid} on {here}." in str(
            refused.value)
        assert f"kill {holders[0].pid}`" in str(refused.value) and str(holders[1].pid) not in str(refused.value)
        with pytest.raises(RunLockedError) as refused:
            RunLock(run_dir, run_dir / "store.sqlite").acquire()  # the whole run: every shard holds the folder
        assert all(f"process {h.pid} on {here}" in str(refused.value) for h in holders)
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    with RunLock(run_dir, run_dir / "store.sqlite"):  # the holders' end (here SIGKILL) releases everything
        pass


def test_a_shard_refused_by_the_whole_run_names_the_whole_run(tmp_path):
    """It said "The shard shard-1-of-2 ... is being played by process P", P playing the whole run."""
    from pokebench.play.lock import RunLock, RunLockedError

    run_dir = tmp_path / "run"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from pokebench.play.lock import RunLock; "
         "lock = RunLock(Path(sys.argv[1]), Path(sys.argv[1]) / 'store.sqlite').acquire(); "
         "print('held', flush=True); time.sleep(60)", str(run_dir)], env=ENV, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError) as refused:
            RunLock(run_dir, run_dir / "shard-1-of-2.sqlite", shard=True).acquire()
        assert f"The run in {run_dir} is being played by process {holder.pid} on " in str(refused.value), refused.value
    finally:
        holder.kill()
        holder.wait()


# ---- stores that cannot be used ------------------------------------------------------------------

def _damaged(path: Path) -> None:
    with RunStore(path):
        pass
    data = bytearray(path.read_bytes())
    data[4096:8192] = b"\xde\xad\xbe\xef" * 1024  # the second page: a table's b-tree
    path.write_bytes(bytes(data))


def _foreign(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)")
    db.commit()
    db.close()


def _read_only(path: Path) -> None:
    with RunStore(path):
        pass
    path.chmod(0o444)


def _newer(path: Path) -> None:
    with RunStore(path) as store:
        store.db.execute("PRAGMA user_version = 99")


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.write_bytes(b"not a database at all\n" * 300), "it is not an SQLite database"),
    (_damaged, "is damaged"),
    (_foreign, "is an SQLite database of another program"),
    (_read_only, "is read-only"),
    (_newer, "was written by a newer PokéBench"),
])
def test_a_store_that_cannot_be_used_gives_one_message_before_the_server_starts_and_stays_untouched(
        tmp_path, make, message):
    run_dir = tmp_path / "runs" / "bots-smoke"
    run_dir.mkdir(parents=True)
    db = run_dir / "store.sqlite"
    make(db)
    before, listing = db.read_bytes(), sorted(os.listdir(run_dir))
    proc = subprocess.run(pokebench_args("+run=bots-smoke", "pairs=1"), cwd=tmp_path, env=ENV,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.count("error:") == 1
    assert db.read_bytes() == before
    assert sorted(os.listdir(run_dir)) == listing  # no -wal, -shm, lock or server log beside it
    db.chmod(0o644)


@pytest.mark.parametrize("command", [
    ["-m", "pokebench.cli.replay", "bots-smoke", "some-game"],
    ["-m", "pokebench", "export-training", "bots-smoke"],
    ["-m", "pokebench.cli.publish", "bots-smoke"],
    ["-m", "pokebench", "analyse", "bots-smoke"],
], ids=["replay", "export-training", "publish", "analyse"])
@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p.write_bytes(b"not a database at all\n" * 300), "it is not an SQLite database"),
    (_newer, "was written by a newer PokéBench"),
], ids=["not-sqlite", "newer"])
def test_every_command_that_reads_a_store_refuses_one_it_cannot_use_in_one_message(tmp_path, command, make, message):
    """pokebench-replay and export-training printed a traceback where the run and publish print one line."""
    run_dir = tmp_path / "runs" / "bots-smoke"
    run_dir.mkdir(parents=True)
    db = run_dir / "store.sqlite"
    make(db)
    before = db.read_bytes()
    proc = subprocess.run([sys.executable, *command], cwd=tmp_path, env=ENV, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert db.read_bytes() == before


def test_a_store_from_before_store_versions_is_migrated_in_place(tmp_path):
    path = tmp_path / "store.sqlite"
    old = sqlite3.connect(path)
    old.executescript(MIGRATIONS[0])
    old.execute("INSERT INTO meta (key, value) VALUES ('fingerprint', '{}')")
    old.commit()
    old.close()
    with RunStore(path) as store:
        assert store.version == 1
        assert store.db.execute("PRAGMA application_id").fetchone()[0] == 0x504B424E
        assert store.db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone() == ("{}",)


# ---- a full disk ---------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs mounted at tmp_path/runs (the test runs as root), unmounted after."""
    runs = tmp_path / "runs"
    runs.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(runs)],
                                           capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield runs
    subprocess.run(["umount", "-l", str(runs)], check=False)


def _fill(folder: Path) -> None:
    """Fill the disk of `folder` (on a busy machine the run's own writes may have filled it already)."""
    try:
        with open(folder / "filler", "wb") as out:
            while True:
                out.write(b"\0" * 65536)
                out.flush()
    except OSError:
        pass


@pytest.mark.server
def test_a_full_disk_mid_run_is_one_message_its_own_exit_code_and_the_resume_command(tmp_path, small_disk):
    args = pokebench_args(*SLOW_RUN, "pairs=2", "concurrency=2", "name=full")
    with started(args, cwd=tmp_path, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        # a stored game: the store is set up and in use (filled the moment its file appears, its setup failed instead)
        wait_for(lambda: stored_games(small_disk / "full" / "store.sqlite") >= 1, 90, "the run's first stored game")
        _fill(small_disk)
        _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 5, stderr[-3000:]
    assert "Could not write to the run store" in stderr and "full" in stderr
    assert f"To resume: {sys.executable} -m pokebench" in stderr and "Traceback" not in stderr, stderr[-3000:]
    (small_disk / "filler").unlink()
    with RunStore.open_existing(small_disk / "full" / "store.sqlite") as store:  # intact, and usable again
        assert len(store.done_game_ids()) < 4
