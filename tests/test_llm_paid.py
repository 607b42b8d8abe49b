"""Ready for a paid run: no call after a game, every answer checked, a whole-answer deadline, fail-fast errors,
context overflows as losses, and what the provider served recorded. Real Showdown, real HTTP (the local
OpenAI-compatible server), the real `openai` client."""

from __future__ import annotations

import asyncio
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from support.existing_server import on_server
from support.llm import reset_api, fake_server_model
from support.games import REPO_DIR, play, results
from pokebench.llm.client import ChatClient, LLMAPIError, ModelConfig
from pokebench.llm.delivery import watch_delivery
from pokebench.llm.errors import ContextLengthExceeded, KeyRefused, UnknownModel, UnsupportedParameter
from pokebench.llm.fake_server import LocalOpenAI, Reply, hashed_policy
from pokebench.llm.preflight import PreflightError, probe_models
from pokebench.play.arena import GameResult, HarnessError
from pokebench.play.schedule import build_schedule
from pokebench.player.bench_player import BenchPlayer
from pokebench.players.llm import LLMPlayer
from pokebench.players.max_damage import MaxDamageBot
from pokebench.results.store import RunStore
from pokebench.showdown.server import LocalShowdown

SECRET = "fake-api-key-NEVER-STORED-15"
PRICES = {"input": 3.0, "cached_input": 0.3, "cache_write": 3.75, "output": 15.0}


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI(policy=hashed_policy, served_model="local-test-model-2026-11-30",
                     system_fingerprint="fp_local_1") as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_api(api, monkeypatch):
    yield reset_api(api, monkeypatch, SECRET)


def model(api: LocalOpenAI, **overrides: Any) -> dict[str, Any]:
    return fake_server_model(api, PRICES, **{"backoff_max": 0.05, "retry_after_max": 0.1, **overrides})


def play_llm(showdown, api, seed: str, opponent: Any = MaxDamageBot, turn_limit: int = 300, **overrides: Any):
    made: list[LLMPlayer] = []

    def factory(**kwargs: Any) -> LLMPlayer:
        made.append(LLMPlayer(model=model(api, **overrides), name="llm", **kwargs))
        return made[-1]

    spec = next(s for s in build_schedule("paid-test", seed, 1, [("llm", "bot")]) if s.p1 == "llm")
    outcome = play(showdown, [spec], {"llm": factory, "bot": opponent}, turn_limit=turn_limit)[0]
    return outcome, made[-1]


def complete(api: LocalOpenAI, **overrides: Any):
    client = ChatClient(ModelConfig.from_dict(model(api, **overrides)))
    return asyncio.run(client.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]))


def scripted(*replies: Any):
    queue = list(replies)
    return lambda request: queue.pop(0) if queue else "ACTION: 1\nREASON: ok"


# ---- not one call after the game ---------------------------------------------------------------------


def test_at_the_turn_limit_tie_no_call_is_made_and_the_record_is_consistent(showdown, api):
    outcome, player = play_llm(showdown, api, "tie", turn_limit=4)
    [result] = results([outcome])
    assert result.record["winner"] == "tie" and result.record["end_reason"] == "turn_limit"
    sent = len(api.requests)
    time.sleep(2.0)  # anything the player did after the end would reach the endpoint by now
    assert len(api.requests) == sent == len(result.decisions)
    assert all(d.turn < 4 for d in result.decisions)  # no decision at the turn where the tie comes
    summary = result.players["p1"]
    assert summary["answers"] == len(result.decisions) and summary["refusals"] == 0 == summary["refused_answers"]
    assert summary["llm_decisions"] == len({d.decision for d in result.decisions})
    assert player.decision_log == result.decisions  # nothing was added after the record was taken


class CrashesWhileTheModelThinks(BenchPlayer):
    """Plays randomly; from turn 2, once the server is thinking on the LLM's request (a 1 s delay, received under 0.5 s
    ago), fails: the game is voided with that request in flight. It waits without blocking the event loop, which the
    LLM's request needs to be sent (a blocking sleep here voided the game before it was, now and then)."""

    api: LocalOpenAI

    async def choose_move(self, battle):
        if battle.turn < 2:
            return self.rng.choice(battle.valid_orders)
        deadline = time.monotonic() + 20
        while not (len(self.api.requests) >= 2 and time.time() - self.api.requests[-1].received_at < 0.5):
            assert time.monotonic() < deadline, "the LLM's request of turn 2 never reached the server"
            await asyncio.sleep(0.01)
        raise RuntimeError("deliberate crash for a test")


def test_a_voided_game_gets_no_further_request_and_keeps_its_spend(showdown, api):
    api.policy = lambda request: Reply(text=hashed_policy(request), delay=1.0 if request.index >= 1 else 0.0)

    def crashing(**kwargs: Any) -> CrashesWhileTheModelThinks:
        player = CrashesWhileTheModelThinks(**kwargs)
        player.api = api
        return player

    outcome, player = play_llm(showdown, api, "voided", opponent=crashing)
    assert isinstance(outcome, HarnessError) and "deliberate crash" in outcome.detail
    sent = len(api.requests)
    time.sleep(2.5)  # a cancelled think would have answered and asked again by now
    assert len(api.requests) == sent
    answers = [d for d in outcome.decisions if d.extra.get("error") is None]
    assert answers and all(d.cost_usd > 0 for d in answers)  # kept with the harness error
    # the request in flight when the game was voided was served: it is recorded too (its tokens unknown)
    assert [d.extra.get("error") for d in outcome.decisions if d not in answers] == ["cancelled"]
    assert len(outcome.decisions) == sent
    assert player.game_over


def test_a_request_cancelled_is_counted_served_exactly_when_the_provider_got_it(api):
    """Cancelled at moments from before its connection to while the provider thinks: the client's verdict (in flight,
    so paid) must be what the server saw. On the parent every cancelled request was 'served', sent or not."""
    api.policy = lambda request: Reply(text="ACTION: 1", delay=0.5)
    client = ChatClient(ModelConfig.from_dict(model(api)))

    async def cancel_after(moment: float) -> bool:
        with watch_delivery() as delivery:
            task = asyncio.ensure_future(client.complete([{"role": "user", "content": "u" * 20_000}]))
            await asyncio.sleep(moment)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        return delivery.in_flight

    async def sweep() -> list[tuple[bool, bool]]:
        seen = []
        for moment in (0.0, 0.0, 0.001, 0.003, 0.01, 0.03, 0.2, 0.3):
            before = len(api.requests)
            delivered = await cancel_after(moment)
            await asyncio.sleep(0.3)  # what the server has by now, it got before the cancellation
            seen.append((delivered, len(api.requests) > before))
        return seen

    seen = asyncio.run(sweep())
    assert all(delivered == received for delivered, received in seen), seen
    assert {delivered for delivered, _ in seen} == {False, True}, seen  # both kinds of moment were struck

    async def answered() -> bool:  # an answer read in full leaves nothing in flight
        api.policy = lambda request: "ACTION: 1"
        with watch_delivery() as delivery:
            await client.complete([{"role": "user", "content": "u"}])
        return delivery.in_flight

    assert asyncio.run(answered()) is False


# ---- every answer checked; a deadline for the whole answer --------------------------------------------


def test_malformed_bodies_and_null_messages_are_retried_and_recorded(api):
    api.policy = scripted(Reply(body=b'{"choices": [oops'), Reply(message=None), Reply(body=b"[]"),
                          Reply(text="ACTION: 2\nREASON: r"))
    answer = complete(api, max_attempts=4)
    assert answer.text == "ACTION: 2\nREASON: r" and answer.attempts == 4
    assert [r["cause"] for r in answer.retries] == ["malformed answer"] * 3
    assert "not JSON" in answer.retries[0]["detail"] and "message" in answer.retries[1]["detail"]


def test_malformed_answers_that_persist_fail_as_what_they_are(api):
    api.policy = lambda request: Reply(body=b"<html>gateway</html>")
    with pytest.raises(LLMAPIError, match=r"failed 2 times; last: malformed answer \(the body is not JSON"):
        complete(api, max_attempts=2)


@pytest.mark.parametrize("usage, problem", [
    ({"prompt_tokens": -20, "completion_tokens": 5}, "prompt_tokens is -20"),
    ({"prompt_tokens": math.nan, "completion_tokens": 5}, "prompt_tokens is nan"),
    ({"prompt_tokens": 10, "completion_tokens": math.inf}, "completion_tokens is inf"),
    ({"prompt_tokens": 10 ** 12, "completion_tokens": 5}, "prompt_tokens is 1000000000000"),
    ({"prompt_tokens": 10, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 50}}, "exceed the input"),
])
def test_impossible_usage_is_retried_then_dropped_never_priced(api, usage, problem):
    api.policy = scripted(Reply(text="ACTION: 1", usage=usage), Reply(text="ACTION: 2"))
    answer = complete(api)
    assert answer.text == "ACTION: 2" and answer.retries[0]["cause"] == "impossible usage"
    assert problem in answer.retries[0]["detail"] and answer.usage_dropped is None
    api.policy = lambda request: Reply(text="ACTION: 3", usage=usage)
    answer = complete(api, max_attempts=2)
    assert answer.text == "ACTION: 3" and problem in answer.usage_dropped
    assert answer.usage.input_tokens is None and answer.usage.output_tokens is None  # so its cost is None


def test_the_timeout_is_a_deadline_for_the_whole_answer(api):
    api.policy = scripted(Reply(text="ACTION: 1\nREASON: " + "x" * 400, drip=0.05))  # ~25 s if waited for
    start = time.monotonic()
    answer = complete(api, timeout=1.0, max_attempts=2)
    assert answer.retries[0]["cause"] == "timeout" and "no whole answer within 1 s" in answer.retries[0]["detail"]
    assert time.monotonic() - start < 6


class SlowThinker(LLMPlayer):
    def think_bound(self) -> float:
        return 1.0


def test_the_arena_bounds_a_player_that_thinks_too_long(showdown, api):
    api.policy = lambda request: Reply(text="ACTION: 1", delay=4.0)

    def factory(**kwargs: Any) -> LLMPlayer:
        return SlowThinker(model=model(api, timeout=30), name="llm", **kwargs)

    spec = next(s for s in build_schedule("paid-test", "slow", 1, [("llm", "bot")]) if s.p1 == "llm")
    start = time.monotonic()
    [outcome] = play(showdown, [spec], {"llm": factory, "bot": MaxDamageBot})
    assert isinstance(outcome, HarnessError) and outcome.cause.startswith("player thinking too long")
    assert time.monotonic() - start < 20


# ---- fail fast: the pre-flight request, and errors no retry fixes --------------------------------------


@pytest.mark.parametrize("reply, error, words", [
    (Reply(status=401, error="invalid x-api-key"), KeyRefused, ["POKEBENCH_TEST_KEY"]),
    (Reply(status=403, error="not allowed"), KeyRefused, ["POKEBENCH_TEST_KEY"]),
    (Reply(status=404, error="model: no-such-model"), UnknownModel, ["'local-test-model'"]),
    (Reply(status=400, error="Unsupported parameter: 'reasoning_effort' is not supported with this model.",
           error_code="unsupported_parameter", error_param="reasoning_effort"), UnsupportedParameter,
     ["'reasoning_effort'"]),
    (Reply(status=400, error="Unrecognized request argument supplied: top_k"), UnsupportedParameter, ["'top_k'"]),
])
def test_the_preflight_request_names_what_to_fix(api, reply, error, words):
    api.policy = lambda request: reply
    with pytest.raises(error) as info:
        complete(api)
    assert all(w in str(info.value) for w in words) and SECRET not in str(info.value)
    assert len(api.requests) == 1  # not retried
    api.requests.clear()
    configs = {"a": ModelConfig.from_dict(model(api)), "b": ModelConfig.from_dict(model(api))}
    with pytest.raises(PreflightError, match="players a, b: ") as info:
        probe_models(configs)
    assert len(api.requests) == 1 and all(w in str(info.value) for w in words)  # one request per distinct model


def test_a_passing_preflight_sends_the_runs_exact_parameters(api):
    config = ModelConfig.from_dict(model(api, request={"max_tokens": 100}, reasoning="high",
                                         reasoning_levels={"none": {}, "high": {"reasoning_effort": "high"}}))
    [probe] = probe_models({"x": config})
    body = api.requests[0].body
    assert body["reasoning_effort"] == "high" and body["max_tokens"] == 100 and body["model"] == "local-test-model"
    assert probe.completion.served_model == "local-test-model-2026-11-30" and probe.cost_usd > 0


def test_a_context_overflow_is_a_loss_with_its_own_end_reason_once(showdown, api):
    overflow = Reply(status=400, error="This model's maximum context length is 2048 tokens. However, you requested "
                                       "2300 tokens.", error_code="context_length_exceeded")
    api.policy = lambda request: overflow if request.index == 3 else hashed_policy(request)
    outcome, player = play_llm(showdown, api, "overflow")
    assert isinstance(outcome, GameResult)
    assert outcome.record["end_reason"] == "context_length" and outcome.record["winner"] == "p2"
    assert len(api.requests) == 4  # three answers, the overflow, and nothing after
    last = outcome.decisions[-1]
    assert last.extra["error"] == "context_length" and "maximum context length" in last.extra["error_detail"]
    assert [d.input_tokens > 0 for d in outcome.decisions[:-1]] == [True] * 3
    assert outcome.players["p1"]["end_reason"] == "context_length" and outcome.players["p1"]["answers"] == 3
    with pytest.raises(ContextLengthExceeded):
        api.policy = lambda request: overflow
        complete(api)


# ---- what the provider served ------------------------------------------------------------------------


def test_the_served_model_id_and_fingerprint_are_recorded_beside_the_alias(showdown, api):
    outcome, _ = play_llm(showdown, api, "served", turn_limit=3)
    [result] = results([outcome])
    assert {d.model for d in result.decisions} == {"local-test-model"}
    assert {d.served_model for d in result.decisions} == {"local-test-model-2026-11-30"}
    assert {d.extra["system_fingerprint"] for d in result.decisions} == {"fp_local_1"}
    facts = result.players["p1"]["model_facts"]
    assert result.players["p1"]["served_models"] == ["local-test-model-2026-11-30"]
    assert facts["base_url_host"] == "127.0.0.1" and facts["prices"]["cache_write"] == 3.75
    assert facts["request"] == {} and facts["reasoning"] == "none"


# ---- whole runs: fail fast, spending caps, the summary, no key in any file -------------------------------


def run_cli(tmp_path, api, *extra: str, timeout: float = 300, server: LocalShowdown | None = None):
    """The llm-smoke run on `api`; on `server` (the worker's, running) if given, else on a server of its own."""
    on, server_env = on_server(server) if server is not None else ([], {})
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), POKEBENCH_BASE_URL=api.base_url, POKEBENCH_API_KEY=SECRET,
               **server_env)
    args = [sys.executable, "-m", "pokebench", "+run=llm-smoke", "publish=false", "server.sim_processes=1",
            "turn_limit=6", "players.local.model.max_attempts=2", "players.local.model.backoff_base=0.02", *extra, *on]
    return subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)


def stored(tmp_path):
    with RunStore.open_existing(tmp_path / "runs" / "llm-smoke" / "store.sqlite") as store:
        return store.games(), store.harness_errors(), store.decisions(), store.voided_decisions()


def no_secret_in(root: Path) -> None:
    for path in root.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_a_refused_key_stops_before_the_first_game(tmp_path, api):
    api.policy = lambda request: Reply(status=401, error="invalid api key")
    proc = run_cli(tmp_path, api)
    assert proc.returncode == 2 and len(api.requests) == 1
    assert "The pre-flight request failed; no game was played" in proc.stderr
    assert "refused the key in POKEBENCH_API_KEY" in proc.stderr and "Traceback" not in proc.stderr
    assert not list((tmp_path / "runs").rglob("*.sqlite")), "a run refused before any game makes no store"
    no_secret_in(tmp_path)


@pytest.mark.server
def test_a_key_refused_mid_run_stops_the_run_at_once_with_the_resume_command(tmp_path, api):
    api.policy = lambda request: hashed_policy(request) if request.index < 4 else Reply(status=401, error="revoked")
    # one game at a time: with both games of the pair in flight, the other one's request could already be on its
    # way when the first 401 came (6 requests, seen once in a CI run), and which game had answered was a race
    proc = run_cli(tmp_path, api, "concurrency=1")
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert "The run stopped at once" in proc.stderr and "refused the key in POKEBENCH_API_KEY" in proc.stderr
    assert (f"To resume: {sys.executable} -m pokebench +run=llm-smoke publish=false server.sim_processes=1 turn_limit=6"
            in proc.stderr)
    assert len(api.requests) == 5  # the pre-flight, three answers, the 401: no stream of failing games
    games, errors, _, voided = stored(tmp_path)
    assert games.empty and len(errors) == 1 and len(voided) == 3  # the voided game's answers are kept
    assert "Harness errors now: player failed ×1" in proc.stdout
    no_secret_in(tmp_path)


@pytest.mark.server
def test_a_budget_stops_the_run_and_a_higher_one_resumes_it(showdown, tmp_path, api):
    prices = ["players.local.model.prices.input=3", "players.local.model.prices.cached_input=0.3",
              "players.local.model.prices.output=15"]
    # (the $0.000x spent: the pre-flight request's, its tokens partly cached) before any game is stored, a game is
    # expected to cost the spend estimate's $0.23 (45 answers of 8,000 tokens): the first is started, not the second
    # beside it (both were, whatever the cap: nothing stored, nothing expected)
    proc = run_cli(tmp_path, api, *prices, "budget_usd=0.3", "players.local.model.max_in_flight=2", server=showdown)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert re.search(r"The run stopped starting games: the run has spent \$0\.000\d of its budget \$0\.3 \(budget_usd\), "
                     r"and the games in flight and the next are expected to cost \$0\.4558 more", proc.stderr), \
        proc.stderr[-2000:]
    games, _, decisions, _ = stored(tmp_path)
    assert len(games) == 1  # the first game was played, the second not started
    first_cost = decisions.cost_usd.sum()
    assert "Run 'llm-smoke': 1 game(s) played now; 1 of 2 stored in all." in proc.stdout

    # the command to resume raises the cap to what the missing game is expected to cost (it repeated budget_usd=0.3,
    # which stops again at once); it runs as printed
    resume = proc.stderr.rstrip().splitlines()[-1].removeprefix("To resume: ")
    assert "budget_usd=0.3" not in resume and re.search(r" budget_usd=0\.0\d+( |$)", resume), resume
    proc = subprocess.run(resume, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(REPO_DIR), POKEBENCH_BASE_URL=api.base_url,
                                   POKEBENCH_API_KEY=SECRET, **on_server(showdown)[1]))
    assert proc.returncode == 0, proc.stderr[-2000:]
    games, _, decisions, _ = stored(tmp_path)
    assert len(games) == 2 and games.game_id.is_unique and set(decisions.game_id) == set(games.game_id)
    assert "Run 'llm-smoke': 1 game(s) played now; 2 of 2 stored in all." in proc.stdout
    # each start's pre-flight request is a paid answer of no game: kept in the store, counted in the spend
    with RunStore.open_existing(tmp_path / "runs" / "llm-smoke" / "store.sqlite") as store:
        requests = store.preflight()
    assert len(requests) == 2 and all(r["player"] == "local" and r["cost_usd"] > 0 for r in requests)
    preflight = sum(r["cost_usd"] for r in requests)
    assert f"of which pre-flight requests (one per model and start): ${preflight:,.4f}" in proc.stdout
    assert f"${decisions.cost_usd.sum() + preflight:,.4f}" in proc.stdout and decisions.cost_usd.sum() > first_cost
    assert "Leaderboard:" in proc.stdout and "Spend by model" in proc.stdout
    no_secret_in(tmp_path)


# ---- provider presets and prompt caching ------------------------------------------------------------------

CONF = REPO_DIR / "conf"


def preset(name: str, base_url: str, **overrides: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    raw = OmegaConf.to_container(OmegaConf.load(CONF / "model" / f"{name}.yaml"), resolve=True)
    if raw["model"] == "???":
        raw["model"] = "vendor/some-model"
    if raw["prices"] == "???":
        raw["prices"] = "unknown"
    return {**raw, "base_url": base_url, "api_key_env": "POKEBENCH_TEST_KEY", "api_key_required": True, **overrides}


EXPECTED = {  # what each preset's request carries, as the provider documents it (see each file for what is unchecked)
    "openai-gpt-5": lambda body, level: body["reasoning_effort"] == level and "max_completion_tokens" in body
    and "max_tokens" not in body,
    "openai-gpt-5-mini": lambda body, level: body["reasoning_effort"] == level and "max_completion_tokens" in body,
    "gemini-2.5-pro": lambda body, level: body["reasoning_effort"] == level and body["max_tokens"] > 0,
    "openrouter": lambda body, level: body.get("reasoning") == ({"effort": level} if level != "none" else None)
    and body["usage"] == {"include": True},
    "claude-sonnet": lambda body, level: body.get("reasoning") == (
        {"max_tokens": {"low": 2048, "medium": 8192, "high": 24000}[level]} if level != "none" else None)
    and body["usage"] == {"include": True} and body["provider"]["order"] == ["anthropic"]
    and body["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"},
}


@pytest.mark.parametrize("name", sorted(p.stem for p in (CONF / "model").glob("*.yaml")))
def test_every_presets_request_arrives_as_its_provider_documents_it(api, name):
    raw = preset(name, api.base_url)
    config = ModelConfig.from_dict(raw)
    assert config.prices is None or config.prices.read_on is None or "unchecked" in config.prices.read_on \
        or config.prices.input == 0
    for level in config.reasoning_levels:
        api.requests.clear()
        probe_models({"x": ModelConfig.from_dict({**raw, "reasoning": level})})
        body = api.requests[0].body
        assert body["model"] == config.model
        check = EXPECTED.get(name) or EXPECTED.get(name.rsplit("-", 1)[0])
        if check is not None:
            assert check(body, level), (name, level, body)
        elif name.startswith("local"):
            assert set(body) <= {"model", "messages", "max_tokens", "reasoning_effort"}
        elif name.startswith("claude"):
            assert EXPECTED["claude-sonnet"](body, level) if "sonnet" in name else body["messages"][0]["content"][0][
                "cache_control"] == {"type": "ephemeral"}


def test_a_model_without_prices_is_refused_unless_they_are_unknown(api):
    raw = preset("openrouter", api.base_url)
    with pytest.raises(ValueError, match="lacks prices: give its list prices .*model.prices=unknown"):
        ModelConfig.from_dict({**raw, "prices": "???"})
    assert ModelConfig.from_dict(raw).prices is None  # prices: unknown


def play_cached_game(showdown, server: LocalOpenAI, **overrides: Any) -> GameResult:
    def factory(**kwargs: Any) -> LLMPlayer:
        return LLMPlayer(model=preset("claude-sonnet", server.base_url, reasoning="none", **overrides),
                         name="llm", **kwargs)

    spec = next(s for s in build_schedule("paid-test", "cache", 1, [("llm", "bot")]) if s.p1 == "llm")
    [result] = results(play(showdown, [spec], {"llm": factory, "bot": MaxDamageBot}, turn_limit=12))
    return result


CACHE_PRICES = {"input": 3.0, "cached_input": 0.3, "cache_write": 3.75, "output": 15.0}


def test_the_cache_simulator_hits_only_behind_breakpoints_and_the_cost_uses_read_and_write_prices(showdown):
    with LocalOpenAI(policy=hashed_policy, cache="breakpoints", usage_shape="openrouter",
                     prices=CACHE_PRICES) as server:
        cached = play_cached_game(showdown, server)
        plain = play_cached_game(showdown, server, cache_breakpoints=False)
    with_bp, without = cached.decisions, plain.decisions
    assert all(d.cached_input_tokens == 0 and d.cache_write_tokens == 0 for d in without)
    assert without[0].input_tokens == with_bp[0].input_tokens
    assert with_bp[0].cached_input_tokens == 0 and with_bp[0].cache_write_tokens == with_bp[0].input_tokens
    assert all(d.cached_input_tokens > 0 for d in with_bp[1:])  # each reads what the one before wrote
    for d in with_bp + without:  # our price is the provider's: reads at 0.3, writes at 3.75, the rest at 3
        assert d.cost_usd == pytest.approx(d.extra["provider_cost_usd"])
    share = sum(d.cached_input_tokens for d in with_bp) / sum(d.input_tokens for d in with_bp)
    assert share > 0.5 and cached.players["p1"]["cost_usd"] < plain.players["p1"]["cost_usd"]


def test_anthropic_usage_names_are_read_as_cache_reads_and_writes(showdown):
    with LocalOpenAI(policy=hashed_policy, cache="breakpoints", usage_shape="anthropic") as server:
        result = play_cached_game(showdown, server)
    log = result.decisions
    assert log[0].cache_write_tokens > 0 and all(d.cached_input_tokens > 0 for d in log[1:])
    d = log[-1]
    fresh = d.input_tokens - d.cached_input_tokens - d.cache_write_tokens
    assert d.cost_usd == pytest.approx((fresh * 3 + d.cached_input_tokens * 0.3 + d.cache_write_tokens * 3.75
                                           + d.output_tokens * 15) / 1e6)


def test_the_prefix_simulator_caches_without_breakpoints(api):
    first = complete(api)
    config = ModelConfig.from_dict(model(api))
    later = asyncio.run(ChatClient(config).complete([
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
        {"role": "assistant", "content": "ACTION: 1"}, {"role": "user", "content": "v"}]))
    assert later.usage.cached_input_tokens == first.usage.input_tokens and later.usage.cache_write_tokens is None


def test_a_providers_error_body_is_printed_as_text_not_terminal_codes(api):
    api.policy = lambda request: Reply(status=401, error="\x1b[2J\x1b]0;pwned\x07ALL GOOD\r\n\u202eevil")
    with pytest.raises(PreflightError) as caught:
        probe_models({"llm": ModelConfig.from_dict(model(api))})
    message = str(caught.value)
    assert not any(ch in message for ch in "\x1b\x07\r\u202e") and message.count("\n") == 1  # one line per model
    assert "\\x1b[2J\\x1b]0;pwned\\x07ALL GOOD\\r\\n\\u202eevil" in message


@pytest.mark.server
def test_a_model_of_unknown_prices_costs_unknown_not_zero(showdown, tmp_path, api):
    """Its answers have no cost: the bar and the summary said "$0.0000" for them."""
    proc = run_cli(tmp_path, api, "players.local.model.prices=unknown", server=showdown)
    assert proc.returncode == 0, proc.stderr[-2000:]
    spend = proc.stdout.split("Spend by model", 1)[1]
    line = next(line for line in spend.splitlines() if line.strip().startswith("local "))
    assert "cost unknown" in line and "$" not in line, line
    assert "answers · cost unknown · " in proc.stderr and "$0.0000" not in proc.stderr, proc.stderr[-2000:]
