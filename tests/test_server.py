"""The pinned server with PokéBench's plugin: seeds, mirror games, records, the turn limit, security, faults."""

from __future__ import annotations

import asyncio
import gc
import secrets
import os
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from support.games import BOTS, play, results
from support.showdown_user import User
from pokebench.play.arena import HarnessError
from poke_env.battle.pokemon import Pokemon

from pokebench.player import poke_env_fixes
from pokebench.player.bench_player import BenchPlayer
from pokebench.player.seats import PokeEnvSeat
from pokebench.play.schedule import build_schedule
from pokebench.seeds import derive_seed, pair_seeds
from pokebench.paths import showdown_package_dir
from pokebench.showdown.node import node_version
from pokebench.showdown.address import ServerAddress
from pokebench.showdown import format_list
from pokebench.showdown.server import LocalShowdown, ServerError, check_installation, free_port, installed_version
from pokebench.showdown.admin import AdminClient, AdminError, ping

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)


def species(team: list[dict]) -> list[str]:
    return [mon["species"] for mon in team]


def without_timestamps(log: list[str]) -> list[str]:
    return [line for line in log if not line.startswith("|t:|")]


# ---- seeds ---------------------------------------------------------------------------------


def test_seeds_are_sha256_of_the_seed_text_and_pair():
    assert derive_seed("abc", 1, "battle") == derive_seed("abc", 1, "battle")
    assert derive_seed("abc", 1, "battle").startswith("sodium,") and len(derive_seed("abc", 1, "battle")) == 39
    seeds = {derive_seed(text, k, role) for text in ("abc", "abd") for k in (1, 2) for role in ("battle", "p1team", "p2team")}
    assert len(seeds) == 12


def test_pair_k_has_the_same_seeds_in_every_matchup_and_the_mirror_swaps_players():
    specs = build_schedule("r", "text", 2, [("a", "b"), ("a", "c")])
    assert len(specs) == 8
    pair1 = [s for s in specs if s.pair == 1]
    assert {(s.battle_seed, s.p1_team_seed, s.p2_team_seed) for s in pair1} == {tuple(vars(pair_seeds("text", 1)).values())}
    g1, g2 = [s for s in pair1 if s.matchup == "a-vs-b"]
    assert (g1.p1, g1.p2, g2.p1, g2.p2) == ("a", "b", "b", "a")


# ---- seeded games on the real server --------------------------------------------------------


def test_same_seeds_same_teams_other_pair_other_teams_and_teams_stay_with_the_side(showdown):
    specs = build_schedule("t", "teams", 2, [("random", "max-damage")])
    by_id = {r.spec.game_id: r.record for r in results(play(showdown, specs))}
    g1, g2 = by_id["random-vs-max-damage.p0001.g1"], by_id["random-vs-max-damage.p0001.g2"]
    other = by_id["random-vs-max-damage.p0002.g1"]
    assert species(g1["p1team"]) == species(g2["p1team"]) and species(g1["p2team"]) == species(g2["p2team"])
    assert g1["p1team"] == g2["p1team"] and g1["p2team"] == g2["p2team"]  # whole sets, not only species
    assert species(other["p1team"]) != species(g1["p1team"])
    assert g1["p1"].startswith("pbrandom") and g2["p1"].startswith("pbmaxdama")  # the players swapped sides
    assert g1["battle_seed"] == g2["battle_seed"] != other["battle_seed"]
    assert f'"seed":"{g1["battle_seed"]}"' in g1["input_log"][0]


def test_team_is_the_one_showdown_generates_from_the_team_seed(showdown):
    spec = build_schedule("t", "generator", 1, [("random", "max-damage")])[0]
    record = results(play(showdown, [spec]))[0].record
    script = (f"const {{Teams}} = require('./dist/sim/teams');"
              f"console.log(JSON.stringify(Teams.generate('gen9randombattle', {{seed: '{spec.p2_team_seed}'}}).map(s => s.species)))")
    out = subprocess.run(["node", "-e", script], cwd=showdown_package_dir(), capture_output=True, text=True, check=True).stdout
    assert species(record["p2team"]) == __import__("json").loads(out)


def test_deterministic_players_give_identical_battle_logs(showdown):
    spec = build_schedule("t", "determinism", 1, [("random", "heuristic")])[0]
    first, second = (results(play(showdown, [spec]))[0].record for _ in range(2))
    assert without_timestamps(first["log"]) == without_timestamps(second["log"])
    assert first["input_log"] == second["input_log"]


def test_players_on_connections_taken_over_from_earlier_games_play_the_same_games(showdown, monkeypatch):
    """A healthy game's connections are renamed for the next game's players: the games are those of fresh ones."""
    specs = build_schedule("t", "connections", 2, [("random", "heuristic")])
    seats: list[PokeEnvSeat] = []
    create = PokeEnvSeat.create

    async def recorded(*args, **kwargs):
        seats.append(await create(*args, **kwargs))
        return seats[-1]

    monkeypatch.setattr(PokeEnvSeat, "create", recorded)
    taken_over = results(play(showdown, specs, concurrency=1))
    assert [seat.renames for seat in seats] == [False, False] + [True] * 6  # all but the first game's
    alone = [results(play(showdown, [spec]))[0] for spec in specs]  # an arena each: connections of their own
    assert [r.record["input_log"] for r in taken_over] == [r.record["input_log"] for r in alone]
    assert [r.players for r in taken_over] == [r.players for r in alone]


def test_the_request_shortcut_leaves_every_pokemon_as_poke_envs_own_reading_does(showdown, monkeypatch):
    """poke_env_fixes skips walking a request's moves when they are the Pokémon's last request's: the games and,
    at every choice, both sides' Pokémon (moves, HP, status, item, ability, Tera type) are those of poke-env's
    own ``update_from_request`` (with the Tera fix alone)."""
    specs = build_schedule("t", "request-shortcut", 3, [("heuristic", "random"), ("max-damage", "heuristic")])
    seen: list[tuple] = []
    choose = {name: bot.choose_move for name, bot in BOTS.items()}

    def recording(name):
        def choose_move(self, battle):
            seen.append((self.username, battle.turn, [  # names are the game's, rooms the server's
                (mon.species, sorted(mon.moves), mon.current_hp, mon.status, mon.item, mon.ability, mon.tera_type,
                 mon.active) for mon in battle.team.values()]))
            return choose[name](self, battle)
        return choose_move

    for name, bot in BOTS.items():
        monkeypatch.setattr(bot, "choose_move", recording(name))
    shortcut = results(play(showdown, specs))
    with_shortcut, seen[:] = sorted(seen), []
    patched = poke_env_fixes._update_from_request

    def tera_fix_alone(mon, request_pokemon):  # the shortcut's condition never holds
        mon._last_request = None
        patched(mon, request_pokemon)

    monkeypatch.setattr(Pokemon, "update_from_request", tera_fix_alone)
    own = results(play(showdown, specs))
    assert len(with_shortcut) > 100 and sorted(seen) == with_shortcut
    assert [r.record["input_log"] for r in shortcut] == [r.record["input_log"] for r in own]


def test_recorded_input_log_replays_to_the_same_winner_and_turns(showdown, tmp_path):
    spec = build_schedule("t", "replay", 1, [("max-damage", "heuristic")])[0]
    record = results(play(showdown, [spec]))[0].record
    assert record["end_reason"] == "normal" and record["winner"] in ("p1", "p2")
    replay = subprocess.run(["node", "pokemon-showdown", "simulate-battle", "--skip-build"], cwd=showdown_package_dir(),
                            input="\n".join(record["input_log"]) + "\n", capture_output=True, text=True, check=True).stdout
    turns = [int(line.split("|")[2]) for line in replay.splitlines() if line.startswith("|turn|")]
    winner = [line.split("|")[2] for line in replay.splitlines() if line.startswith("|win|")]
    assert max(turns) == record["turns"]
    assert winner == [record[record["winner"]]]


def test_a_game_that_reaches_the_turn_limit_is_a_tie(showdown):
    spec = build_schedule("t", "turnlimit", 1, [("random", "max-damage")])[0]
    record = results(play(showdown, [spec], turn_limit=3))[0].record
    assert (record["winner"], record["end_reason"], record["turns"]) == ("tie", "turn_limit", 3)
    assert record["turn_limit"] == 3


class TeraWatcher(BenchPlayer):
    """Max-damage-like bot that notes whether it knows its own tera types."""

    seen: list[bool] = []

    def choose_move(self, battle):
        TeraWatcher.seen.extend(mon.tera_type is not None for mon in battle.team.values())
        return self.choose_random_move(battle)


def test_with_the_fix_players_know_their_tera_type_and_heuristic_terastallizes(showdown):
    specs = build_schedule("t", "tera", 5, [("heuristic", "tera-watcher")])
    outcomes = results(play(showdown, specs, {**BOTS, "tera-watcher": TeraWatcher}))
    assert TeraWatcher.seen and all(TeraWatcher.seen)
    heuristic_teras = sum(
        any(line.startswith(f">{side} ") and "terastallize" in line for line in o.record["input_log"])
        for o in outcomes for side in ("p1", "p2") if getattr(o.spec, side) == "heuristic"
    )
    assert heuristic_teras >= 3, f"SimpleHeuristicsPlayer terastallized in only {heuristic_teras} of 10 games"


# ---- security -------------------------------------------------------------------------------


def listening_addresses(port: int) -> set[str]:
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.rsplit(":", 1)
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_server_listens_on_loopback_only(showdown):
    assert listening_addresses(showdown.address.port) == {"0100007F"}  # 127.0.0.1, nothing else


def test_a_connection_without_the_token_cannot_register_games(showdown):
    intruder = ServerAddress(showdown.address.host, showdown.address.port, "not-the-token")

    async def attempt() -> None:
        admin = AdminClient(intruder)
        admin.username = "intruder"  # the harness's own names ("pb...") would not even log it in
        async with admin:
            await admin.register({"game_id": "x", "p1": "a", "p2": "b", "format": "gen9randombattle",
                                  "battle_seed": "sodium," + "0" * 32, "p1_team_seed": "sodium," + "1" * 32,
                                  "p2_team_seed": "sodium," + "2" * 32, "turn_limit": 300})

    with pytest.raises(AdminError, match="refused"):
        asyncio.run(attempt())


def test_a_team_of_its_own_is_refused_in_a_random_format_whether_the_game_is_registered_or_not(showdown):
    """The validator is skipped for a registered game's challenge only when it brings no team (`/utm null`)."""
    async def challenge(registered: bool) -> tuple[str, str]:
        a, b = (f"validated{secrets.token_hex(4)}" for _ in range(2))
        if registered:
            async with AdminClient(showdown.address) as admin:
                await admin.register({"game_id": a, "p1": a, "p2": b, "format": "gen9randombattle",
                                      "battle_seed": "sodium," + "0" * 32, "p1_team_seed": "sodium," + "1" * 32,
                                      "p2_team_seed": "sodium," + "2" * 32, "turn_limit": 300})
        async with User(showdown.address.websocket_url) as challenger, User(showdown.address.websocket_url) as challenged:
            await challenger.log_in(a)
            await challenged.log_in(b)
            await challenger.send("/utm Pikachu||lightball||thunderbolt|||||||")
            await challenger.send(f"/challenge {b}, gen9randombattle")
            refused = await challenger.until(lambda line: line.startswith("|popup|"))
            await challenger.send("/utm null")
            await challenger.send(f"/challenge {b}, gen9randombattle")
            received = await challenged.until(lambda line: line.startswith("|pm|"))
        return refused, received

    for registered in (True, False):
        refused, received = asyncio.run(challenge(registered))
        assert "This format doesn't let you use your own team" in refused
        assert received.endswith("|/challenge gen9randombattle|gen9randombattle|||")


# ---- faults ---------------------------------------------------------------------------------


def test_every_server_sends_the_list_of_formats_showdown_builds_as_saved_at_install(showdown, tmp_path):
    """Showdown builds the list at the first connection (about 2 s of CPU); the install saves it for the servers."""
    def sent(saved_formats: Path) -> str:
        with LocalShowdown(saved_formats=saved_formats) as server:
            assert server.address is not None
            return asyncio.run(format_list.sent_by(server.address))

    doctored = "|formats|,1|PokéBench|[Gen 9] Random Battle,f"
    built = sent(format_list.save(doctored, "0.0.1", tmp_path / "old.txt"))  # another version's: Showdown builds its own
    assert built.startswith("|formats|") and "[Gen 9] Random Battle," in built
    version, saved = format_list.installed_path().read_text().split("\n", 1)
    assert (version, saved) == (installed_version(), built)
    assert showdown.address is not None and asyncio.run(format_list.sent_by(showdown.address)) == built
    assert sent(format_list.save(doctored, version, tmp_path / "list.txt")) == doctored  # the file, as given


def test_port_taken_is_a_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        with pytest.raises(ServerError, match=r"Port \d+ on 127.0.0.1 is already in use.*server.port"):
            LocalShowdown(port=sock.getsockname()[1]).start()


def test_a_free_port_taken_before_the_server_listens_starts_it_on_another_at_once(tmp_path, monkeypatch):
    """Parallel test workers and shards pick free ports at once: one can be taken between the pick and
    the server's listen. The server then exits (not Showdown's crash guard running on, listening nowhere,
    until the start-up timeout) and starts again on another free port."""
    import pokebench.showdown.server as server_module

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        taken = sock.getsockname()[1]
        picks, checks = iter([taken, taken]), []
        monkeypatch.setattr(server_module, "free_port", lambda host="127.0.0.1": next(picks, 0) or free_port(host))
        real_check = server_module.port_is_taken

        def port_is_taken(port: int, host: str = "127.0.0.1") -> bool:
            checks.append(port)  # the first check of the taken port passes: it is taken right after
            return False if checks.count(taken) == 1 else real_check(port, host)

        monkeypatch.setattr(server_module, "port_is_taken", port_is_taken)
        with LocalShowdown(log_path=tmp_path / "showdown.log", startup_timeout=600) as server:
            assert server.address is not None and server.address.port != taken
            asyncio.run(ping(server.address))
    log = (tmp_path / "showdown.log").read_text()
    assert f"EADDRINUSE: address already in use 127.0.0.1:{taken}; the server exits" in log
    assert log.count("PokéBench starts the server") == 2  # the second pick was seen taken before any start


def test_node_missing_or_too_old_is_a_clear_error(tmp_path, monkeypatch):
    with pytest.raises(ServerError, match="Node.js is not installed.*make setup"):
        node_version("no-such-node-binary")
    fake = tmp_path / "node"
    fake.write_text("#!/bin/sh\necho v16.20.0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(ServerError, match="v16.20.0 is too old.*Upgrade Node.js"):
        node_version()


def test_half_written_install_is_a_clear_error(tmp_path):
    partial = tmp_path / "pokemon-showdown"
    partial.mkdir()
    with pytest.raises(ServerError, match="not installed.*make setup"):
        check_installation(partial)
    (partial / "package.json").write_text('{"version": "0.11.11"}')
    with pytest.raises(ServerError, match="half-written.*make setup"):
        check_installation(partial)
    (partial / "package.json").write_text('{"version": "0.11.3"}')
    with pytest.raises(ServerError, match="pins 0.11.11"):
        check_installation(partial)


class SlowBot(BenchPlayer):
    """Takes its time, so that a game is surely in flight when the server is killed; `in_play` is set once
    `IN_PLAY_GAMES` games have asked it for a move (the kill waits for that, not for a time that a loaded machine
    may not keep)."""

    IN_PLAY_GAMES = 2
    asked_in: set[str] = set()
    in_play = threading.Event()

    async def choose_move(self, battle):
        SlowBot.asked_in.add(battle.battle_tag)
        if len(SlowBot.asked_in) >= SlowBot.IN_PLAY_GAMES:
            SlowBot.in_play.set()
        await asyncio.sleep(0.3)
        return self.choose_random_move(battle)


def test_server_killed_mid_game_gives_harness_errors_and_is_restarted(tmp_path):
    specs = build_schedule("t", "kill", 2, [("slow", "max-damage")])
    with LocalShowdown(log_path=tmp_path / "showdown.log") as server:
        first_pid = server.process.pid

        SlowBot.asked_in.clear()
        SlowBot.in_play.clear()

        def kill_mid_game() -> None:
            if SlowBot.in_play.wait(timeout=300):  # both games have begun to play
                os.killpg(first_pid, signal.SIGKILL)

        threading.Thread(target=kill_mid_game, daemon=True).start()
        outcomes = play(server, specs[:2], {"slow": SlowBot, **BOTS}, concurrency=2)
        assert all(isinstance(o, HarnessError) and o.cause in ("server died", "server connection lost") for o in outcomes)
        # The next games find the server restarted and play normally.
        again = results(play(server, specs[2:], {"slow": SlowBot, **BOTS}, concurrency=2))
        assert server.restarts == 1 and server.process.pid != first_pid
        assert all(o.record["winner"] in ("p1", "p2", "tie") for o in again)


def test_a_command_cut_off_as_a_dead_servers_connection_is_let_go_leaves_no_exception_unread(tmp_path):
    """A command still being sent when the arena lets go of a dead server's connection (``_current``: the reader
    stops, failing every reply it waits for) fails with AdminError, and its reply's failed future is read too:
    asyncio printed "Future exception was never retrieved" in a run whose server was killed."""
    unread: list[str] = []

    async def attempt(server: LocalShowdown) -> None:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unread.append(context["message"]))
        admin = await AdminClient(server.address, timeout=60).__aenter__()
        os.killpg(server.process.pid, signal.SIGSTOP)
        sending = asyncio.ensure_future(admin.register({"game_id": "x", "padding": "a" * 50_000_000}))
        await asyncio.sleep(1)  # the command fills the socket's buffers: its send waits on the stopped server
        assert not sending.done()
        letting_go = asyncio.ensure_future(admin.__aexit__(None, None, None))
        await asyncio.sleep(0.5)
        os.killpg(server.process.pid, signal.SIGKILL)
        with pytest.raises(AdminError, match="connection to the Showdown server was lost"):
            await sending
        await asyncio.gather(letting_go, return_exceptions=True)
        del sending, letting_go, admin  # the arena drops a dead connection's client: its futures are freed
        gc.collect()
        await asyncio.sleep(0)

    with LocalShowdown(log_path=tmp_path / "showdown.log") as server:
        asyncio.run(attempt(server))
    assert unread == []


def test_finished_battles_leave_no_listener_on_their_simulator_process(tmp_path):
    """The plugin watches each battle's simulator process for a crash; a battle that ended stops watching. Its
    listeners stayed (holding the finished battle): node warned past 10 of them on one process, and a long run's
    server kept every battle it had played."""
    log = tmp_path / "showdown.log"
    with LocalShowdown(sim_processes=1, log_path=log) as server:
        results(play(server, build_schedule("t", "listeners", 7, [("random", "max-damage")]), turn_limit=5))
    assert "MaxListenersExceededWarning" not in log.read_text()


def test_runs_can_use_a_server_that_is_already_running(showdown):
    from pokebench.showdown.server import RemoteShowdown

    with RemoteShowdown(showdown.address.host, showdown.address.port, showdown.admin_token) as remote:
        spec = build_schedule("t", "remote", 1, [("random", "max-damage")])[0]
        assert results(play(remote, [spec]))[0].record["game_id"] == spec.game_id
    with pytest.raises(ServerError, match="POKEBENCH_ADMIN_TOKEN"):
        RemoteShowdown("127.0.0.1", showdown.address.port, None)
    with pytest.raises(ServerError, match="No PokéBench Showdown server answers"):
        with RemoteShowdown("127.0.0.1", 9, "token"):
            pass
    # a wrong token: the server answers and refuses it (it was "No PokéBench Showdown server answers ... ()")
    with pytest.raises(ServerError, match="answers, but the server refused the harness's login: it was started "
                                          "with another admin token. Set POKEBENCH_ADMIN_TOKEN"):
        with RemoteShowdown("127.0.0.1", showdown.address.port, "not-" + showdown.admin_token):
            pass


def test_the_server_exits_when_its_harness_dies_even_while_its_start_up_blocks(tmp_path):
    """parent_watch.js watches from a process of its own: a main thread that never yields (as while
    Showdown loads) does not keep a server alive whose harness was SIGKILLed."""
    from pokebench.showdown.node import node_command, node_env, script_path
    from support.processes import wait_for

    harness = subprocess.Popen(["sleep", "600"])
    server = subprocess.Popen(node_command("--require", str(script_path("parent_watch.js")), "-e", "for (;;) {}"),
                              env=node_env(POKEBENCH_PARENT_PID=str(harness.pid)), start_new_session=True)
    try:
        time.sleep(1.0)
        assert server.poll() is None, "the server exited while its harness lived"
        harness.kill()
        harness.wait()
        wait_for(lambda: server.poll() is not None, 30, "the server to exit after its harness died")
    finally:
        for proc in (harness, server):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_a_server_started_by_localshowdown_exits_when_its_harness_is_sigkilled_during_start_up(tmp_path):
    from support.games import REPO_DIR
    from support.processes import is_gone, server_process, wait_for

    script = ("import sys; from pathlib import Path; from pokebench.showdown.server import LocalShowdown; "
              "LocalShowdown(log_path=Path(sys.argv[1])).start()")
    harness = subprocess.Popen([os.sys.executable, "-c", script, str(tmp_path / "showdown.log")],
                               env=dict(os.environ, PYTHONPATH=str(REPO_DIR)))
    node = wait_for(lambda: server_process(harness.pid), 60, "the server process")
    harness.kill()  # during its start-up: Showdown has not loaded yet
    harness.wait()
    wait_for(lambda: is_gone(node), 30, "the server to exit")
