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
it has not seen, a species and a set by count among those the generator's team rules let join the
team so far (:mod:`pokebench.engine.team_rules`: no species twice, at most two of a type, three weak
to a type...). The draws come from the caller's ``random.Random``: the same generator state gives the same samples.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from pokebench import paths
from pokebench.engine.team_rules import RULES, Member, TeamCounts, allowed, profile, rule_species
from pokebench.seeds import RANDOM_BATTLE_SETS_SEED_TEXT
from pokebench.showdown.errors import ServerError
from pokebench.showdown.node import run_script
from pokebench.showdown.server import check_installation, pinned_version

#: Teams generated per table: 20,000 teams are 120,000 sets (about 40 s once, cached).
DEFAULT_TEAMS = 20_000
SEED_TEXT = RANDOM_BATTLE_SETS_SEED_TEXT
#: Draws from the whole table before sampling among the allowed species alone (:meth:`SetTable.sample_unseen`).
REJECTION_TRIES = 10


def sets_dir() -> Path:
    """The folder of the cached tables."""
    return paths.generated_dir() / "random-battle-sets"


def sets_path(battle_format: str = "gen9randombattle", out_dir: Path | None = None) -> Path:
    """Where the table for `battle_format` is cached (Foul Play reads `<dir>/<format>.json`)."""
    return (out_dir or sets_dir()) / f"{battle_format}.json"


def _run_generator(battle_format: str, teams: int, seed_text: str, *mode: str) -> Any:
    check_installation()
    try:
        return json.loads(run_script("random_battle_sets.js", battle_format, str(teams), seed_text, *mode))
    except ServerError as err:
        raise RuntimeError(f"Showdown's team generator failed for {battle_format}: {err}") from err


def generate(battle_format: str = "gen9randombattle", teams: int = DEFAULT_TEAMS) -> dict[str, dict[str, int]]:
    """The set table of `teams` teams from the pinned generator (needs the installed server)."""
    table: dict[str, dict[str, int]] = _run_generator(battle_format, teams, SEED_TEXT)
    return table


def generate_teams(seed_text: str, teams: int, battle_format: str = "gen9randombattle") -> list[list[RandomSet]]:
    """`teams` whole teams from the pinned generator on `seed_text` (team i from the seed the table's team i
    has on its own text), each in the generator's order: its lead first."""
    return [[_parse(species, key) for species, key in team]
            for team in _run_generator(battle_format, teams, seed_text, "teams")]


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
        self._variants = [_Variant.of(species, forme, entries) for species in self.species
                          for forme, entries in _by_forme(self.sets[species]).items()]
        self._cumulative = list(itertools.accumulate(v.weight for v in self._variants))

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

    def sample_unseen(self, excluded: set[str], rng: random.Random, team: Iterable[Member] = ()) -> RandomSet:
        """A species not in `excluded` (ids, their base species included) and one of its sets, drawn by count
        among the species the generator's rules let join `team` (the Pokémon already on it: revealed or drawn).

        The draw is the table's counts conditioned on the rules (:mod:`pokebench.engine.team_rules`): up to
        :data:`REJECTION_TRIES` draws from the whole table, the first one allowed kept; if none is, one from the
        allowed species alone (either way the same distribution). When no species is allowed (a team the
        generator cannot have dealt), the rules are dropped from the last until one is.
        """
        counts = TeamCounts.of(team)
        for _ in range(REJECTION_TRIES):
            variant = rng.choices(self._variants, cum_weights=self._cumulative)[0]
            if variant.joins(excluded, counts, len(RULES)):
                return variant.sample(rng)
        pool = self._unseen_pool(excluded, counts)
        return rng.choices(pool, weights=[v.weight for v in pool])[0].sample(rng)

    def unseen_species(self, excluded: set[str], team: Iterable[Member] = ()) -> dict[str, float]:
        """The probability of each species that :meth:`sample_unseen` may draw, exactly."""
        pool = self._unseen_pool(excluded, TeamCounts.of(team))
        total = sum(v.weight for v in pool)
        found: dict[str, float] = {}
        for variant in pool:
            found[variant.species] = found.get(variant.species, 0.0) + variant.weight / total
        return found

    @staticmethod
    def base(species: str) -> str:
        """The species' base species id (the species clause's unit: Ogerpon for Ogerpon-Wellspring)."""
        return profile(species).base

    def _unseen_pool(self, excluded: set[str], counts: TeamCounts) -> list[_Variant]:
        """The species' variants allowed to join, the rules dropped from the last until one is."""
        for rules in range(len(RULES), -1, -1):
            pool = [v for v in self._variants if v.joins(excluded, counts, rules)]
            if pool:
                return pool
        raise ValueError(f"every species of the set table is excluded: {sorted(excluded)}")


@dataclass(frozen=True)
class _Variant:
    """The sets of one species that the team rules see alike: one forme (Zamazenta-Crowned apart from Zamazenta)."""

    species: str
    forme: str
    level: int  # its most dealt set's: the generator's level rule reads the species' level
    entries: tuple[tuple[RandomSet, int], ...]
    weight: int

    @classmethod
    def of(cls, species: str, forme: str, entries: list[tuple[RandomSet, int]]) -> _Variant:
        return cls(species, forme, max(entries, key=lambda e: e[1])[0].level, tuple(entries), sum(c for _, c in entries))

    def joins(self, excluded: set[str], counts: TeamCounts, rules: int) -> bool:
        """Not excluded (nor its base species), and allowed by the first `rules` team rules."""
        return (self.species not in excluded and SetTable.base(self.species) not in excluded
                and allowed(self.forme, self.level, counts, rules))

    def sample(self, rng: random.Random) -> RandomSet:
        return rng.choices([s for s, _ in self.entries], weights=[c for _, c in self.entries])[0]


def _by_forme(entries: list[tuple[RandomSet, int]]) -> dict[str, list[tuple[RandomSet, int]]]:
    by_forme: dict[str, list[tuple[RandomSet, int]]] = {}
    for found, count in entries:
        by_forme.setdefault(rule_species(found.species, found.item), []).append((found, count))
    return by_forme


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
