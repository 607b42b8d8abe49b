"""The Continual Harness player in whole games on the real pinned Showdown server, answered over real HTTP by
the local OpenAI-compatible server (decisions by a legal-action policy, refiner requests by a script), and its
harness state file on its own: edits, caps, atomic writes, and no edit lost to concurrent refinements."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable

import pytest
from hydra import compose, initialize_config_dir

from support.games import REPO_DIR, SYSTEM_PROMPT_SHA256, play, results
from pokebench.players.continual.player import REFINER_MARKER, ContinualHarnessPlayer, harness_block, parse_edits
from pokebench.players.max_damage import MaxDamageBot
from pokebench.players.continual import state as continual_state
from pokebench.text import prompt
from pokebench.players.continual.state import Caps, HarnessStore, apply_edits, empty_state
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.paths import conf_dir
from pokebench.play.runner import plan_run
from pokebench.play.schedule import build_schedule
from pokebench.results.store import RunStore

PRICES = {"input": 3.0, "cached_input": 0.3, "output": 15.0}
RUN = "continual-test"
EMPTY_HARNESS = "NOTES\n(none yet)\n\nSKILLS\n(none yet)\n\nSTRATEGY\n(none yet)\n\nBATTLE LOG\nBattle started"


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI(policy=hashed_policy) as server:
        yield server


def is_refiner(request: ChatRequest) -> bool:
    return REFINER_MARKER in request.messages[0]["content"]


def scripted(api: LocalOpenAI, refiner: Callable[[int], Reply | str]) -> list[ChatRequest]:
    """Decisions get a legal action; the n-th refiner request gets ``refiner(n)``. Returns the refiner requests."""
    calls: list[ChatRequest] = []
    api.requests.clear()

    def policy(request: ChatRequest) -> Reply | str:
        if is_refiner(request):
            calls.append(request)
            return refiner(len(calls) - 1)
        return hashed_policy(request)

    api.policy = policy
    return calls


def play_run(showdown, api, runs_dir: Path, pairs: int, **options: Any):
    """`pairs` mirror pairs of the continual player against Max-damage, one game at a time, in plan order."""
    made: list[ContinualHarnessPlayer] = []

    def factory(**kwargs: Any) -> ContinualHarnessPlayer:
        model = {"name": "test-model", "model": "local-test-model", "base_url": api.base_url,
                 "api_key_env": "POKEBENCH_TEST_KEY", "api_key_required": False, "prices": PRICES,
                 "timeout": 5, "max_attempts": 2, "backoff_base": 0.02, "backoff_max": 0.05}
        made.append(ContinualHarnessPlayer(model=model, name="continual", runs_dir=str(runs_dir), **options, **kwargs))
        return made[-1]

    specs = build_schedule(RUN, "continual-seeds", pairs, [("continual", "max-damage")])
    outcomes = results(play(showdown, specs, {"continual": factory, "max-damage": MaxDamageBot}, concurrency=1))
    return outcomes, made


def side_of(outcome) -> dict[str, Any]:
    return next(s for s in outcome.players.values() if s["player"] == "continual")


def first_user_message(player: ContinualHarnessPlayer) -> str:
    return next(m["content"] for m in player.messages if m["role"] == "user")


# ---- whole games --------------------------------------------------------------------------------

GAME_1_EDITS = {"edits": [
    {"op": "add_note", "text": "Sample note from game 1"},
    {"op": "add_skill", "name": "type check", "text": "Check the type matchup before attacking."},
    {"op": "set_strategy", "text": "Attack with the strongest super-effective move; switch out of bad matchups."},
    {"op": "fly", "text": "not an op"},
    {"op": "delete_note", "index": 7},
]}


def test_game_2_starts_from_the_harness_refined_after_game_1(showdown, api, tmp_path):
    refiner_calls = scripted(api, lambda n: "Here are my edits:\n```json\n" + json.dumps(GAME_1_EDITS) + "\n```")
    (game1, game2), (p1, p2) = play_run(showdown, api, tmp_path, pairs=1)

    # game 1: version 0, empty sections, and then the first message of prompt v3 as LLMPlayer sends it
    first1 = first_user_message(p1)
    assert first1.startswith("YOUR HARNESS (version 0, refined from 0 earlier games of this run)\n")
    assert first1.startswith(harness_block(empty_state()) + "BATTLE LOG\nBattle started between Player 1 and ")
    assert EMPTY_HARNESS in first1
    # game 2: the refiner's edits of game 1, applied; the invalid ones are not
    first2 = first_user_message(p2)
    assert first2.startswith("YOUR HARNESS (version 1, refined from 1 earlier games of this run)\n")
    assert ("NOTES\n1. Sample note from game 1\n\nSKILLS\n- type check: Check the type matchup before attacking."
            "\n\nSTRATEGY\nAttack with the strongest super-effective move; switch out of bad matchups."
            "\n\nBATTLE LOG\nBattle started between Player 1 and Player 2!\n") in first2

    # the system prompt of every decision is v3 byte for byte; refiner requests are apart and one only
    decisions = [r for r in api.requests if not is_refiner(r)]
    assert len(decisions) == len(p1.decision_log) + len(p2.decision_log) - 1
    for request in decisions:
        assert request.messages[0] == {"role": "system", "content": prompt.system_prompt()}
        assert hashlib.sha256(request.messages[0]["content"].encode()).hexdigest() == SYSTEM_PROMPT_SHA256
    [refine] = refiner_calls
    assert api.requests.index(refine) == len(p1.decision_log)  # after game 1, before game 2's first decision
    text = refine.messages[1]["content"]
    assert "GAME 1 OF 1: you were Player 1; " in text and "you started it with harness version 0" in text
    assert "YOUR ANSWERS\nturn 1: " in text and p1.decision_log[-1]["reason"] in text
    assert "BATTLE LOG\nBattle started between Player 1 and Player 2!" in text
    assert "YOUR HARNESS NOW (version 0, refined from 0 earlier games)\nNOTES\n(none yet)" in text

    # the summaries: the harness version each game started with, the refiner's spend apart
    s1, s2 = side_of(game1), side_of(game2)
    assert (s1["harness_version"], s2["harness_version"]) == (0, 1)
    assert (s1["refinements"], s1["refiner_cost_usd"]) == (0, 0)
    entry = game2.decisions[0]
    assert entry["kind"] == "refine" and entry["refined_games"] == [game1.spec.game_id]
    assert entry["cost_usd"] > 0 and entry["input_tokens"] > 0 and entry["decision"] == 0
    later = [(d.get("kind"), d["harness_version"]) for d in game2.decisions[1:]]
    assert later == [(None, 1)] * (len(game2.decisions) - 1)
    assert {d["harness_version"] for d in game1.decisions} == {0}
    assert s2["refinements"] == 1 and s2["refined_games"] == [game1.spec.game_id]
    assert s2["refiner_cost_usd"] == pytest.approx(entry["cost_usd"]) and s2["refiner_output_tokens"] > 0
    assert s2["answers"] == len(game2.decisions) - 1 and s2["reasks"] == 0
    assert s2["cost_usd"] == pytest.approx(sum(d["cost_usd"] for d in game2.decisions[1:]))
    assert s2["total_cost_usd"] == pytest.approx(s2["cost_usd"] + s2["refiner_cost_usd"])
    assert s2["refine_applied"] == 3 and s2["refine_error"] is None
    assert [r["why"] for r in s2["refine_rejected"]] == [
        "unknown op 'fly'; the ops are add_note, update_note, delete_note, add_skill, update_skill, "
        "delete_skill, set_strategy", "there is no note 7: there are no notes"]

    # the state file in the run folder, with its history; game 2's trajectory waits for the next game
    store = HarnessStore(tmp_path / RUN / "continual", "continual")
    state = store.read()
    assert (state["version"], state["games_seen"], state["notes"]) == (1, 1, ["Sample note from game 1"])
    [history] = state["history"]
    assert history["games"] == [game1.spec.game_id] and history["by_game"] == game2.spec.game_id
    assert len(history["applied"]) == 3 and len(history["rejected"]) == 2 and history["cost_usd"] > 0
    assert [p.stem for p in store.pending_dir.glob("*.json")] == [game2.spec.game_id]
    assert [p.stem for p in store.read_dir.glob("*.json")] == [game1.spec.game_id]
    assert not list(store.folder.glob(".*.tmp"))

    # the run store takes the refine entry as one more decision row
    with RunStore(tmp_path / "store.sqlite") as db:
        for outcome in (game1, game2):
            db.save_game(outcome.spec, outcome.record, outcome.players, outcome.started_at, outcome.decisions)
        rows = db.decisions()
    assert (rows["kind"] == "refine").sum() == 1 and len(rows) == len(game1.decisions) + len(game2.decisions)


def test_a_failing_refiner_leaves_the_harness_and_the_games_go_on(showdown, api, tmp_path):
    too_many = {"edits": [{"op": "add_note", "text": f"Note {i}"} for i in range(3)]
                + [{"op": "set_strategy", "text": "x" * 51}, {"op": "add_skill", "name": "s", "text": "t"}]}
    answers = {0: "I think you played well!", 1: Reply(status=400, error="bad request"), 2: json.dumps(too_many)}
    scripted(api, lambda n: answers[n])
    outcomes, players = play_run(showdown, api, tmp_path, pairs=2, max_notes=2, max_strategy_chars=50)
    sides = [side_of(o) for o in outcomes]
    assert len(outcomes) == 4  # every game is a result

    # garbage JSON, then an API error: recorded, nothing changes, no game is lost
    assert "not a JSON object with an 'edits' list" in sides[1]["refine_error"]
    assert sides[2]["refine_error"].startswith("LLMAPIError: ") and "HTTP 400" in sides[2]["refine_error"]
    assert [s["harness_version"] for s in sides] == [0, 0, 0, 1]
    assert first_user_message(players[2]).startswith("YOUR HARNESS (version 0, refined from 0 earlier games")
    assert outcomes[1].decisions[0]["cost_usd"] > 0  # the garbage answer was paid for
    assert outcomes[2].decisions[0]["cost_usd"] is None and sides[2]["refiner_cost_usd"] is None

    # then caps: two notes at most, the strategy too long; the rest applies
    assert sides[3]["refine_applied"] == 3
    assert sorted(r["why"] for r in sides[3]["refine_rejected"]) == [
        "at most 2 notes: delete or merge notes first", "the strategy is 51 characters; the limit is 50"]
    assert "NOTES\n1. Note 0\n2. Note 1\n\nSKILLS\n- s: t\n\nSTRATEGY\n(none yet)" in first_user_message(players[3])
    state = HarnessStore(tmp_path / RUN / "continual", "continual").read()
    assert (state["version"], state["games_seen"], len(state["notes"])) == (1, 1, 2)
    assert [bool(h.get("error")) for h in state["history"]] == [True, True, False]
    assert state["history"][0]["games"] == [outcomes[0].spec.game_id]


# ---- the state module -----------------------------------------------------------------------------


def state_with(notes: list[str], **other: Any) -> dict[str, Any]:
    return {**empty_state(), "notes": list(notes), **other}


def test_edits_are_validated_against_the_version_the_refiner_saw():
    caps = Caps(max_notes=3, max_skills=1)
    seen = state_with(["a", "b", "c"], skills={"k": "v"})
    result = apply_edits(seen, [
        {"op": "add_note", "text": "d"},  # over the cap until note 2 goes: checked after the batch
        {"op": "delete_note", "index": 2},
        {"op": "update_note", "index": 1, "text": "  a,\n  revised "},
        {"op": "update_note", "index": 1, "text": "again"},
        {"op": "delete_note", "index": 0},
        {"op": "delete_note", "index": True},
        {"op": "add_note", "text": "c"},
        {"op": "add_skill", "name": "k", "text": "w"},
        {"op": "update_skill", "name": "nope", "text": "w"},
        {"op": "add_note", "text": "x" * 301},
        "not an object",
    ], caps)
    assert result.state["notes"] == ["a, revised", "c", "d"] and len(result.applied) == 3
    assert [r["why"] for r in result.rejected] == [
        "note 1 was already changed (by this refinement or another)",
        "there is no note 0: the notes are numbered 1 to 3",
        "'index' must be the number of a note as listed (1, 2, ...)",
        "this note exists already", "skill 'k' exists already; use update_skill", "there is no skill 'nope'",
        "'text' is 301 characters; the limit is 300", "an edit must be a JSON object with an 'op'"]
    assert seen["notes"] == ["a", "b", "c"]  # the input is not changed

    # indexes name the notes the refiner saw, even when another refinement changed the list meanwhile
    latest = state_with(["new", "a", "c"])
    result = apply_edits(latest, [{"op": "delete_note", "index": 1}, {"op": "update_note", "index": 2, "text": "B"}],
                         caps, seen)
    assert result.state["notes"] == ["new", "c"] and [r["why"] for r in result.rejected] == [
        "note 2 was already changed (by this refinement or another)"]

    # the caps: too many notes and skills are taken back, newest first; and at most max_edits edits
    result = apply_edits(empty_state(), [{"op": "add_note", "text": str(i)} for i in range(5)]
                         + [{"op": "add_skill", "name": n, "text": "t"} for n in "xy"], caps)
    assert result.state["notes"] == ["0", "1", "2"] and result.state["skills"] == {"x": "t"}
    assert [r["edit"].get("name", r["edit"].get("text")) for r in result.rejected] == ["4", "3", "y"]
    result = apply_edits(empty_state(), [{"op": "set_strategy", "text": str(i)} for i in range(25)], Caps())
    assert len(result.applied) == 20 and result.state["strategy"] == "19" and len(result.rejected) == 5
    assert apply_edits(empty_state(), {"op": "add_note"}, caps).rejected[0]["why"] == "'edits' must be a list"


def test_refiner_answers_are_read_as_strict_json():
    assert parse_edits('{"edits": [{"op": "add_note", "text": "a"}]}') == [{"op": "add_note", "text": "a"}]
    assert parse_edits('Sure.\n```json\n{"edits": []}\n```\nDone.') == []
    assert parse_edits('My edits: {"edits": [1]} -- that is all') == [1]
    for bad in ("", "no json here", '{"edit": []}', '{"edits": {}}', "[1, 2]"):
        with pytest.raises(ValueError):
            parse_edits(bad)


def test_the_state_file_is_written_atomically(tmp_path, monkeypatch):
    store = HarnessStore(tmp_path, "p")
    store.apply([{"op": "add_note", "text": "kept"}], empty_state(), ["g1"])
    before = store.path.read_bytes()

    def crash(src: str, dst: str) -> None:
        assert Path(src).parent == Path(dst).parent and Path(src).name.startswith(".p.json.")
        raise OSError("killed mid-write")

    monkeypatch.setattr(continual_state.os, "replace", crash)
    with pytest.raises(OSError):
        store.apply([{"op": "add_note", "text": "lost"}], store.read(), ["g2"])
    assert store.path.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["p.json", "p.lock"]
    assert store.read()["notes"] == ["kept"] and store.read()["version"] == 1


_WORKER = """
import sys
from pokebench.players.continual.state import Caps, HarnessStore
store = HarnessStore(sys.argv[1], "p", Caps(max_notes=1000))
for i in range(int(sys.argv[3])):
    store.apply([{"op": "add_note", "text": f"{sys.argv[2]}-{i}"}], store.read(), [f"{sys.argv[2]}-{i}"])
"""


def test_concurrent_refinements_lose_no_edit(tmp_path):
    store = HarnessStore(tmp_path, "p", Caps(max_notes=1000))
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR))
    procs = [subprocess.Popen([sys.executable, "-c", _WORKER, str(tmp_path), f"proc{n}", "15"], env=env)
             for n in range(2)]

    def thread_worker(n: int) -> None:
        for i in range(15):
            store.apply([{"op": "add_note", "text": f"thread{n}-{i}"}], store.read(), [f"thread{n}-{i}"])

    threads = [threading.Thread(target=thread_worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.wait(timeout=30) == 0 for p in procs)
    state = store.read()
    expected = {f"{who}-{i}" for who in ("proc0", "proc1", "thread0", "thread1", "thread2", "thread3")
                for i in range(15)}
    assert set(state["notes"]) == expected and len(state["notes"]) == 90
    assert state["version"] == state["games_seen"] == len(state["history"]) == 90
    assert [h["version"] for h in state["history"]] == list(range(1, 91))

    # and a queued trajectory is claimed by one refinement only
    for i in range(20):
        store.add_trajectory(f"g{i:02d}", {"game_id": f"g{i:02d}", "finished_at": f"t{i:02d}"})
    claimed: list[list[str]] = []
    threads = [threading.Thread(target=lambda: claimed.append([t["game_id"] for t in store.claim()[1]]))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(g for batch in claimed for g in batch) == [f"g{i:02d}" for i in range(20)]
    assert store.pending_count() == 0 and store.claim()[1] == []
    store.add_trajectory("late", {"game_id": "late"})
    assert store.claim(at_least=2)[1] == [] and store.pending_count() == 1  # refine_every: wait for 2


def test_the_smoke_run_config_plans_one_game_at_a_time(monkeypatch):
    import socket

    with socket.socket() as endpoint:  # planning checks that the model's endpoint accepts connections
        endpoint.bind(("127.0.0.1", 0))
        endpoint.listen()
        monkeypatch.setenv("POKEBENCH_BASE_URL", f"http://127.0.0.1:{endpoint.getsockname()[1]}/v1")
        with initialize_config_dir(version_base=None, config_dir=str(conf_dir())):
            cfg = compose("config", overrides=["+run=continual-smoke"])
        plan = plan_run(cfg, "continual-smoke")
    assert len(plan.specs) == 4 and cfg.concurrency == 1
    assert cfg.players.continual._target_ == "pokebench.players.continual.player.ContinualHarnessPlayer"
    assert cfg.players.continual.refine_every == 1 and cfg.players.continual.model.name == "local"
