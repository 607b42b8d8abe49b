"""The LLM player: a model behind an OpenAI-compatible API plays the battle, one conversation per game.

Per decision (method §2) it appends one user message (the first message of
:mod:`pokebench.text.prompt`, or a later one with only the new events), awaits the
model's answer, and reads its last ``ACTION:`` and ``REASON:`` lines. An answer
that names no legal action gets an error message and the model answers again;
after 3 such answers the harness picks a legal action at random (``self.rng``) and
counts a random pick. When the simulator refuses a choice, Showdown's error message
is the next user message and the model chooses again. Earlier messages never change.

Every answer is one :class:`~pokebench.player.decisions.DecisionRecord` of ``self.decision_log``
(tokens, cost, latency, the raw answer, the action, the reason and what went wrong); :meth:`LLMPlayer.game_summary`
sums them for the game's record. A request cancelled in flight (the game ended or the
run stopped) is an entry too, with ``error: "cancelled"`` in its ``extra``, when its body had been sent: the provider
served it (:mod:`pokebench.llm.delivery`); one cut off before that never reached the provider and costs nothing.

Extension points for players built on this one (the Continual Harness player uses them):
:meth:`first_message_prefix` (text in front of a game's first user message; the system
prompt never changes), :meth:`entry_extra` (fields added to every entry's ``extra``),
:meth:`record_call` (another API call of the game, such as a consultation: its entry has a
``kind``, its cost counts in the game's cost but not as a decision), :meth:`ask` (how one
answer is obtained: override to handle tool calls) and :meth:`summary_extra` (fields added to
the game's summary).

A finished game's conversation is written to the player's working folder of the run
(``GameContext.work_dir``/``conversations/<game_id>.json``), from which ``pokebench
export-training`` makes training data; only games the run stored are exported. An API that stays down raises from ``choose_move``:
the game becomes a harness error and is played again when the run is resumed; an
error no retry can fix (a refused key, an unknown model) stops the run. When the
conversation no longer fits the model's context the player forfeits: the game is a
loss with end reason ``context_length``, stored once (a restart does not replay it).
Once the game is over the player makes no API call (see :class:`BenchHooks`).

Many games run at once: each game has its own player (its own conversation), and
``choose_move`` runs on poke-env's event loop thread (``POKE_LOOP``), where the
players of all games share one ``AsyncOpenAI`` connection pool per endpoint
(:func:`pokebench.llm.client._shared_client`). The arena's ``max_in_flight`` of the
model config bounds its games at once.
"""

from __future__ import annotations

import json
import logging
from typing import Any, Callable, List, overload

from poke_env.battle import AbstractBattle
from poke_env.player.battle_order import BattleOrder, ForfeitBattleOrder

from pokebench.text import answers, prompt
from pokebench.text.renderer import BattleText
from pokebench.player.bench_player import BenchPlayer, GameContext
from pokebench.player.decisions import SHARED_FIELDS, DecisionRecord
from pokebench.llm.client import ChatClient, Completion, ModelConfig
from pokebench.llm.delivery import cut_off_fields, recorded_if_cut_off
from pokebench.llm.errors import ContextLengthExceeded
from pokebench.llm.usage import Usage, cost_usd
from pokebench.util import atomic_write_text

log = logging.getLogger(__name__)

#: Answers that name no legal action before the harness picks one at random (method §2).
MAX_INVALID_ANSWERS = 3
#: Refusals of one decision after which the listed legal actions must be wrong: a harness error, not a loop.
MAX_REFUSALS_PER_DECISION = 5
#: Protocol lines the conversation never shows as events (the request is the state; errors get their own message).
_HIDDEN_COMMANDS = {"request", "error"}
_TOKEN_KEYS = ("input_tokens", "cached_input_tokens", "cache_write_tokens", "output_tokens", "reasoning_tokens")


class LLMPlayer(BenchPlayer):
    """A model plays: ``model`` is a model config (``conf/model/*.yaml``) as a plain dict."""

    #: Prompt version 3 and its battle text describe Gen 9 singles.
    supported_formats = ("gen9randombattle",)

    def __init__(self, model: dict[str, Any], name: str | None = None, **poke_env_kwargs: Any) -> None:
        self.model_config = ModelConfig.from_dict(model)
        self.config_name = name
        self._client: ChatClient | None = None
        self._reset_conversation()
        super().__init__(**poke_env_kwargs)

    @classmethod
    def preflight(cls, model: dict[str, Any], name: str | None = None, **_other: Any) -> None:
        """Before any game: the config is valid, the API key's variable is set, and the endpoint accepts connections.

        The real request that proves the key, the model id and the parameters is
        :func:`pokebench.llm.preflight.probe_models` (once per model of the run).
        """
        config = ModelConfig.from_dict(model)
        config.api_key()
        config.check_reachable()

    def think_bound(self) -> float:
        """The longest one decision may take: every answer it may need, each with all its attempts and waits."""
        return MAX_INVALID_ANSWERS * self.model_config.answer_bound() + 60.0

    # ---- per-game state ---------------------------------------------------------------------
    def _reset_conversation(self) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": prompt.system_prompt()}]
        self.decision_log: list[DecisionRecord] = []
        self._raw_lines: list[str] = []
        self._fed = 0
        self._text: BattleText | None = None
        self._errors_seen = 0
        self._last_sent: DecisionRecord | None = None
        self._decision_index = 0
        self._refusals_in_decision = 0
        self.end_reason: str | None = None  # set when the player gave the game up (context_length)

    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None] | None = None) -> None:
        super().begin_game(context, on_failure)
        self._reset_conversation()

    @property
    def player_name(self) -> str:
        """The competitor's name in the run: from the game context, the ``name`` option, or the model."""
        extra = self.game.extra if self.game is not None else {}
        return extra.get("player") or self.config_name or self.model_config.name

    def _side(self, default: str | None) -> str | None:
        return self.game.side if self.game is not None else default

    # ---- what the player receives -----------------------------------------------------------
    async def _handle_battle_message(self, split_messages: List[List[str]]) -> None:
        for message in split_messages[1:]:
            if len(message) > 1 and message[1] not in _HIDDEN_COMMANDS:
                self._raw_lines.append("|".join(message))
        await super()._handle_battle_message(split_messages)

    def _new_events(self, battle: AbstractBattle) -> list[str]:
        if self._text is None:
            self._text = BattleText(battle.player_role or self._side("p1"))
        pending, self._fed = self._raw_lines[self._fed:], len(self._raw_lines)
        return self._text.feed(pending)

    # ---- deciding ---------------------------------------------------------------------------
    async def choose_move(self, battle: AbstractBattle) -> BattleOrder:
        # The hooks (pokebench.player.bench_player) count the call, time it and turn an exception into a harness error.
        if self.failure is not None:  # the game is being voided: no more API calls
            return self.choose_default_move()
        if self.end_reason is not None:  # given up: the forfeit is on its way
            return ForfeitBattleOrder()
        return await self._decide(battle)

    def _new_refusal(self) -> str | None:
        errors = self.choice_errors
        if len(errors) > self._errors_seen:
            self._errors_seen = len(errors)
            return errors[-1]
        return None

    async def _decide(self, battle: AbstractBattle) -> BattleOrder:
        if self._client is None:
            self._client = ChatClient(self.model_config)
        events = self._new_events(battle)
        actions = prompt.legal_actions(battle)
        if not actions:
            return self.choose_default_move()
        refusal = self._new_refusal()
        self._refusals_in_decision = self._refusals_in_decision + 1 if refusal is not None else 0
        if self._refusals_in_decision >= MAX_REFUSALS_PER_DECISION:
            raise RuntimeError(f"Showdown refused {self._refusals_in_decision} choices of one decision (last: "
                               f"{refusal}); the legal actions the harness lists must be wrong")
        if refusal is not None and self._last_sent is not None:
            self._last_sent.refusal = True
            self._last_sent.refusal_error = refusal
            message = prompt.refusal_message(refusal, self._last_sent.action, actions, events)
        elif len(self.messages) == 1:
            message = self.first_message_prefix(battle) + prompt.first_message(battle, events, self._text)
        else:
            message = prompt.later_message(battle, events, self._text)
        if refusal is None:
            self._decision_index += 1
        reask = refusal is not None
        invalid = 0
        while True:
            self.messages.append({"role": "user", "content": message})
            try:  # the game ended or the run stopped with a request the provider has: it is served and paid
                with recorded_if_cut_off(lambda: self._record_cut_off(battle, reask)):
                    completion = await self.ask(battle)
            except ContextLengthExceeded as err:
                return self._give_up(battle, reask, "context_length", str(err))
            answer = completion.text or ""
            # an empty assistant message is refused by some APIs; the log keeps the answer as it came
            self.messages.append({"role": "assistant", "content": answer if answer.strip() else "(empty answer)"})
            parsed = answers.parse_answer(answer)
            index, problem = answers.match_action(parsed.action, actions)
            entry = self._entry(battle, completion, parsed, reask)
            entry.extra["sent"] = message  # what the model was sent for this answer (the replay page shows it)
            if index is None:
                invalid += 1
                entry.invalid = problem
                if invalid >= MAX_INVALID_ANSWERS:
                    index = self.rng.randrange(len(actions))
                    entry.random_pick = True
            if index is not None:
                chosen = actions[index]
                entry.action = chosen.text
                self.decision_log.append(entry)
                self._last_sent = entry
                return self.create_order(chosen.target, terastallize=chosen.terastallize)
            self.decision_log.append(entry)
            message = prompt.reask_message(problem)
            reask = True

    def _record_cut_off(self, battle: AbstractBattle, reask: bool) -> None:
        entry = self._entry(battle, None, None, reask)
        entry.extra.update(cut_off_fields("the game ended", "request"))
        self.decision_log.append(entry)

    # ---- the end of a game: its conversation, for training data (pokebench export-training) ---------
    def _battle_finished_callback(self, battle: AbstractBattle) -> None:
        super()._battle_finished_callback(battle)
        if self.game is None or self.game.work_dir is None or self.failure is not None:
            return
        name = "".join(c if c.isalnum() or c in "._-" else "_" for c in self.game.game_id)
        try:
            atomic_write_text(self.game.work_dir / "conversations" / f"{name}.json", self.written(json.dumps(
                {"game_id": self.game.game_id, "side": self.game.side, "messages": self.messages}, ensure_ascii=False)))
        except OSError as err:  # a lost conversation must not void a finished game
            log.warning("%s: could not write the conversation of %s: %r", self.player_name, self.game.game_id, err)

    # ---- extension points -------------------------------------------------------------------
    def first_message_prefix(self, battle: AbstractBattle) -> str:
        """Text put in front of the first user message of a game (default: none)."""
        return ""

    def entry_extra(self) -> dict[str, Any]:
        """Fields added to the ``extra`` of every entry of the decision log (default: none)."""
        return {}

    def summary_extra(self) -> dict[str, Any]:
        """Fields added to the game's summary (default: none)."""
        return {}

    async def ask(self, battle: AbstractBattle) -> Completion:
        """One answer to the conversation so far (``self.messages``, whose last message is the user's)."""
        assert self._client is not None
        return await self._client.complete(self.messages)

    def call_entry(self, kind: str, battle: AbstractBattle, completion: Completion | None,
                   **fields: Any) -> DecisionRecord:
        """An entry for an API call that is not an answer of the player (``kind``: "consult", ...); `fields`
        that are not shared fields of every record go to its ``extra``."""
        entry = self._record(battle, completion, completion.usage if completion is not None else None,
                             kind=kind, **{k: v for k, v in fields.items() if k not in SHARED_FIELDS})
        for key, value in fields.items():
            if key in SHARED_FIELDS:
                setattr(entry, key, value)
        return entry

    def _record(self, battle: AbstractBattle, completion: Completion | None, usage: Usage | None,
                kind: str | None = None, reason: str | None = None, reask: bool = False,
                **extra: Any) -> DecisionRecord:
        """What every entry of the log has (an answer or another call): who, when, the model, its usage and cost
        (None: unknown), the raw text; ``action``, ``invalid`` and ``refusal`` are the caller's to set."""
        return DecisionRecord(
            side=battle.player_role or self._side(None) or "", player=self.player_name, turn=battle.turn,
            decision=self._decision_index, kind=kind, action=None, reason=reason,
            raw=self.written(completion.text) if completion else None, invalid=None, reask=reask, refusal=False,
            random_pick=False, model=self.model_config.model,
            served_model=completion.served_model if completion else None,
            **{key: getattr(usage, key) if usage is not None else None for key in _TOKEN_KEYS},
            cost_usd=cost_usd(usage, self.model_config.prices) if usage is not None else None,
            latency_s=round(completion.latency_s, 4) if completion else None,
            extra={"reasoning": self.model_config.reasoning,
                   "provider_cost_usd": usage.provider_cost_usd if usage is not None else None,
                   "elapsed_s": round(completion.elapsed_s, 4) if completion else None,
                   "attempts": completion.attempts if completion else None,
                   "retries": completion.retries if completion else [],
                   "finish_reason": completion.finish_reason if completion else None,
                   "answer_chars": completion.answer_chars if completion else None,
                   **extra, **self.entry_extra()},
        )

    @overload
    def written(self, text: str) -> str: ...

    @overload
    def written(self, text: str | None) -> str | None: ...

    def written(self, text: str | None) -> str | None:
        """`text` as it may be written to a record or a file: the API key blanked out (the model reads,
        and the parser parses, what was sent and answered, unredacted)."""
        if text is None or self._client is None:
            return text
        return self._client.redact(text)

    def record_call(self, entry: DecisionRecord) -> None:
        """Keep another API call of this game in the decision log (stored and priced with the game)."""
        self.decision_log.append(entry)

    def _give_up(self, battle: AbstractBattle, reask: bool, reason: str, detail: str) -> BattleOrder:
        """The model cannot go on (its context is full): forfeit, so the game is a loss that says why."""
        self.messages.pop()  # the message that did not fit was never answered
        entry = self._entry(battle, None, None, reask)
        entry.extra.update(error=reason, error_detail=detail)
        self.decision_log.append(entry)
        self.end_reason = reason
        return ForfeitBattleOrder()

    def _entry(self, battle: AbstractBattle, completion: Completion | None, parsed: answers.ParsedAnswer | None,
               reask: bool) -> DecisionRecord:
        """An answer's entry (`completion` None: no answer came; its counts are unknown)."""
        usage = completion.usage if completion is not None else Usage()
        return self._record(battle, completion, usage, reason=self.written(parsed.reason) if parsed else None,
                            reask=reask, system_fingerprint=completion.system_fingerprint if completion else None,
                            usage_dropped=completion.usage_dropped if completion else None, usage_flag=usage.flag)

    # ---- the game's totals --------------------------------------------------------------------
    def game_summary(self) -> dict[str, Any]:
        """The game's figures: answers are counted over the player's answers only; tokens and cost over
        every API call of the game (other calls, such as consultations, also on their own)."""
        log = [d for d in self.decision_log if d.kind is None]
        calls = self.decision_log

        def total(key: str, entries: list[DecisionRecord] | None = None) -> int | float | None:
            values = [v for d in (calls if entries is None else entries) if (v := _number(d, key)) is not None]
            return round(sum(values), 10) if values else None

        others = [d for d in calls if d.kind is not None]

        served = sorted({d.served_model for d in log if d.served_model})
        return {
            "model": self.model_config.model, "reasoning": self.model_config.reasoning,
            "served_models": served, "model_facts": self.model_config.facts(), "end_reason": self.end_reason,
            "prompt_version": prompt.PROMPT_VERSION, "decisions": self.decisions,
            "answers": sum(1 for d in log if d.extra.get("error") is None),
            "llm_decisions": len({d.decision for d in log}),
            "reasks": sum(1 for d in log if d.reask),
            "invalid_answers": sum(1 for d in log if d.invalid),
            "random_picks": sum(1 for d in log if d.random_pick),
            "refused_answers": sum(1 for d in log if d.refusal),
            "answers_without_usage": sum(1 for d in calls if d.input_tokens is None and d.extra.get("error") is None),
            "usage_dropped": sum(1 for d in calls if d.extra.get("usage_dropped")),
            "usage_flags": sum(1 for d in calls if d.extra.get("usage_flag")),
            "api_retries": sum(len(d.extra["retries"]) for d in calls),
            "cost_usd": total("cost_usd"), "provider_cost_usd": total("provider_cost_usd"),
            **{key: total(key) for key in _TOKEN_KEYS},
            "latency_s": total("latency_s", log),
            **({"other_calls": len(others), "other_calls_cost_usd": total("cost_usd", others)} if others else {}),
            **self.summary_extra(),
        }


def _number(entry: DecisionRecord, key: str) -> int | float | None:
    """A shared field of the entry, or one of its ``extra`` (``provider_cost_usd``)."""
    return getattr(entry, key) if key in SHARED_FIELDS else entry.extra.get(key)
