"""The luck of every turn, on real games (real server, real poke-env, real poke-engine): a turn's luck weighs
to zero over its outcomes, a critical hit is the critting side's good luck, a game's adjusted score is its score
minus its turns' luck, a game with no turn to value is reported, and `pokebench analyse` caches the luck."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from support.games import REPO_DIR
from support.stored_run import NAME as RUN, copy_of

pytest.importorskip("poke_engine", reason="poke-engine is not installed: `make setup` builds it")

from pokebench.analysis.analyse import analyse_runs  # noqa: E402
from pokebench.analysis.cache import cache_path, game_key, luck_path, read_entries  # noqa: E402
from pokebench.analysis.analyse import recorded_policies  # noqa: E402
from pokebench.analysis.luck import (EVENTS, KnownPolicy, MoveTurn, action_luck, expected_value, game_luck,  # noqa: E402
                                     move_turns, turn_luck, turn_outcomes)
from pokebench.analysis.settings import ACTION_WEIGHT, SKILL_SHIFTS, Settings  # noqa: E402
from pokebench.analysis.luck_rows import LUCK_COLUMNS, LUCK_TURN_COLUMNS, luck_rows, read_luck  # noqa: E402
from pokebench.analysis.value import load_value_model  # noqa: E402
from pokebench.engine import from_showdown  # noqa: E402
from pokebench.engine.from_showdown import GamePositions, game_positions  # noqa: E402
from pokebench.publish import publish  # noqa: E402
from pokebench.results.reading import load_results  # noqa: E402
from pokebench.results.store import RunStore  # noqa: E402

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)


@pytest.fixture(scope="module")
def run_dir(stored_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real run of the reference bots: 6 seeded games (bots-smoke, one pair per matchup); this module's copy
    of the session's stored run (tests/conftest.py), which the analysis writes its cache into."""
    return copy_of(stored_run, tmp_path_factory.mktemp("luck"))


@pytest.fixture(scope="module")
def records(run_dir: Path) -> list[dict]:
    with RunStore.open_existing(run_dir / RUN / "store.sqlite") as store:
        return list(store.records())


@pytest.fixture(scope="module")
def games(records: list[dict]) -> list[GamePositions]:
    return game_positions([(r["game_id"], r["input_log"]) for r in records])


def _luck_of(move_turn: MoveTurn):
    return turn_luck(*move_turn.position(), load_value_model(), move_turn.first.turn)


def test_a_turns_luck_weighs_to_zero_over_its_outcomes_and_rolls(games) -> None:
    checked = with_chance = 0
    for game in games:
        for move_turn in list(move_turns(game))[:8]:
            luck, pairs = _luck_of(move_turn)
            assert sum(p for p, _ in pairs) == pytest.approx(1.0, abs=1e-9)
            assert sum(p * x for p, x in pairs) == pytest.approx(0.0, abs=1e-9)
            assert luck.luck == pytest.approx(luck.v_after - luck.expected)
            assert 0.0 <= luck.v_after <= 1.0 and 0.0 <= luck.expected <= 1.0
            assert luck.event in (*EVENTS, "")
            checked += 1
            with_chance += len(pairs) > 1
    assert checked >= 20 and with_chance >= 10, (checked, with_chance)


def test_a_turn_spent_recharging_is_valued_with_the_other_sides_chance(games) -> None:
    """Showdown records a turn spent recharging (after Hyper Beam, Giga Impact...) as ``move recharge``; the luck
    values it as the engine's no-action, so the other side's move still has its outcomes, weighing to zero."""
    valued = 0
    for game in games:
        for move_turn in list(move_turns(game))[:4]:
            recharging = replace(move_turn, first=replace(move_turn.first, choice="move recharge"))
            luck, pairs = _luck_of(recharging)
            assert sum(p * x for p, x in pairs) == pytest.approx(0.0, abs=1e-9)
            valued += len(pairs) > 1
    assert valued >= 3, valued


def test_the_rows_a_value_is_fitted_on_give_the_turns_luck(games) -> None:
    """TurnOutcomes.rows (what benchmarks/luck_value_fit.py fits V on): V of the row that happened minus the
    probability-weighted V of every row is the turn's luck, and the rows' probabilities sum to 1."""
    model = load_value_model()
    checked = 0
    for game in games:
        for move_turn in list(move_turns(game))[:5]:
            features, finished, weights, happened = turn_outcomes(*move_turn.position()).rows()
            values = np.where(np.isnan(finished), model.of_features(features), finished)
            luck, _ = _luck_of(move_turn)
            assert weights.sum() == pytest.approx(1.0, abs=1e-9)
            assert values[happened] - weights @ values == pytest.approx(luck.luck, abs=1e-9)
            checked += 1
    assert checked >= 20


def test_a_turns_luck_with_v_shifted_is_the_shifted_values_of_the_same_rows(games) -> None:
    """The skill shift (luck_rows.skill_shifts picks a game's): each turn's luck at each shift is V with its log-odds
    raised by that shift times the share of HP left, on the same outcome rows, the same row happening; so it weighs
    to zero over them like V's own. Shift 0 is V's own luck; the first turn, all HP standing, takes the shifts whole."""
    model = load_value_model()
    checked = 0
    for game in games:
        for number, move_turn in enumerate(list(move_turns(game))[:5]):
            state, one, two, real = move_turn.position()
            features, finished, weights, happened = turn_outcomes(state, one, two, real).rows()
            luck, _ = _luck_of(move_turn)
            assert luck.shifts == pytest.approx(np.asarray(SKILL_SHIFTS) * luck.shifts[-1] / SKILL_SHIFTS[-1])
            assert 0 < luck.shifts[-1] <= SKILL_SHIFTS[-1] and (number or luck.shifts[-1] == SKILL_SHIFTS[-1])
            logits = features @ np.asarray(model.coefficients)
            for shift, expected, measured in zip(luck.shifts, luck.expected_by_shift, luck.luck_by_shift):
                values = np.where(np.isnan(finished), 1 / (1 + np.exp(-(logits + shift))), finished)
                assert weights @ values == pytest.approx(expected, abs=1e-9)
                assert values[happened] - weights @ values == pytest.approx(measured, abs=1e-9)
            assert luck.luck_by_shift[SKILL_SHIFTS.index(0.0)] == pytest.approx(luck.luck, abs=1e-12)
            checked += 1
    assert checked >= 20


def test_a_critical_hit_is_good_luck_for_the_side_that_landed_it(games) -> None:
    """Every turn of the games with one critical hit, landed by a side whose foe stayed standing that turn
    (a knock-out at the engine's damage has no rolls: a crit then matters less), gives that side luck > 0."""
    crits = []
    for game in games:
        lines = game.messages["p1"]
        for move_turn in move_turns(game):
            first = move_turn.first
            start = next(i for i, line in enumerate(lines) if line == f"|turn|{first.turn}")
            end = next((i for i, line in enumerate(lines) if line == f"|turn|{first.turn + 1}"), len(lines))
            turn = lines[start:end]
            hit = [line.split("|")[2][:2] for line in turn if line.startswith("|-crit|")]
            fainted = [line.split("|")[2][:2] for line in turn if line.startswith("|faint|")]
            if len(hit) == 1 and hit[0] not in fainted:
                critter = "p2" if hit[0] == "p1" else "p1"  # |-crit|p2a: ... means p2's Pokémon was hit
                luck, _ = _luck_of(move_turn)
                crits.append((game.id, first.turn, critter, luck.luck, luck.event))
    print(f"\ncritical-hit turns: {crits}")
    assert crits, "no critical hit in the six games (the seeds changed?)"
    for _, _, critter, luck, _ in crits:
        assert (luck if critter == "p1" else -luck) > 0
    assert any(event == "critical hit" for *_, event in crits)


@pytest.fixture(scope="module")
def policies(run_dir: Path) -> dict[str, dict]:
    """Game id -> side -> the policy its bot recorded (the Random bot's), from the store's players' entries."""
    with RunStore.open_existing(run_dir / RUN / "store.sqlite") as store:
        return {gid: recorded_policies(sides) or {} for gid, sides in store.game_players().items()}


def test_a_random_bots_draws_are_luck_that_weighs_to_zero_over_the_policy_it_recorded(games, policies) -> None:
    """AIVAT's action term on the Random bot's real games: each of its move choices is recorded once, uniform over
    the orders it drew from, the choice drawn among them and the input log's; the term, had any order been drawn,
    weighs to zero over the policy; and a game's luck is its chance luck plus that term."""
    model = load_value_model()
    checked = 0
    for game in games:
        recorded = policies[game.id]
        if not recorded:
            continue
        entry = game_luck(game, model, recorded)
        plain = {t["turn"]: t for t in game_luck(game, model)["turns"]}
        for move_turn in list(move_turns(game))[:6]:
            state, one, two, real = move_turn.position()
            for decision, actual in ((move_turn.first, one), (move_turn.other, two)):
                if decision.side not in recorded:
                    continue
                [drawn] = [e for e in recorded[decision.side] if e["turn"] == decision.turn]
                policy = KnownPolicy.of(drawn, decision.state["sides"][decision.side])
                assert drawn["epsilon"] == 1.0 and drawn["choice"] in drawn["orders"]
                assert policy.chosen == actual
                assert sum(policy.probabilities.values()) == pytest.approx(1.0)
                assert all(p == pytest.approx(1 / len(drawn["orders"])) for p in policy.probabilities.values()) or \
                    len(policy.probabilities) < len(drawn["orders"])  # two orders, one engine action
                q = {a: expected_value(state, a, two, model) if decision.side == "p1" else
                     expected_value(state, one, a, model) for a in policy.probabilities}
                mean = sum(p * q[a] for a, p in policy.probabilities.items())
                assert sum(p * (q[a] - mean) for a, p in policy.probabilities.items()) == pytest.approx(0, abs=1e-12)
                mine = KnownPolicy(policy.probabilities, actual)
                args = (mine, None) if decision.side == "p1" else (None, mine)
                assert action_luck(state, one, two, q[actual], model, *args) == pytest.approx(
                    ACTION_WEIGHT * (q[actual] - mean))
                checked += 1
        for turn in entry["turns"]:
            if turn["error"] is None:
                assert turn["luck_p1"] == pytest.approx(plain[turn["turn"]]["luck_p1"] + turn["action_luck"], abs=2e-6)
        assert any(t["action_luck"] != 0 for t in entry["turns"])
        # the game's luck at shift 0, the draws' included, is its turns' (each rounded to 6 decimals)
        assert entry["luck_by_shift_p1"][SKILL_SHIFTS.index(0.0)] == pytest.approx(
            sum(t["luck_p1"] for t in entry["turns"]), abs=1e-5)
    assert checked >= 10, checked


def test_games_replayed_over_several_simulator_processes_are_the_games_replayed_in_one(records, games,
                                                                                      monkeypatch) -> None:
    monkeypatch.setattr(from_showdown, "GAMES_PER_REPLAY", 4)  # 6 games: two processes, 4 + 2
    again = game_positions([(r["game_id"], r["input_log"]) for r in records])
    assert len(games) == 6
    assert [g.id for g in again] == [g.id for g in games]
    assert all(a.decisions == b.decisions and a.final == b.final for a, b in zip(again, games))


def test_a_game_with_no_turn_to_value_is_reported_not_dropped(records) -> None:
    record = records[0]
    start = [line for line in record["input_log"] if not line.startswith((">p1 ", ">p2 "))]  # no choice at all
    [game] = game_positions([(record["game_id"], start)])
    entry = game_luck(game, load_value_model())
    assert entry["turns"] == [] and entry["error"] == "no move turn the engine could value"
    games = pd.DataFrame([{"uid": "u1", "game_id": record["game_id"], "run": RUN, "matchup": "a-vs-b", "pair": 1,
                           "p1": "a", "p2": "b", "winner": "p2"}])
    luck, turns = luck_rows([{**entry, "uid": "u1", "settings": "s"}], games)
    assert list(luck.columns) == LUCK_COLUMNS and list(turns.columns) == LUCK_TURN_COLUMNS
    row = luck.iloc[0]
    assert (row["luck_p1"], row["adjusted_p1"], row["score_p1"], row["turns_analysed"]) == (0, 0.0, 0.0, 0)
    assert row["error"] == "no move turn the engine could value"


def test_analyse_caches_the_luck_and_publish_writes_adjusted_scores(run_dir, tmp_path) -> None:
    report = analyse_runs([RUN], run_dir, workers=2, progress=False, quality=False)
    assert (report.luck_games, report.decisions) == (6, 0)
    entries = list(read_entries(luck_path(run_dir / RUN), key=game_key))
    assert len(entries) == 6
    again = analyse_runs([RUN], run_dir, workers=2, progress=False, quality=False)
    assert again.luck_games == 0  # the cache: nothing valued again
    assert len(list(read_entries(luck_path(run_dir / RUN), key=game_key))) == 6

    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    done = subprocess.run([sys.executable, "-m", "pokebench", "analyse", RUN, "--runs-dir", str(run_dir),
                           "--no-quality"], env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "luck of 0 games measured now" in done.stdout

    out = publish([RUN], tmp_path / "site", runs_dir=run_dir, n_bootstrap=20)
    luck = pd.read_csv(out / "luck.csv")
    turns = pd.read_csv(out / "luck_turns.csv")
    assert list(luck.columns) == LUCK_COLUMNS and list(turns.columns) == LUCK_TURN_COLUMNS
    assert len(luck) == 6 and luck["error"].isna().all() and (luck["turns_analysed"] > 0).all()
    games = pd.read_csv(out / "games.csv").set_index("uid")
    for row in luck.itertuples():
        assert row.score_p1 == {"p1": 1.0, "p2": 0.0}.get(games.loc[row.uid, "winner"], 0.5)
        summed = turns.loc[turns["uid"] == row.uid, "luck_p1"].sum()  # one pair per matchup: no skill shift
        assert row.skill_shift_p1 == 0.0
        assert row.adjusted_p1 == pytest.approx(row.score_p1 - row.luck_p1, abs=1e-9)
        assert row.luck_p1 == pytest.approx(summed, abs=1e-5)  # the turns' luck rounded each, the game's once
        last = turns[turns["uid"] == row.uid].iloc[-1]  # what happened never contradicts how the game ended
        assert last["v_after"] != {"p1": 0.0, "p2": 1.0}.get(games.loc[row.uid, "winner"])
    assert (turns["event"].fillna("").isin([*EVENTS, ""])).all()
    pairs = pd.read_csv(out / "pairs.csv")  # every pair's two games measured: each counts in its matchup's luck
    assert (pairs["luck_pairs"] == pairs["pairs"]).all() and (out / "value_calibration.svg").is_file()
    loaded = load_results(out)
    assert len(loaded.luck) == 6 and len(loaded.luck_turns) == len(turns)
    frame, _ = read_luck([run_dir / RUN], games.reset_index())
    assert list(frame["uid"]) == list(luck["uid"])


def test_an_analysis_in_shards_analyses_each_game_once_into_files_read_as_the_whole_analysis(
        stored_run: Path, games, tmp_path: Path) -> None:
    """`analyse --shard I/N` (the cluster recipes): the shards' games are disjoint and cover the run, each shard
    writes only its own cache files, the caches read back hold the luck of the unsharded analysis (the luck has no
    search: the same values) and every decision of the games once, and an unsharded analysis afterwards has
    nothing left."""
    settings = Settings(iterations=20, samples=1)  # the decision caches' keys are checked here, not the searches
    whole, split = (copy_of(stored_run, tmp_path / name) for name in ("whole", "split"))
    analyse_runs([RUN], whole, settings, workers=1, progress=False, quality=False)
    reports = [analyse_runs([RUN], split, settings, workers=1, progress=False, shard=(i, 2)) for i in range(2)]
    assert [r.games for r in reports] == [6, 6] and sum(r.shard_games for r in reports) == 6
    assert all(r.luck_games == r.shard_games == r.searched_games for r in reports)
    assert min(r.shard_games for r in reports) > 0, "a shard with no game: the split is not tested"
    run = split / RUN
    assert not luck_path(run).exists() and not cache_path(run).exists()
    shard_uids = [{e["uid"] for e in read_entries(luck_path(run, (i, 2)), key=game_key)} for i in range(2)]
    assert not shard_uids[0] & shard_uids[1]
    for i in range(2):  # each shard's decisions are its own games'
        assert {e["uid"] for e in read_entries(cache_path(run, (i, 2)))} == shard_uids[i]

    def luck_of(runs: Path) -> dict[str, dict]:
        return {e["uid"]: e for e in read_entries(luck_path(runs / RUN), key=game_key)}

    assert luck_of(split) == luck_of(whole) and len(luck_of(whole)) == 6
    scored = sorted((e["game_id"], e["index"]) for e in read_entries(cache_path(run)))
    assert scored == sorted((g.id, d.index) for g in games for d in g.decisions)  # every decision, once
    after = analyse_runs([RUN], split, settings, workers=1, progress=False)
    assert (after.searched_games, after.luck_games) == (0, 0)


def test_a_run_with_luck_true_measures_its_games_once_and_shows_the_adjusted_elo(stored_run, tmp_path) -> None:
    """``luck=true``: the run's summary shows the Elo from luck-adjusted scores, measured into runs/NAME/luck.jsonl
    (here on the stored run, whose games are all played: no server starts); a second start measures nothing."""
    from support.stored_run import ARGS

    runs = copy_of(stored_run, tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    outputs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-m", "pokebench", *ARGS, "luck=true"], cwd=runs.parent, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        outputs.append(done.stdout)
        entries = luck_path(runs / RUN).read_text().splitlines()
        assert len(entries) == 6, entries  # one per game, never twice
    for out in outputs:
        assert "adjusted: from luck-adjusted scores (6 of 6 games with measured luck)" in out, out
        assert "adjusted Elo" in out
    analysed = analyse_runs([RUN], runs, progress=False, quality=False)
    assert (analysed.games, analysed.luck_games) == (6, 0)
