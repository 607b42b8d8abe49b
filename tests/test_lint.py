"""The static checks run with the tests: ruff (pyflakes and syntax rules) and mypy on the package."""

from __future__ import annotations

import subprocess
import sys

from support.games import REPO_DIR


def _check(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", *args], cwd=REPO_DIR, capture_output=True, text=True, timeout=600)
    assert "No module named" not in done.stderr, f"{args[0]} is not installed: run `make setup` (the test extras)"
    assert done.returncode == 0, f"`{' '.join(args)}` found problems:\n{done.stdout[-6000:]}{done.stderr[-2000:]}"


def test_ruff_finds_nothing() -> None:
    _check("ruff", "check", "pokebench", "tests", "benchmarks", "players")


def test_mypy_finds_nothing_in_the_package() -> None:
    _check("mypy")  # the packages and settings are in pyproject.toml, [tool.mypy]
