"""A run's config is checked before any game: what can never be fair or finish is refused, with the fix.

The checks that need only the config run in-process on configs composed by Hydra from the real
conf/ folder; the format, which only the pinned server can judge, goes through a whole
`python -m pokebench` with its server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from pokebench import paths
from pokebench.llm.fake_server import LocalOpenAI
from pokebench.play.plan import ConfigError, available_runs, check_run_name, fingerprint, plan_run
from pokebench.play.spend_estimate import estimate
from pokebench.play.trajectories import spend_before
from pokebench.players.llm import LLMPlayer
from pokebench.players.max_damage import MaxDamageBot
from pokebench.results.store import RunStore, StoreError
from support.games import REPO_DIR


def config(*overrides: str) -> DictConfig:
    with initialize_config_dir(str(paths.conf_dir()), version_base=None):
        return compose("config", overrides=list(overrides))


FOUL_PLAY_STANDIN = [sys.executable, str(REPO_DIR / "tests" / "support" / "foul_play_standin.py")]


@pytest.mark.parametrize(("overrides", "message"), [
    (["matchups=[[random,max-damage],[max-damage,random]]"], "The matchups list max-damage and random twice"),
    (["matchups=[[random,max-damage],[random,max-damage]]"], "The matchups list random and max-damage twice"),
    (["matchups=null"], "matchups must be 'all' or a list of [A, B] pairs, e.g. matchups=[[random,max-damage]], "
                        "not None"),
    (["seed_text="], "'seed_text' must be a non-empty text"),
    (["seed_text=null"], "'seed_text' must be a non-empty text"),
    (["seed_text=' '"], "'seed_text' must be a non-empty text"),
    (["stall_timeout=0"], "'stall_timeout' is a time-out in seconds and must be a positive number, not 0"),
    (["stall_timeout=-1"], "'stall_timeout' is a time-out in seconds and must be a positive number, not -1"),
    (["server.liveness_timeout=-5"], "'server.liveness_timeout' is a time-out in seconds"),
    (["retry_rounds=-1"], "'retry_rounds' must be a whole number of at least 0"),
    (["server.port=99999"], "'server.port' must be the port (1 to 65535) of a PokéBench server already running"),
    (["server.port=abc"], "'server.port' must be the port (1 to 65535)"),
    (["server.sim_processes=-1"], "'server.sim_processes' must be 1 or more (or null: one per usable CPU), not -1"),
    (["anchor=nosuch"], "The anchor 'nosuch' is not a player of this run (random, max-damage, heuristic)"),
    (["+players.dict._target_=collections.OrderedDict"], "is not a poke-env Player subclass nor an ExternalCompetitor"),
    (["+players.bad$x._target_=pokebench.players.random_bot.RandomBot"], "Player name 'bad$x' cannot be used"),
    (["+players.fp1._target_=pokebench.players.foul_play.adapter.FoulPlay",
      "+players.fp2._target_=pokebench.players.foul_play.adapter.FoulPlay",
      f"+players.fp1.command={json.dumps(FOUL_PLAY_STANDIN)}", f"+players.fp2.command={json.dumps(FOUL_PLAY_STANDIN)}",
      "matchups=[[fp1,fp2]]"], "Matchup(s) fp1-vs-fp2 put two external programs against each other"),
    (["+player@players.local=llm", "+model@players.local.model=local", "players.local.model.timeout=0",
      "matchups=[[local,random]]"], "'players.local.model.timeout' is a time-out in seconds"),
    (["+player@players.local=llm", "+model@players.local.model=local", "format=gen9randomdoublesbattle",
      "matchups=[[local,random]]"], "format=gen9randomdoublesbattle cannot be played by every player: local plays only"),
    (["+player@players.local=llm", "+model@players.local.model=local", "players.local.model.max_in_flight=0",
      "matchups=[[local,random]]"], "'players.local.model.max_in_flight' must be 1 or more (its games in flight at "
                                    "once; null: no limit of its own), not 0"),
    (["+players.fp._target_=pokebench.players.foul_play.adapter.FoulPlay", "+players.fp.max_in_flight=-1",
      f"+players.fp.command={json.dumps(FOUL_PLAY_STANDIN)}", "matchups=[[fp,random]]"],
     "'players.fp.max_in_flight' must be 1 or more"),
    (["+player@players.noisy=max_damage_noisy", "players.noisy.epsilon=1.5"],
     "Player 'noisy': epsilon must be a probability from 0 to 1"),
    (["+player@players.local=llm", "+model@players.local.model=local", "players.local.model.backoff_base=-1",
      "matchups=[[local,random]]"], "model local: backoff_base must be a number of seconds of at least 0, not -1"),
    (["+player@players.local=llm", "+model@players.local.model=local", "players.local.model.retry_after_max=abc",
      "matchups=[[local,random]]"], "model local: retry_after_max must be a number of seconds of at least 0, not 'abc'"),
    (["sequential.target_width=300", "budget_usd=5"], "A sequential run does not apply spending caps (budget_usd)"),
    (["publish=maybe"], "'publish' must be true (publish data/site/NAME/ when the run ends) or false, not 'maybe'"),
    (["+players.extra=1"], "Player 'extra' is 1, not a player's config: add a player from conf/player/ with e.g. "
                           "'+player@players.extra=random'"),
    (["+players.extra=null"], "Player 'extra' is None, not a player's config"),
])
def test_configs_that_can_never_be_fair_or_finish_are_refused_when_planned(overrides, message):
    with pytest.raises(ConfigError) as refused:
        plan_run(config("+run=bots-smoke", *overrides), "t")
    assert message in str(refused.value)


def test_the_run_identity_holds_resolved_values_and_no_operational_setting(monkeypatch, tmp_path):
    classes = {"local": LLMPlayer, "max-damage": MaxDamageBot}
    monkeypatch.setenv("POKEBENCH_MODEL", "model-a")
    a = fingerprint(config("+run=llm-smoke"), classes)
    assert a["players"]["local"]["model"]["model"] == "model-a"  # the environment variable, resolved
    assert a["prompt_version"] == 3 and a["players"]["local"]["class"] == "pokebench.players.llm.LLMPlayer"
    operational = fingerprint(config("+run=llm-smoke", "concurrency=9", "stall_timeout=50", "retry_rounds=0",
                                     "players.local.model.timeout=5", "players.local.model.max_attempts=2",
                                     "players.local.model.max_in_flight=3", "server.liveness_timeout=7"), classes)
    assert operational == a  # raising a time-out resumes the same run
    assert fingerprint(config("+run=llm-smoke", "players.local.model.reasoning=low"), classes) != a
    monkeypatch.setenv("POKEBENCH_MODEL", "model-b")
    b = fingerprint(config("+run=llm-smoke"), classes)
    with RunStore(tmp_path / "store.sqlite") as store:
        store.bind_config(a, "llm-smoke")
        with pytest.raises(StoreError, match=r"it differs in: players\.local\.model\.model\)"):
            store.bind_config(b, "llm-smoke")  # another model never merges into the run's rating


def test_a_store_bound_by_an_older_pokebench_is_rebound_to_the_same_config(tmp_path):
    plan = plan_run(config("+run=bots-smoke"), "bots-smoke")
    assert plan.legacy_fingerprints
    with RunStore(tmp_path / "store.sqlite") as store:
        store.bind_config(plan.legacy_fingerprints[0], "bots-smoke")
        store.bind_config(plan.fingerprint, "bots-smoke", legacy=plan.legacy_fingerprints)
        store.bind_config(plan.fingerprint, "bots-smoke")
        with pytest.raises(StoreError, match="differs in: seed_text"):
            store.bind_config(plan_run(config("+run=bots-smoke", "seed_text=x"), "bots-smoke").fingerprint, "bots-smoke")


@pytest.mark.server
@pytest.mark.parametrize(("battle_format", "message"), [
    ("gen1ou", "format=gen1ou ([Gen 1] OU) is not a random-team singles format"),
    ("gen9randombatle", "format=gen9randombatle is not a format of the pinned Showdown server (0.11.11). "
                        "Did you mean gen9randombattle"),
])
def test_a_format_the_pinned_server_cannot_play_is_refused_before_any_game(tmp_path, battle_format, message):
    proc = subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-smoke", f"format={battle_format}"],
                          cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(REPO_DIR)), capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
    assert not list(tmp_path.rglob("store.sqlite"))


def test_every_problem_of_a_config_is_said_at_once():
    """README: a run "says everything wrong at once"; it said the first problem of its settings only."""
    with pytest.raises(ConfigError) as refused:
        plan_run(config("+run=bots-smoke", "pairs=0", "concurrency=-1", "seed_text=", "anchor=nobody",
                        "+players.extra=1"), "t")
    said = str(refused.value)
    for problem in ("'pairs' must be a positive whole number, not 0", "'concurrency' must be a positive whole number",
                    "'seed_text' must be a non-empty text", "The anchor 'nobody' is not a player",
                    "Player 'extra' is 1, not a player's config"):
        assert problem in said, said


def test_the_spend_estimate_takes_any_players_config_and_leaves_the_checks_to_the_plan():
    """The estimate printed before the plan's checks crashed with a traceback on a model run without prices (README:
    `players.X.model.prices=unknown`) and on a player that is not a config (`+players.extra=1`)."""
    assert spend_before(config("+run=llm-smoke", "players.local.model.prices=unknown"), "t", plan_run) == ""
    priced = {"model": {"prices": {"input": 3.0, "output": 15.0}}, "refiner_model": {"prices": "unknown"}}
    one = estimate({"ch": priced}, {"ch": 8}, pairs=4, refining=["ch"])
    assert one.game_usd["ch"] > 0 and one.refiner_usd["ch"] == 0
    assert spend_before(config("+run=bots-smoke", "+players.extra=1"), "t", plan_run) == ""


def test_a_model_cap_on_a_sequential_run_is_refused_not_ignored():
    """A sequential run's steps play through no budget: its caps were ignored, and the spend unbounded."""
    with LocalOpenAI() as api, pytest.raises(ConfigError, match=r"does not apply spending caps \(players.local.model"):
        plan_run(config("+run=llm-smoke", f"players.local.model.base_url={api.base_url}", "sequential.target_width=300",
                        "players.local.model.budget_usd=1"), "t")


def test_the_spend_estimate_keeps_a_cap_the_command_gives():
    """With budget_usd=0.01 it advised starting again with budget_usd=3, a cap 300 times the user's."""
    with LocalOpenAI() as api:
        priced = ["players.local.model.prices.input=3", "players.local.model.prices.output=15",
                  f"players.local.model.base_url={api.base_url}"]
        free = spend_before(config("+run=llm-smoke", *priced), "t", plan_run)
        capped = spend_before(config("+run=llm-smoke", *priced, "budget_usd=0.01"), "t", plan_run)
    assert "To cap it, stop now (Ctrl-C) and start again with budget_usd=1" in free
    assert "budget_usd=0.01 caps each run" in capped and "To cap it" not in capped


@pytest.mark.parametrize(("name", "message"), [
    ("a/b", "Run name 'a/b' cannot be used: a run is one folder of runs/, so its name has no '/'"),
    ("..", "Run name '..' cannot be used"),
    ("/tmp/elsewhere", "Choose e.g. name=tmp-elsewhere."),
    ("true", "'name' must be a text, not True. Quote it"),
])
def test_a_run_name_that_is_not_one_folder_is_refused_before_any_game(tmp_path, name, message):
    """A name with a '/' used to play the whole run into runs/a/b, which publish, analyse and the resume then
    could not find (and '..' or an absolute path stored it outside runs/); a number crashed with a traceback."""
    proc = subprocess.run([sys.executable, "-m", "pokebench", "+run=bots-smoke", f"name={name}"], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO_DIR)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert not list(tmp_path.rglob("*")), "nothing may be written before the name is checked"


@pytest.mark.parametrize(("args", "message"), [
    (["+run=nope"], "Could not find 'run/nope'"),
    (["+run=bots-smoke", "pair=3"], "To append to your config use +pair=3"),
])
def test_a_command_line_hydra_refuses_exits_as_a_config_error(tmp_path, args, message):
    """Exit code 2 (README, "When a run stops"), not Hydra's 1, which says that harness errors remain."""
    proc = subprocess.run([sys.executable, "-m", "pokebench", *args], cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(REPO_DIR)), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr, (proc.returncode, proc.stderr[-2000:])


def test_a_run_named_by_a_number_is_the_folder_of_that_number():
    assert check_run_name(2026) == "2026" and check_run_name("calibration-50") == "calibration-50"


@pytest.mark.server  # the search bot and the ladder read the set table set-up exports
@pytest.mark.parametrize("run", available_runs())
def test_every_shipped_run_plans_where_what_it_needs_is_installed(run: str, monkeypatch) -> None:
    """Every run in conf/run/ (the README names them) starts as shipped on a machine with what it says it needs:
    its API keys set, its models reachable (here a local OpenAI-compatible server stands in for each endpoint), and
    Foul Play installed (here its stand-in). fp-sonnet-low once stopped at its anchor, Max-damage, which is not
    among its players."""
    for key in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "POKEBENCH_API_KEY"):
        monkeypatch.setenv(key, "a-key-for-planning")
    shipped = config(f"+run={run}")
    with LocalOpenAI() as api:
        stand_ins = [f"+players.{name}.command={json.dumps(FOUL_PLAY_STANDIN)}"
                     if player["_target_"] == "pokebench.players.foul_play.adapter.FoulPlay"
                     else f"players.{name}.model.base_url={api.base_url}"
                     for name, player in shipped.players.items() if "model" in player or "checkout" in player]
        plan = plan_run(config(f"+run={run}", *stand_ins), run)
    assert set(plan.factories) == set(shipped.players) and plan.specs
