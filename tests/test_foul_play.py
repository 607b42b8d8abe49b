"""Foul Play as an external program: installation checks, the launcher, the set table, and the
adapter's lifecycle on the real server with a stand-in process (tests/support/foul_play_standin.py).

The tests that need the real Foul Play run only where FOULPLAY_DIR (and FOULPLAY_PYTHON) name
an installation that passes the adapter's preflight; elsewhere they are skipped with its message.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
import websockets

from support.games import BOTS, REPO_DIR
from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.play.schedule import build_schedule
from pokebench.players.foul_play.adapter import FoulPlay, check_engine, find_installation
from pokebench.players.foul_play.launcher import LOGIN_URL
from pokebench.players.foul_play.sets import ensure_sets, generate

STANDIN = Path(__file__).parent / "support" / "foul_play_standin.py"
LAUNCHER = REPO_DIR / "pokebench" / "players" / "foul_play" / "launcher.py"


def standin(tmp_path: Path, *flags: str, **options: Any) -> FoulPlay:
    options.setdefault("max_in_flight", 1)
    options.setdefault("log_dir", str(tmp_path / "foulplay"))
    return FoulPlay(command=[sys.executable, str(STANDIN), *flags], **options)


def play_fp(server: Any, competitor: FoulPlay, pairs: int, opponent: str = "random", concurrency: int = 4,
            before: Any = None) -> list[GameResult | HarnessError]:
    """Foul Play against `opponent` through the real arena; outcomes in schedule order; processes stopped after."""
    specs = build_schedule("fp", f"fp-{opponent}", pairs, [("foul-play", opponent)])

    async def main() -> list[GameResult | HarnessError]:
        held = await before() if before else None
        arena = Arena(server, {**BOTS, "foul-play": competitor}, "gen9randombattle", 300, concurrency,
                      per_player_limits={"foul-play": competitor.max_in_flight},
                      matchup_order=[f"foul-play-vs-{opponent}"])
        try:
            return [o async for o in arena.play(specs)]
        finally:
            await competitor.shutdown()
            if held is not None:
                await held.close()

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
    env = {k: v for k, v in os.environ.items() if k not in ("FOULPLAY_DIR", "FOULPLAY_PYTHON")}
    env["PYTHONPATH"] = str(REPO_DIR)
    proc = subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-foulplay", "publish=false"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Player 'foul-play': Foul Play is not installed: set FOULPLAY_DIR" in proc.stderr
    assert "git clone https://github.com/pmariglia/foul-play" in proc.stderr and "terastallization" in proc.stderr
    assert not list(tmp_path.rglob("store.sqlite"))


def test_installation_checks_name_the_problem_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("FOULPLAY_DIR", raising=False)
    monkeypatch.delenv("FOULPLAY_PYTHON", raising=False)
    with pytest.raises(ValueError, match="set FOULPLAY_DIR"):
        FoulPlay.preflight()
    with pytest.raises(ValueError, match="is not a Foul Play checkout"):
        find_installation(str(tmp_path))
    (tmp_path / "run.py").write_text("")
    (tmp_path / "fp").mkdir()
    with pytest.raises(ValueError, match="Set FOULPLAY_PYTHON"):
        find_installation(str(tmp_path))
    install = find_installation(str(tmp_path), sys.executable)
    assert install.checkout == tmp_path.resolve() and install.commit.startswith("unknown")
    with pytest.raises(ValueError, match="lacks its requirements .*No module named 'poke_engine'"):
        check_engine(sys.executable)  # PokéBench's Python has no poke_engine


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


def test_games_finish_with_records_and_each_process_plays_one_game_at_a_time(showdown, tmp_path):
    competitor = standin(tmp_path, max_in_flight=2)
    outcomes = play_fp(showdown, competitor, pairs=3)
    assert all(isinstance(o, GameResult) for o in outcomes), outcomes
    names = set()
    for result in outcomes:
        side = foul_play_side(result)
        names.add(side["username"])
        assert result.record[fp_side(result)] == side["username"]
        assert side["decisions"] > 0 and side["decision_ms"]["max"] >= side["decision_ms"]["median"]
        log_text = Path(side["log"]).read_text()
        assert result.record["roomid"] in log_text and "STANDIN-ERROR" not in log_text
    assert names == {"foulplay1", "foulplay2"}
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


def test_a_run_uses_foul_play_like_any_player_and_logs_into_the_run_folder(tmp_path):
    """`python -m pokebench +run=bots-foulplay` with the stand-in in place of the installation."""
    env = {k: v for k, v in os.environ.items() if k not in ("FOULPLAY_DIR", "FOULPLAY_PYTHON")}
    env["PYTHONPATH"] = str(REPO_DIR)
    proc = subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-foulplay", "pairs=1", "publish=false",
                           "matchups=[[foul-play,random]]", f"+players.foul-play.command=[{sys.executable},{STANDIN}]"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from pokebench.results.store import RunStore

    with RunStore.open_existing(tmp_path / "runs" / "bots-foulplay" / "store.sqlite") as store:
        players = store.game_players()
    assert len(players) == 2
    for game_id, sides in players.items():
        side = next(s for s in sides.values() if s["player"] == "foul-play")
        assert side["class"] == "FoulPlay" and side["search_time_ms"] == 100 and side["decisions"] > 0
        assert side["log"] == f"runs/bots-foulplay/foulplay/{game_id}.log"
        assert (tmp_path / side["log"]).stat().st_size > 0


# ---- the real Foul Play (skipped without an installation) ------------------------------------


def _installation_problem() -> str | None:
    try:
        FoulPlay.preflight()
    except (ValueError, OSError, RuntimeError) as err:
        return str(err)
    return None


def test_the_real_foul_play_plays_and_records_its_commit_and_time_per_decision(showdown, tmp_path):
    problem = _installation_problem()
    if problem:
        pytest.skip(f"no usable Foul Play installation: {problem}")
    competitor = FoulPlay(max_in_flight=1, log_dir=str(tmp_path / "foulplay"))
    outcomes = play_fp(showdown, competitor, pairs=1, opponent="max-damage", concurrency=2)
    assert all(isinstance(o, GameResult) for o in outcomes), outcomes
    for result in outcomes:
        side = foul_play_side(result)
        assert side["commit"] == competitor.commit and len(side["commit"]) == 40
        assert side["search_time_ms"] == 100 and side["decisions"] > 0
        assert 50 < side["decision_ms"]["median"] < 5000
    assert_groups_gone({e["pid"] for e in competitor.history})
