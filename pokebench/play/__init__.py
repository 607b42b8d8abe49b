"""Playing a run: its seeded schedule of mirror pairs, the arena that plays them, and the runner."""

from pokebench.play.schedule import GameSpec, build_schedule, expand_matchups, matchup_name
from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.play.runner import ConfigError, RunPlan, plan_run, run, available_runs

__all__ = ["GameSpec", "build_schedule", "expand_matchups", "matchup_name", "Arena", "GameResult", "HarnessError", "ConfigError", "RunPlan", "plan_run", "run", "available_runs"]
