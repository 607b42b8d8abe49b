"""The progress bar of a run: games done of total, wins so far, and for LLM players answers, tokens and spend.

Games move the bar; an LLM's answers move its text as they arrive. :meth:`Progress.follow` reads the
answers of the games in flight (:meth:`pokebench.play.arena.Arena.live_decisions`) once a second, so a
run whose games take minutes shows its answers, tokens and spend growing long before a game ends.

On a terminal the bar redraws in place. Written to anything else (a file, a pipe, CI's log, ``nohup``) a
redraw would be one more chunk of the file each time: there the bar is :class:`pokebench.bars.PlainLines`, one
plain line at most every :data:`pokebench.bars.PLAIN_EVERY` seconds (``POKEBENCH_PROGRESS_EVERY`` sets it) and
one at the end.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Callable, Iterable

from pokebench.bars import PlainLines, progress_bar
from pokebench.play.arena import GameResult, HarnessError, NotStarted
from pokebench.player.decisions import DecisionRecord

#: Seconds between two readings of the answers of the games in flight.
FOLLOW_EVERY = 1.0
class Progress:
    """A tqdm bar: games done of total, wins so far per player, harness errors, and the answers, tokens and
    spend of LLM players (finished games and games in flight), rate and time left."""

    def __init__(self, total: int, done: int, name: str) -> None:
        self.bar = progress_bar(total, name, "game", initial=done)
        self.wins: Counter[str] = Counter()
        self.errors = 0
        self.finished: Counter[str] = Counter()  # answers, tokens and spend of the games that ended (this start)

    def plan_more(self, games: int) -> None:
        """A sequential run planned ``games`` more games: the bar's total grows (one bar for all its steps)."""
        self.bar.total = (self.bar.total or 0) + games
        self._redraw()

    def add(self, outcome: GameResult | HarnessError | NotStarted) -> None:
        """A game ended (or was not started)."""
        if isinstance(outcome, GameResult):
            winner = outcome.record["winner"]
            self.wins[getattr(outcome.spec, winner) if winner in ("p1", "p2") else "ties"] += 1
        elif isinstance(outcome, HarnessError):
            self.errors += 1
        if not isinstance(outcome, NotStarted):
            self.finished += answer_totals(outcome.decisions)
        self.bar.set_postfix_str(self._text(), refresh=False)
        if isinstance(outcome, GameResult):
            self.bar.update(1)  # after the text, so that a line written now says this game's winner too
        self._redraw()

    def show(self, in_flight: Iterable[DecisionRecord] = ()) -> None:
        """Redraw the text after the bar; `in_flight`: the answers so far of the games still being played."""
        self.bar.set_postfix_str(self._text(in_flight), refresh=False)
        self._redraw()

    def _text(self, in_flight: Iterable[DecisionRecord] = ()) -> str:
        totals = self.finished + answer_totals(in_flight)
        parts = [f"{k} {v}" for k, v in self.wins.most_common()]
        if self.errors:
            parts.append(f"harness errors {self.errors}")
        if totals["answers"]:
            parts.append(answers_text(totals))
        return " · ".join(parts)

    def _redraw(self) -> None:
        """At once on a terminal; as a plain line only when one is due."""
        if not isinstance(self.bar, PlainLines) or self.bar.due():
            self.bar.refresh()

    async def follow(self, live_decisions: Callable[[], list[DecisionRecord]]) -> None:
        """Redraw with the answers of the games in flight every :data:`FOLLOW_EVERY` seconds, until cancelled."""
        while True:
            await asyncio.sleep(FOLLOW_EVERY)
            self.show(live_decisions())

    def close(self) -> None:
        self.bar.close()


def answer_totals(decisions: Iterable[DecisionRecord]) -> Counter[str]:
    """Answers (an entry of a model, as an LLM player logs one), tokens and spend (micro-dollars)."""
    totals: Counter[str] = Counter()
    for d in decisions:
        if d.model is None:  # a bot's decision (the search bot logs its own): no model answered
            continue
        # a refinement or a consultation is spend, not an answer; nor is a request that ended in an error
        totals["answers"] += d.kind is None and d.extra.get("error") is None
        totals["input"] += d.input_tokens or 0
        totals["cached"] += d.cached_input_tokens or 0
        totals["output"] += d.output_tokens or 0
        totals["micro_usd"] += round((d.cost_usd or 0.0) * 1e6)
        totals["unpriced"] += d.cost_usd is None and d.output_tokens is not None  # a model of unknown prices
    return totals


def answers_text(totals: Counter[str]) -> str:
    """``26 answers · $0.4210 · 1.2M in (87% cached) · 30k out``; the cost "unknown" where no answer had a price."""
    cached = totals["cached"] / totals["input"] if totals["input"] else 0.0
    n = totals["answers"]
    return (f"{n} answer{'' if n == 1 else 's'} · {spend_text(totals['micro_usd'] / 1e6, totals['unpriced'])} · "
            f"{_k(totals['input'])} in "
            f"({cached:.0%} cached) · {_k(totals['output'])} out")


def spend_text(usd: float, unpriced: int) -> str:
    """`usd`, or "cost unknown" when `unpriced` answers (of a model whose prices are unknown) made it all, or
    "$X + N unpriced" when some did: never $0 for answers whose cost nobody knows."""
    if not unpriced:
        return f"${usd:.4f}"
    return "cost unknown" if usd == 0 else f"${usd:.4f} + {unpriced} unpriced"


def _k(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(int(n))
