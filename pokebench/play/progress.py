"""The progress bar of a run: games done of total, wins so far, and for LLM players answers, tokens and spend.

Games move the bar; an LLM's answers move its text as they arrive. :meth:`Progress.follow` reads the
answers of the games in flight (:meth:`pokebench.play.arena.Arena.live_decisions`) once a second, so a
run whose games take minutes shows its answers, tokens and spend growing long before a game ends.

On a terminal the bar redraws in place. Written to anything else (a file, a pipe, CI's log, ``nohup``) a
redraw would be one more chunk of the file each time: there the bar is :class:`PlainLines`, one plain line at
most every :data:`PLAIN_EVERY` seconds (``POKEBENCH_PROGRESS_EVERY`` sets it) and one at the end.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import Counter
from typing import Any, Callable, Iterable

from tqdm import tqdm

from pokebench.play.arena import GameResult, HarnessError, NotStarted
from pokebench.player.decisions import DecisionRecord

#: Seconds between two readings of the answers of the games in flight.
FOLLOW_EVERY = 1.0
#: Seconds between two progress lines when the bar is not written to a terminal.
PLAIN_EVERY = 30.0


def plain_every() -> float:
    """:data:`PLAIN_EVERY`, or the seconds ``POKEBENCH_PROGRESS_EVERY`` gives (a number of seconds)."""
    text = os.environ.get("POKEBENCH_PROGRESS_EVERY")
    try:
        return max(0.0, float(text)) if text else PLAIN_EVERY
    except ValueError:
        raise ValueError(f"POKEBENCH_PROGRESS_EVERY must be a number of seconds (e.g. 30), not {text!r}; "
                         "unset it for the default") from None


class PlainLines(tqdm):
    """tqdm for a file or a pipe: each display a line of its own ending in a newline (no carriage returns, no
    bar drawn in characters; tqdm's figures as on a terminal), at most one every `every` seconds, and the last
    one when it closes."""

    def __init__(self, *args: Any, every: float, **kwargs: Any) -> None:
        super().__init__(*args, mininterval=every, miniters=1, leave=False, dynamic_ncols=False, ncols=None,
                         bar_format="{desc}: {percentage:3.0f}% | {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
                                    "{rate_fmt}{postfix}]", **kwargs)

    def display(self, msg: str | None = None, pos: int | None = None) -> bool:
        if msg is None:  # tqdm's own line ('' is its "clear the line", which a file needs not)
            self.fp.write(f"{self}\n")
            self.fp.flush()
        return msg is None

    def due(self) -> bool:
        """Whether a line written now keeps to the interval."""
        return self._time() - self.last_print_t >= self.mininterval  # tqdm's own clock and last line

    def close(self) -> None:
        if not self.disable:  # the last line: where the run ended
            self.refresh()
        super().close()


class Progress:
    """A tqdm bar: games done of total, wins so far per player, harness errors, and the answers, tokens and
    spend of LLM players (finished games and games in flight), rate and time left."""

    def __init__(self, total: int, done: int, name: str) -> None:
        if sys.stderr.isatty():
            self.bar = tqdm(total=total, initial=done, desc=name, unit="game", dynamic_ncols=True)
        else:
            self.bar = PlainLines(total=total, initial=done, desc=name, unit="game", every=plain_every())
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
        totals["answers"] += d.kind is None  # a refinement or a consultation is spend, not an answer
        totals["input"] += d.input_tokens or 0
        totals["cached"] += d.cached_input_tokens or 0
        totals["output"] += d.output_tokens or 0
        totals["micro_usd"] += round((d.cost_usd or 0.0) * 1e6)
    return totals


def answers_text(totals: Counter[str]) -> str:
    """``26 answers · $0.4210 · 1.2M in (87% cached) · 30k out``."""
    cached = totals["cached"] / totals["input"] if totals["input"] else 0.0
    n = totals["answers"]
    return (f"{n} answer{'' if n == 1 else 's'} · ${totals['micro_usd'] / 1e6:.4f} · {_k(totals['input'])} in "
            f"({cached:.0%} cached) · {_k(totals['output'])} out")


def _k(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(int(n))
