"""What the refiner knows of the past, and the rule that rolls a version back.

A refinement reads in full only the games of the epochs it refines from; from this module it
also gets, for **every** game of the run read so far (the player's trajectories):

- each version's score (wins + half the ties, per game) with a 95 % interval over pairs (the
  two games of a mirror pair share their teams, so a pair is the unit: the interval is the mean
  of the pair scores ± 1.96 standard errors of it, clipped to [0, 1]), its parent, the edits
  that made it and whether it was a rollback;
- a digest of every finished epoch: its version, its games, their results and failure signatures.

:func:`rollback_reason` is the rule, in code, for a version that scored clearly worse than its
parent: both played at least :data:`MIN_GAMES` games, and the whole 95 % interval of the
difference (the two versions played different pairs: independent samples) is below zero.
The refiner then starts from the parent's content again, as a recorded version of its own.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Iterable

from pokebench.players.continual import signatures as sig
from pokebench.players.continual.versions import Snapshot

#: Games each of a version and its parent must have played before the rule may roll the version back.
MIN_GAMES = 4
Z = 1.96
_POINTS = {"won": 1.0, "tie": 0.5, "lost": 0.0}


@dataclass(frozen=True)
class Score:
    """A mean score per game over `games` games in `pairs` pairs, with a 95 % interval over pairs."""

    games: int
    pairs: int
    score: float
    se: float

    @property
    def lo(self) -> float:
        return max(0.0, self.score - Z * self.se)

    @property
    def hi(self) -> float:
        return min(1.0, self.score + Z * self.se)

    def __str__(self) -> str:
        interval = f"[{self.lo:.2f}, {self.hi:.2f}]" if self.pairs > 1 else "(one pair: no interval)"
        return f"score {self.score:.2f} {interval} over {self.games} game(s)"


def pair_of(game_id: str) -> str:
    """The pair a game belongs to (``MATCHUP.p0003`` of ``MATCHUP.p0003.g1``); a game id of another shape is its own pair."""
    head, dot, tail = game_id.rpartition(".")
    return head if dot and tail.startswith("g") else game_id


def score(games: Iterable[dict[str, Any]]) -> Score | None:
    """The score of these trajectories, or None without any."""
    by_pair: dict[str, list[float]] = defaultdict(list)
    for game in games:
        by_pair[pair_of(str(game["game_id"]))].append(_POINTS.get(str(game.get("outcome")), 0.5))
    return clustered(by_pair)


def clustered(by_pair: dict[Any, list[float]]) -> Score | None:
    """The mean of per-game points, with its standard error over pairs (the unit), or None without any."""
    if not by_pair:
        return None
    means = [sum(points) / len(points) for points in by_pair.values()]
    games_n = sum(len(points) for points in by_pair.values())
    mean = sum(p for points in by_pair.values() for p in points) / games_n
    k = len(means)
    se = math.sqrt(sum((m - sum(means) / k) ** 2 for m in means) / (k - 1) / k) if k > 1 else 0.5
    return Score(games_n, k, mean, se)


def version_scores(games: Iterable[dict[str, Any]]) -> dict[int, Score]:
    """Each version's score over the games that used it."""
    by_version: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for game in games:
        if game.get("version") is not None:
            by_version[int(game["version"])].append(game)
    return {v: s for v, s in ((v, score(g)) for v, g in sorted(by_version.items())) if s is not None}


def rollback_reason(snapshot: Snapshot, scores: dict[int, Score]) -> str | None:
    """Why `snapshot` should be rolled back to its parent (clearly worse, see the module docstring), or None."""
    if snapshot.parent is None or snapshot.trigger.get("kind") != "refinement":
        return None
    mine, parent = scores.get(snapshot.version), scores.get(snapshot.parent)
    if mine is None or parent is None or min(mine.games, parent.games) < MIN_GAMES:
        return None
    diff = mine.score - parent.score
    hi = diff + Z * math.sqrt(mine.se ** 2 + parent.se ** 2)
    if hi >= 0:
        return None
    return (f"version {snapshot.version} scored {mine.score:.2f} over {mine.games} games, clearly below its parent "
            f"version {snapshot.parent} ({parent.score:.2f} over {parent.games}): the difference {diff:+.2f} has a 95 % "
            f"interval entirely below 0 (upper bound {hi:+.2f})")


def _edits_line(snapshot: Snapshot) -> str:
    if snapshot.trigger.get("kind") == "rollback":
        return f"a rollback to the content of version {snapshot.trigger.get('to')}"
    if snapshot.trigger.get("kind") != "refinement":
        return "the start" if snapshot.trigger.get("kind") == "start" else "loaded before this run"
    parts = []
    for name, result in (snapshot.passes or {}).items():
        ops = [str((item.get("edit") or {}).get("op")) for item in result.get("applied", [])
               if isinstance(item.get("edit"), dict)]
        if ops:
            parts.append(f"{name}: {', '.join(ops)}")
    return "edits " + ("; ".join(parts) if parts else "none applied")


def history_text(snapshots: list[Snapshot], games: list[dict[str, Any]]) -> str:
    """The RESULTS SO FAR section of a refiner prompt: every version with its score and edits, every epoch."""
    scores = version_scores(games)
    lines = ["RESULTS SO FAR (score: wins + half the ties, per game; 95 % interval over pairs)",
             "Versions (yours: each made by a refinement from its parent):"]
    for snap in snapshots:
        played = scores.get(snap.version)
        parent = f", parent {snap.parent}" if snap.parent is not None else ""
        lines.append(f"- version {snap.version}{parent}: {_edits_line(snap)}; "
                     f"{played if played is not None else 'not played yet'}")
    by_epoch: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for game in games:
        if game.get("epoch") is not None:
            by_epoch[int(game["epoch"])].append(game)
    if by_epoch:
        lines.append("Every epoch so far:")
    for epoch, in_epoch in sorted(by_epoch.items()):
        results = {k: sum(1 for g in in_epoch if g.get("outcome") == k) for k in ("won", "lost", "tie")}
        counts = {k: n for k, n in sig.summarise(sig.mine(in_epoch)).items() if n}
        found = ", ".join(f"{k} {n}" for k, n in counts.items()) or "none"
        versions = sorted({int(g["version"]) for g in in_epoch if g.get("version") is not None})
        lines.append(f"- epoch {epoch} (version {', '.join(map(str, versions))}): {len(in_epoch)} game(s), "
                     f"{results['won']} won, {results['lost']} lost, {results['tie']} tied; signatures: {found}")
    return "\n".join(lines)
