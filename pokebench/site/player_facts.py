"""A player's ``players.json`` entry as the player page shows it: labelled facts, each said once.

The entry mixes what the player reported in its games (``model``, ``model_facts``, ``reasoning``, counters
such as ``reasks``) with its run config flattened under ``config.``. The page shows the model and the
harness under labels (from ``model_facts`` when the player reported them), the counters not already among
the page's figures under labels, and the rest of the settings (the run config without its ``config.``
prefix) in one list of raw keys, leaving out what the labelled lists said.
"""

from __future__ import annotations

import json
from typing import Any

from pokebench.site import format as fmt

__all__ = ["player_facts"]

#: Counters the page's figures already show (saved answers, spend, time per decision), and per-game
#: positions that a sum makes meaningless (the harness page shows them).
_SHOWN_ELSEWHERE = {"answers", "cost_usd", "latency_s", "harness_epoch", "harness_version"}
_COUNTER_LABELS = {
    "decisions": "Decisions", "llm_decisions": "Decisions answered by the model", "reasks": "Re-asks",
    "invalid_answers": "Invalid answers", "random_picks": "Random picks",
    "refused_answers": "Answers refused by the simulator", "refusals": "Choices refused by the simulator",
    "answers_without_usage": "Answers without token usage", "api_retries": "API retries",
    "input_tokens": "Input tokens", "cached_input_tokens": "Cached input tokens",
    "cache_write_tokens": "Cache-write tokens", "output_tokens": "Output tokens",
    "reasoning_tokens": "Reasoning tokens", "consultations": "Consultations",
    "consult_cost_usd": "Consultations' cost", "other_calls": "Other model calls",
    "other_calls_cost_usd": "Other calls' cost", "usage_dropped": "Answers whose usage was dropped",
    "usage_flags": "Answers with flagged usage", "provider_cost_usd": "Cost billed by the provider"}
#: Reported settings that the labelled lists show (the model's facts, the harness's), and the game's own end
#: reason (the games table shows it per game).
_LABELLED = {"class", "model", "model_facts", "reasoning", "served_models", "prompt_version", "harness_mode",
             "harness_parts", "epoch_pairs", "reasoning_effort", "end_reason"}
#: The harness's run config that its labelled list says (mode; parts = all but `without`).
_HARNESS_CONFIG = {"mode", "without"}
_PRICE_NAMES = {"input": "input", "cached_input": "cached input", "output": "output", "cache_write": "cache write"}


def _value(v: Any) -> str:
    """A setting's value in words: yes/no, lists joined, mappings as `key value` pairs, nothing as a dash."""
    if v is None or v == "" or v == [] or v == {}:
        return fmt.DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, list):
        return ", ".join(_value(x) for x in v)
    if isinstance(v, dict):
        return "; ".join(f"{k} {_value(x)}" for k, x in v.items())
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _prices(prices: Any) -> str:
    if not isinstance(prices, dict):
        return _value(prices)
    listed = ", ".join(f"{name} ${float(prices[key]):.2f}" for key, name in _PRICE_NAMES.items()
                       if prices.get(key) is not None)
    read_on = prices.get("read_on")
    return f"{listed} per million tokens" + (f" (list prices read on {read_on})" if read_on else "")


def _model(settings: dict[str, Any]) -> list[tuple[str, str]]:
    reported = settings.get("model_facts")
    facts: dict[str, Any] = reported if isinstance(reported, dict) else {}
    config = {k.removeprefix("config.model."): v for k, v in settings.items() if k.startswith("config.model.")}

    def get(key: str) -> Any:
        return facts.get(key, settings.get(key, config.get(key)))

    model = get("model")
    if model is None:
        return []
    served = [m for m in settings.get("served_models") or [] if m != model]
    prices = facts.get("prices") if "prices" in facts else {
        k.removeprefix("prices."): v for k, v in config.items() if k.startswith("prices.")} or None
    request = facts.get("request") if "request" in facts else {
        k.removeprefix("request."): v for k, v in config.items() if k.startswith("request.")} or None
    host = facts.get("base_url_host") or config.get("base_url")
    rows = [("Model", str(model) + (f" (served as {', '.join(map(str, served))})" if served else "")),
            ("Provider", _value(get("provider")) + (f" at {host}" if host else "")),
            ("Reasoning", _value(get("reasoning") or settings.get("reasoning_effort"))),
            ("Prices", _prices(prices)), ("Request parameters", _value(request))]
    for key, label in (("cache_breakpoints", "Prompt-cache breakpoints"),
                       ("reasoning_in_completion", "Reasoning counted in the output tokens"),
                       ("prompt_version", "Prompt version")):
        if get(key) is not None:
            rows.append((label, _value(get(key))))
    return rows


def _harness(settings: dict[str, Any]) -> list[tuple[str, str]]:
    if "harness_mode" not in settings:
        return []
    return [("Mode", _value(settings["harness_mode"])), ("Parts", _value(settings.get("harness_parts"))),
            ("Pairs per epoch", _value(settings.get("epoch_pairs")))]


def _counter(key: str, v: float) -> tuple[str, str]:
    label = _COUNTER_LABELS.get(key, key.replace("_", " ").capitalize())
    if key.endswith("_usd"):
        return label, fmt.cost(v)
    return label, fmt.integer(v) if float(v).is_integer() else f"{v:g}"


def player_facts(info: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """The labelled lists of a ``players.json`` entry: ``player``, ``model``, ``harness``, ``counters`` and
    ``other`` (the remaining settings under their own keys, the run config's without ``config.``)."""
    settings: dict[str, Any] = info.get("settings", {})
    model, harness = _model(settings), _harness(settings)
    said = set(_LABELLED) | ({k for k in settings if k.startswith("config.model.")} if model else set()) | (
        _HARNESS_CONFIG if harness else set())
    cls = str(settings.get("class") or settings.get("config._target_") or settings.get("config.class") or "")
    player = [("Kind", "LLM player" if info.get("kind") == "llm" else "bot")] + (
        [("Class", cls.rsplit(".", 1)[-1])] if cls else [])
    said |= {"config._target_", "config.class"} if cls else set()
    # a counter that was the same in every game is among the settings: it is still a counter
    counted = {**{k: v for k, v in settings.items() if k in _COUNTER_LABELS and isinstance(v, (int, float))},
               **info.get("counters", {})}
    # a mapping the player reported from its games (the search bot's `search`) is its settings as played: each
    # entry is shown under its own name, in place of the run config's of that name, which can say otherwise
    # (a config's 200 ms per decision is unused, 0 as played, when an iteration budget is set)
    blocks = {key for key, v in settings.items() if isinstance(v, dict) and not key.startswith("config.")} - said
    played = {name: v for key in sorted(blocks) for name, v in settings[key].items()}
    other: dict[str, str] = {name: _value(v) for name, v in played.items()}
    skipped = said | blocks | set(_COUNTER_LABELS)
    for key, v in sorted(settings.items()):
        name = key.removeprefix("config.")
        if key not in skipped and name not in said and name not in other:
            other[name] = _value(v)
    other = dict(sorted(other.items()))
    order = list(_COUNTER_LABELS)
    counters = [_counter(k, v) for k, v in sorted(counted.items(), key=lambda kv: (
        order.index(kv[0]) if kv[0] in order else len(order), kv[0])) if k not in _SHOWN_ELSEWHERE]
    return {"player": player, "model": model, "harness": harness, "counters": counters,
            "other": list(other.items())}
