"""What a worker process of ``pokebench analyse`` runs: the games of a chunk replayed, searched and valued.

The workers are spawned (they import the engine afresh, no forked state) and import this module to run their
work: it imports no table library, so that a worker's imports take about 0.4 s of CPU where importing
:mod:`pokebench.analysis.analyse` (pandas, the run loaders) made them about 1 s.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from typing import Any

from pokebench.analysis.settings import Settings, engine_version
from pokebench.analysis.value import load_value_model, luck_settings

__all__ = ["StoredGame", "Task", "init_worker", "work"]

#: The set table of a worker process, loaded once by :func:`init_worker`.
_SETS: Any = None


@dataclass(frozen=True)
class StoredGame:
    """A stored game to analyse: what the analysis reads of it."""

    uid: str
    run: str
    game_id: str
    players: dict[str, str]  # side -> player
    input_log: list[str]
    #: :func:`pokebench.analysis.analyse.recorded_policies` of its players' entries
    policies: dict[str, list[dict[str, Any]]] | None = None


@dataclass(frozen=True)
class Task:
    game: StoredGame
    settings: Settings
    indices: frozenset[int] | None  # None: every decision; empty: none (the luck alone)
    repeat: int
    luck: bool = False  # measure the game's luck too


def init_worker() -> None:
    global _SETS
    from pokebench.engine.errors import hold_panic_output
    from pokebench.engine.sets import SetTable

    hold_panic_output()  # an engine panic is the decision's {"error": ...}, not a dump in the output
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it ends the pool
    _SETS = SetTable.load()


def work(chunk: list[Task]) -> list[tuple[list[dict[str, Any]], dict[str, Any] | None]]:
    """Per game of the chunk (replayed in one simulator process): its decision searches (cache entries) and its
    luck (one entry, None when not asked)."""
    from pokebench.analysis.luck import game_luck
    from pokebench.analysis.scoring import score_game
    from pokebench.engine.from_showdown import game_positions

    engine = engine_version()
    model = load_value_model() if any(task.luck for task in chunk) else None
    luck_key = luck_settings(model) if model is not None else None
    out = []
    for task, game in zip(chunk, game_positions([(t.game.uid, t.game.input_log) for t in chunk]), strict=True):
        stored = task.game
        entries = [] if task.indices == frozenset() else score_game(
            game, stored.input_log, _SETS, task.settings, set(task.indices) if task.indices is not None else None)
        luck = None
        if model is not None and task.luck:
            luck = {**game_luck(game, model, stored.policies), "uid": stored.uid, "run": stored.run,
                    "game_id": stored.game_id, "engine": engine, "settings": luck_key}
        out.append(([{**entry, "uid": stored.uid, "run": stored.run, "game_id": stored.game_id,
                      "player": stored.players[entry["side"]], "decisions_in_game": len(game.decisions),
                      "engine": engine, "settings": task.settings.key, "repeat": task.repeat} for entry in entries],
                    luck))
    return out
