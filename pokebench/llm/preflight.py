"""The pre-flight check of a run's models: one real, minimal request per model before any game.

A wrong key (401/403), an unknown model id (404), or a parameter the model does not take
(400) stops the run here, with one line per model naming what to fix, instead of turning
every game into a harness error. Models with the same endpoint, id and parameters are
asked once. The answers' cost is reported (a few hundred tokens per model).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any, Mapping

from pokebench.llm.client import ChatClient, Completion, ModelConfig
from pokebench.llm.errors import ContextLengthExceeded, LLMAPIError
from pokebench.llm.usage import cost_usd


class PreflightError(RuntimeError):
    """At least one model cannot be used as configured; the message has one line per model."""


@dataclass
class Probe:
    player: str
    config: ModelConfig
    completion: Completion

    @property
    def cost_usd(self) -> float | None:
        return cost_usd(self.completion.usage, self.config.prices)

    def record(self) -> dict[str, Any]:
        """What the run's store keeps of it (:meth:`RunStore.save_preflight`): a paid answer of no game."""
        usage = self.completion.usage
        return {"player": self.player, "model": self.config.model, "served_model": self.completion.served_model,
                "cost_usd": self.cost_usd, "input_tokens": usage.input_tokens,
                "cached_input_tokens": usage.cached_input_tokens, "output_tokens": usage.output_tokens}


def model_configs(players: Mapping[str, Mapping[str, Any]]) -> dict[str, ModelConfig]:
    """The players of a run that play through a model config (``model:`` in their player config)."""
    out = {}
    for name, options in players.items():
        model = options.get("model") if isinstance(options, Mapping) else None
        if isinstance(model, Mapping):
            out[name] = ModelConfig.from_dict(model)
    return out


async def _probe_all(configs: Mapping[str, ModelConfig]) -> tuple[list[Probe], list[str]]:
    groups: dict[str, list[str]] = {}
    for name, config in configs.items():
        key = json.dumps([config.base_url, config.model, config.request_params(), config.api_key_env], sort_keys=True)
        groups.setdefault(key, []).append(name)

    async def one(names: list[str]) -> Probe | str:
        config = configs[names[0]]
        try:
            return Probe(names[0], config, await ChatClient(config).probe())
        except ContextLengthExceeded:  # a one-line question cannot overflow; the server's limits are odd but usable
            return f"players {', '.join(names)}: {config.name} says its context cannot hold a one-line question."
        except LLMAPIError as err:
            return f"player{'s' if len(names) > 1 else ''} {', '.join(names)}: {err}"

    outcomes = await asyncio.gather(*(one(names) for names in groups.values()))
    return [o for o in outcomes if isinstance(o, Probe)], [o for o in outcomes if isinstance(o, str)]


def probe_models(configs: Mapping[str, ModelConfig]) -> list[Probe]:
    """Ask every distinct model once; raise :class:`PreflightError` listing every one that failed."""
    if not configs:
        return []
    probes, problems = asyncio.run(_probe_all(configs))
    if problems:
        raise PreflightError("The pre-flight request failed; no game was played:\n  " + "\n  ".join(problems))
    return probes
