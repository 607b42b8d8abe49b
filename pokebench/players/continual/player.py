"""The Continual Harness competitor: an LLM player that rewrites its own notes, skills and strategy during a run.

After Shi et al. 2026, "Continual Harness: Online Adaptation for Self-Improving Foundation
Agents": the agent alternates between acting and refining its own harness from its past
trajectories, without resets. Here one run is the agent's one continuous life:

- It plays each game exactly like :class:`pokebench.players.llm.LLMPlayer` (the v3 system prompt byte
  for byte, the same messages, re-asks and accounting), so its results stay comparable,
  except that the first user message of a game starts with ``YOUR HARNESS (version N,
  refined from M earlier games of this run)`` and the sections NOTES, SKILLS and STRATEGY.
  The harness goes into the first user message, not the system prompt: the system prompt,
  and with it the providers' prompt cache, stays the same for every game and player.
- When a game ends normally, its trajectory (outcome, the model's own answers with their
  reasons and failures, the battle log as the model read it) is queued in the run folder.
- At the start of its next game, before its first message, the player claims the queued
  trajectories (once at least ``refine_every`` are queued) and asks the same model, as
  the *refiner*, for CRUD edits to the harness as strict JSON. Valid edits are applied
  (:mod:`pokebench.players.continual.state`: caps, atomic writes, a file lock), invalid ones are
  rejected and recorded. A refiner failure (API error, no JSON) never fails the game: it
  is recorded (``refine_error``) and the harness stays as it was.

Why refine at the start of the next game and not at the end of the finished one: the
arena stores a game's summary and decisions as soon as the battle has ended, before the
seats are closed, so a refinement after the battle would be spent but never recorded with
a game. Started from the next game's first decision, the refiner call is one entry of that
game's ``decision_log`` (``kind: "refine"``), its cost enters the stored cost per game, and
it shows separately as ``refiner_cost_usd`` in the game's summary. The trajectories live in
the run folder, so a run that is stopped and resumed refines from them on its next game.
The last game of a run is never refined from, which costs nothing and changes no result.

Ordering: with ``concurrency: 1`` each game refines from the one before and sees its edits.
With more games in flight a game starts from whatever version is current (each game records
``harness_version``). A game that is played again after a harness error sees the harness of
the moment it is replayed, a later one than it would have seen at first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from pathlib import Path
from typing import Any

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder

from pokebench.players.llm import LLMPlayer
from pokebench.text import prompt
from pokebench.players.continual.state import Caps, HarnessStore, render
from pokebench.util import utc_now
from pokebench.llm.client import ChatClient, Completion, cost_usd

log = logging.getLogger(__name__)

#: In every refiner request's system prompt (the scripted test server tells refiner requests by it).
REFINER_MARKER = "HARNESS REFINER"
_TOKEN_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")
_VOIDED = "PokéBench voided this game"

REFINER_SYSTEM_PROMPT = """\
You are the HARNESS REFINER of an AI player of Pokémon Showdown, format [Gen 9] Random Battle, singles. \
You are the same model as the player. The player plays many games in one run. At the start of each game it \
reads its harness: NOTES (facts it has learned), SKILLS (named procedures it can apply, for example "check the \
type matchup before attacking") and STRATEGY (a short playbook). After games of the run you read what happened \
and improve the harness, so that the player wins more of its next games.

Look for failure signatures: a Pokémon lost for nothing, wasted turns, wrong beliefs about types, moves, \
abilities or items, answers that named no legal action, choices that Showdown refused, what the opponent tends \
to do. Keep what worked. Write what helps in other games: the teams are random in every game. Merge and delete \
notes that are wrong, repeated or of little use.

ANSWER FORMAT
Answer with only one JSON object, and no other text:
{{"edits": [<edit>, ...]}}
Each edit is one of:
{{"op": "add_note", "text": "..."}}
{{"op": "update_note", "index": <the number of the note as listed>, "text": "..."}}
{{"op": "delete_note", "index": <the number of the note as listed>}}
{{"op": "add_skill", "name": "...", "text": "..."}}
{{"op": "update_skill", "name": "...", "text": "..."}}
{{"op": "delete_skill", "name": "..."}}
{{"op": "set_strategy", "text": "..."}}
Limits: at most {max_notes} notes of at most {max_note_chars} characters each; at most {max_skills} skills, \
each with a name of at most {max_skill_name_chars} characters and a text of at most {max_skill_chars}; a \
strategy of at most {max_strategy_chars} characters; at most {max_edits} edits. An edit that breaks a limit \
or names a note or skill that does not exist is rejected. {{"edits": []}} is a good answer when nothing \
should change."""


class _Conversation(list):  # type: ignore[type-arg]
    """LLMPlayer's conversation, which puts the harness block in front of the first user message.

    LLMPlayer builds and appends the first message itself; prefixing it on append leaves
    LLMPlayer's own code path (and so every later message) exactly as it is.
    """

    prefix: str | None = None

    def append(self, message: dict[str, str]) -> None:  # type: ignore[override]
        if self.prefix is not None and message.get("role") == "user":
            message = {**message, "content": self.prefix + message["content"]}
            self.prefix = None
        super().append(message)


def harness_block(state: dict[str, Any]) -> str:
    """What the player reads in front of the first message of a game."""
    return (f"YOUR HARNESS (version {state['version']}, refined from {state['games_seen']} earlier games of this run)\n"
            "Your own notes, skills and strategy: you wrote them after earlier games of this run, from what "
            "happened in them. Use them where they help.\n\n" + render(state) + "\n\n")


def parse_edits(text: str | None) -> list[Any]:
    """The ``edits`` list of a refiner's answer (a JSON object, perhaps in a code fence); ValueError if none."""
    if not text or not text.strip():
        raise ValueError("the refiner gave an empty answer")
    candidates = [m.group(1) for m in re.finditer(r"```(?:json)?\s*(.*?)```", text, re.S)] + [text.strip()]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start:end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("edits"), list):
            return data["edits"]
    raise ValueError(f"the refiner's answer is not a JSON object with an 'edits' list: {text[:200]!r}")


def _clip(text: str, limit: int) -> str:
    """`text` within `limit` characters: its first third and its last two thirds, the cut marked."""
    if len(text) <= limit:
        return text
    head = limit // 3
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-tail:]}"


def _answer_line(answer: dict[str, Any]) -> str:
    reason = f" (reason: {answer['reason'][:200]})" if answer.get("reason") else ""
    if answer.get("random_pick"):
        return f"turn {answer['turn']}: no legal action named ({answer['invalid']}); the harness picked " \
               f"{answer['action']} at random"
    if answer.get("invalid"):
        return f"turn {answer['turn']}: your answer named no legal action: {answer['invalid']}"
    line = f"turn {answer['turn']}: {answer['action']}{reason}"
    if answer.get("refusal_error"):
        line += f"; Showdown refused it: {answer['refusal_error']}"
    return line


def refiner_message(state: dict[str, Any], trajectories: list[dict[str, Any]], log_chars: int) -> str:
    """The refiner's user message: each game (result, own answers, battle log), then the harness now."""
    parts = [f"You refine your harness after {len(trajectories)} finished game(s) of this run."]
    for n, game in enumerate(trajectories, 1):
        result = {"won": "you won", "lost": "you lost", "tie": "it ended in a tie"}[game["outcome"]]
        answers = "\n".join(_answer_line(a) for a in game["answers"]) or "(none)"
        parts += [f"GAME {n} OF {len(trajectories)}: you were {prompt.side_label(game['side'])}; {result} after "
                  f"{game['turns']} turns; you started it with harness version {game['harness_version']}.",
                  "YOUR ANSWERS\n" + _clip(answers, log_chars // 2),
                  "BATTLE LOG\n" + _clip(game["battle_log"], log_chars)]
    parts += [f"YOUR HARNESS NOW (version {state['version']}, refined from {state['games_seen']} earlier games)\n"
              + render(state),
              "Answer with only the JSON object of your edits."]
    return "\n\n".join(parts)


class ContinualHarnessPlayer(LLMPlayer):
    """An LLM player with a self-refined harness; see the module docstring."""

    def __init__(self, model: dict[str, Any], name: str | None = None, refine_every: int = 1,
                 runs_dir: str = "runs", max_notes: int = 40, max_skills: int = 12,
                 max_strategy_chars: int = 1500, refiner_log_chars: int = 30000, **poke_env_kwargs: Any) -> None:
        if int(refine_every) < 1:
            raise ValueError(f"refine_every must be at least 1, not {refine_every!r}")
        self.refine_every = int(refine_every)
        self.runs_dir = Path(runs_dir)
        self.caps = Caps(max_notes=int(max_notes), max_skills=int(max_skills),
                         max_strategy_chars=int(max_strategy_chars))
        self.refiner_log_chars = int(refiner_log_chars)
        super().__init__(model, name=name, **poke_env_kwargs)

    @classmethod
    def preflight(cls, model: dict[str, Any], name: str | None = None, refine_every: int = 1,
                  **_other: Any) -> None:
        super().preflight(model, name)
        if isinstance(refine_every, bool) or not isinstance(refine_every, int) or refine_every < 1:
            raise ValueError(f"refine_every must be a whole number of at least 1, not {refine_every!r}")

    # ---- per-game state ---------------------------------------------------------------------
    def _reset_conversation(self) -> None:
        super()._reset_conversation()
        self.messages = _Conversation(self.messages)
        self.harness_version: int | None = None
        self.harness_games_seen: int | None = None
        self._harness_ready = False
        self._game_text: list[str] = []
        self.trajectory_error: str | None = None

    def harness_store(self) -> HarnessStore:
        """This player's harness in this run: ``<runs_dir>/<run>/continual/<player>.json``."""
        extra = self.game.extra if self.game is not None else {}
        run = str(extra.get("run") or "unnamed-run")
        return HarnessStore(self.runs_dir / run / "continual", self.player_name, self.caps)

    def _new_events(self, battle: AbstractBattle) -> list[str]:
        events = super()._new_events(battle)
        self._game_text.extend(events)
        return events

    # ---- deciding: the harness comes first ----------------------------------------------------
    async def _decide(self, battle: AbstractBattle) -> BattleOrder:
        if not self._harness_ready:
            self._harness_ready = True
            if self._client is None:
                self._client = ChatClient(self.model_config)
            store = self.harness_store()
            seen, trajectories = await asyncio.to_thread(store.claim, self.refine_every)
            state = await self._refine(battle, store, seen, trajectories) if trajectories else seen
            self.harness_version, self.harness_games_seen = state["version"], state["games_seen"]
            assert isinstance(self.messages, _Conversation) and len(self.messages) == 1
            self.messages.prefix = harness_block(state)
        return await super()._decide(battle)

    def _entry(self, battle: AbstractBattle, completion: Completion, parsed: prompt.ParsedAnswer,
               reask: bool) -> dict[str, Any]:
        """LLMPlayer's entry of an answer, with the harness version the game started with."""
        return {**super()._entry(battle, completion, parsed, reask), "harness_version": self.harness_version}

    async def _refine(self, battle: AbstractBattle, store: HarnessStore, seen: dict[str, Any],
                      trajectories: list[dict[str, Any]]) -> dict[str, Any]:
        """One refiner call on the claimed trajectories; the state to play with. Never raises for the model."""
        assert self._client is not None
        games = [t["game_id"] for t in trajectories]
        request = [{"role": "system", "content": REFINER_SYSTEM_PROMPT.format(**vars(self.caps))},
                   {"role": "user", "content": refiner_message(seen, trajectories, self.refiner_log_chars)}]
        completion: Completion | None = None
        error: str | None = None
        edits: list[Any] = []
        try:
            completion = await self._client.complete(request)
            edits = parse_edits(completion.text)
        except Exception as err:  # an API that stays down or an answer without JSON: the game goes on
            error = f"{type(err).__name__}: {self._client.redact(str(err))}"[:1000]
        entry = self._refine_entry(battle, completion, games, seen)
        record = {"by_game": self.game.game_id, "cost_usd": entry["cost_usd"],
                  **{key: entry[key] for key in _TOKEN_KEYS}}
        if error is not None:
            log.warning("%s: the harness refiner failed (%s); the harness stays at version %s",
                        self.player_name, error, seen["version"])
            state = await asyncio.to_thread(store.record_failure, seen, games, error, record)
            entry.update(refine_error=error, refine_applied=0, refine_rejected=[])
        else:
            state, result = await asyncio.to_thread(store.apply, edits, seen, games, record)
            entry.update(refine_error=None, refine_applied=len(result.applied), refine_rejected=result.rejected)
        entry["harness_version_after"] = state["version"]
        self.decision_log.append(entry)
        return state

    def _refine_entry(self, battle: AbstractBattle, completion: Completion | None, games: list[str],
                      seen: dict[str, Any]) -> dict[str, Any]:
        """A decision-log entry of kind "refine": its tokens and cost count in the game's cost, not as a decision."""
        usage = completion.usage if completion is not None else None
        text = completion.text if completion is not None else None
        return {
            "kind": "refine", "side": battle.player_role or self.game.side, "player": self.player_name,
            "model": self.model_config.model, "reasoning": self.model_config.reasoning, "turn": battle.turn,
            "decision": 0, **{key: getattr(usage, key, None) for key in _TOKEN_KEYS},
            "cost_usd": cost_usd(usage, self.model_config.prices) if usage is not None else None,
            "latency_s": round(completion.latency_s, 4) if completion else None,
            "elapsed_s": round(completion.elapsed_s, 4) if completion else None,
            "attempts": completion.attempts if completion else None,
            "retries": completion.retries if completion else [],
            "finish_reason": completion.finish_reason if completion else None,
            "raw": self._client.redact(text) if (self._client and text) else text,
            "action": None, "reason": None, "reask": False, "invalid": None, "refusal": False,
            "random_pick": False, "refined_games": games, "harness_version_before": seen["version"],
        }

    # ---- the end of a game: queue its trajectory ------------------------------------------------
    def _battle_finished_callback(self, battle: AbstractBattle) -> None:
        super()._battle_finished_callback(battle)
        if self.game is None or self.failure is not None:
            return
        if any(_VOIDED in line for line in self._raw_lines[-30:]):
            return  # a harness error: the game is played again and never becomes a result
        try:
            self.harness_store().add_trajectory(self.game.game_id, self.trajectory(battle))
        except Exception as err:  # losing one trajectory must not void a finished game
            self.trajectory_error = repr(err)
            log.warning("%s: could not queue the trajectory of %s: %r", self.player_name, self.game.game_id, err)

    def trajectory(self, battle: AbstractBattle) -> dict[str, Any]:
        """What the refiner reads of a finished game."""
        self._new_events(battle)  # the last events, up to the end of the battle
        outcome = "won" if battle.won else "lost" if battle.lost else "tie"
        answers = [{key: d.get(key) for key in ("turn", "decision", "action", "reason", "invalid", "random_pick",
                                                 "refusal_error")}
                   for d in self.decision_log if d.get("kind") != "refine"]
        return {"game_id": self.game.game_id, "player": self.player_name, "side": self.game.side,
                "run": (self.game.extra or {}).get("run"), "harness_version": self.harness_version,
                "outcome": outcome, "turns": battle.turn, "finished_at": utc_now(), "answers": answers,
                "battle_log": "\n".join(self._game_text)}

    # ---- the game's totals --------------------------------------------------------------------
    def game_summary(self) -> dict[str, Any]:
        """LLMPlayer's figures over the decisions only, plus the harness version and the refiner's own spend."""
        full = self.decision_log
        refines = [d for d in full if d.get("kind") == "refine"]
        self.decision_log = [d for d in full if d.get("kind") != "refine"]
        try:
            summary = super().game_summary()
        finally:
            self.decision_log = full

        def total(key: str) -> int | float | None:  # as LLMPlayer's totals; 0 when the game ran no refiner
            values = [d[key] for d in refines if d.get(key) is not None]
            return round(sum(values), 10) if values or not refines else None

        refiner_cost = total("cost_usd")
        play_cost = summary.get("cost_usd")
        summary.update({
            "harness_version": self.harness_version, "harness_games_seen": self.harness_games_seen,
            "refine_every": self.refine_every, "refinements": len(refines),
            "refined_games": [g for d in refines for g in d["refined_games"]],
            "refine_error": next((d["refine_error"] for d in refines if d.get("refine_error")), None),
            "refine_applied": sum(d.get("refine_applied") or 0 for d in refines),
            "refine_rejected": [r for d in refines for r in d.get("refine_rejected") or []],
            "refiner_cost_usd": refiner_cost, **{f"refiner_{key}": total(key) for key in _TOKEN_KEYS},
            "total_cost_usd": (round(play_cost + refiner_cost, 10)
                               if play_cost is not None and refiner_cost is not None else None),
            "trajectory_error": self.trajectory_error,
        })
        return summary
