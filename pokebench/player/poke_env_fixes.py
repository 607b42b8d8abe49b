"""Two changes to poke-env 0.16.1's ``Pokemon.update_from_request``, for every player in the process.

- **A fix.** poke-env never reads ``teraType`` from Showdown's request, so in random battles a player's own
  Pokémon have ``tera_type = None`` and ``SimpleHeuristicsPlayer`` never terastallizes.
- **A shortcut.** Every request lists each of the player's Pokémon with its moves, and poke-env adds each move
  again (``_add_move``: an id conversion and a walk through its move-set properties per move, 24 a request):
  about a fifth of a bot's Python time per turn. Where the list is the one of the Pokémon's last request and
  it is neither transformed nor mimicking, that walk can change nothing (its base moves only ever grow, and
  were given these ids then, or found them not storable), so the moves are not walked again. Everything else
  of the request is read as poke-env reads it.

:func:`apply` installs both (idempotent); :data:`POKE_ENV_UPDATE_FROM_REQUEST` is poke-env's own method, for
a measurement of poke-env as shipped (``benchmarks/bots_throughput.py``).
"""

from __future__ import annotations

from typing import Any, Dict

from poke_env.battle.pokemon import Pokemon
from poke_env.battle.pokemon_type import PokemonType

POKE_ENV_UPDATE_FROM_REQUEST = Pokemon.update_from_request


def _update_from_request(self: Pokemon, request_pokemon: Dict[str, Any]) -> None:
    last, moves = self._last_request, self._moves
    if (last and last.get("moves") == request_pokemon["moves"]
            and moves._transform_moves is None and moves._mimic_move is None):
        POKE_ENV_UPDATE_FROM_REQUEST(self, {**request_pokemon, "moves": ()})
        self._last_request = request_pokemon  # what poke-env keeps (a Pokémon's pokeball, an illusion's undoing)
    else:
        POKE_ENV_UPDATE_FROM_REQUEST(self, request_pokemon)
    tera = request_pokemon.get("terastallized") or request_pokemon.get("teraType")
    if tera and self._terastallized_type is None:
        self._terastallized_type = PokemonType.from_name(tera)


def apply() -> None:
    """Install the fix and the shortcut (idempotent)."""
    # poke-env makes the Pokémon objects itself, so they patch its class; mypy forbids assigning to a method
    Pokemon.update_from_request = _update_from_request  # type: ignore[method-assign]
