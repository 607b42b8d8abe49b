"""Speed of the answer parser (pokebench.text.answers) on adversarial answers of 10k, 100k and 1M characters.

The parser reads each line with string methods (no backtracking pattern); the pattern it replaced,
``(.*?)[\\s*_`]*$``, took time growing with the square of a run of whitespace. Not a test: it prints
seconds and the ratio of each size to the one ten times smaller (about 10 when linear, 100 when
quadratic). The old pattern is timed only up to 20k characters (at 1M it would take hours). Run:

    .venv/bin/python benchmarks/answer_parser.py
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pokebench.text.answers import parse_answer  # noqa: E402

OLD_LINE = re.compile(r"^[\s>*_#`\-]*(ACTION|REASON)[\s*_`]*:[\s*_`]*(.*?)[\s*_`]*$", re.IGNORECASE)

ANSWERS: dict[str, Callable[[int], str]] = {
    "whitespace inside a reason": lambda n: "ACTION: 1\nREASON: a" + " " * n + "x",
    "emphasis inside an action": lambda n: "ACTION: " + "*_`" * (n // 3) + "1",
    "leading markup": lambda n: "> - # " * (n // 6) + "ACTION: 2",
    "many short lines": lambda n: "ACTION:*\n" * (n // 9),
}


def seconds(parse: Callable[[str], object], text: str, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        parse(text)
        best = min(best, time.perf_counter() - start)
    return best


def old_parse(text: str) -> None:
    for line in text.splitlines():
        OLD_LINE.match(line)


def main() -> None:
    print(f"{'answer':30} {'chars':>9} {'new s':>9} {'ratio':>6} {'old s':>9}")
    for name, make in ANSWERS.items():
        previous = None
        for n in (10_000, 100_000, 1_000_000):
            new = seconds(parse_answer, make(n))
            old = f"{seconds(old_parse, make(n), 1):9.4f}" if n <= 20_000 else "        -"
            ratio = f"{new / previous:6.1f}" if previous else "      "
            print(f"{name:30} {n:9,} {new:9.4f} {ratio} {old}")
            previous = new
        print(f"{name:30} {20_000:9,} {'':9} {'':6} {seconds(old_parse, make(20_000), 1):9.4f}  (old, 2x 10k)")


if __name__ == "__main__":
    main()
