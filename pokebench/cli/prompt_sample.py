"""Print what a model sees at a given turn: ``python -m pokebench.cli.prompt_sample 6 [--first]``.

Plays one seeded game on a local Showdown server that it starts itself: the LLM
player, answered by a local OpenAI-compatible server with a deterministic policy
(no model, no network, no key), against the Max-damage bot. Then it prints the
message of the LLM player's decision at the turn asked for (and, with ``--first``,
the first message of the game), with its length in characters and estimated tokens.
The same arguments always give the same game and the same text.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from pokebench.player.decisions import DecisionRecord
from pokebench.llm.fake_server import LocalOpenAI, first_action_policy, hashed_policy

POLICIES = {"hashed": hashed_policy, "first": first_action_policy}


def local_model(base_url: str) -> dict[str, Any]:
    """A model config for the local server (what ``conf/model/local.yaml`` gives, with this URL)."""
    return {"name": "local", "model": "local-test-model", "base_url": base_url, "api_key_env": "POKEBENCH_API_KEY",
            "api_key_required": False, "prices": {"input": 0, "cached_input": 0, "output": 0},
            "timeout": 60, "max_attempts": 2, "backoff_base": 0.1}


def play_sample_game(seed_text: str, side: str, policy: str) -> tuple[list[dict[str, str]], list[DecisionRecord], dict[str, Any]]:
    """Play the sample game; (the LLM player's conversation, its decision log, the game's record)."""
    from pokebench.players.llm import LLMPlayer
    from pokebench.players.max_damage import MaxDamageBot
    from pokebench.play.arena import Arena, GameResult
    from pokebench.play.schedule import build_schedule
    from pokebench.showdown.server import LocalShowdown

    specs = [s for s in build_schedule("prompt-sample", seed_text, 1, [("llm", "max-damage")])
             if (s.p1 == "llm") == (side == "p1")]
    players: list[LLMPlayer] = []
    started = time.monotonic()
    _say("Starting a local Showdown server and a local stand-in model (no network, no key)...")
    with LocalShowdown() as server, LocalOpenAI(policy=POLICIES[policy]) as api:
        _say(f"Playing one seeded game, the LLM player as {side} against Max-damage (most games take 20-60 s)...")
        def make_llm(**kwargs: Any) -> LLMPlayer:
            player = LLMPlayer(model=local_model(api.base_url), name="llm", **kwargs)
            players.append(player)
            return player

        async def play() -> Any:
            arena = Arena(server, {"llm": make_llm, "max-damage": MaxDamageBot}, "gen9randombattle", 300, 1)
            return [outcome async for outcome in arena.play(specs)][0]

        outcome = asyncio.run(play())
    _say(f"The game ended at turn {outcome.record.get('turns') if isinstance(outcome, GameResult) else '?'} "
         f"after {time.monotonic() - started:.0f} s.")
    if not isinstance(outcome, GameResult):
        raise RuntimeError(f"the sample game failed: {outcome.description}")
    return players[-1].messages, players[-1].decision_log, outcome.record


def _say(text: str) -> None:
    """What the command is doing, on stderr (stdout holds only the text asked for)."""
    print(text, file=sys.stderr, flush=True)


def message_at_turn(messages: list[dict[str, str]], decisions: list[DecisionRecord], turn: int) -> str | None:
    """The user message the model answered first at `turn` (user message i is answered by decision i)."""
    asked = [m["content"] for m in messages if m["role"] == "user"]
    for content, decision in zip(asked, decisions):
        if decision.turn == turn:
            return content
    return None


def _describe(title: str, text: str) -> str:
    return f"{title} ({len(text):,} characters, about {max(1, round(len(text) / 4)):,} tokens)\n\n{text}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pokebench.cli.prompt_sample", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("turn", type=int, help="the turn whose message to print (e.g. 6)")
    parser.add_argument("--first", action="store_true", help="also print the first message of the game")
    parser.add_argument("--system", action="store_true", help="also print the system prompt")
    parser.add_argument("--seed-text", default="pokebench-prompt-sample", help="the seed text of the game")
    parser.add_argument("--side", choices=("p1", "p2"), default="p1", help="the side the LLM player plays")
    parser.add_argument("--policy", choices=sorted(POLICIES), default="hashed",
                        help="how the local server answers: 'hashed' (a move picked by a hash of the message) "
                             "or 'first' (always action 1)")
    args = parser.parse_args(argv)
    if args.turn < 1:  # before the game is played, not after
        parser.error(f"turn must be 1 or more (a game's first turn is 1), not {args.turn}")
    messages, decisions, record = play_sample_game(args.seed_text, args.side, args.policy)
    parts = []
    if args.system:
        parts.append(_describe("The system prompt", messages[0]["content"]))
    if args.first:
        parts.append(_describe("The first message", next(m["content"] for m in messages if m["role"] == "user")))
    text = message_at_turn(messages, decisions, args.turn)
    if text is None:
        print(f"The game ended at turn {record.get('turns')} before the LLM player decided at turn {args.turn}; "
              "try another --seed-text or --side.", file=sys.stderr)
        return 2
    parts.append(_describe(f"The message at turn {args.turn}", text))
    print("\n\n".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
