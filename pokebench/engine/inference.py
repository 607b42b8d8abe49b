"""The opponent's sets inferred from what one player saw: the set table's counts as the prior, the battle as evidence.

Interface (the search bot and the analysis's player view use it through
:func:`pokebench.engine.from_battle.positions_from_battle`; other work builds on it)::

    belief = SetBelief.from_battle(table, battle, evidence=EVIDENCE)
    belief.weights(species) -> dict[RandomSet, float]    # one opposing Pokémon's sets, probabilities summing to 1
    belief.sample_set(species, rng) -> (RandomSet | None, why)   # a set drawn by weight; why: "" or what was relaxed
    belief.sample_unseen(excluded, rng) -> RandomSet     # a Pokémon not seen yet: the prior (nothing is known of it)
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
- ``"choice"``: two different moves in one stay on the field: no Choice item;
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
