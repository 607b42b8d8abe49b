"""The answer parser (pokebench.text.answers) on adversarial input: it reads what the old pattern read,
in time linear in the answer's length, and a number too long for Python's int() is refused, not raised."""

from __future__ import annotations

import random
import re
import time

import pytest

from pokebench.text import prompt
from pokebench.text.answers import match_action, parse_answer

#: The pattern the parser replaces (it backtracks: quadratic in a run of whitespace), as the reference of what to read.
_OLD_LINE = re.compile(r"^[\s>*_#`\-]*(ACTION|REASON)[\s*_`]*:[\s*_`]*(.*?)[\s*_`]*$", re.IGNORECASE)


def _old_parse(text: str) -> tuple[str | None, str | None]:
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = _OLD_LINE.match(line)
        if match:
            found[match.group(1).upper()] = match.group(2).strip()
    return found.get("ACTION"), found.get("REASON")


def test_the_parser_reads_what_the_old_pattern_read():
    rng = random.Random(7)
    pieces = ["ACTION", "action", "REASON", "Reason", "ACTIONS", ":", " ", "\t", "*", "_", "`", "#", ">", "-",
              "2", "move Rest", "x", "\n", "\u00a0", ". "]
    for _ in range(5000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 14)))
        parsed = parse_answer(text)
        assert (parsed.action, parsed.reason) == _old_parse(text), repr(text)


ADVERSARIAL = {
    "whitespace inside a reason": lambda n: "ACTION: 1\nREASON: a" + " " * n + "x",
    "emphasis inside an action": lambda n: "ACTION: " + "*_`" * (n // 3) + "1",
    "a key word without its colon": lambda n: "ACTION" + " " * n,
    "leading markup": lambda n: "> - # " * (n // 6) + "ACTION: 2",
    "many short lines": lambda n: "ACTION:*\n" * (n // 9),
    "a long number": lambda n: "ACTION: " + "9" * n,
}


def _seconds(text: str) -> float:
    """The CPU time of this thread (not the wall clock: a parallel test run's other work on the same cores
    must not count), the least of five."""
    best = float("inf")
    for _ in range(5):
        start = time.thread_time()
        match_action(parse_answer(text).action, LEGAL)
        best = min(best, time.thread_time() - start)
    return best


LEGAL = [prompt.LegalAction(t, None, False) for t in ("move Body Press", "move Rest")]  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", sorted(ADVERSARIAL))
def test_a_megabyte_of_adversarial_answer_takes_linear_time(kind):
    make = ADVERSARIAL[kind]
    small, large = _seconds(make(100_000)), _seconds(make(1_000_000))
    # ten times the text: about ten times the time when linear, a hundred times when quadratic
    assert large / max(small, 1e-6) < 35, f"{kind}: 100k chars {small:.4f} s, 1M chars {large:.4f} s"


def test_a_number_too_long_for_int_is_no_action():
    index, problem = match_action("9" * 5000, LEGAL)
    assert index is None and "There is no action 999999999999…" in problem
    index, problem = match_action("move Hyper Beam " * 1000, LEGAL)
    assert index is None and len(problem) < 400  # the model is quoted a bounded part of its answer
