"""PokéBench: how well AI models play Pokémon battles."""
