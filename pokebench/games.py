"""A planned game (:class:`GameSpec`): shared by the schedule that makes it, the seats that play it and
the store that records it, so it lives on the bottom floor beside :mod:`pokebench.seeds`."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GameSpec"]


@dataclass(frozen=True)
class GameSpec:
    """One planned game: which players sit on which side, with which seeds."""

    run: str
    matchup: str
    pair: int
    game: int  # 1: player A on side 1; 2: player B on side 1
    p1: str
    p2: str
    battle_seed: str
    p1_team_seed: str
    p2_team_seed: str

    @property
    def game_id(self) -> str:
        return f"{self.matchup}.p{self.pair:04d}.g{self.game}"
