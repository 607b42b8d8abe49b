"""The Continual Harness competitor: an LLM player whose harness the model refines itself between epochs.

After Shi et al. 2026, "Continual Harness: Online Adaptation for Self-Improving Foundation
Agents" (docs/continual-harness.md says how PokéBench implements it). One run is the agent's
one continuous life, cut into epochs of whole mirror pairs (:mod:`pokebench.play.epochs`):

- It plays each game exactly like :class:`pokebench.players.llm.LLMPlayer` (the system prompt byte
  for byte, the same messages, re-asks and accounting), except that the first user message of a
  game starts with ``YOUR HARNESS (version N, ...)``: strategy, memory, skills and advisors.
- With advisors in the harness, every request offers the ``consult`` tool
  (:mod:`pokebench.players.continual.subagents`); each consultation is a recorded, priced call.
- A finished game leaves its trajectory in the player's working folder (``GameContext.work_dir``);
  between epochs the run's barrier has the refiner read the trajectories of the stored games of
  finished epochs (:mod:`pokebench.players.continual.refining`). A game voided by a harness error
  is never stored, so it is never read, whatever its trajectory says.
- Every game reads the version fixed for the epoch being played, and records it.

The player knows nothing of the store, the schedule or the run folder: only its working folder.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

from poke_env.battle import AbstractBattle

from pokebench.llm.client import Completion, ModelConfig
from pokebench.player.bench_player import GameContext
from pokebench.players.continual import subagents
from pokebench.players.continual.harness import Budgets, Harness, harness_block, origin, switched_on
from pokebench.players.continual.refining import HarnessRefiner
from pokebench.players.continual.versions import (EXPERT, MODES, HarnessFiles, Source, check_carry_over,
                                                  initial_harness)
from pokebench.players.llm import LLMPlayer
from pokebench.util import utc_now

log = logging.getLogger(__name__)

CONSULT_MODES = ("tools", "off")


def _options(mode: str, load_from: str | None, epoch_pairs: Any, consult: str, budgets: Any,
             max_consults_per_decision: Any, without: Any = None) -> tuple[Budgets, tuple[str, ...]]:
    """Check the player's options (ValueError naming the fix); the budgets and the parts on (``switched_on``)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if isinstance(epoch_pairs, bool) or not isinstance(epoch_pairs, int) or epoch_pairs < 1:
        raise ValueError(f"epoch_pairs must be a whole number of at least 1, not {epoch_pairs!r}")
    if consult not in CONSULT_MODES:
        raise ValueError(f"consult must be one of {', '.join(CONSULT_MODES)} (off for a model without tool calling)")
    if isinstance(max_consults_per_decision, bool) or not isinstance(max_consults_per_decision, int) \
            or max_consults_per_decision < 0:
        raise ValueError(f"max_consults_per_decision must be a whole number >= 0, not {max_consults_per_decision!r}")
    initial_harness(mode, load_from)  # a missing or unreadable load_from is found before any game
    try:
        limits = Budgets(**(budgets or {}))
    except Exception as err:
        raise ValueError(f"budgets: {err}") from None
    if without is not None and (isinstance(without, str) or not isinstance(without, (list, tuple))):
        raise ValueError(f"without must be a list of parts (e.g. without=[memory,signatures]), not {without!r}")
    return limits, switched_on(without or [], limits, consult == "tools" and max_consults_per_decision > 0)


class ContinualHarnessPlayer(LLMPlayer):
    """An LLM player with a self-refined harness; see the module docstring."""

    def __init__(self, model: dict[str, Any], name: str | None = None, mode: str = "scratch",
                 load_from: str | None = None, epoch_pairs: int = 1, refiner_model: dict[str, Any] | None = None,
                 consult: str = "tools", max_consults_per_decision: int = 2, budgets: dict[str, Any] | None = None,
                 refiner_log_chars: int = 20000, without: list[str] | None = None, **poke_env_kwargs: Any) -> None:
        self.budgets, self.parts = _options(mode, load_from, epoch_pairs, consult, budgets,
                                            max_consults_per_decision, without)
        self.mode, self.load_from, self.epoch_pairs = mode, load_from, epoch_pairs
        self.consult, self.max_consults = consult, max_consults_per_decision
        self.harness = Harness()
        self.harness_version = 0
        self.harness_epoch: int | None = None
        self.harness_origin: str | None = None
        super().__init__(model, name=name, **poke_env_kwargs)

    # ---- the run's side: checks, shards, epochs ---------------------------------------------------
    @classmethod
    def preflight(cls, model: dict[str, Any], name: str | None = None, mode: str = "scratch",
                  load_from: str | None = None, epoch_pairs: int = 1, refiner_model: dict[str, Any] | None = None,
                  consult: str = "tools", max_consults_per_decision: int = 2, budgets: dict[str, Any] | None = None,
                  without: list[str] | None = None, **_other: Any) -> None:
        super().preflight(model, name)
        _options(mode, load_from, epoch_pairs, consult, budgets, max_consults_per_decision, without)
        if refiner_model is not None and mode != "frozen":
            config = ModelConfig.from_dict(refiner_model)
            config.api_key()
            config.check_reachable()

    @classmethod
    def refines(cls, mode: str = "scratch", **_other: Any) -> bool:
        """Whether the harness changes during a run (every mode but frozen)."""
        return mode != "frozen"

    @classmethod
    def frozen_after_learning(cls, work_dir: Any) -> dict[str, Any]:
        """The options that play, frozen, the last version this player learned in the run of `work_dir`
        (``trajectories``' evaluation after learning)."""
        return {"mode": "frozen", "load_from": str(work_dir)}

    @classmethod
    def check_run(cls, seed_text: str, battle_format: str, mode: str = "scratch", load_from: str | None = None,
                  **_other: Any) -> None:
        """Refuse (ValueError) a loaded harness that learned from the games of this run's seed text and format."""
        if mode != "scratch" and load_from:
            loaded = initial_harness(mode, load_from)
            check_carry_over(loaded.learned_from, Source(seed_text=seed_text, format=battle_format),
                             loaded.source or load_from)

    @classmethod
    def epoch_participant(cls, work_dir: Any, player: str, model: dict[str, Any], mode: str = "scratch",
                          load_from: str | None = None, epoch_pairs: int = 1,
                          refiner_model: dict[str, Any] | None = None, budgets: dict[str, Any] | None = None,
                          refiner_log_chars: int = 20000, consult: str = "tools", max_consults_per_decision: int = 2,
                          without: list[str] | None = None, run: dict[str, str] | None = None,
                          **_other: Any) -> HarnessRefiner:
        """What refines this player between the epochs of a run (the refiner's model: the player's by default);
        `run`: the run's seed_text and format."""
        limits, parts = _options(mode, load_from, epoch_pairs, consult, budgets, max_consults_per_decision, without)
        return HarnessRefiner(work_dir, player, mode, load_from, epoch_pairs,
                              ModelConfig.from_dict(refiner_model or model), limits, int(refiner_log_chars), parts,
                              Source(**run) if run else None)

    # ---- per game ---------------------------------------------------------------------------------
    def _reset_conversation(self) -> None:
        super()._reset_conversation()
        self._game_text: list[str] = []
        self._team_hp: list[dict[str, Any]] = []
        self._consults_in_decision: tuple[int, int] = (0, 0)

    def begin_game(self, context: GameContext, on_failure: Callable[[BaseException], None] | None = None) -> None:
        super().begin_game(context, on_failure)
        self._load(context)

    def _load(self, context: GameContext) -> None:
        """The version of the epoch being played (version 0 outside a run, or before its first epoch), and where
        its contents came from."""
        files = HarnessFiles(context.work_dir) if context.work_dir is not None else None
        if files is None or not files.exists():
            loaded = initial_harness(self.mode, self.load_from)
            self.harness, self.harness_version, self.harness_epoch = loaded.harness, 0, None
            self.harness_origin = origin(self.mode, 0, loaded.source is not None, bool(loaded.learned_from))
            return
        state = files.read_state()
        epoch = state.active_epoch
        version = state.epochs.get(str(epoch), state.current) if epoch is not None else state.current
        first = files.read_version(0)
        self.harness, self.harness_version, self.harness_epoch = files.read_version(version).harness, version, epoch
        self.harness_origin = origin(self.mode, version, first.trigger.get("kind") == "loaded",
                                     bool(first.learned_from))

    def _new_events(self, battle: AbstractBattle) -> list[str]:
        events = super()._new_events(battle)
        self._game_text.extend(events)
        return events

    # ---- LLMPlayer's extension points -------------------------------------------------------------
    def first_message_prefix(self, battle: AbstractBattle) -> str:
        return harness_block(self.harness, self.harness_version, self.harness_epoch, self._consulting(),
                             self.parts, self.harness_origin)

    def entry_extra(self) -> dict[str, Any]:
        return {"harness_version": self.harness_version, "harness_epoch": self.harness_epoch}

    def _consulting(self) -> bool:
        return "advisors" in self.parts and bool(self.harness.subagents)

    async def ask(self, battle: AbstractBattle) -> Completion:
        """An answer; while the harness has advisors, tool calls to them are answered first."""
        self._snapshot(battle)
        if not self._consulting():
            return await super().ask(battle)
        assert self._client is not None
        decision, used = self._consults_in_decision
        if decision != self._decision_index:
            used = 0
        tools = [subagents.consult_tool(self.harness)]
        state = next(m["content"] for m in reversed(self.messages) if m["role"] == "user")
        while True:
            completion = await self._client.complete(self.messages, tools=tools if used < self.max_consults else None)
            if not completion.tool_calls:
                self._consults_in_decision = (self._decision_index, used)
                return completion
            self.record_call(self.call_entry("tool_call", battle, completion,
                                             tool_calls=[c["name"] + " " + c["arguments"] for c in completion.tool_calls]))
            self.messages.append({"role": "assistant", "content": completion.text,
                                  "tool_calls": [{"id": c["id"], "type": "function",
                                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                                 for c in completion.tool_calls]})
            for call in completion.tool_calls:
                used += 1
                self.messages.append({"role": "tool", "tool_call_id": call["id"],
                                      "content": await self._consult(battle, call, state)})

    async def _consult(self, battle: AbstractBattle, call: dict[str, str], state: str) -> str:
        """One tool call answered: the advisor's advice (one priced API call), or what was wrong with the call."""
        assert self._client is not None
        agent, question, problem = subagents.parse_call(self.harness, call["arguments"])
        if call["name"] != "consult":
            problem = f"there is no tool {call['name']!r}; the only tool is consult"
        if problem is not None or agent is None:
            return f"Error: {problem}"
        completion = await self._client.complete(subagents.advisor_messages(agent, state, question))
        advice = (completion.text or "").strip() or "(no advice)"
        self.record_call(self.call_entry("consult", battle, completion, advisor=agent.name, question=question,
                                         advice=self._client.redact(advice)))
        return advice

    def _snapshot(self, battle: AbstractBattle) -> None:
        """Own Pokémon's HP at each decision (for the failure signature "a loss with healthy Pokémon left")."""
        if self._team_hp and self._team_hp[-1]["decision"] == self._decision_index:
            return
        bench = {mon.species: (0.0 if mon.fainted else round(mon.current_hp_fraction, 3))
                 for mon in battle.team.values() if not mon.active}
        self._team_hp.append({"decision": self._decision_index, "turn": battle.turn, "bench": bench})

    def summary_extra(self) -> dict[str, Any]:
        consults = [d for d in self.decision_log if d.kind in ("consult", "tool_call")]
        costs = [d.cost_usd for d in consults if d.cost_usd is not None]
        return {"harness_version": self.harness_version, "harness_epoch": self.harness_epoch,
                "harness_mode": self.mode, "epoch_pairs": self.epoch_pairs, "harness_parts": list(self.parts),
                "harness_expert": self.load_from == EXPERT,
                "consultations": sum(1 for d in consults if d.kind == "consult"),
                "consult_cost_usd": round(sum(costs), 10) if consults else 0.0}

    # ---- the end of a game: its trajectory --------------------------------------------------------
    def _battle_finished_callback(self, battle: AbstractBattle) -> None:
        super()._battle_finished_callback(battle)
        if self.game is None or self.failure is not None or self.game.work_dir is None:
            return
        try:
            HarnessFiles(self.game.work_dir).write_trajectory(self.game.game_id, self.trajectory(battle))
        except OSError as err:  # a lost trajectory must not void a finished game; the refiner notes it missing
            log.warning("%s: could not write the trajectory of %s: %r", self.player_name, self.game.game_id, err)

    def trajectory(self, battle: AbstractBattle) -> dict[str, Any]:
        """What the refiner reads of a finished game (only if the game is stored: the barrier decides)."""
        assert self.game is not None
        self._new_events(battle)  # the last events, up to the end of the battle
        keys = ("kind", "turn", "decision", "action", "reason", "invalid", "random_pick", "refusal_error",
                "advisor", "question", "advice")
        return {"game_id": self.game.game_id, "player": self.player_name, "side": self.game.side,
                "epoch": self.harness_epoch, "version": self.harness_version,
                "outcome": "won" if battle.won else "lost" if battle.lost else "tie", "turns": battle.turn,
                "finished_at": utc_now(), "answers": [{k: flat[k] for k in keys if k in flat} for flat in (d.to_dict() for d in self.decision_log)],
                "team_hp": self._team_hp, "battle_log": self._game_text}
