"""The search engine inside PokéBench: positions from Showdown and from a player's view, poke-engine's search on them."""
