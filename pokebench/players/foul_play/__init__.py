"""Foul Play (pmariglia/foul-play, GPL-3.0) as an external reference program; none of its code is here."""

from pokebench.players.foul_play.adapter import FoulPlay, FoulPlayError
from pokebench.players.foul_play.installation import Installation, check_engine, find_installation

__all__ = ["FoulPlay", "FoulPlayError", "Installation", "check_engine", "find_installation"]
