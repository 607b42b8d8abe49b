"""What a replay page shows: the text view by turn, the log for Showdown's viewer, team sheets, answers by turn."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from pokebench.results.loading import is_missing

__all__ = ["split_turns", "text_turns", "viewer_log", "script_text", "team_sheet", "answers_by_turn",
           "quality_by_turn"]

TURN_RE = re.compile(r"^\s*== Turn (\d+) ==\s*$")


def split_turns(lines: Iterable[str]) -> list[tuple[int, list[str]]]:
    """Battle-text lines split on the ``== Turn N ==`` lines: [(0, lines before turn 1),
    (1, lines of turn 1), ...]; the part before turn 1 is left out when empty."""
    sections: list[tuple[int, list[str]]] = [(0, [])]
    for line in lines:
        m = TURN_RE.match(line)
        if m:
            sections.append((int(m.group(1)), []))
        else:
            sections[-1][1].append(line)
    if not sections[0][1] and len(sections) > 1:
        sections.pop(0)
    return sections


def text_turns(log: list[str]) -> list[tuple[int, list[str]]]:
    """A game's battle log in Showdown's words (spectator's view), split into turns."""
    from pokebench.text.renderer import render_battle

    return split_turns(render_battle(log, perspective=None))


def viewer_log(log: list[str]) -> str:
    """The protocol log for Showdown's replay viewer: each ``|split|`` block gives its full-information line."""
    out, i = [], 0
    while i < len(log):
        if log[i].startswith("|split|"):
            out.extend(log[i + 1:i + 2])
            i += 3
            continue
        out.append(log[i])
        i += 1
    return "\n".join(out)


def script_text(text: str) -> str:
    """Text safe inside ``<script type="text/plain">``: every ``/`` as ``\\/``, as Showdown's own
    replay files write it (the viewer undoes it), so no ``</script>`` can end the block early; and
    ``<!--`` (which would change how the browser finds the block's end) as ``<\\!--``."""
    return text.replace("/", "\\/").replace("<!--", "<\\!--")


def team_sheet(team: list[dict[str, Any]] | None) -> list[str]:
    """A team in Showdown's export format, one string per Pokémon."""
    sheets = []
    for mon in team or []:
        name, species = mon.get("name") or mon.get("species"), mon.get("species")
        head = f"{name} ({species})" if species and species != name else str(name)
        lines = [head + (f" @ {mon['item']}" if mon.get("item") else "")]
        if mon.get("ability"):
            lines.append(f"Ability: {mon['ability']}")
        if mon.get("level"):
            lines.append(f"Level: {mon['level']}")
        if mon.get("teraType"):
            lines.append(f"Tera Type: {mon['teraType']}")
        evs = {k: v for k, v in (mon.get("evs") or {}).items() if v}
        if evs:
            lines.append("EVs: " + " / ".join(f"{v} {k.upper()}" for k, v in evs.items()))
        lines += [f"- {move}" for move in mon.get("moves") or []]
        sheets.append("\n".join(lines))
    return sheets


def _under_turn(turn: Any, known: list[int]) -> int:
    """The last text turn at or before `turn`."""
    t = 0 if is_missing(turn) else int(turn)
    return max([k for k in known if k <= t], default=known[0])


def quality_by_turn(rows: list[dict[str, Any]], turns: list[int]) -> dict[int, list[dict[str, Any]]]:
    """The engine's view of each decision (decision_quality.csv rows) under its text turn, side 1 first."""
    out: dict[int, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (int(r["turn"]), int(r["decision"]), str(r["side"]))):
        out.setdefault(_under_turn(row["turn"], turns or [0]), []).append(row)
    return out


def answers_by_turn(rows: list[dict[str, Any]], turns: list[int],
                    quality: dict[tuple[str, int], dict[str, Any]] | None = None) -> dict[int, list[dict[str, Any]]]:
    """Each answer under the last text turn at or before its own turn (refinement calls left out), with
    ``engine``: the engine's view of its decision (`quality`, by side and decision number) when scored."""
    known = turns or [0]
    out: dict[int, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: (0 if is_missing(r.get("turn")) else int(r["turn"]), str(r.get("side")),
                                           int(r.get("idx") or 0))):
        if not is_missing(row.get("kind")):  # a refinement or a consultation, not an answer of this turn
            continue
        extra = row.get("extra")
        row = dict(row, extra=json.loads(extra) if isinstance(extra, str) and extra else {})
        decision = None if is_missing(row.get("decision")) else (str(row.get("side")), int(row["decision"]))
        engine = (quality or {}).get(decision) if decision else None
        # the same decision when its turn agrees (a player that skipped a request would shift the numbers)
        row["engine"] = engine if engine is not None and int(engine["turn"]) == int(row.get("turn") or -1) else None
        out.setdefault(_under_turn(row.get("turn"), known), []).append(row)
    return out
