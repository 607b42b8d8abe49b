"""The search engine inside PokéBench: positions from Showdown and from a player's view, poke-engine's search on them.

- :mod:`~pokebench.engine.position` a position in PokéBench's own words (Showdown ids);
- :mod:`~pokebench.engine.from_battle` a player's information from its poke-env ``Battle``, unknowns sampled
  from :mod:`~pokebench.engine.sets` (the pinned server's random-battle sets);
- :mod:`~pokebench.engine.from_showdown` full information at a stored decision: the game replayed in the pinned
  simulator (``showdown-server/scripts/positions.js``), Showdown's own state of both sides;
- :mod:`~pokebench.engine.from_messages` a player's information at a stored decision: its ``Battle`` rebuilt from
  its own protocol lines by poke-env's parsing;
- :mod:`~pokebench.engine.damage_check` the engine's damage checked against what Showdown dealt;
- :mod:`~pokebench.engine.state` a position as a poke-engine ``State`` (names checked by
  :mod:`~pokebench.engine.names`; what it cannot represent: ``APPROXIMATIONS``);
- :mod:`~pokebench.engine.search` MCTS on one position or averaged over samples (no seed);
- :mod:`~pokebench.engine.check` poke-engine 0.0.48 built for Gen 9 with Terastallization, or the command that builds it;
- :mod:`~pokebench.engine.errors` ``EngineError`` and the guard that turns the engine's panics into it.

Only ``check``, ``errors``, ``position`` and ``sets`` import without poke-engine installed.
"""
