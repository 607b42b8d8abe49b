"""The published site in a real browser (headless Chromium, from disk).

Install the browser with `apt-get install -y chromium` (Debian/Ubuntu); without it these
tests are skipped. Showdown's replay viewer is replaced by a stand-in script served from a
local HTTP server (no test needs the network); "no network" is Chromium resolving no host.
"""

from __future__ import annotations

import functools
import html
import http.server
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Iterator

import pandas as pd
import pytest

from pokebench.publish import publish
from pokebench.site import build_site
from support.luck_tables import LuckGames, add_luck
from support.synthetic_runs import BOTS, EVIL_NICK, EVIL_REASON, make_run

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium", shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p and Path(p).exists()), None)
pytestmark = [pytest.mark.server, pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed: `apt-get install -y chromium` (Debian/Ubuntu) to run "
                             "the browser tests")]

#: Stands in for Showdown's replay-embed.js: reads the log block the way the viewer does
#: (text, `\/` back to `/`) and draws markup from it, with the DOM (text, never HTML).
STAND_IN = r"""
(function () {
  var data = document.querySelector('script.battle-log-data');
  var log = data.textContent.replace(/\\\//g, '/');
  var lines = log.split('\n');
  var frame = document.createElement('div');
  frame.className = 'stand-in-viewer';
  frame.setAttribute('data-lines', String(lines.length));
  frame.setAttribute('data-turns', String(lines.filter(function (l) { return /^\|turn\|/.test(l); }).length));
  var first = lines.filter(function (l) { return /^\|switch\|p1a/.test(l); })[0] || '';
  var who = document.createElement('span');
  who.className = 'lead';
  who.textContent = first.split('|')[2] || '';
  frame.appendChild(who);
  document.querySelector('.replay-wrapper .battle').appendChild(frame);
})();
"""


def dump_dom(page: Path, profile: Path, fragment: str = "", offline: bool = False, width: int = 1400) -> str:
    """The DOM of a page after Chromium loaded it (in a window `width` pixels wide) and ran its scripts."""
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
            f"--user-data-dir={profile}", f"--window-size={width},1000", "--hide-scrollbars"]
    if offline:  # no name resolves: Showdown's client site is out of reach, as with no network
        args.append("--host-resolver-rules=MAP * ~NOTFOUND")
    proc = subprocess.run([*args, "--dump-dom", page.resolve().as_uri() + fragment], capture_output=True, text=True,
                          timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<body" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def probe(page: Path, profile: Path, script: str, **how: object) -> str:
    """The DOM after `script` ran at the end of `page` (a copy beside it, removed afterwards)."""
    copy = page.with_name(f"probe-{page.name}")
    copy.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    try:
        return dump_dom(copy, profile, **how)  # type: ignore[arg-type]
    finally:
        copy.unlink()


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    make_run(root / "runs", "mixed", pairs=2)
    return publish(["mixed"], root / "site", runs_dir=root / "runs", n_bootstrap=20)


@pytest.fixture(scope="module")
def viewer_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A local HTTP server with the stand-in viewer at /js/replay-embed.js; yields its URL."""
    root = tmp_path_factory.mktemp("viewer")
    (root / "js").mkdir()
    (root / "js" / "replay-embed.js").write_text(STAND_IN)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/js/replay-embed.js"
    finally:
        server.shutdown()
        server.server_close()


def llm_game(site: Path) -> pd.Series:
    games = pd.read_csv(site / "games.csv")
    return games[games["p1"] == "llm-a"].iloc[0]


def test_leaderboard_shows_every_player(site: Path, tmp_path: Path) -> None:
    dom = dump_dom(site / "index.html", tmp_path / "profile")
    board = dom.split('class="leaderboard"')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", board.split("<tbody>")[1], re.S)
    ratings = pd.read_csv(site / "ratings.csv")
    assert len(rows) == len(ratings) == 4
    for rank, (row, player, rank_ub) in enumerate(zip(rows, ratings["player"], ratings["rank_ub"]), start=1):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        assert cells[0] == str(rank) and cells[1] == str(rank_ub) and f">{player}</a>" in cells[2]
    assert set(ratings["player"]) == {*BOTS, "llm-a"}
    assert "ratings.svg" in dom and 'class="h2h"' in dom and 'class="pairs"' in dom


def test_leaderboard_fits_1400_px_with_the_fit_against_observed(site: Path, tmp_path: Path) -> None:
    measure = ("var w = window.innerWidth; document.body.setAttribute('data-overflow', Array.prototype.filter.call("
               "document.querySelectorAll('table.leaderboard th'), function (th) {"
               " return th.getBoundingClientRect().right > w; }).map(function (th) { return th.textContent; }).join('|'));"
               "document.body.setAttribute('data-width', w);")
    dom = probe(site / "index.html", tmp_path / "profile", measure)
    assert 'data-width="1400"' in dom and 'data-overflow=""' in dom, re.search(r'data-overflow="[^"]*"', dom)
    board = dom.split('class="leaderboard"')[1].split("</table>")[0]
    assert "Re-ask rate" in board and "Random-pick rate" in board
    # a bot's model columns folded into one cell; the LLM's figures in theirs
    rows = dict(re.findall(r'>([a-z-]+)</a>.*?</td>(.*?)</tr>', board.split("<tbody>")[1], re.S))
    assert set(rows) == {*BOTS, "llm-a"}
    for bot in BOTS:
        assert 'colspan="4">no model answers</td>' in rows[bot]
    ratings = pd.read_csv(site / "ratings.csv").set_index("player")
    reask, random_pick = ratings.loc["llm-a", ["reask_rate", "random_pick_rate"]]
    assert f'<td class="num">{100 * reask:.1f}%</td><td class="num">{100 * random_pick:.1f}%</td>' in rows["llm-a"]
    assert reask > 0 and "no model answers" not in rows["llm-a"]
    # predicted against observed: P(A beats B) from ratings.csv's Elos, observed from h2h.csv
    h2h = pd.read_csv(site / "h2h.csv")
    fit = dom.split('class="fit"')[1].split("</table>")[0]
    found = re.findall(r'>([a-z-]+)</a></td><td><a[^>]*>([a-z-]+)</a></td><td class="num">(\d+)</td>\s*'
                       r'<td class="num">[\d/]+</td><td class="num">([\d.]+)%</td>\s*<td class="num">([\d.]+)%</td>', fit)
    assert len(found) == len(h2h) // 2 == 6
    for a, b, games, observed, predicted in found:
        assert ratings.loc[a, "elo"] >= ratings.loc[b, "elo"]
        p = 1 / (1 + 10 ** ((ratings.loc[b, "elo"] - ratings.loc[a, "elo"]) / 400))
        assert float(predicted) == pytest.approx(100 * p, abs=0.051)
        met = h2h[(h2h["player"] == a) & (h2h["opponent"] == b)].iloc[0]
        assert int(games) == met["games"] and float(observed) == pytest.approx(100 * met["win_rate"], abs=0.051)
    matrix = dom.split('class="h2h predicted"')[1].split("</table>")[0]
    assert len(re.findall(r'title="P\(', matrix)) == 4 * 3


def test_player_page_says_each_setting_once_and_pair_results_from_its_side(site: Path, tmp_path: Path) -> None:
    dom = dump_dom(site / "players" / "llm-a.html", tmp_path / "profile")
    facts = dict(re.findall(r"<dt>([^<]*)</dt><dd>([^<]*)</dd>", dom))
    assert facts["Model"] == "test/model-x (served as test/model-x-0613)" and facts["Reasoning"] == "high"
    assert facts["Prices"].startswith("input $3.00, cached input $0.30, output $15.00, cache write $3.75 per million")
    assert facts["Provider"] == "test at 127.0.0.1" and facts["Request parameters"] == "max_tokens 2048"
    # no raw key beside its label, no JSON of the model's facts
    labels = set(facts)
    for raw in ("model_facts", "reasoning_effort", "answers", "cost_usd", "cost usd", "latency_s", "latency s",
                "served_models", "config.model.model", "model.prices.input", "_target_"):
        assert raw not in labels, raw
    assert '{"' not in dom.split("<h2>Opponents</h2>")[0]
    assert facts["Re-asks"] == facts["Invalid answers"] != "0" and "Saved answers" in labels
    # each pair's result from llm-a's side, as games.csv has it
    games = pd.read_csv(site / "games.csv")
    mine = games[(games["p1"] == "llm-a") | (games["p2"] == "llm-a")]
    for (matchup, pair), grp in mine.groupby(["matchup", "pair"]):
        score = [0.5 if w == "tie" else float((w == "p1") == (p1 == "llm-a")) for w, p1 in zip(grp["winner"], grp["p1"])]
        said = {2.0: "won 2–0", 0.0: "lost 0–2", 1.0: "split 1–1", 1.5: "won one, tied one", 0.5: "lost one, tied one"}
        expected = "tied both" if score == [0.5, 0.5] else said[sum(score)]
        found = re.search(rf'data-pair="{pair}" data-matchup="{matchup}"[^>]*data-result="([^"]+)"', dom)
        assert found and found.group(1) == expected, (matchup, pair)
    assert "Won 2–0" in dom and "A 2–0" not in dom


def test_replay_text_view_with_no_network(site: Path, tmp_path: Path) -> None:
    game = llm_game(site)
    page = site / "replays" / f"{game['uid']}.html"
    turns = int(game["turns"])
    dom = dump_dom(page, tmp_path / "profile", offline=True)
    assert re.search(r'<body class="[^"]*\bviewer-offline\b', dom), "the viewer's script should have failed"
    assert "stand-in-viewer" not in dom
    sections = re.findall(r'<section class="turn[^"]*" id="turn-(\d+)"', dom)
    assert sections == [str(t) for t in range(0, turns + 1)]
    assert re.search(r'<body class="[^"]*\bjs\b', dom), "the stepping script did not run"
    # it opens on the first decision (turn 1), the viewer's box hidden and the note saying why
    assert re.findall(r'<section class="turn current" id="(turn-\d+)"', dom) == ["turn-1"]
    assert f"Turn 1 (2 of {turns + 1})" in dom and 'id="prev" disabled' not in dom
    assert re.search(r'<div class="wrapper replay-wrapper" data-viewer="[^"]*" hidden', dom)
    assert "could not be loaded from https://play.pokemonshowdown.com (no network?), so it is not shown" in dom
    assert "Moonblast" in dom and "Keep attacking on turn 2." in dom
    # a hostile REASON and nickname stay text
    assert "&lt;script&gt;alert('pwned')&lt;/script&gt;" in dom and "<script>alert" not in dom
    outside = re.sub(r'<script type="text/plain" class="battle-log-data">.*?</script>', "", dom, flags=re.S)
    assert EVIL_NICK not in outside and "<img src=" not in outside and "&lt;img src=x" in outside
    # a link to a turn opens the stepper at that turn
    dom2 = dump_dom(page, tmp_path / "profile", fragment="#turn-2", offline=True)
    assert re.findall(r'<section class="turn current" id="(turn-\d+)"', dom2) == ["turn-2"]
    assert f"Turn 2 (3 of {turns + 1})" in dom2
    # without JavaScript every turn is in the page (only `body.js` hides turns)
    plain = page.read_text()
    assert "<body>" in plain and 'id="stepper" hidden' in plain
    assert len(re.findall(r'<section class="turn" id="turn-\d+"', plain)) == turns + 1


def test_replay_shows_both_teams_each_turn_the_game_totals_and_the_system_prompt_once(site: Path,
                                                                                      tmp_path: Path) -> None:
    game = llm_game(site)
    dom = dump_dom(site / "replays" / f"{game['uid']}.html", tmp_path / "profile", offline=True)
    # the synthetic battle: p2's lead loses 40 of 200 HP a turn, p1's 30 of 236 (tests/support/synthetic_runs.py)
    for turn in range(1, int(game["turns"]) + 1):
        section = dom.split(f'id="turn-{turn}"')[1].split("</section>")[0]
        state = section.split(f"At the start of turn {turn}")[1].split('<div class="answer')[0]
        shown = re.findall(r'<span class="pct">(\d+)%</span>', state)
        done = turn - 1
        assert shown == [str(round(100 * (236 - 30 * done) / 236)), str(round(100 * (200 - 40 * done) / 200))], turn
        assert state.count('class="mon active"') == 2
    last = dom.split(f'id="turn-{int(game["turns"])}"')[1].split("</section>")[0]
    assert "At the end" in last and 'class="mon active fainted"' in last
    # the game's model calls, as decisions.csv has them
    decisions = pd.read_csv(site / "decisions.csv")
    mine = decisions[decisions["uid"] == game["uid"]]
    totals = dom.split('class="totals"')[1].split("</table>")[0]
    cells = re.findall(r'<td class="num">([^<]*)', totals)
    assert cells[:3] == [str(len(mine)), str(int(mine["reask"].sum())), "0"]
    assert cells[3].strip() == f"{int(mine['input_tokens'].sum()):,} ({int(mine['cached_input_tokens'].sum()):,})"
    assert cells[5] == f"${mine['cost_usd'].sum():.4f}"
    # the system prompt once, collapsed, byte for byte prompt version 3
    from pokebench.text.prompt import system_prompt

    assert dom.count('<details class="system-prompt">') == 1 and "System prompt (version 3) of llm-a" in dom
    shown_prompt = re.search(r'<details class="system-prompt">.*?<pre>(.*?)</pre>', dom, re.S).group(1)
    assert html.unescape(shown_prompt) == system_prompt(3)


def test_replay_loads_the_viewer_markup_when_its_script_is_there(site: Path, tmp_path: Path,
                                                                 viewer_server: str) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    build_site(copy, viewer_url=viewer_server)
    game = llm_game(copy)
    page = copy / "replays" / f"{game['uid']}.html"
    assert viewer_server in page.read_text()
    dom = dump_dom(page, tmp_path / "profile")
    assert re.search(r'<body class="[^"]*\bviewer-loaded\b', dom)
    assert not re.search(r'<div class="wrapper replay-wrapper" data-viewer="[^"]*" hidden', dom)
    frame = re.search(r'<div class="stand-in-viewer" data-lines="(\d+)" data-turns="(\d+)">'
                      r'<span class="lead">(.*?)</span>', dom)
    assert frame, dom[-3000:]
    log = (copy / "logs" / f"{game['uid']}.log").read_text().splitlines()
    assert int(frame.group(2)) == sum(line.startswith("|turn|") for line in log)
    # the viewer got the log intact (every `/` back), the hostile nickname as text
    assert frame.group(3) == "p1a: &lt;img src=x onerror=alert(1)&gt;"
    # the text view and the answers are still there, the REASON still text
    assert "&lt;script&gt;alert('pwned')&lt;/script&gt;" in dom and "<script>alert" not in dom
    assert "Keep attacking on turn 2." in dom


def test_games_table_sorts_and_filters(site: Path, tmp_path: Path) -> None:
    click = ("var th = document.querySelector('th[data-key=turns]'); th.click();"
             "document.body.setAttribute('data-first', Array.prototype.map.call("
             "document.querySelectorAll('table.games tbody'), function (b) { return b.rows[0].getAttribute("
             "'data-turns'); }).join(','));"
             "th.click(); var input = document.querySelector('input.filter'); input.value = 'heuristic-vs-llm';"
             "input.dispatchEvent(new Event('input'));")
    dom = probe(site / "games.html", tmp_path / "profile", click)
    games = pd.read_csv(site / "games.csv")
    first_turns = [int(t) for t in re.search(r'data-first="([\d,]+)"', dom).group(1).split(",")]
    assert len(first_turns) == len(games) // 2 and first_turns == sorted(first_turns)
    # clicked again: descending
    bodies = re.findall(r'<tbody class="pair"[^>]*>\s*<tr data-game="\d" data-p1="[^"]*" data-p2="[^"]*" '
                        r'data-turns="(\d+)"', dom)
    assert [int(t) for t in bodies] == sorted(first_turns, reverse=True)
    assert 'class="desc"' in dom or 'desc"' in dom
    # the filter leaves only that matchup's pairs
    assert re.search(r'(\d+) of (\d+) pairs', dom).groups() == ("2", str(len(games) // 2))
    hidden = re.findall(r'<tbody class="pair" data-pair="\d+" data-matchup="([^"]+)"[^>]* hidden', dom)
    assert len(hidden) == len(games) // 2 - 2 and "heuristic-vs-llm-a" not in hidden


def test_a_games_table_of_bots_alone_filters_without_the_reasks_box(tmp_path: Path) -> None:
    make_run(tmp_path / "runs", "bots", players=BOTS, pairs=2)
    out = publish(["bots"], tmp_path / "site", runs_dir=tmp_path / "runs", n_bootstrap=0)
    filtered = ("var input = document.querySelector('input.filter'); input.value = 'random-vs-heuristic';"
                "input.dispatchEvent(new Event('input'));")
    dom = probe(out / "games.html", tmp_path / "profile", filtered)
    pairs = len(pd.read_csv(out / "games.csv")) // 2
    assert "only-reasks" not in dom and re.search(r"(\d+) of (\d+) pairs", dom).groups() == ("2", str(pairs))


def test_games_show_tokens_cost_reasks_and_search_the_reasons(site: Path, tmp_path: Path) -> None:
    decisions = pd.read_csv(site / "decisions.csv")
    totals = decisions.groupby("uid").agg(tokens_in=("input_tokens", "sum"), tokens_out=("output_tokens", "sum"),
                                          cost=("cost_usd", "sum"), reasks=("reask", "sum"))
    script = ("document.querySelector('th[data-key=cost]').click(); document.querySelector('th[data-key=cost]').click();"
              "document.body.setAttribute('data-order', Array.prototype.map.call(document.querySelectorAll("
              "'table.games tbody'), function (b) { return b.getAttribute('data-cost'); }).join(','));"
              "var q = document.querySelector('input.reason-query'); q.value = 'KEEP turn 3';"
              "q.dispatchEvent(new Event('input'));")
    dom = probe(site / "games.html", tmp_path / "profile", script)
    games = pd.read_csv(site / "games.csv")
    rows = re.findall(r'data-uid="([0-9a-f]+)">(.*?)</tr>', dom, re.S)
    assert len(rows) == len(games)
    for uid, row in rows:
        cells = re.findall(r'<td class="num">([^<]*)</td>', row)[-3:]
        if uid in totals.index:
            t = totals.loc[uid]
            assert cells == [f"{int(t.tokens_in):,} / {int(t.tokens_out):,}", f"${t.cost:.4f}", str(int(t.reasks))]
        else:
            assert cells == ["—", "—", "—"]
    # sorted by the pairs' cost, most expensive first, the pairs without a model last
    order = re.search(r'data-order="([^"]*)"', dom).group(1).split(",")
    costs = [float(c) for c in order if c]
    assert costs == sorted(costs, reverse=True) and order[len(costs):] == [""] * (len(order) - len(costs))
    # the reason search: every answer whose reason has the words, linked to its turn; only their pairs shown
    hits = re.findall(r'<li><a href="replays/([0-9a-f]+)\.html#turn-(\d+)">[^<]*</a> · llm-a: <q>([^<]*)</q></li>', dom)
    expected = decisions[decisions["reason"].fillna("").str.contains("Keep attacking on turn 3.", regex=False)]
    assert sorted(hits) == sorted((u, "3", r) for u, r in zip(expected["uid"], expected["reason"])) and hits
    shown = re.search(r'(\d+) of (\d+) pairs', dom).group(1)
    assert int(shown) == len(games[games["uid"].isin(expected["uid"])].groupby(["matchup", "pair"]))


def write_harness_tables(folder: Path) -> None:
    """The Continual Harness's tables of a run with two refinements of `llm-a` (plain partner `llm-b`): version 1
    (one edit applied, one rejected), then a refinement that failed as a whole (the harness kept version 1)."""
    empty = '{"strategy": "", "memory": [], "skills": [], "subagents": [], "next_memory_id": 1}'
    learned = '{"strategy": "Terastallize to win a losing matchup.", "memory": [], "skills": [], "subagents": [], ' \
              '"next_memory_id": 1}'
    counts = {f"{part}_{status}": 0 for part in ("prompt", "memory", "skills", "subagents")
              for status in ("applied", "rejected")}
    base = {"run": "mixed", "player": "llm-a", "signatures": "{}", "refiner_input_tokens": None,
            "refiner_output_tokens": None, "refiner_cost_usd": None, "learned_from": None, "error": None, **counts}
    pd.DataFrame([
        base | {"version": 0, "parent": None, "first_epoch": 1, "trigger": "start", "trigger_epochs": None,
                "trigger_games": 0, "refiner_calls": 0, "at": "2026-10-06T11:00:00Z", "harness": empty},
        base | {"version": 1, "parent": 0, "first_epoch": 2, "trigger": "refinement", "trigger_epochs": 1,
                "trigger_games": 2, "refiner_calls": 4, "refiner_input_tokens": 14000, "refiner_output_tokens": 100,
                "refiner_cost_usd": 0.0177, "prompt_applied": 1, "memory_rejected": 1,
                "signatures": '{"tera_unused_in_loss": 2}', "at": "2026-10-06T11:10:00Z", "harness": learned},
        base | {"version": None, "parent": 1, "first_epoch": None, "trigger": "failed refinement",
                "trigger_epochs": 2, "trigger_games": 2, "refiner_calls": 8, "at": "2026-10-06T11:20:00Z",
                "harness": None, "error": "pass prompt: every answer was refused"},
    ]).to_csv(folder / "harness_versions.csv", index=False)
    pd.DataFrame([
        {"run": "mixed", "player": "llm-a", "version": 1, "at": "2026-10-06T11:10:00Z", "pass": "prompt",
         "status": "applied", "edit": '{"op": "rewrite"}', "old": '""', "new": '"Terastallize to win."', "why": None},
        {"run": "mixed", "player": "llm-a", "version": 1, "at": "2026-10-06T11:10:00Z", "pass": "memory",
         "status": "rejected", "edit": '{"op": "edit", "id": "m42"}', "old": None, "new": None,
         "why": "there is no memory entry 'm42'"},
    ]).to_csv(folder / "harness_edits.csv", index=False)
    pd.DataFrame([
        {"harness_player": "llm-a", "player": name, "role": role, "epoch": epoch, "first_pair": epoch,
         "last_pair": epoch, "runs": 1, "games": 2, "score": score, "score_lo": None, "score_hi": None,
         "harness_version": version, "version_changed": changed}
        for name, role, epoch, score, version, changed in (
            ("llm-a", "harness", 1, 0.5, 0, False), ("llm-a", "harness", 2, 1.0, 1, True),
            ("llm-a", "harness", 3, 0.5, 1, False), ("llm-b", "plain", 1, 0.5, None, False),
            ("llm-b", "plain", 2, 0.5, None, False), ("llm-b", "plain", 3, 0.0, None, False))
    ]).to_csv(folder / "learning_curve.csv", index=False)


def test_harness_page_in_the_site_style_with_its_curve_and_every_refinement(site: Path, tmp_path: Path) -> None:
    from pokebench.players.continual.page import write_harness_page
    from pokebench.site.build import SitePages

    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    write_harness_tables(copy)
    page = write_harness_page(SitePages.read(copy))
    assert page is not None and (copy / "learning_curve.svg").is_file()
    script = ("window.addEventListener('load', function () { var img = document.querySelector('img.plot');"
              "document.body.setAttribute('data-plot', img.naturalWidth + 'x' + img.naturalHeight); });")
    dom = probe(page, tmp_path / "profile", script)
    # the site's stylesheet and navigation, the learning curve drawn
    assert 'href="static/site.css"' in dom and '<header class="top">' in dom and 'href="index.html">Leaderboard' in dom
    assert re.search(r'data-plot="[1-9]\d+x[1-9]\d+"', dom), "the learning curve's SVG did not load"
    # every refinement, the rejected edit and the failed refinement too
    refinements = dom.split('class="refinements"')[1].split("</table>")[0]
    rows = re.findall(r"<tr class=\"(applied|rejected)\">(.*?)</tr>", refinements, re.S)
    assert [status for status, _ in rows] == ["applied", "rejected"]
    assert "version 1 (from version 0)" in rows[0][1] and "strategy 1" in rows[0][1] and "memory 1" in rows[0][1]
    assert "kept version 1: pass prompt: every answer was refused" in rows[1][1] and ">8<" in rows[1][1]
    assert "there is no memory entry 'm42'" in dom
    # versions are whole numbers
    text = re.sub(r"<[^>]+>", " ", dom)
    assert "version 1" in text and not re.search(r"version \d+\.\d", text) and not re.search(r"epoch\(s\) \d+\.", text)


# ---- luck (issue 31): the win-probability graph, the luck columns ----------------------------------------

@pytest.fixture(scope="module")
def luck_site(site: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, LuckGames]:
    """The browser tests' folder with the luck tables (tests/support/luck_tables.py), its site built again."""
    copy = tmp_path_factory.mktemp("luck") / "site"
    shutil.copytree(site, copy)
    chosen = add_luck(copy)
    build_site(copy)
    return copy, chosen


#: Records, on the body, what the graph looks like drawn: the line's length, each mark's box (kind, side, turn,
#: centre x, top, bottom, in the SVG's units) and each value dot's centre, and whether all lie inside the graph.
DRAWN = """
var svg = document.querySelector('svg.win-graph'), box = svg.getBoundingClientRect();
var scale = svg.viewBox.baseVal.width / box.width;
function local(r) { return {x: (r.left + r.width / 2 - box.left) * scale, top: (r.top - box.top) * scale,
                            bottom: (r.bottom - box.top) * scale, w: r.width, h: r.height}; }
var marks = Array.prototype.map.call(svg.querySelectorAll('.mark'), function (m) {
  var shape = m.querySelector('path') || m.querySelector('line'), r = local(shape.getBoundingClientRect());
  return [m.classList.contains('swing') ? 'swing' : 'blunder', m.classList.contains('p1') ? 'p1' : 'p2',
          m.getAttribute('data-turn'), r.x.toFixed(1), r.top.toFixed(1), r.bottom.toFixed(1),
          (r.h > 0 && m.getBoundingClientRect().width > 0) ? 'shown' : 'empty'].join(':');  // a bar has no width
});
var dots = Array.prototype.map.call(svg.querySelectorAll('circle.value[data-turn]'), function (c) {
  var r = local(c.getBoundingClientRect());
  return [c.getAttribute('data-turn'), r.x.toFixed(1), ((r.top + r.bottom) / 2).toFixed(1)].join(':');
});
var inside = Array.prototype.every.call(svg.querySelectorAll('.mark, circle.value, path.win-line'), function (e) {
  var r = e.getBoundingClientRect();
  return r.left >= box.left - 1 && r.right <= box.right + 1 && r.top >= box.top - 1 && r.bottom <= box.bottom + 1;
});
document.body.setAttribute('data-line', svg.querySelector('path.win-line').getTotalLength().toFixed(0));
document.body.setAttribute('data-marks', marks.join('|'));
document.body.setAttribute('data-dots', dots.join('|'));
document.body.setAttribute('data-inside', String(inside));
document.body.setAttribute('data-svg', box.width.toFixed(0) + 'x' + box.height.toFixed(0));
"""


def test_win_probability_graph_is_drawn_offline_with_its_marks_on_the_line(luck_site: tuple[Path, LuckGames],
                                                                             tmp_path: Path) -> None:
    site, chosen = luck_site
    dom = probe(site / "replays" / f"{chosen.graph}.html", tmp_path / "profile", DRAWN, offline=True)
    width, height = (int(x) for x in re.search(r'data-svg="(\d+)x(\d+)"', dom).groups())
    assert width > 600 and height > 150 and 'data-inside="true"' in dom
    assert int(re.search(r'data-line="(\d+)"', dom).group(1)) > 600  # a line across the graph, not a dot
    dots = {t: (float(x), float(y)) for t, x, y in
            (d.split(":") for d in re.search(r'data-dots="([^"]*)"', dom).group(1).split("|"))}
    marks = [m.split(":") for m in re.search(r'data-marks="([^"]*)"', dom).group(1).split("|")]
    assert [(kind, side, turn, shown) for kind, side, turn, *_, shown in marks] == [
        ("blunder", "p1", "1", "shown"), ("blunder", "p2", "2", "shown"), ("swing", "p2", "2", "shown"),
        ("swing", "p1", "3", "shown")]
    turns = pd.read_csv(site / "luck_turns.csv").set_index(["uid", "turn"]).loc[chosen.graph]
    top, bottom = 12, 190  # the plot's box in the SVG's units (pokebench/site/luck.py)
    for kind, side, turn, x, y_top, y_bottom, _ in marks:
        if kind == "blunder":  # the triangle on the line over its turn's dot
            assert float(x) == pytest.approx(dots[turn][0], abs=0.6)
            assert float(y_top) < dots[turn][1] < float(y_bottom)
        else:  # the bar halfway to the next turn, from what the turn was expected to give to what it gave
            assert dots[turn][0] < float(x) < dots.get(str(int(turn) + 1), (1e9,))[0]
            row = turns.loc[int(turn)]
            ends = sorted(top + (1 - v) * (bottom - top) for v in (row["expected"], row["v_after"]))
            assert (float(y_top), float(y_bottom)) == (pytest.approx(ends[0], abs=2), pytest.approx(ends[1], abs=2))
            # a swing for Player 1 goes up (its luck raised its win probability), one for Player 2 down
            assert (row["v_after"] > row["expected"]) == (side == "p1")


def test_clicking_or_hovering_a_mark_shows_what_happened_and_the_reason(luck_site: tuple[Path, LuckGames],
                                                                        tmp_path: Path) -> None:
    site, chosen = luck_site
    script = """
    function said(sel, ev) {
      var mark = document.querySelector(sel);
      mark.dispatchEvent(new MouseEvent(ev, {bubbles: true}));
      var box = document.querySelector('.graph-detail');
      return [box.hidden ? 'hidden' : 'shown', box.getAttribute('data-mark'), mark.classList.contains('selected'),
              box.querySelectorAll('script, img').length, box.textContent].join('\\u0001');
    }
    document.body.setAttribute('data-before', document.querySelector('.graph-detail').hidden ? 'hidden' : 'shown');
    document.body.setAttribute('data-click', said('.mark.blunder.p1', 'click'));
    document.body.setAttribute('data-hover', said('.mark.swing.p2', 'mouseenter'));
    document.body.setAttribute('data-selected', document.querySelectorAll('svg.win-graph .mark.selected').length);
    """
    dom = probe(site / "replays" / f"{chosen.graph}.html", tmp_path / "profile", script, offline=True)
    assert 'data-before="hidden"' in dom and 'data-selected="1"' in dom
    click = html.unescape(re.search(r'data-click="([^"]*)"', dom).group(1)).split("\x01")
    assert click[:4] == ["shown", "mark-1", "true", "0"]
    assert click[4] == ("Turn 1: blunder by Player 1 (llm-a): played moonblast, the engine's choice switch florges "
                        f"(regret 0.310). Reason: “{EVIL_REASON}”")  # the hostile reason as text, nothing run
    hover = html.unescape(re.search(r'data-hover="([^"]*)"', dom).group(1)).split("\x01")
    assert hover[:4] == ["shown", "mark-3", "true", "0"] and hover[4].startswith("Turn 2: miss, luck +0.150 for Player 2")
    assert "<script>alert" not in dom
    # the detail's link opens the text view at the mark's turn
    assert '<div class="graph-detail" aria-live="polite" data-mark="mark-3"><a href="#turn-2">Turn 2</a>' in dom


def test_games_sort_by_luck_finds_the_unluckiest_and_luckiest_games(luck_site: tuple[Path, LuckGames],
                                                                   tmp_path: Path) -> None:
    site, _ = luck_site
    script = """
    var th = document.querySelector('th[data-key=luck_p1]');
    function order() { return Array.prototype.map.call(document.querySelectorAll('table.games tbody'), function (b) {
      return Array.prototype.map.call(b.rows, function (r) { return r.getAttribute('data-luck_p1'); }).join('/');
    }).join(','); }
    th.click(); document.body.setAttribute('data-up', order());
    th.click(); document.body.setAttribute('data-down', order());
    """
    dom = probe(site / "games.html", tmp_path / "profile", script)
    luck = pd.read_csv(site / "luck.csv")
    measured = luck[luck["error"].isna()]["luck_p1"]

    def pairs(attr: str) -> list[list[float | None]]:
        return [[float(v) if v else None for v in grp.split("/")]
                for grp in re.search(rf'data-{attr}="([^"]*)"', dom).group(1).split(",")]

    up, down = pairs("up"), pairs("down")
    assert min(v for v in up[0] if v is not None) == measured.min() < 0  # the unluckiest game for Player 1 first
    assert max(v for v in down[0] if v is not None) == measured.max() > 0  # then the luckiest
    lows = [min(v for v in g if v is not None) for g in up if any(v is not None for v in g)]
    highs = [max(v for v in g if v is not None) for g in down if any(v is not None for v in g)]
    assert lows == sorted(lows) and highs == sorted(highs, reverse=True)
    # a pair with no measured luck comes last either way
    for order in (up, down):
        known = [any(v is not None for v in g) for g in order]
        assert known == sorted(known, reverse=True)


def test_leaderboard_with_luck_still_fits_1400_px(luck_site: tuple[Path, LuckGames], tmp_path: Path) -> None:
    site, _ = luck_site
    # inside the box that scrolls the table (the page's width, within the window): no column hidden off it
    measure = ("var w = document.querySelector('table.leaderboard').closest('.scroll').getBoundingClientRect().right;"
               "document.body.setAttribute('data-overflow', Array.prototype.filter.call("
               "document.querySelectorAll('table.leaderboard th'), function (th) {"
               " return th.getBoundingClientRect().right > w + 0.5; }).map(function (th) { return th.textContent; })"
               ".join('|'));")
    dom = probe(site / "index.html", tmp_path / "profile", measure)
    assert 'data-overflow=""' in dom, re.search(r'data-overflow="[^"]*"', dom)
    assert ">Adjusted Elo</th>" in dom and 'class="luck-board"' in dom
