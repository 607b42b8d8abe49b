"""The optional hooks a competitor may define, declared in one place.

A player needs none of them. Define one on your class (a :class:`~pokebench.player.bench_player.BenchPlayer`
subclass, or an :class:`~pokebench.player.seats.ExternalCompetitor`) and the harness finds it with
``isinstance`` on the protocol below. Class hooks are classmethods (or staticmethods): the run calls
them before any game with the player's options from its ``conf/player/*.yaml`` as keyword arguments, so
each takes ``**_other`` for the options it does not read. Instance hooks are asked of the player of one game.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pokebench.player.decisions import DecisionRecord

__all__ = ["Preflight", "ChecksRun", "Refines", "FreezesAfterLearning", "HasEpochs", "EpochParticipant", "SupportsFormats",
           "SearchesWithEngine", "BoundsThinking", "SummarizesGame", "LogsDecisions", "PlayerMaker"]


# ---- class hooks: asked when the run is planned -------------------------------------------------------

@runtime_checkable
class Preflight(Protocol):
    def preflight(self, **options: Any) -> None:
        """Check the options before any game (a key that is not set, a program not installed); raise
        ValueError, OSError or RuntimeError with words that name the fix."""


@runtime_checkable
class ChecksRun(Protocol):
    def check_run(self, seed_text: str, battle_format: str, **options: Any) -> None:
        """Refuse (ValueError naming the fix) to play a run of this seed text and format (e.g. a harness
        that learned from the very games it would be rated on)."""


@runtime_checkable
class Refines(Protocol):
    def refines(self, **options: Any) -> bool:
        """Whether this player changes during a run (between epochs); a run that cannot keep that fair
        (shards, sequential) refuses it."""


class EpochParticipant(Protocol):
    """What changes a player between the epochs of a run (:mod:`pokebench.play.epochs`)."""

    #: Pairs per epoch; None when the player never changes during the run.
    epoch_pairs: int | None

    async def before_epoch(self, epoch: int, finished: dict[int, list[str]]) -> None:
        """Get ready for epoch `epoch`; `finished`: epoch -> this player's stored games, for every epoch before it."""

    def spend(self) -> tuple[float, str]:
        """USD spent between epochs in this run so far (all starts), and a line saying on what."""


@runtime_checkable
class FreezesAfterLearning(Protocol):
    def frozen_after_learning(self, work_dir: Path) -> dict[str, Any]:
        """The options that make this player play, frozen, what it learned in `work_dir` (its folder in the
        learning run): how ``trajectories`` evaluates it after learning."""


@runtime_checkable
class HasEpochs(Protocol):
    def epoch_participant(self, work_dir: Path, player: str, run: dict[str, str] | None = None,
                          **options: Any) -> EpochParticipant:
        """What refines this player between epochs; `work_dir`: its folder in the run, `player`: its name,
        `run`: the run's ``seed_text`` and ``format``."""


@runtime_checkable
class SupportsFormats(Protocol):
    #: The Showdown formats this player can play; None: any random-team singles format.
    supported_formats: tuple[str, ...] | None


@runtime_checkable
class SearchesWithEngine(Protocol):
    #: True for a player that decides by searching with poke-engine, the engine the decision analysis
    #: (:mod:`pokebench.analysis`) scores every decision with: its regret is measured by its own yardstick, so
    #: each game records it (``searches_with_engine`` in the player's entry) and the leaderboard flags it.
    searches_with_engine: bool


# ---- instance hooks: asked of the player of one game ---------------------------------------------------

@runtime_checkable
class BoundsThinking(Protocol):
    def think_bound(self) -> float | None:
        """The longest one choice may take in seconds (e.g. a model's deadline × attempts + waits), so the
        arena's stall watchdog waits that long; None: unbounded."""


@runtime_checkable
class SummarizesGame(Protocol):
    def game_summary(self) -> dict[str, Any]:
        """Figures of the game just played, merged into the player's entry of the game record."""


@runtime_checkable
class LogsDecisions(Protocol):
    #: One entry per decision of the game, in order (stored in the run's ``decisions`` table).
    decision_log: list[DecisionRecord]


@dataclass(frozen=True)
class PlayerMaker:
    """A player class with its options from the run's config: a fresh player for each game, and the class
    and options that the run's hooks are asked with."""

    cls: type
    options: dict[str, Any]

    def __call__(self, **arena_options: Any) -> Any:
        return self.cls(**self.options, **arena_options)
