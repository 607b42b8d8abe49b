"""The record of one decision (or one other API call) of a player: what every player that keeps a decision log
produces, the run's store keeps, and ``decisions.csv`` publishes.

The shared fields are the fixed columns of ``decisions.csv`` (:class:`pokebench.results.schema.DecisionRow`,
whose ``idx``, ``uid``, ``game_id`` and ``run`` the store and the publisher add); whatever else a player
records goes in ``extra`` (published as the JSON column ``extra``). None: the player does not know or say.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

__all__ = ["DecisionRecord", "SHARED_FIELDS"]


@dataclass
class DecisionRecord:
    side: str  # "p1" or "p2"
    player: str
    turn: int | None = None
    #: Decision number within the game (a re-ask keeps its decision's number).
    decision: int | None = None
    #: None for a player's answer; "consult", "tool_call"... for another API call of the game.
    kind: str | None = None
    action: str | None = None
    reason: str | None = None
    raw: str | None = None
    invalid: str | None = None
    reask: bool | None = None
    refusal: bool | None = None
    refusal_error: str | None = None
    random_pick: bool | None = None
    #: The model asked (its config's id); None for a player that asks no model.
    model: str | None = None
    served_model: str | None = None
    input_tokens: int | None = None
    cached_input_tokens: int | None = None
    cache_write_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The flat form the store keeps: the shared fields, then the extra ones."""
        flat = asdict(self)
        extra = flat.pop("extra")
        return {**flat, **extra}

    @classmethod
    def from_dict(cls, flat: Mapping[str, Any]) -> "DecisionRecord":
        """A record from its flat form (a stored entry); a field that is not shared goes to ``extra``."""
        shared = {k: v for k, v in flat.items() if k in SHARED_FIELDS}
        return cls(**shared, extra={k: v for k, v in flat.items() if k not in SHARED_FIELDS})


#: The fields every record has (the fixed columns of decisions.csv that a player fills).
SHARED_FIELDS = tuple(f.name for f in fields(DecisionRecord) if f.name != "extra")
