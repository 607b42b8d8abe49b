"""What a run prints: its progress bar while it plays, and its closing summary table, for bot and LLM runs.

Real runs through the command line (a subprocess: on the worker's server when it ends normally, else on the
pinned server it starts itself); the LLM is the local fake OpenAI-compatible server (pokebench.llm.fake_server).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pokebench.invocation import command_prefix, module_command
from pokebench.llm.fake_server import LocalOpenAI, Reply, hashed_policy
from pokebench.showdown.server import LocalShowdown

from support.existing_server import on_server
from support.games import REPO_DIR
from support.processes import started, wait_for
from support.stored_run import copy_of

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)

SECRET = "fake-api-key-NEVER-STORED-23"
INTERVAL = r"-?\d+ to -?\d+"


def run_cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None,
            server: LocalShowdown | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m pokebench ARGS` in `tmp_path`; on `server` (the worker's, already running) if given."""
    extra, server_env = on_server(server) if server is not None else ([], {})
    return subprocess.run([sys.executable, "-m", "pokebench", *args, *extra], cwd=tmp_path, capture_output=True,
                          text=True, env=dict(os.environ, PYTHONPATH=str(REPO_DIR), **(env or {}), **server_env),
                          timeout=600)


def leaderboard(stdout: str) -> dict[str, str]:
    """The summary's table rows by player."""
    rows = {}
    for row in stdout.split("Leaderboard:", 1)[1].splitlines()[2:]:
        if not row.startswith("  "):  # the table ends
            break
        rows[row.split()[0]] = row
    return rows


def test_a_bot_run_ends_with_a_summary_table(showdown, tmp_path: Path) -> None:
    proc = run_cli(tmp_path, "+run=bots-smoke", "pairs=1", "publish=false", server=showdown)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Run 'bots-smoke': 6 game(s) played now; 6 of 6 stored in all." in proc.stdout
    assert "Leaderboard: (Elo with max-damage at 1000)" in proc.stdout
    header = proc.stdout.split("Leaderboard:", 1)[1].splitlines()[1]
    assert header.split() == ["player", "Elo", "95%", "interval", "games", "W-T-L", "win", "rate"]
    rows = leaderboard(proc.stdout)
    assert set(rows) == {"random", "max-damage", "heuristic"}
    assert re.search(r"max-damage\s+1000\s+1000 to 1000\s+4\s", rows["max-damage"])
    assert all(re.search(rf"\s{INTERVAL}\s+4\s+\d-\d-\d\s", rows[p]) for p in ("random", "heuristic"))
    assert "Harness errors: none." in proc.stdout
    assert "Spend by model" not in proc.stdout  # bots spend nothing
    # started again, nothing to play: the same table
    again = run_cli(tmp_path, "+run=bots-smoke", "pairs=1", "publish=false")
    assert again.returncode == 0 and "0 game(s) played now; 6 of 6 stored in all." in again.stdout
    assert leaderboard(again.stdout) == rows


@pytest.fixture(scope="module")
def slow_api():
    """Each answer takes 0.3 s, so a game's answers arrive over seconds (as a real model's do)."""
    with LocalOpenAI(policy=lambda request: Reply(text=hashed_policy(request), delay=0.3)) as server:
        yield server


def test_an_llm_run_shows_answers_as_they_arrive_and_ends_with_elo_intervals_and_rates(showdown, tmp_path, slow_api):
    proc = run_cli(tmp_path, "+run=llm-smoke", "publish=false", "turn_limit=8",
                   "players.local.model.prices.input=3", "players.local.model.prices.output=15",
                   env={"POKEBENCH_BASE_URL": slow_api.base_url, "POKEBENCH_API_KEY": SECRET,
                        "POKEBENCH_PROGRESS_EVERY": "0.5"}, server=showdown)  # not a terminal: a line every 0.5 s
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the bar's text moves with the answers while no game has finished yet
    before_first_game = re.findall(r" 0/2 \[[^\]]*?(\d+) answers · \$([\d.]+) · (\d+k?) in", proc.stderr)
    assert before_first_game, proc.stderr[-2000:]
    assert int(before_first_game[-1][0]) >= 2 and float(before_first_game[-1][1]) > 0
    rows = leaderboard(proc.stdout)
    assert set(rows) == {"local", "max-damage"}
    header = proc.stdout.split("Leaderboard:", 1)[1].splitlines()[1].split()
    assert header[-3:] == ["re-asks", "random", "picks"]
    assert re.search(rf"local\s+-?\d+\s+{INTERVAL}\s+2\s+\d-\d-\d\s+\d+%\s+0\.0%\s+0\.0%$", rows["local"]), rows
    assert rows["max-damage"].rstrip().endswith("—")  # a bot has no answers to rate
    assert "Spend by model" in proc.stdout and "Harness errors: none." in proc.stdout
    assert SECRET not in proc.stdout + proc.stderr


def test_progress_written_to_a_file_is_a_few_plain_lines(showdown, tmp_path: Path) -> None:
    """Not a terminal (a file, a pipe, CI's log): no redraws, a plain line at most every 30 s and one at the end."""
    started_at = time.monotonic()
    proc = run_cli(tmp_path, "+run=bots-smoke", "pairs=4", "publish=false", server=showdown)
    elapsed = time.monotonic() - started_at
    assert proc.returncode == 0, proc.stderr[-3000:]
    # (text mode reads a carriage return as a line end: each redraw of the old bar counted as a line)
    lines = [line for line in proc.stderr.splitlines() if line.startswith("bots-smoke:")]
    assert 2 <= len(lines) <= 2 + elapsed / 30, lines  # the first, one per 30 s at most, the last
    assert re.search(r"\| 24/24 \[[^\]]*, (random|max-damage|heuristic) \d+", lines[-1]), lines[-1]
    assert re.search(r"\| 0/24 \[", lines[0]), lines[0]
    bad = run_cli(tmp_path, "+run=bots-smoke", "publish=false", env={"POKEBENCH_PROGRESS_EVERY": "often"})
    assert bad.returncode == 2 and "POKEBENCH_PROGRESS_EVERY must be a number of seconds" in bad.stderr, bad.stderr


def test_the_analysis_progress_written_to_a_pipe_is_a_few_plain_lines(stored_run, tmp_path: Path) -> None:
    """`pokebench analyse` keeps to the same rule as a run: no redraws off a terminal, and the last line says all."""
    runs = copy_of(stored_run, tmp_path)
    started_at = time.monotonic()
    proc = run_cli(tmp_path, "analyse", "bots-smoke", "--runs-dir", str(runs), "--no-quality")
    elapsed = time.monotonic() - started_at
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "\r" not in proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("analyse:")]
    assert 1 <= len(lines) <= 2 + elapsed / 30, proc.stderr[-3000:]
    assert re.search(r"\| 6/6 \[.*turns=\d+", lines[-1]), lines[-1]


def test_a_run_refused_at_pre_flight_leaves_no_lock_file(tmp_path: Path) -> None:
    with LocalOpenAI(policy=lambda request: Reply(status=401, error="invalid api key")) as api:
        proc = run_cli(tmp_path, "+run=llm-smoke", "publish=false",
                       env={"POKEBENCH_BASE_URL": api.base_url, "POKEBENCH_API_KEY": SECRET})
    assert proc.returncode == 2 and "The pre-flight request failed" in proc.stderr, proc.stderr[-2000:]
    assert not (tmp_path / "runs" / "llm-smoke").exists()  # nothing stored, no lock file, no folder


def test_a_continual_harness_run_counts_on_one_bar_across_its_epochs(showdown, tmp_path, slow_api):
    """Three epochs of one pair each: one bar whose tally and answers run on from epoch to epoch."""
    proc = run_cli(tmp_path, "+run=ch-smoke", "matchups=[[ch-local,max-damage]]", "publish=false",
                   "turn_limit=4", env={"POKEBENCH_BASE_URL": slow_api.base_url}, server=showdown)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bars = [line for line in re.split(r"[\r\n]", proc.stderr) if line.startswith("ch-smoke:")]
    done = [int(m.group(1)) for line in bars if (m := re.search(r" (\d)/6 \[", line))]
    assert done[0] == 0 and done[-1] == 6 and done == sorted(done), done  # never back to the epoch's start
    tally = bars[-1].rsplit("game, ", 1)[1].split(" · ")
    games = sum(int(part.rsplit(" ", 1)[1]) for part in tally if re.fullmatch(r"[\w-]+ \d+", part))
    answers = int(next(part for part in tally if part.endswith(" answers")).split()[0])
    assert games == 6 and answers >= 6, bars[-1]  # the games of all three epochs, and their answers


def test_help_shows_the_chosen_runs_values_and_what_each_setting_does(tmp_path: Path) -> None:
    proc = run_cli(tmp_path, "+run=bots-smoke", "pairs=7", "--help")
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    assert "Settings of run 'bots-smoke' with pairs=7:" in text and "\n  pairs = 7\n      # Mirror pairs per matchup" in text
    assert "pokebench.players.heuristic.HeuristicBot" in text  # the run's players, not the empty default
    assert "\n  server.liveness_timeout = 30\n      # Seconds the server may take" in text
    # a setting's whole comment, not its first sentence (rolls said only "How each battle draws its random numbers.")
    rolls = text.split("\n  rolls = stock\n", 1)[1].split("\n  format =", 1)[0]
    assert "stock: Showdown's own" in rolls and "duplicate: a stream per" in rolls
    assert all(len(line) <= 120 for line in text.splitlines() if line.startswith("      # "))
    assert "\n  sequential.target_width = null\n      # the interval width" in text
    assert "bots-smoke" in text.split("Runs: ", 1)[1].splitlines()[0]
    plain = run_cli(tmp_path, "--help")
    assert plain.returncode == 0 and "Settings of every run (the defaults):" in plain.stdout
    assert "\n  players = {}\n" in plain.stdout and "\n  pairs = 2\n" in plain.stdout
    unknown = run_cli(tmp_path, "+run=no-such-run", "--help")
    assert unknown.returncode == 2 and "run/no-such-run" in unknown.stderr and "Traceback" not in unknown.stderr
    assert not (tmp_path / "runs").exists()  # asking for help plays nothing


# ---- the resume hint: a command that runs as printed ---------------------------------------------------

def _stored(db: Path) -> int:
    """Games in the run's store (read as a plain SQLite file); 0 before the store has its tables."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return conn.execute("SELECT COUNT(*) FROM games").fetchone()[0]
    except sqlite3.OperationalError:  # no file yet, or not its tables yet
        return 0


@pytest.mark.parametrize("started_by", ["interpreter", "console script"])
def test_the_resume_hint_after_ctrl_c_runs_as_printed_where_python_is_not_the_venv(tmp_path: Path,
                                                                                    started_by: str) -> None:
    """The hint is run by a shell whose PATH has node and no `python` (a fresh machine's venv is not on it):
    a bare `python -m pokebench` there is not found; the printed command plays the rest of the run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    node = shutil.which("node")
    assert node, "the pinned server needs node on PATH"
    (bin_dir / "node").symlink_to(node)
    env = dict(os.environ, PYTHONPATH=str(REPO_DIR), PATH=str(bin_dir))
    command = ([sys.executable, "-m", "pokebench"] if started_by == "interpreter"
               else [str(Path(sys.executable).parent / "pokebench")])
    args = ["+run=bots-smoke", "pairs=3", "concurrency=2", "publish=false", "server.sim_processes=1", "name=hint"]
    db = tmp_path / "runs" / "hint" / "store.sqlite"
    with started([*command, *args], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                 preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) as proc:
        wait_for(lambda: _stored(db) >= 1, 180, "a stored game")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-3000:]
    hint = re.search(r"^To resume: (.*)$", stderr, re.M)
    assert hint, stderr[-3000:]
    assert hint.group(1) == " ".join([*command, *args]), hint.group(1)
    assert _stored(db) < 18, "the run ended before Ctrl-C: nothing to resume"
    resumed = subprocess.run(hint.group(1), shell=True, cwd=tmp_path, env=env, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "18 of 18 stored in all." in resumed.stdout and _stored(db) == 18


def test_the_command_names_the_interpreter_as_typed_from_the_current_folder(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "argv", [str(REPO_DIR / "pokebench" / "__main__.py"), "+run=bots-smoke"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", str(tmp_path / ".venv" / "bin" / "python"))
    assert module_command("+run=a b") == ".venv/bin/python -m pokebench '+run=a b'"
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    assert command_prefix() == "./python -m pokebench"  # never a bare name the shell would look up on PATH
    monkeypatch.setattr(sys, "executable", "/opt/my env/bin/python3")
    assert command_prefix("pokebench.cli.publish") == "'/opt/my env/bin/python3' -m pokebench.cli.publish"
