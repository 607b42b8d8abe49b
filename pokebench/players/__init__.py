"""Every competitor of PokéBench: each a poke-env ``Player`` named by a file in ``conf/player/``."""
