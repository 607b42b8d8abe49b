"""The LLM player in whole games on the real pinned Showdown server, answered over real HTTP (the `openai`
client) by the local OpenAI-compatible server: the conversation, re-asks and random picks, refusals,
retries, and an API that stays down (a harness error, played again when the run is resumed)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from typing import Any

import pytest

from support.existing_server import on_server
from support.llm import reset_api, fake_server_model
from support.games import REPO_DIR, play, results
from pokebench.players.llm import LLMPlayer
from pokebench.players.max_damage import MaxDamageBot
from pokebench.text import prompt
from pokebench.play.arena import HarnessError
from pokebench.llm.client import Prices, Usage, cost_usd
from pokebench.llm.fake_server import ChatRequest, LocalOpenAI, Reply, hashed_policy
from pokebench.play.schedule import build_schedule
from pokebench.results.store import RunStore
from test_llm_units import FIRST_HEADERS, LATER_HEADERS, check_structure

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

SECRET = "fake-api-key-NEVER-STORED-42"
PRICES = {"input": 3.0, "cached_input": 0.3, "output": 15.0}


@pytest.fixture(scope="module")
def api():
    with LocalOpenAI(policy=hashed_policy) as server:
        yield server


@pytest.fixture(autouse=True)
def fresh_api(api, monkeypatch):
    yield reset_api(api, monkeypatch, SECRET)


def model(api: LocalOpenAI, **overrides: Any) -> dict[str, Any]:
    return fake_server_model(api, PRICES, **overrides)


def play_llm_game(showdown, api, seed: str, player_class: type[LLMPlayer] = LLMPlayer, side: str = "p1",
                  **model_overrides: Any):
    """One game of the LLM player against Max-damage; (outcome, the LLM player)."""
    made: list[LLMPlayer] = []

    def factory(**kwargs: Any) -> LLMPlayer:
        made.append(player_class(model=model(api, **model_overrides), name="llm", **kwargs))
        return made[-1]

    spec = next(s for s in build_schedule("llm-test", seed, 1, [("llm", "max-damage")]) if (s.p1 == "llm") == (side == "p1"))
    outcome = play(showdown, [spec], {"llm": factory, "max-damage": MaxDamageBot})[0]
    return outcome, made[-1]


def user_messages(request: ChatRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "user"]


def listed_actions(message: str) -> list[str]:
    return re.findall(r"^\d+\. (.+)$", message.split("YOUR LEGAL ACTIONS")[-1], re.MULTILINE)


# ---- a whole game -------------------------------------------------------------------------------


def test_a_whole_game_is_one_growing_conversation_in_the_methods_format(showdown, api):
    outcome, player = play_llm_game(showdown, api, "conversation", side="p2")
    [result] = results([outcome])
    requests = api.requests
    log = player.decision_log
    assert len(requests) == len(log) >= 3

    # the system prompt, byte for byte, in every request; the conversation only grows by appending
    for before, after in zip(requests, requests[1:]):
        assert after.messages[0] == {"role": "system", "content": prompt.system_prompt()}
        assert after.messages[:len(before.messages)] == before.messages
        assert after.messages[len(before.messages)]["role"] == "assistant"
        assert len(after.messages) == len(before.messages) + 2
    assert player.messages == requests[-1].messages + [player.messages[-1]]

    messages = user_messages(requests[-1])
    check_structure(messages[0], FIRST_HEADERS)
    assert messages[0].startswith("BATTLE LOG\nBattle started between Player 1 and Player 2!\n")
    assert "YOUR TEAM (Player 2):" in messages[0] and "OPPONENT'S TEAM (Player 1), as far" in messages[0]
    assert messages[0].count("\n- ") >= 6 + 1  # six own Pokémon and the opponent's active one
    for message in messages[1:]:
        check_structure(message, LATER_HEADERS)
        assert "BATTLE LOG" not in message and "YOUR TEAM" not in message and "Battle started" not in message
    # every turn marker is sent once: later messages carry only the new events
    markers = re.findall(r"^== Turn (\d+) ==$", "\n".join(messages), re.MULTILINE)
    assert markers == [str(t) for t in range(1, len(markers) + 1)]
    for i, message in enumerate(messages):
        assert f"(turn {log[i].turn})" in message

    # one log entry per answer, with the action as listed in the message it answered
    for i, entry in enumerate(log):
        assert entry.side == "p2" and entry.player == "llm" and entry.model == "local-test-model"
        assert entry.action in listed_actions(messages[i]) and entry.reason
        assert not (entry.reask or entry.refusal or entry.random_pick or entry.invalid)
        usage = Usage(entry.input_tokens, entry.cached_input_tokens, entry.output_tokens, entry.reasoning_tokens)
        assert entry.cost_usd == pytest.approx(cost_usd(usage, Prices(**PRICES)))
        assert entry.latency_s > 0 and entry.extra["attempts"] == 1
    assert all(e.cached_input_tokens > 0 for e in log[1:])  # the unchanged prefix is cached

    summary = result.players["p2"]
    assert summary["answers"] == len(log) and summary["decisions"] >= len(log)
    assert summary["cost_usd"] == pytest.approx(sum(e.cost_usd for e in log))
    assert summary["input_tokens"] == sum(e.input_tokens for e in log)
    assert (summary["reasks"], summary["random_picks"], summary["refusals"]) == (0, 0, 0)
    assert result.decisions == log


# ---- answers that name no legal action ------------------------------------------------------------


def test_answers_naming_no_legal_action_are_asked_again_then_picked_at_random(showdown, api):
    bad = {0: "I would attack.", 1: "ACTION: 99\nREASON: x", 2: "ACTION: move Splash\nREASON: x",
           3: "ACTION: nothing\nREASON: y"}
    api.policy = lambda request: bad.get(request.index) or hashed_policy(request)
    outcome, player = play_llm_game(showdown, api, "reasks")
    results([outcome])
    log, requests = player.decision_log, api.requests

    first = log[:3]
    assert [e.decision for e in first] == [1, 1, 1] and [e.reask for e in first] == [False, True, True]
    assert [e.invalid for e in first] == ["Your answer has no ACTION line.",
                                             "There is no action 99: the legal actions are numbered 1 to "
                                             f"{len(listed_actions(user_messages(requests[0])[0]))}.",
                                             '"move Splash" is not one of your legal actions.']
    assert [e.random_pick for e in first] == [False, False, True]
    assert first[0].action is None and first[1].action is None
    assert first[2].action in listed_actions(user_messages(requests[0])[0])
    # the error goes to the model as a new message; nothing earlier changes
    assert requests[1].messages[:-2] == requests[0].messages
    assert requests[1].messages[-2] == {"role": "assistant", "content": "I would attack."}
    assert requests[1].messages[-1]["content"].startswith("ERROR: Your answer has no ACTION line. Answer again")
    assert requests[2].messages[-1]["content"].startswith("ERROR: There is no action 99")
    # the second decision: one wrong answer, then a legal one from the model itself
    assert log[3].decision == 2 and log[3].invalid and not log[3].random_pick
    assert log[4].decision == 2 and log[4].reask and log[4].action and not log[4].invalid
    summary = player.game_summary()
    assert (summary["invalid_answers"], summary["reasks"], summary["random_picks"]) == (4, 3, 1)


# ---- a choice the simulator refuses ---------------------------------------------------------------


class _InvalidOrder:
    message = "/choose move 9"


class RefusedOnce(LLMPlayer):
    """Sends an invalid choice for its first decision, as if the model's choice were refused."""

    sabotaged = False

    def create_order(self, order, **kwargs):  # type: ignore[override]
        if not self.sabotaged:
            self.sabotaged = True
            return _InvalidOrder()
        return super().create_order(order, **kwargs)


def test_a_refused_choice_sends_showdowns_error_to_the_model(showdown, api):
    outcome, player = play_llm_game(showdown, api, "refusal", player_class=RefusedOnce)
    [result] = results([outcome])
    log, requests = player.decision_log, api.requests
    refused = requests[1].messages[-1]["content"]
    assert refused.startswith(f'ERROR: Showdown refused your choice "{log[0].action}": [Invalid choice] ')
    assert refused.endswith(prompt.CLOSING_LINE) and "YOUR LEGAL ACTIONS\n1. " in refused
    assert player.choice_errors[0] in refused
    assert log[0].refusal and log[0].refusal_error == player.choice_errors[0]
    assert log[1].decision == 1 and log[1].reask and not log[1].refusal
    assert result.players["p1"]["refusals"] == 1 and result.players["p1"]["refused_answers"] == 1


class AlwaysRefused(LLMPlayer):
    def create_order(self, order, **kwargs):  # type: ignore[override]
        return _InvalidOrder()


def test_endless_refusals_are_a_harness_error_not_a_loop(showdown, api):
    outcome, player = play_llm_game(showdown, api, "refusal-loop", player_class=AlwaysRefused)
    assert isinstance(outcome, HarnessError) and "Showdown refused 5 choices of one decision" in outcome.detail
    assert len(api.requests) == 5 and player.refusals >= 5  # a 6th may refuse the default sent while voiding


# ---- retries, and an API that stays down ----------------------------------------------------------


def test_a_429_and_a_timeout_in_a_game_are_retried(showdown, api):
    script = {0: Reply(status=429, headers={"Retry-After": "0.3"}), 1: Reply(text="ACTION: 1", delay=1.5)}
    api.policy = lambda request: script.get(request.index) or hashed_policy(request)
    outcome, player = play_llm_game(showdown, api, "retries", timeout=0.7)
    results([outcome])
    first = player.decision_log[0]
    assert first.extra["attempts"] == 3 and [r["cause"] for r in first.extra["retries"]] == ["HTTP 429", "timeout"]
    assert first.extra["retries"][0]["wait_s"] == 0.3 and first.extra["elapsed_s"] >= 0.3 + 0.7
    assert api.requests[1].received_at - api.requests[0].received_at >= 0.3
    assert player.game_summary()["api_retries"] == 2


def test_an_api_that_stays_down_is_a_harness_error_without_the_key(showdown, api):
    api.policy = lambda request: Reply(status=500, error="down")
    outcome, player = play_llm_game(showdown, api, "down", max_attempts=2)
    assert isinstance(outcome, HarnessError)
    assert "LLMAPIError" in outcome.detail and "failed 2 times" in outcome.detail
    assert SECRET not in outcome.detail and len(api.requests) == 2


def test_a_run_resumed_after_the_api_was_down_plays_the_game_again(showdown, tmp_path, api):
    """`python -m pokebench +run=llm-smoke` end to end, on the worker's server: harness errors first (the
    harness voids the games), then stored games and decisions."""
    overrides, server_env = on_server(showdown)
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), POKEBENCH_BASE_URL=api.base_url, POKEBENCH_API_KEY=SECRET,
               **server_env)
    args = [sys.executable, "-m", "pokebench", "+run=llm-smoke", "publish=false", *overrides,
            "players.local.model.max_attempts=2", "players.local.model.backoff_base=0.02", "retry_rounds=0"]
    # the pre-flight request is answered, then the API goes down
    api.policy = lambda request: "OK" if request.index == 0 else Reply(status=503, error="overloaded")
    subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    db = tmp_path / "runs" / "llm-smoke" / "store.sqlite"
    with RunStore.open_existing(db) as store:
        assert store.done_game_ids() == set() and len(store.harness_errors()) == 2

    api.policy = hashed_policy
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with RunStore.open_existing(db) as store:
        games = store.games()
        decisions = store.decisions()
        players = store.game_players()
    assert len(games) == 2 and set(decisions.game_id) == set(games.game_id)
    assert set(decisions.player) == {"local"} and decisions.action.notna().all()
    assert decisions.cost_usd.eq(0).all() and decisions.input_tokens.gt(0).all()
    for game_id, sides in players.items():
        local = next(side for side in sides.values() if side["player"] == "local")
        assert local["answers"] == (decisions.game_id == game_id).sum() > 0
    with sqlite3.connect(db) as raw:
        dump = "\n".join(raw.iterdump())
    assert SECRET not in dump


# ---- the prompt sample ----------------------------------------------------------------------------


def test_prompt_sample_prints_the_first_message_and_the_one_at_turn_6(capsys):
    from pokebench.cli import prompt_sample

    assert prompt_sample.main(["6", "--first"]) == 0
    out, said = capsys.readouterr()
    assert "Starting a local Showdown server" in said and re.search(r"The game ended at turn \d+ after \d+ s\.", said)
    first, later = out.split("\n\nThe message at turn 6 (")
    assert re.match(r"The first message \([\d,]+ characters, about [\d,]+ tokens\)\n\n", first)
    check_structure(first.split("\n\n", 1)[1], FIRST_HEADERS)
    body = later.split("\n\n", 1)[1].rstrip("\n")
    check_structure(body, LATER_HEADERS)
    assert "\nSTATE NOW (turn 6)\n" in body


def test_prompt_sample_refuses_a_turn_before_the_first_without_playing(capsys):
    from pokebench.cli import prompt_sample

    with pytest.raises(SystemExit) as refused:
        prompt_sample.main(["0"])
    said = capsys.readouterr().err
    assert refused.value.code == 2 and "turn must be 1 or more" in said and "Playing" not in said


# ---- what is read is never redacted; what is written is --------------------------------------------


def _by_name(request: ChatRequest) -> str:
    """The first legal action by its text (a move's name is full of letters a short key could match)."""
    return f"ACTION: {listed_actions(request.last_user_message)[0]}\nREASON: by name."


def test_a_one_letter_key_maims_nothing_the_model_wrote(showdown, api, monkeypatch):
    monkeypatch.setenv("POKEBENCH_TEST_KEY", "e")
    api.policy = _by_name
    outcome, player = play_llm_game(showdown, api, "short-key")
    results([outcome])
    answers = [d for d in player.decision_log if d.extra.get("error") is None]
    assert answers and not any(d.invalid for d in answers), "an answer naming an action by its text was refused"
    assert all("e" in d.raw and "***" not in d.raw for d in answers)


def test_a_long_key_is_blanked_from_the_records_but_the_model_is_read_as_it_wrote(showdown, api):
    api.policy = lambda request: f"ACTION: 1\nREASON: my key is {SECRET}"
    outcome, player = play_llm_game(showdown, api, "long-key")
    results([outcome])
    assert all(SECRET not in d.raw and "***" in d.reason for d in player.decision_log)
    assert any(SECRET in m["content"] for m in player.messages if m["role"] == "assistant")  # the conversation as it was


def test_a_giant_answer_is_cut_to_its_tail_before_the_conversation_and_the_record(showdown, api):
    api.policy = lambda request: "x" * 50_000 + "\nACTION: 1\nREASON: long"
    outcome, player = play_llm_game(showdown, api, "giant", max_answer_chars=1000)
    results([outcome])
    first = player.decision_log[0]
    assert first.extra["answer_chars"] == 50_000 + len("\nACTION: 1\nREASON: long") and len(first.raw) == 1000
    assert first.action and not first.invalid  # the ACTION line is in the kept tail
    assert max(len(m["content"]) for m in player.messages if m["role"] == "assistant") == 1000
