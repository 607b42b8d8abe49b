"""Decision quality from the cached searches: the rows of ``decision_quality.csv``, per-player figures, spread.

For one decision and one view (full information, or the player's own information: the headline),
the engine's search gives each action a value (side one's expected score, 0 to 1). Then:

- the engine's choice is its most visited action, and *best value* is that action's value;
- **regret** = best value − the value of the action the player chose (0 when it chose the engine's
  action; slightly negative when a rarely visited action's noisy value is above the choice's);
- **match**: the player chose the engine's action;
- **blunder**: regret ≥ :data:`BLUNDER_THRESHOLD`.

A decision with one legal action (a forced switch to the last Pokémon...) is a row with
``options`` 1 and no figures, and is left out of the per-player figures; so is a decision the
engine could not take (``note`` says why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from pokebench.analysis.cache import cache_path, read_entries
from pokebench.analysis.settings import Settings, engine_version
from pokebench.results.schema import DecisionQualityRow, QualitySpreadRow, columns

__all__ = ["BLUNDER_THRESHOLD", "QUALITY_COLUMNS", "SPREAD_COLUMNS", "quality_rows", "spread_rows",
           "quality_figures", "read_quality", "bootstrap_means", "FIGURE_COLUMNS"]

#: A regret at least this large (a fifth of a win of expected score) is a blunder.
BLUNDER_THRESHOLD = 0.2
QUALITY_COLUMNS = columns(DecisionQualityRow)
SPREAD_COLUMNS = columns(QualitySpreadRow)
#: Per-player figures beside the rating (ratings.csv), from the player's own information.
FIGURE_COLUMNS = ["analysed_decisions", "mean_regret", "mean_regret_low", "mean_regret_high", "engine_agreement",
                  "blunders_per_100", "mean_regret_full"]


def _view(view: dict[str, Any]) -> dict[str, Any]:
    """engine action, best value, value, regret, match of one view's search ({} when not searched)."""
    actions = view.get("actions")
    if not actions:
        return {}
    values = {name: value for name, _, value in actions}
    chosen = view["chosen"]
    engine_action, best = actions[0][0], actions[0][2]
    if best is None:  # one legal action: nothing was searched
        return {"engine_action": chosen}
    if chosen not in values:
        return {"engine_action": engine_action, "best_value": best, "note": f"the engine has no action {chosen!r}"}
    regret = round(best - values[chosen], 5)
    return {"engine_action": engine_action, "best_value": best, "value": values[chosen], "regret": regret,
            "match": chosen == engine_action, "blunder": regret >= BLUNDER_THRESHOLD}


def quality_rows(entries: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per decision (the columns :data:`QUALITY_COLUMNS`), in game and decision order."""
    rows = []
    for e in entries:
        if e.get("repeat", 0):
            continue
        own, full = _view(e["own"]), _view(e["full"])
        notes = [v["error"] for v in (e["own"], e["full"]) if "error" in v] + [v["note"] for v in (own, full)
                                                                               if "note" in v]
        rows.append({
            "uid": e["uid"], "game_id": e["game_id"], "run": e["run"], "side": e["side"], "player": e["player"],
            "decision": e["decision"], "turn": e["turn"], "kind": e["kind"], "choice": e["choice"],
            "options": e["options"], "action": e["own"].get("chosen", e["full"].get("chosen")),
            **{k: own.get(k) for k in ("engine_action", "best_value", "value", "regret", "match", "blunder")},
            **{f"{k}_full": full.get(k) for k in ("engine_action", "best_value", "value", "regret", "match",
                                                   "blunder")},
            "engine": e["engine"], "settings": e["settings"], "note": "; ".join(notes) or None})
    frame = pd.DataFrame(rows, columns=QUALITY_COLUMNS)
    return frame.sort_values(["run", "game_id", "side", "decision"], kind="stable").reset_index(drop=True)


def spread_rows(entries: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Each decision searched twice, per view: both engine choices and both regrets."""
    first = {(e["uid"], e["index"]): e for e in entries if not e.get("repeat", 0)}
    rows = []
    for again in (e for e in entries if e.get("repeat", 0) == 1):
        one = first.get((again["uid"], again["index"]))
        if one is None:
            continue
        for view in ("own", "full"):
            a, b = _view(one[view]), _view(again[view])
            if "regret" in a and "regret" in b:
                rows.append({"uid": one["uid"], "side": one["side"], "decision": one["decision"],
                             "view": "player" if view == "own" else "full", "engine_action_1": a["engine_action"],
                             "engine_action_2": b["engine_action"], "regret_1": a["regret"], "regret_2": b["regret"]})
    return pd.DataFrame(rows, columns=SPREAD_COLUMNS)


def read_quality(run_dirs: Sequence[Path], uids: Iterable[str], settings: Settings = Settings()
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The decision-quality rows and the spread rows of the games `uids` cached in the runs' folders."""
    wanted = set(uids)
    engine = engine_version() or None  # without poke-engine here, what any version cached
    entries = [e for run_dir in run_dirs for e in read_entries(cache_path(run_dir), engine, settings.key)
               if e["uid"] in wanted]
    unique = {(e["uid"], e["index"], e.get("repeat", 0)): e for e in entries}
    return quality_rows(unique.values()), spread_rows(list(unique.values()))


def other_settings(run_dirs: Sequence[Path], uids: Iterable[str], settings: Settings) -> dict[str, int]:
    """Decisions of the games `uids` that the runs' caches hold analysed with settings other than `settings`, per
    settings key (what a publish with other settings than the analysis's would leave out)."""
    wanted = set(uids)
    engine = engine_version() or None
    found: dict[str, set[tuple[str, int]]] = {}
    for run_dir in run_dirs:
        for e in read_entries(cache_path(run_dir), engine):
            if e["uid"] in wanted and e.get("settings") != settings.key:
                found.setdefault(str(e.get("settings")), set()).add((e["uid"], e["index"]))
    return {key: len(decisions) for key, decisions in found.items()}


def bootstrap_means(sums: np.ndarray, counts: np.ndarray, n_bootstrap: int, rng: np.random.Generator,
                    size: int | None = None) -> np.ndarray:
    """The mean over decisions of each of `n_bootstrap` resamples of `size` whole games (default: as many as
    there are), game i having `sums[i]` over `counts[i]` decisions."""
    picks = rng.integers(0, len(sums), size=(n_bootstrap, len(sums) if size is None else size))
    return sums[picks].sum(axis=1) / np.maximum(1, counts[picks].sum(axis=1))


def _bootstrap_mean(by_game: list[np.ndarray], n_bootstrap: int, seed: int, level: float) -> tuple[float, float]:
    """Percentile interval of the mean over decisions, resampling whole games."""
    if n_bootstrap <= 0 or len(by_game) < 2:
        return float("nan"), float("nan")
    sums = np.array([g.sum() for g in by_game])
    counts = np.array([len(g) for g in by_game])
    means = bootstrap_means(sums, counts, n_bootstrap, np.random.default_rng(seed))
    tail = (1 - level) / 2 * 100
    return float(np.percentile(means, tail)), float(np.percentile(means, 100 - tail))


def quality_figures(quality: pd.DataFrame, n_bootstrap: int = 200, seed: int = 0, level: float = 0.95
                    ) -> pd.DataFrame:
    """Per player (:data:`FIGURE_COLUMNS`): decisions scored, mean regret with a bootstrap interval over
    games, engine agreement (share), blunders per 100 decisions, from its own information; and the
    mean regret from full information."""
    out = []
    if quality.empty:
        return pd.DataFrame(columns=["player", *FIGURE_COLUMNS])
    scored = quality[(pd.to_numeric(quality["options"]) > 1) & quality["regret"].notna()]
    for player, rows in scored.groupby("player"):
        regret = pd.to_numeric(rows["regret"]).to_numpy(float)
        by_game = [pd.to_numeric(g["regret"]).to_numpy(float) for _, g in rows.groupby("uid")]
        low, high = _bootstrap_mean(by_game, n_bootstrap, seed, level)
        full = pd.to_numeric(rows["regret_full"])
        out.append({"player": player, "analysed_decisions": len(rows), "mean_regret": float(regret.mean()),
                    "mean_regret_low": low, "mean_regret_high": high,
                    "engine_agreement": float(rows["match"].astype(bool).mean()),
                    "blunders_per_100": 100.0 * float(rows["blunder"].astype(bool).mean()),
                    "mean_regret_full": float(full.mean()) if full.notna().any() else float("nan")})
    return pd.DataFrame(out, columns=["player", *FIGURE_COLUMNS])
