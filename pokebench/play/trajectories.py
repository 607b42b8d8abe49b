"""``trajectories: K``: K independent learning trajectories of one run config, and the gain after learning.

One run is one life of a refining player (one learning trajectory), so the run config's K trajectories are
K runs, each on its own seed text, and each followed by its evaluation after learning:

- trajectory k learns in run ``NAME-tK`` on seed text ``SEED-tK`` (the config as written);
- it is evaluated in run ``NAME-tK-after`` on seed text ``SEED-tK-after`` (teams it never saw) with
  ``after_pairs`` pairs (default: ``pairs``): every player that refined in ``NAME-tK`` plays what it
  learned, frozen (its class's ``frozen_after_learning``), every other player as configured.

Published together (:func:`run_trajectories` returns the groups): ``data/site/NAME`` (the K learning runs:
the learning curve with an interval per epoch over the pairs of every trajectory, the gain during learning)
and ``data/site/NAME-after`` (the K evaluations: the gain after learning, pooled and per trajectory in
``trajectory_gain.csv``). A trajectory whose learning run still misses games stops the command there:
a harness is evaluated only once it has learned from every game of its run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig, OmegaConf, open_dict

from pokebench.paths import RUNS_DIR
from pokebench.player.hooks import FreezesAfterLearning, PlayerMaker
from pokebench.play import epochs
from pokebench.play.plan import ConfigError
from pokebench.play.spend_estimate import Estimate, estimate, priced, spend_line


@dataclass(frozen=True)
class Published:
    """Runs published together into one site folder (``data/site/SITE``)."""

    runs: list[str]
    site: str


def count(cfg: DictConfig) -> int | None:
    """The config's number of trajectories (None: a single run, as without the key)."""
    value = cfg.get("trajectories")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"'trajectories' must be a whole number of at least 1 (or null for one run), not {value!r}. "
                          "Example: trajectories=3")
    return value


def after_pairs(cfg: DictConfig) -> int:
    """Pairs of each evaluation after learning (``after_pairs``, default ``pairs``; 0: no evaluation)."""
    value = cfg.get("after_pairs")
    value = cfg.pairs if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigError(f"'after_pairs' must be a whole number >= 0 (0: no evaluation after learning), not "
                          f"{value!r}.")
    return value


def learning_run(cfg: DictConfig, name: str, k: int) -> tuple[str, DictConfig]:
    """Trajectory k's learning run: its name and config (the config on seed text SEED-tK)."""
    return f"{name}-t{k}", _with(cfg, {"seed_text": f"{cfg.seed_text}-t{k}"})


def after_run(cfg: DictConfig, name: str, k: int, learned: dict[str, dict[str, Any]]) -> tuple[str, DictConfig]:
    """Trajectory k's evaluation after learning: `learned` is each refining player's frozen options."""
    return f"{name}-t{k}-after", _with(cfg, {"seed_text": f"{cfg.seed_text}-t{k}-after", "pairs": after_pairs(cfg)},
                                       learned)


def _with(cfg: DictConfig, values: dict[str, Any], players: dict[str, dict[str, Any]] | None = None) -> DictConfig:
    leg = cfg.copy()
    with open_dict(leg):
        leg.trajectories = None
        for key, value in values.items():
            leg[key] = value
        for player, options in (players or {}).items():
            leg.players[player] = OmegaConf.merge(leg.players[player], options)
    return leg


def frozen_after_learning(factories: dict[str, PlayerMaker], work_root: Path) -> dict[str, dict[str, Any]]:
    """The options that make each refining player play what it learned in the run of `work_root`, frozen."""
    frozen = {}
    for name in epochs.refining(factories):
        cls = factories[name].cls
        if not isinstance(cls, FreezesAfterLearning):
            raise ConfigError(f"Player '{name}' refines itself but cannot be played frozen after learning (its class "
                              "has no frozen_after_learning); play it without `trajectories`.")
        frozen[name] = cls.frozen_after_learning(work_root / name)
    return frozen


def run_trajectories(cfg: DictConfig, name: str, run: Callable[[DictConfig, str], int],
                     plan: Callable[[DictConfig, str], Any], runs_dir: Path = RUNS_DIR) -> tuple[int, list[Published]]:
    """Play every trajectory and its evaluation after learning (`run(cfg, name)`: one run, its missing games);
    the games still missing and what to publish."""
    k_max = count(cfg)
    assert k_max is not None
    pairs_after = after_pairs(cfg)
    learning, evaluated = [], []
    for k in range(1, k_max + 1):
        learn_name, learn_cfg = learning_run(cfg, name, k)
        missing = run(learn_cfg, learn_name)
        learning.append(learn_name)
        if missing:
            return missing, []
        if pairs_after:
            frozen = frozen_after_learning(plan(learn_cfg, learn_name).factories, runs_dir / learn_name / "players")
            after_name, after_cfg = after_run(cfg, name, k, frozen)
            missing = run(after_cfg, after_name)
            evaluated.append(after_name)
            if missing:
                return missing, []
    return 0, [Published(learning, name)] + ([Published(evaluated, f"{name}-after")] if evaluated else [])


def spend_before(cfg: DictConfig, name: str, plan: Callable[[DictConfig, str], Any]) -> str:
    """The estimated spend of the whole command (every trajectory and evaluation), as the line to print
    before its first game ("" when no player has priced models)."""
    k_max = count(cfg)
    resolved = OmegaConf.to_container(cfg.players, resolve=True)
    assert isinstance(resolved, dict)
    players = {str(player): options for player, options in resolved.items()}
    if not priced(players):
        return ""
    leg_name, leg_cfg = learning_run(cfg, name, 1) if k_max else (name, cfg)
    planned = plan(leg_cfg, leg_name)
    games: Counter[str] = Counter()
    for spec in planned.specs:
        games.update((spec.p1, spec.p2))
    one = estimate(players, games, int(cfg.pairs), epochs.refining(planned.factories))
    if not k_max:
        return spend_line(one, f"run '{name}'", one.total, _run_cap(cfg))
    total = Estimate()
    total.add(one, k_max)
    pairs_after = after_pairs(cfg)
    evaluation = Estimate()
    if pairs_after:
        evaluation.add(estimate(players, games, int(cfg.pairs), []), pairs_after / int(cfg.pairs))
        total.add(evaluation, k_max)
    what = (f"{k_max} trajectories of {cfg.pairs} pairs" + (f", each evaluated on {pairs_after} pairs after learning"
                                                              if pairs_after else ""))
    return spend_line(total, what, max(one.total, evaluation.total), _run_cap(cfg))


def _run_cap(cfg: DictConfig) -> float | None:
    """The command's ``budget_usd`` as a number (a value that is not is refused by the run, not here)."""
    try:
        return None if cfg.get("budget_usd") is None else float(cfg.budget_usd)
    except (TypeError, ValueError):
        return None
