"""What a competitor author sees: ``BenchPlayer`` and its hooks, the game context, seats and external programs."""

from pokebench.player.bench_player import BenchPlayer, BenchHooks, GameContext, with_bench_hooks
from pokebench.player.faults import HarnessFault
from pokebench.player.seats import Seat, PokeEnvSeat, ExternalCompetitor, showdown_username

__all__ = ["BenchPlayer", "BenchHooks", "GameContext", "with_bench_hooks", "Seat", "PokeEnvSeat", "ExternalCompetitor", "showdown_username", "HarnessFault"]
