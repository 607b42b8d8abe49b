"""Two published runs with the same games: a sharded run merged by publish against the unsharded run.

``python tests/support/published.py SITE_A SITE_B`` (the cluster scripts in tests/cluster/) exits 1
naming what differs; the tests call :func:`assert_same_games`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

#: The columns of games.csv that the seeds decide (not when, or in which store, a game was played).
PLAYED = ["game_id", "matchup", "pair", "game", "p1", "p2", "winner", "turns", "end_reason", "battle_seed",
          "p1_team_seed", "p2_team_seed"]


def _files(site: Path, folder: str) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((site / folder).glob("*"))}


def assert_same_games(a: Path, b: Path, games: int | None = None) -> None:
    """The published sites `a` and `b` hold the same games played the same way, byte for byte the same
    input logs, teams, ratings, head-to-head and pair tables (and `games` games, if given)."""
    played = [pd.read_csv(site / "games.csv").sort_values("game_id")[PLAYED].reset_index(drop=True) for site in (a, b)]
    assert games is None or len(played[0]) == games, f"{a} holds {len(played[0])} games, not {games}"
    assert played[0].equals(played[1]), f"the games of {a} and {b} differ"
    for folder in ("inputlogs", "teams"):
        files = [_files(site, folder) for site in (a, b)]
        assert len(files[0]) == len(played[0]) and files[0] == files[1], f"the {folder} of {a} and {b} differ"
    for table in ("ratings.csv", "h2h.csv", "pairs.csv"):
        assert (a / table).read_bytes() == (b / table).read_bytes(), f"{table} of {a} and {b} differ"


if __name__ == "__main__":
    site_a, site_b = (Path(arg) for arg in sys.argv[1:3])
    try:
        assert_same_games(site_a, site_b)
    except AssertionError as err:
        print(f"DIFFERENT: {err}", file=sys.stderr)
        raise SystemExit(1)
    print(f"the same games, input logs, teams, ratings, head-to-head and pairs: {site_a} and {site_b}")
