"""Every seed PokéBench derives, in one place.

- A run's games: pair *k* of a run gets three Showdown PRNG seeds derived with SHA-256 from the run's seed
  text (:func:`derive_seed`, :func:`pair_seeds`): the battle seed and one team seed per side. They are the same
  in every matchup of the run. With the run's ``rolls: duplicate`` the battle seed ends in ``,duplicate``
  (:data:`ROLLS`).
- A player's own randomness in one game (:func:`player_rng`): seeded from that game's battle seed, the side's
  team seed and the side, so a bot that draws random numbers plays the same game again from the same seeds.
- The random-battle set table (``showdown-server/scripts/random_battle_sets.js``; Foul Play's guesses and the
  search bot's samples): team *i* of the table is generated from
  ``sodium,<first 32 hex digits of SHA-256("<seed text>:<i>")>``, with the seed text
  :data:`RANDOM_BATTLE_SETS_SEED_TEXT`; the script computes it in Node.js.
- The search bot's samples of the opponent's unknown sets: from the player's own randomness (:func:`player_rng`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

__all__ = ["SEED_ROLES", "ROLLS", "derive_seed", "PairSeeds", "pair_seeds", "player_rng",
           "RANDOM_BATTLE_SETS_SEED_TEXT"]

SEED_ROLES = ("battle", "p1team", "p2team")
#: How a battle draws its random numbers. ``stock``: Showdown's one stream, in the order the draws are asked
#: for. ``duplicate``: a stream for each Pokémon's k-th move and each kind of draw, so that the two games of
#: a mirror pair (the teams stay with their side) get the same roll for the same event
#: (``showdown-server/plugin/duplicate-rolls.js``, loaded by every node process PokéBench starts). Each game
#: alone is an ordinary random battle either way; the flag is a suffix of the battle seed, so the input log
#: replays the game.
ROLLS = ("stock", "duplicate")
DUPLICATE_FLAG = ",duplicate"
#: Named when only Foul Play read the table; kept so that the table stays the same.
RANDOM_BATTLE_SETS_SEED_TEXT = "pokebench-foul-play-sets"


def derive_seed(seed_text: str, pair: int, role: str) -> str:
    """Showdown PRNG seed for one role of pair `pair`: ``sodium,<first 32 hex digits of SHA-256>``."""
    digest = hashlib.sha256(f"pokebench|{seed_text}|pair={pair}|{role}".encode()).hexdigest()
    return f"sodium,{digest[:32]}"


@dataclass(frozen=True)
class PairSeeds:
    battle_seed: str
    p1_team_seed: str
    p2_team_seed: str


def pair_seeds(seed_text: str, pair: int, rolls: str = "stock") -> PairSeeds:
    """The three seeds of pair `pair` (the same in every matchup of the run); `rolls` is one of :data:`ROLLS`."""
    if rolls not in ROLLS:
        raise ValueError(f"rolls must be one of {', '.join(ROLLS)}, not {rolls!r}")
    battle, p1_team, p2_team = (derive_seed(seed_text, pair, role) for role in SEED_ROLES)
    return PairSeeds(battle + (DUPLICATE_FLAG if rolls == "duplicate" else ""), p1_team, p2_team)


def player_rng(battle_seed: str, team_seed: str, side: str) -> random.Random:
    """The random number generator a player uses in one game (``BenchPlayer.rng``)."""
    return random.Random(f"{battle_seed}|{team_seed}|{side}")
