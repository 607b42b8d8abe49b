"""The harness state of a Continual Harness competitor: notes, skills and strategy it rewrites itself.

One small JSON document per (run, player) at ``runs/<run>/continual/<player>.json``::

    {"version": 3, "games_seen": 3, "notes": ["..."], "skills": {"name": "text"},
     "strategy": "...", "history": [{"version", "games", "by_game", "applied", "rejected", "at", ...}]}

Why a file in the run folder: the run is the unit of "one continuous life" of the agent
(Continual Harness is reset-free within a run), a resumed run must continue from the
latest harness, and several games of a run may be in flight at once (threads of one
process, or in principle several processes). So every read-modify-write happens under an
exclusive ``fcntl`` lock on a side file (``<player>.lock``: the JSON itself is replaced,
and a lock on a replaced inode protects nothing), and every write is atomic (a temporary
file in the same folder, fsync, ``os.replace``): a reader sees a whole old or a whole new
version, never half of one, even when the process is killed mid-write.

Finished games leave their trajectory in ``<player>.pending/<game_id>.json``; a refiner
*claims* them (moves them to ``<player>.read/``, under the lock, so two games never refine
from the same trajectory) and later *applies* its edits. The model answers while no lock is
held, so edits are validated against the version the refiner saw (``seen``) and applied to
the latest version: an index names the note the refiner saw, and an edit whose target was
changed meanwhile by another refinement is rejected rather than hitting the wrong note.

Caps (:class:`Caps`) bound what enters the prompt: the harness cannot grow without bound.
The ``history`` is an audit trail (never shown to the model) and keeps every refinement with
its edits, rejections, errors, tokens and cost.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pokebench.util import atomic_write_text, utc_now

NOTE_OPS = ("add_note", "update_note", "delete_note")
SKILL_OPS = ("add_skill", "update_skill", "delete_skill")
OPS = NOTE_OPS + SKILL_OPS + ("set_strategy",)


@dataclass(frozen=True)
class Caps:
    """Size limits of the harness (what the model sees at the start of every game)."""

    max_notes: int = 40
    max_skills: int = 12
    max_strategy_chars: int = 1500
    max_note_chars: int = 300
    max_skill_name_chars: int = 60
    max_skill_chars: int = 600
    max_edits: int = 20  # per refinement; further edits are rejected


def empty_state() -> dict[str, Any]:
    return {"version": 0, "games_seen": 0, "notes": [], "skills": {}, "strategy": "", "history": []}


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "player"


def write_json_atomic(path: Path, data: Any) -> None:
    """Write `data` to `path` so that readers see the old or the new file whole (temp + fsync + replace)."""
    atomic_write_text(path, json.dumps(data, ensure_ascii=False, indent=1))


# ---- validating and applying edits (pure) ------------------------------------------------------


@dataclass
class EditResult:
    """The state after a batch of edits, and which edits were applied or rejected (with why)."""

    state: dict[str, Any]
    applied: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)


def _text(edit: dict[str, Any], key: str, limit: int) -> str:
    value = edit.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"'{key}' must be a non-empty string")
    value = " ".join(value.split())  # one line each: notes and skills are listed one per line
    if len(value) > limit:
        raise ValueError(f"'{key}' is {len(value)} characters; the limit is {limit}")
    return value


def _index(edit: dict[str, Any], seen_notes: list[str]) -> int:
    index = edit.get("index")
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError("'index' must be the number of a note as listed (1, 2, ...)")
    if not 1 <= index <= len(seen_notes):
        raise ValueError(f"there is no note {index}: the notes are numbered 1 to {len(seen_notes)}"
                         if seen_notes else f"there is no note {index}: there are no notes")
    return index


def apply_edits(latest: dict[str, Any], edits: Any, caps: Caps, seen: dict[str, Any] | None = None) -> EditResult:
    """Validate `edits` (as seen against `seen`, default `latest`) and apply the valid ones to a copy of `latest`.

    Note indexes are 1-based and refer to the notes the refiner was shown (`seen`), whatever
    the order of the edits; a note that no longer exists in `latest` (changed by another
    refinement meanwhile) makes its edit rejected. Caps are checked after the whole batch,
    so "delete one, add one" works in either order; additions beyond a cap are rejected.
    """
    state = copy.deepcopy(latest)
    seen = seen if seen is not None else latest
    result = EditResult(state)
    if not isinstance(edits, list):
        result.rejected.append({"edit": edits, "why": "'edits' must be a list"})
        return result
    seen_notes: list[str] = list(seen.get("notes", []))
    # each note as [text, or None once deleted; "old", "added" or "updated" by this batch]
    notes: list[list[Any]] = [[text, "old"] for text in state["notes"]]
    skills: dict[str, str] = dict(state["skills"])
    new_skills: list[str] = []
    strategy = state["strategy"]
    for n, edit in enumerate(edits):
        try:
            if n >= caps.max_edits:
                raise ValueError(f"more than {caps.max_edits} edits in one refinement")
            if not isinstance(edit, dict):
                raise ValueError("an edit must be a JSON object with an 'op'")
            op = edit.get("op")
            if op not in OPS:
                raise ValueError(f"unknown op {op!r}; the ops are {', '.join(OPS)}")
            if op == "add_note":
                text = _text(edit, "text", caps.max_note_chars)
                if any(t == text for t, _ in notes):
                    raise ValueError("this note exists already")
                notes.append([text, "added"])
            elif op in ("update_note", "delete_note"):
                target = seen_notes[_index(edit, seen_notes) - 1]
                entry = next((e for e in notes if e[0] == target and e[1] == "old"), None)
                if entry is None:
                    raise ValueError(f"note {edit['index']} was already changed (by this refinement or another)")
                entry[0] = _text(edit, "text", caps.max_note_chars) if op == "update_note" else None
                entry[1] = "updated"
            elif op == "set_strategy":
                text = edit.get("text")
                if not isinstance(text, str):
                    raise ValueError("'text' must be a string")
                if len(text.strip()) > caps.max_strategy_chars:
                    raise ValueError(f"the strategy is {len(text.strip())} characters; the limit is "
                                     f"{caps.max_strategy_chars}")
                strategy = text.strip()
            else:
                name = _text(edit, "name", caps.max_skill_name_chars)
                if op == "add_skill" and name in skills:
                    raise ValueError(f"skill {name!r} exists already; use update_skill")
                if op != "add_skill" and name not in skills:
                    raise ValueError(f"there is no skill {name!r}")
                if op == "delete_skill":
                    del skills[name]
                    if name in new_skills:
                        new_skills.remove(name)
                else:
                    skills[name] = _text(edit, "text", caps.max_skill_chars)
                    if op == "add_skill":
                        new_skills.append(name)
        except ValueError as err:
            result.rejected.append({"edit": edit, "why": str(err)})
            continue
        result.applied.append(edit)
    # caps, after the whole batch: the newest additions beyond a cap are taken back
    # (a state already over a cap, made under larger caps, is left as it is: it only cannot grow)
    kept = [e for e in notes if e[0] is not None]
    while len(kept) > caps.max_notes and any(e[1] == "added" for e in kept):
        text = kept.pop(max(i for i, e in enumerate(kept) if e[1] == "added"))[0]
        _take_back(result, lambda e: e.get("op") == "add_note" and _same(e.get("text"), text),
                   f"at most {caps.max_notes} notes: delete or merge notes first")
    while len(skills) > caps.max_skills and new_skills:
        name = new_skills.pop()
        del skills[name]
        _take_back(result, lambda e: e.get("op") == "add_skill" and _same(e.get("name"), name),
                   f"at most {caps.max_skills} skills: delete or merge skills first")
    state.update(notes=[e[0] for e in kept], skills=skills, strategy=strategy)
    return result


def _same(raw: Any, value: str) -> bool:
    return isinstance(raw, str) and (raw.strip() == value or " ".join(raw.split()) == value)


def _take_back(result: EditResult, match: Any, why: str) -> None:
    for i in range(len(result.applied) - 1, -1, -1):
        if match(result.applied[i]):
            result.rejected.append({"edit": result.applied.pop(i), "why": why})
            return


# ---- the harness as the model sees it ----------------------------------------------------------


def render(state: dict[str, Any]) -> str:
    """The three sections, as the player and the refiner show them (notes numbered from 1)."""
    notes = [f"{i}. {text}" for i, text in enumerate(state["notes"], 1)] or ["(none yet)"]
    skills = [f"- {name}: {text}" for name, text in state["skills"].items()] or ["(none yet)"]
    strategy = state["strategy"] or "(none yet)"
    return "\n".join(["NOTES", *notes, "", "SKILLS", *skills, "", "STRATEGY", strategy])


# ---- the files -------------------------------------------------------------------------------


class HarnessStore:
    """The harness state file of one player of one run, its lock, and its queue of trajectories."""

    def __init__(self, folder: Path, player: str, caps: Caps = Caps()) -> None:
        self.folder = Path(folder)
        name = safe_name(player)
        self.path = self.folder / f"{name}.json"
        self.lock_path = self.folder / f"{name}.lock"
        self.pending_dir = self.folder / f"{name}.pending"
        self.read_dir = self.folder / f"{name}.read"
        self.caps = caps

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """An exclusive lock among threads and processes (each call opens its own file description)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.lock_path, "a") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def read(self) -> dict[str, Any]:
        """The latest state (a whole version: writes are atomic), or the empty state."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                return {**empty_state(), **json.load(handle)}
        except FileNotFoundError:
            return empty_state()

    def _write(self, state: dict[str, Any]) -> None:
        write_json_atomic(self.path, state)

    # trajectories ------------------------------------------------------------------------------
    def add_trajectory(self, game_id: str, trajectory: dict[str, Any]) -> Path:
        """Queue a finished game's trajectory for the next refinement (atomic: never read half-written)."""
        path = self.pending_dir / f"{safe_name(game_id)}.json"
        write_json_atomic(path, trajectory)
        return path

    def pending_count(self) -> int:
        return len(list(self.pending_dir.glob("*.json"))) if self.pending_dir.is_dir() else 0

    def claim(self, at_least: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The latest state and the queued trajectories (oldest first), taken off the queue under the lock;
        no trajectories when fewer than `at_least` are queued."""
        with self.locked():
            state = self.read()
            paths = sorted(self.pending_dir.glob("*.json")) if self.pending_dir.is_dir() else []
            if len(paths) < max(1, at_least):
                return state, []
            trajectories = []
            self.read_dir.mkdir(parents=True, exist_ok=True)
            for path in paths:
                with open(path, encoding="utf-8") as handle:
                    trajectories.append(json.load(handle))
                os.replace(path, self.read_dir / path.name)
        trajectories.sort(key=lambda t: (t.get("finished_at") or "", t.get("game_id") or ""))
        return state, trajectories

    # refinements -------------------------------------------------------------------------------
    def apply(self, edits: Any, seen: dict[str, Any], games: list[str], record: dict[str, Any] | None = None
              ) -> tuple[dict[str, Any], EditResult]:
        """Apply a refiner's edits to the latest state under the lock; the new state and what was applied.

        The version goes up when at least one edit was applied; ``games_seen`` counts the
        games a refinement has read.
        """
        with self.locked():
            latest = self.read()
            result = apply_edits(latest, edits, self.caps, seen)
            state = result.state
            if result.applied:
                state["version"] = latest["version"] + 1
            state["games_seen"] = latest["games_seen"] + len(games)
            state["history"] = latest["history"] + [{
                "version": state["version"], "from_version": seen.get("version"), "games": games,
                "applied": result.applied, "rejected": result.rejected, "at": utc_now(), **(record or {})}]
            self._write(state)
        return state, result

    def record_failure(self, seen: dict[str, Any], games: list[str], error: str,
                       record: dict[str, Any] | None = None) -> dict[str, Any]:
        """Note a failed refinement in the history; notes, skills, strategy and version stay as they are."""
        with self.locked():
            state = self.read()
            state["history"] = state["history"] + [{
                "version": state["version"], "from_version": seen.get("version"), "games": games,
                "applied": [], "rejected": [], "error": error, "at": utc_now(), **(record or {})}]
            self._write(state)
        return state
