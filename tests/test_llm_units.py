"""Fast tests of the LLM player's parts: the prompt text, answer reading, usage and cost, the API client
with its retries (real HTTP through the `openai` client to the local server), and the model configs."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import socket
import struct
import time
from email.utils import format_datetime
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from pokebench.text import answers, prompt
from pokebench.llm.client import (ChatClient, LLMAPIError, MissingAPIKey, ModelConfig, ModelConfigError, Prices,
                                  Usage, cost_usd, retry_after_seconds)
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy, legal_actions_in
from support.games import SYSTEM_PROMPT_SHA256

CONF = Path(__file__).resolve().parent.parent / "conf"

# The method's two sample messages (section 3), for the structure checks below.
SAMPLE_FIRST = """BATTLE LOG
Battle started between Player 1 and Player 2!
Go! Carbink!
Player 2 sent out Calyrex (Calyrex-Shadow)!
== Turn 1 ==

CURRENT STATE (turn 1)
YOUR TEAM (Player 1):
- Carbink [ACTIVE], Rock/Fairy, L90, HP 236/236 (100%)
  Ability: Sturdy, Item: Chesto Berry, Tera type: Fighting
  Stats: Atk 95, Def 321, SpA 141, SpD 321, Spe 141
  Moves: Body Press (Fighting, Physical, 80 BP, 100% accuracy: Uses user's Def stat as Atk in damage calculation.); Rest (Psychic, Status, never misses: User sleeps 2 turns and restores HP and status.)
- Granbull [bench], Fairy, L88, HP 302/302 (100%)
  Ability: Intimidate, Item: Leftovers, Tera type: Ground
  Stats: Atk 261, Def 182, SpA 156, SpD 156, Spe 129
  Moves: Encore; Play Rough; Earthquake; Thunder Wave

OPPONENT'S TEAM (Player 2), as far as you have seen it:
- Calyrex-Shadow [ACTIVE], Psychic/Ghost, L64, HP 100%
  Ability: Unnerve
  Moves seen: none yet
- 5 Pokémon not seen yet

YOUR LEGAL ACTIONS
1. move Body Press
2. move Rest
3. move Body Press + Terastallize (Fighting)
4. move Rest + Terastallize (Fighting)
5. switch Granbull

Choose one action. Answer with only the ACTION line and the REASON line."""

SAMPLE_LATER = """NEW EVENTS
The opposing Rotom used Overheat!
(Granbull lost 30.8% of its health!)
== Turn 6 ==

STATE NOW (turn 6)
YOUR ACTIVE POKÉMON:
- Granbull [ACTIVE], Fairy, L88, HP 227/302 (75%)
  Moves: Encore; Play Rough; Earthquake; Thunder Wave
YOUR BENCH: Palkia-Origin 249/249 (100%); Virizion fainted

OPPONENT (Player 2):
- Rotom-Heat [ACTIVE], Electric/Fire, L83, HP 43%
  Ability: Levitate
  Stat changes: spa -4, atk -1
  Moves seen: Overheat
ALSO SEEN: Calyrex-Shadow fainted; 4 Pokémon not seen yet

YOUR LEGAL ACTIONS
1. move Encore
2. switch Palkia-Origin

Choose one action. Answer with only the ACTION line and the REASON line."""

FIRST_HEADERS = ["BATTLE LOG", "CURRENT STATE (turn ", "YOUR TEAM (Player ", "OPPONENT'S TEAM (Player ",
                 "YOUR LEGAL ACTIONS"]
LATER_HEADERS = ["NEW EVENTS", "STATE NOW (turn ", "YOUR ACTIVE POKÉMON:", "YOUR BENCH: ", "OPPONENT (Player ",
                 "ALSO SEEN: ", "YOUR LEGAL ACTIONS"]


def check_structure(text: str, headers: list[str]) -> list[str]:
    """Assert the method's message structure; returns the listed actions."""
    lines = text.split("\n")
    positions = [next(i for i, line in enumerate(lines) if line.startswith(h)) for h in headers]
    assert positions == sorted(positions) and positions[0] == 0, (headers, positions)
    assert lines[-1] == prompt.CLOSING_LINE and lines[-2] == ""
    start = lines.index("YOUR LEGAL ACTIONS") + 1
    actions = lines[start:-2]
    assert actions, "no legal actions"
    for number, line in enumerate(actions, 1):
        assert re.match(rf"{number}\. (move|switch|revive) ", line), line  # revive: Revival Blessing's choice
    return [line.split(". ", 1)[1] for line in actions]


def test_system_prompt_is_version_3_byte_for_byte():
    text = prompt.system_prompt()
    assert hashlib.sha256(text.encode("utf-8")).hexdigest() == SYSTEM_PROMPT_SHA256
    assert prompt.PROMPT_VERSION == 3
    assert text.startswith("You are a player in a Pokémon battle on Pokémon Showdown.")
    assert [line for line in text.split("\n") if line.isupper()] == ["THE RULES", "YOUR TASK", "ANSWER FORMAT"]
    assert text.endswith("ACTION: <the number of one legal action, or its text exactly as listed>\n"
                         "REASON: <one short sentence that tells why>")


def test_the_methods_samples_pass_the_structure_checks():
    assert check_structure(SAMPLE_FIRST, FIRST_HEADERS)[0] == "move Body Press"
    assert check_structure(SAMPLE_LATER, LATER_HEADERS)[-1] == "switch Palkia-Origin"


# ---- reading answers ------------------------------------------------------------------------------


def actions(*texts: str) -> list[prompt.LegalAction]:
    return [prompt.LegalAction(t, None, "Terastallize" in t) for t in texts]  # type: ignore[arg-type]


LEGAL = actions("move Body Press", "move Rest", "move Body Press + Terastallize (Fighting)", "switch Granbull")


@pytest.mark.parametrize("answer, expected", [
    ("ACTION: 2\nREASON: heal up", (1, "heal up")),
    ("Thinking...\nACTION: 1\nREASON: a\nACTION: 4\nREASON: b", (3, "b")),  # the last lines count
    ("**ACTION:** 3\n**REASON:** tera now", (2, "tera now")),
    ("ACTION: move Body Press + Terastallize (Fighting)\nREASON: x", (2, "x")),
    ("action: MOVE  rest.\nreason: y", (1, "y")),
    ("ACTION: 4. switch Granbull\nREASON: z", (3, "z")),
    ("ACTION: [2]\nREASON: z", (1, "z")),
    ("ACTION: Granbull\nREASON: bare text naming one action", (3, "bare text naming one action")),
    ("ACTION: body press\nREASON: bare", (0, "bare")),
    ("ACTION: \"move Rest\"\nREASON: q", (1, "q")),
])
def test_answers_that_name_a_legal_action(answer, expected):
    parsed = answers.parse_answer(answer)
    index, problem = answers.match_action(parsed.action, LEGAL)
    assert (index, parsed.reason) == expected and problem == ""


@pytest.mark.parametrize("answer, problem", [
    ("I would use Body Press.", "no ACTION line"),
    ("", "no ACTION line"),
    (None, "no ACTION line"),
    ("ACTION: 9\nREASON: x", "numbered 1 to 4"),
    ("ACTION: 0\nREASON: x", "no action 0"),
    ("ACTION: move Hyper Beam\nREASON: x", '"move Hyper Beam" is not one of your legal actions'),
    ("ACTION:\nREASON: x", "empty"),
])
def test_answers_that_name_no_legal_action(answer, problem):
    index, message = answers.match_action(answers.parse_answer(answer).action, LEGAL)
    assert index is None and problem in message


def test_reask_and_refusal_messages():
    assert prompt.reask_message("Your answer has no ACTION line.").startswith("ERROR: Your answer has no ACTION line.")
    text = prompt.refusal_message("[Invalid choice] Can't switch: The active Pokémon is trapped", "switch Granbull", LEGAL)
    assert text.startswith('ERROR: Showdown refused your choice "switch Granbull": [Invalid choice] Can\'t switch')
    assert text.endswith("4. switch Granbull\n\n" + prompt.CLOSING_LINE)


# ---- usage and cost --------------------------------------------------------------------------------


def test_usage_reads_every_field_and_keeps_missing_ones_as_none():
    full = {"prompt_tokens": 1000, "completion_tokens": 200, "prompt_tokens_details": {"cached_tokens": 800},
            "completion_tokens_details": {"reasoning_tokens": 150}}
    assert Usage.from_api(full) == Usage(1000, 800, 200, 150)
    assert Usage.from_api({"prompt_tokens": 10, "completion_tokens": 2}) == Usage(10, None, 2, None)
    assert Usage.from_api({"prompt_tokens": 10, "prompt_tokens_details": None}) == Usage(10, None, None, None)
    assert Usage.from_api(None) == Usage()


def test_cost_prices_cached_input_at_the_cache_price():
    prices = Prices(input=3.0, cached_input=0.3, output=15.0)
    # 200 fresh input at $3, 800 cached at $0.30, 200 output at $15 (reasoning is part of output)
    assert cost_usd(Usage(1000, 800, 200, 150), prices) == pytest.approx((200 * 3 + 800 * 0.3 + 200 * 15) / 1e6)
    assert cost_usd(Usage(1000, None, 200, None), prices) == pytest.approx((1000 * 3 + 200 * 15) / 1e6)
    assert cost_usd(Usage(None, None, 200, None), prices) is None
    assert cost_usd(Usage(1000, 0, None, None), prices) is None
    assert cost_usd(Usage(0, 0, 0, 0), prices) == 0.0


def test_retry_after_header_forms():
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 < retry_after_seconds({"retry-after": later}) <= 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


# ---- model configs ---------------------------------------------------------------------------------


def model_dict(**overrides):
    base = {"name": "test", "model": "m-1", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "POKEBENCH_TEST_KEY",
            "prices": {"input": 1, "cached_input": 0.1, "output": 5}, "timeout": 5, "max_attempts": 3,
            "backoff_base": 0.02, "backoff_max": 0.1}
    return {**base, **overrides}


def test_preflight_names_the_missing_key_variable_and_the_unreachable_endpoint(monkeypatch):
    import socket

    from pokebench.players.llm import LLMPlayer

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        reachable = f"http://127.0.0.1:{listening.getsockname()[1]}/v1"
        monkeypatch.delenv("POKEBENCH_TEST_KEY", raising=False)
        with pytest.raises(MissingAPIKey, match="POKEBENCH_TEST_KEY is not set: the model test reads its API key "
                                                "from it. export POKEBENCH_TEST_KEY=..."):
            LLMPlayer.preflight(model=model_dict(base_url=reachable))
        LLMPlayer.preflight(model=model_dict(base_url=reachable, api_key_required=False))  # a local server needs no key
        monkeypatch.setenv("POKEBENCH_TEST_KEY", "")
        with pytest.raises(MissingAPIKey, match="POKEBENCH_TEST_KEY is empty: "):
            LLMPlayer.preflight(model=model_dict(base_url=reachable))
        monkeypatch.setenv("POKEBENCH_TEST_KEY", "sk-secret")
        LLMPlayer.preflight(model=model_dict(base_url=reachable))
    with pytest.raises(ModelConfigError, match=r"Cannot reach the model test at http://127.0.0.1:9/v1 .*POKEBENCH_BASE_URL"):
        LLMPlayer.preflight(model=model_dict())


def test_bad_model_configs_say_what_is_wrong():
    with pytest.raises(ModelConfigError, match="lacks base_url"):
        ModelConfig.from_dict(model_dict(base_url=None))
    with pytest.raises(ModelConfigError, match="unknown key"):
        ModelConfig.from_dict(model_dict(temprature=0))
    with pytest.raises(ModelConfigError, match="reasoning 'low' is not one of"):
        ModelConfig.from_dict(model_dict(reasoning="low"))
    with pytest.raises(ModelConfigError, match="prices need"):
        ModelConfig.from_dict(model_dict(prices={"input": 1}))


def test_reasoning_level_parameters_merge_with_fixed_ones():
    config = ModelConfig.from_dict(model_dict(
        request={"max_tokens": 9000, "extra_body": {"top_k": 5}}, reasoning="low",
        reasoning_levels={"none": {}, "low": {"extra_body": {"thinking": {"type": "enabled", "budget_tokens": 2048}}}}))
    assert config.request_params() == {"max_tokens": 9000, "extra_body": {
        "top_k": 5, "thinking": {"type": "enabled", "budget_tokens": 2048}}}


def compose_run(*overrides: str):
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        return compose("config", overrides=list(overrides))


@pytest.mark.parametrize("path", sorted((CONF / "model").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_model_config_loads_at_every_reasoning_level(path, monkeypatch):
    monkeypatch.delenv("POKEBENCH_BASE_URL", raising=False)
    raw = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    if raw["model"] == "???":  # the generic OpenRouter preset: the id and prices come from the command line
        raw.update(model="vendor/model", prices="unknown")
    config = ModelConfig.from_dict(raw)
    assert config.prices is None or config.prices.read_on is None or config.prices.read_on
    assert config.max_in_flight and config.max_in_flight >= 1
    for level in config.reasoning_levels:
        ModelConfig.from_dict({**raw, "reasoning": level}).request_params()
    if "anthropic/" in config.model:  # Claude through a route that caches, with a thinking budget below max_tokens
        assert config.cache_breakpoints and config.prices.cache_write_price > config.prices.input > 0
        budget = config.reasoning_levels["high"]["extra_body"]["reasoning"]["max_tokens"]
        assert config.request["max_tokens"] > budget


def test_llm_smoke_run_and_a_low_reasoning_variant_compose(monkeypatch):
    from hydra.utils import instantiate

    monkeypatch.setenv("POKEBENCH_BASE_URL", "http://127.0.0.1:1234/v1")
    cfg = compose_run("+run=llm-smoke")
    assert list(cfg.players) == ["local", "max-damage"] and cfg.pairs == 1
    partial = instantiate(cfg.players.local, _partial_=True, _convert_="all")
    assert type(partial.keywords["model"]) is dict
    assert partial.keywords["model"]["base_url"] == "http://127.0.0.1:1234/v1"
    # fp-sonnet-low style: Sonnet at low reasoning, without a file of its own
    cfg = compose_run("+player@players.sonnet-low=llm", "+model@players.sonnet-low.model=claude-sonnet",
                      "players.sonnet-low.model.reasoning=low")
    model = ModelConfig.from_dict(OmegaConf.to_container(cfg.players["sonnet-low"].model, resolve=True))
    assert model.request_params()["extra_body"]["reasoning"] == {"max_tokens": 2048}


# ---- the API client against the local server (real HTTP) -------------------------------------------


def scripted(*replies):
    """A policy that plays `replies` in order, then answers action 1."""
    queue = list(replies)

    def policy(request: ChatRequest):
        return queue.pop(0) if queue else "ACTION: 1\nREASON: ok"
    return policy


def run_complete(api: LocalOpenAI, **overrides):
    config = ModelConfig.from_dict(model_dict(base_url=api.base_url, **overrides))
    client = ChatClient(config)
    return asyncio.run(client.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]))


@pytest.fixture
def api(monkeypatch):
    monkeypatch.setenv("POKEBENCH_TEST_KEY", "sk-test-SECRET-123")
    with LocalOpenAI() as server:
        yield server


def test_an_answer_with_full_usage(api):
    api.policy = scripted(Reply(text="ACTION: 2\nREASON: r", reasoning_tokens=7))
    answer = run_complete(api)
    assert answer.text == "ACTION: 2\nREASON: r" and answer.attempts == 1 and answer.retries == []
    assert answer.usage.reasoning_tokens == 7 and answer.usage.cached_input_tokens == 0
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 7
    body = api.requests[0].body
    assert body["model"] == "m-1" and body["messages"][1] == {"role": "user", "content": "u"}
    assert api.requests[0].headers["authorization"] == "Bearer sk-test-SECRET-123"  # the key goes only here


def test_missing_usage_is_none_not_zero(api):
    api.policy = scripted(Reply(text="ACTION: 1", usage=None),
                          Reply(text="ACTION: 1", usage={"prompt_tokens": 50, "completion_tokens": 5}))
    assert run_complete(api).usage == Usage()
    assert run_complete(api).usage == Usage(50, None, 5, None)


def test_a_429_waits_for_retry_after_and_a_500_and_a_timeout_are_retried(api):
    api.policy = scripted(Reply(status=429, headers={"Retry-After": "0.4"}), Reply(status=503),
                          Reply(text="late", delay=1.5))
    start = time.monotonic()
    answer = run_complete(api, timeout=0.5, max_attempts=5)
    assert answer.text == "ACTION: 1\nREASON: ok" and answer.attempts == 4
    assert [r["cause"] for r in answer.retries] == ["HTTP 429", "HTTP 503", "timeout"]
    assert answer.retries[0]["wait_s"] == 0.4
    assert api.requests[1].received_at - api.requests[0].received_at >= 0.4
    assert answer.elapsed_s >= 0.4 + 0.5 and answer.latency_s < answer.elapsed_s
    assert time.monotonic() - start < 5


def test_an_api_that_stays_down_raises_without_the_key(api):
    api.policy = lambda request: Reply(status=500, error="boom sk-test-SECRET-123")
    with pytest.raises(LLMAPIError) as info:
        run_complete(api, max_attempts=3)
    assert len(api.requests) == 3 and "failed 3 times" in str(info.value) and "HTTP 500" in str(info.value)
    assert "SECRET" not in str(info.value) and "SECRET" not in repr(info.value)


def test_a_client_error_is_not_retried(api):
    api.policy = lambda request: Reply(status=401, error="bad key")
    with pytest.raises(LLMAPIError, match="refused the key in POKEBENCH_TEST_KEY \\(HTTP 401: bad key"):
        run_complete(api)
    assert len(api.requests) == 1


def test_an_unreachable_server_is_retried_then_raises(monkeypatch):
    monkeypatch.setenv("POKEBENCH_TEST_KEY", "k")
    with LocalOpenAI() as dead:
        url = dead.base_url
    config = ModelConfig.from_dict(model_dict(base_url=url, max_attempts=2))
    with pytest.raises(LLMAPIError, match="connection"):
        asyncio.run(ChatClient(config).complete([{"role": "user", "content": "u"}]))


def test_the_local_server_simulates_a_prefix_cache_and_reads_legal_actions(api):
    api.policy = scripted("ACTION: 1", "ACTION: 1")
    first = run_complete(api)
    config = ModelConfig.from_dict(model_dict(base_url=api.base_url))
    later = asyncio.run(ChatClient(config).complete([
        {"role": "system", "content": "s"}, {"role": "user", "content": "u"},
        {"role": "assistant", "content": "ACTION: 1"}, {"role": "user", "content": SAMPLE_LATER}]))
    assert later.usage.cached_input_tokens == first.usage.input_tokens
    request = ChatRequest(0, {"messages": [{"role": "user", "content": SAMPLE_FIRST}]}, {}, 0.0)
    assert legal_actions_in(request)[-1] == "switch Granbull"
    assert hashed_policy(request).startswith("ACTION: ")


def test_the_local_model_server_takes_a_client_hanging_up_mid_request_quietly(capsys):
    """A request the harness cancels (a game voided) resets its connection: no traceback on the test's output."""
    with LocalOpenAI() as api:
        host, port = api._server.server_address[:2]
        client = socket.create_connection((host, port))
        client.sendall(b"POST /v1/chat/compl")  # half a request line, then a reset (SO_LINGER 0)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        time.sleep(0.3)
        assert "Traceback" not in capsys.readouterr().err


def test_the_local_model_server_answers_no_request_whose_body_was_cut_short():
    """A run killed while sending a request leaves its headers and part of its body: not a request (its policy
    would be given no messages)."""
    with LocalOpenAI() as api:
        host, port = api._server.server_address[:2]
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "u"}]}).encode()
        client = socket.create_connection((host, port))
        client.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       + f"Content-Length: {len(body)}\r\n\r\n".encode() + body[:10])
        client.shutdown(socket.SHUT_WR)
        assert client.recv(1024) == b""  # closed without an answer
        client.close()
        assert api.requests == []
