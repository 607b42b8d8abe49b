"""Every answer the endpoint served is recorded, whatever stops the run: Ctrl-C, SIGTERM, a key refused
mid-run. Real `python -m pokebench` runs with 4 LLM games in flight against the local OpenAI-compatible
server, which counts what it served; the store must hold every one of them (``decisions`` and
``voided_decisions``; a request cancelled in flight is an entry with ``error: cancelled``), and nothing more
but such entries."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from support.games import REPO_DIR
from support.llm import reset_api
from support.processes import wait_for
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.results.store import RunStore

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

SECRET = "fake-api-key-NEVER-STORED-19"


class Counting:
    """Answers every game request after `delay` s (the pre-flight at once); once `refuse_after` answers were
    served, one request gets a 401 (the key refused mid-run; the others in flight are answered, and paid).

    Only one 401: a request cut off by the stop while a 401 is on its way is recorded as cancelled (its
    fate unknown to the harness), which would count one answer more than were paid; the refused one is not served."""

    def __init__(self, delay: float = 0.2, refuse_after: int | None = None) -> None:
        self.delay, self.refuse_after = delay, refuse_after
        self.served = 0  # answers of games (200s after the pre-flight)
        self.refused = False
        self.lock = threading.Lock()

    def __call__(self, request: ChatRequest) -> Reply:
        if request.index == 0:
            return Reply(text="ACTION: 1\nREASON: pre-flight")
        with self.lock:
            if self.refuse_after is not None and self.served >= self.refuse_after and not self.refused:
                self.refused = True
                return Reply(status=401, error="revoked")
            self.served += 1
        return Reply(text=hashed_policy(request), delay=self.delay)


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI() as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_api(api, monkeypatch):
    yield reset_api(api, monkeypatch, SECRET)


def start_run(tmp_path: Path, api: LocalOpenAI, sigint: Any = signal.SIG_DFL) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), POKEBENCH_BASE_URL=api.base_url, POKEBENCH_API_KEY=SECRET)
    args = [sys.executable, "-m", "pokebench", "+run=llm-smoke", "publish=false", "server.sim_processes=1",
            "pairs=2", "concurrency=4", "players.local.model.max_in_flight=4", "players.local.model.max_attempts=1"]
    return subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, sigint))


def recorded(tmp_path: Path) -> dict[str, int]:
    """Rows of each answer table of the run's store (read as a plain SQLite file), and how many of the answer
    rows are requests cancelled in flight."""
    with sqlite3.connect(tmp_path / "runs" / "llm-smoke" / "store.sqlite") as db:
        rows = {table: db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
                for table in ("decisions", "voided_decisions", "harness_errors")}
        rows["cancelled"] = sum(db.execute(f"SELECT COUNT(*) FROM {table} WHERE json_extract(data, '$.error') = "
                                           "'cancelled'").fetchone()[0] for table in ("decisions", "voided_decisions"))
    return rows


def assert_every_served_answer_recorded(rows: dict[str, int], policy: Counting) -> None:
    """Every answer the server served is a row, and every row an answer it served: a request cut off in flight is a
    row (cancelled) when its body had been sent whole, so the server has it and bills it, and none when it was cut
    off before. (Before the client watched its requests' delivery, a row more was allowed for each cancelled one.)"""
    time.sleep(0.5)  # a request sent whole just before the stop: the server has read it by now
    assert rows["decisions"] + rows["voided_decisions"] == policy.served, (rows, policy.served)


def stop_mid_run(tmp_path: Path, api: LocalOpenAI, how: signal.Signals,
                 sigint: Any = signal.SIG_DFL) -> tuple[subprocess.Popen[str], str, Any]:
    """Stop a run with signal `how` once 24 answers were served; the run must stop without waiting out a time-out
    (it took 30 s where SIGINT was ignored, because every task was cancelled at once)."""
    policy = Counting()
    api.policy = policy
    proc = start_run(tmp_path, api, sigint)
    try:
        wait_for(lambda: policy.served >= 24, 180, "24 answers served")
        proc.send_signal(how)
        _, stderr = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc, stderr, policy


@pytest.mark.parametrize("how, code, said, sigint", [
    (signal.SIGINT, 130, "Interrupted.", signal.SIG_DFL),
    (signal.SIGTERM, 143, "Stopped by SIGTERM.", signal.SIG_DFL),
    (signal.SIGTERM, 143, "Stopped by SIGTERM.", signal.SIG_IGN),  # a script's background job: SIGINT ignored
])
def test_a_stopped_run_records_every_answer_served(tmp_path, api, how, code, said, sigint):
    proc, stderr, policy = stop_mid_run(tmp_path, api, how, sigint)
    assert proc.returncode == code and said in stderr, stderr[-3000:]
    assert f"To resume: {sys.executable} -m pokebench +run=llm-smoke" in stderr
    assert "Traceback" not in stderr and "never retrieved" not in stderr, stderr[-3000:]
    rows = recorded(tmp_path)
    assert_every_served_answer_recorded(rows, policy)
    assert rows["voided_decisions"] > 0 and rows["harness_errors"] >= 1  # the games in flight, voided
    # the summary's answers are the requests answered: a request cut off in flight is a row, not an answer
    with RunStore.open_existing(tmp_path / "runs" / "llm-smoke" / "store.sqlite") as store:
        answers = store.spend_by_player()["local"]["answers"]
    assert answers == rows["decisions"] + rows["voided_decisions"] - rows["cancelled"]


def test_a_key_refused_mid_run_leaves_every_served_answer_recorded(tmp_path, api):
    policy = Counting(refuse_after=24)
    api.policy = policy
    proc = start_run(tmp_path, api)
    _, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 3 and "refused the key" in stderr, stderr[-3000:]
    rows = recorded(tmp_path)
    assert policy.refused
    assert_every_served_answer_recorded(rows, policy)


@pytest.mark.parametrize(("overrides", "message"), [
    (["budget_usd=1"], "'budget_usd' cannot be kept: the prices of local are unknown (prices: unknown)"),
    (["players.local.model.budget_usd=1"], "'players.local.model.budget_usd' cannot be kept"),
])
def test_a_cap_on_a_model_whose_prices_are_unknown_is_refused_before_any_request(tmp_path, api, overrides, message):
    """Its spend is recorded as unknown, so a cap on it was accepted and could never stop a game."""
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), POKEBENCH_BASE_URL=api.base_url, POKEBENCH_API_KEY=SECRET)
    asked = len(api.requests)
    proc = subprocess.run([sys.executable, "-m", "pokebench", "+run=llm-smoke", "players.local.model.prices=unknown",
                           *overrides], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert len(api.requests) == asked and not (tmp_path / "runs" / "llm-smoke" / "store.sqlite").exists()
