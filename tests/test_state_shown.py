"""The state a model reads where poke-env's battle state departs from what Showdown showed, each from a recorded game.

The games (``tests/data/state-games.json``) are bot games of the long text corpus
(``benchmarks/battle_text_oracle.py``, run ``text-oracle-mechanics``), replayed through the pinned simulator;
each side's messages are rebuilt as the LLM player builds them (``tests/support/recorded.py``).
"""

from __future__ import annotations

import pytest

from support.recorded import at_turn, messages, section
from pokebench import paths

pytestmark = [pytest.mark.server, pytest.mark.skipif(not (paths.text_oracle_dir() / "node_modules" / "@pkmn" / "view").is_dir(),
                                reason="the replay needs the pinned simulator and the oracle's packages: `make test` installs them")]


def opponent(message: str) -> str:
    return section(message, "\nOPPONENT", "\n\n")


def test_illusion_broken_the_disguise_is_unseen_and_its_moves_are_the_wearers() -> None:
    """Zoroark-Hisui came in as Great Tusk, used Bitter Malice, and was unmasked by Surf (turn 17)."""
    decisions = messages("max-damage-vs-heuristic.p0004.g1", "p1")
    disguised = opponent(at_turn(decisions, 17).message)
    assert disguised.startswith(" (Player 2):\n- Great Tusk [ACTIVE]") and "2 Pokémon not seen yet" in disguised
    unmasked = opponent(at_turn(decisions, 18).message)
    assert "- Zoroark-Hisui [ACTIVE], Normal/Ghost, L80, HP 43%\n  Moves seen: Bitter Malice\n" in unmasked
    assert "Great Tusk" not in unmasked and unmasked.endswith("Dewgong fainted; 2 Pokémon not seen yet")
    real = opponent(at_turn(decisions, 20).message)  # the real Great Tusk came in: its own moves only
    assert "- Great Tusk [ACTIVE], Ground/Fighting, L77, HP 100%\n  Moves seen: none yet\n" in real
    assert "Zoroark-Hisui fainted; 1 Pokémon not seen yet" in real


def test_a_status_orb_shows_the_item() -> None:
    """|-status|p1a: Hariyama|brn|[from] item: Flame Orb: the opponent's Hariyama holds a Flame Orb."""
    decisions = messages("max-damage-vs-heuristic.p0004.g1", "p2")
    entry = next(opponent(d.message) for d in decisions if "Hariyama [ACTIVE]" in opponent(d.message)
                 and "burned" in opponent(d.message))
    assert "- Hariyama [ACTIVE], Fighting, L87, HP" in entry and "\n  Item: Flame Orb\n" in entry


def test_poltergeist_shows_the_targets_item() -> None:
    """|-activate|p2a: Toedscruel|move: Poltergeist|Leftovers."""
    decisions = messages("random-vs-max-damage.p0006.g2", "p1")
    entry = next(opponent(d.message) for d in decisions if "Toedscruel [ACTIVE]" in opponent(d.message)
                 and "Poltergeist" in d.message.split("\n\nSTATE NOW")[0] and "Toedscruel" in d.message.split("STATE NOW")[0])
    assert "Item: Leftovers" in entry.split("Toedscruel [ACTIVE]")[1].split("\n- ")[0]


def test_the_players_own_trace_shows_the_ability_it_copied() -> None:
    """|-ability|p2a: Gardevoir|Defiant|Trace|[from] ability: Trace|[of] p1a: Bisharp."""
    decisions = messages("max-damage-vs-heuristic.p0005.g1", "p2")
    traced = next(i for i, d in enumerate(decisions) if "[Gardevoir's Trace]" in d.message)
    entry = opponent(decisions[traced].message)
    assert "- Bisharp [ACTIVE], Dark/Steel, L79" in entry and "\n  Ability: Defiant\n" in entry


def test_a_temporary_forme_is_shown() -> None:
    """|-formechange|p2a: Minior|Minior-Meteor||[from] ability: Shields Down: not "Minior"."""
    decisions = messages("random-vs-heuristic.p0005.g2", "p1")
    entry = next(opponent(d.message) for d in decisions if "Minior" in opponent(d.message))
    assert "\n- Minior-Meteor [ACTIVE], Rock/Flying, L79" in entry


def test_moves_the_players_own_transform_copied_are_moves_seen() -> None:
    """|-transform|p1a: Ditto|p2a: Hatterene|[from] ability: Imposter: Ditto's request lists Hatterene's moves."""
    decisions = messages("max-damage-vs-heuristic.p0002.g1", "p1")
    before, after = at_turn(decisions, 16), at_turn(decisions, 17)
    assert "Hatterene [ACTIVE], Psychic/Fairy, L85, HP 100%\n  Moves seen: none yet" in opponent(before.message)
    assert "- Ditto [ACTIVE], Psychic/Fairy, L87" in after.message
    assert "Moves seen: Psychic; Nuzzle; Mystical Fire; Draining Kiss" in opponent(after.message)
    last = opponent(decisions[-1].message)  # Ditto gone: what it showed stays seen
    assert "Nuzzle" in last and "Draining Kiss" in last

