"""Progress written to a file or a pipe (pokebench.bars): a plain line at most every interval, however often
the caller asks for one."""

from __future__ import annotations

import time

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

