"""Test helpers (not tests): shared game helpers, crashing bots, the Foul Play stand-in program."""
