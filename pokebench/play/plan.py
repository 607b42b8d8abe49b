"""A run's config checked and turned into its plan (the list of games) before anything is played.

Everything that can be known from the config alone is checked here, and every
problem found is reported at once with the key and the fix: unknown keys, numbers
that must be positive, the seed text, the players (their class, options and names),
the matchups (no two that play the same games), the anchor. What only the server
can say (which formats it knows) is checked by :func:`check_format` once it runs,
still before the first game.

The plan's :attr:`RunPlan.fingerprint` is the run's identity: every resolved value
that changes the games (environment variables included), and none of the
operational settings (time-outs, retries, games in flight), so that raising a
time-out resumes a run while a different model or prompt is refused.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf
from poke_env.player import Player

from pokebench import paths
from pokebench.play import epochs, sequential
from pokebench.games import GameSpec
from pokebench.bars import plain_every
from pokebench.play.schedule import build_schedule, expand_matchups
from pokebench.seeds import ROLLS
from pokebench.player.bench_player import with_bench_hooks
from pokebench.player.hooks import PlayerMaker, Preflight, SupportsFormats
from pokebench.player.seats import ExternalCompetitor
from pokebench.showdown.server import pinned_version
from pokebench.util import parse_shard as util_parse_shard

__all__ = ["ConfigError", "RunPlan", "plan_run", "check_format", "available_runs", "player_factory",
           "current_target", "FINGERPRINT_VERSION", "OPERATIONAL_KEYS", "PLAYER_NAME_PATTERN"]

#: poke-env keyword arguments that the arena sets for every player.
ARENA_KWARGS = {"account_configuration", "server_configuration", "battle_format", "max_concurrent_battles",
                "start_timer_on_battle_start", "log_level", "start_listening"}

#: Version of the fingerprint's shape (1: the unresolved player configs of PokéBench before it).
FINGERPRINT_VERSION = 2

#: Player (and model) options that do not change a game: left out of the run's fingerprint.
OPERATIONAL_KEYS = frozenset({
    "timeout", "max_attempts", "backoff_base", "backoff_max", "retry_after_max", "max_in_flight", "log_dir",
    "login_attempts", "backoff", "checkout", "python", "api_key_env", "api_key_required", "prices", "runs_dir",
    "budget", "budget_usd", "max_cost", "max_cost_usd", "workers",
})

#: Player names go into game ids and Showdown user names: the plugin accepts only these characters.
PLAYER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")


class ConfigError(ValueError):
    """The run's config is wrong; the message names the key and the fix."""


def available_runs() -> list[str]:
    return sorted(p.stem for p in (paths.conf_dir() / "run").glob("*.yaml"))


def _allowed_keys() -> DictConfig:
    base = OmegaConf.load(paths.conf_dir() / "config.yaml")
    assert isinstance(base, DictConfig)
    return base


def check_keys(cfg: DictConfig) -> None:
    """Every key must be one config.yaml knows (Hydra lets a typo through with `+key=`)."""
    base = _allowed_keys()
    for key in cfg:
        if key not in base:
            known = ", ".join(str(k) for k in base if k not in ("defaults", "hydra"))
            raise ConfigError(f"Unknown config key '{key!s}'. Known keys: {known}.")
    for key in cfg.server:
        if key not in base.server:
            raise ConfigError(f"Unknown config key 'server.{key}'. Known keys: {', '.join('server.' + k for k in base.server)}.")


def parse_shard(value: object) -> tuple[int, int] | None:
    """``"I/N"`` -> (I, N) with 0 <= I < N; None for the whole run."""
    if value is None:
        return None
    try:
        return util_parse_shard(value)
    except ValueError:
        raise ConfigError(f"'shard' must look like I/N with 0 <= I < N (e.g. shard=0/4), not {value!r}.") from None


def _whole(value: Any, minimum: int = 1, maximum: float = math.inf) -> bool:
    """A whole number (not a bool, which YAML's true would give) from `minimum` to `maximum`."""
    return isinstance(value, int) and not isinstance(value, bool) and minimum <= value <= maximum


def _positive_int(cfg: DictConfig, key: str, minimum: int = 1) -> int:
    value = cfg[key]
    if not _whole(value, minimum):
        kind = "a positive whole number" if minimum == 1 else f"a whole number of at least {minimum}"
        raise ConfigError(f"'{key}' must be {kind}, not {value!r} (e.g. {key}=4).")
    return value


def _positive_seconds(value: Any, key: str) -> None:
    if value is None:  # an option left unset means the player's default
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
        raise ConfigError(f"'{key}' is a time-out in seconds and must be a positive number, not {value!r} "
                          f"(e.g. {key}=60).")


def _timeouts(tree: Any, prefix: str) -> Iterable[tuple[str, Any]]:
    """Every (dotted key, value) under `tree` whose key names a time-out."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            path = f"{prefix}.{key}"
            if isinstance(key, str) and (key == "timeout" or key.endswith("_timeout")):
                yield path, value
            yield from _timeouts(value, path)


def check_seed_text(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"'seed_text' must be a non-empty text (every seed of the run is derived from it), "
                          f"not {value!r}. Example: seed_text=pokebench-2026 (quote digits: seed_text=\"'2026'\").")
    return value


def check_rolls(value: Any) -> str:
    if value not in ROLLS:
        raise ConfigError(f"'rolls' must be {' or '.join(ROLLS)} (how each battle draws its random numbers; "
                          f"docs/method.md), not {value!r}. Example: rolls=duplicate.")
    return str(value)


def check_matchups(matchups: list[tuple[str, str]]) -> None:
    """[A, B] and [B, A] play the same seeded mirror pairs: listing both would count each game twice."""
    seen: dict[frozenset[str], tuple[str, str]] = {}
    for a, b in matchups:
        key = frozenset((a, b))
        if key in seen:
            first = seen[key]
            raise ConfigError(
                f"The matchups list {a} and {b} twice ({list(first)} and {[a, b]}): a matchup plays both sides "
                "of every mirror pair already, so the second would play the same games again and count them "
                "twice. List each pair of players once.")
        seen[key] = (a, b)


def check_server(server: DictConfig) -> None:
    """server.port: null (the embedded server) or a TCP port; server.sim_processes: null (one per usable CPU) or 1+."""
    port, sims = server.port, server.sim_processes
    if port is not None and not _whole(port, 1, 65535):
        raise ConfigError(f"'server.port' must be the port (1 to 65535) of a PokéBench server already running, or "
                          f"null to start the pinned server here, not {port!r}.")
    if sims is not None and not _whole(sims):
        raise ConfigError(f"'server.sim_processes' must be 1 or more (or null: one per usable CPU), not {sims!r}.")


def check_run_name(value: object) -> str:
    """The run's name as text. A run is one folder of runs/, and its name is what publish, analyse and a resume
    take: not a path."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # name=2026: the folder 2026
    if not isinstance(value, str):
        raise ConfigError(f"'name' must be a text, not {value!r}. Quote it: name=\"'{value}'\".")
    if not value.strip() or value in (".", "..") or any(c in value for c in "/\\\0"):
        fixed = re.sub(r"[/\\\0]+", "-", value).strip(" .-") or "my-run"
        raise ConfigError(
            f"Run name {value!r} cannot be used: a run is one folder of runs/, so its name has no '/' and is not "
            f"'.' or '..' (pokebench-publish and analyse take that name). Choose e.g. name={fixed}.")
    return value


def check_player_name(name: str) -> None:
    if not PLAYER_NAME_PATTERN.match(name):
        raise ConfigError(
            f"Player name {name!r} cannot be used: names go into game ids and Showdown user names, which take "
            "1 to 40 letters, digits, '_', '.' or '-'. Rename it in the run's `players` (e.g. "
            f"'{re.sub(r'[^A-Za-z0-9_.-]', '-', name)[:40] or 'player'}').")


@dataclass(frozen=True)
class RunSettings:
    """How the games of a run are played: the checked settings of its config that the runner reads."""

    seed_text: str
    battle_format: str
    turn_limit: int
    concurrency: int
    retry_rounds: int
    stall_timeout: float  # seconds without a battle message before a game is voided
    liveness_timeout: float  # seconds the server may take to answer the harness's ping
    rolls: str = "stock"  # how each battle draws its random numbers (pokebench.seeds.ROLLS)


@dataclass
class RunPlan:
    name: str
    specs: list[GameSpec]
    factories: dict[str, Callable[..., Any] | ExternalCompetitor]
    per_player_limits: dict[str, int]
    matchup_order: list[str]
    fingerprint: dict[str, Any]
    settings: RunSettings
    shard: tuple[int, int] | None = None
    #: The fingerprint as older PokéBench wrote it (before version 2; with a sequential run's stopping rule):
    #: a store bound to one is upgraded in place.
    legacy_fingerprints: list[dict[str, Any]] = field(default_factory=list)
    #: Player name -> the formats it can play (None: any format the server can generate teams for).
    supported_formats: dict[str, tuple[str, ...] | None] | None = None


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


def _player_class(name: str, player_cfg: Any) -> type:
    if not isinstance(player_cfg, DictConfig):
        raise ConfigError(f"Player '{name}' is {player_cfg!r}, not a player's config: add a player from conf/player/ "
                          f"with e.g. '+player@players.{name}=random', or give it a `_target_` and its options.")
    if "_target_" not in player_cfg:
        raise ConfigError(f"Player '{name}' has no `_target_` (the Player class to use), e.g. `_target_: pokebench.players.random_bot.RandomBot`.")
    try:
        cls = get_class(current_target(player_cfg._target_))
    except Exception as err:
        raise ConfigError(f"Player '{name}': cannot load class '{player_cfg._target_}' ({err}). "
                          "Check `_target_` in its conf/player/*.yaml.") from None
    if not (isinstance(cls, type) and issubclass(cls, (Player, ExternalCompetitor))):
        raise ConfigError(f"Player '{name}': `_target_: {player_cfg._target_}` is not a poke-env Player subclass "
                          "nor an ExternalCompetitor (pokebench.player.seats); point it at a player class.")
    return cls


def player_factory(name: str, player_cfg: DictConfig,
                   cls: type | None = None) -> tuple[Callable[..., Any] | ExternalCompetitor, int | None]:
    """A factory that makes a fresh player for one game, and the player's own games-in-flight limit."""
    cls = cls or _player_class(name, player_cfg)
    try:
        resolved = OmegaConf.to_container(player_cfg, resolve=True)
    except Exception as err:  # e.g. a missing ${oc.env:...} or a mandatory `???` value
        raise ConfigError(f"Player '{name}': its config cannot be resolved ({err}).") from None
    assert isinstance(resolved, dict)
    kwargs: dict[str, Any] = {str(k): v for k, v in resolved.items()}
    kwargs.pop("_target_")
    bad = set(kwargs) & ARENA_KWARGS
    if bad:
        raise ConfigError(f"Player '{name}' sets {sorted(bad)}, which the arena sets for every player; remove them.")
    unknown = [k for k in kwargs if k not in _keyword_options(cls)]
    if unknown:
        raise ConfigError(f"Player '{name}' ({cls.__name__}) takes no option(s) {unknown}; check its conf/player/*.yaml.")
    for key, value in _timeouts(kwargs, f"players.{name}"):
        _positive_seconds(value, key)
    for key, value in (("max_in_flight", kwargs.get("max_in_flight")),
                       ("model.max_in_flight", (kwargs.get("model") or {}).get("max_in_flight"))):
        if value is not None and not _whole(value):
            raise ConfigError(f"'players.{name}.{key}' must be 1 or more (its games in flight at once; null: no limit "
                              f"of its own), not {value!r}.")
    if isinstance(cls, Preflight):
        try:
            cls.preflight(**kwargs)
        except (ValueError, OSError, RuntimeError) as err:
            raise ConfigError(f"Player '{name}': {err}") from None
    if issubclass(cls, ExternalCompetitor):
        competitor = cls(**kwargs)
        return competitor, competitor.max_in_flight
    limit = kwargs.get("max_in_flight") or (kwargs.get("model") or {}).get("max_in_flight")
    assert issubclass(cls, Player)
    return PlayerMaker(with_bench_hooks(cls), kwargs), (int(limit) if limit else None)


def _keyword_options(cls: type) -> set[str]:
    """The keyword arguments a Player class takes; a `**kwargs` is taken to forward to poke-env's Player."""
    params = inspect.signature(cls).parameters.values()
    names = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    if any(p.kind is p.VAR_KEYWORD for p in params):
        names |= _keyword_options(Player)
    return names


def _identity(tree: Any) -> Any:
    """A resolved player config without its operational settings (see :data:`OPERATIONAL_KEYS`)."""
    if isinstance(tree, dict):
        return {k: _identity(v) for k, v in tree.items()
                if not (k in OPERATIONAL_KEYS or (isinstance(k, str) and k.endswith("_timeout")))}
    if isinstance(tree, list):
        return [_identity(v) for v in tree]
    return tree


def fingerprint(cfg: DictConfig, classes: dict[str, type]) -> dict[str, Any]:
    """What changes the run's games, resolved (see the module docstring)."""
    from pokebench.text.prompt import PROMPT_VERSION

    resolved = OmegaConf.to_container(cfg.players, resolve=True)
    assert isinstance(resolved, dict)
    players: dict[str, Any] = {str(name): conf for name, conf in resolved.items()}
    return {
        "version": FINGERPRINT_VERSION, "seed_text": cfg.seed_text, "format": cfg.format,
        "turn_limit": cfg.turn_limit, "showdown_version": pinned_version(), "prompt_version": PROMPT_VERSION,
        "players": {name: {"class": f"{classes[name].__module__}.{classes[name].__qualname__}",
                           **_identity({k: v for k, v in conf.items() if k != "_target_"})}
                    for name, conf in players.items()},
        **({} if cfg.rolls == "stock" else {"rolls": cfg.rolls}),  # a stock run's identity is as before the option
    }


def _progress_interval() -> None:
    try:
        plain_every()  # the environment's progress interval, checked before any game
    except ValueError as err:
        raise ConfigError(str(err)) from None


def _check_format_name(value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"'format' must name a Showdown format, e.g. format=gen9randombattle, not {value!r}.")


def _check_publish(value: Any) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"'publish' must be true (publish data/site/NAME/ when the run ends) or false, not {value!r}.")


class _Problems:
    """The config problems found so far: a run says everything wrong with its settings at once."""

    def __init__(self) -> None:
        self.found: list[str] = []

    def check(self, check: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`check(*args, **kwargs)`, or None with its ConfigError noted."""
        try:
            return check(*args, **kwargs)
        except ConfigError as err:
            self.found.append(str(err))
            return None

    def raise_any(self) -> None:
        if self.found:
            raise ConfigError("\n".join(dict.fromkeys(self.found)))


def _run_settings(cfg: DictConfig, run_name: str, problems: _Problems) -> tuple[RunSettings, int] | None:
    """The run's own settings (not its players') and `pairs`; None with their problems noted in `problems`."""
    problems.check(check_keys, cfg)
    problems.check(check_run_name, run_name)
    problems.check(_progress_interval)
    pairs = problems.check(_positive_int, cfg, "pairs")
    concurrency = problems.check(_positive_int, cfg, "concurrency")
    turn_limit = problems.check(_positive_int, cfg, "turn_limit")
    retry_rounds = problems.check(_positive_int, cfg, "retry_rounds", minimum=0)
    problems.check(_positive_seconds, cfg.get("stall_timeout"), "stall_timeout")
    problems.check(_positive_seconds, cfg.server.get("liveness_timeout"), "server.liveness_timeout")
    problems.check(check_server, cfg.server)
    seed_text = problems.check(check_seed_text, cfg.get("seed_text"))
    problems.check(_check_format_name, cfg.get("format"))
    rolls = problems.check(check_rolls, cfg.get("rolls"))
    problems.check(_check_publish, cfg.get("publish", True))
    if problems.found:
        return None
    return RunSettings(seed_text, cfg.format, turn_limit, concurrency, retry_rounds, float(cfg.stall_timeout),
                       float(cfg.server.liveness_timeout), rolls), pairs


def _matchups(cfg: DictConfig, names: list[str]) -> list[tuple[str, str]]:
    """The run's matchups (`matchups`: "all" or a list of pairs), checked."""
    try:
        listed = OmegaConf.to_object(cfg.matchups) if OmegaConf.is_config(cfg.matchups) else cfg.matchups
        if not isinstance(listed, (str, list)):
            raise ValueError(f"matchups must be 'all' or a list of [A, B] pairs, e.g. matchups=[[random,max-damage]], "
                             f"not {listed!r}")
        matchups = expand_matchups(names, listed)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    if not matchups:
        raise ConfigError("The run has no matchups: it needs at least two players.")
    check_matchups(matchups)
    return matchups


def plan_run(cfg: DictConfig, run_name: str) -> RunPlan:
    """Check the whole config and list the run's games, before anything is played: every problem found is said
    at once (the run's settings, its players and matchups; what depends on a setting found wrong is not checked)."""
    problems = _Problems()
    checked = _run_settings(cfg, run_name, problems)
    if not cfg.players:
        problems.found.append("The run has no players. Choose a run with `+run=NAME` (runs: "
                              + ", ".join(available_runs()) + ").")
        problems.raise_any()
    names = [str(name) for name in cfg.players]
    for name in names:
        problems.check(check_player_name, name)
    matchups = problems.check(_matchups, cfg, names)
    if cfg.publish is True and cfg.anchor not in names:
        problems.found.append(
            f"The anchor {cfg.anchor!r} is not a player of this run ({', '.join(names)}): its rating fixes the "
            "published scale. Set anchor=NAME to one of them, or publish=false and publish the run together with a "
            "run that has the anchor (pokebench-publish RUN1 RUN2).")
    factories: dict[str, Callable[..., Any] | ExternalCompetitor] = {}
    limits: dict[str, int] = {}
    classes: dict[str, type] = {}
    for name in names:  # check every player, so that one run says everything that is missing at once
        try:
            classes[name] = _player_class(name, cfg.players[name])
            formats = _supported_formats(classes[name])
            if formats is not None and cfg.format not in formats:
                raise ConfigError(f"format={cfg.format} cannot be played by every player: {name} plays only "
                                  f"{', '.join(formats)}. Choose a format they all support (PokéBench is built "
                                  "for format=gen9randombattle).")
            factories[name], limit = player_factory(name, cfg.players[name], classes[name])
        except ConfigError as err:
            problems.found.append(str(err))
            continue
        if limit:
            limits[name] = limit
    problems.raise_any()
    assert checked is not None and matchups is not None
    settings, pairs = checked
    seed_text, rolls = settings.seed_text, settings.rolls
    both_external = [f"{a}-vs-{b}" for a, b in matchups
                     if isinstance(factories[a], ExternalCompetitor) and isinstance(factories[b], ExternalCompetitor)]
    if both_external:
        raise ConfigError(f"Matchup(s) {', '.join(both_external)} put two external programs against each other; "
                          "they only accept challenges, so neither can start the game. Give each of them a poke-env "
                          "opponent in `matchups`.")
    supported = {name: _supported_formats(classes[name]) for name in names}
    specs = build_schedule(run_name, seed_text, pairs, matchups, rolls)
    shard = parse_shard(cfg.shard)
    if sequential.enabled(cfg) and shard is not None:
        raise ConfigError("'shard' and 'sequential.target_width' cannot be used together: each step of a "
                          "sequential run chooses its next pairs from all the results so far.")
    if shard is not None:  # whole mirror pairs go to one shard, so each store holds complete bootstrap units
        specs = [s for s in specs if s.pair % shard[1] == shard[0]]
    try:
        epochs.check_shards(factories, shard)
        epochs.check_runs(factories, seed_text, cfg.format)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    legacy = {
        "seed_text": str(cfg.seed_text), "format": cfg.format, "turn_limit": cfg.turn_limit,
        "players": OmegaConf.to_container(cfg.players, resolve=False), "showdown_version": pinned_version(),
    }
    identity = fingerprint(cfg, classes)  # `luck` (the summary's adjusted Elo) changes no game: not in it
    earlier: list[dict[str, Any]] = [legacy]
    luck = cfg.get("luck", False)
    if not isinstance(luck, bool):
        raise ConfigError(f"'luck' must be true (measure the luck of the run's games for its summary) or false, "
                          f"not {luck!r}.")
    if luck:
        check_luck_engine("'luck=true'")
    if sequential.enabled(cfg):  # its settings decide which games are played
        try:
            seq = sequential.read_config(cfg, names)
        except sequential.SequentialError as err:
            raise ConfigError(str(err)) from None
        if seq.interval == "adjusted":
            check_luck_engine("'sequential.interval=adjusted'")
        # the default interval stays out of the identity: a sequential run from before the setting keeps its own
        written = {k: v for k, v in seq.__dict__.items() if k != "anchor" and (k, v) != ("interval", "raw")}
        legacy["sequential"] = written
        earlier.append(dict(identity, sequential=written))
        # when to stop is not: a run stopped by its pair budget or target plays on with them raised, as it says
        identity["sequential"] = {k: v for k, v in written.items() if k not in sequential.STOPPING_RULE}
        capped = ["budget_usd"] * (cfg.get("budget_usd") is not None) + [
            f"players.{name}.model.budget_usd" for name in names
            if isinstance(cfg.players[name], DictConfig) and isinstance(cfg.players[name].get("model"), DictConfig)
            and cfg.players[name].model.get("budget_usd") is not None]
        if capped:  # its steps play through no budget: a cap would be ignored, and the spend unbounded
            raise ConfigError(f"A sequential run does not apply spending caps ({', '.join(capped)}): the cap would be "
                              "ignored. Drop it, or play a fixed number of pairs (without sequential.target_width), "
                              "where caps apply.")
        refining = epochs.refining(factories)
        if refining:
            raise ConfigError(f"Player(s) {refining} change between epochs of whole pairs of every matchup, which a "
                              "sequential run (more pairs for some matchups only) cannot keep fair. Play this run "
                              "without sequential.target_width.")
    return RunPlan(run_name, specs, factories, limits, [f"{a}-vs-{b}" for a, b in matchups],
                   identity, settings, shard, earlier, supported)


def check_luck_engine(setting: str) -> None:
    """A run measuring its games' luck (:mod:`pokebench.play.run_luck`) needs poke-engine: refused before any game
    without a usable one, with the command that builds it."""
    from pokebench.engine.check import EngineUnavailable, check_engine

    try:
        check_engine()
    except EngineUnavailable as err:
        raise ConfigError(f"{setting} measures the luck of the run's games with poke-engine, which this Python "
                          f"cannot use: {err} Or play the run without {setting}.") from None


def _supported_formats(cls: type) -> tuple[str, ...] | None:
    formats = cls.supported_formats if isinstance(cls, SupportsFormats) else None
    return tuple(formats) if formats is not None else None


def check_format(battle_format: str, info: dict[str, Any], rolls: str = "stock") -> None:
    """Refuse a format the running server does not know, or cannot make random singles teams for; and a run of
    duplicate rolls on a server that cannot play them.

    `info` is the plugin's answer to ``/pokebench format`` (see showdown-server/plugin/pokebench.js).
    """
    if rolls == "duplicate" and not info.get("duplicate_rolls"):
        raise ConfigError("rolls=duplicate: the Showdown server cannot play duplicate rolls (it was not started with "
                          "PokéBench's dist/sim/pokebench-duplicate-rolls.js preloaded). Run `pokebench-server "
                          "install` and start it through PokéBench (`pokebench-server start`, or no server.port), or "
                          "play rolls=stock.")
    if not info.get("exists"):
        near = info.get("similar") or []
        hint = f" Did you mean {', '.join(near)}?" if near else ""
        raise ConfigError(f"format={battle_format} is not a format of the pinned Showdown server "
                          f"({info.get('showdown_version', pinned_version())}).{hint} PokéBench plays "
                          "format=gen9randombattle.")
    if not info.get("random_teams") or info.get("game_type") != "singles":
        raise ConfigError(f"format={battle_format} ({info.get('name', battle_format)}) is not a random-team singles "
                          "format: PokéBench gives each side the team Showdown generates from its seed, so it plays "
                          "random battles only (format=gen9randombattle).")
