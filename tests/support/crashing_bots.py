"""Bots for fault tests, loaded by runs through `+players.NAME._target_=crashing_bots.CLASS`."""

from __future__ import annotations

import asyncio
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


class AlwaysCrashBot(BenchPlayer):
    """Raises in every decision: its games can never finish."""

    def choose_move(self, battle):
        raise RuntimeError("deliberate crash, every time")


class SlowBot(BenchPlayer):
    """Plays randomly, 0.2 s per decision: its games are surely in flight when a fault is injected."""

    async def choose_move(self, battle):
        await asyncio.sleep(0.2)
        return self.rng.choice(battle.valid_orders)


class HeldBot(BenchPlayer):
    """Plays randomly, but holds every decision while the file named by $HOLD_FILE exists: its run is surely
    still playing, however loaded the machine, until the test removes that file."""

    async def choose_move(self, battle):
        hold = Path(os.environ["HOLD_FILE"])
        while hold.exists():
            await asyncio.sleep(0.1)
        return self.rng.choice(battle.valid_orders)
