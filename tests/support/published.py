"""Two published runs with the same games: a sharded run merged by publish against the unsharded run.

``python tests/support/published.py SITE_A SITE_B [--analysed]`` (the cluster scripts in tests/cluster/) exits 1
naming what differs; the tests call :func:`assert_same_games`. With ``--analysed`` the two runs' analyses
(``pokebench analyse``, sharded or not) are compared too: :func:`assert_same_analysis`.
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


#: The columns of ratings.csv that come from the analysis's searches (not seeded: they differ between two analyses).
SEARCHED = ["mean_regret", "mean_regret_low", "mean_regret_high", "engine_agreement", "blunders_per_100",
            "mean_regret_full"]


def assert_same_games(a: Path, b: Path, games: int | None = None, analysed: bool = False) -> None:
    """The published sites `a` and `b` hold the same games played the same way, byte for byte the same
    input logs, teams, ratings, head-to-head and pair tables (and `games` games, if given); with `analysed`,
    ratings.csv but for the columns of the searches (SEARCHED)."""
    played = [pd.read_csv(site / "games.csv").sort_values("game_id")[PLAYED].reset_index(drop=True) for site in (a, b)]
    assert games is None or len(played[0]) == games, f"{a} holds {len(played[0])} games, not {games}"
    assert played[0].equals(played[1]), f"the games of {a} and {b} differ"
    for folder in ("inputlogs", "teams"):
        files = [_files(site, folder) for site in (a, b)]
        assert len(files[0]) == len(played[0]) and files[0] == files[1], f"the {folder} of {a} and {b} differ"
    for table in ("h2h.csv", "pairs.csv") if analysed else ("ratings.csv", "h2h.csv", "pairs.csv"):
        assert (a / table).read_bytes() == (b / table).read_bytes(), f"{table} of {a} and {b} differ"
    if analysed:
        ratings = [pd.read_csv(site / "ratings.csv").drop(columns=SEARCHED) for site in (a, b)]
        assert ratings[0]["elo_adjusted"].notna().all(), f"ratings.csv of {a} has no luck-adjusted Elo"
        assert ratings[0].equals(ratings[1]), f"ratings.csv of {a} and {b} differ (but for the searches' columns)"


def _sorted(table: Path, keys: list[str], drop: tuple[str, ...] = ()) -> pd.DataFrame:
    """A published table in the order of `keys` (a merged run lists its games in its stores' order)."""
    return pd.read_csv(table).drop(columns=list(drop)).sort_values(keys, kind="stable").reset_index(drop=True)


def assert_same_analysis(a: Path, b: Path) -> None:
    """The analyses published in `a` and `b` hold the same luck (luck_turns.csv, luck.csv but for the run's name:
    the same values, to the last digit, in any order) and a score for the same decisions, each once (the
    searches themselves are not seeded)."""
    turns = [_sorted(site / "luck_turns.csv", ["uid", "turn"]) for site in (a, b)]
    assert len(turns[0]) and turns[0].equals(turns[1]), f"the luck of {a} and {b} differs"
    luck = [_sorted(site / "luck.csv", ["uid"], drop=("run",)) for site in (a, b)]
    assert luck[0].equals(luck[1]), f"luck.csv of {a} and {b} differs"
    keys = [_sorted(site / "decision_quality.csv", ["uid", "side", "decision"])[["uid", "side", "decision"]]
            for site in (a, b)]
    assert len(keys[0]) and not keys[0].duplicated().any(), f"{a} scores no decision, or one twice"
    assert keys[0].equals(keys[1]), f"{a} and {b} score different decisions"


if __name__ == "__main__":
    site_a, site_b = (Path(arg) for arg in sys.argv[1:3])
    analysed = "--analysed" in sys.argv[3:]
    try:
        assert_same_games(site_a, site_b, analysed=analysed)
        if analysed:
            assert_same_analysis(site_a, site_b)
    except AssertionError as err:
        print(f"DIFFERENT: {err}", file=sys.stderr)
        raise SystemExit(1)
    print(f"the same games, input logs, teams, ratings, head-to-head and pairs{' and analyses' * analysed}: "
          f"{site_a} and {site_b}")
