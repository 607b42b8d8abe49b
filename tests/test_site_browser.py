"""The published site in a real browser (headless Chromium, from disk, no network).

Install the browser with `apt-get install -y chromium` (Debian/Ubuntu); without it these
tests are skipped.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from pokebench.results.publish import publish
from test_publish import BOTS, EVIL_NICK, make_run

CHROMIUM = next((p for p in (shutil.which("chromium"), "/usr/bin/chromium", shutil.which("chromium-browser"),
                             shutil.which("google-chrome")) if p and Path(p).exists()), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Chromium is not installed: `apt-get install -y chromium` (Debian/Ubuntu) to run "
                             "the browser tests")


def dump_dom(page: Path, profile: Path, fragment: str = "") -> str:
    """The DOM of a page after Chromium loaded it and ran its scripts."""
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--no-default-browser-check",
            f"--user-data-dir={profile}"]
    proc = subprocess.run([*args, "--dump-dom", page.resolve().as_uri() + fragment], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "<body" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("browser")
    make_run(root / "runs", "mixed", pairs=2)
    return publish(["mixed"], root / "site", runs_dir=root / "runs", n_bootstrap=20)


def test_leaderboard_shows_every_player(site: Path, tmp_path: Path) -> None:
    dom = dump_dom(site / "index.html", tmp_path / "profile")
    board = dom.split('class="leaderboard"')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", board.split("<tbody>")[1], re.S)
    ratings = pd.read_csv(site / "ratings.csv")
    assert len(rows) == len(ratings) == 4
    for rank, (row, player) in enumerate(zip(rows, ratings["player"]), start=1):
        assert f">{player}</a>" in row and f">{rank}</td>" in row
    assert set(ratings["player"]) == {*BOTS, "llm-a"}
    assert "ratings.svg" in dom and 'class="h2h"' in dom


def test_replay_steps_through_turns(site: Path, tmp_path: Path) -> None:
    games = pd.read_csv(site / "games.csv")
    game = games[(games["p1"] == "llm-a") | (games["p2"] == "llm-a")].iloc[0]
    page = site / "replays" / f"{game['game_id']}.html"
    turns = int(game["turns"])

    dom = dump_dom(page, tmp_path / "profile")
    sections = re.findall(r'<section class="turn[^"]*" id="turn-(\d+)"', dom)
    assert sections == [str(t) for t in range(0, turns + 1)]
    assert re.search(r'<body class="js"', dom), "the stepping script did not run"
    current = re.findall(r'<section class="turn current" id="(turn-\d+)"', dom)
    assert current == ["turn-0"]
    assert "Start (1 of" in dom and 'id="prev" disabled' in dom
    assert "Moonblast" in dom and "Keep attacking on turn 2." in dom
    assert EVIL_NICK not in dom and "<img src=" not in dom  # a nickname stays text
    # a link to a turn opens the stepper at that turn
    dom2 = dump_dom(page, tmp_path / "profile", fragment="#turn-2")
    assert re.findall(r'<section class="turn current" id="(turn-\d+)"', dom2) == ["turn-2"]
    assert f"Turn 2 (3 of {turns + 1})" in dom2
    assert re.findall(r'<a href="(#turn-\d+)" class="current">', dom2) == ["#turn-2"]

    # without JavaScript (the page as written; --dump-dom needs scripts on): every turn is
    # shown (only `body.js` hides turns), the stepper stays hidden, the turn list links to anchors
    plain = page.read_text()
    assert "<body>" in plain and 'id="stepper" hidden' in plain
    assert len(re.findall(r'<section class="turn" id="turn-\d+"', plain)) == turns + 1
    assert f'href="#turn-{turns}"' in plain and "../inputlogs/" in plain
