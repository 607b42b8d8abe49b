"""Foul Play's random-battle set table: the pinned server's own (:mod:`pokebench.engine.sets`).

Foul Play guesses the hidden sets of the opponent's Pokémon from a table of random-battle
sets, which it downloads at its first battle (from pkmn.github.io, for the *current*
Showdown). PokéBench plays the pinned Showdown instead, offline, so it gives Foul Play the
table made from the pinned generator itself, the one the search bot samples from: Foul Play
then guesses from exactly the sets our server deals, and needs no network. Foul Play looks a
Pokémon up by its name, then by its base species; it takes fields 4 to 7 of a set as moves.

Command line: ``python -m pokebench.players.foul_play.sets [--teams N]``.
"""

from __future__ import annotations

import argparse
import json

from pokebench.engine.sets import DEFAULT_TEAMS, SEED_TEXT, ensure_sets, generate, sets_dir, sets_path

__all__ = ["DEFAULT_TEAMS", "SEED_TEXT", "ensure_sets", "generate", "sets_dir", "sets_path", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pokebench.players.foul_play.sets", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", default="gen9randombattle")
    parser.add_argument("--teams", type=int, default=DEFAULT_TEAMS)
    args = parser.parse_args(argv)
    path = ensure_sets(args.format, args.teams)
    table = json.loads(path.read_text())
    print(f"{path}: {len(table)} species, {sum(len(s) for s in table.values())} distinct sets")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
