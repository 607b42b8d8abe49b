"""The harness's versions and state on disk, in the player's working folder of the run.

The arena gives every player a folder of its own beside the run's store
(``GameContext.work_dir``, ``runs/<run>/players/<player>/``); this player keeps there::

    harness/state.json            which version each epoch uses, the versions made, the games not
                                  yet refined from, every refinement attempt (failed ones too)
    harness/versions/v0003.json   version 3 whole: its parent, the edits (old -> new) per pass,
                                  what triggered them (epochs, games, failure signatures), the
                                  refiner's calls with tokens and cost, and the seed texts of the
                                  games it learned from
    harness/calls.jsonl           the refiner's calls of the refinement under way, one line as each
                                  is paid (a killed refinement's spend is kept from it)
    trajectories/<game_id>.json   what the refiner may read of a finished game

Only the run's epoch barrier (:mod:`pokebench.play.epochs`) writes ``state.json`` and the
versions, between epochs, when no game is in flight; games only read them. Writes are atomic
(temporary file, fsync, rename): a killed run leaves a whole old or a whole new file. A version
exists once ``state.json`` lists it (``made``): a version file written by a run killed before
its state was written is an orphan, never read, and overwritten by the next version.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from pokebench.players.continual.harness import Harness
from pokebench.util import atomic_write_text, utc_now

MODES = ("scratch", "frozen", "continue")


class Source(BaseModel):
    """What a harness learned from: the seed text (and format) of a run's games."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    seed_text: str
    format: str

    def __str__(self) -> str:
        return f"seed_text={self.seed_text!r} (format {self.format})"


class CarryOver(ValueError):
    """A saved harness loaded into a run of the very games (seed text and format) it learned from."""


def check_carry_over(learned_from: list[Source], run: Source | None, source: str) -> None:
    """Refuse (CarryOver naming the harness and the seed text) a harness that learned from this run's games."""
    if run is not None and run in learned_from:
        raise CarryOver(
            f"load_from {source} learned from the games of {run}, the seed text of this run: its pairs would "
            "replay the very teams the harness learned from. Evaluate it on another seed text "
            f"(seed_text=<another text>), or learn it again from scratch in this run.")


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
    #: The runs whose games this version's content was learned from (its ancestors' included).
    learned_from: list[Source] = Field(default_factory=list)


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
    #: The versions made (the commit point of a new version); None in a state written before it was kept.
    made: list[int] | None = None


class HarnessFiles:
    """The harness files of one player of one run."""

    def __init__(self, work_dir: Path) -> None:
        self.work_dir = Path(work_dir)
        self.folder = self.work_dir / "harness"
        self.state_path = self.folder / "state.json"
        self.versions_dir = self.folder / "versions"
        self.calls_path = self.folder / "calls.jsonl"
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

    def made(self, state: State) -> list[int]:
        """The versions `state` lists as made (every version file, for a state older than that list)."""
        if state.made is not None:
            return list(state.made)
        return sorted(int(p.stem[1:]) for p in self.versions_dir.glob("v*.json")) if self.versions_dir.is_dir() else []

    def versions(self) -> list[Snapshot]:
        """The versions made, in order (an orphan version file, never committed by the state, is not one)."""
        return [self.read_version(v) for v in self.made(self.read_state())] if self.exists() else []

    def next_version(self, state: State) -> int:
        """The number of a new version: one more than any made (an orphan file of that number is overwritten)."""
        return max(self.made(state), default=0) + 1

    # ---- the journal of the refiner's calls under way ---------------------------------------------
    def append_call(self, record: dict[str, Any]) -> None:
        """One paid call, on disk before anything else happens (a line, flushed and fsynced)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        with open(self.calls_path, "a", encoding="utf-8") as journal:
            journal.write(json.dumps(record, ensure_ascii=False) + "\n")
            journal.flush()
            os.fsync(journal.fileno())

    def read_calls(self) -> list[dict[str, Any]]:
        """The journal's calls (a line cut by a kill is skipped)."""
        if not self.calls_path.is_file():
            return []
        calls = []
        for line in self.calls_path.read_text(encoding="utf-8").splitlines():
            try:
                calls.append(json.loads(line))
            except ValueError:
                continue
        return calls

    def clear_calls(self) -> None:
        self.calls_path.unlink(missing_ok=True)

    def initialise(self, mode: str, load_from: str | None, run: Source | None = None) -> State:
        """The state, made at the first start of a run (version 0: empty, or loaded); as it is on a resume.

        A loaded harness that learned from `run`'s games is refused (:class:`CarryOver`)."""
        if self.exists():
            state = self.read_state()
            if state.mode != mode:
                raise ValueError(f"{self.work_dir} holds a harness played in mode {state.mode!r}, not {mode!r}: "
                                 "give the run another name, or set the mode it was started with")
            return state
        loaded = initial_harness(mode, load_from)
        check_carry_over(loaded.learned_from, run, loaded.source or "")
        self.write_version(Snapshot(version=0, parent=None, harness=loaded.harness, at=utc_now(),
                                    trigger={"kind": "loaded" if loaded.source else "start", "from": loaded.source},
                                    learned_from=loaded.learned_from))
        state = State(mode=mode, loaded_from=loaded.source, made=[0])
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


class Loaded(NamedTuple):
    """A run's version 0: the harness, where it was loaded from (None: empty), what it learned from."""

    harness: Harness
    source: str | None
    learned_from: list[Source]


#: ``load_from: expert``: the harness written by hand for [Gen 9] Random Battle that ships with PokéBench.
EXPERT = "expert"
EXPERT_PATH = Path(__file__).parent / "expert" / "gen9randombattle.json"


def load_harness(source: str) -> Loaded:
    """A saved harness: a version file, a harness JSON, a player's folder of a run (its latest version), or
    ``expert`` (:data:`EXPERT_PATH`).

    A harness JSON written by hand learned from no run's games (``learned_from`` may say otherwise)."""
    path = EXPERT_PATH if source == EXPERT else Path(source)
    if path.is_dir():
        files = HarnessFiles(path)
        if not files.exists():
            raise ValueError(f"{path} holds no harness (no harness/state.json): give a player's folder of a run, "
                             "runs/RUN/players/PLAYER, or a version file")
        state = files.read_state()
        snapshot = files.read_version(state.current)
        return Loaded(snapshot.harness, f"{path} (version {state.current})", snapshot.learned_from)
    if not path.is_file():
        raise ValueError(f"load_from: there is no file or folder {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    learned = [Source.model_validate(s) for s in data.get("learned_from") or []]
    return Loaded(Harness.model_validate(data.get("harness", data)), str(path), learned)


def initial_harness(mode: str, load_from: str | None) -> Loaded:
    """Version 0 of a run: empty (scratch) or loaded (frozen, continue)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if mode == "scratch":
        if load_from:
            raise ValueError("mode scratch starts from an empty harness: drop load_from, or use mode frozen/continue")
        return Loaded(Harness(), None, [])
    if not load_from:
        raise ValueError(f"mode {mode} needs load_from: a version file, or a player's folder of another run "
                         "(runs/RUN/players/PLAYER)")
    return load_harness(load_from)
