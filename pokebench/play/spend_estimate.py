"""What a run will spend, estimated before its first game from its models' list prices (``model.prices``).

Per game of an LLM player: :data:`DECISIONS_PER_GAME` answers. Each request carries the game's whole
conversation so far, :data:`INPUT_TOKENS_PER_DECISION` tokens on average, of which
:data:`NEW_TOKENS_PER_DECISION` are new (priced at the higher of ``input`` and ``cache_write``: a provider that
reports no cache writes charges them as input, one that does at its write price); the rest is read from the
provider's prompt cache (``cached_input``, else ``input``). The answer is :data:`OUTPUT_TOKENS` tokens for the
model's reasoning level. A refining player adds, for every epoch but the first of a learning run, one refiner
request per part of the harness (:data:`REFINER_TOKENS`).

The decisions and input tokens are measured (docs/continual-harness.md, "What a run costs"); the output
tokens of a reasoning level are an assumption (a level is a cap on thinking, not what is used): the
estimate is a size, not a bill. The caps (``budget_usd``) are what bounds the spend.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

#: Answers per game of an LLM player (the ladder: 43 per game, docs/analysis.md; the local smoke runs: 27).
DECISIONS_PER_GAME = 45
#: Input tokens per request, the whole conversation so far (mean over a game), and the new part of them: measured
#: on ch-smoke runs (27 answers a game: 4,930 on average, 280 new), the conversation growing about 300 tokens an
#: answer, scaled to 45 answers with longer reasons.
INPUT_TOKENS_PER_DECISION = 8_000
NEW_TOKENS_PER_DECISION = 320
#: Output tokens per answer (reasoning included) by reasoning level: an assumption, about half of each
#: level's thinking budget of the model configs (none: the answer and its reason only).
OUTPUT_TOKENS = {"none": 120, "low": 1_100, "medium": 4_000, "high": 12_000}
#: One refiner request: the games it reads (``refiner_log_chars`` / 4, cached for passes 2-4), the harness,
#: its instructions; and its answer (the edits).
REFINER_TOKENS = {"input": 9_000, "output": 1_500}
REFINER_PASSES = 4


@dataclass
class Estimate:
    """USD per player: its games, and its refiner's spend between epochs."""

    games: Counter[str] = field(default_factory=Counter)
    game_usd: dict[str, float] = field(default_factory=dict)
    refiner_usd: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return sum(self.game_usd.values()) + sum(self.refiner_usd.values())

    def add(self, other: "Estimate", times: float = 1.0) -> None:
        for player, n in other.games.items():
            self.games[player] += round(n * times)
        for mine, theirs in ((self.game_usd, other.game_usd), (self.refiner_usd, other.refiner_usd)):
            for player, usd in theirs.items():
                mine[player] = mine.get(player, 0.0) + usd * times


def _price(prices: Mapping[str, Any], key: str, fallback: str = "input") -> float:
    value = prices.get(key)
    return float(value if value is not None else prices.get(fallback) or 0.0)


def _new_price(prices: Mapping[str, Any]) -> float:
    """The price of new input tokens: the higher of input and cache write (see the module docstring)."""
    return max(_price(prices, "input"), _price(prices, "cache_write"))


def _prices(model: Mapping[str, Any]) -> Mapping[str, Any]:
    """`model`'s list prices; none for ``prices: unknown`` (a model run without prices: nothing to estimate)."""
    prices = model.get("prices")
    return prices if isinstance(prices, Mapping) else {}


def _priced_model(options: Any) -> Mapping[str, Any] | None:
    """A player's model if it has a price, else None (not an LLM player, a free local model, prices unknown)."""
    model = options.get("model") if isinstance(options, Mapping) else None
    if not isinstance(model, Mapping):
        return None
    return model if any(isinstance(v, (int, float)) and v > 0 for k, v in _prices(model).items() if k != "read_on") else None


def priced(players: Mapping[str, Any]) -> bool:
    """Whether any player's model has a price (an estimate is worth printing)."""
    return any(_priced_model(o) is not None for o in players.values())


def decision_usd(model: Mapping[str, Any]) -> float:
    """One answer's estimated USD at `model`'s list prices (USD per million tokens) and reasoning level."""
    prices = _prices(model)
    output = OUTPUT_TOKENS.get(str(model.get("reasoning") or "none"), OUTPUT_TOKENS["high"])
    new, cached = NEW_TOKENS_PER_DECISION, INPUT_TOKENS_PER_DECISION - NEW_TOKENS_PER_DECISION
    return (new * _new_price(prices) + cached * _price(prices, "cached_input")
            + output * _price(prices, "output")) / 1e6


def refinement_usd(model: Mapping[str, Any]) -> float:
    """One refinement's estimated USD (its four passes; passes 2-4 read the games from the cache)."""
    prices = _prices(model)
    first = REFINER_TOKENS["input"] * _new_price(prices)
    later = (REFINER_PASSES - 1) * REFINER_TOKENS["input"] * _price(prices, "cached_input")
    return (first + later + REFINER_PASSES * REFINER_TOKENS["output"] * _price(prices, "output")) / 1e6


def estimate(players: Mapping[str, Any], games: Mapping[str, int], pairs: int,
             refining: list[str]) -> Estimate:
    """The estimate of one run: `games` per player, `pairs` per matchup, the `refining` players' epochs."""
    out = Estimate()
    for name, options in players.items():
        model = _priced_model(options)
        if model is None:
            continue  # not an LLM player, a free model (a local server) or one without prices
        out.games[name] = games.get(name, 0)
        out.game_usd[name] = games.get(name, 0) * DECISIONS_PER_GAME * decision_usd(model)
        if name in refining:
            refinements = max(0, math.ceil(pairs / int(options.get("epoch_pairs") or 1)) - 1)
            out.refiner_usd[name] = refinements * refinement_usd(options.get("refiner_model") or model)
    return out


def spend_line(est: Estimate, what: str, costliest_run: float, run_cap: float | None = None) -> str:
    """What the user reads before the first game: the estimate, per player, and what to do about it
    (`costliest_run`: the estimate of the costliest of its runs, since ``budget_usd`` caps each run; `run_cap`: the
    command's ``budget_usd``, if it gives one)."""
    if not est.game_usd:
        return ""
    parts = []
    for player in est.game_usd:
        refiner = est.refiner_usd.get(player)
        parts.append(f"{player} ${est.game_usd[player] + (refiner or 0):,.2f} ({est.games[player]} games"
                     + (f", refiner ${refiner:,.2f}" if refiner else "") + ")")
    cap = max(1, math.ceil(costliest_run * 1.25))
    per_run = "" if costliest_run >= est.total else " (a cap per run: each trajectory and evaluation is a run)"
    advice = (f"To cap it, stop now (Ctrl-C) and start again with budget_usd={cap}{per_run}" if run_cap is None
              else f"budget_usd={run_cap:g} caps each run: it stops starting games before the cap would be passed")
    return (f"Estimated spend of {what}: about ${est.total:,.2f} at the models' list prices: {'; '.join(parts)}. "
            f"Assumed per game {DECISIONS_PER_GAME} answers of {INPUT_TOKENS_PER_DECISION:,} input tokens "
            f"({NEW_TOKENS_PER_DECISION} new) and the reasoning level's output tokens (docs/continual-harness.md, "
            f"\"What a run costs\"), games already stored included. {advice}; "
            "fewer pairs or trajectories cost proportionally less.")
