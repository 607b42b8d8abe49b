"""The opponent's sets inferred from what one player saw: the set table's counts as the prior, the battle as evidence.

Interface (the search bot and the analysis's player view use it through
:func:`pokebench.engine.from_battle.positions_from_battle`; other work builds on it)::

    belief = SetBelief.from_battle(table, battle, evidence=EVIDENCE)
    belief.weights(species) -> dict[RandomSet, float]    # one opposing Pokémon's sets, probabilities summing to 1
    belief.sample_set(species, rng) -> (RandomSet | None, why)   # a set drawn by weight; why: "" or what was relaxed
    belief.sample_unseen(excluded, rng, team) -> RandomSet   # a Pokémon not seen yet: the prior given the team so far
    belief.facts[species] -> Facts                       # the hard constraints and the checks found for it
    belief.fallbacks -> list[str]                        # Pokémon whose checks ruled out every set (then: constraints alone)

``table`` is the prior (:class:`~pokebench.engine.sets.SetTable`), ``battle`` the poke-env ``Battle``
of ONE side: only what that side's own protocol lines said (``battle._replay_data``, which poke-env
fills from every line it parses; poke-env 0.16.1 keeps no public copy) and its own team. It never
reads the opponent's hidden team: a side's ``Battle`` holds none of it. ``evidence`` names the kinds
of evidence used beyond the hard constraints (an ablation turns them off; ``frozenset()`` is the
table with the hard constraints alone):

- hard constraints (always): level, forme, every move used, ability and Tera type shown, and the
  item the Pokémon *started* with when a line shows it (held, eaten, knocked off, stolen or
  tricked away: the item it holds now may be another one);
- ``"hazards"``: switching in on Stealth Rock (or Spikes, when grounded) without damage: Heavy-Duty
  Boots (or Magic Guard...); taking the damage: not Boots;
- ``"life-orb"``: a damaging hit without Life Orb recoil: not Life Orb (unless Magic Guard or Sheer Force);
- ``"leftovers"``: damaged when the end of a turn began, staying in, and healed by nothing: not Leftovers
  (nor Black Sludge; not used under Grassy Terrain or Heal Block);
- ``"choice"``: two different moves in one stay on the field: no Choice item;
- ``"regenerator"``: back on the field with a third more HP than it left with: Regenerator (which heals at the
  switch-out without a line); with the HP it left with: not Regenerator;
- ``"speed"``: who moved first when both sides used a move of the same priority: the set's speed
  (its level, random battles' 85 EVs and 31 IVs, neutral nature; 0 and 0 for Trick Room and Gyro
  Ball sets, as the pinned generator deals them) times its item (Choice Scarf), ability (weather,
  Unburden...) and what the battle shows (boosts, paralysis, Tailwind, Trick Room), against our own
  exact speed. A speed tie allows either order; a turn with a Quick Claw, Custap Berry, Quick Draw,
  After You, Quash or Instruct, or whose modifiers it cannot know, is not used.

Every check is hard: a set it rules out gets weight 0 and is never sampled. The item checks are
used only while the Pokémon still holds the item it started with (no item line about it yet).
If the checks rule out every set the constraints allow (a mechanic the checks do not model), the
Pokémon's sets are weighted by the constraints alone and it is counted in ``fallbacks``.
"""

from __future__ import annotations

import random
from typing import Iterable

from poke_env.battle import AbstractBattle

from pokebench.engine.evidence import EVIDENCE, Check, Facts, read_facts
from pokebench.engine.sets import RandomSet, Revealed, SetTable
from pokebench.engine.speed import dex, to_id
from pokebench.engine.team_rules import Member

__all__ = ["EVIDENCE", "Check", "Facts", "SetBelief"]


class SetBelief:
    """The opponent's sets as one player can infer them (module docstring)."""

    def __init__(self, table: SetTable, facts: dict[str, Facts], evidence: frozenset[str] = EVIDENCE) -> None:
        self.table = table
        self.facts = facts
        self.evidence = frozenset(evidence)
        unknown = self.evidence - EVIDENCE
        if unknown:
            raise ValueError(f"unknown kinds of evidence {sorted(unknown)}; the kinds are {sorted(EVIDENCE)}")
        self.fallbacks: list[str] = []
        self.relaxed: dict[str, str] = {}
        self._weights: dict[str, dict[RandomSet, float]] = {}

    @classmethod
    def from_battle(cls, table: SetTable, battle: AbstractBattle, evidence: frozenset[str] = EVIDENCE) -> SetBelief:
        """The belief of the player whose ``Battle`` this is: its own lines and team only."""
        return cls(table, read_facts(battle), evidence)

    def weights(self, species: str) -> dict[RandomSet, float]:
        """The probability of each set of the opposing `species` given the evidence ({} outside the table)."""
        if species not in self._weights:
            self._weights[species] = self._infer(species)
        return self._weights[species]

    def _infer(self, species: str) -> dict[RandomSet, float]:
        facts = self.facts.get(species) or Facts(Revealed(species))
        allowed, why = self._allowed(facts.revealed)
        if why:
            self.relaxed[species] = why
        checks = [c for c in facts.checks if c.kind in self.evidence]
        kept = [(s, n) for s, n in allowed if all(c.test(s) for c in checks)]
        if not kept and allowed:
            self.fallbacks.append(f"{species}: the evidence ({'; '.join(c.why for c in checks)}) rules out every "
                                  "set; weighted by the revealed facts alone")
            kept = allowed
        total = sum(n for _, n in kept)
        return {s: n / total for s, n in kept} if total else {}

    def _allowed(self, seen: Revealed) -> tuple[list[tuple[RandomSet, int]], str]:
        """The sets agreeing with the revealed facts, relaxed as :meth:`SetTable.sample_set` relaxes them."""
        species = seen.species
        if species not in self.table.sets:  # a forme the generator does not deal (Palafin-Hero): its base species
            entry = dex().pokedex.get(species, {})
            base = to_id(entry.get("baseSpecies", species))
            seen = Revealed(**{**seen.__dict__, "species": base})
        return self.table.consistent(seen)

    def sample_set(self, species: str, rng: random.Random) -> tuple[RandomSet | None, str]:
        """A set of the opposing `species` drawn by weight, and "" or which revealed fact no set agreed with."""
        weights = self.weights(species)
        if not weights:
            return None, f"{species} is not in the random-battle set table"
        chosen = rng.choices(list(weights), weights=list(weights.values()))[0]
        return chosen, self.relaxed.get(species, "")

    def sample_unseen(self, excluded: set[str], rng: random.Random, team: Iterable[Member] = ()) -> RandomSet:
        """A Pokémon not seen yet: nothing of it is known but which species it is not and the team it joins
        (the prior: the table's counts under the generator's team rules, :meth:`SetTable.sample_unseen`)."""
        return self.table.sample_unseen(excluded, rng, team)
