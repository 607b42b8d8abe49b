"""Luck on the site (issue 31): the pages' HTML built from a published folder with the luck tables, and without.

The folder is a synthetic run published for real, with luck.csv, luck_turns.csv, scored decisions and the
ratings' luck columns written in the luck contract's shape (tests/support/luck_tables.py); the browser tests of
the graph are in tests/test_site_browser.py.
"""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from pokebench.publish import publish
from pokebench.site import build_site
from pokebench.site.luck import SWING_THRESHOLD, GRAPH_SIZE, win_graph
from support.luck_tables import GRAPH_SHIFT, NO_TURN, LuckGames, add_empty_luck, add_luck
from support.synthetic_runs import EVIL_REASON, make_run

pytestmark = pytest.mark.server  # the replays' text view needs the pinned server's text templates (make setup)


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, LuckGames]:
    """The same run published twice: as it is (not analysed), and with the luck tables."""
    root = tmp_path_factory.mktemp("luck")
    make_run(root / "runs", "mixed", pairs=2)
    plain = publish(["mixed"], root / "plain", runs_dir=root / "runs", n_bootstrap=20)
    lucky = root / "lucky"
    shutil.copytree(plain, lucky)
    chosen = add_luck(lucky)
    build_site(lucky)
    return plain, lucky, chosen


def page_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def replay(site: Path, uid: str) -> str:
    return page_text(site / "replays" / f"{uid}.html")


def line_values(page: str) -> list[list[float]]:
    """The win-probability line's values (0 to 1), per unbroken piece, read back from its SVG path."""
    d = re.search(r'<path class="win-line" d="([^"]*)"', page).group(1)
    top, bottom = 12, GRAPH_SIZE[1] - 30
    pieces: list[list[float]] = []
    for pen, _, y in re.findall(r"([ML])([\d.]+),([\d.]+)", d):
        if pen == "M":
            pieces.append([])
        pieces[-1].append(round(1 - (float(y) - top) / (bottom - top), 3))
    return pieces


def test_the_graph_draws_v_before_of_every_turn_and_ends_at_the_result(sites: tuple[Path, Path, LuckGames]) -> None:
    _, site, chosen = sites
    turns = pd.read_csv(site / "luck_turns.csv")
    mine = turns[turns["uid"] == chosen.graph].sort_values("turn")
    page = replay(site, chosen.graph)
    assert page.count('<svg class="win-graph"') == 1
    assert "valued from the full position\n(both teams known) by PokéBench's value function" in page  # not the engine
    assert line_values(page) == [[*(round(v, 3) for v in mine["v_before"]), round(mine["v_after"].iloc[-1], 3)]]
    shown = [(int(t), float(p)) for t, p in re.findall(r'<circle class="value" [^>]*data-turn="(\d+)" data-p="([\d.]+)"',
                                                        page)]
    assert shown == [(int(t), pytest.approx(v, abs=1e-4)) for t, v in zip(mine["turn"], mine["v_before"])]
    # a turn that could not be valued breaks the line
    broken = replay(site, chosen.failed_turn)
    failed = turns[turns["uid"] == chosen.failed_turn]
    assert failed["v_before"].isna().sum() == 1 and len(line_values(broken)) == 2
    assert sum(map(len, line_values(broken))) == failed["v_before"].notna().sum() + 1


def test_a_games_page_says_when_its_luck_was_measured_with_a_skill_shift(sites: tuple[Path, Path, LuckGames]) -> None:
    """luck.csv's skill_shift_p1 (the odds tilted by the matchup's other pairs): named beside the game's luck where it
    is not 0, with the sign for Player 1; a game at shift 0 says nothing of it."""
    _, site, chosen = sites
    shifted = html.unescape(re.sub(r"\s+", " ", replay(site, chosen.graph)))
    assert "log-odds shifted " + f"{GRAPH_SHIFT:+.1f}".replace("-", "−") + " for Player 1" in shifted
    assert "log-odds shifted" not in replay(site, chosen.failed_turn)


def test_swings_past_the_threshold_are_marked_and_named_by_their_event(sites: tuple[Path, Path, LuckGames]) -> None:
    _, site, chosen = sites
    turns = pd.read_csv(site / "luck_turns.csv")
    mine = turns[turns["uid"] == chosen.graph]
    page = replay(site, chosen.graph)
    marks = re.findall(r'<g class="mark swing (p1|p2)" data-mark="(mark-\d+)" data-turn="(\d+)" data-event="([^"]*)"',
                       page)
    lucky = mine[mine["luck_p1"].abs() >= SWING_THRESHOLD]
    assert 0 < len(lucky) < len(mine), "the fixture has turns on both sides of the threshold"
    assert [(s, int(t), e) for s, _, t, e in marks] == [
        ("p1" if luck > 0 else "p2", int(t), e) for t, luck, e in zip(lucky["turn"], lucky["luck_p1"], lucky["event"])]
    assert {e for *_, e in marks} == {"critical hit", "miss"}
    # the list under the graph says each: its turn, event, and whose luck
    for side, mark, turn, event in marks:
        entry = re.search(rf'<li id="{mark}" class="swing {side}" data-turn="{turn}">(.*?)</li>', page).group(1)
        row = lucky[lucky["turn"] == int(turn)].iloc[0]
        who = "Player 1 (llm-a)" if side == "p1" else f"Player 2 ({pd.read_csv(site / 'games.csv').set_index('uid').loc[chosen.graph, 'p2']})"
        assert f'<a href="#turn-{turn}">Turn {turn}</a>: {event}, luck +{abs(row["luck_p1"]):.3f} for {who}' in entry


def test_blunders_are_marked_with_the_players_reason_escaped(sites: tuple[Path, Path, LuckGames]) -> None:
    _, site, chosen = sites
    page = replay(site, chosen.graph)
    blunders = re.findall(r'<g class="mark blunder (p1|p2)" data-mark="(mark-\d+)" data-turn="(\d+)" tabindex="0">'
                          r"<title>(.*?)</title>", page, re.S)
    assert [(s, t) for s, _, t, _ in blunders] == [("p1", "1"), ("p2", "2")]  # turn 3's choice is no blunder
    llm, bot = blunders[0][3], blunders[1][3]
    assert "played moonblast, the engine's choice switch florges (regret 0.310)" in llm
    assert html.unescape(llm).endswith(f"Reason: “{EVIL_REASON}”") and "<script>" not in page.split("<h2>Replay")[0]
    assert "(the player gave no reason)" in bot and "Reason:" not in bot
    # each on the line at its turn: where the line's value of that turn is
    for side, mark, turn, _ in blunders:
        tip = re.search(rf'data-mark="{mark}"[^>]*>.*?<path d="M([\d.]+),([\d.]+)', page, re.S).groups()
        dot = re.search(rf'<circle class="value" cx="([\d.]+)" cy="([\d.]+)" r="2.5" data-turn="{turn}"', page).groups()
        assert float(tip[0]) == float(dot[0]) and float(tip[1]) == pytest.approx(float(dot[1]) - 7)


def test_a_game_without_luck_says_why_and_draws_nothing(sites: tuple[Path, Path, LuckGames]) -> None:
    _, site, chosen = sites
    error = replay(site, chosen.error)
    assert "<svg" not in error and f"No win-probability graph: {NO_TURN}." in error
    assert f"<dt>Luck</dt><dd class=\"luck\">not measured: {NO_TURN}" in error
    missing = replay(site, chosen.missing)
    assert "<svg" not in missing and "this game is not in the luck analysis" in missing and "<dt>Luck</dt>" not in missing


def test_an_unanalysed_folder_shows_no_luck_anywhere(sites: tuple[Path, Path, LuckGames], tmp_path: Path) -> None:
    plain, lucky, _ = sites
    empty = tmp_path / "empty"  # the luck tables without rows, the ratings' luck columns empty
    shutil.copytree(plain, empty)
    add_empty_luck(empty)
    build_site(empty)
    for page in [*sorted(plain.rglob("*.html")), *sorted(empty.rglob("*.html"))]:
        text = page_text(page)
        assert "win-graph" not in text and "No win-probability graph" not in text, page
        assert "Luck" not in text and "luck-adjusted" not in text and "Adjusted" not in text, page
        assert not re.search(r"\bnan\b", text, re.I), page
    for page in sorted(lucky.rglob("*.html")):
        assert not re.search(r"\bnan\b", page_text(page), re.I), page


def test_leaderboard_shows_the_adjusted_elo_beside_the_elo_and_each_players_luck(
        sites: tuple[Path, Path, LuckGames]) -> None:
    _, site, chosen = sites
    page = page_text(site / "index.html")
    board = page.split('class="leaderboard"')[1].split("</table>")[0]
    head = re.findall(r"<th[^>]*>([^<]*)</th>", board)
    assert head[3:6] == ["Elo", "95% interval", "Adjusted Elo"]
    ratings = pd.read_csv(site / "ratings.csv")
    rows = re.findall(r"<tr>(.*?)</tr>", board.split("<tbody>")[1], re.S)
    assert len(rows) == len(ratings)

    def signed(x: float) -> str:
        return f"{x:+.3f}".replace("-", "−")

    for row, r in zip(rows, ratings.to_dict("records")):
        assert f'>{r["player"]}</a>' in row
        adjusted = re.search(r'<td class="num adjusted">(.*?)</td>', row).group(1)
        assert adjusted == (f'{r["elo_adjusted"]:.0f}<br><span class="muted under">{r["adjusted_lo"]:.0f}–'
                            f'{r["adjusted_hi"]:.0f}</span>')
    # the luck table: each player's Elo, adjusted Elo, the move, its mean luck per game, the games measured
    luck = pd.read_csv(site / "luck.csv")
    measured = luck[luck["error"].isna()]
    table = page.split('class="luck-board"')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    for row, r in zip(rows, ratings.to_dict("records")):
        cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', row)
        games = int(((measured["p1"] == r["player"]) | (measured["p2"] == r["player"])).sum())
        assert cells == [f'{r["elo"]:.0f}', f'{r["elo_adjusted"]:.0f}', f'{r["adjusted_lo"]:.0f}–{r["adjusted_hi"]:.0f}',
                         f'{r["elo_adjusted"] - r["elo"]:+.0f}'.replace("-", "−"), signed(r["luck_mean"]),
                         f'[{signed(r["luck_lo"])}, {signed(r["luck_hi"])}]', str(games)]
    assert len(rows) == len(ratings) and len(measured) == len(luck) - 1 == len(pd.read_csv(site / "games.csv")) - 2


def test_games_page_has_each_games_luck_and_adjusted_score_to_sort_by(sites: tuple[Path, Path, LuckGames]) -> None:
    _, site, chosen = sites
    page = page_text(site / "games.html")
    assert '<th data-key="luck_p1" data-extreme class="num"' in page
    assert '<th data-key="adjusted_p1" data-extreme class="num"' in page
    luck = pd.read_csv(site / "luck.csv").set_index("uid")
    rows = re.findall(r'data-uid="([0-9a-f]+)" data-luck_p1="([^"]*)" data-adjusted_p1="([^"]*)">(.*?)</tr>', page, re.S)
    assert len(rows) == len(pd.read_csv(site / "games.csv"))
    for uid, sort_luck, sort_adjusted, cells in rows:
        shown = re.findall(r'<td class="num (luck|adjusted)"[^>]*>([^<]*)</td>', cells)
        if uid == chosen.missing:
            assert (sort_luck, sort_adjusted) == ("", "") and shown == [("luck", "—"), ("adjusted", "—")]
        elif uid == chosen.error:  # its luck was not measured: no value to sort by, the score as it is
            assert sort_luck == "" and float(sort_adjusted) == luck.loc[uid, "score_p1"]
            assert shown[0] == ("luck", "—") and f'title="not measured: {NO_TURN}"' in cells
        else:
            row = luck.loc[uid]
            assert float(sort_luck) == row["luck_p1"] and float(sort_adjusted) == row["adjusted_p1"]
            assert shown == [("luck", f"{row['luck_p1']:+.3f}".replace("-", "−")),
                             ("adjusted", f"{row['adjusted_p1']:.3f}".replace("-", "−"))]


def test_win_graph_marks_luck_at_the_threshold_and_draws_nothing_without_values() -> None:
    def turn(t: int, v: float | None, luck: float = 0.0, event: str = "") -> dict[str, object]:
        return {"turn": t, "v_before": v, "v_after": None if v is None else v + 0.1, "expected": None if v is None
                else v + 0.1 - luck, "luck_p1": luck, "event": event}

    players = {"p1": "a", "p2": "b"}
    assert win_graph([], [], [], players) is None
    assert win_graph([turn(1, None), turn(2, None)], [], [], players) is None
    graph = win_graph([turn(1, 0.5, SWING_THRESHOLD, "speed tie"), turn(2, 0.6, -SWING_THRESHOLD + 1e-6, "miss"),
                       turn(3, 0.7, -0.3)], [], [], players)
    assert graph is not None
    assert [(m["turn"], m["side"], m["event"]) for m in graph["marks"]] == [(1, "p1", "speed tie"), (3, "p2", "other")]


def test_the_luck_section_says_what_the_adjustment_did_per_matchup_and_draws_vs_calibration(
        sites: tuple[Path, Path, LuckGames]) -> None:
    plain, site, _ = sites
    page = page_text(site / "index.html")
    table = page.split('class="luck-gain"')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    pairs = pd.read_csv(site / "pairs.csv")
    measured = pairs[pairs["luck_pairs"].notna()]
    assert len(rows) == len(measured) > 0

    def signed(x: float) -> str:
        return f"{x:+.3f}".replace("-", "−")

    def shown(x: float, form: str) -> str:
        return "—" if pd.isna(x) else form.format(x)

    def ratio(r: dict) -> str:  # a ratio of nothing (raw did not vary) says so, as the run's summary does
        return "— (raw did not vary)" if pd.isna(r["variance_ratio"]) and r["var_raw"] == 0 else shown(
            r["variance_ratio"], "{:.2f}×")

    for row, r in zip(rows, measured.to_dict("records")):
        assert f'>{r["player_a"]}</a> vs ' in row and f'>{r["player_b"]}</a>' in row
        cells = re.findall(r'<td class="num[^"]*">([^<]*)</td>', row)
        assert cells == [str(int(r["luck_pairs"])), shown(r["var_raw"], "{:.4f}"), shown(r["var_adjusted"], "{:.4f}"),
                         ratio(r), "—",  # two pairs a matchup: too few for an interval
                         signed(r["a_luck_mean"]), "—"]
    assert measured["variance_ratio"].notna().any()
    assert 'src="value_calibration.svg"' in page and (site / "value_calibration.svg").is_file()
    svg = (site / "value_calibration.svg").read_text(encoding="utf-8")
    turns = pd.read_csv(site / "luck_turns.csv")
    assert f'{turns["v_before"].notna().sum():,} positions of' in svg
    assert not (plain / "value_calibration.svg").exists() and "luck-gain" not in page_text(plain / "index.html")
