"""One stored game's decisions, searched by poke-engine from both views.

At each decision point (:mod:`pokebench.engine.from_showdown`), the engine's MCTS values every
action of the deciding side twice:

- *full information*: Showdown's own state of both sides (:func:`position_from_showdown`);
- *the player's information* (the headline): what that side knew, from its own messages, the
  opponent's unknowns sampled from the pinned server's random-battle sets, ``samples`` times
  (:func:`pokebench.engine.from_messages.player_positions`), the values averaged over them.

Both use the same fixed budget of ``iterations`` per state for every player. The samples are
drawn from a generator seeded by the game and the decision, so they are the same every time;
the search itself has no seed (see :mod:`pokebench.engine.search`). A decision with one legal
action is not searched. What comes out is the raw search (actions, visits, values): regret,
agreement and blunders are computed from it at publish time (:mod:`pokebench.analysis.quality`).
"""

from __future__ import annotations

import random
import time
from typing import Any

from pokebench.analysis.settings import Settings
from pokebench.engine.errors import EngineError
from pokebench.engine.from_messages import player_name, player_positions
from pokebench.engine.from_showdown import Decision, GamePositions, engine_action, position_from_showdown
from pokebench.engine.search import Budget, SearchResult, search
from pokebench.engine.sets import SetTable
from pokebench.engine.state import build_state

__all__ = ["legal_options", "score_game", "search_entry"]

def legal_options(request: dict[str, Any]) -> int:
    """How many actions Showdown's request offers (a Terastallized move counts as its own action)."""
    side = request.get("side", {}).get("pokemon", [])
    switches = sum(1 for mon in side if not mon.get("active") and not str(mon.get("condition", "")).endswith("fnt"))
    if request.get("forceSwitch"):
        return switches
    active = (request.get("active") or [{}])[0]
    moves = sum(1 for move in active.get("moves", []) if not move.get("disabled"))
    moves *= 2 if active.get("canTerastallize") else 1
    return moves + (0 if active.get("trapped") else switches)


def search_entry(result: SearchResult, chosen: str) -> dict[str, Any]:
    """A search as the cache keeps it: [action, visits, value] most visited first, and the action chosen."""
    return {"actions": [[a.action, a.visits, round(a.value, 5)] for a in result.actions], "chosen": chosen}


def _search(states: list[Any], settings: Settings, chosen: str) -> dict[str, Any]:
    return search_entry(search(states, Budget(iterations=settings.iterations)), chosen)


def _guarded(make: Any) -> dict[str, Any]:
    try:
        return dict(make())
    except EngineError as err:
        return {"error": str(err)}


def score_decision(game: GamePositions, decision: Decision, username: str, sets: SetTable,
                   settings: Settings) -> dict[str, Any]:
    """The searches of one decision: ``{"full": ..., "own": ..., "options", "seconds"}`` (``own``: the
    player's own information); a view the engine could not take has ``{"error": why}``."""
    started = time.perf_counter()
    options = legal_options(decision.request)
    chosen = engine_action(decision.choice, decision.state["sides"][decision.side])
    entry: dict[str, Any] = {"options": options}
    if options <= 1 or not decision.choice:
        trivial = {"actions": [[chosen, 0, None]], "chosen": chosen} if decision.choice else {"error": "no choice"}
        entry.update(full=trivial, own=trivial)
    else:
        entry["full"] = _guarded(lambda: _search([build_state(position_from_showdown(decision))], settings, chosen))
        rng = random.Random(f"{game.id}:{decision.index}")
        entry["own"] = _guarded(lambda: _search(
            [build_state(p) for p in player_positions(game, decision, username, sets, rng, settings.samples)],
            settings, chosen))
    entry["seconds"] = round(time.perf_counter() - started, 4)
    return entry


def score_game(game: GamePositions, input_log: list[str], sets: SetTable, settings: Settings,
               indices: set[int] | None = None) -> list[dict[str, Any]]:
    """The searches of the game's decisions (those in `indices`; all when None), in order."""
    out = []
    names = {side: player_name(input_log, side) for side in ("p1", "p2")}
    ordinal = {"p1": 0, "p2": 0}
    for decision in game.decisions:
        ordinal[decision.side] += 1
        if indices is not None and decision.index not in indices:
            continue
        entry = {"index": decision.index, "side": decision.side, "decision": ordinal[decision.side],
                 "turn": decision.turn, "kind": "switch" if decision.request.get("forceSwitch") else "move",
                 "choice": decision.choice}
        entry.update(score_decision(game, decision, names[decision.side], sets, settings))
        out.append(entry)
    return out
