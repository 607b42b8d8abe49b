"""The prior of the opponent's unseen Pokémon (SetTable.sample_unseen): the pinned generator's team rules.

The rules are checked here on whole teams, counted afresh (not with the sampler's counters): at most 2 of a
type, 3 weak and 1 doubly weak to a type, 4 weak to Freeze-Dry, one level-100 Pokémon, no incompatible pair.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Sequence

import pytest

from pokebench.engine.sets import RandomSet, Revealed, SetTable
from pokebench.engine.team_rules import INCOMPATIBLE, Member, TeamCounts, allowed, profile, rule_species

pytestmark = pytest.mark.server  # the set table needs the pinned server installed (make setup)


@pytest.fixture(scope="module")
def table() -> SetTable:
    return SetTable.load()


def broken_rules(team: Sequence[Member]) -> list[str]:
    """The rules the whole `team` breaks, counted over all its members."""
    found = [profile(rule_species(m.species, m.item)) for m in team]
    counts = {"type": (Counter(t for p in found for t in p.types), 2),
              "weak": (Counter(t for p in found for t in p.weak), 3),
              "double weak": (Counter(t for p in found for t in p.double_weak), 1),
              "freeze-dry": (Counter(p.freeze_dry for p in found if p.freeze_dry), 4),
              "level 100": (Counter(m.level == 100 for m in team if m.level == 100), 1),
              "species clause": (Counter(p.base for p in found), 1)}
    broken = [name for name, (counter, limit) in counts.items() if any(n > limit for n in counter.values())]
    species = {m.species for m in team}
    if any(len(species & a) and len(species & b) and (a is not b or len(species & a) > 1) for a, b in INCOMPATIBLE):
        broken.append("compatible")
    return broken


def fill(table: SetTable, revealed: Sequence[Member], rng: random.Random) -> list[Member]:
    """`revealed` and unseen Pokémon drawn one by one until there are six, as the search bot draws them."""
    team = list(revealed)
    excluded = {m.species for m in team} | {profile(m.species).base for m in team}
    while len(team) < 6:
        drawn = table.sample_unseen(excluded, rng, team)
        excluded |= {drawn.species, profile(drawn.species).base}
        team.append(drawn)
    return team


def can_join(table: SetTable, team: Sequence[Member]) -> bool:
    """Whether some species of the table may join `team` under every rule."""
    counts = TeamCounts.of(team)
    bases = {profile(m.species).base for m in team}
    return any(profile(s).base not in bases and allowed(rule_species(s, found.item), found.level, counts)
               for s in table.species for found, _ in table.sets[s])


def test_weaknesses_ignore_immunities_as_the_generator_does() -> None:
    assert "poison" in profile("ferrothorn").weak  # Grass weak, Steel immune: +1
    assert "ground" not in profile("gyarados").weak  # Water neutral, Flying immune: 0
    assert profile("gyarados").double_weak == {"electric"}
    assert profile("toxapex").freeze_dry and not profile("ferrothorn").freeze_dry
    assert profile(rule_species("zamazenta", "rustedshield")).types == ("fighting", "steel")  # as the generator checks it
    assert rule_species("zamazenta", "lifeorb") == "zamazenta"


def test_unseen_pokemon_never_break_a_rule_when_one_could_join(table: SetTable) -> None:
    checked = 0
    for seed in range(300):
        rng = random.Random(seed)
        revealed = fill(table, [], rng)[: 1 + seed % 5]  # a team the rules allow, its first k shown
        team = list(revealed)
        for drawn in fill(table, revealed, rng)[len(revealed):]:
            if can_join(table, team):
                team.append(drawn)
                assert broken_rules(team) == [], (seed, [m.species for m in team])
                checked += 1
            else:
                team.append(drawn)
    assert checked > 800  # nearly every draw: the generator's rules can almost always be met


def test_a_team_with_two_water_types_never_gets_a_third(table: SetTable) -> None:
    revealed = [Revealed("pelipper", 86), Revealed("toxapex", 86)]
    for seed in range(200):
        team = fill(table, revealed, random.Random(seed))
        assert not any("water" in profile(m.species).types for m in team[2:]), [m.species for m in team]


def test_the_draws_are_reproducible_from_the_callers_generator(table: SetTable) -> None:
    revealed = [Revealed("garchomp", 77)]
    first = [fill(table, revealed, random.Random(seed)) for seed in range(20)]
    assert first == [fill(table, revealed, random.Random(seed)) for seed in range(20)]
    assert len({tuple(m.species for m in team) for team in first}) > 1


def test_when_no_species_may_join_the_rules_are_relaxed_and_a_species_is_still_drawn(table: SetTable) -> None:
    revealed = [Revealed("pelipper", 86), Revealed("toxapex", 86)]
    excluded = set(table.species) - {"gyarados"}  # a third Water type is all that is left
    drawn = table.sample_unseen(excluded, random.Random(0), revealed)
    assert isinstance(drawn, RandomSet) and drawn.species == "gyarados"
    with pytest.raises(ValueError):
        table.sample_unseen(set(table.species), random.Random(0), revealed)
