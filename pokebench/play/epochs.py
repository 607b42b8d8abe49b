"""Epoch barriers: a player that refines itself during a run changes only between epochs of whole pairs.

A player class may offer ``epoch_participant(work_dir, player, **options)`` (a classmethod)
returning an :class:`EpochParticipant`. Its ``epoch_pairs`` E cuts the run into epochs:
epoch e holds pairs (e-1)·E+1 .. e·E of **every** matchup. Then, by construction:

- before any game of epoch e starts, ``before_epoch(e, finished)`` is awaited, with the games
  of the finished epochs (all stored): the participant refines from them and fixes the
  version that every game of epoch e uses, in every matchup;
- the games of epoch e run concurrently among themselves, never with a game of another epoch;
- a refinement reads only games of finished epochs: a game never meets a harness refined
  from its own pair (the same teams with the sides swapped), nor from any game of its epoch;
- a run stopped inside epoch e (or with games of it voided by harness errors) stops at the
  barrier; started again it replays the missing games of epoch e with epoch e's version
  (``before_epoch`` keeps a version once it is fixed) before going on.

Several refining players in one run: every epoch boundary of any of them is a barrier; each
refines at its own boundaries. A participant's spend between epochs (``spend()``) counts in the
run's budgets; a player whose cap (or the run's) is reached is not refined again, and its games
are not started.

A player class may also offer ``check_run(seed_text, battle_format, **options)`` (a classmethod),
asked before any game (:func:`check_runs`): a harness learned from this run's own games is refused. Participants that never refine (``epoch_pairs`` None: a frozen
harness) are only initialised. Shards cannot be combined with refining: a shard would refine
from a part of every epoch and a harness would fork per shard (:func:`check_shards` refuses it).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping

from pokebench.play.budget import Budget
from pokebench.games import GameSpec
from pokebench.player.hooks import ChecksRun, EpochParticipant, HasEpochs, PlayerMaker, Refines

log = logging.getLogger(__name__)


def _classes(factories: Mapping[str, Any]) -> dict[str, tuple[type, dict[str, Any]]]:
    """The class and options of each player made from them (not the external competitors), by name."""
    return {name: (f.cls, f.options) for name, f in factories.items() if isinstance(f, PlayerMaker)}


def epoch_of(pair: int, epoch_pairs: int) -> int:
    """The epoch (1, 2, ...) of pair `pair` (1, 2, ...) with `epoch_pairs` pairs per epoch."""
    return (pair - 1) // epoch_pairs + 1


def participants(factories: dict[str, Any], work_root: Path, run: Any = None) -> dict[str, EpochParticipant]:
    """The run's players that take part in epochs, by name (from the classes behind the factories);
    `run`: what the run plays (its seed text and format), given to each."""
    found: dict[str, EpochParticipant] = {}
    for name, (cls, options) in _classes(factories).items():
        if isinstance(cls, HasEpochs):
            found[name] = cls.epoch_participant(work_root / name, name, run=run, **options)
    return found


def check_runs(factories: dict[str, Any], seed_text: str, battle_format: str) -> None:
    """Ask every player class with a ``check_run`` whether it may play this run (ValueError naming the fix)."""
    for name, (cls, options) in _classes(factories).items():
        if isinstance(cls, ChecksRun):
            try:
                cls.check_run(seed_text, battle_format, **options)
            except ValueError as err:
                raise ValueError(f"Player '{name}': {err}") from None


def refining(factories: dict[str, Any]) -> list[str]:
    """The players whose class says they change during the run (``refines(**options)``; a frozen harness does not)."""
    names = []
    for name, (cls, options) in _classes(factories).items():
        if isinstance(cls, Refines) and cls.refines(**options):
            names.append(name)
    return sorted(names)


def check_shards(factories: dict[str, Any], shard: tuple[int, int] | None) -> None:
    """Refuse a sharded run with a refining player (ValueError naming the fix)."""
    if shard is None or shard[1] == 1:
        return
    for name in refining(factories)[:1]:
        raise ValueError(
            f"Player '{name}' refines its harness between epochs, which shards cannot keep fair (each shard "
            "would refine from part of every epoch, and the harness would fork). Play this run without "
            f"`shard=`, or freeze the harness (players.{name}.mode=frozen with load_from=...).")


def barriers(specs: Iterable[GameSpec], sizes: Iterable[int]) -> list[list[GameSpec]]:
    """`specs` in blocks: a new block starts at every pair that begins an epoch of any size in `sizes`."""
    sizes = sorted(set(sizes))
    blocks: dict[int, list[GameSpec]] = defaultdict(list)
    for spec in specs:
        start = max(((spec.pair - 1) // size) * size + 1 for size in sizes) if sizes else 1
        blocks[start].append(spec)
    return [blocks[k] for k in sorted(blocks)]


def _first_pair(block: list[GameSpec]) -> int:
    return min(s.pair for s in block)


async def play_in_epochs(specs: list[GameSpec], factories: dict[str, Any], work_root: Path,
                         stored: Callable[[], set[str]],
                         play: Callable[[set[str], set[str]], Awaitable[Any]], run: Any = None,
                         budget: Budget | None = None) -> None:
    """Play the games of `specs` that are not `stored()`, epoch by epoch (see the module docstring).

    ``play(done, block)`` plays the planned games of `block` not in `done` (the runner's loop):
    a block is all that is in flight. `run` is given to the participants (what the run plays);
    `budget` is told each participant's spend between epochs.
    """
    members = participants(factories, work_root, run)
    refining = {name: p for name, p in members.items() if p.epoch_pairs}

    def count(name: str, member: EpochParticipant) -> None:
        if budget is not None:
            budget.spend_outside(name, *member.spend())

    for name, member in members.items():
        if not member.epoch_pairs:
            await member.before_epoch(1, {})  # a frozen harness: made ready once
        count(name, member)
    for block in barriers(specs, [p.epoch_pairs for p in refining.values() if p.epoch_pairs]):
        done = stored()
        block_ids = {s.game_id for s in block}
        if block_ids <= done:
            continue
        first = _first_pair(block)
        earlier = [s for s in specs if s.pair < first]
        if any(s.game_id not in done for s in earlier):
            if budget is None or budget.stopped is None:  # a cap that stopped starting games has said so
                log.warning("Games before pair %d are missing (harness errors): the run stops at this epoch "
                            "barrier; start it again to replay them first.", first)
            return
        for name, member in refining.items():
            assert member.epoch_pairs is not None
            spent = budget.exhausted(name) if budget is not None and budget.active else None
            if spent:  # its games will not be admitted either: the run stops on the budget
                log.warning("%s is not refined before pair %d: %s.", name, first, spent)
                continue
            epoch = epoch_of(first, member.epoch_pairs)
            finished: dict[int, list[str]] = defaultdict(list)
            for s in earlier:
                if name in (s.p1, s.p2) and epoch_of(s.pair, member.epoch_pairs) < epoch:
                    finished[epoch_of(s.pair, member.epoch_pairs)].append(s.game_id)
            await member.before_epoch(epoch, dict(finished))
            count(name, member)
        await play(done, block_ids)
