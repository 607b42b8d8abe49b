"""Progress written to a file or a pipe (pokebench.bars): a plain line at most every interval, however often
the caller asks for one."""

from __future__ import annotations

import re
import time

from pokebench.bars import PlainLines, progress_bar
from pokebench.play.progress import Progress


def test_a_bar_off_a_terminal_asked_often_writes_a_line_per_interval_at_most(monkeypatch, capsys) -> None:
    monkeypatch.setenv("POKEBENCH_PROGRESS_EVERY", "0.2")
    progress = Progress(total=10, done=0, name="steady")  # pytest's captured stderr is no terminal
    started = time.monotonic()
    while time.monotonic() - started < 1.0:
        progress.show()  # as the run does once a second, with the answers of the games in flight
        time.sleep(0.01)
    elapsed = time.monotonic() - started
    progress.close()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("steady:")]
    assert 2 <= len(lines) <= 2 + elapsed / 0.2, lines  # ~100 asks: the first line, one per 0.2 s, the last



def test_a_bar_off_a_terminal_shows_the_runs_own_rate_whatever_redrew_it(capsys) -> None:
    """Lines written at a redraw (the run's follow loop, once a second) and at a game's end, with a pause between
    games longer than the interval: the rate in the lines is games per second of this run, not the games of
    many intervals divided by the last one (1.27 game/s for a run at 0.1, once, on a 100-game run)."""
    bar = progress_bar(total=12, desc="paced", unit="game")  # pytest's captured stderr is no terminal
    assert isinstance(bar, PlainLines)
    bar.mininterval = 0.1
    started = time.monotonic()
    for game in range(12):
        ends = time.monotonic() + (0.3 if game == 11 else 0.04)  # the last game: longer than the interval
        while time.monotonic() < ends:
            if game < 11 and bar.due():
                bar.refresh()  # what Progress._redraw does between games
            time.sleep(0.005)
        bar.update(1)
    elapsed = time.monotonic() - started
    bar.close()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("paced:")]
    shown = re.search(r"([\d.]+)(game/s|s/game)", lines[-1])
    assert shown, lines
    rate = float(shown[1]) if shown[2] == "game/s" else 1 / float(shown[1])
    assert 0.8 < rate / (12 / elapsed) < 1.25, (lines, 12 / elapsed)
