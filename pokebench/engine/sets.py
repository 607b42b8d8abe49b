"""The pinned server's random-battle sets: the table, and the opponent's unknown sets sampled from it.

The table is made by the pinned Showdown server's own team generator,
``Teams.generate(format, {seed})`` many times with fixed seeds, counting each set it produces
(``showdown-server/scripts/random_battle_sets.js``), so it holds exactly the sets our server deals.
Foul Play guesses from it (:mod:`pokebench.players.foul_play.sets` points Foul Play at it) and the
search bot samples from it. Its shape is the one Foul Play reads (``fp/data/sets/randbats.py``)::

    {"<species id>": {"<level>,<item>,<ability>,<move1>,<move2>,<move3>,<move4>,<tera type>": <count>}}

with every name a Showdown id, the moves sorted, and a cosmetic forme (Minior-Green) counted under
its species. A set with fewer than four moves (Ditto) is written without its tera type.

The table is cached in ``showdown-server/generated/random-battle-sets/`` (not committed) with a
small ``.meta.json`` beside it; it is made again when the pinned version or the number of teams
changes.

:class:`SetTable` samples what a player does not know about the opponent: for a Pokémon it has
seen, a set consistent with what was revealed (level, moves, item, ability, tera type); for one
it has not seen, a species (no species twice, as random battles deal them) and a set. The draws
come from the caller's ``random.Random``: the same generator state gives the same samples.
"""

from __future__ import annotations

import functools
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

from pokebench import paths
from pokebench.seeds import RANDOM_BATTLE_SETS_SEED_TEXT
from pokebench.showdown.errors import ServerError
from pokebench.showdown.node import run_script
from pokebench.showdown.server import check_installation, pinned_version

#: Teams generated per table: 20,000 teams are 120,000 sets (about 40 s once, cached).
DEFAULT_TEAMS = 20_000
SEED_TEXT = RANDOM_BATTLE_SETS_SEED_TEXT


def sets_dir() -> Path:
    """The folder of the cached tables."""
    return paths.generated_dir() / "random-battle-sets"


def sets_path(battle_format: str = "gen9randombattle", out_dir: Path | None = None) -> Path:
    """Where the table for `battle_format` is cached (Foul Play reads `<dir>/<format>.json`)."""
    return (out_dir or sets_dir()) / f"{battle_format}.json"


def generate(battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS) -> dict[str, dict[str, int]]:
    """The set table of `teams` teams from the pinned generator (needs the installed server)."""
    check_installation()
    try:
        return json.loads(run_script("random_battle_sets.js", battle_format, str(teams), SEED_TEXT))
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


@dataclass(frozen=True)
class RandomSet:
    """One set the generator deals: every name a Showdown id ("" tera type for a set without one)."""

    species: str
    level: int
    item: str  # "none" when it holds none
    ability: str
    moves: tuple[str, ...]
    tera_type: str


@dataclass(frozen=True)
class Revealed:
    """What a player has seen of one opposing Pokémon; None (or empty) where it has seen nothing."""

    species: str
    level: int | None = None
    moves: frozenset[str] = frozenset()
    item: str | None = None  # "none" once it is known to hold nothing
    ability: str | None = None
    tera_type: str | None = None


def _parse(species: str, key: str) -> RandomSet:
    level, item, ability, *rest = key.split(",")
    moves, tera = (rest[:-1], rest[-1]) if len(rest) > 4 else (rest, "")
    return RandomSet(species, int(level), item, ability, tuple(moves), tera)


class SetTable:
    """The sets of one format with their counts; samples consistent with what was revealed."""

    def __init__(self, table: dict[str, dict[str, int]]) -> None:
        self.sets: dict[str, list[tuple[RandomSet, int]]] = {
            species: [(_parse(species, key), count) for key, count in sorted(entries.items())]
            for species, entries in sorted(table.items())}
        self.species = sorted(self.sets)
        self.species_weights = [sum(c for _, c in self.sets[s]) for s in self.species]

    @classmethod
    def load(cls, battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS) -> SetTable:
        """The pinned server's table (made and cached first if needed), read once per process."""
        return _load(battle_format, teams)

    def candidates(self, seen: Revealed) -> list[tuple[RandomSet, int]]:
        """The sets of `seen`'s species that agree with everything revealed of it."""
        return [(s, c) for s, c in self.sets.get(seen.species, []) if _agrees(s, seen)]

    def consistent(self, seen: Revealed) -> tuple[list[tuple[RandomSet, int]], str]:
        """The sets (with counts) agreeing with what was revealed of `seen`, and "" or why with less than all of it.

        When no set agrees with all of it (a move the table never dealt with the rest, a species
        outside it), the constraints are dropped in this order until one agrees: the moves, the
        item, the ability, the tera type. Nothing for a species that is not in the table.
        """
        relaxed = seen
        for dropped in ("", "moves", "item", "ability", "tera_type"):
            if dropped:
                relaxed = _without(relaxed, dropped)
            found = self.candidates(relaxed)
            if found:
                return found, f"{seen.species}: no dealt set has all its revealed facts; sampled without {dropped}" if dropped else ""
        return [], f"{seen.species} is not in the random-battle set table"

    def sample_set(self, seen: Revealed, rng: random.Random) -> tuple[RandomSet | None, str]:
        """A set for `seen` drawn by count from :meth:`consistent`'s, and "" or why it agrees with less
        than everything revealed; None for a species that is not in the table."""
        found, why = self.consistent(seen)
        if not found:
            return None, why
        return rng.choices([s for s, _ in found], weights=[c for _, c in found])[0], why

    def sample_unseen(self, excluded: set[str], rng: random.Random) -> RandomSet:
        """A species not in `excluded` (ids, their base species included) and one of its sets."""
        pool = [(s, w) for s, w in zip(self.species, self.species_weights) if s not in excluded]
        species = rng.choices([s for s, _ in pool], weights=[w for _, w in pool])[0]
        entries = self.sets[species]
        return rng.choices([s for s, _ in entries], weights=[c for _, c in entries])[0]


def _agrees(candidate: RandomSet, seen: Revealed) -> bool:
    return ((seen.level is None or candidate.level == seen.level)
            and seen.moves <= set(candidate.moves)
            and (seen.item is None or candidate.item == seen.item)
            and (seen.ability is None or candidate.ability == seen.ability)
            and (seen.tera_type is None or candidate.tera_type == seen.tera_type))


def _without(seen: Revealed, fact: str) -> Revealed:
    empty: object = frozenset() if fact == "moves" else None
    return Revealed(**{**seen.__dict__, fact: empty})


@functools.lru_cache(maxsize=4)
def _load(battle_format: str, teams: int) -> SetTable:
    return SetTable(json.loads(ensure_sets(battle_format, teams).read_text()))
