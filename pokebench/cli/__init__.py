"""The console scripts: ``pokebench`` (play a run), ``pokebench-publish``, ``pokebench-server``, ``pokebench-replay``.

Each is also ``python -m pokebench.cli.<name>`` (and ``python -m pokebench`` for a run); ``python -m
pokebench.cli.prompt_sample 6`` prints what a model sees at turn 6 of a seeded game.
"""
