"""Decision quality on real games: positions from the pinned simulator, the engine's damage against
Showdown's, and `pokebench analyse` on a real bot run (real server, real poke-env, real poke-engine)."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from support.existing_server import on_server
from support.games import REPO_DIR
from support.stored_run import copy_of

pytest.importorskip("poke_engine", reason="poke-engine is not installed: `make setup` builds it")

from pokebench.analysis.analyse import analyse_runs  # noqa: E402
from pokebench.analysis.cache import cache_path, read_entries  # noqa: E402
from pokebench.analysis.quality import read_quality  # noqa: E402
from pokebench.analysis.settings import Settings  # noqa: E402
from pokebench.engine.damage_check import check_game, summarise  # noqa: E402
from pokebench.engine.from_messages import player_battle, player_name, player_positions  # noqa: E402
from pokebench.engine.from_showdown import engine_action, game_positions, position_from_showdown  # noqa: E402
from pokebench.engine.sets import SetTable  # noqa: E402
from pokebench.engine.names import VOLATILE_DURATIONS  # noqa: E402
from pokebench.engine.state import build_state  # noqa: E402
from pokebench.results.store import RunStore  # noqa: E402
from pokebench.publish import publish  # noqa: E402

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

#: Small searches: the test checks behaviour, not the published settings.
SETTINGS = Settings(iterations=300, samples=2)


def _id(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


@pytest.fixture(scope="module")
def run_dir(stored_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of the reference bots: 6 seeded games (bots-smoke, one pair per matchup); this module's copy
    of the session's stored run (tests/conftest.py), which the analysis writes its cache into."""
    return copy_of(stored_run, tmp_path_factory.mktemp("analysis"))


@pytest.fixture(scope="module")
def records(run_dir: Path) -> list[dict]:
    with RunStore.open_existing(run_dir / "bots-smoke" / "store.sqlite") as store:
        return list(store.records())


@pytest.fixture(scope="module")
def games(records: list[dict]) -> dict:
    replayed = game_positions([(r["game_id"], r["input_log"]) for r in records])
    return {g.id: g for g in replayed}


def test_positions_hold_the_games_teams_and_the_choices_of_the_input_log(records, games) -> None:
    for record in records:
        game = games[record["game_id"]]
        first = game.decisions[0]
        for side in ("p1", "p2"):
            state = first.state["sides"][side]["pokemon"]
            team = record[f"{side}team"]
            assert [(m["species"], m["level"], m["item"], m["ability"], sorted(x["id"] for x in m["moves"]),
                     m["tera_type"].lower()) for m in state] == [
                (_id(t["species"]), t["level"], _id(t["item"]), _id(t["ability"]), sorted(_id(x) for x in t["moves"]),
                 t["teraType"].lower()) for t in team]
        # every decision's answer is the input log's next choice of that side, in order
        for side in ("p1", "p2"):
            logged = [line.split(" ", 1)[1] for line in record["input_log"] if line.startswith(f">{side} ")]
            assert [d.choice for d in game.side_decisions(side)] == logged


def test_every_decision_gives_an_engine_state_with_the_choice_among_its_actions(games) -> None:
    import poke_engine

    for game in games.values():
        for decision in game.decisions:
            position = position_from_showdown(decision)
            assert position.side_one.mons[position.side_one.active].hp > 0 or decision.request.get("forceSwitch")
            state = build_state(position)
            if decision.index % 7 == 0:  # the choice is an action the engine offers (a sample, searches cost)
                result = poke_engine.monte_carlo_tree_search(state, iterations=50)
                offered = {o.move_choice for o in result.side_one}
                assert engine_action(decision.choice, decision.state["sides"][decision.side]) in offered


#: What a player's view may hold otherwise than Showdown's state, and why it does not matter to the engine: a
#: benched Pokémon's stale disabled moves; a type change held as a volatile; what Showdown clears when a Pokémon
#: faints (its boosts, volatiles, Terastallization: the view keeps the side's Tera spent on the Pokémon itself).
VIEW_ONLY_VOLATILES = {"typechange"}


def _views_and_truths(records, games):
    """For every decision of the stored games: (game id, decision index), the deciding player's view (one sample)
    and Showdown's full information."""
    sets = SetTable.load()
    for record in records:
        game = games[record["game_id"]]
        for decision in game.decisions:
            name = player_name(record["input_log"], decision.side)
            [view] = player_positions(game, decision, name, sets, random.Random(0), 1)
            yield (record["game_id"], decision.index), view, position_from_showdown(decision)


def _own_side_facts(position) -> dict:
    """Side one's facts a player knows exactly (its own team, its active's state) and the field."""
    side, field = position.side_one, position.field
    alive = {m.species: (m.hp, m.max_hp, m.stats, m.status, m.rest_turns, m.item, m.ability, m.tera_type,
                         [(slot.id, slot.pp) for slot in m.moves]) for m in side.mons if not m.fainted}
    active = side.mons[side.active]
    facts = {"alive": alive, "active": active.species, "field": field, "conditions": side.conditions}
    if not active.fainted:
        facts |= {"boosts": side.boosts, "volatiles": side.volatiles - VIEW_ONLY_VOLATILES,
                  "toxic_count": side.toxic_count, "substitute_hp": side.substitute_hp, "types": active.types,
                  "engine_durations": [getattr(build_state(position).side_one.volatile_status_durations, name)
                                       for name in VOLATILE_DURATIONS],
                  "terastallized": active.terastallized, "tera_used": side.tera_used}
    return facts


def test_a_players_view_of_its_own_side_and_the_field_is_showdowns_own_state(records, games) -> None:
    """At every decision of real games, what the player knows exactly (its team: HP, stats, status, Rest's turns,
    item, ability, moves and PP; its active's boosts, volatiles and their turns, bad poison, Terastallization; the
    field with the weather's and the terrain's turns) equals the full information of Showdown's own state."""
    compared = 0
    for where, view, truth in _views_and_truths(records, games):
        assert _own_side_facts(view) == _own_side_facts(truth), where
        compared += 1
    assert compared > 100


def _shown_opponent_facts(position) -> tuple[dict, dict[str, tuple[bool, float, str]]]:
    """Side two's facts the battle showed the player: its active's species, status, boosts, volatiles, substitute,
    bad poison's count, Terastallization, types and Protects in a row; its side's conditions and Wish; whether it
    replaces a fainted Pokémon at once or still moves this turn (after a pivot); and each of its Pokémon the
    player has seen: fainted, share of HP, status. (Not its last move: Showdown forgets it at a switch-in, the
    view writes SWITCHED_IN, the same to the engine; nor the turns of timed volatiles the lines do not count.)"""
    side = position.side_two
    active = side.mons[side.active]
    facts = {"active": active.species, "conditions": side.conditions, "wish": side.wish,
             "force_switch": side.force_switch, "still_to_move": side.still_to_move}
    if not active.fainted:
        facts |= {"status": active.status, "boosts": side.boosts, "volatiles": side.volatiles - VIEW_ONLY_VOLATILES,
                  "substitute": side.substitute_hp > 0, "toxic_count": side.toxic_count,
                  "terastallized": active.terastallized, "types": active.types, "protect_streak": side.protect_streak}
    mons = {m.species: (m.fainted, m.hp / m.max_hp, m.status) for m in side.mons}
    return facts, mons


def test_a_players_view_of_what_the_opponent_showed_is_showdowns_own_state(records, games) -> None:
    """At every decision of real games, what the battle showed of the opponent (`_shown_opponent_facts`) equals
    Showdown's full information, HP to the shown percentage (a benched Regenerator's third included)."""
    compared = 0
    for where, view, truth in _views_and_truths(records, games):
        (facts, seen), (true_facts, mons) = _shown_opponent_facts(view), _shown_opponent_facts(truth)
        assert facts == true_facts, where
        for species, (fainted, share, status) in seen.items():
            if species in mons:  # shown (the others are drawn from the sets)
                true_fainted, true_share, true_status = mons[species]
                assert (fainted, status) == (true_fainted, true_status), (*where, species)
                assert abs(share - true_share) <= 0.015, (*where, species)
        compared += 1
    assert compared > 100


def test_a_quark_drive_or_protosynthesis_in_showdowns_state_reaches_the_engine_with_its_stat(games) -> None:
    """Showdown keeps the boosted stat apart (``quarkdrive`` with ``bestStat: def``); the engine's volatile names it
    (``QUARKDRIVEDEF``), as the player's view reads it from the ``-start`` line."""
    decision = next(iter(games.values())).decisions[0]
    state = copy.deepcopy(decision.state)
    for volatile, stat in (("quarkdrive", "def"), ("protosynthesis", "spa")):
        side = state["sides"][decision.side]
        side["pokemon"][side["active"][0]]["volatiles"] = {volatile: {"id": volatile, "bestStat": stat}}
        position = position_from_showdown(dataclasses.replace(decision, state=state))
        assert position.side_one.volatiles == {volatile + stat}
        assert {str(v).upper() for v in build_state(position).side_one.volatile_statuses} == {f"{volatile}{stat}".upper()}


def test_the_players_view_knows_only_what_its_messages_revealed(records, games) -> None:
    sets = SetTable.load()
    record = records[0]
    game = games[record["game_id"]]
    for decision in game.decisions[::5]:
        name = player_name(record["input_log"], decision.side)
        battle = player_battle(game, decision, name)
        foe = "p2" if decision.side == "p1" else "p1"
        seen = [line.split("|")[3].split(",")[0] for line in game.messages[decision.side][:decision.messages]
                if line.startswith(("|switch|", "|drag|")) and line.split("|")[2].startswith(foe)]
        assert sorted({_id(m.species) for m in battle.opponent_team.values()}) == sorted({_id(s) for s in seen})
        assert {_id(m.species) for m in battle.team.values()} == {_id(t["species"]) for t in record[f"{decision.side}team"]}
        for position in player_positions(game, decision, name, sets, random.Random(0), 2):
            build_state(position)


def test_the_engines_damage_contains_what_showdown_dealt(games) -> None:
    hits = [hit for game in games.values() for hit in check_game(game)]
    share, compared, kinds = summarise(hits)
    print(f"\ndamage cross-check: {share:.3f} of {compared} hits contained; kinds: {dict(kinds)}")
    assert compared >= 50
    assert share >= 0.8, kinds


def test_analyse_scores_every_decision_once_and_orders_random_below_max_damage(run_dir, games) -> None:
    report = analyse_runs(["bots-smoke"], run_dir, SETTINGS, workers=2, spread=6, progress=False)
    decisions = sum(len(g.decisions) for g in games.values())
    assert (report.searched_games, report.decisions, report.repeats) == (len(games), decisions, 6)
    entries = list(read_entries(cache_path(run_dir / "bots-smoke")))
    assert len(entries) == decisions + 6

    again = analyse_runs(["bots-smoke"], run_dir, SETTINGS, workers=2, spread=6, progress=False)
    assert (again.searched_games, again.decisions, again.repeats) == (0, 0, 0)  # the cache: nothing searched
    assert len(list(read_entries(cache_path(run_dir / "bots-smoke")))) == len(entries)

    quality, spread = read_quality([run_dir / "bots-smoke"], [e["uid"] for e in entries], SETTINGS)
    assert len(quality) == decisions and len(spread) >= 6
    scored = quality[quality["options"] > 1]
    assert scored["regret"].notna().all() and scored["regret_full"].notna().all()
    assert (scored["regret"] >= -0.05).all() and (scored["regret"] <= 1).all()
    assert (scored["regret"].abs() < 1e-9).eq(scored["match"].astype(bool)).mean() > 0.95
    means = scored.groupby("player")["regret"].mean()
    print(f"\nmean regret: {means.to_dict()}")
    assert means["random"] > means["max-damage"]


def test_publish_writes_decision_quality_and_the_figures_beside_the_rating(run_dir, tmp_path) -> None:
    analyse_runs(["bots-smoke"], run_dir, SETTINGS, workers=2, progress=False)  # nothing when cached already
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    done = subprocess.run([sys.executable, "-m", "pokebench", "analyse", "bots-smoke", "--runs-dir", str(run_dir),
                           "--iterations", str(SETTINGS.iterations), "--samples", str(SETTINGS.samples)],
                          env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Analysed 6 games in " in done.stdout and ": 0 searched now (0 decisions, 0 searched twice);" in done.stdout
    out = publish(["bots-smoke"], tmp_path / "site", runs_dir=run_dir, n_bootstrap=20, analyse=True,
                  analysis=SETTINGS)
    table = pd.read_csv(out / "decision_quality.csv")
    ratings = pd.read_csv(out / "ratings.csv").set_index("player")
    assert len(table) and set(table["player"]) == set(ratings.index)
    assert (ratings["analysed_decisions"] > 0).all()
    assert (ratings["mean_regret_low"] <= ratings["mean_regret"]).all()
    assert (ratings["mean_regret"] <= ratings["mean_regret_high"]).all()
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "Mean regret" in index
    # the decisions searched: one with a single legal action has a row and no search (they were counted)
    assert f"each of {(table['options'] > 1).sum():,} decisions searched" in index and (table["options"] == 1).any()
    replay = (out / "replays" / f"{table['uid'].iloc[0]}.html").read_text(encoding="utf-8")
    assert "Engine:" in replay and "regret" in replay
    # published with the default settings, the analysis of other settings is not there: the publish says where it is
    plain = subprocess.run([sys.executable, "-m", "pokebench.cli.publish", "bots-smoke", "--runs-dir", str(run_dir),
                            "--out", str(tmp_path / "plain"), "--bootstrap", "5"], env=env, capture_output=True,
                           text=True, timeout=900)
    assert plain.returncode == 0 and pd.read_csv(tmp_path / "plain" / "decision_quality.csv").empty
    assert (f"so decision_quality.csv is empty; the runs' analysis holds {len(table)} decision(s) with "
            f"iterations={SETTINGS.iterations}, samples={SETTINGS.samples}. Publish those with the same --iterations "
            "and --samples.") in plain.stderr, plain.stderr[-2000:]


def test_a_player_searching_with_the_analysis_engine_is_flagged_beside_its_decision_quality(showdown, tmp_path) -> None:
    """The search bot declares `searches_with_engine`: its game records and players.json say so, and the
    leaderboard's decision-quality row carries the flag with the reason; Random's does not (no name matching)."""
    overrides, server_env = on_server(showdown)
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), **server_env)
    done = subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-search", "~players.search-200ms",
                           "matchups=[[search-1k,random]]", "pairs=1", "players.search-1k.iterations=100",
                           "players.search-1k.samples=1", "publish=false", "name=own-engine", *overrides],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = tmp_path / "runs"
    analyse_runs(["own-engine"], runs, SETTINGS, workers=2, spread=0, progress=False)
    out = publish(["own-engine"], tmp_path / "site", runs_dir=runs, n_bootstrap=0, anchor="random", analyse=True,
                  analysis=SETTINGS)
    settings = {p["player"]: p["settings"] for p in json.loads((out / "players.json").read_text(encoding="utf-8"))}
    assert settings["search-1k"].get("searches_with_engine") is True and "searches_with_engine" not in settings["random"]
    index = (out / "index.html").read_text(encoding="utf-8")
    board = index.split('<table class="quality-board">', 1)[1].split("</table>", 1)[0]
    rows = {name: row for row in board.split("<tr>")[2:] for name in ("search-1k", "random") if f">{name}</a>" in row}
    assert 'href="#own-engine"' in rows["search-1k"] and "own engine" not in rows["random"], board
    note = index.split('id="own-engine"', 1)[1].split("</p>", 1)[0]
    assert "search-1k searches with poke-engine" in note and "not comparable" in note, note


def test_the_analysis_line_says_only_what_was_asked_for() -> None:
    """With --no-quality it said '0 searched now (0 decisions, 0 searched twice) ... (0.000 s per decision)'."""
    from pokebench.analysis.analyse import AnalysisReport, report_line

    luck_only = AnalysisReport(games=42, searched_games=0, decisions=0, repeats=0, seconds=15.7, luck_games=42,
                               luck_turns=762)
    assert report_line(luck_only, None, quality=False, luck=True) == (
        "Analysed 42 games in 15.7 s: decision scores skipped (--no-quality); luck of 42 games measured now (762 turns).")
    both = AnalysisReport(games=30, searched_games=30, decisions=1293, repeats=0, seconds=35.2, luck_games=30,
                          luck_turns=526, shard_games=15)
    assert report_line(both, (0, 2), quality=True, luck=False) == (
        "Analysed shard 0/2: 15 of 30 games in 35.2 s: 30 searched now (1293 decisions, 0 searched twice; "
        "0.027 s per decision); luck skipped (--no-luck).")


def test_an_analysis_stopped_by_ctrl_c_says_so_keeps_what_it_cached_and_the_same_command_goes_on(stored_run,
                                                                                               tmp_path) -> None:
    """Ctrl-C printed a traceback of the worker pool (exit -2); the caches were sound."""
    import signal
    import time

    runs = copy_of(stored_run, tmp_path)
    cache = cache_path(runs / "bots-smoke")
    command = [sys.executable, "-m", "pokebench", "analyse", "bots-smoke", "--runs-dir", str(runs), "--workers", "1",
               "--iterations", "50", "--samples", "1"]
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (cache.is_file() and cache.read_text().count("\n")):
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the command and its workers
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "analyse: interrupted." in err and "Traceback" not in err, err[-3000:]
    cached = len(list(read_entries(cache)))
    assert cached > 0
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(list(read_entries(cache))) > cached
