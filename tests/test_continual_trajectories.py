"""`trajectories: K` (K learning runs, each evaluated frozen after learning, published pooled and per trajectory),
the spend estimate printed before the first game, and the training export's resume and preference/reward files.

Whole runs are `python -m pokebench` subprocesses on the real pinned Showdown server; the models are the local
OpenAI-compatible server of the tests (real HTTP)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from support.continual import PRICES, REFINER_MARKER, Script, finish, harness_side, pokebench, stored
from support.games import REPO_DIR
from pokebench.analysis.cache import append_entries, cache_path
from pokebench.analysis.settings import Settings, engine_version
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply
from pokebench.players.continual.versions import HarnessFiles
from pokebench.players.continual.export import cut_off_path, key
from pokebench.players.continual.training_formats import beside, engine_key
from pokebench.results.store import RunStore

pytestmark = [pytest.mark.server, pytest.mark.slow]  # whole runs on the pinned server (make setup)

K = 2


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI(policy=Script()) as server:
        yield server


@pytest.fixture(scope="module")
def trajectories_run(api, showdown, tmp_path_factory) -> tuple[Path, str]:
    """ch-smoke with K=2 trajectories of 2 pairs, each evaluated on 1 pair after learning, on the worker's
    server; what it printed. The estimate must be printed while no game is stored."""
    cwd = tmp_path_factory.mktemp("trajectories")
    proc = pokebench(cwd, api, "+run=ch-smoke", "pairs=2", f"trajectories={K}", "after_pairs=1",
                     f"players.ch-local.model.prices={PRICES}", f"players.local.model.prices={PRICES}", server=showdown)
    assert proc.stdout is not None
    before = []
    for line in proc.stdout:  # what it prints before the estimate, and the games stored when it is printed
        before.append(line)
        if line.startswith("Estimated spend"):
            break
    games_then = [stored(db) for db in (cwd / "runs").glob("*/*.sqlite")]
    first = before[-1]
    rest = finish(proc)
    assert first.startswith("Estimated spend of 2 trajectories of 2 pairs, each evaluated on 1 pair"), before
    assert not any(games_then), "the estimate came after a game"
    return cwd, first + rest


def test_the_estimate_names_each_model_its_games_and_what_to_do(trajectories_run):
    _, printed = trajectories_run
    line = printed.splitlines()[0]
    # per trajectory: learning 2 pairs x 2 games (one opponent) = 4 games, after learning 2: 12 games in all
    assert "ch-local $" in line and "(12 games, refiner $" in line and "local $" in line
    total = float(re.search(r"about \$([\d,.]+)", line).group(1).replace(",", ""))
    cap = int(re.search(r"budget_usd=(\d+)", line).group(1))
    # budget_usd caps each run: the costliest is a learning run (of 4 runs here, it costs the most)
    assert total / (2 * K) <= cap < total and "(a cap per run" in line and "Ctrl-C" in line


def test_each_trajectory_learns_on_its_own_seed_text_and_is_evaluated_frozen_on_new_seeds(trajectories_run):
    cwd, _ = trajectories_run
    runs = cwd / "runs"
    for k in range(1, K + 1):
        learned = runs / f"ch-smoke-t{k}"
        state = json.loads((learned / "players" / "ch-local" / "harness" / "state.json").read_text())
        assert _seed_text(learned) == f"pokebench-2026-t{k}"
        assert _seed_text(runs / f"ch-smoke-t{k}-after") == f"pokebench-2026-t{k}-after"
        with RunStore.open_existing(runs / f"ch-smoke-t{k}-after" / "store.sqlite") as store:
            sides = store.game_players()
            games = store.games()
        assert len(games) == 4  # 1 pair x 2 games x 2 matchups
        played = [harness_side(sides[g], "ch-local") for g in games.game_id if g.startswith("ch-")]
        assert {(s["harness_mode"], s["harness_version"]) for s in played} == {("frozen", 0)}  # never refined
        # its version 0 is the learning run's last version, loaded
        last = HarnessFiles(learned / "players" / "ch-local").read_version(state["current"])
        loaded = HarnessFiles(runs / f"ch-smoke-t{k}-after" / "players" / "ch-local").read_version(0)
        assert loaded.harness == last.harness and loaded.trigger["kind"] == "loaded"
        assert state["current"] >= 1 or k > 1  # the script's edits are valid in the first refinement only


def _seed_text(run_dir: Path) -> str:
    with sqlite3.connect(run_dir / "store.sqlite") as db:
        return json.loads(db.execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()[0])["seed_text"]


def test_published_gain_after_learning_per_trajectory_and_pooled_and_the_curve_over_trajectories(trajectories_run):
    cwd, printed = trajectories_run
    site = cwd / "data" / "site"
    assert f"Published {site.relative_to(cwd) / 'ch-smoke'}/index.html" in printed
    after = pd.read_csv(site / "ch-smoke-after" / "trajectory_gain.csv")
    assert list(after.trajectory) == ["all", "ch-smoke-t1-after", "ch-smoke-t2-after"]
    assert list(after.pairs) == [2, 1, 1] and list(after.runs) == [2, 1, 1]
    pooled = after.iloc[0]
    assert pooled.score_gain_lo <= pooled.score_gain <= pooled.score_gain_hi
    assert pooled.harness_games == after.harness_games.iloc[1:].sum()
    gain = pd.read_csv(site / "ch-smoke-after" / "harness_gain.csv")
    assert gain.iloc[0].score_gain == pooled.score_gain and gain.iloc[0].runs == K
    curve = pd.read_csv(site / "ch-smoke" / "learning_curve.csv")
    harness = curve[curve.role == "harness"]
    assert list(harness.epoch) == [1, 2] and list(harness.runs) == [K, K] and list(harness.games) == [2 * K, 2 * K]
    assert (harness.score_lo <= harness.score).all() and (harness.score <= harness.score_hi).all()
    learning = pd.read_csv(site / "ch-smoke" / "trajectory_gain.csv")
    assert list(learning.trajectory) == ["all", "ch-smoke-t1", "ch-smoke-t2"]


def test_a_run_folders_results_have_the_harness_tables_in_a_process_that_never_imported_publish(trajectories_run):
    """The player's tables come from the declared plug-ins (pokebench/plugins.py), not from whatever module
    happened to import the Continual Harness before ``load_results``."""
    cwd, _ = trajectories_run
    code = ("import json, sys\n"
            "from pokebench.results import load_results\n"
            "results = load_results(sys.argv[1])\n"
            "versions = results.extra['harness_versions'].version.dropna().astype(int).tolist()\n"
            "print(json.dumps({'tables': sorted(results.extra), 'versions': versions,\n"
            "                  'publish': 'pokebench.publish' in sys.modules}))\n")
    done = subprocess.run([sys.executable, "-c", code, str(cwd / "runs" / "ch-smoke-t1")], cwd=cwd,
                          env=dict(os.environ, PYTHONPATH=str(REPO_DIR)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert not got["publish"]
    assert {"harness_gain", "learning_curve", "harness_versions", "harness_edits"} <= set(got["tables"])
    published = pd.read_csv(cwd / "data" / "site" / "ch-smoke" / "harness_versions.csv")
    assert got["versions"] == published[published.run == "ch-smoke-t1"].version.dropna().astype(int).tolist()


def test_a_bad_number_of_trajectories_is_refused_before_anything(api, tmp_path):
    proc = pokebench(tmp_path, api, "+run=ch-smoke", "trajectories=0")
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2 and "'trajectories' must be a whole number of at least 1" in err and not out


# ---- the training export ------------------------------------------------------------------------------------

def _teacher_failing_after(calls: int, script: Script):
    """The local API: the run's answers as the script's, and as a teacher (the pre-flight aside) `calls` answers,
    then errors (every request after)."""
    asked = []

    def policy(request: ChatRequest) -> Reply | str:
        if REFINER_MARKER in (request.messages[0].get("content") or ""):
            return script(request)
        asked.append(request)
        if len(asked) > calls:
            return Reply(status=400, error="the teacher is down")
        return "ACTION: 1\nREASON: The teacher's first listed action."

    return policy, asked


def test_export_resumes_after_a_teacher_failure_without_paying_twice(api, trajectories_run):
    cwd, _ = trajectories_run
    run_dir = cwd / "runs" / "ch-smoke-t1-after"
    out = run_dir / "training-local.jsonl"
    policy, asked = _teacher_failing_after(3, Script())
    api.policy = policy
    proc = pokebench(cwd, api, "export-training", "ch-smoke-t1-after", "--teacher", "local")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1 and "the teacher failed after 3 new label(s)" in err and "same command again" in err
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(first) == 3 and all(i["teacher"]["action"] for i in first)

    api.policy = _teacher_failing_after(10_000, Script())[0]
    calls_before = len(api.requests)
    printed = finish(pokebench(cwd, api, "export-training", "ch-smoke-t1-after", "--teacher", "local"))
    items = [json.loads(line) for line in out.read_text().splitlines()]
    keys = [(i["game_id"], i["player"], i["answer_index"]) for i in items]
    assert items[:3] == first and len(keys) == len(set(keys))  # the first three kept, nothing twice
    with RunStore.open_existing(run_dir / "store.sqlite") as store:
        answers = store.decisions()
    assert len(items) == answers.kind.isna().sum()
    assert len(api.requests) - calls_before == len(items) - 3  # only the rest was asked (and paid)
    assert f"Wrote {len(items)} examples" in printed


@pytest.mark.parametrize("stop, code, how", [(signal.SIGINT, 130, "Interrupted."),
                                             (signal.SIGTERM, 143, "Stopped by SIGTERM.")], ids=["ctrl-c", "sigterm"])
def test_an_export_stopped_while_the_teacher_thinks_lists_every_request_it_paid_for(api, trajectories_run, stop, code,
                                                                                    how):
    """Every teacher request the server received is a label or a listed cut-off one; the next start asks the rest.
    Before, Ctrl-C printed a traceback and the requests the teacher had were paid and recorded nowhere."""
    cwd, _ = trajectories_run
    out = cwd / f"stopped-{code}.jsonl"
    api.policy = lambda request: Reply(text="ACTION: 1\nREASON: slowly", delay=1.0)
    before = len(api.requests)
    proc = pokebench(cwd, api, "export-training", "ch-smoke-t1-after", "--teacher", "local", "--out", str(out),
                     sigint_default=True)
    deadline = time.monotonic() + 120
    while len(api.requests) - before < 6 and time.monotonic() < deadline:  # four answered, more in flight
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=120)
    asked = len(api.requests) - before
    assert proc.returncode == code and how in err and "Traceback" not in err, err[-2000:]
    labels = [json.loads(line) for line in out.read_text().splitlines()]
    listed = [json.loads(line) for line in cut_off_path(out).read_text().splitlines()]
    assert len(labels) >= 4 and listed and len(labels) + len(listed) == asked, (len(labels), len(listed), asked)
    assert all(r["teacher"]["error"] == "cancelled" and r["teacher"]["cost_usd"] is None for r in listed)
    assert f"{len(labels)} label(s) paid for" in err and f"the {len(listed)} request(s) it cut off" in err

    api.policy = lambda request: "ACTION: 1\nREASON: at once"
    printed = finish(pokebench(cwd, api, "export-training", "ch-smoke-t1-after", "--teacher", "local", "--out",
                               str(out)))
    items = [json.loads(line) for line in out.read_text().splitlines()]
    keys = {key(i) for i in items}
    assert len(keys) == len(items) and {key(r) for r in listed} <= keys  # a cut-off one is asked again, once
    assert len(api.requests) - before == asked + len(items) - len(labels)
    assert f"and {len(listed)} rows to {cut_off_path(out)}" in printed
    api.policy = Script()  # as the other tests found it


def test_a_teachers_key_is_in_no_label_and_a_missing_one_is_one_line_before_any_file(api, trajectories_run):
    """The teacher's reason was written as answered (its raw answer was blanked); a teacher whose key is not set
    printed a traceback and left an empty file."""
    cwd, _ = trajectories_run
    key = "a-teacher-key-0123456789"
    api.policy = lambda request: f"ACTION: 1\nREASON: as {key} says"
    out = cwd / "teacher-key.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pokebench", "export-training", "ch-smoke-t2-after", "--teacher",
                           "claude-sonnet", "--out", str(out)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "OPENROUTER_API_KEY"}
                          | {"PYTHONPATH": str(REPO_DIR)})
    assert proc.returncode == 2 and proc.stderr.startswith("error: OPENROUTER_API_KEY is not set"), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and not out.exists()
    proc = pokebench(cwd, api, "export-training", "ch-smoke-t2-after", "--teacher", "local", "--out", str(out),
                     env={"POKEBENCH_API_KEY": key})
    finish(proc)
    api.policy = Script()  # as the other tests found it
    items = [json.loads(line) for line in out.read_text().splitlines()]
    assert items and all(i["teacher"]["reason"] == "as *** says" for i in items)
    assert key not in out.read_text()


def test_preference_rows_are_trls_conversational_format(api, trajectories_run):
    cwd, _ = trajectories_run
    out = cwd / "runs" / "ch-smoke-t1-after" / "training-local.jsonl"
    if not out.exists():
        api.policy = _teacher_failing_after(10_000, Script())[0]
        finish(pokebench(cwd, api, "export-training", "ch-smoke-t1-after", "--teacher", "local"))
    items = [json.loads(line) for line in out.read_text().splitlines()]
    differ = [i for i in items if i["teacher"]["legal"] and i["teacher"]["action"] != i["action"]]
    rows = [json.loads(line) for line in beside(out)["preferences"].read_text().splitlines()]
    assert differ and len(rows) == len(differ)
    for row, item in zip(sorted(rows, key=_key), sorted(differ, key=_key)):
        assert row["prompt"] == item["messages"][:-1] and row["prompt"][-1]["role"] in ("user", "tool")
        assert row["chosen"] == [{"role": "assistant", "content": item["teacher"]["raw"]}]
        assert row["rejected"] == [item["messages"][-1]] and row["rejected"][0]["role"] == "assistant"
        assert row["chosen_action"] == item["teacher"]["action"] != row["rejected_action"]


def _key(row: dict) -> tuple:
    return row["game_id"], row["player"], row["answer_index"]


def test_reward_rows_carry_the_engines_regret_of_each_action(api, trajectories_run):
    """Decision scores as `pokebench analyse` caches them (one searched decision written in its file format):
    the player's action and the teacher's each get a row with the regret."""
    cwd, _ = trajectories_run
    run_dir = cwd / "runs" / "ch-smoke-t2-after"
    api.policy = _teacher_failing_after(10_000, Script())[0]
    finish(pokebench(cwd, api, "export-training", "ch-smoke-t2-after", "--teacher", "local"))
    out = run_dir / "training-local.jsonl"
    items = [json.loads(line) for line in out.read_text().splitlines()]
    item = next(i for i in items if i["decision"] is not None and i["teacher"]["legal"]
                and i["action"] and i["teacher"]["action"] != i["action"])
    values = [[engine_key(item["teacher"]["action"]), 80, 0.7],
              [engine_key(item["action"]), 20, 0.4]]
    append_entries(cache_path(run_dir), [{
        "uid": f"uid-of-{item['game_id']}", "index": 0, "engine": engine_version() or "any", "settings": Settings().key, "repeat": 0,
        "game_id": item["game_id"], "run": run_dir.name, "side": item["side"], "player": item["player"],
        "decision": item["decision"], "turn": 1, "kind": "move", "choice": "move 1", "options": 2,
        "own": {"actions": values, "chosen": values[1][0]}, "full": {"actions": values, "chosen": values[1][0]}}])
    finish(pokebench(cwd, api, "export-training", "ch-smoke-t2-after", "--teacher", "local"))
    rows = [json.loads(line) for line in beside(out)["rewards"].read_text().splitlines()]
    assert [(r["who"], r["regret"], r["reward"], r["label"]) for r in rows] == [
        ("player", 0.3, -0.3, False), ("teacher", 0.0, -0.0, True)]
    assert all(r["prompt"] == item["messages"][:-1] and r["completion"][0]["role"] == "assistant" for r in rows)
