"""Whole runs through `python -m pokebench`: planned games, resume, kill -9, reproducibility, bad input."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.existing_server import on_server
from support.games import REPO_DIR
from support.published import assert_same_games
from support.stored_run import copy_of
from support.synthetic_runs import make_run
from pokebench.play.schedule import build_schedule, expand_matchups
from pokebench.results.store import RunStore
from pokebench.showdown.server import LocalShowdown

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

SMOKE_PLAYERS = ["random", "max-damage", "heuristic"]


def pokebench(cwd: Path, *overrides: str, check: bool = True, server: LocalShowdown | None = None
              ) -> subprocess.CompletedProcess[str]:
    """`python -m pokebench` in `cwd`; on `server` (the worker's, already running) if given, else on its own."""
    extra, server_env = on_server(server) if server is not None else ([], {})
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), **server_env)
    proc = subprocess.run([sys.executable, "-m", "pokebench", *overrides, *extra], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)
    if check:
        assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def store_of(cwd: Path, name: str) -> RunStore:
    return RunStore.open_existing(cwd / "runs" / name / "store.sqlite")


def planned(name: str, pairs: int, seed_text: str = "pokebench-2026"):
    return build_schedule(name, seed_text, pairs, expand_matchups(SMOKE_PLAYERS, "all"))


def test_a_run_plays_exactly_the_planned_games_and_a_rerun_plays_none(stored_run, tmp_path):
    copy_of(stored_run, tmp_path)  # the session's bots-smoke run, pairs=1: this test reruns it
    with store_of(tmp_path, "bots-smoke") as store:
        games = store.games()
    specs = {s.game_id: s for s in planned("bots-smoke", 1)}
    assert sorted(games.game_id) == sorted(specs)
    for row in games.itertuples():
        spec = specs[row.game_id]
        assert (row.p1, row.p2, row.battle_seed, row.p1_team_seed, row.p2_team_seed) == (
            spec.p1, spec.p2, spec.battle_seed, spec.p1_team_seed, spec.p2_team_seed)
        assert row.showdown_version == "0.11.11" and row.winner in ("p1", "p2", "tie")
    pokebench(tmp_path, "+run=bots-smoke", "pairs=1", "publish=false")
    with store_of(tmp_path, "bots-smoke") as store:
        again = store.games()
    assert again.equals(games)  # nothing replayed, nothing added


def test_a_run_killed_with_sigkill_resumes_to_exactly_the_planned_games(showdown, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    args = [sys.executable, "-m", "pokebench", "+run=bots-smoke", "pairs=3", "concurrency=2", "publish=false"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = tmp_path / "runs" / "bots-smoke" / "store.sqlite"
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and done < 4:
        time.sleep(0.2)
        done = _count(db) if db.exists() else 0
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 4 <= done < 18, f"the kill came too late or too early ({done} games)"
    # resumed on the worker's server (the killed run's own server exited with it)
    pokebench(tmp_path, "+run=bots-smoke", "pairs=3", "concurrency=2", "publish=false", server=showdown)
    with store_of(tmp_path, "bots-smoke") as store:
        ids = list(store.games().game_id)
    assert sorted(ids) == sorted(s.game_id for s in planned("bots-smoke", 3))


def test_two_runs_of_the_same_bots_under_different_names_play_identical_games(stored_run, showdown, tmp_path):
    copy_of(stored_run, tmp_path)  # the first: the session's run, named bots-smoke
    pokebench(tmp_path, "+run=bots-smoke", "pairs=1", "name=second", "publish=false", server=showdown)
    with store_of(tmp_path, "bots-smoke") as a, store_of(tmp_path, "second") as b:
        ids = sorted(a.done_game_ids())
        assert ids == sorted(b.done_game_ids()) and len(ids) == 6
        for game_id in ids:
            assert a.record(game_id)["input_log"] == b.record(game_id)["input_log"], game_id


def test_a_user_bot_is_one_class_and_one_yaml_file(showdown, tmp_path):
    pokebench(tmp_path, "+run=bots-smoke", "+player@players.example=example", "matchups=[[example,random]]",
              "pairs=1", "name=example", "publish=false", server=showdown)
    with store_of(tmp_path, "example") as store:
        games = store.games()
    assert len(games) == 2 and set(games.p1) == {"example", "random"}


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["+run=no-such-run"], "Could not find 'run/no-such-run'"),
        (["+run=bots-smoke", "+typo=1"], "Unknown config key 'typo'"),
        (["+run=bots-smoke", "typo=1"], "Key 'typo' is not in struct"),
        (["+run=bots-smoke", "pairs=abc"], "'pairs' must be a positive whole number"),
        (["+run=bots-smoke", "matchups=[[random,nobody]]"], "names ['nobody'], which is not among the run's players"),
        (["+run=bots-smoke", "+player@players.ghost=ghost"], "Could not find 'player/ghost'"),
        ([], "choose a run with `+run=NAME`. Available runs:"),
    ],
)
def test_bad_input_is_a_clear_error_before_any_game(tmp_path, overrides, message):
    proc = pokebench(tmp_path, *overrides, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr + proc.stdout
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("store.sqlite"))


def test_a_run_folder_from_another_config_is_refused_and_left_untouched(stored_run, tmp_path):
    copy_of(stored_run, tmp_path)  # a real bots-smoke run, pairs=1
    db = tmp_path / "runs" / "bots-smoke" / "store.sqlite"
    with store_of(tmp_path, "bots-smoke") as store:
        before = store.games()
    proc = pokebench(tmp_path, "+run=bots-smoke", "pairs=1", "seed_text=other", "publish=false", check=False)
    assert proc.returncode == 2
    assert "holds games of another config (it differs in: seed_text)" in proc.stderr
    with store_of(tmp_path, "bots-smoke") as store:
        assert store.games().equals(before)
    assert db.exists()


def test_a_player_crash_is_a_recorded_harness_error_and_the_game_is_replayed_in_the_same_start(showdown, tmp_path):
    marker = tmp_path / "crashed"
    overrides, server_env = on_server(showdown)  # the harness voids the crashed game: the server is fine
    env = dict(os.environ, PYTHONPATH=f"{REPO_DIR}{os.pathsep}{REPO_DIR / 'tests'}", CRASH_MARKER=str(marker),
               **server_env)
    args = [sys.executable, "-m", "pokebench", "+run=bots-smoke", "pairs=1", "publish=false", "name=crash",
            "+players.crashy._target_=support.crashing_bots.CrashOnceBot", "matchups=[[crashy,random]]", *overrides]
    first = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "Retry round 1 of 3" in first.stdout + first.stderr
    crashed_game = marker.read_text()
    with store_of(tmp_path, "crash") as store:
        errors = store.harness_errors()
        assert list(errors.game_id) == [crashed_game] and errors.cause[0] == "player failed"
        assert "deliberate crash" in errors.detail[0]
        assert crashed_game in store.done_game_ids() and len(store.games()) == 2


def test_harness_errors_that_persist_end_the_run_non_zero_after_the_retry_rounds(showdown, tmp_path):
    overrides, server_env = on_server(showdown)
    env = dict(os.environ, PYTHONPATH=f"{REPO_DIR}{os.pathsep}{REPO_DIR / 'tests'}", **server_env)
    args = [sys.executable, "-m", "pokebench", "+run=bots-smoke", "pairs=1", "publish=false", "name=always",
            "+players.crashy._target_=support.crashing_bots.AlwaysCrashBot", "matchups=[[crashy,random]]", "retry_rounds=1",
            *overrides]
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "2 game(s) of run 'always' still ended in harness errors after 1 retry" in proc.stderr
    with store_of(tmp_path, "always") as store:
        assert len(store.harness_errors()) == 4 and not store.done_game_ids()  # 2 games x (1 + 1 round)


@pytest.mark.slow  # 18 to 24 real games
def test_ctrl_c_stops_the_run_and_its_server_and_the_run_resumes(showdown, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    args = [sys.executable, "-m", "pokebench", "+run=bots-smoke", "pairs=3", "concurrency=2", "publish=false"]
    restore_sigint = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731 (CI shells may ignore it)
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, preexec_fn=restore_sigint)
    db = tmp_path / "runs" / "bots-smoke" / "store.sqlite"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (db.exists() and _count(db) >= 2):
        time.sleep(0.1)
    children = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _parent(p) == proc.pid]
    assert children, "the run should have started its own Showdown server"
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130 and "Interrupted" in stderr and "Traceback" not in stderr
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()], "the server outlived the run"
    pokebench(tmp_path, "+run=bots-smoke", "pairs=3", "concurrency=2", "publish=false", server=showdown)  # resumed
    with store_of(tmp_path, "bots-smoke") as store:
        assert sorted(store.done_game_ids()) == sorted(s.game_id for s in planned("bots-smoke", 3))


def _count(db: Path) -> int:
    try:
        return sqlite3.connect(db).execute("SELECT COUNT(*) FROM games").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _parent(proc_dir: Path) -> int:
    try:
        return int((proc_dir / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


@pytest.mark.slow  # 18 to 24 real games
def test_shards_play_disjoint_parts_that_publish_merges_and_no_game_twice(showdown, tmp_path):
    pokebench(tmp_path, "-m", "+run=bots-smoke", "shard=0/2,1/2", "pairs=3", server=showdown)  # Hydra's multirun, one job per shard
    run_dir = tmp_path / "runs" / "bots-smoke"
    with RunStore.open_existing(run_dir / "shard-0-of-2.sqlite") as a, \
            RunStore.open_existing(run_dir / "shard-1-of-2.sqlite") as b:
        assert set(a.games().pair) == {2} and set(b.games().pair) == {1, 3}
        assert [s["host"] for s in a.starts()] == [socket.gethostname()]  # each shard knows where it was played
        shards = a.done_game_ids() | b.done_game_ids()
    assert sorted(shards) == sorted(s.game_id for s in planned("bots-smoke", 3))
    pokebench(tmp_path, "+run=bots-smoke", "pairs=3", "publish=false")  # the whole run: everything is done already
    with RunStore.open_existing(run_dir / "store.sqlite") as whole:
        assert whole.done_game_ids() == set()
    games = __import__("pandas").read_csv(tmp_path / "data" / "site" / "bots-smoke" / "games.csv")
    assert sorted(games.game_id) == sorted(shards)
    bad = pokebench(tmp_path, "+run=bots-smoke", "shard=2/2", check=False)
    assert bad.returncode == 2 and "'shard' must look like I/N with 0 <= I < N" in bad.stderr


def test_a_shard_plays_none_of_the_games_another_shards_store_holds_and_counts_them_all(showdown, tmp_path):
    runs, matchups = tmp_path / "runs", expand_matchups(SMOKE_PLAYERS, "all")
    made = {"run": "bots-smoke", "seed_text": "pokebench-2026", "players": SMOKE_PLAYERS, "pairs": 2,
            "store": "shard-1-of-2.sqlite"}
    make_run(runs, "bots-smoke", matchups=matchups, only_pairs=[1], **made)  # shard 1's part, stored already
    make_run(runs, "bots-smoke", matchups=matchups[:1], only_pairs=[2], **made)  # and 2 games of shard 0's part
    with RunStore.open_existing(runs / "bots-smoke" / "shard-1-of-2.sqlite") as other:
        elsewhere = other.done_game_ids()
    out = pokebench(tmp_path, "+run=bots-smoke", "pairs=2", "shard=0/2", "publish=false", server=showdown).stdout
    with RunStore.open_existing(runs / "bots-smoke" / "shard-0-of-2.sqlite") as own:
        played = own.done_game_ids()
    assert len(played) == 4 and not played & elsewhere  # no game played twice
    assert played | elsewhere == {s.game_id for s in planned("bots-smoke", 2)}
    # the shard's own 6 games, wherever stored, then every store's games of the run, each counted once
    assert "Run 'bots-smoke', shard 0/2: 2 of 6 games stored; playing the 4 missing." in out  # the shard's, said so
    assert ("Run 'bots-smoke', shard 0/2: 4 game(s) played now; 6 of 6 stored in all (12 with the other shards' "
            "stores).") in out


@pytest.mark.slow  # 18 to 24 real games
def test_a_two_shard_run_merges_to_the_same_games_and_ratings_as_the_unsharded_run(showdown, tmp_path):
    pokebench(tmp_path, "-m", "+run=bots-smoke", "shard=0/2,1/2", "pairs=2", "name=split", server=showdown)
    pokebench(tmp_path, "+run=bots-smoke", "pairs=2", "name=whole", server=showdown)
    site = tmp_path / "data" / "site"
    assert_same_games(site / "split", site / "whole", games=12)  # the same games, byte-identical input logs
