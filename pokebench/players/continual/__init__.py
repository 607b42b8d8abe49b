"""The Continual Harness competitor: an LLM player that refines its own harness between epochs of a run."""

from pokebench.players.continual.harness import Budgets, Harness, MemoryEntry, Skill, SubAgent, harness_block
from pokebench.players.continual.player import ContinualHarnessPlayer
from pokebench.players.continual.refiner import REFINER_MARKER, Refinement, RefinementFailed, refine
from pokebench.players.continual.refining import HarnessRefiner
from pokebench.players.continual.versions import HarnessFiles, Snapshot, State

__all__ = ["Budgets", "ContinualHarnessPlayer", "HarnessFiles", "HarnessRefiner", "Harness", "MemoryEntry",
           "REFINER_MARKER", "Refinement", "RefinementFailed", "Skill", "Snapshot", "State", "SubAgent",
           "harness_block", "refine"]
