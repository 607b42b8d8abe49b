"""The console scripts: ``pokebench`` (play a run), ``pokebench-publish``, ``pokebench-server``, ``pokebench-replay``.

Each is also ``python -m pokebench.cli.<name>`` (and ``python -m pokebench`` for a run).
"""
