"""Failure signatures, mined in code from a player's trajectories, each with its evidence.

The refiner is given these instead of being asked to find them: they are facts about the
games (which turn, which answer, which line of the log), not the model's impression of them.

- ``no_legal_action``: an answer that named no legal action (the problem as told to the model);
- ``random_pick``: three such answers in a row, after which the harness picked at random;
- ``refused_choice``: a choice the simulator refused (Showdown's message);
- ``move_into_immunity``: the player's own move hit an immunity ("It doesn't affect the opposing ...");
- ``switch_back_and_forth``: switches A -> B -> A in three consecutive decisions;
- ``tera_unused_in_loss``: a lost game in which the player never Terastallized;
- ``loss_with_healthy_left``: a lost game whose last decisions still had Pokémon other than the
  active one above half HP (the game collapsed with reserves that were never brought to bear).
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Iterable

KINDS = ("no_legal_action", "random_pick", "refused_choice", "move_into_immunity", "switch_back_and_forth",
         "tera_unused_in_loss", "loss_with_healthy_left")
#: Evidence items kept per kind (the counts are always whole).
MAX_EVIDENCE = 6


def _signature(kind: str, game: dict[str, Any], turn: int | None, evidence: str) -> dict[str, Any]:
    return {"kind": kind, "game_id": game["game_id"], "turn": turn, "evidence": evidence}


def mine_game(game: dict[str, Any]) -> list[dict[str, Any]]:
    """Every failure signature of one trajectory (see the module docstring)."""
    found: list[dict[str, Any]] = []
    answers = [a for a in game.get("answers", []) if a.get("kind") is None]
    for a in answers:
        if a.get("random_pick"):
            found.append(_signature("random_pick", game, a.get("turn"),
                                    f"after answers naming no legal action, the harness picked {a.get('action')}"))
        elif a.get("invalid"):
            found.append(_signature("no_legal_action", game, a.get("turn"), str(a["invalid"])))
        if a.get("refusal_error"):
            found.append(_signature("refused_choice", game, a.get("turn"),
                                    f"{a.get('action')}: {a['refusal_error']}"))
    log = game.get("battle_log") or []
    for i, line in enumerate(log):
        if "doesn't affect the opposing" in line:
            used = next((log[j] for j in range(i - 1, max(-1, i - 4), -1) if " used " in log[j]), "")
            found.append(_signature("move_into_immunity", game, None, f"{used.strip()} {line.strip()}".strip()))
    chosen = [a for a in answers if a.get("action")]
    for x, y, z in zip(chosen, chosen[1:], chosen[2:]):
        if all(str(a["action"]).startswith("switch ") for a in (x, y, z)) and x["action"] == z["action"] \
                and x["action"] != y["action"]:
            found.append(_signature("switch_back_and_forth", game, z.get("turn"),
                                    f"turns {x.get('turn')}-{z.get('turn')}: {x['action']}, {y['action']}, "
                                    f"{z['action']}"))
    if game.get("outcome") == "lost":
        if not any("Terastallize" in str(a.get("action") or "") for a in chosen):
            found.append(_signature("tera_unused_in_loss", game, None,
                                    f"lost after {game.get('turns')} turns without Terastallizing"))
        for snapshot in (game.get("team_hp") or [])[-3:][:1]:
            healthy = [f"{name} {hp:.0%}" for name, hp in snapshot.get("bench", {}).items() if hp > 0.5]
            if healthy:
                found.append(_signature("loss_with_healthy_left", game, snapshot.get("turn"),
                                        f"turn {snapshot.get('turn')}, three decisions before the end: "
                                        f"{', '.join(healthy)} still above half HP"))
    return found


def mine(games: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for game in games for s in mine_game(game)]


def summarise(signatures: list[dict[str, Any]]) -> dict[str, int]:
    """Counts per kind (every kind listed, zeros included: the refiner learns what did not go wrong too)."""
    counts = Counter(s["kind"] for s in signatures)
    return {kind: counts.get(kind, 0) for kind in KINDS}


def render(signatures: list[dict[str, Any]]) -> str:
    """The FAILURE SIGNATURES section of a refiner prompt: counts, then evidence per kind."""
    counts = summarise(signatures)
    lines = ["FAILURE SIGNATURES (found by code in the games above; counts, then evidence)"]
    for kind in KINDS:
        lines.append(f"- {kind}: {counts[kind]}")
        for s in [s for s in signatures if s["kind"] == kind][:MAX_EVIDENCE]:
            where = f"{s['game_id']}" + (f" turn {s['turn']}" if s.get("turn") is not None else "")
            lines.append(f"    {where}: {s['evidence']}")
    return "\n".join(lines)
