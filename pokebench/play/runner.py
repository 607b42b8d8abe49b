"""One run from its composed config: check it, plan it, play what is missing, store it, publish it."""

from __future__ import annotations

import asyncio
import warnings
import functools
import inspect
import logging
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf
from tqdm import tqdm

from poke_env.player import Player

from pokebench import paths
from pokebench.play import epochs
from pokebench.play import sequential
from pokebench.play.arena import Arena, GameResult, HarnessError, NotStarted
from pokebench.llm.errors import ModelConfigError
from pokebench.llm.preflight import PreflightError, model_configs, probe_models
from pokebench.play.budget import Budget, BudgetError
from pokebench.play.summary import (ThisStart, all_games, count_tokens, games_per_player, progress_spend,
                                    run_summary, store_spend)
from pokebench.player.bench_player import with_bench_hooks
from pokebench.play.schedule import GameSpec, build_schedule, expand_matchups
from pokebench.player.seats import ExternalCompetitor
from pokebench.showdown.server import LocalShowdown, RemoteShowdown, pinned_version
from pokebench.results.store import RunStore, run_stores, store_path

log = logging.getLogger(__name__)

#: poke-env keyword arguments that the arena sets for every player.
ARENA_KWARGS = {"account_configuration", "server_configuration", "battle_format", "max_concurrent_battles",
                "start_timer_on_battle_start", "log_level"}


class ConfigError(ValueError):
    """The run's config is wrong; the message names the key and the fix."""


class RunStopped(RuntimeError):
    """The run stopped before its end on purpose (a spending cap, an error no retry fixes); games are kept."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def available_runs() -> list[str]:
    return sorted(p.stem for p in (paths.conf_dir() / "run").glob("*.yaml"))


def _allowed_keys() -> DictConfig:
    return OmegaConf.load(paths.conf_dir() / "config.yaml")


def check_keys(cfg: DictConfig) -> None:
    """Every key must be one config.yaml knows (Hydra lets a typo through with `+key=`)."""
    base = _allowed_keys()
    for key in cfg:
        if key not in base:
            raise ConfigError(f"Unknown config key '{key}'. Known keys: {', '.join(k for k in base if k not in ('defaults', 'hydra'))}.")
    for key in cfg.server:
        if key not in base.server:
            raise ConfigError(f"Unknown config key 'server.{key}'. Known keys: {', '.join('server.' + k for k in base.server)}.")


def parse_shard(value: object) -> tuple[int, int] | None:
    """``"I/N"`` -> (I, N) with 0 <= I < N; None for the whole run."""
    if value is None:
        return None
    try:
        index, count = (int(part) for part in str(value).split("/"))
    except ValueError:
        index = count = -1
    if not 0 <= index < count:
        raise ConfigError(f"'shard' must look like I/N with 0 <= I < N (e.g. shard=0/4), not {value!r}.")
    return index, count


def _positive_int(cfg: DictConfig, key: str) -> int:
    value = cfg[key]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"'{key}' must be a positive whole number, not {value!r} (e.g. {key}=4).")
    return value


@dataclass
class RunPlan:
    name: str
    specs: list[GameSpec]
    factories: dict[str, Callable[..., Any]]
    per_player_limits: dict[str, int]
    matchup_order: list[str]
    fingerprint: dict[str, Any]
    shard: tuple[int, int] | None = None


#: Where the competitors shipped with PokéBench were before they moved into the package.
MOVED_TARGETS = {
    "players.llm.": "pokebench.players.llm.",
    "players.heuristic.": "pokebench.players.heuristic.",
    "players.max_damage.": "pokebench.players.max_damage.",
    "players.random_bot.": "pokebench.players.random_bot.",
    "players.continual.": "pokebench.players.continual.",
    "players.foul_play.": "pokebench.players.foul_play.",
}


def current_target(target: str) -> str:
    """``target``, or where its class is now if it names an old ``players.X`` module (with a DeprecationWarning)."""
    for old, new in MOVED_TARGETS.items():
        if target.startswith(old):
            moved = new + target[len(old):]
            warnings.warn(f"`_target_: {target}` is deprecated: the class is now `{moved}`.", DeprecationWarning,
                          stacklevel=2)
            return moved
    return target


def player_factory(name: str, player_cfg: DictConfig) -> tuple[Callable[..., Any] | ExternalCompetitor, int | None]:
    """A factory that makes a fresh player for one game, and the player's own games-in-flight limit."""
    if "_target_" not in player_cfg:
        raise ConfigError(f"Player '{name}' has no `_target_` (the Player class to use), e.g. `_target_: pokebench.players.random_bot.RandomBot`.")
    try:
        cls = get_class(current_target(player_cfg._target_))
    except Exception as err:
        raise ConfigError(f"Player '{name}': cannot load class '{player_cfg._target_}' ({err}). "
                          "Check `_target_` in its conf/player/*.yaml.") from None
    kwargs = OmegaConf.to_container(player_cfg, resolve=True)
    assert isinstance(kwargs, dict)
    kwargs.pop("_target_")
    bad = set(kwargs) & ARENA_KWARGS
    if bad:
        raise ConfigError(f"Player '{name}' sets {sorted(bad)}, which the arena sets for every player; remove them.")
    unknown = [k for k in kwargs if k not in _keyword_options(cls)]
    if unknown:
        raise ConfigError(f"Player '{name}' ({cls.__name__}) takes no option(s) {unknown}; check its conf/player/*.yaml.")
    preflight = getattr(cls, "preflight", None)
    if callable(preflight):
        try:
            preflight(**kwargs)
        except (ValueError, OSError, RuntimeError) as err:
            raise ConfigError(f"Player '{name}': {err}") from None
    if issubclass(cls, ExternalCompetitor):
        competitor = cls(**kwargs)
        return competitor, competitor.max_in_flight
    limit = kwargs.get("max_in_flight") or (kwargs.get("model") or {}).get("max_in_flight")
    return functools.partial(with_bench_hooks(cls), **kwargs), (int(limit) if limit else None)


def _keyword_options(cls: type) -> set[str]:
    """The keyword arguments a Player class takes; a `**kwargs` is taken to forward to poke-env's Player."""
    params = inspect.signature(cls.__init__).parameters.values()
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} - {"self"}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        names |= _keyword_options(Player)
    return names


def plan_run(cfg: DictConfig, run_name: str) -> RunPlan:
    """Check the whole config and list the run's games, before anything is played."""
    check_keys(cfg)
    pairs = _positive_int(cfg, "pairs")
    _positive_int(cfg, "concurrency")
    _positive_int(cfg, "turn_limit")
    if not cfg.players:
        raise ConfigError("The run has no players. Choose a run with `+run=NAME` (runs: " + ", ".join(available_runs()) + ").")
    names = list(cfg.players)
    try:
        matchups = expand_matchups(names, OmegaConf.to_object(cfg.matchups) if OmegaConf.is_config(cfg.matchups) else cfg.matchups)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if not matchups:
        raise ConfigError("The run has no matchups: it needs at least two players.")
    factories, limits, problems = {}, {}, []
    for name in names:  # check every player, so that one run says everything that is missing at once
        try:
            factories[name], limit = player_factory(name, cfg.players[name])
        except ConfigError as err:
            problems.append(str(err))
            continue
        if limit:
            limits[name] = limit
    if problems:
        raise ConfigError("\n".join(problems))
    specs = build_schedule(run_name, str(cfg.seed_text), pairs, matchups)
    shard = parse_shard(cfg.shard)
    if sequential.enabled(cfg) and shard is not None:
        raise ConfigError("'shard' and 'sequential.target_width' cannot be used together: each step of a "
                          "sequential run chooses its next pairs from all the results so far.")
    if shard is not None:  # whole mirror pairs go to one shard, so each store holds complete bootstrap units
        specs = [s for s in specs if s.pair % shard[1] == shard[0]]
    try:
        epochs.check_shards(factories, shard)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    fingerprint = {
        "seed_text": str(cfg.seed_text), "format": cfg.format, "turn_limit": cfg.turn_limit,
        "players": _without_budgets(OmegaConf.to_container(cfg.players, resolve=False)),
        "showdown_version": pinned_version(),
    }
    if sequential.enabled(cfg):  # its settings decide which games are played
        try:
            seq = sequential.read_config(cfg, names)
        except sequential.SequentialError as err:
            raise ConfigError(str(err)) from None
        fingerprint["sequential"] = {k: v for k, v in seq.__dict__.items() if k not in ("anchor",)}
        refining = epochs.refining(factories)
        if refining:
            raise ConfigError(f"Player(s) {refining} change between epochs of whole pairs of every matchup, which a "
                              "sequential run (more pairs for some matchups only) cannot keep fair. Play this run "
                              "without sequential.target_width.")
    return RunPlan(run_name, specs, factories, limits, [f"{a}-vs-{b}" for a, b in matchups], fingerprint, shard)


def _without_budgets(players: Any) -> Any:
    """The players' configs without their spending caps: raising a cap must not make it another run."""
    if not isinstance(players, dict):
        return players
    out = {}
    for name, options in players.items():
        if isinstance(options, dict) and isinstance(options.get("model"), dict):
            options = {**options, "model": {k: v for k, v in options["model"].items() if k != "budget_usd"}}
        out[name] = options
    return out


def _server(cfg: DictConfig, log_path: Path) -> LocalShowdown | RemoteShowdown:
    if cfg.server.port is None:
        sims = cfg.server.sim_processes or os.cpu_count() or 1
        return LocalShowdown(sim_processes=int(sims), log_path=log_path)
    return RemoteShowdown(cfg.server.host, int(cfg.server.port), os.environ.get("POKEBENCH_ADMIN_TOKEN"))


class Progress:
    """A tqdm bar: games done of total, wins so far per player, rate and time left."""

    def __init__(self, total: int, done: int, name: str) -> None:
        self.bar = tqdm(total=total, initial=done, desc=name, unit="game", dynamic_ncols=True)
        self.wins: Counter[str] = Counter()
        self.errors = 0
        self.spend = ""  # spend and tokens of LLM players (summary.progress_spend)

    def add(self, outcome: GameResult | HarnessError | NotStarted) -> None:
        if isinstance(outcome, GameResult):
            winner = outcome.record["winner"]
            self.wins[getattr(outcome.spec, winner) if winner in ("p1", "p2") else "ties"] += 1
            self.bar.update(1)
        elif isinstance(outcome, HarnessError):
            self.errors += 1
        parts = [f"{k} {v}" for k, v in self.wins.most_common()]
        if self.errors:
            parts.append(f"harness errors {self.errors}")
        if self.spend:
            parts.append(self.spend)
        self.bar.set_postfix_str(" · ".join(parts), refresh=True)

    def close(self) -> None:
        self.bar.close()


async def play_missing(plan: RunPlan, cfg: DictConfig, store: RunStore, server: Any, done: set[str],
                       budget: Budget | None = None, now: ThisStart | None = None,
                       block: set[str] | None = None) -> tuple[int, int]:
    """Play the planned games not in `done` (of `block` only, if given: an epoch); return (games played,
    harness errors).

    The first harness error caused by an error no retry can fix (``fatal``) stops the run at
    once: the games in flight are voided, and ``now.stop_reason`` says why. A budget that would
    be passed stops starting games (``budget.admit``); the games in flight finish.
    """
    now = now if now is not None else ThisStart()
    missing = [s for s in plan.specs if s.game_id not in done and (block is None or s.game_id in block)]
    arena = Arena(server, plan.factories, cfg.format, cfg.turn_limit, cfg.concurrency,
                  per_player_limits=plan.per_player_limits, stall_timeout=float(cfg.stall_timeout),
                  matchup_order=plan.matchup_order, work_root=store.path.parent / "players",
                  admit=budget.admit if budget is not None and budget.active else None,
                  settle=budget.settle if budget is not None and budget.active else None)
    progress = Progress(len(plan.specs), sum(1 for s in plan.specs if s.game_id in done), plan.name)
    spent: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    errors = 0
    try:
        async for outcome in arena.play(missing):
            if isinstance(outcome, NotStarted):
                now.not_started += 1
                now.stop_reason = now.stop_reason or f"budget: {outcome.reason}"
                continue
            if isinstance(outcome, GameResult):
                store.save_game(outcome.spec, outcome.record, outcome.players, outcome.started_at, outcome.decisions)
                now.played += 1
            else:
                store.save_harness_error(outcome.spec.game_id, outcome.cause, outcome.detail, outcome.decisions)
                log.warning("Harness error in %s: %s (%s)", outcome.spec.game_id, outcome.cause, outcome.detail)
                now.harness_errors[outcome.cause] += 1
                errors += 1
            for d in outcome.decisions:
                spent[str(d.get("player"))] += d.get("cost_usd") or 0.0
            count_tokens(outcome.decisions, tokens)
            progress.spend = progress_spend(dict(spent), dict(tokens))
            progress.add(outcome)
            if isinstance(outcome, HarnessError) and outcome.fatal:
                now.stop_reason = outcome.detail
                break  # leaving the loop cancels the games in flight: each is voided
    finally:
        progress.close()
        for factory in plan.factories.values():
            if isinstance(factory, ExternalCompetitor):
                await factory.shutdown()
    return now.played, errors


def done_in_run(run_dir: Path) -> set[str]:
    """The games that any store of the run (whole or shard) holds: none is ever played twice."""
    done: set[str] = set()
    for path in run_stores(run_dir):
        with RunStore.open_existing(path) as other:
            done |= other.done_game_ids()
    return done


def _budget_and_models(cfg: DictConfig) -> tuple[Budget, dict[str, Any]]:
    players = OmegaConf.to_container(cfg.players, resolve=True)
    assert isinstance(players, dict)
    try:
        return Budget.from_config(cfg.get("budget_usd"), players), model_configs(players)
    except (BudgetError, ModelConfigError) as err:
        raise ConfigError(str(err)) from None


def run(cfg: DictConfig, run_name: str, runs_dir: Path = Path("runs")) -> int:
    """Play a whole run (or one shard); returns the number of its planned games still missing (0 when complete).

    Raises :class:`RunStopped` when a budget or an error no retry fixes stopped it (after the summary).
    """
    plan = plan_run(cfg, run_name)
    budget, models = _budget_and_models(cfg)
    run_dir = runs_dir / run_name
    planned = {s.game_id for s in plan.specs}
    now = ThisStart()
    with RunStore(store_path(run_dir, plan.shard)) as store:
        store.bind_config(plan.fingerprint, run_name)
        if sequential.enabled(cfg):
            return _run_sequential(cfg, plan, store, run_dir)
        done = done_in_run(run_dir)
        missing = planned - done
        log.info("Run '%s': %d of %d games stored%s.", run_name, len(planned & done), len(planned),
                 f"; playing the {len(missing)} missing" if missing else ": nothing to play")
        if missing:
            if models:
                log.info("Pre-flight: one request to each of %d model(s) (%s).", len(models), ", ".join(models))
                try:
                    probes = probe_models(models)
                except PreflightError as err:
                    raise ConfigError(str(err)) from None
                now.preflight_cost_usd = sum(p.cost_usd or 0.0 for p in probes)
                for probe in probes:
                    log.info("  %s answers as '%s'.", probe.player, probe.completion.served_model or "?")
            budget.load(store_spend(run_dir), games_per_player(all_games(run_dir)))
            log_name = "showdown.log" if plan.shard is None else f"showdown-shard-{plan.shard[0]}-of-{plan.shard[1]}.log"
            log.info("Starting the Showdown server%s.", "" if cfg.server.port is None else f" connection (port {cfg.server.port})")
            with _server(cfg, run_dir / log_name) as server:
                # players that refine themselves change only between epochs of whole pairs (pokebench.play.epochs)
                async def play_block(done: set[str], block: set[str]) -> Any:
                    if now.stop_reason is None:  # a budget or an error no retry fixes stopped the run
                        return await play_missing(plan, cfg, store, server, done, budget, now, block)
                    return None

                asyncio.run(epochs.play_in_epochs(plan.specs, plan.factories, run_dir / "players",
                                                  lambda: done_in_run(run_dir), play_block))
    left = len(planned - done_in_run(run_dir))
    if models or now.stop_reason:
        print(run_summary(run_dir, run_name, len(planned), now, cfg.get("anchor")), flush=True)
    if now.stop_reason and now.stop_reason.startswith("budget: "):
        raise RunStopped(f"The run stopped starting games: {now.stop_reason[8:]}. {left} game(s) are missing; "
                         "raise the budget and start again to play them.", exit_code=4)
    if now.stop_reason:
        raise RunStopped(f"The run stopped at once: {now.stop_reason}\nNo retry can fix this; fix it and start "
                         f"again ({left} game(s) missing, the games in flight were voided).", exit_code=3)
    return left


def _run_sequential(cfg: DictConfig, plan: RunPlan, store: RunStore, run_dir: Path) -> int:
    """A sequential run (:mod:`pokebench.play.sequential`): the steps play through :func:`play_missing`."""
    conf = sequential.read_config(cfg, list(cfg.players))
    matchups = list(dict.fromkeys((s.p1, s.p2) for s in plan.specs if s.game == 1))  # (A, B) in the run's order
    with _server(cfg, run_dir / "showdown.log") as server:
        async def play(specs: list[GameSpec]) -> None:
            await play_missing(replace(plan, specs=specs), cfg, store, server, done_in_run(run_dir))

        specs, why = sequential.run_sequential(plan.name, str(cfg.seed_text), matchups, conf, run_dir,
                                               lambda: sequential.finished_games(run_dir), play)
    log.info("Sequential run %s: %s", plan.name, why)
    print(f"{plan.name}: {why}")
    return len({s.game_id for s in specs} - done_in_run(run_dir))
