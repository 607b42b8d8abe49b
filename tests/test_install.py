"""PokéBench installed as a user would: a wheel in a fresh virtualenv, run from an empty folder."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pandas as pd
import pytest

from support.games import REPO_DIR

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)


def test_every_subpackage_and_data_folder_is_in_the_wheels_package_list() -> None:
    """A folder of package data left out of the list makes setuptools print ten screens of warnings."""
    listed = set(tomllib.loads((REPO_DIR / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = [p for p in (REPO_DIR / "pokebench").rglob("*") if p.is_dir() and p.name != "__pycache__"]
    found = {".".join(p.relative_to(REPO_DIR).parts) for p in folders} | {"pokebench"}
    found |= {f"pokebench._data.conf.{p.name}" for p in (REPO_DIR / "conf").iterdir() if p.is_dir()}
    assert found <= listed, f"add {sorted(found - listed)} to [tool.setuptools] packages in pyproject.toml"


def test_an_old_players_target_still_loads_with_a_deprecation_warning() -> None:
    from pokebench.play.plan import current_target

    with pytest.warns(DeprecationWarning, match="pokebench.players.random_bot.RandomBot"):
        assert current_target("players.random_bot.RandomBot") == "pokebench.players.random_bot.RandomBot"
    assert current_target("players.example_bot.HighestPowerBot") == "players.example_bot.HighestPowerBot"


@pytest.mark.slow
def test_the_wheel_installed_outside_the_checkout_plays_and_publishes_a_run(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(REPO_DIR)],
                   check=True, capture_output=True, timeout=300)
    (wheel,) = wheels.glob("pokebench-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    bin_dir = env_dir / "bin"
    subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True, timeout=600)
    home, work = tmp_path / "home", tmp_path / "empty"
    work.mkdir()
    # No PYTHONPATH, no checkout on the path: only what the wheel installed.
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(POKEBENCH_HOME=str(home), PATH=f"{bin_dir}{os.pathsep}{env['PATH']}")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return done

    where = run("python", "-c", "import pokebench, pokebench.paths as p; print(pokebench.__file__, p.checkout_dir())")
    assert str(REPO_DIR) not in where.stdout and where.stdout.split()[1] == "None"
    assert "ready" in run("pokebench-server", "install").stdout
    assert (home / "showdown-server" / "generated" / "battle-text.json").is_file()
    run("pokebench", "+run=bots-smoke", "pairs=1")
    games = pd.read_csv(work / "data" / "site" / "bots-smoke" / "games.csv")
    assert len(games) == 6 and (work / "data" / "site" / "bots-smoke" / "index.html").is_file()
    run("pokebench-publish", "bots-smoke", "--out", str(work / "site-again"))
    assert (work / "site-again" / "ratings.csv").is_file()
    assert "usage" in run("pokebench-replay", "--help").stdout.lower()
    # every player the wheel lists can be loaded (it listed the README's example, whose bot is a checkout's)
    listed = run("python", "-c", "import pokebench.paths as p; print(*sorted(f.stem for f in "
                 "(p.conf_dir() / 'player').glob('*.yaml')))").stdout.split()
    assert "example" not in listed and {"random", "search", "llm"} <= set(listed)


def test_a_user_bot_and_run_outside_the_repository_play_with_config_dir(tmp_path: Path) -> None:
    """docs/extending.md: configs in a folder of the user's own, a bot module on PYTHONPATH. A game that fails ends
    the first start with the command to resume, which runs as printed (it once left out --config-dir)."""
    (tmp_path / "fail-once").touch()
    (tmp_path / "my_bots.py").write_text(
        "import os\n\n"
        "from pokebench.player import BenchPlayer\n\n\n"
        "class FirstMoveBot(BenchPlayer):\n"
        "    def choose_move(self, battle):\n"
        "        if os.path.exists('fail-once'):\n"
        "            os.remove('fail-once')\n"
        "            raise RuntimeError('a bug of the bot, fixed for the next start')\n"
        "        if battle.available_moves:\n"
        "            return self.create_order(battle.available_moves[0])\n"
        "        return self.choose_random_move(battle)\n")
    conf = tmp_path / "myconf"
    (conf / "player").mkdir(parents=True)
    (conf / "run").mkdir()
    (conf / "player" / "first_move.yaml").write_text("_target_: my_bots.FirstMoveBot\n")
    (conf / "run" / "my-run.yaml").write_text(
        "# @package _global_\ndefaults:\n  - /player@players.first: first_move\n"
        "  - /player@players.max-damage: max_damage\npairs: 1\nmatchups: all\n")
    env = dict(os.environ, PYTHONPATH=f"{REPO_DIR}{os.pathsep}{tmp_path}")
    helped = subprocess.run([sys.executable, "-m", "pokebench", "--config-dir", str(conf), "+run=my-run", "--help"],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0, helped.stderr[-2000:]  # it refused: "Error parsing override 'myconf'"
    assert "Settings of run 'my-run':" in helped.stdout and "\n  pairs = 1\n" in helped.stdout
    assert "my-run" in helped.stdout.split("Runs: ", 1)[1].splitlines()[0]
    failed = subprocess.run([sys.executable, "-m", "pokebench", "--config-dir", str(conf), "+run=my-run",
                             "server.sim_processes=1", "retry_rounds=0"], cwd=tmp_path, env=env, capture_output=True,
                            text=True, timeout=600)
    assert failed.returncode == 1 and "start the same command again to play them:" in failed.stderr, failed.stderr[-3000:]
    resume = failed.stderr.rstrip().splitlines()[-1].strip()
    assert "--config-dir" in resume, resume
    done = subprocess.run(resume, shell=True, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    games = pd.read_csv(tmp_path / "data" / "site" / "my-run" / "games.csv")
    assert len(games) == 2 and set(games["p1"]) == {"first", "max-damage"}
