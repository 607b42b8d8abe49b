"""The Heuristic bot: poke-env 0.16.1's own ``SimpleHeuristicsPlayer``, unchanged.

With PokéBench's hooks (:mod:`pokebench.player.bench_player`) it knows its own tera types
(poke-env's blind spot, fixed once for every player) and its use of the module-level
``random`` is seeded per game.
"""

from poke_env.player import SimpleHeuristicsPlayer

from pokebench.player.bench_player import BenchHooks


class HeuristicBot(BenchHooks, SimpleHeuristicsPlayer):
    pass
