"""Duplicate rolls (``rolls: duplicate``): the same roll for the same event in both games of a mirror pair.

The simulator's draws are checked in the pinned simulator itself (``tests/support/duplicate_rolls_draws.js``
records every draw a battle makes and the stream it came from); a pair is played through the real server and
replayed from its input log; the config is checked before any game.
"""

from __future__ import annotations

import asyncio
import json
import subprocess

import pytest

from pokebench.paths import showdown_package_dir
from pokebench.play.arena import HarnessError
from pokebench.play.plan import ConfigError, check_format, fingerprint, plan_run
from pokebench.play.runner import ask_format
from pokebench.play.schedule import build_schedule
from pokebench.seeds import pair_seeds
from pokebench.showdown import server as showdown_server
from pokebench.showdown.server import DUPLICATE_ROLLS, LocalShowdown
from support.games import REPO_DIR, play, results
from test_plan import config

pytestmark = pytest.mark.server

SEED = "sodium,0123456789abcdef0123456789abcdef"
TEAMS = ["sodium,11111111111111111111111111111111", "sodium,22222222222222222222222222222222"]


def battles(*specs: dict) -> list[dict]:
    """Play each battle (seed, both sides' choices per turn) in the pinned simulator; its draws and log."""
    out = subprocess.run(["node", str(REPO_DIR / "tests" / "support" / "duplicate_rolls_draws.js"),
                          str(showdown_package_dir())], input=json.dumps(list(specs)), capture_output=True,
                         text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def scoped(draws: list[list], prefix: str) -> dict[str, list]:
    """The draws of every scope that begins with `prefix`: scope -> [(kind, value), ...]."""
    out: dict[str, list] = {}
    for scope, kind, value in draws:
        if scope.startswith(prefix):
            out.setdefault(scope, []).append((kind, value))
    return out


def test_a_pokemons_kth_move_gets_the_same_draws_whatever_the_other_side_did():
    same = [["move 1", "move 1"]] * 3
    other = [["move 1", "move 2"], ["move 1", "move 3"], ["move 1", "move 1"]]
    first, second, stock = battles({"seed": f"{SEED},duplicate", "teams": TEAMS, "choices": same},
                                    {"seed": f"{SEED},duplicate", "teams": TEAMS, "choices": other},
                                    {"seed": SEED, "teams": TEAMS, "choices": same})
    assert first["duplicate"] and second["duplicate"] and not stock["duplicate"] and not stock["draws"]
    ours = scoped(first["draws"], "move|p1|"), scoped(second["draws"], "move|p1|")
    both = sorted(set(ours[0]) & set(ours[1]))
    assert len(both) >= 2  # side one's lead moved at least twice in both battles
    for scope in both:  # an accuracy check, a critical hit, a damage roll...: each the same in both battles
        assert ours[0][scope] == ours[1][scope], scope
    # what the other side did was not the same: its moves drew differently
    assert scoped(first["draws"], "move|p2|") != scoped(second["draws"], "move|p2|")


def test_a_duplicate_pair_plays_through_the_server_and_replays_from_its_input_log(showdown):
    specs = build_schedule("t", "duplicate", 1, [("max-damage", "heuristic")], rolls="duplicate")
    records = [r.record for r in results(play(showdown, specs))]
    for record in records:
        assert record["battle_seed"] == pair_seeds("duplicate", 1).battle_seed + ",duplicate"
        assert (record["p1_team_seed"], record["p2_team_seed"]) == (pair_seeds("duplicate", 1).p1_team_seed,
                                                                    pair_seeds("duplicate", 1).p2_team_seed)
        replay = subprocess.run(["node", "--require", str(showdown_package_dir() / DUPLICATE_ROLLS), "pokemon-showdown",
                                 "simulate-battle", "--skip-build"], cwd=showdown_package_dir(),
                                input="\n".join(record["input_log"]) + "\n", capture_output=True, text=True,
                                check=True).stdout
        turns = [int(line.split("|")[2]) for line in replay.splitlines() if line.startswith("|turn|")]
        winner = [line.split("|")[2] for line in replay.splitlines() if line.startswith("|win|")]
        assert max(turns) == record["turns"] and winner == [record[record["winner"]]]


def test_rolls_are_checked_before_any_game_and_a_stock_run_keeps_its_identity():
    with pytest.raises(ConfigError, match="'rolls' must be stock or duplicate .* not 'dupe'. Example: rolls=duplicate"):
        plan_run(config("+run=bots-smoke", "rolls=dupe"), "t")
    plan = plan_run(config("+run=bots-smoke", "rolls=duplicate"), "t")
    assert plan.specs and all(s.battle_seed.endswith(",duplicate") for s in plan.specs)
    stock = plan_run(config("+run=bots-smoke"), "t")
    assert [s.battle_seed + ",duplicate" for s in stock.specs] == [s.battle_seed for s in plan.specs]
    assert [(s.p1_team_seed, s.p2_team_seed) for s in stock.specs] == [(s.p1_team_seed, s.p2_team_seed)
                                                                        for s in plan.specs]
    classes = {name: type(None) for name in stock.factories}
    assert "rolls" not in fingerprint(config("+run=bots-smoke"), classes)  # stores of earlier runs resume
    assert fingerprint(config("+run=bots-smoke", "rolls=duplicate"), classes)["rolls"] == "duplicate"


def test_a_server_without_the_duplicate_rolls_refuses_such_a_run_before_any_game_and_such_a_game(showdown, monkeypatch):
    check_format("gen9randombattle", asyncio.run(ask_format(showdown, "gen9randombattle")), "duplicate")
    monkeypatch.setattr(showdown_server, "DUPLICATE_ROLLS", "dist/sim/index.js")  # a preload that is not it
    with LocalShowdown() as bare:
        info = asyncio.run(ask_format(bare, "gen9randombattle"))
        check_format("gen9randombattle", info, "stock")
        with pytest.raises(ConfigError, match="rolls=duplicate: the Showdown server cannot play duplicate rolls .* "
                                              "or play rolls=stock"):
            check_format("gen9randombattle", info, "duplicate")
        spec = build_schedule("t", "bare", 1, [("random", "max-damage")], rolls="duplicate")[0]
        outcome = play(bare, [spec])[0]  # the plugin itself refuses to register the game
        assert isinstance(outcome, HarnessError) and "cannot play duplicate rolls" in outcome.detail, outcome
