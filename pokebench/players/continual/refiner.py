"""The refiner: after an epoch, one pass per part over the harness (prompt, memory, skills, sub-agents).

Each pass is its own API call. All passes share one system prompt that holds the games they are
given (only games of finished epochs: :mod:`pokebench.play.epochs` calls it between epochs) and
the failure signatures mined from them in code (:mod:`pokebench.players.continual.signatures`),
so that passes 2 on read that long text from the provider's prompt cache; each pass's user
message holds the harness as the passes before it left it and what the pass is asked. It answers
``{"edits": [...]}``, validated against the pass's pydantic schema
(:mod:`pokebench.players.continual.edits`). A part switched off (player option ``without``, or
a budget of 0) has no pass, costs nothing and is not shown; with ``signatures`` off nothing is mined.

A pass whose answer is no JSON object with ``edits`` has all of it rejected (recorded); the
other passes go on. An API that stays down fails the whole refinement: nothing is applied,
and the games wait for the next attempt.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from pokebench.llm.client import ChatClient, Completion, ModelConfig, cost_usd
from pokebench.llm.delivery import cut_off_fields, recorded_if_cut_off
from pokebench.players.continual import signatures as sig
from pokebench.players.continual.edits import FORMATS, PassResult, apply_pass
from pokebench.players.continual.harness import PART_PASSES, SWITCHES, Budgets, Harness
from pokebench.text import prompt

#: In every refiner request's system prompt (a scripted test server tells refiner requests by it).
REFINER_MARKER = "HARNESS REFINER"
_TOKEN_KEYS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens")

_COMMON = """\
You are the HARNESS REFINER of an AI player of Pokémon Showdown, format [Gen 9] Random Battle, singles. You are \
the same kind of model as the player. The player plays many games in one run; every game of an epoch starts from \
the same harness: {parts}. After each epoch you read its games and improve the harness so that the player wins \
more of the next ones. Keep what worked; write what helps in any game (every pair of games of a run draws new \
random teams); never write about one particular opponent's team.

You refine the harness in {count} pass(es), one part each; every pass reads the games below, and its request \
says which part to edit, the answer format and the budget.

{games}"""

_PARTS = {"strategy": "STRATEGY (a short playbook)", "memory": "MEMORY (facts with an importance from 1 to 5)",
          "skills": "SKILLS (named procedures with when to use them)",
          "advisors": "ADVISORS (sub-agents with their own instructions that the player may consult during a decision)"}

_PASS = """\
This is pass {number} of {count}: {task}

ANSWER FORMAT
Answer with only one JSON object, and no other text: {{"edits": [<edit>, ...]}}
Each edit is one of: {format}
Budget: {budget}. At most {edits} edits. An edit that breaks the format or a budget, or names what does not \
exist, is rejected. {{"edits": []}} is a good answer when nothing should change."""

_TASKS = {
    "prompt": ("the STRATEGY. Rewrite it whole when the games show it should change.",
               "a strategy of at most {strategy_chars} characters"),
    "memory": ("the MEMORY. Add facts the games taught (with an importance), correct wrong ones, demote or "
               "remove those of little use. Do not repeat an entry: say it better with update.",
               "at most {memory_entries} entries of at most {memory_chars} characters"),
    "skills": ("the SKILLS: named procedures the player applies, each with when to use it.",
               "at most {skills} skills, names of at most {skill_name_chars} characters, 'when' and 'steps' of "
               "at most {skill_chars}"),
    "subagents": ("the ADVISORS: sub-agents the player may consult with a question during a decision (each "
                  "consultation costs one more request). Give each a narrow job and instructions that make its "
                  "answer short and useful.",
                  "at most {subagents} advisors with instructions of at most {subagent_chars} characters"),
}


def system_prompt(parts: Sequence[str], count: int, games: str) -> str:
    """The system prompt every pass of one refinement shares (the games in it: the cached prefix of passes 2 on)."""
    listed = [_PARTS[p] for p in PART_PASSES if p in parts]
    return _COMMON.format(parts=", ".join(listed[:-1]) + (" and " if len(listed) > 1 else "") + listed[-1],
                          count=count, games=games)


def pass_request(pass_name: str, number: int, count: int, budgets: Budgets) -> str:
    """What one pass is asked (after the harness as the earlier passes left it)."""
    task, budget = _TASKS[pass_name]
    return _PASS.format(number=number, count=count, task=task, format=FORMATS[pass_name],
                        budget=budget.format(**budgets.model_dump()), edits=budgets.edits_per_pass)


def _clip(text: str, limit: int) -> str:
    """`text` within `limit` characters: its first third and its last two thirds, the cut marked."""
    if len(text) <= limit:
        return text
    head = limit // 3
    return f"{text[:head]}\n[... {len(text) - limit} characters cut ...]\n{text[-(limit - head):]}"


def _answer_line(answer: dict[str, Any]) -> str:
    if answer.get("random_pick"):
        return f"turn {answer['turn']}: no legal action named; the harness picked {answer['action']} at random"
    if answer.get("invalid"):
        return f"turn {answer['turn']}: your answer named no legal action: {answer['invalid']}"
    reason = f" (reason: {str(answer['reason'])[:200]})" if answer.get("reason") else ""
    line = f"turn {answer['turn']}: {answer['action']}{reason}"
    if answer.get("refusal_error"):
        line += f"; Showdown refused it: {answer['refusal_error']}"
    return line


def games_text(games: list[dict[str, Any]], log_chars: int) -> str:
    """The games a refinement reads: result, the player's own answers, the battle log as it read it."""
    parts = []
    for n, game in enumerate(games, 1):
        result = {"won": "you won", "lost": "you lost", "tie": "it ended in a tie"}.get(game["outcome"], "?")
        answers = "\n".join(_answer_line(a) for a in game["answers"] if a.get("kind") is None) or "(none)"
        consults = [a for a in game["answers"] if a.get("kind") == "consult"]
        parts += [f"GAME {n} OF {len(games)} ({game['game_id']}, epoch {game.get('epoch')}): you were "
                  f"{prompt.side_label(game['side'])}; {result} after {game['turns']} turns, with harness version "
                  f"{game.get('version')}; {len(consults)} consultation(s) of advisors.",
                  "YOUR ANSWERS\n" + _clip(answers, log_chars // 2),
                  "BATTLE LOG\n" + _clip("\n".join(game.get("battle_log") or []), log_chars)]
    return "\n\n".join(parts)


def parse_edits(text: str | None) -> list[Any]:
    """The ``edits`` list of an answer (a JSON object, perhaps in a code fence); ValueError if there is none."""
    if not text or not text.strip():
        raise ValueError("an empty answer")
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
    raise ValueError(f"the answer is not a JSON object with an 'edits' list: {text[:200]!r}")


@dataclass
class Refinement:
    """What one refinement did: the harness after it, per pass its edits, and its API calls."""

    harness: Harness
    passes: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[dict[str, Any]] = field(default_factory=list)
    signatures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def applied(self) -> int:
        return sum(len(p["applied"]) for p in self.passes.values())

    @property
    def cost_usd(self) -> float | None:
        costs = [c["cost_usd"] for c in self.calls]
        return round(sum(costs), 10) if costs and None not in costs else None


class RefinementFailed(RuntimeError):
    """The API failed during a refinement: nothing is applied; `calls` are what it had spent."""

    def __init__(self, error: str, calls: list[dict[str, Any]]) -> None:
        super().__init__(error)
        self.error = error
        self.calls = calls


def _call_record(pass_name: str, completion: Completion, config: ModelConfig) -> dict[str, Any]:
    usage = completion.usage
    return {"pass": pass_name, "model": config.model, **{k: getattr(usage, k) for k in _TOKEN_KEYS},
            "cost_usd": cost_usd(usage, config.prices), "latency_s": round(completion.latency_s, 4),
            "attempts": completion.attempts, "retries": completion.retries,
            "finish_reason": completion.finish_reason}


def _cut_off_record(pass_name: str, config: ModelConfig) -> dict[str, Any]:
    """A call the stop of the run cut off once the provider had it: served and paid, its tokens and cost unknown."""
    return {"pass": pass_name, "model": config.model, **{k: None for k in _TOKEN_KEYS}, "cost_usd": None,
            **cut_off_fields("the run stopped", "call")}


async def refine(harness: Harness, games: list[dict[str, Any]], config: ModelConfig, budgets: Budgets,
                 log_chars: int = 20000, parts: Sequence[str] = SWITCHES,
                 on_call: Callable[[dict[str, Any]], None] | None = None, history: str = "") -> Refinement:
    """One pass per part on in `parts` over `harness` from `games` (failure signatures mined unless switched
    off), with `history` (every version's score, every epoch: :mod:`pokebench.players.continual.history`)
    before them; `on_call` is given each call's record as soon as it is paid. :class:`RefinementFailed`
    when the API stays down."""
    passes = [PART_PASSES[p] for p in PART_PASSES if p in parts]
    found = sig.mine(games) if "signatures" in parts else []
    result = Refinement(harness.model_copy(deep=True), signatures=found)
    if not passes:
        return result
    shared = games_text(games, log_chars) + ("\n\n" + sig.render(found) if "signatures" in parts else "")
    system = system_prompt(parts, len(passes), (f"{history}\n\n" if history else "")
                           + f"THE {len(games)} GAME(S) TO REFINE FROM (in full)\n\n{shared}")
    client = ChatClient(config)
    paid = on_call or (lambda record: None)
    for number, pass_name in enumerate(passes, 1):
        user = (f"THE HARNESS NOW (after the passes before this one)\n"
                f"{result.harness.render(with_ids=True, parts=parts)}\n\n"
                f"{pass_request(pass_name, number, len(passes), budgets)}")
        try:  # the run stopped with this call in flight: paid if the provider has it
            with recorded_if_cut_off(lambda: paid(_cut_off_record(pass_name, config))):
                completion = await client.complete([{"role": "system", "content": system},
                                                    {"role": "user", "content": user}])
        except Exception as err:  # an API that stays down (after its retries): the harness stays as it was
            raise RefinementFailed(f"pass {pass_name}: {type(err).__name__}: {client.redact(str(err))}"[:1000],
                                   result.calls) from err
        record = _call_record(pass_name, completion, config)
        result.calls.append(record)
        paid(record)
        text = client.redact(completion.text or "")  # its edits become the harness: written, and sent in every game
        try:
            edits = parse_edits(text)
        except ValueError as err:
            result.passes[pass_name] = {"applied": [], "rejected": [{"edit": text, "why": str(err)}]}
            continue
        outcome: PassResult = apply_pass(result.harness, pass_name, edits, budgets)
        result.harness = outcome.harness
        result.passes[pass_name] = {"applied": outcome.applied, "rejected": outcome.rejected}
    return result
