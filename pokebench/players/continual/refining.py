"""The harness's side of the epoch barrier: refine from finished epochs, fix each epoch's version.

:class:`HarnessRefiner` is what :meth:`ContinualHarnessPlayer.epoch_participant` gives the
run's epoch scheduling (:mod:`pokebench.play.epochs`). ``before_epoch(e, finished)`` runs
between epochs, when no game is in flight:

1. the first time, the state is made (version 0: empty, or loaded for frozen/continue; a loaded
   harness that learned from this run's seed text is refused);
2. the calls of a refinement that a killed run had paid are recorded as a killed attempt;
3. if epoch e already has a version (a resumed run replaying games of e), that one stays;
4. else the games of finished epochs that no refinement has read yet join the pending ones,
   and the refiner runs on them (one pass per part on); with at least one edit applied, a new
   version is written whole, with its parent, edits (old -> new), trigger, the refiner's spend
   and what it learned from; an API failure leaves the harness as it was and keeps the games
   pending for the next attempt (recorded in ``attempts`` with what it had spent);
5. epoch e is given the current version, and becomes the active epoch the games read.

Every refiner call is appended to ``harness/calls.jsonl`` as soon as it is paid; the state,
written once at the end, is the commit point of a new version (``made``, ``current``) and of the
attempt; the journal is emptied after it. A kill anywhere leaves either the old state (the
version file an orphan, its calls in the journal: step 2 keeps their spend) or the new one.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any, Sequence

from pokebench.llm.client import ModelConfig
from pokebench.llm.delivery import CUT_OFF
from pokebench.players.continual import history
from pokebench.players.continual import signatures as sig
from pokebench.players.continual.harness import SWITCHES, Budgets
from pokebench.players.continual.refiner import RefinementFailed, refine
from pokebench.players.continual.versions import HarnessFiles, Snapshot, Source, State
from pokebench.util import utc_now

log = logging.getLogger(__name__)

KILLED = "killed during the refinement (the run stopped); the calls it had paid are kept"


class HarnessRefiner:
    """One Continual Harness player of one run, between its epochs."""

    def __init__(self, work_dir: Path, player: str, mode: str, load_from: str | None, epoch_pairs: int,
                 refiner: ModelConfig, budgets: Budgets, log_chars: int, parts: Sequence[str] = SWITCHES,
                 run: Source | None = None) -> None:
        self.files = HarnessFiles(work_dir)
        self.player = player
        self.mode = mode
        self.load_from = load_from
        self.epoch_pairs: int | None = None if mode == "frozen" else epoch_pairs
        self.refiner = refiner
        self.budgets = budgets
        self.log_chars = log_chars
        self.parts = tuple(parts)
        self.run = run

    async def before_epoch(self, epoch: int, finished: dict[int, list[str]]) -> None:
        state = self.files.initialise(self.mode, self.load_from, self.run)
        killed = self._recover(state)
        if self.epoch_pairs is None:  # frozen: version 0 for every game
            if killed:
                self.files.write_state(state)
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
        self.files.clear_calls()

    def spend(self) -> tuple[float, str]:
        """The refiner's spend in this run so far (every attempt's, and the calls of one under way or killed),
        and a line saying what the attempts did."""
        state = self.files.read_state() if self.files.exists() else State()
        recorded = {a.get("id") for a in state.attempts}
        journal = [c for c in self.files.read_calls() if c.get("attempt") not in recorded]
        usd = float(sum(a.get("cost_usd") or 0.0 for a in state.attempts) + sum(c.get("cost_usd") or 0.0
                                                                               for c in journal))
        return usd, attempts_line(state.attempts, len(journal))

    def _recover(self, state: State) -> bool:
        """Record the calls a killed refinement had paid (in the journal, not in the state) as a killed attempt."""
        recorded = {a.get("id") for a in state.attempts}
        lost: dict[str, list[dict[str, Any]]] = {}
        for call in self.files.read_calls():
            if call.get("attempt") not in recorded:
                lost.setdefault(str(call.get("attempt")), []).append(call)
        for attempt_id, calls in lost.items():
            log.warning("%s: a refinement was killed after %d call(s); their spend is recorded", self.player,
                        len(calls))
            state.attempts.append({"id": attempt_id, "at": calls[0].get("at"), "before_epoch": calls[0].get("before_epoch"),
                                   "ok": False, "killed": True, "error": KILLED, "calls": calls, "cost_usd": _total(calls),
                                   "version": state.current, "from_version": state.current,
                                   "done_at": utc_now()})
        return bool(lost)

    def _roll_back_if_worse(self, state: State, epoch: int, past: list[dict[str, Any]]) -> Snapshot:
        """The current version, or, when the rule says it scored clearly worse than its parent in the games
        `past` (:func:`history.rollback_reason`), a new version with its parent's content (made current)."""
        current = self.files.read_version(state.current)
        reason = history.rollback_reason(current, history.version_scores(past))
        if reason is None or current.parent is None:
            return current
        parent = self.files.read_version(current.parent)
        log.warning("%s: %s; rolled back to its content", self.player, reason)
        rolled = Snapshot(version=self.files.next_version(state), parent=current.version, harness=parent.harness,
                          at=utc_now(), trigger={"kind": "rollback", "before_epoch": epoch, "from": current.version,
                                                 "to": parent.version, "reason": reason},
                          passes={"rollback": {"applied": [{"edit": {"op": "rollback", "to": parent.version},
                                                            "old": current.version, "new": parent.version,
                                                            "why": reason}], "rejected": []}},
                          learned_from=current.learned_from)
        self.files.write_version(rolled)
        state.made = [*self.files.made(state), rolled.version]
        state.current = rolled.version
        return rolled

    async def _refine(self, state: State, epoch: int) -> None:
        games = [t for t in (self.files.read_trajectory(g) for g in state.pending_games) if t is not None]
        missing = [g for g in state.pending_games if self.files.read_trajectory(g) is None]
        attempt_id = uuid.uuid4().hex[:12]
        attempt: dict[str, Any] = {"id": attempt_id, "at": utc_now(), "before_epoch": epoch,
                                   "epochs": list(state.pending_epochs), "games": list(state.pending_games),
                                   "missing_trajectories": missing, "from_version": state.current}
        read = list(dict.fromkeys([g for a in state.attempts if a.get("ok") for g in a.get("games", [])]
                                  + state.pending_games))
        past = [t for t in (self.files.read_trajectory(g) for g in read) if t is not None]
        current = self._roll_back_if_worse(state, epoch, past)
        told = history.history_text([self.files.read_version(v) for v in self.files.made(state)], past)

        def paid(record: dict[str, Any]) -> None:
            self.files.append_call({**record, "attempt": attempt_id, "before_epoch": epoch, "at": utc_now()})

        try:
            result = await refine(current.harness, games, self.refiner, self.budgets, self.log_chars, self.parts,
                                  on_call=paid, history=told)
        except RefinementFailed as err:
            log.warning("%s: the refinement before epoch %d failed (%s); the harness stays at version %d and its "
                        "games wait for the next attempt", self.player, epoch, err.error, state.current)
            state.attempts.append({**attempt, "ok": False, "error": err.error, "calls": err.calls,
                                   "cost_usd": _total(err.calls), "version": state.current,
                                   "done_at": utc_now()})
            return
        version = state.current
        if result.applied and result.harness != current.harness:
            version = self.files.next_version(state)
            learned = list(current.learned_from)
            if self.run is not None and self.run not in learned:
                learned.append(self.run)
            self.files.write_version(Snapshot(
                version=version, parent=state.current, harness=result.harness, at=utc_now(),
                trigger={"kind": "refinement", "before_epoch": epoch, "epochs": list(state.pending_epochs),
                         "games": list(state.pending_games), "signatures": sig.summarise(result.signatures),
                         "evidence": result.signatures[:40]},
                passes=result.passes, calls=result.calls, refiner_cost_usd=result.cost_usd, learned_from=learned))
            state.made = [*self.files.made(state), version]
        state.attempts.append({**attempt, "ok": True, "done_at": utc_now(), "applied": result.applied,
                               "rejected": sum(len(p["rejected"]) for p in result.passes.values()),
                               "calls": result.calls, "cost_usd": result.cost_usd, "version": version,
                               "passes": result.passes if not result.applied else None})
        state.current = version
        state.refined_epochs += state.pending_epochs
        state.pending_epochs, state.pending_games = [], []


def attempts_line(attempts: list[dict[str, Any]], calls_under_way: int = 0) -> str:
    """What a player's refinements did, in one line (a refinement whose edits were all rejected included)."""
    made = sum(1 for a in attempts if a.get("ok") and a.get("version") != a.get("from_version"))
    unchanged = [a for a in attempts if a.get("ok") and a.get("version") == a.get("from_version")]
    rejected = sum(a.get("rejected") or 0 for a in unchanged)
    failed = sum(1 for a in attempts if not a.get("ok") and not a.get("killed"))
    killed = sum(1 for a in attempts if a.get("killed"))
    calls = sum(len(a.get("calls") or []) for a in attempts) + calls_under_way
    return (f"{len(attempts)} refinement(s): {made} made a version, {len(unchanged)} changed nothing "
            f"({rejected} edit(s) rejected), {failed} failed, {killed} killed; {calls} call(s)")


def _total(calls: list[dict[str, Any]]) -> float | None:
    """The calls' cost, None when one's is unknown (prices unknown). A call cut off in flight (its tokens unknown)
    adds nothing, as a player's does: the total is what is known to be spent."""
    costs = [c.get("cost_usd") for c in calls if c.get("error") != CUT_OFF]
    known = [float(c) for c in costs if c is not None]
    return round(float(sum(known)), 10) if len(known) == len(costs) else None
