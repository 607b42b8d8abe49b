"""Foul Play as an external program: installation checks, the launcher, the set table, and the
adapter's lifecycle on the real server with a stand-in process (tests/support/foul_play_standin.py).

The tests that need the real Foul Play run wherever PokéBench finds an installation that
passes the adapter's preflight (FOULPLAY_DIR, or .foulplay/foul-play/ of this checkout:
installation.py); elsewhere (CI) they are skipped with its message.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import re
import signal
import stat
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import websockets

from support.games import BOTS, REPO_DIR
from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.play.schedule import build_schedule
from pokebench.players.random_bot import RandomBot
from pokebench.players.foul_play.adapter import FoulPlay
from pokebench.players.foul_play.installation import check_engine, check_layout, default_checkouts, find_installation
from pokebench.players.foul_play.installation import main as installation_main
from pokebench.players.foul_play.launcher import LOGIN_URL
from pokebench.players.foul_play.sets import ensure_sets, generate

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

STANDIN = Path(__file__).parent / "support" / "foul_play_standin.py"
LAUNCHER = REPO_DIR / "pokebench" / "players" / "foul_play" / "launcher.py"


def standin(tmp_path: Path, *flags: str, **options: Any) -> FoulPlay:
    options.setdefault("max_in_flight", 1)
    options.setdefault("log_dir", str(tmp_path / "foulplay"))
    return FoulPlay(command=[sys.executable, str(STANDIN), *flags], **options)


def play_fp(server: Any, competitor: FoulPlay, pairs: int, opponent: str = "random", concurrency: int = 4,
            before: Any = None, during: Any = None, factories: dict[str, Any] | None = None,
            ) -> list[GameResult | HarnessError]:
    """Foul Play against `opponent` through the real arena; outcomes in schedule order; processes stopped after.
    `before` runs first (what it returns is closed at the end), `during` alongside the games."""
    specs = build_schedule("fp", f"fp-{opponent}", pairs, [("foul-play", opponent)])

    async def main() -> list[GameResult | HarnessError]:
        held = await before() if before else None
        arena = Arena(server, {**BOTS, **(factories or {}), "foul-play": competitor}, "gen9randombattle", 300,
                      concurrency, per_player_limits={"foul-play": competitor.max_in_flight},
                      matchup_order=[f"foul-play-vs-{opponent}"])
        side_task = asyncio.create_task(during()) if during else None
        try:
            outcomes = [o async for o in arena.play(specs)]
        finally:
            if side_task is not None:
                side_task.cancel()
                await asyncio.gather(side_task, return_exceptions=True)
            await competitor.shutdown()
            if held is not None:
                await held.close()
        # nothing of a game is left pending, a voided one's challenge and accept included
        assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
        return outcomes

    order = {s.game_id: i for i, s in enumerate(specs)}
    return sorted(asyncio.run(main()), key=lambda o: order[o.spec.game_id])


def fp_side(result: GameResult) -> str:
    return "p1" if result.spec.p1 == "foul-play" else "p2"


def foul_play_side(result: GameResult) -> dict[str, Any]:
    return result.players[fp_side(result)]


def assert_groups_gone(pids: set[int], timeout: float = 8.0) -> None:
    """Each process group is gone: no main process, no worker (killpg(pgid, 0) finds nobody)."""
    deadline = time.monotonic() + timeout
    for pgid in pids:
        while True:
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, f"process group {pgid} outlived its game"
            time.sleep(0.1)


# ---- without an installation ----------------------------------------------------------------


def test_a_foul_play_run_without_an_installation_fails_at_once_saying_what_to_install(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "FOULPLAY_PYTHON"}
    env["PYTHONPATH"] = str(REPO_DIR)
    env["FOULPLAY_DIR"] = str(tmp_path / "no-foul-play")  # wins over the default places
    proc = subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-foulplay", "publish=false"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert f"Player 'foul-play': {tmp_path / 'no-foul-play'} is not a Foul Play checkout" in proc.stderr
    assert "https://github.com/pmariglia/foul-play" in proc.stderr and "terastallization" in proc.stderr
    assert str(default_checkouts()[0]) in proc.stderr  # where it would be found without FOULPLAY_DIR
    assert not list(tmp_path.rglob("store.sqlite"))


def test_installation_checks_name_the_problem_and_the_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.delenv("FOULPLAY_DIR", raising=False)
    monkeypatch.delenv("FOULPLAY_PYTHON", raising=False)
    nowhere = tmp_path / "default" / "foul-play"
    with pytest.raises(ValueError, match=f"Foul Play is not installed \\(no checkout at {nowhere}, FOULPLAY_DIR"):
        find_installation(defaults=[nowhere])
    with pytest.raises(ValueError, match="is not a Foul Play checkout"):
        find_installation(str(tmp_path))
    (tmp_path / "run.py").write_text("")
    (tmp_path / "fp").mkdir()
    with pytest.raises(ValueError, match="Set FOULPLAY_PYTHON"):
        find_installation(str(tmp_path))
    install = find_installation(str(tmp_path), sys.executable)
    assert install.checkout == tmp_path.resolve() and install.commit.startswith("unknown") and not install.pinned
    # run.py and fp/ of another layout: refused before any game (every game's launcher exited 78, after retries)
    with pytest.raises(ValueError, match="cannot be started: PokéBench launcher: this Foul Play checkout has an "
                                         "unexpected layout: cannot import fp.data.sets.randbats"):
        check_layout(install)
    foul_plays_layout(tmp_path)
    check_layout(install)
    bare = python_without_site_packages(tmp_path)  # PokéBench's own Python has poke-engine (make setup)
    with pytest.raises(ValueError, match="lacks its requirements .*No module named"):
        check_engine(bare)
    # a checkout at a default place, with its .venv, is found without any setting
    foul_plays_layout(nowhere)
    (nowhere / "run.py").write_text("")
    (nowhere / ".venv" / "bin").mkdir(parents=True)
    (nowhere / ".venv" / "bin" / "python").symlink_to(bare)
    found = find_installation(defaults=[nowhere])
    assert found.checkout == nowhere.resolve() and found.python == str(nowhere / ".venv" / "bin" / "python")
    # the check command says what is wrong, and exits 1
    assert installation_main(["--checkout", str(nowhere)]) == 1
    assert "lacks its requirements" in capsys.readouterr().err
    # a usable installation that is not a git checkout: the warning names what is known, not a cut-off text
    assert installation_main(["--checkout", str(nowhere), "--python", fake_engine_python(tmp_path, True)]) == 0
    assert "this checkout is at unknown (not a git checkout). It plays" in capsys.readouterr().out


def foul_plays_layout(checkout: Path) -> None:
    """The module the launcher points at the set table, as Foul Play has it (fp/data/sets/randbats.py)."""
    (checkout / "fp" / "data" / "sets").mkdir(parents=True, exist_ok=True)
    for package in ("fp", "fp/data", "fp/data/sets"):
        (checkout / package / "__init__.py").write_text("")
    (checkout / "fp" / "data" / "sets" / "randbats.py").write_text("PKMN_SETS_CACHE_DIR = 'downloads'\n")


def python_without_site_packages(tmp_path: Path) -> str:
    """A `python` that has none of Foul Play's requirements (``-S``: no site-packages)."""
    wrapper = tmp_path / "python-bare"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def fake_engine_python(tmp_path: Path, tera: bool) -> str:
    """A `python` that finds a fake poke_engine whose search offers tera moves or not."""
    pkg = tmp_path / f"engine-{tera}" / "poke_engine"
    pkg.mkdir(parents=True)
    suffix = '"-tera"' if tera else '""'
    (pkg / "__init__.py").write_text(textwrap.dedent(f"""
        from types import SimpleNamespace as _NS
        Move = Pokemon = Side = State = lambda *a, **k: None
        def monte_carlo_tree_search(state, duration_ms=0):
            return _NS(side_one=[_NS(move_choice="tackle"), _NS(move_choice="tackle" + {suffix})])
    """))
    wrapper = tmp_path / f"python-{tera}"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={pkg.parent} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IEXEC)
    return str(wrapper)


def test_preflight_refuses_an_engine_built_without_terastallization(tmp_path):
    with pytest.raises(ValueError, match=r"built without terastallization.*--features poke-engine/terastallization"):
        check_engine(fake_engine_python(tmp_path, tera=False))
    check_engine(fake_engine_python(tmp_path, tera=True))


def test_the_search_setting_is_the_time_per_decision_split_over_the_positions(tmp_path):
    """Foul Play searches 2 × --search-time-ms per decision (4 positions at half, or 2 at full)."""
    assert standin(tmp_path).search_settings()["search_time_ms"] == 100  # the method's 200 ms per move
    settings = standin(tmp_path, search_ms_per_move=500).search_settings()
    assert settings["search_ms_per_move"] == 500 and settings["search_time_ms"] == 250
    with pytest.raises(ValueError, match="search_ms_per_move must be at least 4 ms"):
        FoulPlay.preflight(command=["x"], search_ms_per_move=3)


# ---- our own pieces: set table, launcher ------------------------------------------------------


def test_set_table_comes_from_the_pinned_generator_in_foul_plays_format(tmp_path):
    table = generate("gen9randombattle", teams=40)
    assert len(table) > 100
    for species, sets in table.items():
        assert re.fullmatch(r"[a-z0-9]+", species)
        for key, count in sets.items():
            fields = key.split(",")
            assert fields[0].isdigit() and count >= 1
            moves = fields[3:7]
            assert moves == sorted(moves) and all(re.fullmatch(r"[a-z0-9]+", f) for f in fields)
            assert len(fields) == 8 or len(fields) < 7  # a tera type only after four moves
    path = ensure_sets("gen9randombattle", teams=40, out_dir=tmp_path)
    first = path.stat().st_mtime_ns
    assert ensure_sets("gen9randombattle", teams=40, out_dir=tmp_path) == path
    assert path.stat().st_mtime_ns == first  # cached
    assert json.loads(path.read_text()) == table  # fixed seeds: the same table every time


def test_launcher_answers_the_login_locally_points_the_sets_and_refuses_other_requests(tmp_path):
    """The launcher around a fake checkout whose run.py does what Foul Play does at login."""
    checkout = tmp_path / "checkout"
    (checkout / "fp" / "data" / "sets").mkdir(parents=True)
    for init in ("fp", "fp/data", "fp/data/sets"):
        (checkout / init / "__init__.py").write_text("")
    (checkout / "fp" / "data" / "sets" / "randbats.py").write_text("PKMN_SETS_CACHE_DIR = 'downloads'\n")
    (checkout / "run.py").write_text(textwrap.dedent(f"""
        import sys, requests
        import fp.data.sets.randbats as randbats
        r = requests.post({LOGIN_URL + "?"!r}, data={{"act": "getassertion", "userid": "x", "challstr": "1|2"}})
        print("login", r.status_code, repr(r.text), "sets", randbats.PKMN_SETS_CACHE_DIR, "args", sys.argv[1:])
        try:
            requests.get("https://pkmn.github.io/randbats/data/full/gen9randombattle.json")
        except requests.ConnectionError as err:
            print("refused", err)
    """))
    proc = subprocess.run([sys.executable, str(LAUNCHER), "--checkout", str(checkout), "--sets-dir", str(tmp_path),
                           "--", "--ps-username", "fp1"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"login 200 '' sets {tmp_path} args ['--ps-username', 'fp1']" in proc.stdout
    assert "refused PokéBench's Foul Play launcher allows no network access (GET https://pkmn.github.io" in proc.stdout
    (checkout / "fp" / "data" / "sets" / "randbats.py").write_text("")  # another layout: refuse, do not download
    proc = subprocess.run([sys.executable, str(LAUNCHER), "--checkout", str(checkout), "--sets-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 78 and "unexpected layout" in proc.stderr


# ---- the lifecycle, with the stand-in on the real server --------------------------------------


def test_games_finish_with_records_and_each_process_plays_one_game_at_a_time(showdown, tmp_path, monkeypatch):
    # Foul Play is a program of its own that needs no secret of the run: a model's key never reaches it
    monkeypatch.setenv("POKEBENCH_PLANTED_API_KEY", "planted-model-key-never-given-to-foul-play")
    monkeypatch.setenv("POKEBENCH_ADMIN_TOKEN", "planted-admin-token-never-given")
    competitor = standin(tmp_path, max_in_flight=2)
    outcomes = play_fp(showdown, competitor, pairs=3)
    assert all(isinstance(o, GameResult) for o in outcomes), outcomes
    names = set()
    for result in outcomes:
        side = foul_play_side(result)
        names.add(side["username"])
        assert result.record[fp_side(result)] == side["username"]
        assert side["decisions"] > 0 and side["decision_ms"]["max"] >= side["decision_ms"]["median"]
        rows = [d for d in result.decisions if d.player == "foul-play"]
        assert len(rows) == side["decisions"] and {d.side for d in rows} == {fp_side(result)}
        assert all(d.latency_s >= 0 and d.action == "default" and not d.refusal for d in rows)
        turns = [d.turn for d in rows]
        assert turns == sorted(turns) and turns[-1] > 1
        log_text = Path(side["log"]).read_text()
        assert result.record["roomid"] in log_text and "STANDIN-ERROR" not in log_text
    assert names == {"foulplay1", "foulplay2"}
    for process_log in (tmp_path / "foulplay").glob("foulplay*.log"):  # each process's own log, from its start
        assert "STANDIN-ERROR" not in process_log.read_text(), process_log
    by_pid: dict[int, list[tuple[float, float]]] = {}
    for entry in competitor.history:
        by_pid.setdefault(entry["pid"], []).append((entry["start"], entry["end"]))
    assert len(by_pid) == 2 and sum(len(v) for v in by_pid.values()) == 6  # no restarts
    for spans in by_pid.values():
        spans.sort()
        assert all(end <= next_start for (_, end), (next_start, _) in zip(spans, spans[1:])), spans
    assert_groups_gone(set(by_pid))


def test_a_crash_mid_game_is_a_harness_error_and_a_restarted_process_plays_the_next_game(showdown, tmp_path):
    competitor = standin(tmp_path, "--crash-once", str(tmp_path / "crashed"))
    first, second = play_fp(showdown, competitor, pairs=1, concurrency=1)
    failed, played = (first, second) if isinstance(first, HarnessError) else (second, first)
    assert isinstance(failed, HarnessError) and isinstance(played, GameResult), (first, second)
    assert failed.cause == "player failed" and "exited with code 3 during the game" in failed.detail
    crashed, restarted = competitor.history[0]["pid"], competitor.history[1]["pid"]
    assert crashed != restarted and competitor.history[0]["game_id"] == failed.spec.game_id
    # the crashed process's worker died with it: the restart got the same name, no |nametaken|
    assert [e["username"] for e in competitor.history] == ["foulplay1", "foulplay1"]
    assert "stand-in crash" in (tmp_path / "foulplay" / f"{failed.spec.game_id}.log").read_text()
    assert_groups_gone({crashed, restarted})


def test_a_checkout_the_launcher_refuses_mid_run_stops_the_run_instead_of_being_retried(showdown, tmp_path):
    """Exit 78 (the launcher refused the layout) was retried like a crash: five starts a game, round after round."""
    changed = tmp_path / "changed"
    competitor = standin(tmp_path, "--crash-once", str(changed), "--unsupported-if", str(changed), max_in_flight=1,
                         backoff=0.1)
    crashed, *refused = play_fp(showdown, competitor, pairs=1, concurrency=1)
    assert isinstance(crashed, HarnessError) and not crashed.fatal and "exited with code 3" in crashed.detail
    assert refused and all(isinstance(o, HarnessError) and o.fatal for o in refused), refused
    assert all("launcher refused its checkout (exit 78" in o.detail and "FOULPLAY_DIR" in o.detail for o in refused)
    assert competitor.slots[0].starts == 1 + len(refused)  # one start each: no login retries


def test_a_silent_process_is_detected_killed_and_replaced(showdown, tmp_path):
    competitor = standin(tmp_path, "--silent-once", str(tmp_path / "silenced"), decision_timeout=2)
    started = time.monotonic()
    outcomes = play_fp(showdown, competitor, pairs=1, concurrency=1)
    errors = [o for o in outcomes if isinstance(o, HarnessError)]
    assert len(errors) == 1 and "sent no decision for 2 s" in errors[0].detail, outcomes
    assert sum(isinstance(o, GameResult) for o in outcomes) == 1
    assert time.monotonic() - started < 60  # long before the arena's 300 s stall watchdog
    silent = competitor.history[0]["pid"]
    assert competitor.history[1]["pid"] != silent
    assert_groups_gone({silent, competitor.history[1]["pid"]})


@pytest.mark.parametrize("state, flag", [("searching", "--stop-searching-once"),
                                         ("waiting for a request", "--stop-waiting-once")])
def test_a_frozen_process_is_detected_within_the_decision_timeout_searching_or_waiting(showdown, tmp_path, state, flag):
    """SIGSTOP before it answers a request (a decision owed) or right after (the next request is never
    printed): either way its heartbeat stops, and its game is voided well inside the decision time-out."""
    competitor = standin(tmp_path, flag, str(tmp_path / "stopped"), decision_timeout=8)
    outcomes = play_fp(showdown, competitor, pairs=1, concurrency=1)
    errors = [o for o in outcomes if isinstance(o, HarnessError)]
    assert len(errors) == 1 and sum(isinstance(o, GameResult) for o in outcomes) == 1, outcomes
    detail = errors[0].detail
    assert errors[0].cause == "player failed" and f"is frozen: no heartbeat for 5 s while {state}" in detail, detail
    frozen = competitor.history[0]
    assert frozen["game_id"] == errors[0].spec.game_id
    assert competitor.history[1]["pid"] != frozen["pid"]
    assert_groups_gone({frozen["pid"], competitor.history[1]["pid"]})  # SIGKILL ends a stopped group too


def test_a_taken_name_is_retried_with_backoff_under_a_new_name(showdown, tmp_path):
    """Another user holds the name the first process asks for: the server answers |nametaken|."""
    competitor = standin(tmp_path, name_prefix="fpsquat", backoff=0.5)

    async def squatter():
        ws = await websockets.connect(showdown.address.websocket_url)
        while not str(await ws.recv()).startswith("|challstr|"):
            pass
        await ws.send("|/trn fpsquat1,0,")
        while "|updateuser| fpsquat1|1|" not in str(await ws.recv()):
            pass
        return ws

    started = time.monotonic()
    outcomes = play_fp(showdown, competitor, pairs=1, concurrency=1, before=squatter)
    assert all(isinstance(o, GameResult) for o in outcomes), outcomes
    assert {foul_play_side(o)["username"] for o in outcomes} == {"fpsquat1r1"}
    slot_log = (tmp_path / "foulplay" / "fpsquat1.log").read_text()
    assert '|nametaken|fpsquat1|Someone is already using the name "fpsquat1".' in slot_log
    assert time.monotonic() - started >= 0.5
    assert_groups_gone({e["pid"] for e in competitor.history})


def test_a_run_uses_foul_play_like_any_player_replays_a_frozen_game_and_publishes_its_time_per_decision(tmp_path):
    """`python -m pokebench +run=bots-foulplay` with the stand-in in place of the installation: its first
    process freezes (SIGSTOP) while it waits, that game is a harness error, the run's retry round plays it."""
    env = {k: v for k, v in os.environ.items() if k not in ("FOULPLAY_DIR", "FOULPLAY_PYTHON")}
    env["PYTHONPATH"] = str(REPO_DIR)
    command = [sys.executable, "-m", "pokebench", "+run=bots-foulplay", "pairs=1", "matchups=[[foul-play,random]]",
               f"+players.foul-play.command=[{sys.executable},{STANDIN},--stop-waiting-once,{tmp_path / 'stopped'}]",
               "players.foul-play.decision_timeout=8"]
    first = subprocess.run([*command, "publish=false"], cwd=tmp_path, env=env, capture_output=True, text=True,
                           timeout=180)
    assert first.returncode == 0 and "Retry round 1 of 3" in first.stdout + first.stderr, first.stderr[-3000:]
    second = subprocess.run([*command, "anchor=random"], cwd=tmp_path, env=env, capture_output=True, text=True,
                            timeout=180)
    assert second.returncode == 0 and "Not published" not in second.stderr, second.stderr[-3000:]
    from pokebench.results.store import RunStore

    with RunStore.open_existing(tmp_path / "runs" / "bots-foulplay" / "store.sqlite") as store:
        players = store.game_players()
        decisions = store.decisions()
        assert len(store.harness_errors()) == 1  # the frozen game, replayed in the first start
    assert len(players) == 2
    for game_id, sides in players.items():
        side = next(s for s in sides.values() if s["player"] == "foul-play")
        assert side["class"] == "FoulPlay" and side["search_ms_per_move"] == 200 and side["search_time_ms"] == 100
        assert side["decisions"] > 0 and side["commit"] is None  # a `command` is no installation
        assert side["log"] == f"runs/bots-foulplay/players/foul-play/{game_id}.log"
        assert (tmp_path / side["log"]).stat().st_size > 0
        mine = decisions[(decisions["game_id"] == game_id) & (decisions["player"] == "foul-play")]
        assert len(mine) == side["decisions"] and mine["latency_s"].notna().all()
    ratings = pd.read_csv(tmp_path / "data" / "site" / "bots-foulplay" / "ratings.csv").set_index("player")
    assert ratings.loc["foul-play", "seconds_per_decision"] == pytest.approx(
        decisions[decisions["player"] == "foul-play"]["latency_s"].mean())
    assert pd.isna(ratings.loc["random", "seconds_per_decision"])


# ---- the real Foul Play (skipped without an installation) ------------------------------------


@functools.cache
def _installation_problem() -> str | None:
    try:
        FoulPlay.preflight()
    except (ValueError, OSError, RuntimeError) as err:
        return str(err)
    return None


def real_foul_play(tmp_path: Path, **options: Any) -> FoulPlay:
    """The installation PokéBench finds by default (FOULPLAY_DIR, .foulplay/foul-play/), or a skip saying why."""
    problem = _installation_problem()
    if problem:
        pytest.skip(f"no usable Foul Play installation: {problem}")
    return FoulPlay(max_in_flight=1, log_dir=str(tmp_path / "foulplay"), **options)


class SlowRandomBot(RandomBot):
    """Takes 2 s per decision (without blocking poke-env's loop): Foul Play waits for its requests meanwhile."""

    async def choose_move(self, battle):  # type: ignore[override]
        await asyncio.sleep(2.0)
        return super().choose_move(battle)


@pytest.mark.slow
def test_the_real_foul_play_plays_and_records_its_commit_engine_search_and_time_per_decision(showdown, tmp_path):
    competitor = real_foul_play(tmp_path)
    outcomes = play_fp(showdown, competitor, pairs=1, opponent="max-damage", concurrency=2)
    assert all(isinstance(o, GameResult) for o in outcomes), outcomes
    for result in outcomes:
        side = foul_play_side(result)
        assert side["commit"] == competitor.commit and len(side["commit"]) == 40
        assert side["engine"] == "poke-engine 0.0.48"
        assert side["search_ms_per_move"] == 200 and side["search_time_ms"] == 100 and side["decisions"] > 0
        rows = [d for d in result.decisions if d.player == "foul-play"]
        assert len(rows) == side["decisions"] and all(d.side == fp_side(result) for d in rows)
        assert all(re.fullmatch(r"(move \S+( terastallize)?|switch \d)", d.action) for d in rows), rows
        # the measured time includes the search: 4 × 50 ms or 2 × 100 ms, one after the other
        assert statistics.median(d.latency_s for d in rows) >= 0.2
        assert result.record["roomid"] in Path(side["log"]).read_text()
    assert_groups_gone({e["pid"] for e in competitor.history})


@pytest.mark.slow
@pytest.mark.parametrize("state", ["searching", "waiting for a request"])
def test_the_real_foul_play_frozen_searching_or_waiting_is_detected_within_the_decision_timeout(
        showdown, tmp_path, state):
    """SIGSTOP the real Foul Play while it owes a decision, or while it waits for a slow opponent's move."""
    competitor = real_foul_play(tmp_path, decision_timeout=10)
    stopped: list[int] = []

    async def freeze() -> None:
        while True:
            process = competitor.slots[0].process
            if process is not None and process.battle_started.is_set() and len(process.decisions) >= 2:
                if (process.owed_since is not None) == (state == "searching"):
                    os.kill(process.pid, signal.SIGSTOP)
                    stopped.append(process.pid)
                    return
            await asyncio.sleep(0.01)

    outcomes = play_fp(showdown, competitor, pairs=1, opponent="slow-random", concurrency=1, during=freeze,
                       factories={"slow-random": SlowRandomBot})
    errors = [o for o in outcomes if isinstance(o, HarnessError)]
    assert len(errors) == 1 and sum(isinstance(o, GameResult) for o in outcomes) == 1, outcomes
    assert f"is frozen: no heartbeat for 5 s while {state}" in errors[0].detail, errors[0].detail
    assert competitor.history[0]["pid"] == stopped[0] and competitor.history[0]["game_id"] == errors[0].spec.game_id
    assert_groups_gone({e["pid"] for e in competitor.history})
