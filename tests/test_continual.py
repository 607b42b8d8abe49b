"""The Continual Harness: epochs of whole pairs, the four parts and their edits, the refiner, versions,
sub-agents, modes, the published gain and learning curve, and the training export.

Whole runs are `python -m pokebench +run=ch-smoke` on the real pinned Showdown server, with the local
OpenAI-compatible server of the tests (real HTTP) playing the player, its advisors, the refiner (four
scripted passes) and the teacher."""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import time

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from support.continual import (ADVISOR, PRICES, Script, finish, harness_side, pokebench, refiner_config, stored,
                               trajectory)
from support.games import SYSTEM_PROMPT_SHA256
from pokebench.llm.client import PREFLIGHT_QUESTION
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.paths import conf_dir
from pokebench.play import epochs
from pokebench.play.plan import ConfigError, plan_run
from pokebench.play.schedule import build_schedule
from pokebench.players.continual import signatures
from pokebench.players.continual.edits import apply_pass
from pokebench.players.continual.harness import Budgets, Harness, MemoryEntry
from pokebench.players.continual.refiner import REFINER_MARKER
from pokebench.players.continual.refining import HarnessRefiner
from pokebench.players.continual.versions import HarnessFiles, Snapshot
from pokebench.results.store import RunStore


# ---- the edits of each pass ----------------------------------------------------------------------

def test_invalid_and_oversized_edits_are_rejected_with_why_and_change_nothing():
    harness = Harness(strategy="Attack.", memory=[MemoryEntry(id="m1", text="Water beats Fire.", importance=3)],
                      next_memory_id=2)
    before = harness.model_dump()
    budgets = Budgets(strategy_chars=50, memory_chars=40)
    cases = {
        "prompt": [{"op": "rewrite", "text": "x" * 51}, {"op": "set_strategy", "text": "a"}, "not an object"],
        "memory": [{"op": "add", "text": "y" * 41, "importance": 3}, {"op": "add", "text": "ok", "importance": 9},
                   {"op": "update", "id": "m7", "text": "z"}, {"op": "remove", "id": "m1", "extra": 1}],
        "skills": [{"op": "add", "name": "s"}, {"op": "update", "name": "none", "steps": "x"}],
        "subagents": [{"op": "add", "name": "Bad Name", "when": "w", "instructions": "i"}],
    }
    for pass_name, edits in cases.items():
        result = apply_pass(harness, pass_name, edits, budgets)
        assert result.applied == [] and len(result.rejected) == len(edits), (pass_name, result.rejected)
        assert all(r["why"] for r in result.rejected)
        assert result.harness.model_dump() == before
    assert harness.model_dump() == before  # the input is never changed either
    whys = [r["why"] for r in apply_pass(harness, "memory", cases["memory"], budgets).rejected]
    assert "41 characters; the budget is 40" in whys[0] and "no memory entry 'm7'" in whys[2]
    too_many = apply_pass(harness, "memory", [{"op": "demote", "id": "m1"}] * 3, Budgets(edits_per_pass=2))
    assert len(too_many.applied) == 2 and "more than 2 edits" in too_many.rejected[0]["why"]


def test_near_duplicates_merge_memory_evicts_the_least_important_and_edits_record_old_and_new():
    harness = Harness()
    budgets = Budgets(memory_entries=2)
    r = apply_pass(harness, "memory", [
        {"op": "add", "text": "Ground moves do not affect Flying types.", "importance": 2},
        {"op": "add", "text": "ground moves do NOT affect flying-types!", "importance": 4},  # a near-duplicate
        {"op": "add", "text": "Electric moves do not affect Ground types.", "importance": 3},
        {"op": "add", "text": "Stealth Rock hurts Charizard a lot.", "importance": 5},  # full: evicts importance 3
    ], budgets)
    assert [m.importance for m in r.harness.memory] == [4, 5] and len(r.applied) == 4
    assert r.applied[1]["new"]["merged"] and r.applied[1]["old"]["importance"] == 2
    assert r.applied[3]["old"]["text"].startswith("Electric")  # what was evicted to make room
    r2 = apply_pass(r.harness, "memory", [{"op": "add", "text": "Ground moves do not affect Flying types",
                                           "importance": 1}], budgets)
    assert r2.applied == [] and "nothing new" in r2.rejected[0]["why"]
    demoted = apply_pass(r.harness, "memory", [{"op": "demote", "id": "m1"}], budgets)
    assert demoted.applied[0] == {"edit": {"op": "demote", "id": "m1"}, "old": r.harness.memory[0].model_dump(),
                                  "new": {**r.harness.memory[0].model_dump(), "importance": 3}}
    skills = apply_pass(Harness(), "skills", [
        {"op": "add", "name": "check immunities", "when": "before attacking", "steps": "read the target's types"},
        {"op": "add", "name": "Check immunities", "when": "always", "steps": "read the types of the target"}],
        budgets)
    assert len(skills.harness.skills) == 1 and skills.harness.skills[0].when == "always"


# ---- failure signatures, mined in code -------------------------------------------------------------

def test_failure_signatures_are_mined_from_a_trajectory_with_their_evidence():
    game = {"game_id": "g1", "outcome": "lost", "turns": 9, "answers": [
        {"turn": 1, "action": "switch Pikachu"}, {"turn": 2, "action": "switch Onix"},
        {"turn": 3, "action": "switch Pikachu"},
        {"turn": 4, "action": None, "invalid": "Your answer has no ACTION line."},
        {"turn": 4, "action": "move Tackle", "invalid": "Your answer has no ACTION line.", "random_pick": True},
        {"turn": 5, "action": "move Thunderbolt", "refusal_error": "[Invalid choice] Can't move"},
        {"kind": "consult", "turn": 5, "advisor": "x"}],
        "battle_log": ["Pikachu used Thunderbolt!", "It doesn't affect the opposing Golem..."],
        "team_hp": [{"decision": 1, "turn": 7, "bench": {"Onix": 0.9, "Mew": 0.2}},
                    {"decision": 2, "turn": 8, "bench": {}}, {"decision": 3, "turn": 9, "bench": {}}]}
    found = signatures.mine([game])
    counts = signatures.summarise(found)
    assert counts == {"no_legal_action": 1, "random_pick": 1, "refused_choice": 1, "move_into_immunity": 1,
                      "switch_back_and_forth": 1, "tera_unused_in_loss": 1, "loss_with_healthy_left": 1}
    evidence = {s["kind"]: s["evidence"] for s in found}
    assert evidence["move_into_immunity"] == "Pikachu used Thunderbolt! It doesn't affect the opposing Golem..."
    assert "Onix 90%" in evidence["loss_with_healthy_left"] and "Mew" not in evidence["loss_with_healthy_left"]
    assert "switch Pikachu, switch Onix, switch Pikachu" in evidence["switch_back_and_forth"]
    won = signatures.summarise(signatures.mine([{**game, "outcome": "won", "answers": [], "battle_log": []}]))
    assert set(won.values()) == {0}
    assert "- move_into_immunity: 1" in signatures.render(found)


# ---- epochs -----------------------------------------------------------------------------------------

def test_epoch_blocks_hold_whole_pairs_of_every_matchup_and_cut_at_every_boundary():
    specs = build_schedule("r", "seed", 5, [("a", "b"), ("c", "b")])
    blocks = epochs.barriers(specs, [2])
    assert [sorted({s.pair for s in b}) for b in blocks] == [[1, 2], [3, 4], [5]]
    assert all(len(b) == 4 * len({s.pair for s in b}) for b in blocks)  # both games of both matchups
    assert [sorted({s.pair for s in b}) for b in epochs.barriers(specs, [2, 3])] == [[1, 2], [3], [4], [5]]
    assert [len(b) for b in epochs.barriers(specs, [])] == [20]
    assert [epochs.epoch_of(p, 2) for p in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI(policy=hashed_policy) as server:
        yield server


def _cfg(*overrides: str):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose(config_name="config", overrides=["+run=ch-smoke", *overrides])


def test_a_sharded_run_with_a_refining_player_is_refused_and_a_frozen_one_is_not(api, tmp_path, monkeypatch):
    monkeypatch.setenv("POKEBENCH_BASE_URL", api.base_url)
    with pytest.raises(ConfigError, match="shards cannot keep fair.*freeze the harness"):
        plan_run(_cfg("shard=0/2"), "ch")
    saved = tmp_path / "harness.json"
    saved.write_text(Harness(strategy="Frozen.").model_dump_json())
    plan = plan_run(_cfg("shard=0/2", "players.ch-local.mode=frozen", f"players.ch-local.load_from={saved}"), "ch")
    assert {s.pair % 2 for s in plan.specs} == {0}
    with pytest.raises(ConfigError, match=r"\['ch-local'\] change between epochs"):  # nor a sequential run
        plan_run(_cfg("sequential.target_width=300"), "ch")
    plan_run(_cfg("sequential.target_width=300", "players.ch-local.mode=frozen",
                  f"players.ch-local.load_from={saved}"), "ch")
    with pytest.raises(ConfigError, match="mode frozen needs load_from"):
        plan_run(_cfg("players.ch-local.mode=frozen"), "ch")
    with pytest.raises(ConfigError, match="epoch_pairs must be a whole number"):
        plan_run(_cfg("players.ch-local.epoch_pairs=0"), "ch")


# ---- a failed refinement -------------------------------------------------------------------------

def test_a_failed_refinement_leaves_the_harness_as_it_was_and_keeps_its_games_for_the_next(api, tmp_path):
    seen: list[str] = []

    def policy(request: ChatRequest) -> Reply | str:
        seen.append(request.messages[0]["content"])
        if len(seen) <= 1:
            return Reply(status=400, error="bad request")  # not retried: the refinement fails at once
        return json.dumps({"edits": [{"op": "rewrite", "text": "Refined from both epochs."}]}) \
            if "pass 1 of 4" in request.messages[-1]["content"] else '{"edits": []}'

    api.policy = policy
    config = refiner_config(api, max_attempts=1)
    refiner = HarnessRefiner(tmp_path, "ch", "scratch", None, 1, config, Budgets(), 5000)
    files = HarnessFiles(tmp_path)
    for game_id, epoch in (("e1.g1", 1), ("e1.g2", 1), ("e2.g1", 2)):
        files.write_trajectory(game_id, trajectory(game_id, epoch))

    asyncio.run(refiner.before_epoch(1, {}))
    asyncio.run(refiner.before_epoch(2, {1: ["e1.g1", "e1.g2"]}))
    state = files.read_state()
    assert state.current == 0 and state.epochs == {"1": 0, "2": 0} and files.read_version(0).harness.is_empty()
    assert state.pending_games == ["e1.g1", "e1.g2"] and not state.attempts[0]["ok"]
    assert "HTTP 400" in state.attempts[0]["error"] and [v.version for v in files.versions()] == [0]

    asyncio.run(refiner.before_epoch(3, {1: ["e1.g1", "e1.g2"], 2: ["e2.g1"]}))
    state = files.read_state()
    assert state.current == 1 and state.epochs == {"1": 0, "2": 0, "3": 1} and state.pending_games == []
    assert state.attempts[1]["ok"] and state.attempts[1]["games"] == ["e1.g1", "e1.g2", "e2.g1"]
    snapshot = files.read_version(1)
    assert snapshot.parent == 0 and snapshot.harness.strategy == "Refined from both epochs."
    assert snapshot.passes["prompt"]["applied"][0]["old"] == "" and len(snapshot.calls) == 4
    assert snapshot.refiner_cost_usd and snapshot.refiner_cost_usd > 0
    assert all("Tackle in e2.g1" in text for text in seen[1:])  # the second attempt read both epochs
    asyncio.run(refiner.before_epoch(3, {1: ["e1.g1", "e1.g2"], 2: ["e2.g1"]}))  # a resumed run: epoch 3 is kept
    assert len(files.read_state().attempts) == 2 and len(seen) == 5


def test_a_refinement_stopped_while_the_provider_has_a_call_records_that_call(api, tmp_path):
    """The run stopped (its task cancelled) while the refiner's second call is with the provider: that call is served
    and paid, so the journal keeps it (its tokens unknown) and the next start records it in the killed attempt, whose
    cost is what is known. Before, the call was lost from the spend."""
    def policy(request: ChatRequest) -> Reply | str:
        slow = "pass 2 of" in request.messages[-1]["content"] and len(api.requests) <= 2
        return Reply(text='{"edits": []}', delay=5.0) if slow else '{"edits": []}'

    api.policy = policy
    api.requests.clear()
    files = HarnessFiles(tmp_path)
    files.write_trajectory("e1.g1", trajectory("e1.g1", 1))

    def refiner() -> HarnessRefiner:
        return HarnessRefiner(tmp_path, "ch", "scratch", None, 1, refiner_config(api), Budgets(), 5000)

    async def stopped_while_the_provider_thinks() -> None:
        first = refiner()
        await first.before_epoch(1, {})
        task = asyncio.ensure_future(first.before_epoch(2, {1: ["e1.g1"]}))
        deadline = time.monotonic() + 30
        while len(api.requests) < 2:
            assert time.monotonic() < deadline and not task.done(), "the second call never reached the server"
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stopped_while_the_provider_thinks())
    calls = files.read_calls()
    assert [c.get("error") for c in calls] == [None, "cancelled"] and calls[0]["cost_usd"] > 0
    assert calls[1]["cost_usd"] is None and calls[1]["pass"] != calls[0]["pass"]  # the second pass, cut off
    asyncio.run(refiner().before_epoch(2, {1: ["e1.g1"]}))  # the next start
    killed, done = files.read_state().attempts
    assert killed["killed"] and [c.get("error") for c in killed["calls"]] == [None, "cancelled"]
    assert killed["cost_usd"] == calls[0]["cost_usd"] and done["ok"]


def test_a_key_in_the_refiners_edits_never_reaches_the_harness_its_files_or_its_games(api, tmp_path, monkeypatch):
    """The harness a refiner writes is written (its versions) and sent in every later game (the store's `sent`, the
    site): its model's key must be blanked out of it, as out of a player's answers. It was kept as written."""
    key = "a-refiner-key-0123456789"
    monkeypatch.setenv("REFINER_KEY_FOR_TEST", key)
    api.policy = lambda request: (json.dumps({"edits": [{"op": "rewrite", "text": f"Always attack. {key}"}]})
                                  if "pass 1 of 4" in request.messages[-1]["content"]
                                  else f'{{"edits": [], "note": "{key}"')  # a broken answer: rejected, written
    config = refiner_config(api, api_key_env="REFINER_KEY_FOR_TEST", api_key_required=True)
    refiner = HarnessRefiner(tmp_path, "ch", "scratch", None, 1, config, Budgets(), 5000)
    HarnessFiles(tmp_path).write_trajectory("e1.g1", trajectory("e1.g1", 1))
    asyncio.run(refiner.before_epoch(1, {}))
    asyncio.run(refiner.before_epoch(2, {1: ["e1.g1"]}))
    snapshot = HarnessFiles(tmp_path).read_version(1)
    assert snapshot.harness.strategy == "Always attack. ***"
    assert snapshot.passes["memory"]["rejected"] and all(
        key not in path.read_text() for path in tmp_path.rglob("*") if path.is_file())


# ---- whole runs --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_ch_smoke_epochs_are_fair_survive_a_kill_and_are_published_and_exported(api, showdown, tmp_path):
    script = Script()
    api.policy = script
    api.requests.clear()
    # two opponents: an epoch's version must hold in every matchup
    args = ["+run=ch-smoke", "server.sim_processes=1", f"players.ch-local.model.prices={PRICES}",
            f"players.local.model.prices={PRICES}", "+player@players.random=random",
            "matchups=[[ch-local,max-damage],[ch-local,random],[local,max-damage],[local,random]]"]
    run_dir = tmp_path / "runs" / "ch-smoke"
    db, files = run_dir / "store.sqlite", HarnessFiles(run_dir / "players" / "ch-local")
    matchups = [("ch-local", "max-damage"), ("ch-local", "random"), ("local", "max-damage"), ("local", "random")]
    epoch_games = {e: {s.game_id for s in build_schedule("ch-smoke", "pokebench-2026", 3, matchups) if s.pair == e}
                   for e in (1, 2, 3)}

    # killed (SIGKILL) inside epoch 2, once its version is fixed and one of its games is stored
    script.slow_epoch = 2
    proc = pokebench(tmp_path, api, *args, "publish=false")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (stored(db) & epoch_games[2]):
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert stored(db) & epoch_games[2] and not epoch_games[2] <= stored(db), "the kill came too early or too late"
    state = files.read_state()
    assert state.epochs == {"1": 0, "2": 1} and len(state.attempts) == 1
    v1 = files.version_path(1).read_bytes()

    script.slow_epoch = None
    printed = finish(pokebench(tmp_path, api, *args, server=showdown))  # resumed on the worker's server
    state = files.read_state()
    assert state.epochs == {"1": 0, "2": 1, "3": 2}, "the resumed run kept epoch 2's version and refined once more"
    assert len(state.attempts) == 2 and files.version_path(1).read_bytes() == v1
    # the refiner's spend, both starts, in the closing summary
    refiner_usd = sum(a["cost_usd"] for a in state.attempts)
    assert "Spend outside the games" in printed and refiner_usd > 0
    line = next(line for line in printed.splitlines() if line.strip().startswith("ch-local ") and "refinement" in line)
    assert f"${refiner_usd:,.4f}" in line and "2 refinement(s): 2 made a version" in line

    with RunStore.open_existing(db) as store:
        games = store.games().set_index("game_id")
        sides = store.game_players()
        decisions = store.decisions()
    assert set(games.index) == set().union(*epoch_games.values())
    # every game of an epoch, replayed or not, carries that epoch's version
    for epoch, ids in epoch_games.items():
        mine = [g for g in ids if g.startswith("ch-")]
        assert {g.split(".")[0] for g in mine} == {"ch-local-vs-max-damage", "ch-local-vs-random"}
        versions = {harness_side(sides[g], "ch-local")["harness_version"] for g in mine}
        assert versions == {epoch - 1}
        assert {harness_side(sides[g], "ch-local")["harness_epoch"] for g in ids if g.startswith("ch-")} == {epoch}
    # the order of events: refinement k ran after every game of epoch k ended and before any game of k+1 began
    for attempt in state.attempts:
        done, next_epoch = attempt["epochs"][-1], attempt["before_epoch"]
        assert attempt["games"] == sorted(g for g in epoch_games[done] if g.startswith("ch-"))
        assert games.loc[list(epoch_games[done]), "ended_at"].max() < attempt["at"]
        assert attempt["done_at"] < games.loc[list(epoch_games[next_epoch]), "started_at"].min()
    # so no refiner request ever named a game of the epoch it refined for, or a later one
    for n, request in enumerate(script.refiner):
        text = request.messages[0]["content"]
        later = set().union(*(epoch_games[e] for e in range(n // 4 + 2, 4)))
        assert not any(g in text for g in later) and any(g in text for g in epoch_games[n // 4 + 1])
        assert "FAILURE SIGNATURES" in text

    # what each pass changed, as recorded (old -> new), with the invalid edits rejected
    v1s, v2s = files.read_version(1), files.read_version(2)
    assert v1s.parent == 0 and v2s.parent == 1 and v1s.trigger["epochs"] == [1] and v2s.trigger["epochs"] == [2]
    assert v1s.passes["prompt"]["applied"][0]["new"].startswith("STRATEGY ONE")
    assert "no memory entry 'm99'" in v1s.passes["memory"]["rejected"][0]["why"]
    assert [a.name for a in v1s.harness.subagents] == ["type_checker"] and len(v1s.calls) == 4
    assert "budget is 1200" in v2s.passes["prompt"]["rejected"][0]["why"]
    assert "not a JSON object with an 'edits' list" in v2s.passes["skills"]["rejected"][0]["why"]
    assert v2s.harness.strategy == v1s.harness.strategy and v2s.harness.memory[0].importance == 3
    assert set(v1s.trigger["signatures"]) == set(signatures.KINDS)

    # the first message of a game with the harness; the system prompt is the method's, byte for byte
    plays = [r for r in api.requests if r.messages[0]["content"] not in ("", PREFLIGHT_QUESTION) and REFINER_MARKER not in
             r.messages[0]["content"] and ADVISOR not in r.messages[0]["content"]]
    assert {hashlib.sha256(r.messages[0]["content"].encode()).hexdigest() for r in plays} == {SYSTEM_PROMPT_SHA256}
    firsts = {r.messages[1]["content"] for r in plays}
    assert any(f.startswith("YOUR HARNESS (version 1, used by every game of epoch 2") and "STRATEGY ONE" in f
               and "type_checker" in f for f in firsts)
    assert any(f.startswith("BATTLE LOG") for f in firsts)  # the plain player's first message is the method's

    # a consultation: a recorded, priced API call, in the game's cost
    consults = decisions[decisions.get("kind").eq("consult")]
    assert len(consults) == len([g for g in epoch_games[2] | epoch_games[3] if g.startswith("ch-")])
    assert consults.input_tokens.gt(0).all() and consults.cost_usd.gt(0).all()
    assert set(consults.advisor) == {"type_checker"} and consults.advice.str.contains("weak").all()
    game = consults.game_id.iloc[0]
    side = harness_side(sides[game], "ch-local")
    in_game = decisions[(decisions.game_id == game) & (decisions.player == "ch-local")]
    assert side["consultations"] == 1 and side["cost_usd"] == pytest.approx(in_game.cost_usd.sum())
    assert side["answers"] == in_game.kind.isna().sum()

    # published: the gain with its paired-bootstrap interval, the learning curve, the versions
    site = tmp_path / "data" / "site" / "ch-smoke"
    gain = pd.read_csv(site / "harness_gain.csv")
    assert list(gain[["harness_player", "plain_player", "pairs", "opponents"]].iloc[0]) == [
        "ch-local", "local", 3, "max-damage random"]
    row = gain.iloc[0]
    assert row.score_gain_lo <= row.score_gain <= row.score_gain_hi and row.refiner_cost_usd > 0
    curve = pd.read_csv(site / "learning_curve.csv")
    assert list(curve[curve.role == "harness"].harness_version) == [0, 1, 2]
    assert list(curve[curve.role == "harness"].version_changed) == [False, True, True]
    assert len(curve[curve.role == "plain"]) == 3
    history = pd.read_csv(site / "harness_versions.csv")
    assert list(history.version) == [0, 1, 2] and list(history.subagents_applied) == [0, 1, 0]
    edits = pd.read_csv(site / "harness_edits.csv")
    assert set(edits.status) == {"applied", "rejected"} and (edits.version == 1).sum() == 5
    page = (site / "harness.html").read_text()  # the history, browsable, from the published tables only
    assert "STRATEGY ONE" in page and "type_checker" in page and "no memory entry" in page
    assert "&lt;b&gt;ever&lt;/b&gt;" in page and "<b>ever" not in page  # what a model wrote is escaped

    # training data: every answer of the stored games, with the teacher's labels
    finish(pokebench(tmp_path, api, "export-training", "ch-smoke", "--teacher", "local"))
    lines = (run_dir / "training-local.jsonl").read_text().splitlines()
    items = [json.loads(line) for line in lines]
    assert len(items) == decisions.kind.isna().sum()
    assert all(i["messages"][-1]["role"] == "assistant" and i["messages"][0]["role"] == "system" for i in items)
    assert {i["outcome"] for i in items} <= {"won", "lost", "tie"} and {i["player"] for i in items} == {"ch-local",
                                                                                                        "local"}
    assert all(isinstance(i["teacher"]["agrees"], bool) and i["teacher"]["legal"] for i in items)
    assert {i["harness_version"] for i in items if i["player"] == "ch-local"} == {0, 1, 2}
    # every answer has its decision number (none had, in a run with consultations: the rewards file was empty)
    assert all(isinstance(i["decision"], int) for i in items), [i["decision"] for i in items][:5]


def test_continue_mode_starts_from_another_runs_last_version_and_refines_on(api, tmp_path):
    earlier = HarnessFiles(tmp_path / "earlier")
    earlier.initialise("scratch", None)
    earlier.write_version(Snapshot(version=1, parent=0, harness=Harness(strategy="Learned before."), at="t"))
    state = earlier.read_state()
    state.current, state.made = 1, [0, 1]
    earlier.write_state(state)
    api.policy = lambda request: (json.dumps({"edits": [{"op": "rewrite", "text": "Learned before, and more."}]})
                                  if "pass 1 of 4" in request.messages[-1]["content"] else '{"edits": []}')
    config = refiner_config(api)
    refiner = HarnessRefiner(tmp_path / "now", "ch", "continue", str(tmp_path / "earlier"), 1, config, Budgets(), 5000)
    files = HarnessFiles(tmp_path / "now")
    files.write_trajectory("g1", trajectory("g1", 1))
    asyncio.run(refiner.before_epoch(1, {}))
    assert files.read_version(0).harness.strategy == "Learned before." and files.read_version(0).trigger["kind"] == "loaded"
    asyncio.run(refiner.before_epoch(2, {1: ["g1"]}))
    assert files.read_state().epochs == {"1": 0, "2": 1} and files.read_version(1).harness.strategy.endswith("more.")
    with pytest.raises(ValueError, match="not 'frozen'"):  # a run folder keeps the mode it was started with
        HarnessFiles(tmp_path / "now").initialise("frozen", str(tmp_path / "earlier"))
