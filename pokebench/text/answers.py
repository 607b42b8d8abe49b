"""Reading a model's answer (method §2): the last ``ACTION:`` and ``REASON:`` lines, and which legal action it names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from pokebench.text.prompt import LegalAction

__all__ = ["ParsedAnswer", "parse_answer", "match_action"]

_LINE = re.compile(r"^[\s>*_#`\-]*(ACTION|REASON)[\s*_`]*:[\s*_`]*(.*?)[\s*_`]*$", re.IGNORECASE)
_NUMBER = re.compile(r"^[\[(<#]*(\d+)[\])>]*(?:[.):,\-]|\s|$)")


@dataclass(frozen=True)
class ParsedAnswer:
    action: str | None
    reason: str | None


def parse_answer(text: str | None) -> ParsedAnswer:
    """The last ``ACTION:`` line and the last ``REASON:`` line (method §2); markdown emphasis is ignored."""
    action = reason = None
    for line in (text or "").splitlines():
        match = _LINE.match(line)
        if match:
            value = match.group(2).strip()
            if match.group(1).upper() == "ACTION":
                action = value
            else:
                reason = value
    return ParsedAnswer(action, reason)


def _normalize(text: str) -> str:
    text = text.strip().strip("\"'“”‘’<>").strip()
    return re.sub(r"\s+", " ", text.rstrip(".")).lower()


def match_action(answer: str | None, actions: Sequence[LegalAction]) -> tuple[int | None, str]:
    """The index of the action an ACTION value names, or None and the error the model gets.

    Accepted: the number of an action (``3``, ``3.``, ``[3]``, ``3. move Thunderbolt``), or its
    text as listed, ignoring case, spacing, quotes and a final period; the text without the
    leading ``move``/``switch`` is accepted when it names exactly one action.
    """
    if answer is None:
        return None, "Your answer has no ACTION line."
    value = _normalize(answer)
    if not value:
        return None, "Your ACTION line is empty."
    number = _NUMBER.match(value)
    if number:
        index = int(number.group(1))
        if 1 <= index <= len(actions):
            return index - 1, ""
        return None, f"There is no action {index}: the legal actions are numbered 1 to {len(actions)}."
    texts = [_normalize(a.text) for a in actions]
    if value in texts:
        return texts.index(value), ""
    bare = [i for i, t in enumerate(texts) if t.split(" ", 1)[-1] == value]
    if len(bare) == 1:
        return bare[0], ""
    return None, f'"{answer.strip()}" is not one of your legal actions.'
