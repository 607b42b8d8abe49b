"""Random-battle set data for Foul Play, made by the pinned Showdown server's own team generator.

Foul Play guesses the hidden sets of the opponent's Pokémon from a table of random-battle
sets, which it downloads at its first battle (from pkmn.github.io, for the *current*
Showdown). PokéBench plays the pinned Showdown instead, offline, so we make that table
from the pinned generator itself: ``Teams.generate(format, {seed})`` many times with fixed
seeds, counting each set it produces. Foul Play then guesses from exactly the sets our
server deals, and needs no network.

The table has the shape Foul Play reads (``fp/data/sets/randbats.py``)::

    {"<species id>": {"<level>,<item>,<ability>,<move1>,<move2>,<move3>,<move4>,<tera type>": <count>}}

with every name as a Showdown id (lowercase letters and digits), the moves sorted, and a
cosmetic forme (Minior-Green) counted under its species (Foul Play looks a Pokémon up by its
name, then by its base species). A set with fewer than four
moves (Ditto) is written without its tera type: Foul Play takes fields 4 to 7 as moves.

The table is made by ``showdown-server/scripts/foul_play_sets.js`` and cached in
``showdown-server/generated/foul-play-sets/`` (not committed) with a
small ``.meta.json`` beside it; it is made again when the pinned version or the number of
teams changes. Command line: ``python -m pokebench.players.foul_play.sets [--teams N]``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from pokebench import paths
from pokebench.seeds import FOUL_PLAY_SETS_SEED_TEXT
from pokebench.showdown.errors import ServerError
from pokebench.showdown.node import run_script
from pokebench.showdown.server import check_installation, pinned_version
#: Teams generated per table: 20,000 teams are 120,000 sets (about 40 s once, cached).
DEFAULT_TEAMS = 20_000
SEED_TEXT = FOUL_PLAY_SETS_SEED_TEXT

def sets_dir() -> Path:
    """The folder of the cached tables."""
    return paths.generated_dir() / "foul-play-sets"


def sets_path(battle_format: str = "gen9randombattle", out_dir: Path | None = None) -> Path:
    """Where Foul Play's table for `battle_format` is cached (Foul Play reads `<dir>/<format>.json`)."""
    return (out_dir or sets_dir()) / f"{battle_format}.json"


def generate(battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS) -> dict[str, dict[str, int]]:
    """The set table of `teams` teams from the pinned generator (needs the installed server)."""
    check_installation()
    try:
        return json.loads(run_script("foul_play_sets.js", battle_format, str(teams), SEED_TEXT))
    except ServerError as err:
        raise RuntimeError(f"Showdown's team generator failed for {battle_format}: {err}") from err


def ensure_sets(battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS, out_dir: Path | None = None) -> Path:
    """The cached table's path, made first if it is missing or from another version or size."""
    out_dir = out_dir or sets_dir()
    path = sets_path(battle_format, out_dir)
    meta_path = path.with_suffix(".meta.json")
    meta = {"format": battle_format, "showdown_version": pinned_version(), "teams": teams, "seed_text": SEED_TEXT}
    try:
        if path.exists() and json.loads(meta_path.read_text()) == meta:
            return path
    except (OSError, ValueError):
        pass
    table = generate(battle_format, teams)
    out_dir.mkdir(parents=True, exist_ok=True)
    for target, content in ((path, table), (meta_path, meta)):
        temp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        temp.write_text(json.dumps(content, sort_keys=True))
        os.replace(temp, target)  # a concurrent reader never sees half a file
    return path


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
