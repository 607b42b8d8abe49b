"""PokéBench's battle text against an independent renderer of the same protocol, line by line.

The independent renderer is ``@pkmn/view``'s ``LogFormatter`` (a port of the Showdown client's own text
parser, tracked by ``@pkmn/client``'s ``Battle``), installed at set-up as a test-only npm package
(``showdown-server/oracle``) and run by :func:`pokebench.showdown.node.run_text_oracle` on games
replayed from their input logs. This module compares its text with :class:`BattleText`'s text of the
same messages, side by side.

Both texts are first brought to the same presentation: section breaks (blank lines), bold marks
(``**``), the HP hover (``||-93/302||30.8%||`` shows "30.8%") and indentation are set aside (the method
indents only under ability pop-ups; the client indents every minor event); the Showdown user names of
the oracle's text become "Player 1"/"Player 2", as in PokéBench's. What still differs is a *difference*;
a difference of a class in :data:`KEPT` is kept on purpose (each one is explained there and in a test),
any other one counts as changing the meaning.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from pokebench.text.renderer import BattleText

__all__ = ["Difference", "GameComparison", "Kept", "KEPT", "compare_game", "compare_lines", "summarize",
           "normalize_oracle", "normalize_ours"]

_HOVER = re.compile(r"\|\|[^|]*\|\|([^|]*)\|\|")


def normalize_ours(lines: Iterable[str]) -> list[str]:
    """PokéBench's lines without indentation."""
    return [line.strip() for line in lines if line.strip()]


def normalize_oracle(lines: Iterable[str], usernames: dict[str, str] | None = None) -> list[str]:
    """The oracle's lines as shown on screen: no section breaks, bold marks, hover text or indentation."""
    names = sorted((usernames or {}).items(), key=lambda item: -len(item[0]))
    out = []
    for line in lines:
        line = _HOVER.sub(r"\1", line).replace("**", "").strip()
        for name, side in names:
            line = re.sub(r"(?<!\w)" + re.escape(name) + r"(?!\w)", f"Player {side[1]}", line)
        if line:
            out.append(line)
    return out


@dataclass(frozen=True)
class Kept:
    """A class of difference kept on purpose: its name, why, and which (ours, oracle) it covers."""

    name: str
    why: str
    matches: Callable[[list[str], list[str]], bool]


def _capitalized(ours: list[str], oracle: list[str]) -> bool:
    return len(ours) == len(oracle) and ours != oracle and all(
        a == b or (a[:2] == b[:2].upper() and b[:1] == "(" and a[2:] == b[2:]) or (a[:1] == b[:1].upper() and a[1:] == b[1:])
        for a, b in zip(ours, oracle))


#: The differences kept on purpose. Anything else is a difference that changes the meaning.
KEPT: tuple[Kept, ...] = (
    Kept("capitalized line",
         "PokéBench starts every line with a capital. The client capitalizes the first line of a template "
         "only, so the second line of Shields Down's template reads '(the opposing Minior shielded itself.)'.",
         _capitalized),
)


@dataclass
class Difference:
    """Lines that differ at one place of one side's text: ours, the oracle's, and the class if kept."""

    game: str
    side: str
    ours: list[str]
    oracle: list[str]
    kept: str | None = None

    def describe(self) -> str:
        lines = [f"{self.game} {self.side}" + (f" (kept: {self.kept})" if self.kept else "")]
        lines += [f"  - ours:   {line}" for line in self.ours] + [f"  + oracle: {line}" for line in self.oracle]
        return "\n".join(lines)


@dataclass
class GameComparison:
    """One side of one game: line counts, identical lines and the differences."""

    game: str
    side: str
    lines: int  # the longer of the two texts
    identical: int
    differences: list[Difference] = field(default_factory=list)

    @property
    def meaning_changing(self) -> list[Difference]:
        return [d for d in self.differences if d.kept is None]


def compare_lines(ours: Sequence[str], oracle: Sequence[str], game: str = "", side: str = "") -> GameComparison:
    """Align two normalized texts (difflib) and classify every place where they differ."""
    matcher = difflib.SequenceMatcher(a=list(ours), b=list(oracle), autojunk=False)
    identical = sum(block.size for block in matcher.get_matching_blocks())
    result = GameComparison(game, side, max(len(ours), len(oracle)), identical)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a, b = list(ours[i1:i2]), list(oracle[j1:j2])
        kept = next((k.name for k in KEPT if k.matches(a, b)), None)
        result.differences.append(Difference(game, side, a, b, kept))
    return result


def _usernames(input_log: Sequence[str]) -> dict[str, str]:
    names = {}
    for line in input_log:
        match = re.match(r'^>player (p[12]) (\{.*\})$', line)
        if match:
            name = re.search(r'"name":"((?:[^"\\]|\\.)*)"', match.group(2))
            if name:
                names[name.group(1)] = match.group(1)
    return names


def compare_game(game: dict[str, Any], replayed: dict[str, Any]) -> list[GameComparison]:
    """Both sides of one game: `game` has ``id`` and ``input_log``; `replayed` is the oracle's output for it."""
    names = _usernames(game["input_log"])
    out = []
    for side in ("p1", "p2"):
        ours = normalize_ours(BattleText(side).feed(replayed[side]["chunks"]))
        oracle = normalize_oracle(replayed[side]["text"], names)
        out.append(compare_lines(ours, oracle, str(game["id"]), side))
    return out


def summarize(comparisons: Sequence[GameComparison]) -> dict[str, Any]:
    """The figures: lines, the share identical, differences (kept by class, and meaning-changing)."""
    lines = sum(c.lines for c in comparisons)
    identical = sum(c.identical for c in comparisons)
    kept = Counter(d.kept for c in comparisons for d in c.differences if d.kept)
    changing = [d for c in comparisons for d in c.meaning_changing]
    return {"sides": len(comparisons), "lines": lines, "identical": identical,
            "identical_share": identical / lines if lines else 1.0, "kept": dict(sorted(kept.items())),
            "meaning_changing": len(changing), "meaning_changing_examples": changing}
