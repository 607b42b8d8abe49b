"""Playing a run: its seeded schedule of mirror pairs, the arena that plays them, and the runner."""

from pokebench.play.schedule import GameSpec, PairSeeds, build_schedule, expand_matchups, matchup_name, pair_seeds
from pokebench.play.arena import Arena, GameResult, HarnessError
from pokebench.play.runner import ConfigError, RunPlan, plan_run, run, available_runs

__all__ = ["GameSpec", "PairSeeds", "build_schedule", "expand_matchups", "matchup_name", "pair_seeds", "Arena", "GameResult", "HarnessError", "ConfigError", "RunPlan", "plan_run", "run", "available_runs"]
