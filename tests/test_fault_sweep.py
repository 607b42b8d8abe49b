"""The fault sweep: every fault the harness claims to survive, at every phase of a game's life.

Each case is one run (``pokebench.play.runner.run``, the function the command line calls) of two mirror pairs
at concurrency 2, with a real pinned server, real poke-env players and a real local model endpoint. One fault
strikes once, at the first moment of its phase (:mod:`support.fault_sweep` says how each moment is caught):

- phases: a player logs in, renames a connection it took over from an earlier game, challenges or accepts, chooses mid-turn, chooses a forced switch; a game is being
  stored; a battle ends; a game is replayed in a retry round (after a deliberate crash); the harness restarts the
  server (after a kill mid-game);
- faults: the server SIGSTOPped until the harness kills it (liveness time-out 2 s here), or paused past the
  time-out and going on by itself, the server or its simulator SIGKILLed, its simulator SIGSTOPped for good (the
  server's plugin must kill it within 5 s here), the player's websocket dropped, the harness's own connection to the server dropped while the server runs on (as a
  pause past the websocket's keep-alive and short of the liveness time-out drops it), the model endpoint hanging or
  hanging up on every attempt of an answer.

After each, the run has ended in this one start: every planned game stored once, none twice, no exception,
no traceback in what it printed or logged, and no game waited out by the stall watchdog (every fault is seen
by its own check). The runs play in this process on one server that the module lends them (a fresh server per
case would cost more CPU than the games: a boot is ~5 s of node): the server's restarts are the harness's own.
"""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path
from typing import Any, Iterator

import pytest
from hydra import compose, initialize_config_dir

from pokebench import paths
from pokebench.llm.fake_server import LocalOpenAI, hashed_policy
from pokebench.play import runner
from pokebench.play.arena import Arena
from pokebench.player import seats
from pokebench.play.schedule import build_schedule
from pokebench.results.store import RunStore
from pokebench.showdown.server import LocalShowdown
from support import fault_sweep
from support.fault_sweep import FAULTS, PHASES, SIMULATOR_FAULTS, Sweep

pytestmark = [pytest.mark.server, pytest.mark.slow, pytest.mark.fault_sweep, pytest.mark.per_worker]

LIVENESS = 2.0
#: Seconds a simulator process may leave the plugin's question unanswered (a run gives its liveness time-out; the
#: sweep's server allows more, so that a simulator that boots slowly on a busy machine is not taken for hung).
SIMULATOR_TIMEOUT = 5.0
STARTUP_TIMEOUT = 30.0
LLM_TIMEOUT = 2.0
PAIRS = 2


@pytest.fixture(scope="module")
def lent_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalShowdown]:
    """One server for the module's runs (each run's restarts replace its process, as in any run)."""
    # startup_timeout: how long a restart may take before it fails (a server SIGSTOPped as it boots)
    with LocalShowdown(sim_processes=1, log_path=tmp_path_factory.mktemp("sweep") / "showdown.log",
                       startup_timeout=STARTUP_TIMEOUT, simulator_timeout=SIMULATOR_TIMEOUT) as server:
        yield server


@pytest.fixture(scope="module")
def api() -> Iterator[LocalOpenAI]:
    with LocalOpenAI(policy=hashed_policy) as server:
        yield server


class _Lent:
    """What the runner gets instead of a server it starts: the module's, answering (a case may leave it hung)."""

    def __init__(self, server: LocalShowdown, fresh: bool) -> None:
        self.server = server
        self.fresh = fresh

    def __enter__(self) -> LocalShowdown:
        if self.fresh:
            self.server.stop(kill=True)
            self.server.start()
        self.server.ensure_running(unresponsive=True)
        return self.server

    def __exit__(self, *exc: object) -> None:
        return None


def _overrides(name: str, llm: bool) -> list[str]:
    common = [f"name={name}", f"pairs={PAIRS}", "concurrency=2", f"server.liveness_timeout={LIVENESS:g}",
              "stall_timeout=60", "retry_rounds=3", "publish=false"]
    if llm:
        return ["+run=llm-smoke", "players.local._target_=support.fault_sweep.FaultyLLM",
                f"players.local.model.timeout={LLM_TIMEOUT:g}", "players.local.model.max_attempts=2",
                "players.local.model.backoff_base=0.01", "players.local.model.backoff_max=0.05",
                "players.local.model.max_in_flight=2", *common]
    return ["+run=bots-smoke", "players.random._target_=support.fault_sweep.FaultyRandom",
            "matchups=[[random,max-damage]]", *common]


def _play(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: LocalShowdown, sweep: Sweep, name: str,
          llm: bool, api: LocalOpenAI | None) -> int:
    if llm:
        assert api is not None
        monkeypatch.setenv("POKEBENCH_BASE_URL", api.base_url)
    with initialize_config_dir(str(paths.conf_dir()), version_base=None):
        cfg = compose("config", overrides=_overrides(name, llm))
    kills: dict[int, int] = server.__dict__.setdefault("_sweep_sim_kills", {})
    assert server.process is not None
    fresh = sweep.fault in SIMULATOR_FAULTS and kills.get(server.process.pid, 0) >= 4
    monkeypatch.setattr(runner, "_server", lambda cfg, log_path: _Lent(server, fresh))
    monkeypatch.setattr(fault_sweep, "SWEEP", sweep)
    wait_until_ready = server._wait_until_ready

    def restarting() -> None:
        sweep.restarting()
        wait_until_ready()

    monkeypatch.setattr(server, "_wait_until_ready", restarting)
    save_game = RunStore.save_game

    def storing(store: RunStore, *args: Any, **kwargs: Any) -> None:
        sweep.at("storing")
        save_game(store, *args, **kwargs)

    monkeypatch.setattr(RunStore, "save_game", storing)
    rename = seats._rename

    async def renaming(client: Any, token: str) -> None:
        sweep.renaming(client)
        await rename(client, token)

    monkeypatch.setattr(seats, "_rename", renaming)
    connect = Arena._connect

    async def connecting(arena: Arena) -> Any:
        conn = await connect(arena)
        sweep.harness_connected(conn.admin, asyncio.get_running_loop())
        return conn

    monkeypatch.setattr(Arena, "_connect", connecting)
    try:
        return runner.run(cfg, name, tmp_path / "runs")
    finally:
        if sweep.fault in SIMULATOR_FAULTS and server.process is not None:
            kills[server.process.pid] = kills.get(server.process.pid, 0) + 1


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("phase", PHASES)
def test_a_fault_at_any_phase_of_a_game_leaves_the_run_complete_in_one_start(
        tmp_path, monkeypatch, caplog, capsys, lent_server, api, phase, fault):
    llm = fault.startswith("llm-")
    api.policy = hashed_policy
    sweep = Sweep(phase, fault, lent_server, pause_seconds=LIVENESS + 2, api=api if llm else None,
                  llm_timeout=LLM_TIMEOUT)
    name = f"sweep-{phase}-{fault}"
    caplog.set_level(logging.WARNING)
    missing = _play(tmp_path, monkeypatch, lent_server, sweep, name, llm, api)
    printed = capsys.readouterr()

    assert sweep.struck, f"the fault never struck at {phase}"
    assert not sweep.missed, sweep.missed
    assert missing == 0, printed.out[-2000:]
    player = "local" if llm else "random"
    opponent = "max-damage"
    planned = sorted(s.game_id for s in build_schedule(name, "pokebench-2026", PAIRS, [(player, opponent)]))
    with RunStore.open_existing(tmp_path / "runs" / name / "store.sqlite") as store:
        games, errors = store.games(), store.harness_errors()
    assert sorted(games.game_id) == planned, (sweep.struck, errors)  # every planned game once, none twice
    assert set(errors.game_id) <= set(games.game_id)
    assert not any(cause.startswith("battle stalled") for cause in errors.cause), (sweep.struck, errors)
    text = printed.out + printed.err + caplog.text
    assert "Traceback" not in text and "never retrieved" not in text, text[-3000:]  # nor an unread asyncio error
    if fault == "server-killed":  # it closes its connections a moment before its process is seen to end
        assert "ran on" not in text and "dropped the harness's connection" not in text, text[-3000:]
    for line in caplog.text.splitlines():  # no repr; each voided game's line: its cause, then only what the detail adds
        assert not re.search(r"\w+\('", line), line
        if "Harness error in" in line:
            assert not re.search(r": ([^(]+) \(\1\)$", line), line
