"""Spending caps: ``budget_usd`` for a whole run and ``budget_usd`` per model.

Spend is what the stores say was spent (every answer of stored games and of voided
games) plus what this start spends, plus what players spend outside their games (a harness
refiner between epochs: :meth:`Budget.spend_outside`, all starts). Before a game starts the arena asks
:meth:`Budget.admit`: a game is not started when the spend so far, plus the expected
cost of the games in flight and of this one, would pass a cap. A game's expected cost is the player's mean
cost per stored game; before any is stored, the spend estimate's (:mod:`pokebench.play.spend_estimate`: its
assumed answers at the model's list prices), without which every game of a first start's concurrency was
started whatever the cap. A cap on a model whose prices are unknown is refused: its spend cannot be counted.
Games in flight finish (or are voided) and are kept. Raising the cap and starting the same command again plays
the rest: nothing is lost or counted twice, because budgets are not part of a run's identity.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from pokebench.games import GameSpec
from pokebench.play.spend_estimate import DECISIONS_PER_GAME, decision_usd


class BudgetError(ValueError):
    """A budget setting is not a positive number."""


def _cap(value: Any, where: str) -> float | None:
    if value is None:
        return None
    try:
        cap = float(value)
    except (TypeError, ValueError):
        cap = math.nan
    if not math.isfinite(cap) or cap <= 0:
        raise BudgetError(f"'{where}' must be a positive number of US dollars (or null for no cap), not {value!r}.")
    return cap


def _refusal(who: str, spent: float, ahead: float, cap: float, setting: str) -> str:
    """Why `who` may not start a game: what it spent of its cap and, short of it, what the games in flight and the
    next one are expected to cost on top."""
    more = f", and the games in flight and the next are expected to cost ${ahead - spent:.4f} more" if spent < cap else ""
    return f"{who} has spent ${spent:.4f} of its budget ${cap:g} ({setting}){more}"


@dataclass
class Budget:
    """The run's caps and its spend so far, per player (a model's name in the run)."""

    run_cap: float | None
    player_caps: dict[str, float]
    spent: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    games: Counter[str] = field(default_factory=Counter)
    in_flight: Counter[str] = field(default_factory=Counter)
    stopped: str | None = None  # why games were not started, once one was not
    stopped_by: str | None = None  # the setting of the cap that stopped them
    #: Spend outside the games (a refiner's, all starts) per player, in `spent` too; and what it was.
    outside: dict[str, float] = field(default_factory=dict)
    outside_notes: dict[str, str] = field(default_factory=dict)

    #: A game's expected cost per player before any of its games is stored (the spend estimate's).
    first_game: dict[str, float] = field(default_factory=dict)
    #: Pre-flight requests per player (all starts), in `spent` too.
    preflight: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_config(cls, run_cap: Any, players: Mapping[str, Mapping[str, Any]]) -> "Budget":
        caps, first_game, unpriced = {}, {}, []
        for name, options in players.items():
            model = options.get("model") if isinstance(options, Mapping) else None
            if not isinstance(model, Mapping):
                continue
            if isinstance(model.get("prices"), Mapping):
                first_game[name] = DECISIONS_PER_GAME * decision_usd(model)
            else:
                unpriced.append(name)
            if model.get("budget_usd") is not None:
                caps[name] = _cap(model["budget_usd"], f"players.{name}.model.budget_usd")
        budget = cls(_cap(run_cap, "budget_usd"), {k: v for k, v in caps.items() if v is not None},
                     first_game=first_game)
        capped = [f"players.{name}.model.budget_usd" for name in unpriced if name in budget.player_caps]
        if budget.run_cap is not None and unpriced:
            capped.insert(0, "budget_usd")
        if capped:
            raise BudgetError(f"{' and '.join(repr(c) for c in capped)} cannot be kept: the prices of "
                              f"{', '.join(unpriced)} are unknown (prices: unknown), so what it spends is not counted. "
                              f"Give its list prices (players.{unpriced[0]}.model.prices.input=..., output=...) or "
                              "drop the cap.")
        return budget

    @property
    def active(self) -> bool:
        return self.run_cap is not None or bool(self.player_caps)

    def load(self, spend: Mapping[str, Mapping[str, float]], games_per_player: Mapping[str, int]) -> None:
        """Start from what the run's stores hold (:meth:`RunStore.spend_by_player`)."""
        for player, row in spend.items():
            self.spent[player] += row.get("cost_usd") or 0.0
            self.preflight[player] = self.preflight.get(player, 0.0) + (row.get("preflight_cost_usd") or 0.0)
        self.games.update(games_per_player)

    def spend_outside_games(self, player: str, usd: float) -> None:
        """`player` spent `usd` more on no game (a pre-flight request of this start): it counts in every cap."""
        self.spent[player] += usd
        self.preflight[player] = self.preflight.get(player, 0.0) + usd

    def spend_outside(self, player: str, total: float, note: str = "") -> None:
        """`player`'s spend outside its games (all starts) is now `total` USD: it counts in every cap."""
        self.spent[player] += total - self.outside.get(player, 0.0)
        self.outside[player] = total
        self.outside_notes[player] = note

    def exhausted(self, player: str) -> str | None:
        """Why `player` may spend nothing more (its cap or the run's is reached), or None."""
        cap = self.player_caps.get(player)
        if cap is not None and self.spent[player] >= cap:
            return _refusal(player, self.spent[player], self.spent[player], cap, f"players.{player}.model.budget_usd")
        total = sum(self.spent.values())
        if self.run_cap is not None and total >= self.run_cap:
            return _refusal("the run", total, total, self.run_cap, "budget_usd")
        return None

    def _expected(self, player: str) -> float:
        """The player's mean cost per stored game (its spend outside the games left out); before any, the spend
        estimate's cost of a game."""
        in_games = self.spent[player] - self.outside.get(player, 0.0) - self.preflight.get(player, 0.0)
        return in_games / self.games[player] if self.games[player] else self.first_game.get(player, 0.0)

    def admit(self, spec: GameSpec) -> str | None:
        """None to start the game (and count it in flight), or why not."""
        players = sorted({spec.p1, spec.p2})
        for player in players:
            cap = self.player_caps.get(player)
            if cap is not None:
                ahead = self.spent[player] + (self.in_flight[player] + 1) * self._expected(player)
                if self.spent[player] >= cap or ahead > cap:
                    setting = f"players.{player}.model.budget_usd"
                    return self._stop(_refusal(player, self.spent[player], ahead, cap, setting), setting)
        if self.run_cap is not None:
            total = sum(self.spent.values())
            ahead = total + sum(n * self._expected(p) for p, n in self.in_flight.items()) + sum(
                self._expected(p) for p in players)
            if total >= self.run_cap or ahead > self.run_cap:
                return self._stop(_refusal("the run", total, ahead, self.run_cap, "budget_usd"), "budget_usd")
        self.in_flight.update(players)
        return None

    def _stop(self, reason: str, setting: str) -> str:
        if self.stopped is None:
            self.stopped, self.stopped_by = reason, setting
        return reason

    def cap_to_play(self, missing: Iterable[GameSpec]) -> tuple[str, float] | None:
        """The setting whose cap stopped the run, and a cap under which the `missing` games would start: the spend
        so far and their expected cost, a tenth more, rounded up to a cent. None if no cap stopped it."""
        if self.stopped_by is None:
            return None
        player = self.stopped_by.split(".")[1] if self.stopped_by.startswith("players.") else None
        if player is None:
            needed = sum(self.spent.values()) + sum(self._expected(s.p1) + self._expected(s.p2) for s in missing)
        else:
            needed = self.spent[player] + sum(self._expected(player) for s in missing if player in (s.p1, s.p2))
        return self.stopped_by, math.ceil(needed * 1.1 * 100) / 100

    def settle(self, outcome: Any) -> None:
        """A game ended (a result, or voided): its answers' cost is spent, it is no longer in flight."""
        stored = not getattr(outcome, "cause", None)  # a HarnessError has a cause
        for player in {outcome.spec.p1, outcome.spec.p2}:
            if self.in_flight[player] > 0:
                self.in_flight[player] -= 1
            if stored:
                self.games[player] += 1
        for decision in outcome.decisions:
            self.spent[decision.player] += decision.cost_usd or 0.0
