"""The Continual Harness competitor: an LLM player that refines its own harness during a run."""

from pokebench.players.continual.player import ContinualHarnessPlayer

__all__ = ["ContinualHarnessPlayer"]
