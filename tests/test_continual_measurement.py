"""The Continual Harness as a measurement: no carry-over between runs, ablations by config, the refiner's spend
in the budgets and the summary, and versions that survive a kill.

The refiner talks to the local OpenAI-compatible server of the tests (real HTTP); kills are real SIGKILLs of a
child process; whole runs are `python -m pokebench` on the real pinned Showdown server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import types
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir

from support.continual import Script, finish, harness_side, pokebench, refiner_config, trajectory
from support.games import REPO_DIR
from support.synthetic_runs import make_run
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, hashed_policy
from pokebench.paths import conf_dir
from pokebench.play import epochs
from pokebench.play.budget import Budget
from pokebench.play.plan import ConfigError, plan_run
from pokebench.play.schedule import build_schedule
from pokebench.play.summary import ThisStart, money, run_summary
from pokebench.player.hooks import PlayerMaker
from pokebench.players.continual import history
from pokebench.players.continual.edits import apply_pass
from pokebench.players.continual.harness import (PART_PASSES, SWITCHES, Budgets, Harness, MemoryEntry, Skill,
                                                 SubAgent, harness_block, origin, switched_on)
from pokebench.players.continual.player import ContinualHarnessPlayer
from pokebench.players.continual.refiner import REFINER_MARKER, refine
from pokebench.players.continual.refining import HarnessRefiner
from pokebench.players.continual.versions import CarryOver, HarnessFiles, Snapshot, Source, initial_harness
from pokebench.players.continual.tables import curve_table, edits_table, gain_table, gap_table, versions_table
from pokebench.publish import publish
from pokebench.results.run_stores import RunStores
from pokebench.results.store import RunStore
from pokebench.players.continual.page import write_harness_page
from pokebench.site.build import SitePages

FORMAT = "gen9randombattle"
NO_EDITS = '{"edits": []}'


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI(policy=hashed_policy) as server:
        yield server


def _cfg(*overrides: str, run: str = "ch-smoke"):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return compose(config_name="config", overrides=[f"+run={run}", *overrides])


def _refiner_requests(api: LocalOpenAI) -> list[ChatRequest]:
    return [r for r in api.requests if REFINER_MARKER in (r.messages[0].get("content") or "")]


def _learned(folder: Path, seed_text: str) -> Path:
    """A player's folder of a finished run whose last version learned from the games of `seed_text`."""
    files = HarnessFiles(folder)
    files.initialise("scratch", None, Source(seed_text=seed_text, format=FORMAT))
    files.write_version(Snapshot(version=1, parent=0, harness=Harness(strategy="Learned on A."), at="t",
                                 learned_from=[Source(seed_text=seed_text, format=FORMAT)]))
    state = files.read_state()
    state.current, state.made = 1, [0, 1]
    files.write_state(state)
    return folder


# ---- item 1: no carry-over ------------------------------------------------------------------------

def test_a_harness_is_refused_in_a_run_of_the_seed_text_it_learned_from(api, tmp_path, monkeypatch):
    monkeypatch.setenv("POKEBENCH_BASE_URL", api.base_url)
    folder = _learned(tmp_path / "learn-a", "A")
    for mode in ("frozen", "continue"):
        with pytest.raises(ConfigError) as refused:
            plan_run(_cfg("seed_text=A", f"players.ch-local.mode={mode}", f"players.ch-local.load_from={folder}"),
                     "eval")
        assert str(folder) in str(refused.value) and "seed_text='A'" in str(refused.value)
        assert "another seed text" in str(refused.value)
        plan_run(_cfg("seed_text=B", f"players.ch-local.mode={mode}", f"players.ch-local.load_from={folder}"), "eval")
    # the barrier refuses it too (a run started some other way), before anything is written
    with pytest.raises(CarryOver):
        HarnessFiles(tmp_path / "x").initialise("frozen", str(folder), Source(seed_text="A", format=FORMAT))
    assert not (tmp_path / "x").exists()

    # refined on in run B: the new version learned from A and B
    api.policy = lambda r: (json.dumps({"edits": [{"op": "rewrite", "text": "Learned on A, then B."}]})
                            if "pass 1 of 4" in r.messages[-1]["content"] else NO_EDITS)
    refiner = HarnessRefiner(tmp_path / "eval-b", "ch", "continue", str(folder), 1, refiner_config(api), Budgets(),
                             5000, run=Source(seed_text="B", format=FORMAT))
    asyncio.run(refiner.before_epoch(1, {}))
    refiner.files.write_trajectory("g1", trajectory("g1", 1))
    asyncio.run(refiner.before_epoch(2, {1: ["g1"]}))
    assert [str(s) for s in refiner.files.read_version(0).learned_from] == ["seed_text='A' (format gen9randombattle)"]
    assert [s.seed_text for s in refiner.files.read_version(1).learned_from] == ["A", "B"]


def test_the_harness_block_says_where_its_contents_came_from():
    harness = Harness(strategy="Keep Stealth Rock up.")
    scratch0 = harness_block(Harness(), 0, 1, True, where_from=origin("scratch", 0, False, False))
    assert "nothing is written yet" in scratch0 and "you wrote" not in scratch0
    assert "you wrote them after earlier games of this run" in harness_block(
        harness, 2, 3, True, where_from=origin("scratch", 2, False, False))
    frozen = harness_block(harness, 0, None, True, where_from=origin("frozen", 0, True, True))
    assert "loaded from a harness learned before this run, from other games, and they do not change" in frozen
    assert "you wrote" not in frozen and "this run, from what happened" not in frozen
    assert "written before this run" in origin("frozen", 0, True, False)  # a harness written by hand
    assert "started from a harness learned before this run, from other games, and you refined them" in origin(
        "continue", 3, True, True)


@pytest.mark.slow
def test_learn_on_seed_text_a_then_evaluate_frozen_on_b(api, showdown, tmp_path):
    script = Script()
    api.policy = script
    api.requests.clear()
    common = ["+run=ch-smoke", "pairs=2", "matchups=[[ch-local,max-damage]]"]
    finish(pokebench(tmp_path, api, *common, "name=learn-a", "seed_text=A", "publish=false", server=showdown))
    learned = tmp_path / "runs" / "learn-a" / "players" / "ch-local"
    assert HarnessFiles(learned).read_state().current == 1 and len(script.refiner) == 4
    frozen = ["players.ch-local.mode=frozen", f"players.ch-local.load_from={learned}"]

    refused = pokebench(tmp_path, api, *common, "name=eval-a", "seed_text=A", *frozen)
    _, err = refused.communicate(timeout=300)
    assert refused.returncode != 0 and f"load_from {learned} (version 1) learned from the games of seed_text='A'" in err
    assert not (tmp_path / "runs" / "eval-a" / "store.sqlite").exists()

    api.requests.clear()  # evaluated beside the expert harness and the plain model (ch-expert's run)
    finish(pokebench(tmp_path, api, "+run=ch-expert", "pairs=2", "name=eval-b", "seed_text=B", *frozen,
                     server=showdown))
    assert len(script.refiner) == 4, "a frozen harness is never refined"
    run_dir = tmp_path / "runs" / "eval-b"
    with RunStore.open_existing(run_dir / "store.sqlite") as store:
        games = store.game_players().values()
    sides = [harness_side(s, "ch-local") for s in games if "ch-local" in {x["player"] for x in s.values()}]
    assert len(games) == 12 and len(sides) == 4
    assert {(s["harness_version"], s["harness_mode"]) for s in sides} == {(0, "frozen")}
    firsts = [r.messages[1]["content"] for r in api.requests
              if len(r.messages) == 2 and r.messages[1]["content"].startswith("YOUR HARNESS")]
    of_learned = [f for f in firsts if "STRATEGY ONE" in f]
    of_expert = [f for f in firsts if "- choose an attack — when: every turn you attack" in f]
    assert len(of_learned) == 4 and len(of_expert) == 4 and len(firsts) == 8
    assert all("loaded from a harness learned before this run, from other games, and they do not change" in f
               and "you wrote" not in f for f in of_learned)
    assert all("loaded from a harness written before this run, and they do not change" in f for f in of_expert)
    gap = pd.read_csv(tmp_path / "data" / "site" / "eval-b" / "harness_gap.csv")
    assert list(gap[["adaptive_player", "expert_player", "plain_player", "pairs"]].iloc[0]) == [
        "ch-local", "ch-expert", "local", 2]
    state = HarnessFiles(run_dir / "players" / "ch-local").read_state()
    assert state.mode == "frozen" and state.attempts == [] and str(learned) in (state.loaded_from or "")
    table = versions_table([run_dir], ["ch-local"])
    assert list(table.learned_from) == ["seed_text='A' (format gen9randombattle)"]
    assert list(table.trigger) == ["loaded"]
    assert "Gap recovered" in (tmp_path / "data" / "site" / "eval-b" / "harness.html").read_text()


# ---- item 4: ablations by config ------------------------------------------------------------------

MARKERS = {"strategy": "STRATEGY-TEXT", "memory": "MEMORY-TEXT", "skills": "SKILL-NAME", "advisors": "type_oracle",
           "signatures": "FAILURE SIGNATURES"}
HARNESS = Harness(strategy="STRATEGY-TEXT", memory=[MemoryEntry(id="m1", text="MEMORY-TEXT", importance=3)],
                  skills=[Skill(name="SKILL-NAME", when="w", steps="s")],
                  subagents=[SubAgent(name="type_oracle", when="w", instructions="i")], next_memory_id=2)


def _asked(api: LocalOpenAI) -> list[str]:
    return [re.search(r"This is pass \d of \d: the ([A-Z]+)", r.messages[-1]["content"]).group(1)
            for r in _refiner_requests(api)]


@pytest.mark.parametrize("part", SWITCHES)
def test_each_switch_removes_its_pass_its_cost_and_its_text(api, part):
    api.requests.clear()
    api.policy = lambda r: NO_EDITS
    parts = switched_on([part], Budgets())
    result = asyncio.run(refine(HARNESS, [trajectory("g1", 1)], refiner_config(api), Budgets(), 5000, parts))
    kept = [p.upper() for p in PART_PASSES if p != part]
    assert _asked(api) == kept and len(result.calls) == len(kept)  # no request for a part switched off
    texts = [r.messages[0]["content"] + r.messages[-1]["content"] for r in _refiner_requests(api)]
    assert not any(MARKERS[part] in t for t in texts)
    assert all(MARKERS[other] in t for other in SWITCHES if other != part for t in texts)
    block = harness_block(HARNESS, 1, 2, True, parts)
    if part != "signatures":
        assert MARKERS[part] not in block and f"\n{part.upper()}\n" not in block
    assert all(MARKERS[other] in block for other in PART_PASSES if other != part)


def test_every_budget_of_zero_works_and_switches_its_part_off(api, monkeypatch):
    monkeypatch.setenv("POKEBENCH_BASE_URL", api.base_url)
    rejected = apply_pass(Harness(), "memory", [{"op": "add", "text": "Fire beats Grass.", "importance": 3}],
                          Budgets(memory_entries=0))
    assert rejected.applied == [] and "its budget, memory_entries, is 0" in rejected.rejected[0]["why"]
    zero = {"strategy_chars": "strategy", "memory_entries": "memory", "memory_chars": "memory", "skills": "skills",
            "skill_name_chars": "skills", "skill_chars": "skills", "subagents": "advisors",
            "subagent_chars": "advisors"}
    for budget, part in zero.items():
        api.requests.clear()
        parts = switched_on([], Budgets(**{budget: 0}))
        assert part not in parts, budget
        asyncio.run(refine(HARNESS, [trajectory("g1", 1)], refiner_config(api), Budgets(**{budget: 0}), 5000, parts))
        assert part.upper() not in _asked(api) and len(_asked(api)) == 3
    api.requests.clear()
    nothing = switched_on([], Budgets(edits_per_pass=0))
    assert nothing == ()
    assert asyncio.run(refine(HARNESS, [trajectory("g1", 1)], refiner_config(api), Budgets(), 5000, nothing)).calls == []
    assert _asked(api) == [] and harness_block(HARNESS, 1, 2, True, nothing) == ""
    assert "advisors" not in switched_on([], Budgets(), advisors_usable=False)  # consult: off
    # from the config: a budget of 0 plans (it used to crash at the first refinement), a wrong switch is named
    plan_run(_cfg("+players.ch-local.budgets.memory_entries=0"), "ch")
    with pytest.raises(ConfigError, match=r"without: \['bogus'\] are not parts of the harness"):
        plan_run(_cfg("players.ch-local.without=[bogus]"), "ch")


def test_the_ablation_run_plays_each_part_switched_off_beside_the_whole_harness(api, monkeypatch):
    monkeypatch.setenv("POKEBENCH_BASE_URL", api.base_url)
    plan = plan_run(_cfg(run="ch-ablation"), "ch-ablation")
    parts = {}
    for name, factory in plan.factories.items():
        if isinstance(factory, PlayerMaker) and factory.cls is ContinualHarnessPlayer:
            options = factory.options
            parts[name] = switched_on(options.get("without") or [], Budgets(**(options.get("budgets") or {})))
    assert parts == {"ch-full": SWITCHES, **{f"ch-no-{p}": tuple(s for s in SWITCHES if s != p) for p in SWITCHES}}
    assert {s.matchup for s in plan.specs} >= {"local-vs-max-damage", "ch-full-vs-max-damage"}


# ---- item 6: accounting and crash safety ----------------------------------------------------------

def _epoch_run(api: LocalOpenAI, work_root: Path, budget: Budget) -> set[str]:
    """Three epochs of one pair of `ch` against a bot through the real barrier; games are "played" by writing
    their trajectories (only the admitted ones). The stored games."""
    model = {"name": "m", "model": "m", "base_url": api.base_url, "api_key_env": "NO_SUCH_KEY_VAR",
             "api_key_required": False, "prices": {"input": 1, "cached_input": 0.1, "output": 2}}
    factories = {"ch": PlayerMaker(ContinualHarnessPlayer, {"model": model, "epoch_pairs": 1})}
    specs = build_schedule("r", "A", 3, [("ch", "bot")])
    done: set[str] = set()

    async def play(_done: set[str], block: set[str]) -> None:
        for spec in [s for s in specs if s.game_id in block and s.game_id not in done]:
            if budget.admit(spec) is None:
                HarnessFiles(work_root / "ch").write_trajectory(spec.game_id, trajectory(spec.game_id, spec.pair))
                done.add(spec.game_id)
                budget.settle(types.SimpleNamespace(spec=spec, decisions=[], cause=None))

    asyncio.run(epochs.play_in_epochs(specs, factories, work_root, lambda: set(done), play,
                                      run={"seed_text": "A", "format": FORMAT}, budget=budget))
    return done


@pytest.mark.parametrize("cap", ["player", "run"])
def test_refiner_spend_counts_in_the_budgets_and_in_the_summary(api, tmp_path, cap, caplog):
    api.requests.clear()
    api.policy = lambda r: NO_EDITS
    budget = Budget(1e-6, {}) if cap == "run" else Budget(None, {"ch": 1e-6})
    played = _epoch_run(api, tmp_path / "run" / "players", budget)
    files = HarnessFiles(tmp_path / "run" / "players" / "ch")
    attempts = files.read_state().attempts
    assert len(played) == 2 and len(attempts) == 1, "epoch 1 played; its refinement passed the cap; nothing after"
    spent = attempts[0]["cost_usd"]
    assert spent > 0 and len(_refiner_requests(api)) == 4
    assert budget.outside == {"ch": pytest.approx(spent)} and budget.spent["ch"] == pytest.approx(spent)
    assert budget.stopped and ("ch has spent" if cap == "player" else "the run has spent") in budget.stopped
    assert "harness errors" not in caplog.text  # the games the cap did not start are not harness errors
    with RunStores(tmp_path / "run") as stores:
        summary = run_summary(stores, "r", set(), ThisStart(), None, budget)
    line = next(line for line in summary.splitlines() if line.strip().startswith("ch "))
    assert "Spend outside the games" in summary and money(budget.outside["ch"]) in line
    assert "1 refinement(s): 0 made a version, 1 changed nothing (0 edit(s) rejected)" in line


KILLER = """
import asyncio, os, signal, sys
from pathlib import Path
from pokebench.llm.client import ModelConfig
from pokebench.players.continual.harness import Budgets
from pokebench.players.continual.refining import HarnessRefiner
from pokebench.players.continual.versions import HarnessFiles

work, base_url, kill = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
if kill == "between-writes":  # SIGKILL once the new version is written, before the state that makes it current
    write_state = HarnessFiles.write_state
    def killed(self, state):
        if state.made and len(state.made) > 1:
            os.kill(os.getpid(), signal.SIGKILL)
        write_state(self, state)
    HarnessFiles.write_state = killed
config = ModelConfig.from_dict({"model": "m", "base_url": base_url, "api_key_env": "NO_SUCH_KEY_VAR",
                                "api_key_required": False, "prices": {"input": 1, "cached_input": 0.1, "output": 2}})
refiner = HarnessRefiner(work, "ch", "scratch", None, 1, config, Budgets(), 5000)
asyncio.run(refiner.before_epoch(1, {}))
asyncio.run(refiner.before_epoch(2, {1: ["g1"]}))
"""


def _refine_in_a_child(api: LocalOpenAI, work: Path, kill: str) -> subprocess.Popen[str]:
    HarnessFiles(work).write_trajectory("g1", trajectory("g1", 1))
    return subprocess.Popen([sys.executable, "-c", KILLER, str(work), api.base_url, kill], text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO_DIR)), stderr=subprocess.PIPE)


def _rewrite(text: str, hold: threading.Event | None = None):
    def policy(request: ChatRequest) -> str:
        if hold is not None and len(_refiner_requests_seen) >= 2:
            hold.wait(60)  # the third call: the child is killed while it waits
        _refiner_requests_seen.append(request)
        return json.dumps({"edits": [{"op": "rewrite", "text": text}]}) \
            if "pass 1 of 4" in request.messages[-1]["content"] else NO_EDITS
    return policy


_refiner_requests_seen: list[ChatRequest] = []


def test_a_refinement_killed_after_two_of_four_calls_keeps_their_spend(api, tmp_path):
    _refiner_requests_seen.clear()
    api.requests.clear()
    hold = threading.Event()
    api.policy = _rewrite("FIRST", hold)
    work = tmp_path / "players" / "ch"
    child = _refine_in_a_child(api, work, "third-call")
    deadline = time.monotonic() + 120
    while len(api.requests) < 3:  # the third request is in: the child has paid (and journalled) two calls
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    child.send_signal(signal.SIGKILL)
    child.communicate()
    hold.set()
    files = HarnessFiles(work)
    paid = files.read_calls()
    assert len(paid) == 2 and files.read_state().attempts == [] and files.read_state().current == 0
    refiner = HarnessRefiner(work, "ch", "scratch", None, 1, refiner_config(api), Budgets(), 5000)
    assert sum(c["cost_usd"] for c in paid) > 0
    assert refiner.spend()[0] == pytest.approx(sum(c["cost_usd"] for c in paid))  # counted before the resume

    _refiner_requests_seen.clear()
    api.policy = _rewrite("SECOND")
    asyncio.run(refiner.before_epoch(2, {1: ["g1"]}))
    state = files.read_state()
    killed, done = state.attempts
    assert killed["killed"] and not killed["ok"] and len(killed["calls"]) == 2
    assert killed["before_epoch"] == done["before_epoch"] == 2  # the killed one's was null
    assert killed["cost_usd"] == pytest.approx(sum(c["cost_usd"] for c in paid))
    assert done["ok"] and len(done["calls"]) == 4 and files.read_calls() == []
    usd, line = refiner.spend()
    assert usd == pytest.approx(killed["cost_usd"] + done["cost_usd"]) and "1 killed; 6 call(s)" in line


def test_no_orphan_version_after_a_kill_between_the_version_and_the_state(api, tmp_path):
    _refiner_requests_seen.clear()
    api.policy = _rewrite("ORPHAN")
    work = tmp_path / "run" / "players" / "ch"
    child = _refine_in_a_child(api, work, "between-writes")
    child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL
    files = HarnessFiles(work)
    assert files.version_path(1).is_file(), "the version was written before the kill"
    assert [v.version for v in files.versions()] == [0] and files.read_state().current == 0
    assert versions_table([tmp_path / "run"], ["ch"]).version.dropna().tolist() == [0]  # never published

    api.policy = _rewrite("AFTER THE KILL")
    refiner = HarnessRefiner(work, "ch", "scratch", None, 1, refiner_config(api), Budgets(), 5000)
    asyncio.run(refiner.before_epoch(2, {1: ["g1"]}))
    assert [v.version for v in files.versions()] == [0, 1]
    assert files.read_version(1).harness.strategy == "AFTER THE KILL"  # the orphan's number, overwritten
    state = files.read_state()
    assert state.current == 1 and state.epochs == {"1": 0, "2": 1} and len(state.attempts[0]["calls"]) == 4

    # a refinement whose edits are all rejected made no version, and is shown
    files.write_trajectory("g2", trajectory("g2", 2))
    api.policy = lambda r: json.dumps({"edits": [{"op": "remove", "id": "m9"}, {"op": "nonsense"}]})
    asyncio.run(refiner.before_epoch(3, {1: ["g1"], 2: ["g2"]}))
    assert [v.version for v in files.versions()] == [0, 1]
    make_run(tmp_path / "synthetic", "mixed", pairs=1)  # the page sits in a published folder (its navigation)
    root = publish(["mixed"], tmp_path / "site", runs_dir=tmp_path / "synthetic", n_bootstrap=20)
    versions = versions_table([tmp_path / "run"], ["ch"])
    versions.to_csv(root / "harness_versions.csv", index=False)
    edits_table([tmp_path / "run"], ["ch"]).to_csv(root / "harness_edits.csv", index=False)
    # every refinement's tokens, also of those that made no version (they were "— / —")
    no_version = [a for a in files.read_state().attempts if not (a["ok"] and a["version"] != a["from_version"])]
    rows = versions[versions.version.isna()]
    assert rows.refiner_input_tokens.tolist() == [sum(c["input_tokens"] for c in a["calls"]) for a in no_version]
    assert rows.refiner_output_tokens.tolist() == [sum(c["output_tokens"] for c in a["calls"]) for a in no_version]
    assert len(rows) == 2 and (rows.refiner_input_tokens > 0).all()
    page = write_harness_page(SitePages.read(root)).read_text()
    assert "killed refinement" in page and "refinement with no change" in page and "no memory entry" in page
    assert "version 1 (from version 0)" in page and "(kept version 1)" in page
    assert not re.search(r"(version|parent) \d+\.0", page)
    assert " · refiner 4 call(s)" in page and not re.search(r"\S· refiner", page)  # was "after epoch(s) 3· refiner"
    assert "1 changed nothing (8 edit(s) rejected), 0 failed, 1 killed" in refiner.spend()[1]


# ---- item 3: a refiner that learns from results ---------------------------------------------------

def _games(pairs: list[int], outcomes: list[str], version: int, epoch: int) -> list[dict[str, Any]]:
    return [{**trajectory(f"ch-vs-bot.p{pair:04d}.g{g}", epoch, outcome), "version": version}
            for pair, (g, outcome) in zip([p for p in pairs for _ in (1, 2)], zip([1, 2] * len(pairs), outcomes))]


def test_scores_have_intervals_over_pairs_and_the_rule_rolls_back_only_what_is_clearly_worse():
    parent = history.score(_games([1, 2, 3], ["won", "won", "won", "lost", "won", "tie"], 0, 1))
    assert parent is not None and (parent.games, parent.pairs) == (6, 3) and parent.score == pytest.approx(4.5 / 6)
    assert parent.lo < parent.score < parent.hi <= 1
    snapshot = Snapshot(version=1, parent=0, harness=Harness(), at="t", trigger={"kind": "refinement"})
    worse = _games([4, 5], ["lost"] * 4, 1, 2)
    better = _games([1, 2], ["won"] * 4, 0, 1)
    assert "clearly below its parent" in history.rollback_reason(snapshot, history.version_scores(worse + better))
    mixed = _games([4, 5], ["lost", "won", "lost", "lost"], 1, 2)  # worse, but not clearly
    assert history.rollback_reason(snapshot, history.version_scores(mixed + _games([1, 2], ["won", "lost", "won",
                                                                                           "won"], 0, 1))) is None
    assert history.rollback_reason(snapshot, history.version_scores(worse[:2] + better)) is None  # too few games
    rolled = Snapshot(version=2, parent=1, harness=Harness(), at="t", trigger={"kind": "rollback"})
    assert history.rollback_reason(rolled, history.version_scores(worse + better)) is None  # never twice


def test_the_refiner_reads_every_versions_score_and_every_epoch_and_a_worse_version_is_rolled_back(api, tmp_path):
    systems: list[str] = []

    def policy(request: ChatRequest) -> str:
        systems.append(request.messages[0]["content"])
        first = "pass 1 of 4" in request.messages[-1]["content"]
        return json.dumps({"edits": [{"op": "rewrite", "text": "WORSE"}]}) if first and len(systems) <= 4 else NO_EDITS

    api.policy = policy
    refiner = HarnessRefiner(tmp_path, "ch", "scratch", None, 2, refiner_config(api), Budgets(), 5000)
    files = refiner.files
    asyncio.run(refiner.before_epoch(1, {}))
    epoch1, epoch2 = _games([1, 2], ["won"] * 4, 0, 1), _games([3, 4], ["lost"] * 4, 1, 2)
    for game in epoch1 + epoch2:
        files.write_trajectory(game["game_id"], game)
    ids1, ids2 = [g["game_id"] for g in epoch1], [g["game_id"] for g in epoch2]
    asyncio.run(refiner.before_epoch(2, {1: ids1}))
    assert files.read_version(1).harness.strategy == "WORSE"
    asyncio.run(refiner.before_epoch(3, {1: ids1, 2: ids2}))
    rolled = files.read_version(2)
    assert rolled.trigger["kind"] == "rollback" and rolled.parent == 1 and rolled.harness.strategy == ""
    assert rolled.passes["rollback"]["applied"][0]["edit"] == {"op": "rollback", "to": 0}
    state = files.read_state()
    assert state.current == 2 and state.epochs["3"] == 2 and state.made == [0, 1, 2]
    told = systems[-1]
    assert "RESULTS SO FAR" in told and "- version 0: the start; score 1.00 [1.00, 1.00] over 4 game(s)" in told
    assert "- version 1, parent 0: edits prompt: rewrite; score 0.00 [0.00, 0.00] over 4 game(s)" in told
    assert "- version 2, parent 1: a rollback to the content of version 0; not played yet" in told
    assert "- epoch 1 (version 0): 4 game(s), 4 won" in told and "- epoch 2 (version 1): 4 game(s), 0 won, 4 lost" in told
    assert all(g not in told.split("THE 4 GAME(S) TO REFINE FROM")[1] for g in ids1)  # epoch 1 in the digest only


# ---- item 2: independent learning trajectories, pooled ---------------------------------------------

def test_runs_published_together_pool_pairs_of_each_run_and_the_curve_has_an_interval_per_epoch():
    rows = []
    for run in ("learn-1", "learn-2"):
        for pair in (1, 2, 3, 4):
            for game in (1, 2):
                for player, won in (("ch", pair > 2 or game == 1), ("plain", game == 1)):
                    summary = {"model": "m", "reasoning": None, "cost_usd": 0.0,
                               **({"harness_version": (pair - 1) // 2, "epoch_pairs": 2} if player == "ch" else {})}
                    rows.append({"game_id": f"{player}.p{pair}.g{game}", "run": run, "pair": pair,
                                 "unit": f"{run}.p{pair:04d}", "player": player, "opponent": "bot",
                                 "score": float(won), "summary": summary})
    sides = pd.DataFrame(rows)
    gain = gain_table(sides, None, {}).iloc[0]
    assert (gain.runs, gain.pairs, gain.harness_games) == (2, 8, 16)  # pair k of each run is its own unit
    assert gain.score_gain == pytest.approx(0.25) and gain.score_gain_lo <= 0.25 <= gain.score_gain_hi
    curve = curve_table(sides).set_index(["role", "epoch"])
    assert list(curve.loc["harness"].score) == [0.5, 1.0] and set(curve.runs) == {2}
    first = curve.loc[("harness", 1)]
    assert first.score_lo == pytest.approx(0.5) and first.score_hi == pytest.approx(0.5)  # every pair scored 0.5


# ---- item 5: the expert harness and the gap recovered ----------------------------------------------

def test_the_expert_harness_loads_within_the_budgets_anywhere_and_plans(api, monkeypatch):
    monkeypatch.setenv("POKEBENCH_BASE_URL", api.base_url)
    loaded = initial_harness("frozen", "expert")
    harness, budgets = loaded.harness, Budgets()
    assert loaded.learned_from == [] and "gen9randombattle.json" in (loaded.source or "")
    assert len(harness.strategy) <= budgets.strategy_chars and len(harness.memory) <= budgets.memory_entries
    assert all(len(m.text) <= budgets.memory_chars for m in harness.memory)
    assert all(len(s.steps) <= budgets.skill_chars and len(s.when) <= budgets.skill_chars for s in harness.skills)
    ContinualHarnessPlayer.check_run("pokebench-2026", FORMAT, mode="frozen", load_from="expert")  # learned from no run
    plan = plan_run(_cfg(run="ch-expert"), "ch-expert")
    maker = plan.factories["ch-expert"]
    assert isinstance(maker, PlayerMaker) and maker.options["load_from"] == "expert"


def test_the_gap_recovered_is_adaptive_minus_plain_over_expert_minus_plain_with_an_interval():
    rows = []
    won = {"ch": (1, 1, 1, 0), "expert": (1, 1, 1, 1), "plain": (1, 0, 1, 0)}  # per pair: game 1, game 2 won?
    for player, wins in won.items():
        summary = {"model": "m", "reasoning": None, "cost_usd": 0.0,
                   **({"harness_version": 0, "harness_expert": player == "expert"} if player != "plain" else {})}
        for pair in (1, 2, 3, 4):
            for game in (1, 2):
                score = float(wins[pair - 1]) if game == 1 else float(pair % 2)
                rows.append({"game_id": f"{player}.p{pair}.g{game}", "run": "r", "pair": pair, "unit": f"r.p{pair:04d}",
                             "player": player, "opponent": "bot", "score": score, "summary": summary})
    gap = gap_table(pd.DataFrame(rows)).iloc[0]
    assert (gap.adaptive_player, gap.expert_player, gap.plain_player, gap.pairs) == ("ch", "expert", "plain", 4)
    assert (gap.adaptive_score, gap.expert_score, gap.plain_score) == (0.625, 0.75, 0.5)
    assert gap.gap_recovered == pytest.approx(0.5) and gap.gap_recovered_lo <= 0.5 <= gap.gap_recovered_hi
