"""The engine bridge and the search bot: real poke-engine (Gen 9, Terastallization), real server, real poke-env.

Where poke-engine is not built (no Rust: `make setup` says so) the tests that need it are skipped
with the engine check's message; the check's own failure messages are tested everywhere.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import re
import signal
import subprocess
import sys
import threading
from typing import Any

import pytest

from support.games import BOTS, REPO_DIR, play, results
from pokebench.engine.check import INSTALL_COMMAND, EngineUnavailable, check_engine, offers_tera, verdict
from pokebench.engine.position import FieldSpec, MonSpec, MoveSlot, Position, SideSpec
from pokebench.engine.sets import SetTable
from pokebench.play.schedule import build_schedule

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

try:
    ENGINE, WHY_NOT = check_engine(), ""
except EngineUnavailable as err:
    ENGINE, WHY_NOT = "", str(err)
needs_engine = pytest.mark.skipif(not ENGINE, reason=WHY_NOT)

#: Small budgets: the tests check behaviour, not strength at the published budget.
TEST_BUDGET = {"iterations": 300, "samples": 2}


def mon(species: str = "pikachu", **changes: Any) -> MonSpec:
    fields: dict[str, Any] = dict(
        species=species, level=80, types=("electric",), base_types=("electric",), hp=200, max_hp=200,
        stats={"atk": 150, "def": 120, "spa": 150, "spd": 130, "spe": 200},
        moves=[MoveSlot("thunderbolt", 24), MoveSlot("voltswitch", 32)], item="lightball", ability="static",
        tera_type="water")
    return MonSpec(**{**fields, **changes})


def position(one: list[MonSpec], two: list[MonSpec] | None = None) -> Position:
    return Position(side_one=SideSpec(mons=one, active=0), side_two=SideSpec(mons=two or [mon("raichu")], active=0),
                    field=FieldSpec())


# ---- the engine check -------------------------------------------------------------------------


def test_check_refuses_a_missing_engine_a_wrong_version_and_a_build_without_terastallization():
    for found, actions, says in [(None, [], "is not installed"),
                                 ("0.0.47", ["thunderbolt-tera"], "0.0.47 is installed; PokéBench needs 0.0.48"),
                                 ("0.0.48", ["thunderbolt", "switch raichu"], "built without Gen 9 and Terastallization")]:
        problem = verdict(found, actions)
        assert problem is not None and says in problem, problem
        assert INSTALL_COMMAND in problem and "https://rustup.rs" in problem
    assert verdict("0.0.48", ["thunderbolt", "thunderbolt-tera"]) is None


def test_without_the_module_the_check_fails_loudly_with_the_install_command():
    code = ("import sys; sys.modules['poke_engine'] = None\n"  # the import fails as on a machine without it
            "from pokebench.engine.check import main; raise SystemExit(main())")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_DIR, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "poke-engine is not installed" in proc.stderr and INSTALL_COMMAND in proc.stderr


def test_a_run_with_the_search_bot_but_no_engine_stops_before_any_game_saying_what_to_do(tmp_path):
    code = ("import sys, runpy; sys.modules['poke_engine'] = None; sys.argv[0] = 'pokebench'\n"
            "runpy.run_module('pokebench', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code, "+run=bots-calibration", "publish=false", "pairs=1"],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO_DIR)}, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Player 'search': poke-engine is not installed" in proc.stderr and INSTALL_COMMAND in proc.stderr
    assert "~players.search" in proc.stderr
    assert not list(tmp_path.rglob("store.sqlite"))


@needs_engine
def test_the_engine_here_is_the_pinned_gen9_build_with_terastallization():
    assert ENGINE == "poke-engine 0.0.48 (gen 9, terastallization)"
    proc = subprocess.run([sys.executable, "-m", "pokebench.engine.check"], cwd=REPO_DIR, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == ENGINE


@needs_engine
def test_a_side_whose_tera_user_fainted_cannot_terastallize_again_and_the_check_sees_it():
    from pokebench.engine.search import Budget, search
    from pokebench.engine.state import build_state

    fresh = search([build_state(position([mon(), mon("raichu")]))], Budget(iterations=300))
    assert offers_tera(a.action for a in fresh.actions)
    used = position([mon(), mon("raichu", hp=0, terastallized=True, types=("water",))])
    spent = search([build_state(used)], Budget(iterations=300))
    actions = [a.action for a in spent.actions]
    assert actions and not offers_tera(actions)  # a real search result without "-tera" actions...
    assert "built without Gen 9 and Terastallization" in (verdict("0.0.48", actions) or "")  # ...fails the check


# ---- names and positions --------------------------------------------------------------------


@needs_engine
def test_names_the_engine_does_not_know_are_refused_naming_the_field():
    from pokebench.engine.errors import EngineError, guarded
    from pokebench.engine.state import build_state

    for bad, field in [(mon(species="pikachuu"), "side_one.mons[0].species"),
                       (mon(item="heavydutybootz"), "side_one.mons[0].item"),
                       (mon(moves=[MoveSlot("thunderbolt", 24), MoveSlot("thunderbolts", 24)]), "side_one.mons[0].moves[1]"),
                       (mon(ability="statik"), "side_one.mons[0].ability"),
                       (mon(tera_type="lava"), "side_one.mons[0].tera_type"),
                       (mon(status="burned"), "side_one.mons[0].status"),
                       (mon(status="slp", sleep_turns=4), "side_one.mons[0].sleep_turns")]:
        with pytest.raises(EngineError, match=re.escape(field)):
            build_state(position([bad]))
    import poke_engine  # a panic in the engine (a bad enum) is a BaseException: guarded makes it an EngineError

    state = poke_engine.State(side_one=poke_engine.Side(pokemon=[poke_engine.Pokemon(status="burned")]))
    with pytest.raises(EngineError, match="PanicException"):
        guarded("on a bad status", state.to_string)


@needs_engine
def test_what_the_engine_cannot_take_is_dropped_and_noted_not_a_panic_in_the_search():
    from pokebench.engine.search import Budget, search
    from pokebench.engine.state import build_state, representable

    encored = position([mon()])
    encored.side_one.volatiles = {"encore", "nosuchvolatile"}  # Encore without the encored move panics the engine
    encored.side_one.conditions = {"nosuchcondition": 1, "reflect": 3}
    kept = representable(encored)
    assert kept.side_one.volatiles == set() and kept.side_one.conditions == {"reflect": 3}
    assert len(kept.notes) == 3 and all("dropped" in n for n in kept.notes)
    encored.side_one.last_move = "thunderbolt"
    kept = representable(encored)
    assert kept.side_one.volatiles == {"encore"}
    assert search([build_state(kept)], Budget(iterations=200)).actions



@needs_engine
def test_timed_volatiles_turns_left_become_the_engines_counts_up_and_a_fresh_taunt_is_searched():
    from pokebench.engine.search import Budget, search
    from pokebench.engine.state import build_state

    # Showdown's turns left -> the engine's count up (Taunt and Encore end at 3, Yawn at 2); Slow Start counts down
    for name, left, count in (("taunt", 3, 0), ("taunt", 2, 1), ("taunt", 1, 2), ("encore", 2, 1), ("yawn", 1, 1),
                              ("slowstart", 4, 4)):
        timed = position([mon()])
        timed.side_one.volatiles, timed.side_one.volatile_turns = {name}, {name: left}
        timed.side_one.last_move = "thunderbolt"  # Encore's move
        state = build_state(timed)
        assert getattr(state.side_one.volatile_status_durations, name) == count, (name, left)
        if left == 3:  # passed as 3 the engine panicked: "Taunt duration cannot be 3 when taunt volatile is active"
            assert search([state], Budget(iterations=200)).actions


OWN_REQUEST = {"active": [{"moves": [{"move": m, "id": i, "pp": pp, "maxpp": pp, "target": "normal", "disabled": False}
                                     for m, i, pp in [("Thunderbolt", "thunderbolt", 24), ("Volt Switch", "voltswitch", 32)]]}],
               "side": {"name": "me", "id": "p1", "pokemon": [
                   {"ident": "p1: Pikachu", "details": "Pikachu, L92, M", "condition": "200/200", "active": True,
                    "stats": {"atk": 150, "def": 120, "spa": 150, "spd": 130, "spe": 200},
                    "moves": ["thunderbolt", "voltswitch"], "baseAbility": "static", "item": "lightball",
                    "pokeball": "pokeball", "ability": "static", "teraType": "Water", "terastallized": ""}]},
               "rqid": 3}


@needs_engine
def test_an_opponent_sleep_talking_two_turns_is_asleep_three_turns_at_most_and_the_engine_searches_it():
    import json
    import random

    from pokebench.engine.from_battle import positions_from_battle
    from pokebench.engine.from_messages import battle_from_messages
    from pokebench.engine.search import Budget, search
    from pokebench.engine.state import build_state

    lines = ["|player|p1|me|", "|player|p2|them|", "|switch|p1a: Pikachu|Pikachu, L92, M|200/200",
             "|switch|p2a: Snorlax|Snorlax, L84, M|100/100", "|turn|1", "|-status|p2a: Snorlax|slp"]
    for turn in (2, 3):
        lines += ["|move|p2a: Snorlax|Sleep Talk|p2a: Snorlax",
                  "|move|p2a: Snorlax|Body Slam|p1a: Pikachu|[from]Sleep Talk", f"|turn|{turn}"]
    battle = battle_from_messages([*lines, "|request|" + json.dumps(OWN_REQUEST)], "me")
    assert battle.opponent_active_pokemon.status_counter == 4  # poke-env counts both moves of each Sleep Talk
    [built] = positions_from_battle(battle, SetTable.load(), random.Random(1), 1)
    snorlax = built.side_two.mons[0]
    assert (snorlax.species, snorlax.status, snorlax.sleep_turns) == ("snorlax", "slp", 3)
    assert search([build_state(built)], Budget(iterations=300)).actions


#: States of real games on which poke-engine's search panics (benchmarks/engine_failures.py --opponent max-damage,
#: before the bridge held turns asleep at 3): a Snorlax or Dondozo Sleep Talking, on either side, asleep for
#: poke-env's count of 4 turns (1 / (4 - 4): a non-finite chance to wake).
PANICKING = REPO_DIR / "tests" / "data" / "engine-panics.txt"
SEARCH_EACH = """
import sys
from pokebench.engine.errors import EngineError
from pokebench.engine.search import Budget, search_texts
from pokebench.players.search import search_pool
for text in sys.stdin.read().splitlines():
    try:
        {call}
        print("searched")
    except EngineError as err:
        print(err)
"""


@needs_engine
def test_a_search_the_engine_panics_on_prints_nothing_in_the_worker_and_its_error_says_where():
    states = PANICKING.read_text().splitlines()
    outcome = {}
    for where, call in [("worker", "search_pool(1).submit(search_texts, [text], Budget(iterations=300)).result()"),
                        ("here", "search_texts([text], Budget(iterations=300))")]:
        proc = subprocess.run([sys.executable, "-c", SEARCH_EACH.format(call=call)], input="\n".join(states),
                              cwd=REPO_DIR, env={**os.environ, "RUST_BACKTRACE": "1"}, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr[-2000:]
        lines = proc.stdout.splitlines()
        assert len(lines) == len(states) and all("NonFinite" in line for line in lines), lines
        outcome[where] = proc.stderr, lines
    stderr, lines = outcome["worker"]  # the search bot's (and the analysis') workers hold the panic's output
    assert "panicked" not in stderr and "backtrace" not in stderr, stderr[-2000:]
    assert all(line.endswith("(at poke-engine's src/mcts.rs:114:33)") for line in lines)
    stderr, _ = outcome["here"]  # a process that does not hold it: Rust's hook prints each panic and its backtrace
    assert stderr.count("panicked at src/mcts.rs:114:33") == len(states) and "stack backtrace" in stderr


@pytest.mark.slow
@needs_engine
def test_a_failed_search_falls_back_and_is_recorded_in_the_decision_and_the_run_summary(showdown):
    import pandas as pd

    from pokebench.play.summary import engine_failure_line
    from pokebench.players.search import SearchBot

    states = PANICKING.read_text().splitlines()

    class PanickingSearchBot(SearchBot):
        """The search bot, given a state the engine panics on at every decision."""

        def state_texts(self, battle: Any, samples: int) -> list[str]:
            return states[:1]

    specs = build_schedule("search", "search-panics", 1, [("search", "random")])
    outcomes = results(play(showdown, specs, {**BOTS, "search": functools.partial(PanickingSearchBot, **TEST_BUDGET)}))
    rows = []
    for result in outcomes:
        side = "p1" if result.spec.p1 == "search" else "p2"
        searched = [d for d in result.decisions if d.side == side and d.extra["engine_error"] is not None]
        assert searched and all("NonFinite" in d.extra["engine_error"] and d.extra["engine_action"] is None
                                for d in searched)
        assert result.players[side]["fallbacks"] == len(searched)  # each played a random legal choice
        rows += [d.to_dict() for d in result.decisions]
    failed = sum(r.get("engine_error") is not None for r in rows)
    assert engine_failure_line(pd.DataFrame(rows)) == [
        f"Search engine: failed on {failed} of {failed} searches (each failure fell back to a random legal choice; "
        "its decision's engine_error says why)."]


@needs_engine
def test_every_name_of_the_pinned_random_battle_sets_is_known_to_the_engine_or_listed_as_approximated():
    from pokebench.engine.names import knows
    from pokebench.engine.state import APPROXIMATIONS, ITEMS_HELD_AS_NONE

    table = SetTable.load()
    unknown: dict[str, set[str]] = {}
    for entries in table.sets.values():
        for found, _ in entries:
            for kind, names in [("species", [found.species]), ("move", found.moves), ("ability", [found.ability]),
                                ("item", [found.item]), ("type", [found.tera_type] if found.tera_type else [])]:
                unknown.setdefault(kind, set()).update(n for n in names if not knows(kind, n))
    assert {k: v for k, v in unknown.items() if v} == {"item": set(ITEMS_HELD_AS_NONE)}
    assert all(item in APPROXIMATIONS["items poke-engine lacks"] for item in ITEMS_HELD_AS_NONE)


def test_sampled_sets_agree_with_everything_revealed_and_repeat_from_the_same_seed():
    import random

    from pokebench.engine.sets import Revealed

    table = SetTable.load()
    species = next(s for s in table.species if len(table.sets[s]) > 3)
    some = table.sets[species][0][0]
    seen = Revealed(species=species, level=some.level, moves=frozenset(some.moves[:2]), ability=some.ability)
    draws = [table.sample_set(seen, random.Random(7))[0] for _ in range(2)]
    assert draws[0] == draws[1] and draws[0] is not None
    for _ in range(30):
        found, why = table.sample_set(seen, random.Random(_))
        assert found is not None and not why
        assert found.level == some.level and set(some.moves[:2]) <= set(found.moves) and found.ability == some.ability
    impossible = dataclasses.replace(seen, moves=frozenset({"nosuchmove"}))
    found, why = table.sample_set(impossible, random.Random(1))
    assert found is not None and "sampled without moves" in why


# ---- the search bot in real games ------------------------------------------------------------


def _opponent_facts(lines: list[str], role: str) -> dict[str, Any]:
    """What `role`'s opponent showed in these protocol lines: species and level by nickname, moves, tera types."""
    other = "p2" if role == "p1" else "p1"
    species: dict[str, tuple[str, int]] = {}
    moves: dict[str, set[str]] = {}
    tera: dict[str, str] = {}
    for line in lines:
        parts = line.split("|")
        if len(parts) < 4 or not parts[2].startswith(f"{other}a: "):
            continue
        nick = parts[2].split(": ", 1)[1]
        if parts[1] in ("switch", "drag", "replace", "detailschange"):  # the latest details (Eiscue-Noice)
            details = parts[3].split(", ")
            level = next((int(d[1:]) for d in details[1:] if re.fullmatch(r"L\d+", d)), 100)
            species[nick] = (_id(details[0]), level)
        elif parts[1] == "move" and _id(parts[3]) != "struggle" and not any(p.startswith("[from]") for p in parts[4:]):
            # a move of its set: not Struggle (no PP or every move disabled), not one another move called
            moves.setdefault(nick, set()).add(_id(parts[3]))
        elif parts[1] == "-terastallize":
            tera[nick] = _id(parts[3])
    return {"species": species, "moves": moves, "tera": tera}


def _id(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def recording_search_bot() -> tuple[type, list[Any]]:
    from pokebench.players.search import SearchBot

    made: list[Any] = []

    class RecordingSearchBot(SearchBot):
        """The search bot, keeping the protocol lines it got and the positions it built at each decision."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.lines: list[str] = []
            self.built: list[tuple[int, list[Position]]] = []
            self.beliefs: list[dict[str, Any]] = []  # the weights of the sets of each opposing Pokémon it had seen
            made.append(self)

        async def _handle_battle_message(self, split_messages):  # type: ignore[override]
            self.lines.extend("|".join(m) for m in split_messages[1:])
            await super()._handle_battle_message(split_messages)

        def positions(self, battle, samples):  # type: ignore[override]
            from pokebench.engine.inference import SetBelief

            built = super().positions(battle, samples)
            self.built.append((len(self.lines), built))
            belief = SetBelief.from_battle(self.sets, battle, self.evidence)
            self.beliefs.append({species: belief.weights(species) for species in belief.facts})
            return built

    return RecordingSearchBot, made


@pytest.fixture(scope="module")
def search_games(showdown):
    """The search bot against random and max-damage, two mirror pairs each, its own positions recorded."""
    bot, made = recording_search_bot()
    specs = (build_schedule("search", "search-vs-random", 2, [("search", "random")])
             + build_schedule("search", "search-vs-max-damage", 2, [("search", "max-damage")]))
    outcomes = results(play(showdown, specs, {**BOTS, "search": functools.partial(bot, **TEST_BUDGET)},
                            concurrency=2))
    return outcomes, made


@pytest.mark.slow
@needs_engine
def test_the_search_bot_beats_the_reference_bots_and_records_its_settings(search_games):
    outcomes, _ = search_games
    wins = 0
    for result in outcomes:
        side = "p1" if result.spec.p1 == "search" else "p2"
        wins += result.record["winner"] == side
        summary = result.players[side]
        assert summary["search"] == {"iterations": 300, "duration_ms": 0, "decision_ms": 0, "samples": 2,
                                     "early_samples": 2, "near_best": 1.0, "inference": True, "engine": ENGINE,
                                     "endgame": 0, "seeded": False}
        assert summary["refusals"] == 0 and summary["fallbacks"] == 0, summary["fallback_reasons"]
        rows = [d for d in result.decisions if d.side == side]
        assert len(rows) == summary["decisions"] and sum(bool(d.extra["engine_action"]) for d in rows) > len(rows) / 2
    # a random player wins about half of these games against random and few against max-damage
    assert wins >= 6, f"the search bot won {wins} of {len(outcomes)}"


@pytest.mark.slow
@needs_engine
def test_the_search_bot_never_reads_the_opponents_hidden_team(search_games):
    """Each opponent field of each position it built is what its side's protocol had shown by then, or a sample."""
    outcomes, made = search_games
    table = SetTable.load()
    truth_matches = truth_checked = 0
    for player in made:
        role = player.game.side
        result = next(r for r in outcomes if r.spec.game_id == player.game.game_id)
        hidden = {_id(m["species"]): m for m in result.record["p2team" if role == "p1" else "p1team"]}
        assert player.built, "the bot built no position"
        for seen_lines, positions in player.built:
            facts = _opponent_facts(player.lines[:seen_lines], role)
            shown = {s for s, _ in facts["species"].values()}
            for sample in positions:
                opponent = sample.side_two.mons
                assert len(opponent) == 6
                revealed, drawn = opponent[:len(shown)], opponent[len(shown):]
                assert {m.species for m in revealed} == shown  # exactly the Pokémon shown, in the order seen
                for m in revealed:
                    nick = next(n for n, (s, _) in facts["species"].items() if s == m.species)
                    assert m.level == facts["species"][nick][1]
                    assert facts["moves"].get(nick, set()) <= {s.id for s in m.moves}
                    if nick in facts["tera"]:
                        assert m.terastallized and m.tera_type == facts["tera"][nick]
                    legal = {mv for s, _ in table.sets.get(m.species, []) for mv in s.moves} | facts["moves"].get(nick, set())
                    assert {s.id for s in m.moves} <= legal or not table.sets.get(m.species)
                    unrevealed = [s.id for s in m.moves if s.id not in facts["moves"].get(nick, set())]
                    truth = hidden.get(m.species)
                    if truth and unrevealed:
                        truth_checked += 1
                        truth_matches += set(unrevealed) <= {_id(x) for x in truth["moves"]}
                for m in drawn:
                    assert m.species not in shown and m.species in table.sets
                    truth_checked += 1
                    truth_matches += m.species in hidden
    # samples are not the hidden truth: many unrevealed moves and unseen Pokémon differ from it
    assert truth_checked > 50 and truth_matches < 0.6 * truth_checked, (truth_matches, truth_checked)


@pytest.mark.slow
@needs_engine
def test_the_search_bots_set_inference_is_a_function_of_the_lines_it_received(search_games):
    """The sets it weighed (all the evidence: hazards, recoil, Choice locks, move order) are those a ``Battle``
    rebuilt from its own received lines alone gives: nothing else (the hidden team) reaches the inference."""
    from pokebench.engine.from_messages import battle_from_messages
    from pokebench.engine.inference import SetBelief

    _, made = search_games
    table = SetTable.load()
    checked = evidence = 0
    for player in made:
        for (seen_lines, _), weighed in zip(player.built, player.beliefs):
            again = SetBelief.from_battle(table, battle_from_messages(player.lines[:seen_lines], player.username))
            assert {species: again.weights(species) for species in again.facts} == weighed
            checked += len(weighed)
            evidence += sum(bool(f.checks) for f in again.facts.values())
    assert checked > 50 and evidence > 10, (checked, evidence)


@pytest.mark.slow
@needs_engine
def test_positions_from_real_games_round_trip_through_the_engine(search_games):
    import poke_engine

    from pokebench.engine.state import build_state

    _, made = search_games
    positions = [p for player in made for _, built in player.built for p in built]
    assert len(positions) > 40
    def same(text: str) -> str:  # from_string reads "CONFUSION:" as NONE and CONFUSION: NONE is no volatile
        return text.replace("=NONE:", "=")

    for p in positions:
        text = build_state(p).to_string()
        assert same(poke_engine.State.from_string(text).to_string()) == same(text)
        for side in (p.side_one, p.side_two):
            for m in side.mons:
                assert f"{m.species.upper()},{m.level}," in text  # no name became NONE


@needs_engine
def test_a_decisions_time_is_shared_by_its_samples_searched_workers_at_a_time_unless_a_position_budget_is_given():
    from pokebench.engine.search import Budget
    from pokebench.players.search import position_budget

    assert position_budget(0, 0, 200, 4, 1) == Budget(duration_ms=50)  # four positions one after the other
    assert position_budget(0, 0, 200, 4, 2) == Budget(duration_ms=100)  # two rounds of two side by side
    assert position_budget(0, 0, 200, 3, 2) == Budget(duration_ms=100)
    assert position_budget(0, 0, 200, 1, 3) == Budget(duration_ms=200)
    assert position_budget(1000, 0, 200, 4, 1) == Budget(iterations=1000)  # reproducible work wins
    assert position_budget(0, 30, 200, 4, 1) == Budget(duration_ms=30)
    for bad, says in [((0, 0, 0, 4, 1), "decision_ms > 0"), ((0, 0, 3, 4, 1), "raise it or lower samples"),
                      ((0, 0, 200, 0, 1), "samples must be at least 1")]:
        with pytest.raises(ValueError, match=says):
            position_budget(*bad)


@needs_engine
def test_a_position_search_as_long_as_the_search_timeout_is_refused_before_any_game():
    from pokebench.players.search import SearchBot

    SearchBot.preflight(duration_ms=5000, search_timeout=6)
    with pytest.raises(RuntimeError, match=r"search bot: a position's search \(6000 ms\) would be taken for hung at "
                                           r"search_timeout=6 s: raise search_timeout"):
        SearchBot.preflight(duration_ms=6000, search_timeout=6)


@needs_engine
@pytest.mark.parametrize(("settings", "says"), [
    ({"workers": -2}, "workers must be 1 or more (or null: the cores less one), not -2"),
    ({"workers": 0}, "workers must be 1 or more"),
    ({"early_samples": -1}, "early_samples must be 0 (samples throughout) or more, not -1"),
    ({"endgame": 4, "iterations": 300}, "endgame needs a time budget (decision_ms or duration_ms): the engine's "
                                         "expectiminimax has no budget in iterations; with iterations, set endgame=0 "
                                         "(players.NAME.endgame=0)"),
    ({"endgame": -1}, "endgame must be a number of Pokémon left on both sides together, 0 to 12, not -1"),
])
def test_search_workers_or_early_samples_below_their_range_are_refused_before_any_game(settings, says):
    """workers=-2 used to pass the plan: every game of the search bot then failed, retry round after retry round,
    and the run ended asking to be started again."""
    from pokebench.players.search import SearchBot

    with pytest.raises(RuntimeError, match=re.escape(f"search bot: {says}")):
        SearchBot.preflight(**settings)


@needs_engine
def test_the_searches_of_a_decisions_positions_combine_shares_of_visits_averaged_over_all_the_actions():
    from pokebench.engine.errors import EngineError
    from pokebench.engine.search import StateSearch, combine

    one = StateSearch({"tackle": (60, 30.0), "switch eevee": (40, 28.0), "ember": (5, 1.0)}, 105)
    two = StateSearch({"tackle": (10, 2.0), "switch eevee": (50, 40.0)}, 60)  # e.g. a sampled trapping ability
    result = combine([one, two])
    # shares: tackle (60/105 + 10/60) / 2, switch (40/105 + 50/60) / 2, ember (5/105 + 0) / 2: each state counts
    # the same (summed visits would put tackle first: 70 against 90 for the switch, but 30 more in state one)
    assert [(a.action, a.visits) for a in result.actions] == [("switch eevee", 90), ("tackle", 70), ("ember", 5)]
    assert [a.share for a in result.actions] == pytest.approx([(40 / 105 + 50 / 60) / 2, (60 / 105 + 10 / 60) / 2,
                                                               5 / 105 / 2])
    assert result.best.value == pytest.approx((28 / 40 + 40 / 50) / 2)
    assert result.actions[2].value == pytest.approx(1 / 5)  # over the states that offer it
    assert (result.iterations, result.states, result.partial_actions) == (165, 2, ("ember",))
    weighted = combine([StateSearch({"tackle": (600, 300.0), "ember": (400, 190.0)}, 1000),
                        StateSearch({"tackle": (10, 2.0), "ember": (90, 60.0)}, 100)])
    assert weighted.best.action == "ember"  # 0.4 + 0.9 against 0.6 + 0.1, not 490 visits against 610
    with pytest.raises(EngineError, match="no action"):
        combine([StateSearch({}, 0)])


@needs_engine
def test_the_expectiminimax_plays_the_action_whose_worst_case_is_best_averaged_over_the_positions():
    from pokebench.engine.errors import EngineError
    from pokebench.engine.search import Budget, StateWorstCases, combine_worst_cases, worst_cases_text
    from pokebench.engine.state import build_state

    # a Gyarados at a sliver of its HP: Thunderbolt knocks it out whatever it does, the status moves do not
    moves = [MoveSlot("thunderbolt", 24), MoveSlot("thunderwave", 32), MoveSlot("protect", 16)]
    foe = mon("gyarados", types=("water", "flying"), base_types=("water", "flying"), hp=30,
              moves=[MoveSlot("waterfall", 24), MoveSlot("earthquake", 16)], item="leftovers", ability="intimidate")
    text = build_state(position([mon(moves=moves)], [foe])).to_string()
    one = worst_cases_text(text, Budget(duration_ms=30))
    assert one.depth >= 1 and {"thunderbolt", "thunderwave", "protect"} <= set(one.worst)
    result = combine_worst_cases([one, one])
    assert result.best.action.removesuffix("-tera") == "thunderbolt" and result.best.value > 0.5
    assert (result.method, result.iterations, result.states) == ("expectiminimax", 0, 2)
    with pytest.raises(EngineError, match="timed"):
        worst_cases_text(text, Budget(iterations=100))

    # each state's worst case averaged over the states that offer the action; the best has the whole share
    two = combine_worst_cases([StateWorstCases({"tackle": 40.0, "ember": 10.0, "switch eevee": 100.0}, 3),
                               StateWorstCases({"tackle": 0.0, "ember": 50.0}, 2)])  # a sampled trap: no switch
    assert [a.action for a in two.actions] == ["switch eevee", "ember", "tackle"]
    assert [a.share for a in two.actions] == [1.0, 0.0, 0.0]
    assert two.actions[1].value == pytest.approx(1 / (1 + math.exp(-0.0125 * 30)))
    assert (two.partial_actions, two.depth) == (("switch eevee",), 2)


@needs_engine
def test_the_near_best_choice_draws_only_actions_within_the_fraction_of_the_best_share_and_repeats_from_its_rng():
    import random

    from pokebench.engine.search import Budget, search
    from pokebench.engine.state import build_state
    from pokebench.players.search import near_best

    moves = [MoveSlot("thunderbolt", 24), MoveSlot("voltswitch", 32), MoveSlot("thunderwave", 32), MoveSlot("protect", 16)]
    result = search([build_state(position([mon(moves=moves), mon("eevee", types=("normal",), base_types=("normal",))]))],
                    Budget(iterations=3000))
    actions, best = result.actions, result.actions[0].share
    assert len(actions) > 3
    for fraction in (0.75, 0.3, 0.01):
        drawn = [near_best(actions, fraction, random.Random(7)) for _ in range(2)]
        assert drawn[0] == drawn[1]  # the same rng state, the same choice
        rng = random.Random(11)
        picks = [near_best(actions, fraction, rng).action for _ in range(300)]
        assert picks == [near_best(actions, fraction, r).action for r in [random.Random(11)] for _ in range(300)]
        within = {a.action for a in actions if a.share >= fraction * best}
        assert set(picks) == within  # only those, and each of them in 300 draws
    assert len(within) > 1  # at 1 % of the best's visits the choice is mixed
    assert {near_best(actions, 1.0, random.Random(seed)) for seed in range(20)} == {actions[0]}
    for bad in (0, 1.5, -0.2):
        with pytest.raises(ValueError, match="near_best must be"):
            near_best(actions, bad, random.Random(0))


@pytest.mark.slow
@needs_engine
def test_a_search_worker_stopped_for_good_is_killed_and_replaced_and_its_game_plays_on(showdown):
    """A worker stopped (as one stuck in the engine would be) holds every later search of the run: the decisions
    waiting on it fall back once the pool has finished nothing for search_timeout seconds, its workers are killed,
    and the next decisions search on new ones."""
    from pokebench.players.search import SearchBot, search_pool

    stopped: list[int] = []

    class StoppingSearchBot(SearchBot):
        """The search bot, stopping its pool's workers for good at its first decision from turn 3."""

        def state_texts(self, battle: Any, samples: int) -> list[str]:
            if battle.turn >= 3 and not stopped:  # the workers of the earlier turns' searches
                for process in list(search_pool(self.workers)._processes.values()):
                    os.kill(process.pid, signal.SIGSTOP)
                    stopped.append(process.pid)
            return super().state_texts(battle, samples)

    def release() -> None:  # without the bot's own check the games would wait on them for ever
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    guard = threading.Timer(60, release)
    guard.start()
    try:
        specs = build_schedule("search", "search-stopped", 1, [("search", "random")])
        outcomes = results(play(showdown, specs, {**BOTS, "search": functools.partial(
            StoppingSearchBot, **TEST_BUDGET, search_timeout=2)}))
    finally:
        guard.cancel()
        release()
    assert stopped
    failed = []
    for result in outcomes:
        side = "p1" if result.spec.p1 == "search" else "p2"
        decisions = [d for d in result.decisions if d.side == side]
        failed += [d.extra["engine_error"] for d in decisions if d.extra["engine_error"] is not None]
        assert any(d.turn > 3 and d.extra["engine_iterations"] for d in decisions)  # searched again after
    assert failed and all("finished no search in 2 s: taken for hung" in error or "the search worker died" in error
                          for error in failed), failed
    assert any("taken for hung" in error for error in failed)


@pytest.mark.slow
@needs_engine
def test_a_search_bot_on_a_time_budget_searches_every_position_of_a_decision_on_the_workers(showdown):
    """decision_ms=60 over 2 samples and 2 workers (4 early in the game): each position searched 60 ms (30 ms),
    side by side; the record says so."""
    from pokebench.players.search import SearchBot, is_early

    schedule: list[tuple[bool, int]] = []

    class SchedulingSearchBot(SearchBot):
        """The search bot, noting at each decision whether the game was early and how many positions it built."""

        def state_texts(self, battle: Any, samples: int) -> list[str]:
            schedule.append((is_early(battle), samples))
            return super().state_texts(battle, samples)

    specs = build_schedule("search", "search-timed", 1, [("search", "random")])
    outcomes = results(play(showdown, specs, {**BOTS, "search": functools.partial(
        SchedulingSearchBot, decision_ms=60, samples=2, early_samples=4, near_best=0.75, workers=2)}))
    for result in outcomes:
        side = "p1" if result.spec.p1 == "search" else "p2"
        summary = result.players[side]
        assert summary["search"] | {"engine": ""} == {"iterations": 0, "duration_ms": 60, "decision_ms": 60, "samples": 2,
                                                      "early_samples": 4, "near_best": 0.75, "inference": True,
                                                      "engine": "", "endgame": 0, "seeded": False}
        searched = [d for d in result.decisions if d.side == side and d.extra["engine_iterations"]]
        assert searched and summary["fallbacks"] == 0, summary["fallback_reasons"]
        # the engine's granularity, each position
        assert all(d.extra["engine_iterations"] >= d.extra["engine_positions"] * 1000 for d in searched)
        assert {d.extra["engine_positions"] for d in searched} == {2, 4}
    # early in a game 4 positions, later 2; the first decision (one opposing Pokémon shown, no move) is early
    assert schedule[0] == (True, 4) and (False, 2) in schedule
    assert all(samples == (4 if early else 2) for early, samples in schedule)


@pytest.mark.slow
@needs_engine
def test_a_search_bot_with_an_endgame_searches_by_expectiminimax_once_that_few_pokemon_are_left(showdown):
    from pokebench.players.search import SearchBot, pokemon_left

    searched: list[tuple[int, str]] = []

    class EndgameSearchBot(SearchBot):
        async def _search(self, battle: Any) -> Any:
            result = await super()._search(battle)
            searched.append((pokemon_left(battle), result.method))
            return result

    specs = build_schedule("search", "search-endgame", 1, [("search", "random")])
    outcomes = results(play(showdown, specs, {**BOTS, "search": functools.partial(
        EndgameSearchBot, decision_ms=40, samples=2, workers=2, endgame=9)}))
    assert {left <= 9 for left, _ in searched} == {True, False}  # both kinds of decision were met
    assert all(method == ("expectiminimax" if left <= 9 else "mcts") for left, method in searched), searched
    for result in outcomes:
        side = "p1" if result.spec.p1 == "search" else "p2"
        assert result.players[side]["search"]["endgame"] == 9
        assert result.players[side]["fallbacks"] == 0, result.players[side]["fallback_reasons"]
        rows = [d.extra for d in result.decisions if d.side == side and d.extra["engine_method"] == "expectiminimax"]
        assert rows and all(r["engine_depth"] >= 1 and r["engine_iterations"] == 0 for r in rows)


def test_the_engines_switch_to_a_pokemon_in_another_forme_is_the_switch_to_that_pokemon():
    """The position names Morpeko-Hangry `morpekohangry` where poke-env keeps `morpeko`: the engine's first choice
    was taken for an action not offered, and its second played (2 of 100 games against Foul Play)."""
    from poke_env.battle import Pokemon

    from pokebench.players.search import switch_target

    morpeko, garchomp, mew, mewtwo = (Pokemon(gen=9, species=s) for s in ("morpeko", "garchomp", "mew", "mewtwo"))
    assert switch_target([morpeko, garchomp], "morpekohangry") is morpeko
    assert switch_target([morpeko, garchomp], "garchomp") is garchomp
    assert switch_target([morpeko, garchomp], "pikachu") is None
    assert switch_target([mew, mewtwo], "mewtwo") is mewtwo and switch_target([mew, mewtwo], "mew") is mew
