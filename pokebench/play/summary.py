"""What a run says in the terminal: at start-up, on its progress bar, and in its closing summary."""

from __future__ import annotations

import sys
import warnings
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping, Sequence

import pandas as pd

from pokebench.invocation import config_flags, module_command
from pokebench.play.budget import Budget
from pokebench.play.progress import spend_text
from pokebench.results.figures import pair_results, per_player_figures
from pokebench.results.luck_gain import with_luck_gain
from pokebench.results.ratings import RatingsError, fit_ratings, with_luck
from pokebench.results.run_stores import RunStores


def resume_command(overrides: Sequence[str] | None = None, changed: Mapping[str, str] | None = None) -> str:
    """The exact command that started this run (its interpreter or console script, where its configs are, Hydra's
    overrides as given), to start it again: it runs as printed (:mod:`pokebench.invocation`). `changed` settings
    (e.g. a cap raised) replace the command's own, or are added."""
    args = config_flags(sys.argv[1:]) + list(overrides) if overrides is not None else sys.argv[1:]
    for key, value in (changed or {}).items():
        args = [a for a in args if a.partition("=")[0].lstrip("+~") != key] + [f"{key}={value}"]
    return module_command(*args)


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


class StopKind(Enum):
    """Why a run stopped before its planned games were played."""

    #: A spending cap: no more games were started (exit code 4; a higher budget lets the run go on).
    BUDGET = "budget"
    #: An error no retry fixes: the games in flight were voided (exit code 3).
    FATAL = "fatal"


@dataclass(frozen=True)
class StopReason:
    kind: StopKind
    detail: str  # the budget's reason, or the error's words

    def __str__(self) -> str:
        return f"budget: {self.detail}" if self.kind is StopKind.BUDGET else self.detail


@dataclass
class ThisStart:
    """What happened since the run was started this time."""

    played: int = 0
    harness_errors: Counter[str] = field(default_factory=Counter)
    not_started: int = 0
    stop_reason: StopReason | None = None  # the first one; a run stops once
    #: This start's pre-flight requests (:meth:`RunStore.save_preflight` keeps them once the store is bound).
    preflight: list[dict[str, Any]] = field(default_factory=list)


def games_per_player(games: pd.DataFrame) -> dict[str, int]:
    if games.empty:
        return {}
    return Counter(games["p1"]) + Counter(games["p2"])


def _leaderboard(games: pd.DataFrame, decisions: pd.DataFrame, anchor: str | None,
                 luck: pd.DataFrame | None = None) -> list[str]:
    """The leaderboard as a table: Elo with its 95% interval (the published fit, :func:`fit_ratings`), with
    luck rows of some games the Elo from luck-adjusted scores and its interval beside it, the games, and for
    players with saved answers their re-ask and random-pick rates (:func:`per_player_figures`)."""
    players = set(games.p1) | set(games.p2)
    fixed = anchor if anchor is not None and anchor in players else sorted(players)[0]  # the run's anchor did not play: any player
    lucky = with_luck(games, luck) if luck is not None and len(luck) else None
    measured = 0 if lucky is None else int(lucky["luck_p1"].notna().sum())
    adjusted = None
    try:
        with warnings.catch_warnings():  # a bootstrap sample without the anchor's games: the interval says enough
            warnings.simplefilter("ignore")
            board = fit_ratings(games, anchor=fixed).set_index("player")
            if lucky is not None and measured:
                adjusted = fit_ratings(lucky, anchor=fixed, score="adjusted_p1").set_index("player")
    except RatingsError:  # one player, or players that never met: the tally says enough
        board = None
    figures = per_player_figures(games, decisions).set_index("player")
    order = list(board.index) if board is not None else list(figures.sort_values("win_rate", ascending=False).index)
    llm = figures["answers"].notna()
    rows = []
    for player in order:
        row = figures.loc[player]
        rating = board.loc[player] if board is not None else None
        rows.append({
            "player": player,
            "Elo": "" if rating is None else f"{rating.elo:.0f}",
            "95% interval": "" if rating is None else f"{rating.ci_low:.0f} to {rating.ci_high:.0f}",
            **({} if adjusted is None else {
                "adjusted Elo": f"{adjusted.loc[player, 'elo']:.0f}",
                "adjusted interval": f"{adjusted.loc[player, 'ci_low']:.0f} to {adjusted.loc[player, 'ci_high']:.0f}"}),
            "games": int(row.games),
            "W-T-L": f"{int(row.wins)}-{int(row.ties)}-{int(row.losses)}",
            "win rate": f"{row.win_rate:.0%}",
            **({"re-asks": _rate(row.reask_rate), "random picks": _rate(row.random_pick_rate)} if llm.any() else {}),
        })
    table = _table(rows)
    head = "Leaderboard:" + (f" (Elo with {fixed} at 1000)" if board is not None else " (too few games for ratings)")
    if adjusted is not None:
        head += f"; adjusted: from luck-adjusted scores ({measured} of {len(games)} games with measured luck)"
    return [head, *("  " + line for line in table)]


def luck_gain_lines(games: pd.DataFrame, luck: pd.DataFrame) -> list[str]:
    """What the luck adjustment did on the run's games: per matchup, the variance over mirror pairs raw /
    adjusted with its interval (``pairs.csv``'s luck columns); nothing without two measured pairs. A matchup
    whose raw pair scores did not vary has no ratio: it says so."""
    pairs = with_luck_gain(pair_results(games), games, luck)
    rows = [{"matchup": f"{r['player_a']} vs {r['player_b']}", "pairs": int(r["luck_pairs"]),
             "raw / adjusted": f"{float(r['variance_ratio']):.2f}×" if pd.notna(r["variance_ratio"])
             else "— (raw did not vary)",
             "95% interval": "—" if pd.isna(r["ratio_lo"]) else f"[{float(r['ratio_lo']):.2f}, {float(r['ratio_hi']):.2f}]"}
            for r in pairs[pairs["variance_ratio"].notna() | (pairs["var_raw"] == 0)].to_dict("records")]
    if not rows:
        return []
    head = "Luck adjustment: variance over mirror pairs, raw / adjusted (above 1: fewer games for the same interval):"
    return [head, *("  " + line for line in _table(rows))]


def engine_failure_line(decisions: pd.DataFrame) -> list[str]:
    """One line on the search bot's engine over the run's decisions (none when no decision was searched).

    A failed search (``engine_error``: a position poke-engine refused or panicked on) fell back to a
    random legal choice; the panic's output stays out of the run's (:func:`pokebench.engine.errors.guarded`).
    """
    if "engine_iterations" not in decisions or "engine_error" not in decisions:  # no search, or from before the record
        return []
    failed = decisions["engine_error"].notna()
    searches = int((decisions["engine_iterations"].notna() | failed).sum())
    if not searches:
        return []
    why = (" (each failure fell back to a random legal choice; its decision's engine_error says why)"
           if failed.any() else "")
    return [f"Search engine: failed on {int(failed.sum())} of {searches} searches{why}."]


def _table(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as aligned text lines, a header first: the first column left-aligned, the others right-aligned."""
    keys = list(rows[0])
    width = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in keys}

    def line(values: list[str]) -> str:
        return "  ".join(v.ljust(width[k]) if i == 0 else v.rjust(width[k]) for i, (k, v) in enumerate(zip(keys, values)))

    return [line(keys), *(line([str(r[k]) for k in keys]) for r in rows)]


def _voided_games_fate(missing: int) -> str:
    """Where the games voided by harness errors are now: with no planned game missing, every one was played again."""
    if not missing:
        return "every game they voided was played again"
    return f"{missing} planned game(s) not stored yet: the next start plays them"


def _rate(value: float) -> str:
    return "—" if pd.isna(value) else f"{value:.1%}"


def run_label(name: str, shard: tuple[int, int] | None) -> str:
    """How a run's lines name it; a shard's say so (its "6 of 6 stored" are the shard's games, not the run's)."""
    return f"Run '{name}'" if shard is None else f"Run '{name}', shard {shard[0]}/{shard[1]}"


def run_summary(stores: RunStores, name: str, planned: set[str], now: ThisStart, anchor: str | None,
                budget: Budget | None = None, luck: pd.DataFrame | None = None,
                shard: tuple[int, int] | None = None) -> str:
    """The closing summary of every run: games now and in all (of the `planned` game ids: a `shard`'s own), the
    leaderboard of every store's games (Elo with its interval, with `luck` rows (luck.csv's run, game_id,
    luck_p1, adjusted_p1, error) the luck-adjusted Elo and interval too, record, re-ask and random-pick rates),
    the search engine's failures, what the luck adjustment did per matchup (with `luck`), spend and tokens per model (players that call none are left out; and outside
    the games, from `budget`), harness errors by cause."""
    games, errors = stores.games(), stores.table("harness_errors")
    spend = {player: row for player, row in stores.spend_by_player().items()
             if row["cost_usd"] or row["input_tokens"] or row["output_tokens"]}
    decisions = stores.table("decisions")
    stored = len(planned & set(games["game_id"]))  # games() has its columns also when empty
    others = f" ({len(games)} with the other shards' stores)" if len(games) > stored else ""
    lines = [f"{run_label(name, shard)}: {now.played} game(s) played now; {stored} of {len(planned)} stored in all{others}."]
    if len(games):
        lines += _leaderboard(games, decisions, anchor, luck) + engine_failure_line(decisions)
        lines += luck_gain_lines(games, luck) if luck is not None and len(luck) else []
    if spend:
        lines.append("Spend by model (all starts; voided games included):")
        for player, row in sorted(spend.items()):
            voided = f", ${row['voided_cost_usd']:.4f} in voided games" if row.get("voided_cost_usd") else ""
            cached = row["cached_input_tokens"] / row["input_tokens"] if row.get("input_tokens") else 0.0
            lines.append(f"  {player:<20} {spend_text(row['cost_usd'], int(row.get('unpriced', 0)))}  "
                         f"{int(row['answers'])} answers, "
                         f"{int(row['input_tokens']):,} input tokens ({cached:.0%} cached), "
                         f"{int(row['output_tokens']):,} output{voided}")
        preflight = sum(row.get("preflight_cost_usd", 0.0) for row in spend.values())
        if preflight:
            lines.append(f"  of which pre-flight requests (one per model and start): {money(preflight)}")
    if budget is not None and budget.outside:
        lines.append("Spend outside the games (a harness refiner between epochs; all starts; in the budgets):")
        for player, usd in sorted(budget.outside.items()):
            lines.append(f"  {player:<20} {money(usd)}  {budget.outside_notes.get(player, '')}".rstrip())
    missing = len(planned) - stored
    if now.harness_errors:
        causes = ", ".join(f"{cause} ×{n}" for cause, n in now.harness_errors.most_common())
        lines.append(f"Harness errors now: {causes} ({_voided_games_fate(missing)}).")
    elif len(errors):
        lines.append(f"Harness errors in earlier starts: {len(errors)} ({_voided_games_fate(missing)}).")
    else:
        lines.append("Harness errors: none.")
    if now.stop_reason:
        said = str(now.stop_reason)  # a provider's refusal ends its own sentence
        lines.append(f"Stopped: {said}{'' if said.endswith(('.', '!', '?')) else '.'}")
    return "\n".join(lines)
