"""What a replay page shows: the text view by turn, the log for Showdown's viewer, team sheets, answers by turn."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from pokebench.results.loading import is_bot_row, is_missing

__all__ = ["split_turns", "text_turns", "viewer_log", "script_text", "team_sheet", "answers_by_turn",
           "quality_by_turn", "team_states", "side_totals"]

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


def _condition(text: str) -> tuple[int | None, str | None]:
    """HP percent and status of a protocol condition (``150/236 brn``, ``0 fnt``, ``63/100``)."""
    hp, _, status = text.partition(" ")
    if hp == "0":
        return 0, "fnt"
    cur, _, top = hp.partition("/")
    if not (cur.isdigit() and top.isdigit()) or int(top) == 0:
        return None, status or None
    return max(1, round(100 * int(cur) / int(top))) if int(cur) else 0, status or None


_TRACKED = {"switch", "drag", "replace", "-damage", "-heal", "-sethp", "-status", "-curestatus", "faint",
            "-terastallize", "detailschange"}


def team_states(log: list[str], teams: dict[str, Any]) -> dict[int | str, dict[str, list[dict[str, Any]]]]:
    """Both teams at the start of each turn (key: the turn) and after the last (key ``"end"``), from the
    full-information log: per Pokémon its name, species, HP percent, status, whether it is out and whether
    it terastallized; team-sheet Pokémon not yet seen are listed at full HP."""
    mons: dict[str, dict[str, dict[str, Any]]] = {"p1": {}, "p2": {}}
    for side in mons:
        for sheet in teams.get(side) or []:
            name = str(sheet.get("name") or sheet.get("species"))
            mons[side][name] = {"name": name, "species": sheet.get("species") or name, "hp": 100, "status": None,
                                "active": False, "tera": None, "seen": False}

    def by_ident(ident: str) -> tuple[str, dict[str, Any]] | None:
        side, _, name = ident.partition(": ")
        side = side[:2]
        if side not in mons or not name:
            return None
        return side, mons[side].setdefault(name, {"name": name, "species": name, "hp": 100, "status": None,
                                                 "active": False, "tera": None, "seen": True})

    def snapshot() -> dict[str, list[dict[str, Any]]]:
        return {side: [dict(m) for m in team.values()] for side, team in mons.items()}

    states: dict[int | str, dict[str, list[dict[str, Any]]]] = {}
    for line in viewer_log(log).splitlines():
        parts = line.split("|")
        if len(parts) < 3:
            continue
        kind = parts[1]
        if kind == "turn" and parts[2].isdigit():
            states[int(parts[2])] = snapshot()
        found = by_ident(parts[2]) if kind in _TRACKED else None
        if found is None:
            continue
        side, m = found
        if kind in ("switch", "drag", "replace"):
            for other in mons[side].values():
                other["active"] = False
            m.update(active=True, seen=True, species=parts[3].split(",")[0] if len(parts) > 3 else m["species"])
        if kind in ("switch", "drag", "-damage", "-heal", "-sethp") and len(parts) > 3 and parts[3]:
            hp, status = _condition(parts[3])
            if hp is not None:
                m.update(hp=hp, status=status)
        elif kind == "-status" and len(parts) > 3:
            m["status"] = parts[3]
        elif kind == "-curestatus":
            m["status"] = None
        elif kind == "faint":
            m.update(hp=0, status="fnt")
        elif kind == "-terastallize" and len(parts) > 3:
            m["tera"] = parts[3]
        elif kind == "detailschange" and len(parts) > 3:
            m["species"] = parts[3].split(",")[0]
    states["end"] = snapshot()
    return states


def side_totals(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per side of a game, over its decisions.csv rows: for a model's side its calls' answers, re-asks, random
    picks, tokens in (cached) and out (reasoning), cost and time; for a bot's side (``bot``: no row names a
    model) its decisions and their time (``seconds_per_decision``); sides with no rows are left out."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        t = out.setdefault(str(row.get("side")), {"player": row.get("player"), "bot": True, "calls": 0, "answers": 0,
                                                   "reasks": 0, "random_picks": 0, "input_tokens": None,
                                                   "cached_input_tokens": None, "output_tokens": None,
                                                   "reasoning_tokens": None, "cost_usd": None, "latency_s": None})
        t["calls"] += 1
        t["bot"] = t["bot"] and is_bot_row(row)
        if is_missing(row.get("kind")):
            t["answers"] += 1
            t["reasks"] += bool(row.get("reask"))
            t["random_picks"] += bool(row.get("random_pick"))
        for key in ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_tokens", "cost_usd",
                    "latency_s"):
            if not is_missing(row.get(key)):
                t[key] = (t[key] or 0) + row[key]
    for t in out.values():
        t["seconds_per_decision"] = t["latency_s"] / t["calls"] if t["bot"] and t["latency_s"] is not None else None
    return dict(sorted(out.items()))


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
        row = dict(row, extra=json.loads(extra) if isinstance(extra, str) and extra else {}, bot=is_bot_row(row))
        decision = None if is_missing(row.get("decision")) else (str(row.get("side")), int(row["decision"]))
        engine = (quality or {}).get(decision) if decision else None
        # the same decision when its turn agrees (a player that skipped a request would shift the numbers)
        row["engine"] = engine if engine is not None and int(engine["turn"]) == int(row.get("turn") or -1) else None
        out.setdefault(_under_turn(row.get("turn"), known), []).append(row)
    return out
