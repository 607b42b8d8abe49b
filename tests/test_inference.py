"""The set inference (pokebench/engine/inference.py): real poke-env battles from protocol lines, the pinned server's
set table, recorded games replayed in the pinned simulator.

Each kind of evidence is shown deciding on lines made for it (the species picked from the table so that the
evidence has something to rule out), and on recorded games where it decided; with the evidence off the same
battle keeps the sets it rules out, so each test fails without it.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from pokebench.engine.from_battle import positions_from_battle
from pokebench.engine.from_messages import battle_from_messages, player_battle, player_name
from pokebench.engine.inference import EVIDENCE, SetBelief
from pokebench.engine.position import SWITCHED_IN
from pokebench.engine.speed import SLOW_SETS, move_priority, speed_stat
from pokebench.engine.sets import RandomSet, SetTable

pytestmark = pytest.mark.server  # the set table and the replays need the pinned server installed (make setup)


@pytest.fixture(scope="module")
def table() -> SetTable:
    return SetTable.load()


def own_request(spe: int = 200) -> dict[str, Any]:
    moves = [("Thunderbolt", "thunderbolt", 24), ("Volt Switch", "voltswitch", 32)]
    return {"active": [{"moves": [{"move": m, "id": i, "pp": pp, "maxpp": pp, "target": "normal", "disabled": False}
                                  for m, i, pp in moves]}],
            "side": {"name": "me", "id": "p1", "pokemon": [
                {"ident": "p1: Pikachu", "details": "Pikachu, L92, M", "condition": "200/200", "active": True,
                 "stats": {"atk": 150, "def": 120, "spa": 150, "spd": 130, "spe": spe},
                 "moves": ["thunderbolt", "voltswitch"], "baseAbility": "static", "item": "lightball",
                 "pokeball": "pokeball", "ability": "static", "teraType": "Water", "terastallized": ""}]},
            "rqid": 3}


def battle_of(lines: list[str], spe: int = 200) -> Any:
    """Player p1's ``Battle`` ("me", a Pikachu of Speed `spe`) after these lines, its request last."""
    start = ["|player|p1|me|", "|player|p2|them|", "|switch|p1a: Pikachu|Pikachu, L92, M|200/200"]
    return battle_from_messages([*start, *lines, "|request|" + json.dumps(own_request(spe))], "me")


def position_after(lines: list[str], table: SetTable) -> Any:
    """p1's first position after `lines` (p1's ``Battle`` of :func:`battle_of`, one sample, seed 1)."""
    return positions_from_battle(battle_of(lines), table, random.Random(1), 1)[0]


def name(species: str) -> str:
    """A species id as Showdown's lines name it (the Pokédex's name)."""
    from poke_env.data import GenData

    return str(GenData.from_gen(9).pokedex[species]["name"])


def species_with(table: SetTable, split: Any) -> tuple[str, int, list[RandomSet]]:
    """The first species (and a level) of the table whose sets at that level `split` parts both ways."""
    for species in table.species:
        by_level: dict[int, list[RandomSet]] = {}
        for found, _ in table.sets[species]:
            by_level.setdefault(found.level, []).append(found)
        for level, sets in by_level.items():
            kept = [s for s in sets if split(s)]
            if kept and len(kept) < len(sets):
                return species, level, sets
    raise AssertionError("no species splits that way")


def weights(belief: SetBelief, species: str) -> dict[RandomSet, float]:
    found = belief.weights(species)
    assert found and abs(sum(found.values()) - 1) < 1e-9
    return found


# ---- each kind of evidence, on lines made for it -----------------------------------------------


def test_switching_into_stealth_rock_without_damage_leaves_only_boots_and_taking_it_rules_boots_out(table):
    species, level, sets = species_with(table, lambda s: s.item == "heavydutyboots" and s.ability != "magicguard")
    switch = f"|switch|p2a: {name(species)}|{name(species)}, L{level}|100/100"
    rocks = ["|turn|1", "|-sidestart|p2: them|move: Stealth Rock", "|turn|2"]
    unharmed = battle_of([*rocks, switch, "|turn|3"])
    assert all(s.item == "heavydutyboots" or s.ability == "magicguard"
               for s in weights(SetBelief.from_battle(table, unharmed), species))
    assert any(s.item != "heavydutyboots" for s in weights(SetBelief.from_battle(table, unharmed, frozenset()), species))
    harmed = battle_of([*rocks, switch, f"|-damage|p2a: {name(species)}|88/100|[from] Stealth Rock", "|turn|3"])
    assert not any(s.item == "heavydutyboots" for s in weights(SetBelief.from_battle(table, harmed), species))


def scarf_case(table: SetTable) -> tuple[str, int, str, int]:
    """A species, level and move of it whose sets with that move hold a Choice Scarf or not, and a Speed between."""
    for species in table.species:
        for found, _ in table.sets[species]:
            if found.item != "choicescarf":
                continue
            for move in found.moves:
                same = [s for s, _ in table.sets[species] if s.level == found.level and move in s.moves]
                plain = {speed_stat(_base_speed(species), s.level, bool(SLOW_SETS & set(s.moves)))
                         for s in same}
                if (move_priority(move, found.ability, "") == 0 and len(plain) == 1
                        and any(s.item != "choicescarf" for s in same)
                        and all(s.ability not in ("prankster", "triage", "quickfeet", "unburden") for s in same)):
                    speed = plain.pop()
                    if speed * 3 // 2 > speed + 4:
                        return species, found.level, move, speed + 2
    raise AssertionError("no Choice Scarf case in the table")


def _base_speed(species: str) -> int:
    from poke_env.data import GenData

    return int(GenData.from_gen(9).pokedex[species]["baseStats"]["spe"])


def _order_lines(species: str, level: int, move: str, opponent_first: bool) -> list[str]:
    from poke_env.data import GenData

    shown = GenData.from_gen(9).moves[move]["name"]
    theirs = [f"|move|p2a: {name(species)}|{shown}|p1a: Pikachu", "|-damage|p1a: Pikachu|150/200"]
    ours = ["|move|p1a: Pikachu|Thunderbolt|p2a: " + name(species), f"|-damage|p2a: {name(species)}|60/100"]
    return [f"|switch|p2a: {name(species)}|{name(species)}, L{level}|100/100", "|turn|1",
            *(theirs + ours if opponent_first else ours + theirs), "|turn|2"]


def test_moving_first_when_only_a_choice_scarf_outspeeds_leaves_only_scarf_sets_and_they_alone_are_sampled(table):
    species, level, move, our_speed = scarf_case(table)
    battle = battle_of(_order_lines(species, level, move, opponent_first=True), spe=our_speed)
    belief = SetBelief.from_battle(table, battle)
    assert {s.item for s in weights(belief, species)} == {"choicescarf"}
    assert [c.kind for c in belief.facts[species].checks if c.kind == "speed"] == ["speed"]
    assert "choicescarf" in {s.item for s in weights(SetBelief.from_battle(table, battle, frozenset()), species)} != {
        "choicescarf"}
    # through the path the search bot and the analysis take: a ruled-out set is never drawn
    positions = positions_from_battle(battle, table, random.Random(3), 200)
    assert {p.side_two.mons[0].item for p in positions} == {"choicescarf"}
    slower = SetBelief.from_battle(table, battle_of(_order_lines(species, level, move, opponent_first=False),
                                                    spe=our_speed))
    assert "choicescarf" not in {s.item for s in weights(slower, species)}


def test_trick_room_reverses_what_moving_first_says(table):
    species, level, move, our_speed = scarf_case(table)
    lines = _order_lines(species, level, move, opponent_first=False)
    battle = battle_of(["|-fieldstart|move: Trick Room|[of] p1a: Pikachu", *lines], spe=our_speed)
    assert {s.item for s in weights(SetBelief.from_battle(table, battle), species)} == {"choicescarf"}


def test_two_moves_without_switching_rule_out_choice_items_and_a_hit_without_recoil_rules_out_life_orb(table):
    species, level, _ = species_with(table, lambda s: s.item in ("choiceband", "choicespecs", "choicescarf"))
    sets = [s for s, _ in table.sets[species] if s.level == level and s.item.startswith("choice")]
    first, second = sets[0].moves[:2]
    from poke_env.data import GenData

    moves = GenData.from_gen(9).moves
    lines = [f"|switch|p2a: {name(species)}|{name(species)}, L{level}|100/100", "|turn|1",
             f"|move|p2a: {name(species)}|{moves[first]['name']}|p1a: Pikachu", "|turn|2",
             f"|move|p2a: {name(species)}|{moves[second]['name']}|p1a: Pikachu", "|turn|3"]
    belief = SetBelief.from_battle(table, battle_of(lines))
    assert not any(s.item.startswith("choice") for s in weights(belief, species))
    assert any(s.item.startswith("choice") for s in weights(SetBelief.from_battle(table, battle_of(lines), frozenset()),
                                                            species))

    species, level, _ = species_with(table, lambda s: s.item == "lifeorb" and s.ability not in ("magicguard",
                                                                                               "sheerforce"))
    orb = next(s for s, _ in table.sets[species] if s.level == level and s.item == "lifeorb")
    attack = next(m for m in orb.moves if moves[m]["category"] != "Status")
    hit = [f"|switch|p2a: {name(species)}|{name(species)}, L{level}|100/100", "|turn|1",
           f"|move|p2a: {name(species)}|{moves[attack]['name']}|p1a: Pikachu", "|-damage|p1a: Pikachu|120/200", "|turn|2"]
    assert not any(s.item == "lifeorb" and s.ability not in ("magicguard", "sheerforce")
                   for s in weights(SetBelief.from_battle(table, battle_of(hit)), species))
    recoil = [*hit[:-1], f"|-damage|p2a: {name(species)}|90/100|[from] item: Life Orb", "|turn|2"]
    assert {s.item for s in weights(SetBelief.from_battle(table, battle_of(recoil)), species)} == {"lifeorb"}


def test_damaged_at_the_end_of_a_turn_and_not_healed_rules_out_leftovers_unless_something_else_healed_it(table):
    species, level, _ = species_with(table, lambda s: s.item == "leftovers")
    mon = name(species)
    turn = [f"|switch|p2a: {mon}|{mon}, L{level}|100/100", "|turn|1", "|", "|move|p1a: Pikachu|Thunderbolt|p2a: " + mon,
            f"|-damage|p2a: {mon}|60/100", "|"]
    unhealed = battle_of([*turn, "|upkeep", "|turn|2"])
    assert "leftovers" not in {s.item for s in weights(SetBelief.from_battle(table, unhealed), species)}
    assert "leftovers" in {s.item for s in weights(SetBelief.from_battle(table, unhealed, frozenset()), species)}
    healed = battle_of([*turn, f"|-heal|p2a: {mon}|66/100|[from] item: Leftovers", "|upkeep", "|turn|2"])
    assert {s.item for s in weights(SetBelief.from_battle(table, healed), species)} == {"leftovers"}
    wished = battle_of([*turn, f"|-heal|p2a: {mon}|100/100|[from] move: Wish|[wisher] {mon}", "|upkeep", "|turn|2"])
    assert "leftovers" in {s.item for s in weights(SetBelief.from_battle(table, wished), species)}


def test_back_with_a_third_more_hp_than_it_left_with_is_regenerator_and_with_the_same_hp_is_not(table):
    assert {found.ability for found, _ in table.sets["mienshao"]} == {"regenerator", "reckless"}

    def abilities(back: str, evidence: frozenset[str] = EVIDENCE) -> set[str]:
        battle = battle_of(["|switch|p2a: Mienshao|Mienshao, L83, F|40/100", "|turn|1",
                            "|switch|p2a: Pelipper|Pelipper, L86, F|100/100", "|turn|2",
                            f"|switch|p2a: Mienshao|Mienshao, L83, F|{back}/100", "|turn|3"])
        return {s.ability for s in weights(SetBelief.from_battle(table, battle, evidence), "mienshao")}

    assert abilities("73") == {"regenerator"}
    assert abilities("40") == {"reckless"}
    assert abilities("73", frozenset()) == abilities("40", frozenset()) == {"regenerator", "reckless"}


def test_an_item_knocked_off_or_tricked_away_is_the_item_its_set_started_with(table):
    species, level, _ = species_with(table, lambda s: s.item == "heavydutyboots")
    mon = name(species)
    knocked = [f"|switch|p2a: {mon}|{mon}, L{level}|100/100", "|turn|1",
               f"|move|p1a: Pikachu|Knock Off|p2a: {mon}", f"|-damage|p2a: {mon}|70/100",
               f"|-enditem|p2a: {mon}|Heavy-Duty Boots|[from] move: Knock Off|[of] p1a: Pikachu", "|turn|2"]
    belief = SetBelief.from_battle(table, battle_of(knocked), frozenset())
    assert {s.item for s in weights(belief, species)} == {"heavydutyboots"}
    tricked = [f"|switch|p2a: {mon}|{mon}, L{level}|100/100", "|turn|1",
               f"|move|p1a: Pikachu|Trick|p2a: {mon}", f"|-activate|p1a: Pikachu|move: Trick|[of] p2a: {mon}",
               f"|-item|p2a: {mon}|Choice Scarf|[from] move: Trick",
               "|-item|p1a: Pikachu|Heavy-Duty Boots|[from] move: Trick", "|turn|2"]
    belief = SetBelief.from_battle(table, battle_of(tricked), frozenset())
    assert {s.item for s in weights(belief, species)} == {"heavydutyboots"}  # not the Scarf it holds now


def test_a_fourth_revealed_move_leaves_only_the_sets_with_all_four(table):
    from poke_env.data import GenData

    moves = GenData.from_gen(9).moves
    species, level, chosen = next(
        (species, found.level, found) for species in table.species for found, _ in table.sets[species]
        if len({s.moves for s, _ in table.sets[species]
                if s.level == found.level and set(found.moves[:3]) <= set(s.moves)}) > 1)
    mon = name(species)
    lines = [f"|switch|p2a: {mon}|{mon}, L{level}|100/100"]
    for turn, move in enumerate(chosen.moves, 1):
        lines += [f"|turn|{turn}", f"|move|p2a: {mon}|{moves[move]['name']}|p1a: Pikachu"]
        if turn == 3:
            assert len({s.moves for s in weights(SetBelief.from_battle(table, battle_of(lines), frozenset()), species)}) > 1
    lines.append("|turn|5")
    assert {s.moves for s in weights(SetBelief.from_battle(table, battle_of(lines), frozenset()), species)} == {chosen.moves}


def test_evidence_that_rules_out_every_set_falls_back_to_the_revealed_facts_and_is_counted(table):
    species, level, _ = species_with(table, lambda s: s.item == "heavydutyboots" and s.ability != "magicguard")
    mon = name(species)
    lines = ["|turn|1", "|-sidestart|p2: them|move: Stealth Rock", f"|switch|p2a: {mon}|{mon}, L{level}|100/100",
             "|turn|2", "|switch|p2a: Pikachu|Pikachu, L92|100/100", "|turn|3",
             f"|switch|p2a: {mon}|{mon}, L{level}|100/100", f"|-damage|p2a: {mon}|88/100|[from] Stealth Rock", "|turn|4"]
    belief = SetBelief.from_battle(table, battle_of(lines))
    assert weights(belief, species) == weights(SetBelief.from_battle(table, battle_of(lines), frozenset()), species)
    assert len(belief.fallbacks) == 1 and species in belief.fallbacks[0]
    with pytest.raises(ValueError, match="unknown kinds of evidence"):
        SetBelief(table, {}, frozenset({"telepathy"}))


# ---- fairness ----------------------------------------------------------------------------------


class Watched:
    """A ``Battle`` that records which of its attributes were read."""

    def __init__(self, battle: Any) -> None:
        object.__setattr__(self, "_battle", battle)
        object.__setattr__(self, "read", set())

    def __getattr__(self, attribute: str) -> Any:
        self.read.add(attribute)
        return getattr(self._battle, attribute)


def test_the_inference_reads_only_the_players_own_lines_and_teams():
    """What it reads of a ``Battle``: its role, its own team, the opponent's shown Pokémon, the lines it got."""
    state = json.loads((GAMES_PATH).read_text())["games"]
    from pokebench.engine.from_showdown import game_positions

    [game] = game_positions([(GAME, state[GAME]["input_log"])])
    decision = game.decisions[-1]
    battle = Watched(player_battle(game, decision, player_name(state[GAME]["input_log"], decision.side)))
    SetBelief.from_battle(SetTable.load(), battle)  # type: ignore[arg-type]
    assert battle.read <= {"player_role", "team", "opponent_team", "_replay_data"}, battle.read


# ---- recorded games: the evidence decides, and the truth is what it leaves -----------------------

from support.games import REPO_DIR  # noqa: E402

GAMES_PATH = REPO_DIR / "tests" / "data" / "state-games.json"
GAME = "max-damage-vs-heuristic.p0002.g1"
#: (game, deciding side, decision index, opposing species, the kind of evidence that alone decides, the true item)
DECISIVE = [
    ("max-damage-vs-heuristic.p0002.g1", "p2", 15, "zarude", "speed", {"choicescarf"}),  # outsped a 238
    ("max-damage-vs-heuristic.p0002.g1", "p2", 26, "hoopa", "speed", {"choicescarf"}),
    ("random-vs-heuristic.p0009.g1", "p1", 14, "bombirdier", "choice", {"heavydutyboots"}),  # Knock Off, Brave Bird
    ("random-vs-heuristic.p0005.g2", "p1", 32, "pelipper", "hazards", {"choicespecs"}),  # hurt by Stealth Rock
]


@pytest.fixture(scope="module")
def recorded() -> dict[str, Any]:
    from pokebench.engine.from_showdown import game_positions

    state = json.loads(GAMES_PATH.read_text())["games"]
    ids = sorted({case[0] for case in DECISIVE})
    return {g.id: (g, state[g.id]["input_log"]) for g in game_positions([(i, state[i]["input_log"]) for i in ids])}


@pytest.mark.parametrize("case", DECISIVE, ids=[f"{c[3]}-{c[4]}" for c in DECISIVE])
def test_on_recorded_games_the_evidence_leaves_the_true_item(recorded, table, case):
    game_id, side, index, species, kind, items = case
    game, log = recorded[game_id]
    decision = next(d for d in game.decisions if d.index == index)
    battle = player_battle(game, decision, player_name(log, side))
    other = "p2" if side == "p1" else "p1"
    truth = next(m for m in game.decisions[0].state["sides"][other]["pokemon"] if m["species"] == species)
    assert {truth["item"]} == items  # the hidden truth, read by the test only
    alone = {s.item for s in weights(SetBelief.from_battle(table, battle, frozenset({kind})), species)}
    without = {s.item for s in weights(SetBelief.from_battle(table, battle, frozenset()), species)}
    found = weights(SetBelief.from_battle(table, battle, EVIDENCE), species)
    assert {s.item for s in found} == alone == items != without
    assert sum(p for s, p in found.items() if set(s.moves) == set(truth["base_moves"])) > 0


# ---- what the battle showed reaches the engine's state ----------------------------------------


def choice_case(table: SetTable) -> tuple[str, int, list[str]]:
    """A species and level of the table with a Choice Scarf set, and that set's moves."""
    for species in table.species:
        for found, _ in table.sets[species]:
            if found.item == "choicescarf" and found.ability != "klutz":
                return species, found.level, list(found.moves)
    raise AssertionError("no Choice Scarf set in the table")


def move_name(move: str) -> str:
    from poke_env.data import GenData

    return str(GenData.from_gen(9).moves[move]["name"])


def test_hazards_move_locks_and_the_last_move_the_battle_showed_reach_the_engines_state(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    species, level, moves = choice_case(table)
    mon = f"p2a: {name(species)}"
    came_in = ["|turn|1", "|turn|2", "|-sidestart|p2: them|move: Stealth Rock", "|-sidestart|p2: them|Spikes",
               "|-sidestart|p2: them|Spikes", "|turn|3", f"|switch|{mon}|{name(species)}, L{level}|100/100",
               f"|-item|{mon}|Choice Scarf|[from] ability: Frisk|[of] p1a: Pikachu", "|turn|4"]
    fresh = position_after(came_in, table)
    # Stealth Rock set in turn 2 is one layer (poke-env keeps the turn it started), Spikes two
    assert fresh.side_two.conditions == {"stealthrock": 1, "spikes": 2}
    assert fresh.side_two.last_move == SWITCHED_IN  # nothing used since it came in: Fake Out would work
    state = build_state(fresh)
    assert state.side_two.side_conditions.stealth_rock == 1 and state.side_two.side_conditions.spikes == 2
    assert state.side_two.last_used_move == f"switch:{fresh.side_two.active}"
    assert not any(slot.disabled for slot in fresh.side_two.mons[fresh.side_two.active].moves)

    used = [*came_in, f"|move|{mon}|{move_name(moves[0])}|p1a: Pikachu", "|turn|5"]
    locked = position_after(used, table)
    active = locked.side_two.mons[locked.side_two.active]
    assert locked.side_two.last_move == moves[0]
    assert [slot.id for slot in active.moves if not slot.disabled] == [moves[0]]  # held by its Choice Scarf
    assert build_state(locked).side_two.last_used_move == "move:0"


def test_a_protect_that_worked_counts_towards_the_next_ones_chance(table):
    protected = ["|switch|p2a: Pikachu|Pikachu, L92, F|100/100", "|turn|1", "|move|p1a: Pikachu|Protect|p1a: Pikachu",
                 "|-singleturn|p1a: Pikachu|Protect", "|turn|2"]
    position = position_after(protected, table)
    assert position.side_one.protect_streak == 1 and position.side_two.protect_streak == 0


def switch_request() -> dict[str, Any]:
    """p1's request to choose a switch-in (its Pikachu pivoted out; a Raichu waits)."""
    request = own_request()
    del request["active"]
    request["forceSwitch"] = [True]
    raichu = dict(request["side"]["pokemon"][0], ident="p1: Raichu", details="Raichu, L90, M", active=False)
    request["side"]["pokemon"].append(raichu)
    return request


def test_after_our_pivot_moved_first_the_opponent_still_moves_against_the_switch_in(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    start = ["|player|p1|me|", "|player|p2|them|", "|switch|p1a: Pikachu|Pikachu, L92, M|200/200",
             "|switch|p2a: Pikachu|Pikachu, L92, F|100/100", "|turn|1"]
    ours = ["|move|p1a: Pikachu|Volt Switch|p2a: Pikachu", "|-damage|p2a: Pikachu|60/100"]
    theirs = ["|move|p2a: Pikachu|Thunderbolt|p1a: Pikachu", "|-damage|p1a: Pikachu|150/200"]
    for lines, still in ((ours, True), (theirs + ours, False)):
        battle = battle_from_messages([*start, *lines, "|request|" + json.dumps(switch_request())], "me")
        position = positions_from_battle(battle, table, random.Random(1), 1)[0]
        assert position.side_one.force_switch and position.side_two.still_to_move is still
        assert build_state(position).side_two.slow_uturn_move is still


def test_after_a_double_knock_out_the_opponent_chooses_its_replacement_at_once_and_after_our_pivot_ko_it_waits(table):
    """Both actives fainted in one turn: both sides choose a replacement at once (Showdown asks both). Our Volt
    Switch knocked its Pokémon out: we choose our switch-in first, it chooses its own at the turn's end."""
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    start = ["|player|p1|me|", "|player|p2|them|", "|switch|p1a: Pikachu|Pikachu, L92, M|200/200",
             "|switch|p2a: Pikachu|Pikachu, L92, F|100/100", "|turn|1"]
    double = ["|move|p2a: Pikachu|Volt Tackle|p1a: Pikachu", "|-damage|p1a: Pikachu|0 fnt", "|faint|p1a: Pikachu",
              "|-damage|p2a: Pikachu|0 fnt|[from] Recoil", "|faint|p2a: Pikachu", "|upkeep"]
    pivot = ["|move|p1a: Pikachu|Volt Switch|p2a: Pikachu", "|-damage|p2a: Pikachu|0 fnt", "|faint|p2a: Pikachu"]
    fainted = switch_request()
    fainted["side"]["pokemon"][0]["condition"] = "0 fnt"
    for lines, request, at_once in ((double, fainted, True), (pivot, switch_request(), False)):
        battle = battle_from_messages([*start, *lines, "|request|" + json.dumps(request)], "me")
        position = positions_from_battle(battle, table, random.Random(1), 1)[0]
        assert position.side_one.force_switch and position.side_two.force_switch is at_once
        assert build_state(position).side_two.force_switch is at_once


def test_a_screen_set_by_a_light_clay_holder_lasts_eight_turns_other_screens_five(table):
    """Every Abomasnow of the sets holds a Light Clay: its Aurora Veil has 7 turns left a turn later; our Pikachu
    (a Light Ball) set Reflect the same turn: 4 left."""
    assert {found.item for found, _ in table.sets["abomasnow"]} == {"lightclay"}
    position = position_after(["|switch|p2a: Abomasnow|Abomasnow, L84, F|100/100", "|turn|1",
                               "|move|p1a: Pikachu|Reflect|p1a: Pikachu", "|-sidestart|p1: me|Reflect",
                               "|move|p2a: Abomasnow|Aurora Veil|p2a: Abomasnow", "|-sidestart|p2: them|move: Aurora Veil",
                               "|upkeep", "|turn|2"], table)
    assert position.side_one.conditions == {"reflect": 4} and position.side_two.conditions == {"auroraveil": 7}
    knocked = position_after(["|switch|p2a: Abomasnow|Abomasnow, L84, F|100/100", "|turn|1",
                              "|move|p2a: Abomasnow|Aurora Veil|p2a: Abomasnow", "|-sidestart|p2: them|move: Aurora Veil",
                              "|move|p1a: Pikachu|Knock Off|p2a: Abomasnow", "|-damage|p2a: Abomasnow|70/100",
                              "|-enditem|p2a: Abomasnow|Light Clay|[from] move: Knock Off|[of] p1a: Pikachu",
                              "|upkeep", "|turn|2"], table)
    assert knocked.side_two.conditions == {"auroraveil": 7}  # it held the Light Clay when it set the veil


def test_an_item_a_line_showed_the_opponent_lose_is_gone_from_every_position(table):
    """Knocked off, or a berry eaten: the Pokémon holds nothing (poke-env's None), where it used to be drawn again
    from its sets, always the item it started with (1,308 Pokémon-decisions of 100 games against Foul Play)."""
    start = ["|switch|p2a: Abomasnow|Abomasnow, L84, F|100/100", "|turn|1"]
    knock = ["|move|p1a: Pikachu|Knock Off|p2a: Abomasnow", "|-damage|p2a: Abomasnow|70/100",
             "|-enditem|p2a: Abomasnow|Light Clay|[from] move: Knock Off|[of] p1a: Pikachu", "|upkeep", "|turn|2"]
    assert position_after(start, table).side_two.mons[0].item == "lightclay"
    assert position_after(start + knock, table).side_two.mons[0].item == ""
    species, level, _ = species_with(table, lambda s: s.item == "sitrusberry")
    eaten = position_after([f"|switch|p2a: {name(species)}|{name(species)}, L{level}|40/100",
                            f"|-enditem|p2a: {name(species)}|Sitrus Berry|[eat]", "|turn|1"], table)
    assert eaten.side_two.mons[0].item == ""


def test_at_a_replacement_after_the_turns_end_the_screens_have_that_end_of_turn_behind_them(table):
    """Reflect set at turn 1; our Pikachu fainted at turn 2 and we choose its replacement after turn 2's end: 3 turns
    left (Showdown counts ends of turn), not the 4 that the turn number alone would give."""
    lines = ["|player|p1|me|", "|player|p2|them|", "|switch|p1a: Pikachu|Pikachu, L92, M|200/200",
             "|switch|p2a: Garchomp|Garchomp, L74, F|100/100", "|turn|1",
             "|move|p2a: Garchomp|Reflect|p2a: Garchomp", "|-sidestart|p2: them|Reflect", "|upkeep", "|turn|2",
             "|move|p2a: Garchomp|Earthquake|p1a: Pikachu", "|-damage|p1a: Pikachu|0 fnt", "|faint|p1a: Pikachu",
             "|upkeep"]
    request = switch_request()
    request["side"]["pokemon"][0]["condition"] = "0 fnt"
    battle = battle_from_messages([*lines, "|request|" + json.dumps(request)], "me")
    assert positions_from_battle(battle, table, random.Random(1), 1)[0].side_two.conditions == {"reflect": 3}


def test_an_opponents_ditto_that_copied_our_pokemon_is_searched_as_the_copy_with_its_own_level_and_hp(table):
    """Imposter: the opponent's Ditto becomes our Pikachu (whose set we know) but for its level, HP and item;
    each copied move has 5 PP."""
    lines = ["|switch|p2a: Ditto|Ditto, L85|100/100", "|-transform|p2a: Ditto|p1a: Pikachu|[from] ability: Imposter",
             "|turn|1"]
    position = position_after(lines, table)
    ditto, pikachu = position.side_two.mons[position.side_two.active], position.side_one.mons[0]
    assert (ditto.species, ditto.types, ditto.stats, ditto.ability) == ("pikachu", pikachu.types, pikachu.stats, "static")
    assert [(s.id, s.pp) for s in ditto.moves] == [("thunderbolt", 5), ("voltswitch", 5)]
    assert (ditto.level, ditto.max_hp) == (85, position_after(lines[:1] + lines[2:], table).side_two.mons[0].max_hp)
    gone = position_after([*lines, "|switch|p2a: Pelipper|Pelipper, L86, F|100/100", "|turn|2"], table)
    assert next(m for m in gone.side_two.mons if m.level == 85).species == "ditto"  # the copy ends at the switch-out


def test_an_opponents_benched_regenerator_has_a_third_of_its_hp_back_which_showdown_does_not_show(table):
    """Regenerator heals a third at the switch-out without a line: a benched Slowbro (every set of it has
    Regenerator) is searched with it, a benched Garchomp (Rough Skin) with its HP as last shown."""
    assert {found.ability for found, _ in table.sets["slowbro"]} == {"regenerator"}
    position = position_after(["|switch|p2a: Slowbro|Slowbro, L85, F|40/100", "|turn|1",
                               "|switch|p2a: Garchomp|Garchomp, L74, F|40/100", "|turn|2",
                               "|switch|p2a: Slowbro|Slowbro, L85, F|30/100", "|turn|3",
                               "|switch|p2a: Pelipper|Pelipper, L86, F|100/100", "|turn|4"], table)
    slowbro, garchomp = (next(m for m in position.side_two.mons if m.species == s) for s in ("slowbro", "garchomp"))
    assert slowbro.hp == round(0.30 * slowbro.max_hp) + slowbro.max_hp // 3
    assert garchomp.hp == round(0.40 * garchomp.max_hp)


def test_the_weather_counts_down_from_the_turn_it_began_not_from_its_last_end_of_turn(table):
    rain = ["|switch|p2a: Pelipper|Pelipper, L86, F|100/100", "|-weather|RainDance|[from] ability: Drizzle|[of] p2a: Pelipper",
            "|turn|1"]
    for turn in (1, 2, 3):  # each end of turn poke-env reads as the weather's start
        rain += ["|-weather|RainDance|[upkeep]", "|upkeep", f"|turn|{turn + 1}"]
    position = position_after(rain, table)
    assert (position.field.weather, position.field.weather_turns) == ("raindance", 2)  # turns 4 and 5 left


def test_rest_sleeps_two_turns_for_sure_where_other_sleep_may_end_by_chance(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    def asleep(how: str, turns_asleep: int) -> Any:
        lines = ["|switch|p2a: Snorlax|Snorlax, L84, M|50/100", "|turn|1",
                 "|move|p2a: Snorlax|Rest|p2a: Snorlax", f"|-status|p2a: Snorlax|slp|{how}", "|turn|2"]
        for turn in range(turns_asleep):
            lines += ["|cant|p2a: Snorlax|slp", f"|turn|{turn + 3}"]
        return position_after(lines, table)

    for turns_asleep, rest_turns in ((0, 3), (1, 2), (2, 1)):  # it wakes at its third move after Rest
        position = asleep("[from] move: Rest", turns_asleep)
        snorlax = position.side_two.mons[0]
        assert (snorlax.status, snorlax.rest_turns, snorlax.sleep_turns) == ("slp", rest_turns, 0)
        assert build_state(position).side_two.pokemon[0].rest_turns == rest_turns
    snorlax = asleep("[from] move: Spore", 2).side_two.mons[0]  # other sleep: its turns so far, its end by chance
    assert (snorlax.status, snorlax.rest_turns, snorlax.sleep_turns) == ("slp", 0, 2)


def test_taunt_encore_and_yawn_reach_the_engine_with_the_turns_they_have_left(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    lines = ["|switch|p2a: Pikachu|Pikachu, L92, F|100/100", "|turn|1", "|move|p2a: Pikachu|Taunt|p1a: Pikachu",
             "|-start|p1a: Pikachu|move: Taunt", "|move|p1a: Pikachu|Yawn|p2a: Pikachu", "|-start|p2a: Pikachu|move: Yawn",
             "|upkeep", "|turn|2"]
    position = position_after(lines, table)
    assert position.side_one.volatile_turns == {"taunt": 2} and position.side_two.volatile_turns == {"yawn": 1}
    state = build_state(position)  # the engine counts both up: Taunt's second of 3 turns, Yawn's sleep this turn
    assert (state.side_one.volatile_status_durations.taunt, state.side_two.volatile_status_durations.yawn) == (1, 1)


def test_a_partial_trap_holds_the_opponent_in_and_hurts_it_in_the_engine(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    lines = ["|switch|p2a: Pikachu|Pikachu, L92, F|100/100", "|turn|1", "|move|p1a: Pikachu|Whirlpool|p2a: Pikachu",
             "|-activate|p2a: Pikachu|move: Whirlpool|[of] p1a: Pikachu", "|-start|p2a: Pikachu|Salt Cure",
             "|-damage|p2a: Pikachu|80/100|[from] move: Whirlpool|[partiallytrapped]", "|turn|2"]
    position = position_after(lines, table)
    assert position.side_two.volatiles == {"partiallytrapped", "saltcure"}
    assert {"PARTIALLYTRAPPED", "SALTCURE"} <= {str(v).upper() for v in build_state(position).side_two.volatile_statuses}
    freed = position_after([*lines, "|-end|p2a: Pikachu|Whirlpool|[partiallytrapped]", "|turn|3"], table)
    assert freed.side_two.volatiles == {"saltcure"}


def test_a_wish_made_last_turn_heals_half_the_wishers_hp_at_this_turns_end_in_the_engine(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    lines = ["|switch|p2a: Vaporeon|Vaporeon, L84, F|100/100", "|turn|1", "|move|p2a: Vaporeon|Wish|p2a: Vaporeon",
             "|move|p1a: Pikachu|Wish|p1a: Pikachu", "|turn|2"]
    position = position_after(lines, table)
    vaporeon = position.side_two.mons[0]
    assert position.side_one.wish == (1, 100) and position.side_two.wish == (1, vaporeon.max_hp // 2)
    assert build_state(position).side_two.wish == (1, vaporeon.max_hp // 2)
    again = [*lines, "|move|p2a: Vaporeon|Wish|p2a: Vaporeon", "|-fail|p2a: Vaporeon",  # fails: one is pending
             "|-heal|p2a: Vaporeon|100/100|[from] move: Wish|[wisher] Vaporeon", "|turn|3"]
    assert position_after(again, table).side_two.wish == (0, 0)


def test_weather_and_terrain_a_replacement_brought_after_the_turns_end_have_all_their_turns(table):
    lead = ["|switch|p2a: Pikachu|Pikachu, L92, F|100/100", "|turn|1", "|move|p1a: Pikachu|Thunderbolt|p2a: Pikachu",
            "|-damage|p2a: Pikachu|0 fnt", "|faint|p2a: Pikachu", "|upkeep"]
    rain = [*lead, "|switch|p2a: Pelipper|Pelipper, L86, F|100/100",
            "|-weather|RainDance|[from] ability: Drizzle|[of] p2a: Pelipper", "|turn|2"]
    assert position_after(rain, table).field.weather_turns == 5  # the turn number said 4: set in turn 1
    assert position_after([*rain, "|-weather|RainDance|[upkeep]", "|upkeep", "|turn|3"], table).field.weather_turns == 4
    surge = [*lead, "|switch|p2a: Pincurchin|Pincurchin, L97, F|100/100",
             "|-fieldstart|move: Electric Terrain|[from] ability: Electric Surge|[of] p2a: Pincurchin", "|turn|2"]
    field = position_after(surge, table).field
    assert (field.terrain, field.terrain_turns) == ("electricterrain", 5)


def test_a_recharge_served_a_move_lock_and_a_truant_turn_reach_the_engine_as_the_lines_tell_them(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    beam = ["|switch|p2a: Snorlax|Snorlax, L84, M|100/100", "|turn|1", "|move|p2a: Snorlax|Giga Impact|p1a: Pikachu",
            "|-damage|p1a: Pikachu|50/200", "|-mustrecharge|p2a: Snorlax", "|upkeep", "|turn|2"]
    assert "mustrecharge" in position_after(beam, table).side_two.volatiles
    served = [*beam, "|cant|p2a: Snorlax|recharge", "|upkeep", "|turn|3"]  # poke-env keeps it until the next move
    assert "mustrecharge" not in position_after(served, table).side_two.volatiles

    rage = ["|switch|p2a: Dragonite|Dragonite, L74, F|100/100", "|turn|1", "|move|p2a: Dragonite|Outrage|p1a: Pikachu",
            "|-damage|p1a: Pikachu|100/200", "|upkeep", "|turn|2"]
    locked = position_after(rage, table)
    assert "lockedmove" in locked.side_two.volatiles and locked.side_two.volatile_turns["lockedmove"] == 2
    assert build_state(locked).side_two.volatile_status_durations.lockedmove == 1  # one use of three so far
    again = [*rage, "|move|p2a: Dragonite|Outrage|p1a: Pikachu|[from] lockedmove", "|-damage|p1a: Pikachu|20/200"]
    assert position_after([*again, "|upkeep", "|turn|3"], table).side_two.volatile_turns["lockedmove"] == 1  # its third
    tired = [*again, "|-start|p2a: Dragonite|confusion|[fatigue]", "|upkeep", "|turn|3"]
    missed = [*rage[:3], "|move|p2a: Dragonite|Outrage|p1a: Pikachu|[miss]", "|-miss|p2a: Dragonite|p1a: Pikachu",
              "|upkeep", "|turn|2"]
    assert "lockedmove" not in position_after(tired, table).side_two.volatiles | position_after(missed, table).side_two.volatiles

    lazy = ["|switch|p2a: Slaking|Slaking, L83, F|100/100", "|turn|1", "|move|p2a: Slaking|Double-Edge|p1a: Pikachu",
            "|-damage|p1a: Pikachu|50/200", "|upkeep", "|turn|2"]
    assert "truant" in position_after(lazy, table).side_two.volatiles
    assert "truant" not in position_after([*lazy, "|cant|p2a: Slaking|ability: Truant", "|upkeep", "|turn|3"],
                                    table).side_two.volatiles


def test_bad_poison_a_busted_disguise_and_an_encore_after_its_target_moved_are_read_from_the_lines(table):
    pytest.importorskip("poke_engine", reason="poke-engine is not built: make setup")
    from pokebench.engine.state import build_state

    orb = ["|switch|p2a: Ursaring|Ursaring, L85, F|100/100", "|turn|1", "|move|p1a: Pikachu|Thunderbolt|p2a: Ursaring",
           "|-damage|p2a: Ursaring|80/100", "|-status|p2a: Ursaring|tox|[from] item: Toxic Orb", "|upkeep", "|turn|2"]
    assert position_after(orb, table).side_two.toxic_count == 0  # poisoned after the turn's poison damage: none yet
    hurt = [*orb, "|-damage|p2a: Ursaring|74/100 tox|[from] psn", "|upkeep", "|turn|3"]
    assert position_after(hurt, table).side_two.toxic_count == 1

    disguise = ["|switch|p2a: Mimikyu|Mimikyu, L78, F|100/100", "|turn|1",
                "|move|p1a: Pikachu|Thunderbolt|p2a: Mimikyu", "|-activate|p2a: Mimikyu|ability: Disguise",
                "|-damage|p2a: Mimikyu|88/100", "|detailschange|p2a: Mimikyu|Mimikyu-Busted, L78, F", "|upkeep",
                "|turn|2"]
    busted = position_after(disguise, table)
    assert busted.side_two.mons[0].species == "mimikyubusted"
    assert str(build_state(busted).side_two.pokemon[0].id).lower() == "mimikyubusted"

    encore = ["|switch|p2a: Clefable|Clefable, L83, F|100/100", "|turn|1",
              "|move|p1a: Pikachu|Thunderbolt|p2a: Clefable", "|-damage|p2a: Clefable|80/100",
              "|move|p2a: Clefable|Encore|p1a: Pikachu", "|-start|p1a: Pikachu|Encore", "|upkeep", "|turn|2"]
    assert position_after(encore, table).side_one.volatile_turns["encore"] == 3  # 4 turns: its target had moved
