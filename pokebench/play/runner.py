"""One run from its composed config: check it, plan it, play what is missing, store it, publish it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from pokebench.play import epochs
from pokebench.play import sequential
from pokebench.play.arena import Arena, GameResult, HarnessError, NotStarted
from pokebench.llm.errors import ModelConfigError, printable
from pokebench.llm.preflight import PreflightError, model_configs, probe_models
from pokebench.play.budget import Budget, BudgetError
from pokebench.play.lock import RunLock
from pokebench.play.plan import ConfigError, RunPlan, check_format, plan_run
from pokebench.games import GameSpec
from pokebench.play.progress import Progress
from pokebench.play.run_luck import run_luck
from pokebench.play.stopping import run_main
from pokebench.play.summary import StopKind, StopReason, ThisStart, games_per_player, run_label, run_summary
from pokebench.player.seats import ExternalCompetitor
from pokebench.showdown.admin import AdminClient, AdminError
from pokebench.showdown.server import LocalShowdown, RemoteShowdown
from pokebench.results.run_stores import RunStores
from pokebench.results.store import RunStore, StoreWriteError, check_store, run_stores, store_path
from pokebench.paths import RUNS_DIR
from pokebench.util import usable_cpus

log = logging.getLogger(__name__)

class RunStopped(RuntimeError):
    """The run stopped before its end on purpose (a spending cap, an error no retry fixes); games are kept."""

    def __init__(self, message: str, exit_code: int, resume: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.resume = resume or {}  # settings the command to resume needs changed (a cap raised)


def _server(cfg: DictConfig, log_path: Path) -> LocalShowdown | RemoteShowdown:
    if cfg.server.port is None:
        sims = cfg.server.sim_processes or usable_cpus()
        return LocalShowdown(sim_processes=int(sims), log_path=log_path,
                             simulator_timeout=float(cfg.server.liveness_timeout))
    return RemoteShowdown(cfg.server.host, int(cfg.server.port), os.environ.get("POKEBENCH_ADMIN_TOKEN"))


async def play_missing(plan: RunPlan, store: RunStore, server: Any, done: set[str],
                       budget: Budget | None = None, now: ThisStart | None = None,
                       block: set[str] | None = None, progress: Progress | None = None) -> tuple[int, int]:
    """Play the planned games not in `done` (of `block` only, if given: an epoch) once; return (games played,
    harness errors). `progress`: the run's bar (else a bar of its own).

    The first harness error caused by an error no retry can fix (``fatal``) stops the run at
    once: the games in flight are voided, and ``now.stop_reason`` says why. A budget that would
    be passed stops starting games (``budget.admit``); the games in flight finish.
    """
    now = now if now is not None else ThisStart()
    missing = [s for s in plan.specs if s.game_id not in done and (block is None or s.game_id in block)]
    settings = plan.settings
    arena = Arena(server, plan.factories, settings.battle_format, settings.turn_limit, settings.concurrency,
                  per_player_limits=plan.per_player_limits, stall_timeout=settings.stall_timeout,
                  matchup_order=plan.matchup_order, work_root=store.path.parent / "players",
                  admit=budget.admit if budget is not None and budget.active else None,
                  settle=budget.settle if budget is not None and budget.active else None,
                  liveness_timeout=settings.liveness_timeout, stopped=_record_stopped(store))
    own_bar = progress is None
    progress = progress or Progress(len(plan.specs), sum(1 for s in plan.specs if s.game_id in done), plan.name)
    following = asyncio.create_task(progress.follow(arena.live_decisions))  # answers move the bar's text
    errors = 0
    try:
        async with contextlib.aclosing(arena.play(missing)) as outcomes:  # a break voids the games in flight now
            async for outcome in outcomes:
                if isinstance(outcome, NotStarted):
                    now.not_started += 1
                    now.stop_reason = now.stop_reason or StopReason(StopKind.BUDGET, outcome.reason)
                    continue
                if isinstance(outcome, GameResult):
                    store.save_game(outcome.spec, outcome.record, outcome.players, outcome.started_at, outcome.decisions)
                    now.played += 1
                else:
                    store.save_harness_error(outcome.spec.game_id, outcome.cause, outcome.detail, outcome.decisions)
                    log.warning("Harness error in %s: %s", outcome.spec.game_id, outcome.description)
                    now.harness_errors[outcome.cause] += 1
                    errors += 1
                progress.add(outcome)
                if isinstance(outcome, HarnessError) and outcome.fatal:
                    now.stop_reason = StopReason(StopKind.FATAL, outcome.detail)
                    break  # leaving the loop cancels the games in flight: each is voided
    finally:
        following.cancel()
        if own_bar:
            progress.close()
    return now.played, errors


def _record_stopped(store: RunStore) -> Callable[[HarnessError], None]:
    """What the arena calls for each game voided because the run stopped: its answers are written (they are
    paid). A store that cannot be written is said once, by the error that stopped the run."""
    def record(outcome: HarnessError) -> None:
        with contextlib.suppress(StoreWriteError):
            store.save_harness_error(outcome.spec.game_id, outcome.cause, outcome.detail, outcome.decisions)

    return record


async def play_rounds(plan: RunPlan, stores: RunStores, server: Any,
                      block: set[str] | None = None, budget: Budget | None = None,
                      now: ThisStart | None = None, progress: Progress | None = None) -> None:
    """Play the missing games (of `block`, if given) into the run's own store, then replay the ones that
    ended in harness errors, for at most ``retry_rounds`` more rounds: a transient fault (a crashed player,
    a hung or dead server) never needs a second start. Done is what any store of the run holds."""
    now = now if now is not None else ThisStart()
    for round_no in range(1 + plan.settings.retry_rounds):
        if now.stop_reason is not None:  # a budget or an error no retry fixes stopped the run
            return
        done = stores.done_game_ids()
        missing = [s for s in plan.specs if s.game_id not in done and (block is None or s.game_id in block)]
        if not missing:
            return
        if round_no:
            log.warning("Retry round %d of %d: playing again the %d game(s) that ended in harness errors.",
                        round_no, plan.settings.retry_rounds, len(missing))
        _, errors = await play_missing(plan, stores.own, server, done, budget, now, block, progress)
        if not errors:
            return


async def play_run(plan: RunPlan, stores: RunStores, server: Any,
                   budget: Budget | None = None, now: ThisStart | None = None) -> None:
    """Every missing game, epoch by epoch (players that refine themselves change only between epochs of
    whole pairs: :mod:`pokebench.play.epochs`), each epoch with its retry rounds, on one progress bar."""
    progress = Progress(len(plan.specs), len({s.game_id for s in plan.specs} & stores.done_game_ids()), plan.name)
    try:
        await epochs.play_in_epochs(plan.specs, plan.factories, stores.run_dir / "players", stores.done_game_ids,
                                    lambda _done, block: play_rounds(plan, stores, server, block,
                                                                     budget, now, progress),
                                    run={"seed_text": plan.settings.seed_text, "format": plan.settings.battle_format},
                                    budget=budget)
    finally:
        progress.close()
        for factory in plan.factories.values():
            if isinstance(factory, ExternalCompetitor):
                await factory.shutdown()


async def ask_format(server: Any, battle_format: str) -> dict[str, Any]:
    """The running server's own answer about `battle_format` (does it exist, random teams, singles)."""
    async with AdminClient(server.address) as admin:
        try:
            return await admin.format_info(battle_format)
        except AdminError as err:
            raise ConfigError(f"The Showdown server at {server.address.host}:{server.address.port} cannot say which "
                              f"formats it knows ({err}); its PokéBench plugin is older than this PokéBench. "
                              "Run `pokebench-server install` and restart it.") from None


def _budget_and_models(cfg: DictConfig) -> tuple[Budget, dict[str, Any]]:
    container = OmegaConf.to_container(cfg.players, resolve=True)
    assert isinstance(container, dict)
    players = {str(name): entry for name, entry in container.items()}
    try:
        return Budget.from_config(cfg.get("budget_usd"), players), model_configs(players)
    except (BudgetError, ModelConfigError) as err:
        raise ConfigError(str(err)) from None


def run(cfg: DictConfig, run_name: str, runs_dir: Path = RUNS_DIR) -> int:
    """Play a whole run (or one shard); returns the number of its planned games still missing (0 when complete).

    Raises :class:`RunStopped` when a budget or an error no retry fixes stopped it (after the summary).
    In order, and each before anything that follows: the config (:func:`plan_run`), every store of
    the run (damaged, foreign, read-only: :func:`check_store`), the run's lock (:class:`RunLock`),
    the store's config, the pre-flight of the models, the server and the format it knows; then the games.
    Each store of the run is opened once (:class:`RunStores`), and closed at the end.
    """
    plan = plan_run(cfg, run_name)
    budget, models = _budget_and_models(cfg)
    run_dir = runs_dir / run_name
    path = store_path(run_dir, plan.shard)
    check_store(path)
    for other in run_stores(run_dir):
        if other != path:  # the own store is checked above, also before it exists
            check_store(other)
    planned = {s.game_id for s in plan.specs}
    now = ThisStart()
    with RunStores(run_dir, path) as stores:  # opened once each, after the lock; closed after the summary
        with contextlib.ExitStack() as stack:
            stack.enter_context(RunLock(run_dir, path, shard=plan.shard is not None))

            def bind_own_store() -> None:
                """Open (make) this process's store once, bound to this config, with this start noted."""
                if not stores.own_is_open:
                    store = stores.open_own()  # checked above, before the lock
                    store.bind_config(plan.fingerprint, run_name, legacy=plan.legacy_fingerprints)
                    store.note_start(socket.gethostname(), os.getpid())  # a shard's node, in its own store

            if path.exists():
                bind_own_store()  # a changed config is refused before the server starts
            if sequential.enabled(cfg):
                bind_own_store()
                return _run_sequential(cfg, plan, stores)
            done = stores.done_game_ids()
            missing = planned - done
            log.info("%s: %d of %d games stored%s.", run_label(run_name, plan.shard), len(planned & done),
                     len(planned), f"; playing the {len(missing)} missing" if missing else ": nothing to play")
            if missing:
                if models:
                    log.info("Pre-flight: one request to each distinct model of the player(s) %s (players of one "
                             "model and settings share it).", ", ".join(models))
                    try:
                        probes = probe_models(models)
                    except PreflightError as err:
                        raise ConfigError(str(err)) from None
                    now.preflight = [probe.record() for probe in probes]
                    for probe in probes:
                        log.info("  %s answers as '%s'.", probe.player, printable(probe.completion.served_model or "?"))
                budget.load(stores.spend_by_player(), games_per_player(stores.games()))
                for request in now.preflight:  # this start's: in the store once it is bound, below
                    budget.spend_outside_games(request["player"], request["cost_usd"] or 0.0)
                log_name = "showdown.log" if plan.shard is None else f"showdown-shard-{plan.shard[0]}-of-{plan.shard[1]}.log"
                log.info("Starting the Showdown server%s.", "" if cfg.server.port is None else f" connection (port {cfg.server.port})")
                server = stack.enter_context(_server(cfg, run_dir / log_name))
                check_format(cfg.format, run_main(ask_format(server, cfg.format)), plan.settings.rolls)
                bind_own_store()
                stores.own.save_preflight(now.preflight)
                run_main(play_run(plan, stores, server, budget, now))
            else:
                bind_own_store()
        done = stores.done_game_ids()
        left = len(planned - done)
        raise_cap = budget.cap_to_play([s for s in plan.specs if s.game_id not in done])
        print(run_summary(stores, run_name, planned, now, cfg.get("anchor"), budget, _luck(cfg, stores), plan.shard),
              flush=True)
    stop = now.stop_reason
    if stop is not None and stop.kind is StopKind.BUDGET:
        setting, cap = raise_cap if raise_cap is not None else ("budget_usd", None)
        about = f" ({setting}={cap:g} would do: the spend so far and their expected cost, a tenth more)" if cap else ""
        raise RunStopped(f"The run stopped starting games: {stop.detail}. {left} game(s) are missing; "
                         f"raise the budget{about} and start again to play them.", exit_code=4,
                         resume={setting: f"{cap:g}"} if cap else None)
    if stop is not None:
        raise RunStopped(f"The run stopped at once: {stop.detail}\nNo retry can fix this; fix it and start "
                         f"again ({left} game(s) missing, the games in flight were voided).", exit_code=3)
    return left


def _luck(cfg: DictConfig, stores: RunStores, adjusted: bool = False) -> pd.DataFrame | None:
    """The luck rows of every stored game for the summary, with ``luck: true`` or a run that measured them
    (``sequential.interval: adjusted``: nothing is measured again); None otherwise."""
    games = stores.games()
    return run_luck(stores, games) if (adjusted or cfg.get("luck")) and len(games) else None


def _run_sequential(cfg: DictConfig, plan: RunPlan, stores: RunStores) -> int:
    """A sequential run (:mod:`pokebench.play.sequential`): each step plays through :func:`play_rounds`; it
    ends with the run's summary and why it stopped."""
    conf = sequential.read_config(cfg, list(cfg.players))
    now = ThisStart()
    matchups = list(dict.fromkeys((s.p1, s.p2) for s in plan.specs if s.game == 1))  # (A, B) in the run's order
    with _server(cfg, stores.run_dir / "showdown.log") as server:
        check_format(cfg.format, run_main(ask_format(server, cfg.format)), plan.settings.rolls)
        progress = Progress(0, 0, plan.name)  # one bar for the whole run: each step adds its games

        async def play(specs: list[GameSpec]) -> None:
            progress.plan_more(len(specs))
            await play_rounds(replace(plan, specs=specs), stores, server, now=now, progress=progress)

        def luck(games: pd.DataFrame) -> pd.DataFrame:
            return run_luck(stores, games)

        try:
            specs, why = sequential.run_sequential(plan.name, str(cfg.seed_text), matchups, conf, stores.run_dir,
                                                   stores.games, play,
                                                   luck=luck if conf.interval == "adjusted" else None,
                                                   rolls=plan.settings.rolls)
        finally:
            progress.close()
            for factory in plan.factories.values():
                if isinstance(factory, ExternalCompetitor):
                    asyncio.run(factory.shutdown())
    print(run_summary(stores, plan.name, {s.game_id for s in specs}, now, cfg.get("anchor"),
                      luck=_luck(cfg, stores, conf.interval == "adjusted")), flush=True)
    print(f"{plan.name}: {why}")
    return len({s.game_id for s in specs} - stores.done_game_ids())
