"""Foul Play (pmariglia/foul-play, GPL-3.0) as an external reference program; none of its code is here."""

from pokebench.players.foul_play.adapter import FoulPlay, FoulPlayError, find_installation

__all__ = ["FoulPlay", "FoulPlayError", "find_installation"]
