"""What a search of a decision depends on: the settings and the engine's version (no engine needed to read them)."""

from __future__ import annotations

from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

__all__ = ["Settings", "ANALYSIS_VERSION", "LUCK_VERSION", "ACTION_WEIGHT", "SKILL_WEIGHT", "SKILL_SHIFTS",
           "engine_version"]

#: Bumped when what is searched changes (the bridge, the views; 2: the player view infers sets from the
#: battle, pokebench/engine/inference.py; 3: the player view reads what poke-env does not keep from the lines,
#: pokebench/engine/battle_lines.py, and the full information keeps a fainted Pokémon's Terastallization spent;
#: 4: the player view takes an item a line showed the opponent lose as gone (it was drawn again), heals an
#: opponent's benched Regenerator (inferred from the HP it comes back with), searches a Ditto as what it copied,
#: gives a Light Clay's screens 8 turns, counts timed conditions by ends of turn and has both sides replace a double
#: knock-out at once, the full information keeps a move still to come after the other side's pivot, Protects in a row, and the
#: stat a Quark Drive or Protosynthesis boosts):
#: older cached searches are not reused.
ANALYSIS_VERSION = 4
#: Bumped when what the luck of a turn is changes (pokebench/analysis/luck.py): older cached luck is not reused.
#: 3: the action luck of bots that record their policy; 4: full-information states keep a fainted Pokémon's
#: Terastallization spent and give Taunt, Encore and a lock the engine's counts; 5: a turn spent recharging is valued
#: (the recharging side takes no action); 6: full-information states keep Protects in a row (a Protect's chance) and
#: the stat a Quark Drive or Protosynthesis boosts.
LUCK_VERSION = 6
#: The weight of the action term in a turn's luck (pokebench/analysis/luck.py): any fixed weight keeps the adjusted
#: score unbiased; this one is the least-variance weight on bot games of the fit's own seeds
#: (``benchmarks/luck_validation.py --seed-text pokebench-luck-fit``), checked on held-out seeds (docs/analysis.md):
#: at weight 1 the term, whose Q sees one turn ahead, added variance there. Part of the luck cache's key.
ACTION_WEIGHT = 0.4
#: The skill shift (pokebench/analysis/luck_rows.py): V's log-odds for side one are raised by SKILL_WEIGHT × the
#: log-odds of side one's player's score in the other mirror pairs of its matchup, times the share of HP left at the
#: turn. Any shift that does not depend on the game's own chance keeps the adjusted score unbiased; this weight is the
#: least-variance one on the fit's own seeds (``benchmarks/luck_skill_shift.py``), checked on held-out ones.
SKILL_WEIGHT = 1.5
#: The game-level shifts (log-odds) each game's luck is measured at and cached for: the game's own shift is rounded to
#: the nearest. ±6 is SKILL_WEIGHT × the log-odds of a score of 0.02 or 0.98, where the shift stops.
SKILL_SHIFTS = tuple(x / 2 for x in range(-12, 13))


@dataclass(frozen=True)
class Settings:
    """What a search of a decision depends on (the cache's key with the engine version)."""

    iterations: int = 1000  # MCTS iterations per state, for every player the same
    samples: int = 4  # sampled positions of the player's information

    def __post_init__(self) -> None:
        if self.iterations < 1 or self.samples < 1:
            raise ValueError(f"the analysis needs iterations >= 1 and samples >= 1, not {self}")

    @property
    def key(self) -> str:
        return f"iterations={self.iterations},samples={self.samples},analysis={ANALYSIS_VERSION}"


def engine_version() -> str:
    """``poke-engine <version>``, or "" when poke-engine is not installed."""
    try:
        return f"poke-engine {version('poke-engine')}"
    except PackageNotFoundError:
        return ""
