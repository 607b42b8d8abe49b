"""The harness's versions and state on disk, in the player's working folder of the run.

The arena gives every player a folder of its own beside the run's store
(``GameContext.work_dir``, ``runs/<run>/players/<player>/``); this player keeps there::

    harness/state.json            which version each epoch uses, the games not yet refined from,
                                  every refinement attempt (failed ones too)
    harness/versions/v0003.json   version 3 whole: its parent, the edits (old -> new) per pass,
                                  what triggered them (epochs, games, failure signatures), and
                                  the refiner's calls with tokens and cost
    trajectories/<game_id>.json   what the refiner may read of a finished game

Only the run's epoch barrier (:mod:`pokebench.play.epochs`) writes ``state.json`` and the
versions, between epochs, when no game is in flight; games only read them. Writes are atomic
(temporary file, fsync, rename): a killed run leaves a whole old or a whole new file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from pokebench.players.continual.harness import Harness
from pokebench.util import atomic_write_text, utc_now

MODES = ("scratch", "frozen", "continue")


class Snapshot(BaseModel):
    """One version of the harness, whole, with how it came about."""

    model_config = ConfigDict(extra="forbid")

    version: int
    parent: int | None
    harness: Harness
    at: str
    #: What made it: "start" (version 0), "loaded" (frozen/continue) or "refinement".
    trigger: dict[str, Any] = Field(default_factory=dict)
    #: Per pass: {"applied": [{"edit", "old", "new"}], "rejected": [{"edit", "why"}], "error": ...}.
    passes: dict[str, Any] = Field(default_factory=dict)
    #: The refiner's API calls: pass, tokens, cost, latency.
    calls: list[dict[str, Any]] = Field(default_factory=list)
    refiner_cost_usd: float | None = None


class State(BaseModel):
    """Which version each epoch uses, and what is left to refine from."""

    model_config = ConfigDict(extra="forbid")

    mode: str = "scratch"
    current: int = 0
    #: epoch (as a string: JSON keys) -> the version every game of that epoch uses.
    epochs: dict[str, int] = Field(default_factory=dict)
    #: The epoch now being played (set before its first game).
    active_epoch: int | None = None
    #: Epochs whose games have been given to a refinement that succeeded (or to none yet: pending).
    refined_epochs: list[int] = Field(default_factory=list)
    pending_games: list[str] = Field(default_factory=list)
    pending_epochs: list[int] = Field(default_factory=list)
    attempts: list[dict[str, Any]] = Field(default_factory=list)
    loaded_from: str | None = None


class HarnessFiles:
    """The harness files of one player of one run."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = Path(work_dir)
        self.folder = self.work_dir / "harness"
        self.state_path = self.folder / "state.json"
        self.versions_dir = self.folder / "versions"
        self.trajectories_dir = self.work_dir / "trajectories"

    # ---- state and versions ---------------------------------------------------------------------
    def exists(self) -> bool:
        return self.state_path.is_file()

    def read_state(self) -> State:
        return State.model_validate_json(self.state_path.read_text(encoding="utf-8"))

    def write_state(self, state: State) -> None:
        atomic_write_text(self.state_path, state.model_dump_json(indent=1))

    def version_path(self, version: int) -> Path:
        return self.versions_dir / f"v{version:04d}.json"

    def read_version(self, version: int) -> Snapshot:
        return Snapshot.model_validate_json(self.version_path(version).read_text(encoding="utf-8"))

    def write_version(self, snapshot: Snapshot) -> None:
        atomic_write_text(self.version_path(snapshot.version), snapshot.model_dump_json(indent=1))

    def versions(self) -> list[Snapshot]:
        return [Snapshot.model_validate_json(p.read_text(encoding="utf-8"))
                for p in sorted(self.versions_dir.glob("v*.json"))] if self.versions_dir.is_dir() else []

    def initialise(self, mode: str, load_from: str | None) -> State:
        """The state, made at the first start of a run (version 0: empty, or loaded); as it is on a resume."""
        if self.exists():
            state = self.read_state()
            if state.mode != mode:
                raise ValueError(f"{self.work_dir} holds a harness played in mode {state.mode!r}, not {mode!r}: "
                                 "give the run another name, or set the mode it was started with")
            return state
        harness, source = initial_harness(mode, load_from)
        self.write_version(Snapshot(version=0, parent=None, harness=harness, at=utc_now(),
                                    trigger={"kind": "loaded" if source else "start", "from": source}))
        state = State(mode=mode, loaded_from=source)
        self.write_state(state)
        return state

    # ---- trajectories ---------------------------------------------------------------------------
    def write_trajectory(self, game_id: str, trajectory: dict[str, Any]) -> None:
        atomic_write_text(self.trajectories_dir / f"{_safe(game_id)}.json", json.dumps(trajectory, ensure_ascii=False))

    def read_trajectory(self, game_id: str) -> dict[str, Any] | None:
        path = self.trajectories_dir / f"{_safe(game_id)}.json"
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)


def load_harness(source: str) -> tuple[Harness, str]:
    """A saved harness: a version file, a harness JSON, or a player's folder of a run (its latest version)."""
    path = Path(source)
    if path.is_dir():
        files = HarnessFiles(path)
        if not files.exists():
            raise ValueError(f"{path} holds no harness (no harness/state.json): give a player's folder of a run, "
                             "runs/RUN/players/PLAYER, or a version file")
        state = files.read_state()
        return files.read_version(state.current).harness, f"{path} (version {state.current})"
    if not path.is_file():
        raise ValueError(f"load_from: there is no file or folder {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    return Harness.model_validate(data.get("harness", data)), str(path)


def initial_harness(mode: str, load_from: str | None) -> tuple[Harness, str | None]:
    """Version 0 of a run: empty (scratch) or loaded (frozen, continue)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "scratch":
        if load_from:
            raise ValueError("mode scratch starts from an empty harness: drop load_from, or use mode frozen/continue")
        return Harness(), None
    if not load_from:
        raise ValueError(f"mode {mode} needs load_from: a version file, or a player's folder of another run "
                         "(runs/RUN/players/PLAYER)")
    harness, source = load_harness(load_from)
    return harness, source
