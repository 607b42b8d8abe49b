"""What a run says in the terminal: at start-up, on its progress bar, and in its closing summary."""

from __future__ import annotations

import shlex
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from pokebench.play.budget import Budget
from pokebench.results.ratings import fit_ratings, player_summary
from pokebench.results.store import RunStore, run_stores


def resume_command(overrides: Sequence[str] | None = None) -> str:
    """The exact command that started this run (Hydra's overrides as given), to start it again."""
    args = list(overrides) if overrides is not None else sys.argv[1:]
    return "python -m pokebench " + " ".join(shlex.quote(a) for a in args)


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


@dataclass
class ThisStart:
    """What happened since the run was started this time."""

    played: int = 0
    harness_errors: Counter[str] = field(default_factory=Counter)
    not_started: int = 0
    stop_reason: str | None = None  # a budget, or an error no retry fixes
    preflight_cost_usd: float = 0.0


def store_spend(run_dir: Path) -> dict[str, dict[str, float]]:
    """Spend and tokens per player over every store of the run (whole and shards)."""
    total: dict[str, Counter[str]] = {}
    for path in run_stores(run_dir):
        with RunStore.open_existing(path, check=False) as store:  # the run may hold it open
            for player, row in store.spend_by_player().items():
                total.setdefault(player, Counter()).update(row)
    return {k: dict(v) for k, v in total.items()}


def _frames(run_dir: Path, table: str) -> pd.DataFrame:
    frames = []
    for path in run_stores(run_dir):
        with RunStore.open_existing(path, check=False) as store:  # the run may hold it open
            frames.append(store.games() if table == "games" else store.harness_errors())
    return pd.concat(frames) if frames else pd.DataFrame()


def all_games(run_dir: Path) -> pd.DataFrame:
    """The stored games of every store of the run."""
    return _frames(run_dir, "games")


def games_per_player(games: pd.DataFrame) -> dict[str, int]:
    if games.empty:
        return {}
    return Counter(games["p1"]) + Counter(games["p2"])  # type: ignore[return-value]


def run_summary(run_dir: Path, name: str, planned: int, now: ThisStart, anchor: str | None,
                budget: Budget | None = None) -> str:
    """The closing summary: games now and in all, the leaderboard, spend per model (and outside the games,
    from `budget`), harness errors by cause."""
    games, spend, errors = all_games(run_dir), store_spend(run_dir), _frames(run_dir, "errors")
    lines = [f"Run '{name}': {now.played} game(s) played now; {len(games)} of {planned} stored in all."]
    if len(games):
        try:
            board = fit_ratings(games, anchor=anchor, n_bootstrap=0) \
                if anchor is not None and anchor in set(games.p1) | set(games.p2) else None
        except Exception:  # too few games to fit (e.g. one player never met another): the tally says enough
            board = None
        table = player_summary(games).set_index("player")
        lines.append("Leaderboard:" + ("" if board is not None else " (score; too few games for ratings)"))
        order = list(board.player) if board is not None else list(table.sort_values("win_rate", ascending=False).index)
        for player in order:
            row = table.loc[player]
            elo = f"Elo {board.set_index('player').loc[player, 'elo']:7.1f}  " if board is not None else ""
            lines.append(f"  {player:<20} {elo}{int(row.wins)}-{int(row.ties)}-{int(row.losses)} "
                         f"({row.win_rate:.0%} of {int(row.games)})")
    if spend:
        lines.append("Spend by model (all starts; voided games included):")
        for player, row in sorted(spend.items()):
            voided = f", ${row['voided_cost_usd']:.4f} in voided games" if row.get("voided_cost_usd") else ""
            cached = row["cached_input_tokens"] / row["input_tokens"] if row.get("input_tokens") else 0.0
            lines.append(f"  {player:<20} {money(row['cost_usd'])}  {int(row['answers'])} answers, "
                         f"{int(row['input_tokens']):,} input tokens ({cached:.0%} cached), "
                         f"{int(row['output_tokens']):,} output{voided}")
        if now.preflight_cost_usd:
            lines.append(f"  pre-flight requests: {money(now.preflight_cost_usd)}")
    if budget is not None and budget.outside:
        lines.append("Spend outside the games (a harness refiner between epochs; all starts; in the budgets):")
        for player, usd in sorted(budget.outside.items()):
            lines.append(f"  {player:<20} {money(usd)}  {budget.outside_notes.get(player, '')}".rstrip())
    if now.harness_errors:
        causes = ", ".join(f"{cause} ×{n}" for cause, n in now.harness_errors.most_common())
        lines.append(f"Harness errors now: {causes} (played again on the next start).")
    elif len(errors):
        lines.append(f"Harness errors in earlier starts: {len(errors)} (all replayed or still missing).")
    if now.stop_reason:
        lines.append(f"Stopped: {now.stop_reason}.")
    return "\n".join(lines)


def progress_spend(spent: dict[str, float], tokens: dict[str, int]) -> str:
    """The spend part of the progress bar: ``$0.4210 · 1.2M in (87% cached) · 30k out``."""
    if not tokens.get("input"):
        return ""
    cached = tokens.get("cached", 0) / tokens["input"]
    return (f"${sum(spent.values()):.4f} · {_k(tokens['input'])} in ({cached:.0%} cached) · "
            f"{_k(tokens.get('output', 0))} out")


def _k(n: float) -> str:
    return f"{n / 1e6:.1f}M" if n >= 1e6 else f"{n / 1e3:.0f}k" if n >= 1e3 else str(int(n))


def count_tokens(decisions: Sequence[dict[str, Any]], tokens: Counter[str]) -> None:
    for d in decisions:
        tokens["input"] += d.get("input_tokens") or 0
        tokens["cached"] += d.get("cached_input_tokens") or 0
        tokens["output"] += d.get("output_tokens") or 0
