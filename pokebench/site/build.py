"""The HTML of a published site (its plots are in :mod:`pokebench.site.plots`).

Static files that open from disk with no network: inline CSS, a little inline JS (the
pages work without it), SVG plots written by matplotlib. Every text that comes from the
data (player names, battle logs, LLM reasons) goes through :func:`html.escape`.

Pages (paths relative to the site folder):

- ``index.html``: leaderboard, ratings plot, head-to-head heat map, cost against rating;
- ``games.html``: every game, with links to its replay and input log;
- ``players/<player>.html``: a player's figures, settings, opponents and games;
- ``replays/<game_id>.html``: the battle turn by turn in the words of Showdown's battle
  log, with each LLM answer's action and reason (all turns shown; JS adds stepping).
"""

from __future__ import annotations

import html
import json
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence
from urllib.parse import quote

import numpy as np
import pandas as pd

from pokebench.site.plots import plot_cost, plot_ratings, save_svg

if TYPE_CHECKING:  # pragma: no cover

    from pokebench.results.publish import Results, RunData

__all__ = ["write_site", "split_turns", "replay_turns", "DASH"]

DASH = "—"  # a missing figure
TURN_RE = re.compile(r"^\s*== Turn (\d+) ==\s*$")
#: per-game counters and identities in a side's player info: not settings of the player
NOT_SETTINGS = {"player", "username", "decisions", "refusals", "choice_errors"}

CSS = """
:root { --fg:#1d2330; --muted:#5d6678; --line:#d8dce5; --bg:#fff; --alt:#f5f7fa; --accent:#2f5fb3; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); margin: 0 auto; max-width: 1100px; padding: 1rem 1.2rem 3rem; }
a { color: var(--accent); } a.name { white-space: nowrap; }
header.top { display: flex; gap: 1.2rem; align-items: baseline; border-bottom: 1px solid var(--line);
             margin-bottom: 1rem; flex-wrap: wrap; }
header.top .brand { font-weight: 700; font-size: 1.15rem; text-decoration: none; color: var(--fg); }
h1 { font-size: 1.5rem; margin: .4rem 0 .6rem; } h2 { font-size: 1.2rem; margin: 1.6rem 0 .5rem; }
.muted, .note { color: var(--muted); } .note { font-size: .85rem; }
table { border-collapse: collapse; margin: .4rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { padding: .28rem .55rem; border-bottom: 1px solid var(--line); text-align: left; vertical-align: top; }
th { background: var(--alt); font-weight: 600; }
td.num, th.num { text-align: right; } td.num, td.name { white-space: nowrap; }
.scroll { overflow-x: auto; }
table.h2h td, table.h2h th { text-align: center; font-size: .85rem; min-width: 3.2rem; }
table.h2h th.row { text-align: left; }
table.h2h td.self { background: #e9ebef; color: #999; }
table.h2h td.none { color: #aaa; }
img.plot { max-width: 100%; height: auto; border: 1px solid var(--line); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: .5rem 0 1rem; }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
.stepper { position: sticky; top: 0; background: var(--bg); padding: .5rem 0; border-bottom: 1px solid var(--line);
           display: flex; gap: .6rem; align-items: center; z-index: 1; }
.stepper button { font: inherit; padding: .25rem .8rem; cursor: pointer; }
.replay { display: grid; grid-template-columns: 9rem 1fr; gap: 1.2rem; }
nav.turns ol { list-style: none; padding: 0; margin: 0; max-height: 80vh; overflow-y: auto; position: sticky; top: 3.2rem; }
nav.turns li a { display: block; padding: .1rem .4rem; text-decoration: none; border-radius: 3px; }
nav.turns li a.current { background: var(--accent); color: #fff; }
section.turn { border-top: 1px solid var(--line); padding: .2rem 0 .8rem; }
section.turn h2 { margin: .6rem 0 .4rem; }
.log .line { white-space: pre-wrap; margin: .05rem 0; }
.answer { background: var(--alt); border-left: 4px solid var(--accent); padding: .35rem .6rem; margin: .3rem 0; }
.answer.p2 { border-left-color: #c0392b; }
.answer .who { font-weight: 600; } .answer .action { font-family: ui-monospace, monospace; }
.tag { display: inline-block; font-size: .75rem; padding: 0 .35rem; border-radius: 3px; background: #fde8c8; margin-left: .3rem; }
body.js section.turn { display: none; } body.js section.turn.current { display: block; }
body.js.all section.turn { display: block; }
@media (max-width: 700px) { .replay { grid-template-columns: 1fr; } nav.turns ol { max-height: 10rem; position: static; } }
"""

REPLAY_JS = """
(function () {
  var secs = Array.prototype.slice.call(document.querySelectorAll('section.turn'));
  var bar = document.getElementById('stepper');
  if (!secs.length || !bar) return;
  var links = Array.prototype.slice.call(document.querySelectorAll('nav.turns a'));
  var prev = document.getElementById('prev'), next = document.getElementById('next');
  var label = document.getElementById('where'), all = document.getElementById('all');
  var cur = 0;
  document.body.classList.add('js');
  bar.hidden = false;
  function show(i, push) {
    cur = Math.max(0, Math.min(secs.length - 1, i));
    secs.forEach(function (s, k) { s.classList.toggle('current', k === cur); });
    links.forEach(function (a) { a.classList.toggle('current', a.getAttribute('href') === '#' + secs[cur].id); });
    label.textContent = secs[cur].getAttribute('data-label') + ' (' + (cur + 1) + ' of ' + secs.length + ')';
    prev.disabled = cur === 0; next.disabled = cur === secs.length - 1;
    if (push && history.replaceState) history.replaceState(null, '', '#' + secs[cur].id);
  }
  function fromHash() {
    var id = location.hash.slice(1), k = 0;
    secs.forEach(function (s, j) { if (s.id === id) k = j; });
    show(k, false);
  }
  prev.addEventListener('click', function () { show(cur - 1, true); });
  next.addEventListener('click', function () { show(cur + 1, true); });
  all.addEventListener('click', function () {
    var on = document.body.classList.toggle('all');
    all.textContent = on ? 'Step by turn' : 'Show all turns';
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.target && /INPUT|TEXTAREA/.test(ev.target.tagName)) return;
    if (ev.key === 'ArrowLeft') show(cur - 1, true);
    if (ev.key === 'ArrowRight') show(cur + 1, true);
  });
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
"""


# ---- small helpers ------------------------------------------------------------------------

def e(value: Any) -> str:
    """Escaped text of any value (missing -> the dash)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    return html.escape(str(value), quote=True)


def _missing(x: Any) -> bool:
    return x is None or (isinstance(x, (float, np.floating)) and math.isnan(x)) or x is pd.NA


def fmt_elo(x: Any) -> str:
    return DASH if _missing(x) else f"{x:.0f}"


def fmt_interval(lo: Any, hi: Any) -> str:
    return DASH if _missing(lo) or _missing(hi) else f"{lo:.0f}–{hi:.0f}"


def fmt_cost(x: Any) -> str:
    if _missing(x):
        return DASH
    return f"${x:.4f}" if x < 0.1 else f"${x:.2f}"


def fmt_int(x: Any) -> str:
    return DASH if _missing(x) else f"{x:,.0f}"


def fmt_seconds(x: Any) -> str:
    return DASH if _missing(x) else f"{x:.1f} s"


def fmt_rate(x: Any) -> str:
    return DASH if _missing(x) else f"{100 * x:.1f}%"


def href(*parts: str) -> str:
    """A relative URL from path parts (each part percent-encoded, then escaped for HTML)."""
    return html.escape("/".join(quote(p) for p in parts), quote=True)


def page(title: str, body: str, depth: int = 0, script: str = "") -> str:
    up = "../" * depth
    nav = (f'<header class="top"><a class="brand" href="{up}index.html">PokéBench</a>'
           f'<a href="{up}index.html">Leaderboard</a><a href="{up}games.html">Games</a></header>')
    js = f"<script>{script}</script>" if script else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{e(title)}</title><style>{CSS}</style></head>\n<body>{nav}\n{body}\n{js}</body></html>\n")


def _heat(rate: float) -> str:
    """Background colour of a win rate: red (0) - white (0.5) - blue (1)."""
    lo, mid, hi = np.array([215, 48, 39]), np.array([255, 255, 255]), np.array([69, 117, 180])
    t = float(np.clip(rate, 0, 1))
    c = mid + (lo - mid) * (1 - 2 * t) if t < 0.5 else mid + (hi - mid) * (2 * t - 1)
    r, g, b = (int(round(v)) for v in c)
    text = "#fff" if abs(t - 0.5) > 0.35 else "#1d2330"
    return f"background:rgb({r},{g},{b});color:{text}"


def _winner_name(row: Any) -> str:
    return {"p1": row["p1"], "p2": row["p2"]}.get(row["winner"], "tie")


def _table(head: Sequence[tuple[str, bool]], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table from already-escaped cells; head is (label, numeric) pairs."""
    th = "".join(f'<th class="num">{e(h)}</th>' if num else f"<th>{e(h)}</th>" for h, num in head)
    body = []
    for row in rows:
        body.append("<tr>" + "".join(f'<td class="num">{c}</td>' if num else f"<td>{c}</td>"
                                     for c, (_, num) in zip(row, head)) + "</tr>")
    return (f'<div class="scroll"><table class="{cls}"><thead><tr>{th}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


# ---- replays ----------------------------------------------------------------------------------

def split_turns(lines: Iterable[str]) -> list[tuple[int, list[str]]]:
    """Battle-log lines split on the ``== Turn N ==`` lines: [(0, lines before turn 1),
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


def replay_turns(record: dict[str, Any]) -> list[tuple[int, list[str]]]:
    """A game's battle log in English (spectator's view), split into turns."""
    from pokebench.text.battle_text import render_battle

    return split_turns(render_battle(record.get("log") or [], perspective=None))


def _answer_html(row: dict[str, Any], side_names: dict[str, str]) -> str:
    side = str(row.get("side") or "")
    who = f"{'Player 1' if side == 'p1' else 'Player 2' if side == 'p2' else e(side)} ({e(row.get('player') or side_names.get(side))})"
    tags = "".join(f'<span class="tag">{label}</span>' for flag, label in
                   (("reask", "re-ask"), ("refusal", "refused by the simulator"), ("random_pick", "random pick"))
                   if row.get(flag) is True or row.get(flag) == 1)
    action = row.get("action")
    reason = row.get("reason")
    parts = [f'<span class="who">{who}</span>{tags}',
             f'<div>Action: <span class="action">{e(action) if not _missing(action) else DASH}</span></div>']
    if not _missing(reason) and str(reason).strip():
        parts.append(f'<div class="reason">Reason: {e(reason)}</div>')
    return f'<div class="answer {e(side)}">{"".join(parts)}</div>'


def render_replay(game: dict[str, Any], turns: list[tuple[int, list[str]]], answers: pd.DataFrame,
                  slugs: dict[str, str], partner: str | None, file_id: str) -> str:
    """The replay page of one game (all turns in the page; JS shows one at a time)."""
    side_names = {"p1": game["p1"], "p2": game["p2"]}
    by_turn: dict[int, list[dict[str, Any]]] = {}
    known = [t for t, _ in turns] or [0]
    if not answers.empty:
        order = [c for c in ("turn", "side", "idx") if c in answers.columns]
        rows = answers.sort_values(order, kind="stable").to_dict("records") if order else answers.to_dict("records")
        for row in rows:
            if row.get("kind") == "refine":  # the Continual Harness's own refinement, not an answer of this game
                continue
            t = row.get("turn")
            t = 0 if _missing(t) else int(t)
            target = max([k for k in known if k <= t], default=known[0])
            by_turn.setdefault(target, []).append(row)

    sections, links = [], []
    for n, lines in turns:
        sid = f"turn-{n}"
        label = "Start" if n == 0 else f"Turn {n}"
        links.append(f'<li><a href="#{sid}">{label}</a></li>')
        answers_html = "".join(_answer_html(r, side_names) for r in by_turn.get(n, []))
        log_html = "".join(f'<div class="line">{html.escape(line)}</div>' for line in lines)
        sections.append(f'<section class="turn" id="{sid}" data-label="{label}"><h2>{label}</h2>'
                        f'{answers_html}<div class="log">{log_html}</div></section>')
    winner = _winner_name(game)
    result = "a tie" if game["winner"] == "tie" else f"{e(winner)} won ({e(game['winner'])})"
    p1, p2 = game["p1"], game["p2"]
    facts = [
        ("Player 1", f'<a href="{href("..", "players", slugs[p1] + ".html")}">{e(p1)}</a>'),
        ("Player 2", f'<a href="{href("..", "players", slugs[p2] + ".html")}">{e(p2)}</a>'),
        ("Result", f"{result} after {e(game['turns'])} turns; end: {e(game['end_reason'])}"),
        ("Run / matchup", f"{e(game['run'])} / {e(game['matchup'])}, pair {e(game['pair'])}, game {e(game['game'])}"),
        ("Seeds", f"battle {e(game['battle_seed'])}; team 1 {e(game['p1_team_seed'])}; team 2 {e(game['p2_team_seed'])}"),
        ("Showdown", e(game["showdown_version"])),
        ("Input log", f'<a href="{href("..", "inputlogs", file_id + ".log")}">inputlogs/{e(file_id)}.log</a> '
                      '(replays the game exactly)'),
    ]
    if partner:
        facts.append(("Mirror game", f'<a href="{href(partner + ".html")}">{e(partner)}</a> (same seeds, sides swapped)'))
    body = (f"<h1>{e(p1)} vs {e(p2)}</h1>"
            f"<p class=\"muted\">Game {e(game['game_id'])}</p>"
            "<dl class=\"facts\">" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
            '<div class="stepper" id="stepper" hidden><button type="button" id="prev">&larr; Prev</button>'
            '<button type="button" id="next">Next &rarr;</button><span id="where"></span>'
            '<button type="button" id="all">Show all turns</button></div>'
            f'<div class="replay"><nav class="turns" aria-label="Turns"><ol>{"".join(links)}</ol></nav>'
            f'<div class="battle">{"".join(sections) or "<p>No battle log was recorded.</p>"}</div></div>')
    return page(f"{p1} vs {p2} · {game['game_id']}", body, depth=1, script=REPLAY_JS)


# ---- the other pages ------------------------------------------------------------------------

LEADERBOARD_HEAD = [("Rank", True), ("Player", False), ("Elo", True), ("95% interval", True), ("Games", True),
                    ("W/T/L", True), ("Cost / game", True), ("Output tokens / decision", True),
                    ("Time / decision", True), ("Re-ask rate", True), ("Random-pick rate", True)]


def _leaderboard(results: "Results", slugs: dict[str, str], depth: int = 0) -> str:
    rows = []
    up = [".."] * depth
    for r in results.ratings.to_dict("records"):
        name = f'<a class="name" href="{href(*up, "players", slugs[r["player"]] + ".html")}">{e(r["player"])}</a>'
        if r["player"] == results.anchor:
            name += ' <span class="muted">(anchor)</span>'
        rows.append([fmt_int(r["rank"]), name, fmt_elo(r["elo"]), fmt_interval(r["ci_low"], r["ci_high"]),
                     fmt_int(r["games"]), f"{int(r['wins'])}/{int(r['ties'])}/{int(r['losses'])}", fmt_cost(r.get("cost_per_game")),
                     fmt_int(r.get("output_tokens_per_decision")), fmt_seconds(r.get("seconds_per_decision")),
                     fmt_rate(r.get("reask_rate")), fmt_rate(r.get("random_pick_rate"))])
    return _table(LEADERBOARD_HEAD, rows, cls="leaderboard")


def _h2h_table(results: "Results", slugs: dict[str, str]) -> str:
    players = list(results.ratings["player"])
    cells = {(p, o): (w, g, wi, t, lo) for p, o, w, g, wi, t, lo in zip(
        results.h2h["player"], results.h2h["opponent"], results.h2h["win_rate"], results.h2h["games"],
        results.h2h["wins"], results.h2h["ties"], results.h2h["losses"])}
    head = "".join(f"<th>{e(o)}</th>" for o in players)
    rows = []
    for p in players:
        tds = []
        for o in players:
            if p == o:
                tds.append('<td class="self">—</td>')
            elif (p, o) in cells:
                w, g, wi, t, lo = cells[(p, o)]
                tds.append(f'<td style="{_heat(w)}" title="{e(p)} vs {e(o)}: {wi}/{t}/{lo} (W/T/L) in {g} games">'
                           f"{100 * w:.0f}%<br><small>{g}</small></td>")
            else:
                tds.append('<td class="none" title="never met">·</td>')
        rows.append(f'<tr><th class="row"><a href="{href("players", slugs[p] + ".html")}">{e(p)}</a></th>{"".join(tds)}</tr>')
    return (f'<div class="scroll"><table class="h2h"><thead><tr><th>player \\ opponent</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _games_table(games: pd.DataFrame, depth: int, player: str | None = None,
                 slugs: dict[str, str] | None = None) -> str:
    up = [".."] * depth
    head = [("Game", False), ("Run", False), ("Player 1", False), ("Player 2", False), ("Winner", False),
            ("Turns", True), ("End", False), ("Input log", False)]
    if player is not None:
        head = [("Game", False), ("Opponent", False), ("Side", False), ("Result", False), ("Turns", True),
                ("End", False), ("Input log", False)]
    rows = []
    for g in games.to_dict("records"):
        fid = g["_file"]
        link = f'<a href="{href(*up, "replays", fid + ".html")}">{e(g["game_id"])}</a>'
        log = f'<a href="{href(*up, "inputlogs", fid + ".log")}">log</a>'
        if player is None:
            rows.append([link, e(g["run"]), e(g["p1"]), e(g["p2"]), e(_winner_name(g)), fmt_int(g["turns"]),
                         e(g["end_reason"]), log])
        else:
            side = "p1" if g["p1"] == player else "p2"
            opp = g["p2"] if side == "p1" else g["p1"]
            res = "tie" if g["winner"] == "tie" else "win" if g["winner"] == side else "loss"
            opp_link = f'<a href="{href(slugs[opp] + ".html")}">{e(opp)}</a>' if slugs and opp in slugs else e(opp)
            rows.append([link, opp_link, "Player 1" if side == "p1" else "Player 2", res, fmt_int(g["turns"]),
                         e(g["end_reason"]), log])
    return _table(head, rows, cls="games")


def _settings(data: "RunData", games: pd.DataFrame, player: str) -> tuple[dict[str, Any], dict[str, int]]:
    """Settings the player reported identically in all its games, and summed counters."""
    infos = []
    for g in games.to_dict("records"):
        side = "p1" if g["p1"] == player else "p2"
        info = data.players.get(g["game_id"], {}).get(side)
        if isinstance(info, dict):
            infos.append(info)
    if not infos:
        return {}, {}
    keys = set(infos[0]).intersection(*infos[1:]) - NOT_SETTINGS
    settings = {k: infos[0][k] for k in sorted(keys)
                if all(json.dumps(i[k], sort_keys=True, default=str) == json.dumps(infos[0][k], sort_keys=True, default=str)
                       for i in infos)}
    counters = {}
    for k in ("decisions", "refusals"):
        vals = [i.get(k) for i in infos if isinstance(i.get(k), (int, float)) and not isinstance(i.get(k), bool)]
        if vals:
            counters[k] = int(sum(vals))
    return settings, counters


def render_player(player: str, data: "RunData", results: "Results", games: pd.DataFrame,
                  slugs: dict[str, str]) -> str:
    r = results.ratings.set_index("player").loc[player]
    facts = [("Rank", fmt_int(r["rank"])), ("Elo", fmt_elo(r["elo"])),
             ("95% interval", fmt_interval(r["ci_low"], r["ci_high"])),
             ("Games", fmt_int(r["games"])), ("Wins / ties / losses", f"{int(r['wins'])} / {int(r['ties'])} / {int(r['losses'])}"),
             ("Score rate", fmt_rate(r.get("win_rate")))]
    if not _missing(r.get("answers")):
        facts += [("Saved answers", fmt_int(r["answers"])), ("Cost per game", fmt_cost(r.get("cost_per_game"))),
                  ("Output tokens / decision", fmt_int(r.get("output_tokens_per_decision"))),
                  ("Time / decision", fmt_seconds(r.get("seconds_per_decision"))),
                  ("Re-ask rate", fmt_rate(r.get("reask_rate"))),
                  ("Random-pick rate", fmt_rate(r.get("random_pick_rate")))]
    settings, counters = _settings(data, games, player)
    if "decisions" in counters:
        facts.append(("Decisions", fmt_int(counters["decisions"])))
    if "refusals" in counters:
        facts.append(("Choices refused by the simulator", fmt_int(counters["refusals"])))
    settings_html = ""
    if settings:
        settings_html = ("<h2>Settings</h2><dl class=\"facts\">" + "".join(
            f"<dt>{e(k)}</dt><dd>{e(v if isinstance(v, str) else json.dumps(v, sort_keys=True, default=str))}</dd>"
            for k, v in settings.items()) + "</dl>")
    h2h = results.h2h[results.h2h["player"] == player]
    opp_rows = [[f'<a href="{href(slugs[o] + ".html")}">{e(o)}</a>', fmt_int(g), f"{w}/{t}/{lo}", fmt_rate(wr)]
                for o, g, w, t, lo, wr in zip(h2h["opponent"], h2h["games"], h2h["wins"], h2h["ties"],
                                              h2h["losses"], h2h["win_rate"])]
    body = (f"<h1>{e(player)}</h1>"
            "<dl class=\"facts\">" + "".join(f"<dt>{e(k)}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
            + settings_html
            + "<h2>Opponents</h2>"
            + _table([("Opponent", False), ("Games", True), ("W/T/L", True), ("Score rate", True)], opp_rows)
            + "<h2>Games</h2>" + _games_table(games, depth=1, player=player, slugs=slugs))
    return page(f"{player} · PokéBench", body, depth=1)


def render_index(data: "RunData", results: "Results", slugs: dict[str, str], has_cost_plot: bool) -> str:
    games = results.games
    versions = ", ".join(sorted(set(map(str, games["showdown_version"]))))
    n_err = len(results.errors)
    period = ""
    if "started_at" in games and "ended_at" in games and len(games):
        period = f"{str(games['started_at'].min())[:10]} to {str(games['ended_at'].max())[:10]}"
    facts = [("Runs", e(", ".join(data.names))), ("Games", fmt_int(len(games))),
             ("Players", fmt_int(len(results.ratings))), ("Showdown", e(versions)),
             ("Played", e(period) if period else DASH),
             ("Harness errors", f"{n_err} (left out of the ratings)")]
    files = " · ".join(f'<a href="{f}">{f}</a>' for f in ("ratings.csv", "h2h.csv", "games.csv")
                       + (("decisions.csv",) if not results.decisions.empty else ()))
    cost = ('<h2>Cost against rating</h2><img class="plot" src="cost.svg" alt="Cost per game against Elo for the '
            'LLM players">') if has_cost_plot else ""
    body = ("<h1>Leaderboard</h1>"
            "<dl class=\"facts\">" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts) + "</dl>"
            + _leaderboard(results, slugs)
            + f"<p class=\"note\">Bradley–Terry Elo fitted to all games at once (ties count half), with 95% "
              f"bootstrap intervals over mirror pairs; {e(results.anchor)} is fixed at 1000. "
              "Cost per game is the cost of one side of one game at list prices. Output tokens per decision "
              "counts the output (reasoning included once) of each saved answer with usage, re-asks and refused "
              "choices included. Time per decision runs from the request to the answer. Rates are shares of the "
              f"saved answers. {DASH}: no figure (bots, or not recorded).</p>"
            + '<h2>Ratings</h2><img class="plot" src="ratings.svg" alt="Elo of each player with its 95% interval">'
            + "<h2>Head to head</h2><p class=\"note\">Score rate of the row player against the column player "
              "(ties count half) and the number of games.</p>" + _h2h_table(results, slugs)
            + cost
            + f"<h2>Data</h2><p>{files} · input logs in <code>inputlogs/</code> · <a href=\"games.html\">all games</a></p>")
    return page("PokéBench leaderboard", body)


def render_games(games: pd.DataFrame) -> str:
    """All games (a ``_file`` column names each game's replay and input log files)."""
    body = "<h1>Games</h1>" + _games_table(games, depth=0)
    return page("Games · PokéBench", body)


# ---- the whole site ---------------------------------------------------------------------------

def _slugs(names: Iterable[str]) -> dict[str, str]:
    from pokebench.results.publish import safe_name

    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = safe_name(name)
        slug, k = base, 2
        while slug.lower() in used:
            slug, k = f"{base}-{k}", k + 1
        used.add(slug.lower())
        out[name] = slug
    return out


def write_site(root: Path, data: "RunData", results: "Results") -> None:
    """Write the HTML pages, the plots and ``inputlogs/`` into `root` (an existing folder)."""
    from pokebench.results.publish import input_log_text, safe_name

    root = Path(root)
    for sub in ("players", "replays", "inputlogs"):
        (root / sub).mkdir(exist_ok=True)
    slugs = _slugs(results.ratings["player"])
    games = results.games.assign(_file=[safe_name(g) for g in results.games["game_id"]])

    save_svg(plot_ratings(results.ratings, anchor=results.anchor), root / "ratings.svg")
    cost_fig = plot_cost(results.ratings)
    if cost_fig is not None:
        save_svg(cost_fig, root / "cost.svg")

    (root / "index.html").write_text(render_index(data, results, slugs, cost_fig is not None), encoding="utf-8")
    (root / "games.html").write_text(render_games(games), encoding="utf-8")
    for player in results.ratings["player"]:
        mine = games[(games["p1"] == player) | (games["p2"] == player)]
        (root / "players" / f"{slugs[player]}.html").write_text(
            render_player(player, data, results, mine, slugs), encoding="utf-8")

    decisions = results.decisions
    by_game = dict(tuple(decisions.groupby("game_id"))) if not decisions.empty else {}
    partner_of = {}
    for _, grp in games.groupby(["run", "matchup", "pair"]):
        if len(grp) == 2:
            a, b = grp["_file"].tolist()
            partner_of[a], partner_of[b] = b, a
    empty = pd.DataFrame()
    for game in games.to_dict("records"):
        record = data.record(game["game_id"])
        fid = game["_file"]
        (root / "inputlogs" / f"{fid}.log").write_text(input_log_text(record), encoding="utf-8")
        html_text = render_replay(game, replay_turns(record), by_game.get(game["game_id"], empty), slugs,
                                  partner_of.get(fid), fid)
        (root / "replays" / f"{fid}.html").write_text(html_text, encoding="utf-8")

