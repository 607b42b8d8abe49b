"""What a local user (or the harness's own environment) must not be able to do to a run's server."""

from __future__ import annotations

import asyncio
import re
import shutil
from pathlib import Path

import pytest

from support.games import BOTS, play, results
from pokebench.play.schedule import build_schedule
from pokebench.player.seats import showdown_username
from pokebench.showdown.server import LocalShowdown
from support.processes import descendants
from support.showdown_user import User

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

PLANTED = {"OPENAI_API_KEY": "fake-planted-openai-key-0123", "ANTHROPIC_API_KEY": "fake-planted-anthropic-key-0123",
           "POKEBENCH_API_KEY": "planted-pokebench-key-42", "AWS_SECRET_ACCESS_KEY": "planted/aws/secret"}


def _environment(pid: int) -> bytes | None:
    """The environment of process `pid`; None if it has exited since it was listed (a short-lived child)."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError):
        return None


def test_the_showdown_processes_get_no_api_key_from_the_harness_environment(monkeypatch, tmp_path):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    with LocalShowdown(sim_processes=2, log_path=tmp_path / "showdown.log") as server:
        pids = [server.process.pid, *descendants(server.process.pid)]
        environments = {pid: env for pid in pids if (env := _environment(pid)) is not None}
    assert len(environments) >= 4  # the server, two simulators, the validator
    for pid, env in environments.items():
        for name, value in PLANTED.items():
            assert value.encode() not in env and f"{name}=".encode() not in env, (pid, name)


def test_nobody_can_log_in_under_the_names_of_the_harness_players(showdown):
    spec = build_schedule("t", "squat", 1, [("random", "max-damage")])[0]
    names = [showdown_username(player, 0, spec) for player in (spec.p1, spec.p2)]

    async def squat() -> list[str]:
        async with User(showdown.address.websocket_url) as user:
            answers = [await user.log_in(name) for name in names]
            answers.append(await user.log_in("localuser1"))
            return answers

    answers = asyncio.run(squat())
    assert all(a.startswith("|nametaken|") and "reserved for the PokéBench harness" in a for a in answers[:2])
    assert answers[2].startswith("|updateuser|")  # other names stay open to anyone
    game = results(play(showdown, [spec], BOTS))[0]  # and the harness still plays under those names
    assert {game.record["p1"], game.record["p2"]} == set(names)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to watch the server's connections")
def test_a_spectators_savereplay_makes_the_server_contact_nothing_off_this_machine(tmp_path):
    trace = tmp_path / "connect.trace"
    prefix = ["strace", "-f", "-qq", "-e", "trace=connect,sendto,sendmsg,bind", "-o", str(trace)]
    try:
        server = LocalShowdown(log_path=tmp_path / "showdown.log", launch_prefix=prefix).__enter__()
    except Exception as err:  # e.g. ptrace not permitted in this container
        pytest.skip(f"cannot run the server under strace here: {err}")

    async def battle_and_savereplay() -> str:
        url = server.address.websocket_url
        async with User(url) as alice, User(url) as bob:
            assert (await alice.log_in("alice1")).startswith("|updateuser|")
            assert (await bob.log_in("bob1")).startswith("|updateuser|")
            await alice.send("/challenge bob1, gen9randombattle")
            await bob.until(lambda line: "/challenge" in line and "alice1" in line.lower())
            await bob.send("/accept alice1")
            init = await alice.until(lambda line: "|init|battle" in line)
            room = init.split("|init|")[0]
            async with User(url) as carol:  # a spectator
                assert (await carol.log_in("carol1")).startswith("|updateuser|")
                await carol.send(f"/join {room}")
                await carol.until(lambda line: line.startswith("|init|") or "|init|battle" in line)
                await carol.send("/savereplay", room)
                popup = await carol.until(lambda line: line.startswith("|popup|"))
                await asyncio.sleep(2.5)  # Showdown batches login-server requests for 1 s
                return popup

    try:
        popup = asyncio.run(battle_and_savereplay())
    finally:
        server.__exit__(None, None, None)
    assert "replays are not uploaded" in popup
    calls = trace.read_text().splitlines()
    outbound = [c for c in calls if re.search(r"\b(connect|sendto|sendmsg)\(", c)]
    addresses = [a for c in outbound for a in re.findall(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"', c)]
    outside = [v4 or v6 for v4, v6 in addresses
               if not (v4.startswith("127.") or v6 == "::1" or v6.startswith("::ffff:127."))]
    assert not outside, f"the server connected to {sorted(set(outside))}"
    # strace did watch the server: it saw it bind its port on 127.0.0.1
    assert any("bind(" in c and f"htons({server.address.port})" in c and '"127.0.0.1"' in c for c in calls)
