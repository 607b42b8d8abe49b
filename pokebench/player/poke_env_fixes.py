"""One fix to poke-env 0.16.1 that every player needs.

poke-env never reads ``teraType`` from Showdown's request, so in random battles a
player's own Pokémon have ``tera_type = None`` and ``SimpleHeuristicsPlayer`` never
terastallizes. :func:`apply` wraps ``Pokemon.update_from_request`` once, for every
player in the process.
"""

from __future__ import annotations

from typing import Any, Dict

from poke_env.battle.pokemon import Pokemon
from poke_env.battle.pokemon_type import PokemonType

_original_update_from_request = Pokemon.update_from_request


def _update_from_request_with_tera(self: Pokemon, request_pokemon: Dict[str, Any]) -> None:
    _original_update_from_request(self, request_pokemon)
    tera = request_pokemon.get("terastallized") or request_pokemon.get("teraType")
    if tera and self._terastallized_type is None:
        self._terastallized_type = PokemonType.from_name(tera)


def apply() -> None:
    """Install the fix (idempotent)."""
    # poke-env makes the Pokémon objects itself, so the fix patches its class; mypy forbids assigning to a method
    Pokemon.update_from_request = _update_from_request_with_tera  # type: ignore[method-assign]
