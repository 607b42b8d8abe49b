"""The method's two sample messages, rebuilt from their own facts and rendered character for character.

The game behind them (Carbink against Calyrex-Shadow; the turn-6 message after Granbull came in) is
rebuilt as Player 1's stream: the protocol lines a player receives, and Showdown's last request, whose
every value is read off the messages (levels, HP, stats, abilities, items, Tera types, moves, team
order). Between the two messages the history is one that gives the state the turn-6 message shows:
Carbink and Virizion fainted, Calyrex-Shadow fainted, Rotom-Heat at 43% with its Sp. Atk lowered by its
first Overheat before Granbull's Intimidate lowered its Attack. The expected texts are the method's
(``tests/data/method-sample-*.txt``).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from poke_env.battle import Battle

from pokebench.text import prompt
from pokebench.text.renderer import BattleText

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

DATA = Path(__file__).resolve().parent / "data"
USER = "gpt5mini0100001a1"

# species, details, (hp, max), stats (atk, def, spa, spd, spe), moves, ability, item, Tera type
TEAM = {
    "Carbink": ("Carbink, L90", 236, (95, 321, 141, 321, 141), "bodypress irondefense moonblast rest", "sturdy", "chestoberry", "Fighting"),
    "Palkia": ("Palkia-Origin, L72", 249, (149, 186, 258, 215, 215), "spacialrend fireblast hydropump thunderwave", "pressure", "lustrousglobe", "Fire"),
    "Granbull": ("Granbull, L88, F", 302, (261, 182, 156, 156, 129), "encore playrough earthquake thunderwave", "intimidate", "leftovers", "Ground"),
    "Vivillon": ("Vivillon-Ocean, L83, M", 268, (91, 131, 197, 131, 195), "hurricane bugbuzz sleeppowder quiverdance", "compoundeyes", "heavydutyboots", "Flying"),
    "Virizion": ("Virizion, L82", 283, (195, 165, 195, 259, 224), "swordsdance leafblade stoneedge closecombat", "justified", "lifeorb", "Rock"),
    "Weavile": ("Weavile, L79, F", 239, (235, 148, 117, 180, 243), "iceshard lowkick tripleaxel knockoff", "pickpocket", "choiceband", "Fighting"),
}
MOVE_NAMES = {"bodypress": "Body Press", "irondefense": "Iron Defense", "moonblast": "Moonblast", "rest": "Rest",
              "encore": "Encore", "playrough": "Play Rough", "earthquake": "Earthquake", "thunderwave": "Thunder Wave",
              "swordsdance": "Swords Dance", "leafblade": "Leaf Blade", "stoneedge": "Stone Edge", "closecombat": "Close Combat"}

START = """|player|p1|gpt5mini0100001a1|1|
|player|p2|claude0100001a2|1|
|teamsize|p1|6
|teamsize|p2|6
|gen|9
|tier|[Gen 9] Random Battle
|
|t:|1796006285
|start
|switch|p1a: Carbink|Carbink, L90|236/236
|switch|p2a: Calyrex|Calyrex-Shadow, L64|100/100
|-ability|p2a: Calyrex|As One
|-ability|p2a: Calyrex|Unnerve
|turn|1"""
TURNS_1_TO_4 = """|
|move|p2a: Calyrex|Astral Barrage|p1a: Carbink
|-damage|p1a: Carbink|1/236
|-activate|p1a: Carbink|ability: Sturdy
|move|p1a: Carbink|Moonblast|p2a: Calyrex
|-damage|p2a: Calyrex|45/100
|
|upkeep
|turn|2
|
|move|p2a: Calyrex|Astral Barrage|p1a: Carbink
|-damage|p1a: Carbink|0 fnt
|faint|p1a: Carbink
|
|upkeep
|
|switch|p1a: Virizion|Virizion, L82|283/283
|turn|3
|
|move|p2a: Calyrex|Astral Barrage|p1a: Virizion
|-damage|p1a: Virizion|150/283
|move|p1a: Virizion|Leaf Blade|p2a: Calyrex
|-damage|p2a: Calyrex|0 fnt
|faint|p2a: Calyrex
|
|upkeep
|
|switch|p2a: Rotom|Rotom-Heat, L83|100/100
|turn|4
|
|move|p1a: Virizion|Stone Edge|p2a: Rotom
|-damage|p2a: Rotom|43/100
|move|p2a: Rotom|Overheat|p1a: Virizion
|-supereffective|p1a: Virizion
|-damage|p1a: Virizion|0 fnt
|-unboost|p2a: Rotom|spa|2
|faint|p1a: Virizion
|
|upkeep
|
|switch|p1a: Granbull|Granbull, L88, F|302/302
|-ability|p1a: Granbull|Intimidate|boost
|-unboost|p2a: Rotom|atk|1
|turn|5"""
TURN_5 = """|
|t:|1796006290
|move|p2a: Rotom|Overheat|p1a: Granbull
|-damage|p1a: Granbull|209/302
|-unboost|p2a: Rotom|spa|2
|move|p1a: Granbull|Earthquake|p2a: Rotom
|-immune|p2a: Rotom|[from] ability: Levitate
|-heal|p1a: Granbull|227/302|[from] item: Leftovers
|
|upkeep
|turn|6"""


def request(order: list[str], hp: dict[str, int], tera_left: bool = True) -> dict[str, Any]:
    """Showdown's request for Player 1 with the team in `order` (the first is active) and HP `hp`."""
    pokemon = []
    for i, name in enumerate(order):
        details, max_hp, stats, moves, ability, item, tera = TEAM[name]
        left = hp.get(name, max_hp)
        pokemon.append({"ident": f"p1: {name}", "details": details, "active": i == 0,
                        "condition": f"{left}/{max_hp}" if left else "0 fnt",
                        "stats": dict(zip(("atk", "def", "spa", "spd", "spe"), stats)), "moves": moves.split(),
                        "baseAbility": ability, "ability": ability, "item": item, "pokeball": "pokeball",
                        "teraType": tera, "terastallized": "", "commanding": False, "reviving": False})
    active_moves = [{"move": MOVE_NAMES[m], "id": m, "pp": 8, "maxpp": 8, "target": "normal", "disabled": False}
                    for m in pokemon[0]["moves"]]
    return {"active": [{"moves": active_moves, **({"canTerastallize": TEAM[order[0]][6]} if tera_left else {})}],
            "side": {"name": USER, "id": "p1", "pokemon": pokemon}, "rqid": 1}


def battle_after(lines: str, last_request: dict[str, Any]) -> Battle:
    """poke-env's battle after Player 1's stream `lines` and the last request, as the player sees it."""
    battle = Battle("battle-gen9randombattle-1", USER, logging.getLogger("test"), gen=9)
    battle.parse_request(last_request)
    for line in lines.split("\n"):
        if line.strip("|") and not line.startswith("|t:|"):  # the client, not the battle, reads timestamps
            battle.parse_message(line.split("|"))
    battle.parse_request(last_request)
    return battle


def sample(name: str) -> str:
    return (DATA / f"method-sample-{name}.txt").read_text(encoding="utf-8")


def test_the_first_message_character_for_character() -> None:
    text = BattleText("p1")
    events = text.feed(START.split("\n"))
    battle = battle_after(START, request(["Carbink", "Palkia", "Granbull", "Vivillon", "Virizion", "Weavile"], {}))
    message = prompt.first_message(battle, events, text)
    assert message == sample("first")
    assert len(message) == 2626


def test_the_turn_6_message_character_for_character() -> None:
    text = BattleText("p1")
    text.feed((START + "\n" + TURNS_1_TO_4).split("\n"))
    events = text.feed(TURN_5.split("\n"))
    order = ["Granbull", "Palkia", "Virizion", "Vivillon", "Carbink", "Weavile"]
    battle = battle_after("\n".join((START, TURNS_1_TO_4, TURN_5)),
                          request(order, {"Granbull": 227, "Virizion": 0, "Carbink": 0}))
    message = prompt.later_message(battle, events, text)
    assert message == sample("turn6")
    assert len(message) == 1175


def test_an_ability_poke_env_infers_is_not_shown_before_a_pop_up_revealed_it() -> None:
    """Rotom-Heat has one possible ability (Levitate): poke-env fills it in, the model is told it only once seen."""
    text = BattleText("p1")
    lines = START + "\n" + TURNS_1_TO_4
    text.feed(lines.split("\n"))
    battle = battle_after(lines, request(["Granbull", "Palkia", "Virizion", "Vivillon", "Carbink", "Weavile"],
                                         {"Virizion": 0, "Carbink": 0}))
    assert battle.opponent_active_pokemon.ability == "levitate"
    message = prompt.later_message(battle, [], text)
    rotom = message.split("OPPONENT (Player 2):\n")[1].split("\nALSO SEEN")[0]
    assert rotom == ("- Rotom-Heat [ACTIVE], Electric/Fire, L83, HP 43%\n  Stat changes: spa -2, atk -1\n"
                     "  Moves seen: Overheat")


@pytest.mark.parametrize("name", ["first", "turn6"])
def test_the_samples_are_the_methods_text(name: str) -> None:
    """The expected texts are the method's samples as printed (2,626 and 1,175 characters)."""
    assert sample(name).startswith("BATTLE LOG\n" if name == "first" else "NEW EVENTS\n")
    assert sample(name).endswith(prompt.CLOSING_LINE)


# ---- the state part in other situations -----------------------------------------------------------

BEFORE_GRANBULL = START + "\n" + TURNS_1_TO_4.split("\n|\n|switch|p1a: Granbull")[0]


def forced(order: list[str], hp: dict[str, int], reviving: bool = False) -> dict[str, Any]:
    """The request of a forced switch (after a faint, or Revival Blessing's choice of a fainted Pokémon)."""
    req = request(order, hp)
    del req["active"]
    req["forceSwitch"], req["noCancel"] = [True], True
    req["side"]["pokemon"][0]["reviving"] = reviving
    return req


def test_a_forced_switch_after_a_faint_shows_the_fainted_pokemon_as_fainted() -> None:
    text = BattleText("p1")
    events = text.feed(BEFORE_GRANBULL.split("\n"))
    battle = battle_after(BEFORE_GRANBULL, forced(["Virizion", "Palkia", "Granbull", "Vivillon", "Carbink", "Weavile"],
                                                  {"Virizion": 0, "Carbink": 0}))
    message = prompt.later_message(battle, events[-3:], text)
    own = message.split("YOUR ACTIVE POKÉMON:\n")[1].split("\nYOUR BENCH")[0]
    assert own == "- Virizion [fainted]"
    assert "Rotom-Heat [ACTIVE], Electric/Fire, L83, HP 43%\n  Stat changes: spa -2\n" in message
    assert message.split("YOUR LEGAL ACTIONS\n")[1].split("\n\n")[0] == \
        "1. switch Palkia-Origin\n2. switch Granbull\n3. switch Vivillon-Ocean\n4. switch Weavile"


def test_revival_blessing_is_worded_as_reviving() -> None:
    lines = BEFORE_GRANBULL.split("\n|faint|p1a: Virizion")[0].replace("|-damage|p1a: Virizion|0 fnt", "|-damage|p1a: Virizion|20/283")
    lines += "\n|move|p1a: Virizion|Revival Blessing|p1a: Virizion"
    battle = battle_after(lines, forced(["Virizion", "Palkia", "Granbull", "Vivillon", "Carbink", "Weavile"],
                                        {"Virizion": 20, "Carbink": 0}, reviving=True))
    assert [a.text for a in prompt.legal_actions(battle)] == ["revive Carbink"]


def test_a_terrain_set_as_the_leads_came_in_reads_naturally() -> None:
    lines = START.replace("|turn|1", "|-fieldstart|move: Psychic Terrain|[from] ability: Psychic Surge|[of] p2a: Calyrex\n|turn|1")
    text = BattleText("p1")
    events = text.feed(lines.split("\n"))
    battle = battle_after(lines, request(["Carbink", "Palkia", "Granbull", "Vivillon", "Virizion", "Weavile"], {}))
    message = prompt.first_message(battle, events, text)
    assert "\n\nFIELD\nTerrain: Psychic Terrain (since the start)\n\n" in message
    assert "[The opposing Calyrex's Psychic Surge]" in events
