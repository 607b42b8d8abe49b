"""PokéBench's battle text, line by line, against an independent renderer of the same games.

Recorded bot games (the short corpus of ``tests/data/text-corpus.json``) are replayed from their input
logs through the pinned simulator and each side's view is rendered by @pkmn/view's LogFormatter (a port
of the Showdown client's text parser; test-only npm packages in ``showdown-server/oracle``) and by
PokéBench. The long corpus: ``benchmarks/battle_text_oracle.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from support.games import REPO_DIR, play, results
from pokebench import paths
from pokebench.play.schedule import build_schedule
from pokebench.showdown import node
from pokebench.showdown.errors import ServerError
from pokebench.text.differential import (KEPT, compare_game, compare_lines, normalize_oracle,
                                        normalize_ours, summarize)
from pokebench.text.renderer import BattleText

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

CORPUS = json.loads((REPO_DIR / "tests" / "data" / "text-corpus.json").read_text())
MATCHUPS = [("random", "max-damage"), ("random", "heuristic"), ("max-damage", "heuristic")]
needs_oracle = pytest.mark.skipif(not (paths.text_oracle_dir() / "node_modules" / "@pkmn" / "view").is_dir(),
                                  reason="the text oracle's npm packages are needed: `make test` installs them")


@pytest.fixture(scope="module")
def corpus(showdown) -> list[tuple[dict, dict]]:
    """The short corpus: played on the real server, then replayed and rendered by the oracle."""
    if not (paths.text_oracle_dir() / "node_modules" / "@pkmn" / "view").is_dir():
        pytest.skip("the text oracle's npm packages are needed: `make test` installs them")
    specs = build_schedule("text-oracle", CORPUS["short"]["seed_text"], CORPUS["short"]["pairs"], MATCHUPS)
    games = [{"id": r.spec.game_id, **r.record} for r in results(play(showdown, specs))]
    return list(zip(games, node.run_text_oracle(games)))


def test_the_short_corpus_has_no_difference_that_changes_the_meaning(corpus) -> None:
    comparisons = [c for game, replayed in corpus for c in compare_game(game, replayed)]
    summary = summarize(comparisons)
    assert summary["sides"] == 2 * len(corpus) == 2 * 2 * len(MATCHUPS)
    assert summary["lines"] > 500
    assert summary["meaning_changing"] == 0, "\n".join(d.describe() for d in summary["meaning_changing_examples"])
    assert summary["identical_share"] > 0.99


def test_the_replay_is_the_recorded_game(corpus) -> None:
    """The oracle renders the game that was played: same turns, same winner, as each side received it."""
    for game, replayed in corpus:
        for side in ("p1", "p2"):
            lines = "\n".join(replayed[side]["chunks"]).splitlines()
            turns = [int(line.split("|")[2]) for line in lines if line.startswith("|turn|")]
            assert max(turns) == game["turns"]
            won = next(line.split("|")[2] if line.startswith("|win|") else "" for line in lines
                       if re.match(r"^\|(win\||tie$)", line))
            assert won == {"p1": game["p1"], "p2": game["p2"]}.get(game["winner"], "")
            text = replayed[side]["text"]
            assert text[0].startswith("Battle started between") and len(text) > 20


@needs_oracle
def test_a_missing_oracle_says_make_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(paths, "text_oracle_dir", lambda: tmp_path / "oracle")
    with pytest.raises(ServerError, match="make test"):
        node.run_text_oracle([{"id": "x", "input_log": []}])


# ---- what is set aside before comparing, and the differences kept on purpose ------------------


def test_presentation_is_set_aside_indentation_first() -> None:
    """The method indents only under ability pop-ups, the client under every minor event: indentation,
    section breaks, bold marks and the HP hover are presentation; user names become "Player N"."""
    oracle = ["Battle started between alice and bob!", "", "Go! **Granbull**!", "  (Granbull lost ||−93/302||30.8%|| of its health!)"]
    ours = ["Battle started between Player 1 and Player 2!", "Go! Granbull!", "(Granbull lost 30.8% of its health!)"]
    assert normalize_oracle(oracle, {"alice": "p1", "bob": "p2"}) == normalize_ours(ours) == ours
    assert normalize_ours(["[Rotom's Levitate]", "  It doesn't affect Rotom..."])[1] == "It doesn't affect Rotom..."


def test_every_kept_difference_is_explained_and_others_change_the_meaning() -> None:
    assert {k.name for k in KEPT} == {"capitalized line"}
    assert all(len(k.why) > 80 for k in KEPT)
    wrong_side = compare_lines(["[Luvdisc's Water Absorb]"], ["[The opposing Vaporeon's Water Absorb]"])
    missing = compare_lines(["A"], ["A", "The effects of the opposing Iron Bundle's Quark Drive wore off!"])
    number = compare_lines(["(Florges lost 72% of its health!)"], ["(Florges lost 72.0% of its health!)"])
    assert all(len(c.meaning_changing) == 1 for c in (wrong_side, missing, number))


def test_kept_a_capital_at_the_start_of_every_line() -> None:
    """Shields Down's template has two lines; the client capitalizes only the first one."""
    text = BattleText("p1")
    text.feed(["|player|p1|a||", "|player|p2|b||", "|start", "|switch|p2a: Minior|Minior-Meteor, L83|100/100",
               "|switch|p1a: Granbull|Granbull, L88|302/302"])
    ours = normalize_ours(text.feed(["|-formechange|p2a: Minior|Minior|[from] ability: Shields Down"]))
    assert ours[-1] == "(The opposing Minior stopped shielding itself.)"
    oracle = [line if i == 0 else line[0] + line[1].lower() + line[2:] for i, line in enumerate(ours)]
    assert oracle[-1] == "(the opposing Minior stopped shielding itself.)"
    diff = compare_lines(ours, oracle)
    assert [d.kept for d in diff.differences] == ["capitalized line"]


def test_roost_of_a_terastallized_pokemon_is_a_hint_and_a_faint_ends_terastallization() -> None:
    """Showdown sends Roost's -singleturn only for a Pokémon that is not Terastallized (a Terastallized Flying
    one gets a -hint: data/moves.ts, roost) and ends Terastallization at a faint (sim/battle.ts,
    faintMessages): Empoleon (Water/Steel), Terastallized into Flying, fainted and revived, does not lose the
    Flying type by Roost."""
    text = BattleText("p1")
    text.feed(["|player|p1|alice||", "|player|p2|bob||", "|start", "|switch|p1a: Granbull|Granbull, L88|302/302",
               "|switch|p2a: Empoleon|Empoleon, L84, F|100/100", "|-terastallize|p2a: Empoleon|Flying",
               "|switch|p2a: Rotom|Rotom-Heat, L83|100/100", "|switch|p2a: Empoleon|Empoleon, L84, F|60/100"])
    assert text.feed(["|move|p2a: Empoleon|Roost|p2a: Empoleon",
                      "|-hint|If a Terastallized Pokemon uses Roost, it remains Flying-type."])[-1] == \
        "(If a Terastallized Pokemon uses Roost, it remains Flying-type.)"
    text.feed(["|-damage|p2a: Empoleon|0 fnt", "|faint|p2a: Empoleon", "|-heal|p2: Empoleon|50/100|[from] move: Revival Blessing",
               "|switch|p2a: Empoleon|Empoleon, L84, F|50/100"])
    assert text.feed(["|move|p2a: Empoleon|Roost|p2a: Empoleon", "|-singleturn|p2a: Empoleon|move: Roost"]) == \
        ["The opposing Empoleon used Roost!"]


# ---- the differences the oracle found, fixed ---------------------------------------------------

START = ["|player|p1|alice||", "|player|p2|bob||", "|start", "|switch|p1a: Luvdisc|Luvdisc, L90|250/250",
         "|switch|p2a: Vaporeon|Vaporeon, L84|100/100"]


@pytest.mark.parametrize("lines, expected", [
    # The client clears Water Absorb's [of] (the attacker): the pop-up is the holder's.
    (["|-heal|p2a: Vaporeon|100/100|[from] ability: Water Absorb|[of] p1a: Luvdisc"],
     ["[The opposing Vaporeon's Water Absorb]", "  The opposing Vaporeon had its HP restored."]),
    # An -activate of a partial-trapping move is worded as its start.
    (["|-activate|p2a: Vaporeon|move: Whirlpool|[of] p1a: Luvdisc"], ["The opposing Vaporeon became trapped in the vortex!"]),
    (["|-activate|p2a: Vaporeon|move: Protect"], ["The opposing Vaporeon protected itself!"]),
    # A Quark Drive that ends in battle is shown; one that ends as its holder leaves is [silent].
    (["|-end|p2a: Vaporeon|Quark Drive"], ["The effects of the opposing Vaporeon's Quark Drive wore off!"]),
    (["|-end|p2a: Vaporeon|Quark Drive|[silent]"], []),
    # Exact HP (own Pokémon) with one decimal, as the client: 180/250 lost 28.0%, not 28%.
    (["|-damage|p1a: Luvdisc|180/250"], ["(Luvdisc lost 28.0% of its health!)"]),
    (["|-damage|p2a: Vaporeon|72/100"], ["(The opposing Vaporeon lost 28% of its health!)"]),
    (["|-fail|p1a: Luvdisc|move: Substitute|[weak]"], ["But it does not have enough HP left to make a substitute!"]),
])
def test_fixed_differences(lines: list[str], expected: list[str]) -> None:
    text = BattleText("p1")
    text.feed(START)
    assert text.feed(lines) == expected


def test_corpus_seeds_are_in_the_repository() -> None:
    assert sum(part["pairs"] for part in CORPUS["long"]) * 2 * len(MATCHUPS) >= 400
    assert len({part["seed_text"] for part in CORPUS["long"]} | {CORPUS["short"]["seed_text"]}) == 1 + len(CORPUS["long"])
    assert re.search(r"benchmarks/battle_text_oracle\.py", (REPO_DIR / "README.md").read_text())
