"""The harness's side of the epoch barrier: refine from finished epochs, fix each epoch's version.

:class:`HarnessRefiner` is what :meth:`ContinualHarnessPlayer.epoch_participant` gives the
run's epoch scheduling (:mod:`pokebench.play.epochs`). ``before_epoch(e, finished)`` runs
between epochs, when no game is in flight:

1. the first time, the state is made (version 0: empty, or loaded for frozen/continue);
2. if epoch e already has a version (a resumed run replaying games of e), that one stays;
3. else the games of finished epochs that no refinement has read yet join the pending ones,
   and the refiner runs on them (four passes); with at least one edit applied, a new version
   is written whole, with its parent, edits (old -> new), trigger and the refiner's spend;
   an API failure leaves the harness as it was and keeps the games pending for the next
   attempt (recorded in ``attempts`` with what it had spent);
4. epoch e is given the current version, and becomes the active epoch the games read.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pokebench.llm.client import ModelConfig
from pokebench.players.continual import signatures as sig
from pokebench.players.continual.harness import Budgets
from pokebench.players.continual.refiner import RefinementFailed, refine
from pokebench.players.continual.versions import HarnessFiles, Snapshot, State
from pokebench.util import utc_now

log = logging.getLogger(__name__)


class HarnessRefiner:
    """One Continual Harness player of one run, between its epochs."""

    def __init__(self, work_dir: Path, player: str, mode: str, load_from: str | None, epoch_pairs: int,
                 refiner: ModelConfig, budgets: Budgets, log_chars: int) -> None:
        self.files = HarnessFiles(work_dir)
        self.player = player
        self.mode = mode
        self.load_from = load_from
        self.epoch_pairs: int | None = None if mode == "frozen" else epoch_pairs
        self.refiner = refiner
        self.budgets = budgets
        self.log_chars = log_chars

    async def before_epoch(self, epoch: int, finished: dict[int, list[str]]) -> None:
        state = self.files.initialise(self.mode, self.load_from)
        if self.epoch_pairs is None:  # frozen: version 0 for every game
            return
        if str(epoch) not in state.epochs:
            new = sorted(e for e in finished if e < epoch and e not in state.refined_epochs
                         and e not in state.pending_epochs)
            for e in new:
                state.pending_epochs.append(e)
                state.pending_games += finished[e]
            if state.pending_games:
                await self._refine(state, epoch)
            state.epochs[str(epoch)] = state.current
        state.active_epoch = epoch
        self.files.write_state(state)

    async def _refine(self, state: State, epoch: int) -> None:
        games = [t for t in (self.files.read_trajectory(g) for g in state.pending_games) if t is not None]
        missing = [g for g in state.pending_games if self.files.read_trajectory(g) is None]
        attempt: dict[str, Any] = {"at": utc_now(), "before_epoch": epoch, "epochs": list(state.pending_epochs),
                                   "games": list(state.pending_games), "missing_trajectories": missing,
                                   "from_version": state.current}
        current = self.files.read_version(state.current)
        try:
            result = await refine(current.harness, games, self.refiner, self.budgets, self.log_chars)
        except RefinementFailed as err:
            log.warning("%s: the refinement before epoch %d failed (%s); the harness stays at version %d and its "
                        "games wait for the next attempt", self.player, epoch, err.error, state.current)
            state.attempts.append({**attempt, "ok": False, "error": err.error, "calls": err.calls,
                                   "cost_usd": _total(err.calls), "version": state.current,
                                   "done_at": utc_now()})
            return
        version = state.current
        if result.applied and result.harness != current.harness:
            version = max(s.version for s in self.files.versions()) + 1
            self.files.write_version(Snapshot(
                version=version, parent=state.current, harness=result.harness, at=utc_now(),
                trigger={"kind": "refinement", "before_epoch": epoch, "epochs": list(state.pending_epochs),
                         "games": list(state.pending_games), "signatures": sig.summarise(result.signatures),
                         "evidence": result.signatures[:40]},
                passes=result.passes, calls=result.calls, refiner_cost_usd=result.cost_usd))
        state.attempts.append({**attempt, "ok": True, "done_at": utc_now(), "applied": result.applied,
                               "rejected": sum(len(p["rejected"]) for p in result.passes.values()),
                               "calls": result.calls, "cost_usd": result.cost_usd, "version": version,
                               "passes": result.passes if not result.applied else None})
        state.current = version
        state.refined_epochs += state.pending_epochs
        state.pending_epochs, state.pending_games = [], []


def _total(calls: list[dict[str, Any]]) -> float | None:
    costs = [c.get("cost_usd") for c in calls]
    known = [float(c) for c in costs if c is not None]
    return round(float(sum(known)), 10) if len(known) == len(costs) else None
