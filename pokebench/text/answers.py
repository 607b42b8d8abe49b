"""Reading a model's answer (method §2): the last ``ACTION:`` and ``REASON:`` lines, and which legal action it names."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol, Sequence

__all__ = ["ParsedAnswer", "parse_answer", "match_action", "Listed"]


class Listed(Protocol):
    """What matching an answer needs of a listed legal action (:class:`pokebench.text.prompt.LegalAction`)."""

    @property
    def text(self) -> str: ...

_NUMBER = re.compile(r"^[\[(<#]*(\d+)[\])>]*(?:[.):,\-]|\s|$)")
#: Characters around the key word and the colon of an ACTION/REASON line: markdown emphasis, quotes, bullets.
_LEAD = ">*_#`-"
_EMPHASIS = "*_`"
_KEYS = {"action": "ACTION", "reason": "REASON"}
#: How much of an answer an error message quotes back to the model.
QUOTE_CHARS = 200


@dataclass(frozen=True)
class ParsedAnswer:
    action: str | None
    reason: str | None


def _skip(text: str, start: int, chars: str) -> int:
    """The first index at or after `start` that holds neither whitespace nor one of `chars`."""
    while start < len(text) and (text[start] in chars or text[start].isspace()):
        start += 1
    return start


def _trim_end(text: str, chars: str) -> str:
    """`text` without its trailing whitespace and `chars`."""
    end = len(text)
    while end and (text[end - 1] in chars or text[end - 1].isspace()):
        end -= 1
    return text[:end]


def _key_line(line: str) -> tuple[str, str] | None:
    """("ACTION" or "REASON", the value) of one line, or None. Each character is looked at a bounded
    number of times, so the time is linear in the line's length, whatever a model writes."""
    start = _skip(line, 0, _LEAD)
    key = _KEYS.get(line[start:start + 6].lower())
    if key is None:
        return None
    colon = _skip(line, start + 6, _EMPHASIS)
    if line[colon:colon + 1] != ":":
        return None
    return key, _trim_end(line[_skip(line, colon + 1, _EMPHASIS):], _EMPHASIS).strip()


def parse_answer(text: str | None) -> ParsedAnswer:
    """The last ``ACTION:`` line and the last ``REASON:`` line (method §2); markdown emphasis is ignored."""
    found: dict[str, str] = {}
    for line in (text or "").splitlines():
        keyed = _key_line(line)
        if keyed is not None:
            found[keyed[0]] = keyed[1]
    return ParsedAnswer(found.get("ACTION"), found.get("REASON"))


def _normalize(text: str) -> str:
    text = text.strip().strip("\"'“”‘’<>").strip()
    return re.sub(r"\s+", " ", text.rstrip(".")).lower()


def match_action(answer: str | None, actions: Sequence[Listed]) -> tuple[int | None, str]:
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
        digits = number.group(1).lstrip("0") or "0"
        if len(digits) <= len(str(len(actions))) and 1 <= int(digits) <= len(actions):
            return int(digits) - 1, ""
        shown = digits if len(digits) <= 12 else digits[:12] + "…"  # Python refuses int() of 4,300+ digits
        return None, f"There is no action {shown}: the legal actions are numbered 1 to {len(actions)}."
    texts = [_normalize(a.text) for a in actions]
    if value in texts:
        return texts.index(value), ""
    bare = [i for i, t in enumerate(texts) if t.split(" ", 1)[-1] == value]
    if len(bare) == 1:
        return bare[0], ""
    quoted = answer.strip()
    quoted = quoted if len(quoted) <= QUOTE_CHARS else quoted[:QUOTE_CHARS] + "…"
    return None, f'"{quoted}" is not one of your legal actions.'
