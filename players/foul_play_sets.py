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

The file is cached in ``showdown-server/generated/foul-play-sets/`` (not committed) with a
small ``.meta.json`` beside it; it is made again when the pinned version or the number of
teams changes. Command line: ``python -m players.foul_play_sets [--teams N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
from pathlib import Path

from pokebench.server import PACKAGE_DIR, PINNED_VERSION, SERVER_DIR, check_installation

SETS_DIR = SERVER_DIR / "generated" / "foul-play-sets"
#: Teams generated per table: 20,000 teams are 120,000 sets (about 40 s once, cached).
DEFAULT_TEAMS = 20_000
SEED_TEXT = "pokebench-foul-play-sets"

# Runs in the npm package's folder; prints the table as JSON. Seeds: SHA-256 of SEED_TEXT:i.
_GENERATOR_JS = r"""
const crypto = require('crypto');
const {Teams} = require('./dist/sim/teams');
const {Dex} = require('./dist/sim/dex');
const [format, count, seedText] = [process.argv[1], parseInt(process.argv[2], 10), process.argv[3]];
const toID = s => String(s || '').toLowerCase().replace(/[^a-z0-9]+/g, '');
const table = {};
for (let i = 0; i < count; i++) {
  const seed = 'sodium,' + crypto.createHash('sha256').update(`${seedText}:${i}`).digest('hex').slice(0, 32);
  for (const set of Teams.generate(format, {seed})) {
    const moves = set.moves.map(toID).sort();  // the order is random; the set is the same
    const fields = [set.level || 100, toID(set.item) || 'none', toID(set.ability) || 'noability', ...moves];
    if (moves.length >= 4 && set.teraType) fields.push(toID(set.teraType));
    const dexSpecies = Dex.species.get(set.species);  // a cosmetic forme (Minior-Green) counts as its species
    const species = toID(dexSpecies.isCosmeticForme ? dexSpecies.baseSpecies : set.species);
    const key = fields.join(',');
    table[species] = table[species] || {};
    table[species][key] = (table[species][key] || 0) + 1;
  }
}
process.stdout.write(JSON.stringify(table));
"""


def sets_path(battle_format: str = "gen9randombattle", out_dir: Path = SETS_DIR) -> Path:
    """Where Foul Play's table for `battle_format` is cached (Foul Play reads `<dir>/<format>.json`)."""
    return out_dir / f"{battle_format}.json"


def generate(battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS) -> dict[str, dict[str, int]]:
    """The set table of `teams` teams from the pinned generator (needs the installed server)."""
    check_installation()
    proc = subprocess.run(["node", "-e", _GENERATOR_JS, battle_format, str(teams), SEED_TEXT], cwd=PACKAGE_DIR,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"Showdown's team generator failed for {battle_format}: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def ensure_sets(battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS, out_dir: Path = SETS_DIR) -> Path:
    """The cached table's path, made first if it is missing or from another version or size."""
    path = sets_path(battle_format, out_dir)
    meta_path = path.with_suffix(".meta.json")
    meta = {"format": battle_format, "showdown_version": PINNED_VERSION, "teams": teams, "seed_text": SEED_TEXT}
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
    parser = argparse.ArgumentParser(prog="python -m players.foul_play_sets", description=__doc__,
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
