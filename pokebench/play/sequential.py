"""Sequential scheduling: play mirror pairs until the listed players' intervals are narrow enough.

With ``sequential.target_width`` set, a run does not play a fixed ``pairs`` per matchup.
It plays ``min_pairs`` pairs of every matchup, then, step by step, ``batch`` more pairs of
the matchups whose results would narrow the widest intervals most, until every listed
player's interval (the one the published ratings report, :func:`fit_ratings`) is at most
``target_width`` Elo points wide, or ``max_pairs`` pairs (over all matchups) are played.

How the next matchups are chosen: the normal approximation of the MAP fit gives the
covariance Σ of the ratings; one more pair of matchup (i, j) adds information
w = 2·c²·p(1−p) along e_i − e_j (c = ln 10 / 400, p the fitted win chance), which lowers the
variance of player k's rating (relative to the anchor, u = e_k − e_a) by
w·(uᵀΣv)² / (1 + w·vᵀΣv). Each interval still above the target is foreseen to shrink as its
posterior sd would; each pick goes to the matchup that takes the most Elo points off what the
intervals exceed the target by, summed (ties: the most narrowing in all, then the matchups'
order), and Σ is updated (rank one) before the next pick of the same step. Lopsided games carry
little information (p(1−p) is small), so a player whose every game is lopsided is not fed every
pair while the others could reach the target. When the pair budget ends first, the reason names
the widest interval, its width, and about how many more pairs of which matchup would bring it to
the target (:func:`pairs_to_target`).

Pair j of a matchup has pair j's seeds (the same in every matchup, as in a fixed run), and
every choice depends only on finished games and seeded bootstraps: two runs of the same
config play the same games. A restarted run replays its steps from the store's games and
plays on where it stopped; ``runs/NAME/sequential.json`` records each step and why the run
stopped.

With ``sequential.interval: adjusted`` the intervals are those of the ratings from luck-adjusted scores
(:func:`fit_ratings` with ``score="adjusted_p1"``): each step's games get their luck rows from the run's
``luck`` function before the widths are measured. The foresight above stays the raw fit's normal
approximation: the adjusted fit's likelihood is the raw one weighed by 1/φ (and its variances φ times
larger), which scales every variance alike and leaves the foreseen shrinking ratios, the choice and
:func:`pairs_to_target` the same (up to the prior's weight).
"""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Sequence

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf
from scipy.special import expit

from pokebench.games import GameSpec
from pokebench.play.schedule import build_schedule
from pokebench.play.stopping import run_main
from pokebench.results.ratings import SCALE, RatingsError, fit_ratings, posterior_covariance, score_matrix, with_luck
from pokebench.util import atomic_write_text

__all__ = ["SequentialConfig", "Step", "enabled", "read_config", "next_step", "choose_matchups", "pairs_to_target", "run_sequential",
           "STATE_FILE", "specs_for", "INTERVALS", "LuckOf"]

STATE_FILE = "sequential.json"
#: ``sequential.interval``: whose intervals the target is checked on (the raw fit's, or the luck-adjusted one's).
INTERVALS = ("raw", "adjusted")
#: The luck rows of finished games (luck.csv's uid, luck_p1, adjusted_p1, error), for ``interval: adjusted``.
LuckOf = Callable[[pd.DataFrame], pd.DataFrame]


class SequentialError(ValueError):
    """The sequential settings are wrong; the message names the key and the fix."""


@dataclass(frozen=True)
class SequentialConfig:
    target_width: float
    players: tuple[str, ...]
    max_pairs: int
    batch: int = 2
    min_pairs: int = 1
    anchor: str = "max-damage"
    n_bootstrap: int = 200
    level: float = 0.95
    prior_sd: float = 800.0
    interval: str = "raw"


@dataclass
class Step:
    """One step: how many pairs each matchup has after it, and the widths that chose it."""

    pairs: dict[str, int]
    widths: dict[str, float] = field(default_factory=dict)


def enabled(cfg: DictConfig) -> bool:
    seq = cfg.get("sequential")
    return seq is not None and seq.get("target_width") is not None


def read_config(cfg: DictConfig, players: Sequence[str]) -> SequentialConfig:
    """The checked ``sequential`` settings of a run config."""
    seq = OmegaConf.to_container(cfg.sequential, resolve=True)
    assert isinstance(seq, dict)
    unknown = set(seq) - {"target_width", "players", "max_pairs", "batch", "min_pairs", "bootstrap", "interval"}
    if unknown:
        raise SequentialError(f"Unknown key(s) sequential.{', sequential.'.join(sorted(unknown))}. Known: "
                              "target_width, players, max_pairs, batch, min_pairs, bootstrap, interval.")
    interval = seq.get("interval", "raw")
    if interval not in INTERVALS:
        raise SequentialError(f"'sequential.interval' must be raw (the ratings from results) or adjusted (from "
                              f"luck-adjusted scores), not {interval!r}.")
    width = seq["target_width"]
    if isinstance(width, bool) or not isinstance(width, (int, float)) or width <= 0:
        raise SequentialError(f"'sequential.target_width' must be a positive number of Elo points, not {width!r}.")
    for key in ("max_pairs", "batch", "min_pairs", "bootstrap"):
        value = seq.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise SequentialError(f"'sequential.{key}' must be a positive whole number, not {value!r}.")
    listed = tuple(seq.get("players") or [p for p in players if p != cfg.anchor])
    strangers = [p for p in listed if p not in players]
    if strangers:
        raise SequentialError(f"'sequential.players' names {strangers}, not players of the run ({list(players)}).")
    return SequentialConfig(float(width), listed, int(seq["max_pairs"]), int(seq["batch"]), int(seq["min_pairs"]),
                            str(cfg.anchor), int(seq["bootstrap"]), interval=str(interval))


def _widths(games: pd.DataFrame, conf: SequentialConfig) -> tuple[dict[str, float], pd.DataFrame | None]:
    try:
        table = fit_ratings(games, anchor=conf.anchor, n_bootstrap=conf.n_bootstrap, seed=0, ci=conf.level,
                            prior_sd=conf.prior_sd, score="adjusted_p1" if conf.interval == "adjusted" else None)
    except RatingsError:
        return {p: math.inf for p in conf.players}, None
    width = dict(zip(table["player"], table["ci_high"] - table["ci_low"]))
    return {p: float(width.get(p, math.inf)) for p in conf.players}, table


class _Posterior:
    """The normal approximation of the fit: Σ (Elo²) and the fitted win chances, to foresee what more pairs give."""

    def __init__(self, games: pd.DataFrame, table: pd.DataFrame, anchor: str, prior_sd: float) -> None:
        self.players = list(table["player"])
        self.index = {p: k for k, p in enumerate(self.players)}
        r = table.set_index("player")["elo"].reindex(self.players).to_numpy(float)
        _, N = score_matrix(games, self.players)
        self.cov = posterior_covariance(N, r, prior_sd)
        self.p = expit(SCALE * (r[:, None] - r[None, :]))
        self.anchor = self.index[anchor]

    def direction(self, a: str, b: str) -> tuple[np.ndarray, float]:
        """e_a − e_b and the information one mirror pair of a vs b adds along it: 2·c²·p(1−p)."""
        v = np.zeros(len(self.players))
        v[self.index[a]], v[self.index[b]] = 1.0, -1.0
        p = self.p[self.index[a], self.index[b]]
        return v, 2 * SCALE**2 * p * (1 - p)

    def relative(self, k: str) -> np.ndarray:
        """e_k − e_anchor: player k's rating as published."""
        u = np.zeros(len(self.players))
        u[self.index[k]] += 1.0
        u[self.anchor] -= 1.0
        return u

    def variance(self, k: str) -> float:
        u = self.relative(k)
        return float(u @ self.cov @ u)

    def variance_after(self, k: str, a: str, b: str) -> float:
        """Var of k's published rating after one more pair of a vs b (a rank-one update)."""
        v, w = self.direction(a, b)
        sv = self.cov @ v
        return self.variance(k) - w * float(self.relative(k) @ sv) ** 2 / (1 + w * float(v @ sv))

    def add(self, a: str, b: str) -> None:
        v, w = self.direction(a, b)
        sv = self.cov @ v
        self.cov = self.cov - w * np.outer(sv, sv) / (1 + w * float(v @ sv))


def choose_matchups(games: pd.DataFrame, table: pd.DataFrame, matchups: Sequence[tuple[str, str]],
                    widths: dict[str, float], conf: SequentialConfig, budget: int) -> list[tuple[str, str]]:
    """The matchups of the next step (a matchup can be chosen more than once), see the module doc."""
    post = _Posterior(games, table, conf.anchor, conf.prior_sd)
    pairs = [(a, b) for a, b in matchups if a in post.index and b in post.index]
    open_players = [k for k in conf.players if widths.get(k, math.inf) > conf.target_width and k in post.index]
    start = {k: post.variance(k) for k in open_players}

    def width(k: str, var: float) -> float:  # the measured width, scaled as the posterior sd would shrink
        return widths[k] * math.sqrt(max(var, 0.0) / start[k])

    chosen: list[tuple[str, str]] = []
    for _ in range(min(conf.batch, budget)):
        if not open_players:
            break
        best, best_key = None, None
        for m, (x, y) in enumerate(pairs):
            now = [width(k, post.variance(k)) for k in open_players]
            after = [width(k, post.variance_after(k, x, y)) for k in open_players]
            over = sum(max(w0 - conf.target_width, 0.0) - max(w1 - conf.target_width, 0.0)
                       for w0, w1 in zip(now, after))
            key = (round(over, 9), round(sum(now) - sum(after), 9), -m)
            if best_key is None or key > best_key:
                best, best_key = (x, y), key
        assert best is not None
        chosen.append(best)
        post.add(*best)
    return chosen


def pairs_to_target(games: pd.DataFrame, table: pd.DataFrame, matchups: Sequence[tuple[str, str]],
                    width: float, player: str, conf: SequentialConfig) -> tuple[int, str] | None:
    """About how many more pairs of which one matchup would bring ``player``'s interval (now ``width``) to the
    target, by the normal approximation (the width shrinking as the posterior sd does); None if none could."""
    post = _Posterior(games, table, conf.anchor, conf.prior_sd)
    var = post.variance(player)
    gap = var * (1 - (conf.target_width / width) ** 2)  # the variance to lose
    # n more pairs of one matchup: var − n·w·(uᵀΣv)² / (1 + n·w·vᵀΣv) ≤ var − gap  ⇔  n ≥ gap / (w·((uᵀΣv)² − gap·vᵀΣv))
    best: tuple[int, str] | None = None
    for a, b in matchups:
        v, w = post.direction(a, b)
        sv = post.cov @ v
        reach = float(post.relative(player) @ sv) ** 2 - gap * float(v @ sv)
        if w > 0 and reach > 0:
            need = math.ceil(gap / (w * reach))
            if best is None or need < best[0]:
                best = (need, f"{a}-vs-{b}")
    return best


#: The settings that say when a sequential run stops, not which pairs it plays next: not part of the run's identity.
STOPPING_RULE = ("max_pairs", "target_width")


def budget_reason(games: pd.DataFrame, table: pd.DataFrame | None, matchups: Sequence[tuple[str, str]],
                  widths: dict[str, float], conf: SequentialConfig, total: int) -> str:
    """Why the run stopped with intervals still too wide: the widest, how wide, and what more pairs would give."""
    over = sorted(((w, k) for k, w in widths.items() if w > conf.target_width), reverse=True)
    width, player = over[0]
    text = (f"pair budget spent before the target: {total} of {conf.max_pairs} pairs (sequential.max_pairs) played; "
            f"{player}'s interval is {width:.0f} Elo wide, target {conf.target_width:g}")
    need = None if table is None or math.isinf(width) else pairs_to_target(games, table, matchups, width, player, conf)
    if need is not None:
        text += f" (about {need[0]} more pairs of {need[1]} would get it there, by the normal approximation)"
    others = ", ".join(f"{k} {w:.0f}" for w, k in over[1:])
    return text + (f"; also above: {others}" if others else "") + \
        ". Raise sequential.max_pairs or sequential.target_width and start again to play on."


def next_step(games: pd.DataFrame, pairs: dict[str, int], matchups: Sequence[tuple[str, str]],
              conf: SequentialConfig) -> tuple[dict[str, int] | None, dict[str, float], str]:
    """After the games of ``pairs`` (matchup -> pairs played), the next ``pairs`` or None and why."""
    widths, table = _widths(games, conf)
    total = sum(pairs.values())
    if table is not None and all(w <= conf.target_width for w in widths.values()):
        return None, widths, (f"target reached: every listed player's interval is at most {conf.target_width:g} "
                              f"Elo wide after {total} pairs")
    if total >= conf.max_pairs:
        return None, widths, budget_reason(games, table, matchups, widths, conf, total)
    budget = conf.max_pairs - total
    if table is None:  # not fittable yet (e.g. a player never met the others): one more pair of every matchup
        picks = list(matchups)[:budget]
    else:
        picks = choose_matchups(games, table, matchups, widths, conf, budget)
    out = dict(pairs)
    for a, b in picks:
        out[f"{a}-vs-{b}"] += 1
    return out, widths, ""


def specs_for(run: str, seed_text: str, matchups: Sequence[tuple[str, str]], pairs: dict[str, int],
              rolls: str = "stock") -> list[GameSpec]:
    """The games of ``pairs`` (matchup -> pairs 1..count), in the order a fixed run would play them."""
    top = max(pairs.values(), default=0)
    return [s for s in build_schedule(run, seed_text, top, matchups, rolls) if s.pair <= pairs[s.matchup]]


def run_sequential(run: str, seed_text: str, matchups: Sequence[tuple[str, str]], conf: SequentialConfig,
                   run_dir: Path, finished: Callable[[], pd.DataFrame],
                   play: Callable[[list[GameSpec]], Awaitable[Any]], luck: LuckOf | None = None,
                   rolls: str = "stock"
                   ) -> tuple[list[GameSpec], str]:
    """Play step by step (``play`` plays the specs not yet finished); return every planned game and why it stopped.

    ``finished()`` gives the run's finished games (columns of games.csv). Each step is
    replayed from them first, so a restarted run continues exactly where it stopped.
    ``luck(games)``: the luck rows of those games, for ``conf.interval == "adjusted"`` (required then). It is
    called between steps, when no game is in flight, in a thread: the loop's connections stay served.
    """
    if conf.interval == "adjusted" and luck is None:
        raise SequentialError("'sequential.interval: adjusted' needs the luck of each step's games; this run has "
                              "no way to measure it. Use sequential.interval=raw.")
    names = [f"{a}-vs-{b}" for a, b in matchups]
    pairs = {m: min(conf.min_pairs, conf.max_pairs) for m in names}
    steps: list[dict[str, Any]] = []
    reason = ""

    async def loop() -> None:
        nonlocal pairs, reason
        while True:
            specs = specs_for(run, seed_text, matchups, pairs, rolls)
            games = finished()
            done = set(games["game_id"]) if len(games) else set()
            missing = [s for s in specs if s.game_id not in done]
            if missing:
                await play(missing)
                games = finished()
                done = set(games["game_id"]) if len(games) else set()
                if any(s.game_id not in done for s in specs):
                    reason = ("stopped: some games of this step ended in harness errors; start the run again to "
                              "play them and go on")
                    steps.append({"pairs": dict(pairs), "widths": {}})
                    return
            planned = {s.game_id for s in specs}
            mine = games[games["game_id"].isin(planned)] if len(games) else games
            if luck is not None and conf.interval == "adjusted" and len(mine):
                mine = with_luck(mine, await asyncio.to_thread(luck, mine))  # no game in flight: between steps
            nxt, widths, why = next_step(mine, pairs, matchups, conf)
            steps.append({"pairs": dict(pairs), "widths": {k: (None if math.isinf(v) else round(v, 3))
                                                             for k, v in widths.items()}})
            if nxt is None:
                reason = why
                return
            pairs = nxt

    run_main(loop())
    state = {"target_width": conf.target_width, "players": list(conf.players), "max_pairs": conf.max_pairs,
             "batch": conf.batch, "min_pairs": conf.min_pairs, "bootstrap": conf.n_bootstrap, "interval": conf.interval,
             "pairs_played": sum(steps[-1]["pairs"].values()) if steps else 0, "stopped": reason, "steps": steps}
    atomic_write_text(run_dir / STATE_FILE, json.dumps(state, indent=1) + "\n")
    return specs_for(run, seed_text, matchups, pairs, rolls), reason

