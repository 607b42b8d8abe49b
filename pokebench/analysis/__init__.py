"""Decision quality: every stored decision of every player scored against poke-engine's search.

- :mod:`pokebench.analysis.scoring`: one game's decisions searched from both views (full
  information; the player's own information, the headline), the engine's value of each action;
- :mod:`pokebench.analysis.cache`: the searches of a run, kept in ``runs/NAME/decision_quality.jsonl``
  per (game, decision, engine version, settings), so that a re-publish searches nothing again;
- :mod:`pokebench.analysis.quality`: the published rows (regret, agreement, blunder) from them;
- :mod:`pokebench.analysis.analyse`: ``pokebench analyse RUN``, in parallel over games.

It reads the store and writes its own file; publishing reads that file (config → play → store →
analysis → publish → site).
"""
