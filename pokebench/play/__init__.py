"""Playing a run: its seeded schedule of mirror pairs, the arena that plays them, and the runner."""

from pokebench.games import GameSpec
from pokebench.play.schedule import build_schedule, expand_matchups, matchup_name
from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.play.plan import ConfigError, RunPlan, plan_run, available_runs, check_format
from pokebench.play.lock import RunLock, RunLockedError
from pokebench.play.runner import run

__all__ = ["GameSpec", "build_schedule", "expand_matchups", "matchup_name", "Arena", "GameResult", "HarnessError", "ConfigError", "RunPlan", "plan_run", "check_format", "run", "available_runs", "RunLock", "RunLockedError"]
