"""A training export's preference and reward files, in TRL's conversational formats.

Beside ``FILE.jsonl`` (:mod:`pokebench.players.continual.export`):

- ``FILE.preferences.jsonl`` (with a teacher): TRL's preference format (DPO, reward modelling), one row per
  decision where the teacher named a legal action other than the player's (or the player named none)::

      {"prompt": [<the messages before the answer>], "chosen": [<the teacher's answer>],
       "rejected": [<the player's answer>], "chosen_action", "rejected_action", "game_id", "player", ...}

- ``FILE.rewards.jsonl`` (when ``pokebench analyse RUN`` scored the decisions: ``runs/RUN/decision_quality.jsonl``):
  TRL's prompt-completion format with the engine's judgement, one row per action (the player's, and the
  teacher's when it named another)::

      {"prompt": [...], "completion": [<the answer>], "who": "player" | "teacher", "action", "engine_action",
       "regret", "reward": -regret, "label": regret < 0.2 (not a blunder: KTO's desirable), ...}

  The regret is the engine's best value minus the action's value, from the player's own information
  (:mod:`pokebench.analysis.quality`); an action the engine did not value has no row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

from pokebench.analysis.cache import cache_path, read_entries
from pokebench.analysis.quality import BLUNDER_THRESHOLD
from pokebench.analysis.settings import Settings, engine_version

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")
_TERA = " + Terastallize"


def beside_path(out: Path, kind: str) -> Path:
    """The file of this `kind` beside the export `out`: ``FILE.jsonl`` -> ``FILE.KIND.jsonl``."""
    return out.with_name(f"{out.name.removesuffix('.jsonl')}.{kind}.jsonl")


def beside(out: Path) -> dict[str, Path]:
    """The preference and reward files of the export `out`."""
    return {kind: beside_path(out, kind) for kind in ("preferences", "rewards")}


def _compact(text: str) -> str:
    return _NOT_ALNUM.sub("", text.lower())


def engine_key(action: str) -> str:
    """A listed action ("move Close Combat + Terastallize (Fire)", "switch Great Tusk") as the engine's action
    name is compared: lower-case letters and digits, ``-tera`` and ``switch `` kept."""
    if action.startswith("switch "):
        return "switch " + _compact(action[len("switch "):])
    name, tera, _ = action.removeprefix("move ").partition(_TERA)
    return _compact(name) + ("-tera" if tera else "")


def _engine_name_key(name: str) -> str:
    if name.startswith("switch "):
        return "switch " + _compact(name[len("switch "):])
    base, tera = (name[:-len("-tera")], "-tera") if name.endswith("-tera") else (name, "")
    return _compact(base) + tera


def engine_values(run_dir: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """(game id, side, decision) -> {"best": value, "values": {action key: value}, "engine_action"} of every
    decision the engine searched (the player's own information; the default analysis settings)."""
    found = {}
    for entry in read_entries(cache_path(run_dir), engine_version() or None, Settings().key):
        own = entry.get("own") or {}
        actions = own.get("actions") or []
        if entry.get("repeat", 0) or not actions or actions[0][2] is None:
            continue  # a second search, a view the engine could not take, or one legal action
        found[(str(entry["game_id"]), str(entry["side"]), int(entry["decision"]))] = {
            "best": float(actions[0][2]), "engine_action": actions[0][0],
            "values": {_engine_name_key(name): float(value) for name, _, value in actions if value is not None}}
    return found


def preference_rows(items: Iterable[dict[str, Any]]) -> Iterable[dict[str, Any]]:
    for item in items:
        teacher = item.get("teacher") or {}
        if not teacher.get("legal") or teacher.get("action") == item.get("action"):
            continue
        yield {"prompt": item["messages"][:-1], "chosen": [{"role": "assistant", "content": teacher["raw"]}],
               "rejected": [item["messages"][-1]], "chosen_action": teacher["action"],
               "rejected_action": item.get("action"), **_about(item), "teacher_model": teacher.get("model")}


def reward_rows(items: Iterable[dict[str, Any]], values: dict[tuple[str, str, int], dict[str, Any]]
                ) -> Iterable[dict[str, Any]]:
    for item in items:
        if item.get("decision") is None:
            continue
        scored = values.get((str(item["game_id"]), str(item["side"]), int(item["decision"])))
        if scored is None:
            continue
        teacher = item.get("teacher") or {}
        answers = [("player", item.get("action"), item["messages"][-1])]
        if teacher.get("legal") and teacher.get("action") != item.get("action"):
            answers.append(("teacher", teacher["action"], {"role": "assistant", "content": teacher["raw"]}))
        for who, action, message in answers:
            value = scored["values"].get(engine_key(action)) if action else None
            if value is None:
                continue
            regret = round(scored["best"] - value, 5)
            yield {"prompt": item["messages"][:-1], "completion": [message], "who": who, "action": action,
                   "engine_action": scored["engine_action"], "regret": regret, "reward": 0.0 - regret,  # not -0.0
                   "label": regret < BLUNDER_THRESHOLD, **_about(item)}


def _about(item: dict[str, Any]) -> dict[str, Any]:
    return {k: item.get(k) for k in ("game_id", "player", "side", "answer_index", "decision", "harness_version")}


def write_beside(out: Path, items: list[dict[str, Any]], run_dir: Path) -> None:
    """Write the preference file (when any example has a teacher) and the reward file (when any decision was
    scored) beside `out`, each whole."""
    paths = beside(out)
    if any("teacher" in item for item in items):
        write_jsonl(paths["preferences"], preference_rows(items))
    values = engine_values(run_dir)
    if values:
        write_jsonl(paths["rewards"], reward_rows(items, values))


def write_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> int:
    """Write `path` whole, one JSON object a line (a temporary file renamed over it); the number of rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    count = 0
    with open(temporary, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    temporary.replace(path)
    return count
