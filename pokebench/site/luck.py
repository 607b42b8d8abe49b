"""Luck on the site: each analysed game's win-probability graph, and the luck columns of the games table.

Drawn from the published folder's luck tables as :func:`pokebench.results.load_results` reads them (docs/results.md): ``luck.csv`` (one row per analysed game:
``luck_p1``, ``adjusted_p1``, ``error``) and ``luck_turns.csv`` (one row per analysed turn: ``v_before``, side
one's win probability before the turn from the full position, ``expected``, ``v_after``, ``luck_p1``,
``event``). A folder without them (its runs not analysed) has no graph and no luck column anywhere.

The graph of a game (:func:`win_graph`) is drawn as inline SVG by the replay page's template (no script, no
network): side one's win probability per turn as a line (side two's is its complement), each turn whose luck
is at least :data:`SWING_THRESHOLD` either way marked as a swing from what the turn was expected to give
(``expected``) to what it gave (``v_after``), named by its event, and each blunder (decision_quality.csv's
``blunder``: regret at least the analysis's threshold) marked on the line at its turn, with the player's
reason when it gave one.
"""

from __future__ import annotations

import math
from typing import Any

from pokebench.results.loading import is_missing

__all__ = ["SWING_THRESHOLD", "win_graph", "GRAPH_SIZE"]

#: A turn whose luck (``luck_p1``, either side) is at least this is a marked swing: a tenth of a win.
SWING_THRESHOLD = 0.1
#: The graph's drawing box (SVG user units; the page scales it to its width).
GRAPH_SIZE = (720, 220)
_LEFT, _RIGHT, _TOP, _BOTTOM = 40, 14, 12, 30


def _number(x: Any) -> float | None:
    if is_missing(x):
        return None
    value = float(x)
    return value if math.isfinite(value) else None


def _text(x: Any) -> str:
    return "" if is_missing(x) else str(x)


class _Axes:
    """Turns (x, from `first` to `last`) and win probability (y, 0 to 1) to SVG coordinates."""

    def __init__(self, first: float, last: float) -> None:
        self.first, self.span = first, max(last - first, 1.0)
        self.width, self.height = GRAPH_SIZE

    def x(self, turn: float) -> float:
        return round(_LEFT + (turn - self.first) / self.span * (self.width - _LEFT - _RIGHT), 1)

    def y(self, p: float) -> float:
        return round(_TOP + (1 - min(max(p, 0.0), 1.0)) * (self.height - _TOP - _BOTTOM), 1)


def _line(points: list[tuple[float, float | None]], axes: _Axes) -> str:
    """An SVG path through the points, broken where a value is missing (a turn the analysis could not value)."""
    parts, pen = [], "M"
    for turn, p in points:
        if p is None:
            pen = "M"
            continue
        parts.append(f"{pen}{axes.x(turn)},{axes.y(p)}")
        pen = "L"
    return " ".join(parts)


def _ticks(first: int, last: int) -> list[int]:
    """Turn labels on the x axis: every turn of a short game, a round step in a long one."""
    step = next(s for s in (1, 2, 5, 10, 20, 50, 100, 1000) if (last - first) / s <= 12)
    return [t for t in range(first, last + 1) if t == first or t % step == 0]


def _reasons(answers: list[dict[str, Any]]) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], str]]:
    """Each answer's reason by (side, decision number) and by (side, turn): the last answer of a decision
    (a re-ask's reason is the one its choice came with)."""
    by_decision: dict[tuple[str, int], str] = {}
    by_turn: dict[tuple[str, int], str] = {}
    for a in sorted(answers, key=lambda r: int(r.get("idx") or 0)):
        reason = _text(a.get("reason"))
        if not is_missing(a.get("kind")) or not reason or is_missing(a.get("action")):
            continue
        side = str(a.get("side"))
        if not is_missing(a.get("decision")):
            by_decision[(side, int(a["decision"]))] = reason
        if not is_missing(a.get("turn")):
            by_turn[(side, int(a["turn"]))] = reason
    return by_decision, by_turn


def _blunders(quality: list[dict[str, Any]], answers: list[dict[str, Any]], value_at: dict[int, float],
              axes: _Axes, players: dict[str, str]) -> list[dict[str, Any]]:
    by_decision, by_turn = _reasons(answers)
    marks = []
    for q in sorted(quality, key=lambda r: (int(r["turn"]), str(r["side"]), int(r["decision"]))):
        if is_missing(q.get("blunder")) or not bool(q["blunder"]):
            continue
        side, turn = str(q["side"]), int(q["turn"])
        reason = by_decision.get((side, int(q["decision"]))) or by_turn.get((side, turn)) or ""
        p = value_at.get(turn)
        marks.append({"kind": "blunder", "turn": turn, "side": side, "player": players.get(side, q.get("player")),
                      "action": _text(q.get("action")), "engine_action": _text(q.get("engine_action")),
                      "regret": _number(q.get("regret")), "reason": reason, "on_line": p is not None,
                      "x": axes.x(turn), "y": axes.y(0.5 if p is None else p)})
    return marks


def win_graph(turns: list[dict[str, Any]], quality: list[dict[str, Any]], answers: list[dict[str, Any]],
              players: dict[str, str]) -> dict[str, Any] | None:
    """What the replay page draws for one game from its ``luck_turns.csv`` rows (`turns`), its
    ``decision_quality.csv`` rows (`quality`) and its answers (decisions.csv rows, for the reasons); `players`
    names each side. None when no turn has a value (nothing to draw)."""
    rows = sorted((r for r in turns if not is_missing(r.get("turn"))), key=lambda r: int(r["turn"]))
    value_at = {int(r["turn"]): v for r in rows if (v := _number(r.get("v_before"))) is not None}
    if not value_at:
        return None
    first, last = int(rows[0]["turn"]), int(rows[-1]["turn"])
    end = _number(rows[-1].get("v_after"))
    axes = _Axes(first, last + 1 if end is not None else last)
    points: list[tuple[float, float | None]] = [(t, value_at.get(t)) for t in range(first, last + 1)]
    if end is not None:
        points.append((last + 1, end))
    swings = []
    for r in rows:
        luck, expected, after = (_number(r.get(k)) for k in ("luck_p1", "expected", "v_after"))
        if luck is None or expected is None or after is None or abs(luck) < SWING_THRESHOLD:
            continue
        turn, side = int(r["turn"]), "p1" if luck > 0 else "p2"
        top, low = sorted((axes.y(expected), axes.y(after)))
        swings.append({"kind": "swing", "turn": turn, "event": _text(r.get("event")) or "other", "luck": luck,
                       "side": side, "player": players.get(side), "expected": expected, "after": after,
                       "x": axes.x(turn + 0.5), "y_from": axes.y(expected), "y_to": axes.y(after),
                       "label_y": top - 4 if top > _TOP + 12 else low + 12})
    marks = sorted(swings + _blunders(quality, answers, value_at, axes, players),
                   key=lambda m: (m["turn"], m["kind"] != "blunder"))
    for k, mark in enumerate(marks, start=1):
        mark["id"] = f"mark-{k}"
    width, height = GRAPH_SIZE
    return {"width": width, "height": height, "line": _line(points, axes), "marks": marks,
            "left": _LEFT, "right": width - _RIGHT, "top": _TOP, "bottom": height - _BOTTOM,
            "grid": [{"p": p, "y": axes.y(p)} for p in (0.0, 0.25, 0.5, 0.75, 1.0)],
            "ticks": [{"turn": t, "x": axes.x(t)} for t in _ticks(first, last)],
            "end": None if end is None else {"x": axes.x(last + 1), "y": axes.y(end), "p": end},
            "points": [{"turn": t, "p": p, "x": axes.x(t), "y": axes.y(p)} for t, p in sorted(value_at.items())],
            "threshold": SWING_THRESHOLD}
