"""What the Continual Harness tests share: the scripted local API, whole runs as subprocesses, trajectories."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from support.existing_server import on_server
from support.games import REPO_DIR
from pokebench.llm.client import PREFLIGHT_QUESTION, ModelConfig
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.players.continual.refiner import REFINER_MARKER
from pokebench.showdown.server import LocalShowdown

PRICES = "{input:3,cached_input:0.3,output:15}"
ADVISOR = "an advisor to an AI player"


def refiner_config(api: LocalOpenAI, **overrides: Any) -> ModelConfig:
    """A priced model config on the local API, with no key."""
    return ModelConfig.from_dict({"model": "m", "base_url": api.base_url, "api_key_env": "NO_SUCH_KEY_VAR",
                                  "api_key_required": False, "prices": {"input": 1, "cached_input": 0.1,
                                                                         "output": 2}, **overrides})


def trajectory(game_id: str, epoch: int, outcome: str = "lost") -> dict[str, Any]:
    return {"game_id": game_id, "player": "ch", "side": "p1", "epoch": epoch, "version": 0, "outcome": outcome,
            "turns": 3, "answers": [{"turn": 1, "action": "move Tackle", "reason": "why not"}], "team_hp": [],
            "battle_log": [f"Tackle in {game_id}"]}


class Script:
    """The local API's answers: four refiner passes, advisors, decisions (with a consultation), a teacher."""

    PARTS = {"STRATEGY": 1, "MEMORY": 2, "SKILLS": 3, "ADVISORS": 4}

    def __init__(self) -> None:
        self.refiner: list[ChatRequest] = []
        self.refinements = 0
        self.slow_epoch: int | None = None

    def __call__(self, request: ChatRequest) -> Reply | str:
        system = request.messages[0].get("content") or ""
        if system == PREFLIGHT_QUESTION:  # the run's pre-flight request, before any game
            return "OK"
        if REFINER_MARKER in system:
            self.refiner.append(request)
            asked = re.search(r"This is pass (\d) of \d: the ([A-Z]+)", request.messages[-1]["content"])
            self.refinements += asked.group(1) == "1"
            return json.dumps({"edits": self.edits(self.PARTS[asked.group(2)], self.refinements)})
        if ADVISOR in system:
            return "Use the move its type is weak to."
        first = request.messages[1].get("content") or ""
        if self.slow_epoch is not None and f"epoch {self.slow_epoch} of this run" in first:
            time.sleep(0.25)
        last = request.messages[-1]
        if request.tools and last["role"] == "user" and "YOUR HARNESS" in (last.get("content") or ""):
            return Reply(tool_calls=[{"name": "consult",
                                      "arguments": {"advisor": "type_checker", "question": "Which move?"}}])
        return hashed_policy(request)

    @staticmethod
    def edits(number: int, refinement: int) -> list[Any]:
        if refinement == 1:
            return [
                [{"op": "rewrite", "text": "STRATEGY ONE: attack with super effective moves."}],
                [{"op": "add", "text": "Ground moves do not affect Flying types <b>ever</b>.", "importance": 4},
                 {"op": "update", "id": "m99", "text": "no such entry"}],
                [{"op": "add", "name": "check immunities", "when": "before attacking", "steps": "read its types"}],
                [{"op": "add", "name": "type_checker", "when": "unsure of a matchup",
                  "instructions": "Name the best move by type."}],
            ][number - 1]
        return [[{"op": "rewrite", "text": "x" * 5000}], [{"op": "demote", "id": "m1"}],
                "not a list", []][number - 1]


def pokebench(cwd: Path, api: LocalOpenAI, *args: str, server: LocalShowdown | None = None,
              env: dict[str, str] | None = None, sigint_default: bool = False) -> subprocess.Popen[str]:
    """`python -m pokebench ARGS` with its models on `api`; on `server` (the worker's, running) if given; `env`
    added to the environment; `sigint_default`: Ctrl-C's default handler restored (a test's child may start with
    SIGINT ignored)."""
    extra, server_env = on_server(server) if server is not None else ([], {})
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), POKEBENCH_BASE_URL=api.base_url, **server_env, **(env or {}))
    return subprocess.Popen([sys.executable, "-m", "pokebench", *args, *extra], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if sigint_default else None)


def finish(proc: subprocess.Popen[str]) -> str:
    """Wait for a whole run that must succeed; what it printed."""
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    return out


def stored(db: Path) -> set[str]:
    if not db.exists():
        return set()
    try:
        with sqlite3.connect(db) as raw:
            return {row[0] for row in raw.execute("SELECT game_id FROM games")}
    except sqlite3.OperationalError:  # the run is still creating its store's tables
        return set()


def harness_side(sides: dict[str, Any], player: str) -> dict[str, Any]:
    return next(s for s in sides.values() if s["player"] == player)
