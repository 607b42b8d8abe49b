"""Sub-agents: advisors the player consults during a decision, through the API's tool calling.

When the harness has advisors, each request of a decision offers one function tool,
``consult(advisor, question)``. A tool call is answered by a separate API call to the same
model (the advisor's own instructions as its system prompt, the battle as the player last
read it and the question as its user message); the advice goes back as the tool's result and
the player answers again. Every call is one entry of the game's decision log (``kind``
"tool_call" for the player's answer that asked, "consult" for the advisor's), with its tokens
and cost: it counts in the player's cost per game, not as a decision.
"""

from __future__ import annotations

import json
from typing import Any

from pokebench.players.continual.harness import Harness, SubAgent

ADVISOR_PROMPT = """\
You are {name}, an advisor to an AI player of Pokémon Showdown ([Gen 9] Random Battle, singles). The player \
consults you during a decision. Your instructions, written by the player itself:
{instructions}

Answer the player's question in at most five short lines. You only advise: the player chooses its action."""

#: Characters of the battle state an advisor reads (the latest user message of the player's conversation).
STATE_CHARS = 8000


def consult_tool(harness: Harness) -> dict[str, Any]:
    """The ``consult`` function tool offered with each request while the harness has advisors."""
    names = [a.name for a in harness.subagents]
    described = "; ".join(f"{a.name}: consult when {a.when}" for a in harness.subagents)
    return {"type": "function", "function": {
        "name": "consult",
        "description": f"Ask one of your advisors a question before you answer. Advisors: {described}",
        "parameters": {"type": "object", "additionalProperties": False, "required": ["advisor", "question"],
                       "properties": {"advisor": {"type": "string", "enum": names},
                                      "question": {"type": "string"}}}}}


def parse_call(harness: Harness, arguments: str) -> tuple[SubAgent | None, str, str | None]:
    """(the advisor, the question, a problem to tell the model) from a tool call's JSON arguments."""
    try:
        args = json.loads(arguments or "{}")
    except ValueError:
        return None, "", "the arguments are not JSON"
    if not isinstance(args, dict):
        return None, "", "the arguments must be a JSON object"
    name, question = args.get("advisor"), str(args.get("question") or "").strip()
    agent = next((a for a in harness.subagents if a.name == name), None)
    if agent is None:
        return None, question, f"there is no advisor {name!r}; advisors: {', '.join(a.name for a in harness.subagents)}"
    if not question:
        return agent, question, "the question is empty"
    return agent, question, None


def advisor_messages(agent: SubAgent, state: str, question: str) -> list[dict[str, str]]:
    clipped = state if len(state) <= STATE_CHARS else state[-STATE_CHARS:]
    return [{"role": "system", "content": ADVISOR_PROMPT.format(name=agent.name, instructions=agent.instructions)},
            {"role": "user", "content": f"THE BATTLE AS THE PLAYER LAST READ IT\n{clipped}\n\nQUESTION\n{question}"}]
