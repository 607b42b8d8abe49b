"""Bots for fault tests, loaded by runs through `+players.NAME._target_=crashing_bots.CLASS`."""

from __future__ import annotations

import os
from pathlib import Path

from pokebench.player.bench_player import BenchPlayer


class CrashOnceBot(BenchPlayer):
    """Raises in its first decision of the first game it plays in a folder, then plays randomly."""

    def choose_move(self, battle):
        marker = Path(os.environ["CRASH_MARKER"])
        if not marker.exists():
            marker.write_text(self.game.game_id)
            raise RuntimeError("deliberate crash for a test")
        return self.rng.choice(battle.valid_orders)
