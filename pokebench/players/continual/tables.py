"""The Continual Harness's published tables: the gain over the same model without it, the learning curve,
and the harness's versions. Importing this module registers them for every publish (listed in :mod:`pokebench.plugins`).

A *harness player* is one whose game summaries carry ``harness_version``; its *plain partner* is
an LLM player of the same run with the same model and reasoning level and no harness. Both play
the same opponents on the same seeds, so pair k against opponent O is the same two teams for
both: the gain is measured pair by pair. Published together, several runs (independent learning
trajectories, each with its own seed text; or held-out evaluations of them) pool: the unit is a
pair of a run, (run, pair).

- ``harness_gain.csv``: per (harness, plain) couple, over the opponents both played: each one's
  mean score, the **score gain** (harness − plain) with a paired bootstrap interval over pairs
  (a bootstrap sample draws pair numbers with replacement and keeps, for every common opponent,
  both players' games of that pair), the gain in performance Elo (400·log10(s/(1−s)) of each
  one's score against those opponents, the same resample for both), the fitted ratings of both
  and their difference, and the cost per game of each, the refiner's spend included.
- ``learning_curve.csv``: score per epoch for both players, with a 95 % interval over the pairs of the
  epoch (of every run), the harness version of each epoch and whether it changed at that epoch (the
  plain partner's epochs are the harness player's pairs).
- ``harness_versions.csv``: one row per version: parent, the epochs and games that triggered it,
  edits applied and rejected per pass, failure signatures mined, the refiner's tokens and cost,
  the seed texts it learned from; and one row per refinement that made no version: failed (the
  API), killed (the run stopped; the calls it had paid), or with no change (every edit rejected).
- ``trajectory_gain.csv`` (several runs published together: trajectories): the gain pooled (``trajectory``
  ``all``) and of each run alone, each with its interval.
- ``harness_gap.csv`` (when an expert harness played: ``load_from: expert``): the "gap recovered",
  (adaptive − plain) / (expert − plain), with a paired bootstrap interval over pairs.
- ``harness_edits.csv``: one row per edit of every version (and of every refinement that changed
  nothing): pass, applied or rejected, the edit, the old and new entry (applied) or why (rejected), as JSON.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from pokebench.players.continual.edits import PASSES
from pokebench.players.continual.history import clustered
from pokebench.players.continual.versions import HarnessFiles
from pokebench.results.figures import Results, register_tables
from pokebench.results.loading import RunData
from pokebench.results.schema import SIDE_ONE_SCORE

N_BOOTSTRAP = 2000
LEVEL = 0.95


def _sides(games: pd.DataFrame, players: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """One row per (game, side): player, opponent, score, and the side's summary."""
    rows = []
    for g in _records(games):
        for side, other in (("p1", "p2"), ("p2", "p1")):
            summary = (players.get(g["game_id"]) or {}).get(side) or {}
            score = SIDE_ONE_SCORE[g["winner"]] if side == "p1" else 1.0 - SIDE_ONE_SCORE[g["winner"]]
            rows.append({"game_id": g["game_id"], "run": g["run"], "pair": int(g["pair"]),
                         "unit": f"{g['run']}.p{int(g['pair']):04d}", "player": g[side],
                         "opponent": g[other], "score": score, "summary": summary})
    return pd.DataFrame(rows)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in row.items()} for row in table.to_dict("records")]


def couples(sides: pd.DataFrame) -> list[tuple[str, str]]:
    """(harness player, plain partner) couples: same model and reasoning, the partner without a harness."""
    info: dict[str, dict[str, Any]] = {}
    for row in _records(sides):
        s = row["summary"]
        if s.get("model") is not None:
            info.setdefault(row["player"], {"model": s.get("model"), "reasoning": s.get("reasoning"),
                                         "harness": "harness_version" in s})
    harness = [p for p, i in info.items() if i["harness"]]
    plain = [p for p, i in info.items() if not i["harness"]]
    return [(h, p) for h in sorted(harness) for p in sorted(plain)
            if (info[h]["model"], info[h]["reasoning"]) == (info[p]["model"], info[p]["reasoning"])]


def _perf_elo(score: float, n: int) -> float:
    s = min(max(score, 0.5 / n), 1 - 0.5 / n)
    return 400 * math.log10(s / (1 - s))


def _cost(rows: pd.DataFrame) -> float | None:
    costs = [r.get("cost_usd") for r in rows["summary"]]
    return round(float(np.nansum([c for c in costs if c is not None])), 10) if costs else None


def gain_table(sides: pd.DataFrame, ratings: pd.DataFrame | None, refiner_cost: dict[str, float],
               n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> pd.DataFrame:
    rows = []
    for harness, plain in couples(sides):
        h, p = sides[sides.player == harness], sides[sides.player == plain]
        common = sorted(set(h.opponent) & set(p.opponent) - {harness, plain})
        h, p = h[h.opponent.isin(common)], p[p.opponent.isin(common)]
        pairs = sorted(set(h.unit) & set(p.unit))  # pairs of a run: (run, pair)
        if not pairs:
            continue
        h, p = h[h.unit.isin(pairs)], p[p.unit.isin(pairs)]
        # per pair: summed score and games of each player (all common opponents)
        (H, Hn), (P, Pn) = _per_unit(h, pairs), _per_unit(p, pairs)
        rng = np.random.default_rng(seed)
        draw = rng.integers(0, len(pairs), size=(n_bootstrap, len(pairs)))
        bh, bp = H[draw].sum(1) / Hn[draw].sum(1), P[draw].sum(1) / Pn[draw].sum(1)
        score_h, score_p = H.sum() / Hn.sum(), P.sum() / Pn.sum()
        elo = np.array([_perf_elo(a, int(Hn.sum())) - _perf_elo(b, int(Pn.sum())) for a, b in zip(bh, bp)])
        q = [(1 - LEVEL) / 2, (1 + LEVEL) / 2]
        rating = ratings.set_index("player")["elo"] if ratings is not None and not ratings.empty else pd.Series()
        h_cost, p_cost = _cost(h), _cost(p)
        refine = refiner_cost.get(harness, 0.0)
        parts = next((s["harness_parts"] for s in h.summary if s.get("harness_parts") is not None), None)
        rows.append({
            "harness_player": harness, "plain_player": plain,
            "parts": " ".join(parts) if parts is not None else None,
            "opponents": " ".join(common), "runs": int(h.run.nunique()), "pairs": len(pairs),
            "harness_games": int(Hn.sum()), "plain_games": int(Pn.sum()),
            "harness_score": round(score_h, 4), "plain_score": round(score_p, 4),
            "score_gain": round(score_h - score_p, 4),
            "score_gain_lo": round(float(np.quantile(bh - bp, q[0])), 4),
            "score_gain_hi": round(float(np.quantile(bh - bp, q[1])), 4),
            "elo_gain": round(_perf_elo(score_h, int(Hn.sum())) - _perf_elo(score_p, int(Pn.sum())), 1),
            "elo_gain_lo": round(float(np.quantile(elo, q[0])), 1),
            "elo_gain_hi": round(float(np.quantile(elo, q[1])), 1),
            "rating_harness": round(float(rating.get(harness, np.nan)), 1),
            "rating_plain": round(float(rating.get(plain, np.nan)), 1),
            "rating_diff": round(float(rating.get(harness, np.nan) - rating.get(plain, np.nan)), 1),
            "harness_cost_per_game_usd": (round(((h_cost or 0) + refine) / len(h), 6) if h_cost is not None else None),
            "plain_cost_per_game_usd": round(p_cost / len(p), 6) if p_cost is not None else None,
            "refiner_cost_usd": round(refine, 6),
            "bootstrap_samples": n_bootstrap, "level": LEVEL,
        })
    return pd.DataFrame(rows)


def trajectory_gain_table(sides: pd.DataFrame, run_dirs: list[Path], harness: list[str]) -> pd.DataFrame:
    """The gain of several runs published together (trajectories): pooled (``trajectory`` "all") and per run."""
    costs = refiner_costs(run_dirs, harness)
    tables = [gain_table(sides, None, costs).assign(trajectory="all")]
    for run_dir in run_dirs:
        tables.append(gain_table(sides[sides.run == run_dir.name], None,
                                 refiner_costs([run_dir], harness)).assign(trajectory=run_dir.name))
    table = pd.concat(tables, ignore_index=True)
    return table[["trajectory", *(c for c in table.columns if c != "trajectory" and not c.startswith("rating"))]]


def _per_unit(rows: pd.DataFrame, units: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Summed score and games per unit (pair of a run), in the order of `units`."""
    table = rows.groupby("unit")["score"].agg(["sum", "count"]).reindex(units)
    return table["sum"].to_numpy(), table["count"].to_numpy()


def gap_table(sides: pd.DataFrame, n_bootstrap: int = N_BOOTSTRAP, seed: int = 0) -> pd.DataFrame:
    """The paper's "gap recovered": (adaptive − plain) / (expert − plain), with a paired bootstrap interval over
    pairs, for every adaptive harness player, expert harness player (``load_from: expert``) and plain partner
    of the same model that played the same opponents on the same pairs."""
    expert = {str(r["player"]) for r in _records(sides) if r["summary"].get("harness_expert")}
    rows = []
    for adaptive, plain in couples(sides):
        for e in sorted(x for x, partner in couples(sides) if x in expert and partner == plain):
            if adaptive in expert:
                continue
            trio = sides[sides.player.isin([adaptive, e, plain])]
            common = sorted(set.intersection(*(set(trio[trio.player == q].opponent) for q in (adaptive, e, plain)))
                            - {adaptive, e, plain})
            trio = trio[trio.opponent.isin(common)]
            units = sorted(set.intersection(*(set(trio[trio.player == q].unit) for q in (adaptive, e, plain))))
            if not units:
                continue
            (A, An), (E, En), (P, Pn) = (_per_unit(trio[trio.player == q], units) for q in (adaptive, e, plain))
            draw = np.random.default_rng(seed).integers(0, len(units), size=(n_bootstrap, len(units)))
            a_, e_, p_ = (X[draw].sum(1) / Xn[draw].sum(1) for X, Xn in ((A, An), (E, En), (P, Pn)))
            with np.errstate(divide="ignore", invalid="ignore"):
                ratios = (a_ - p_) / (e_ - p_)
            finite = ratios[np.isfinite(ratios)]
            score = {q: float(X.sum() / Xn.sum()) for q, X, Xn in (("a", A, An), ("e", E, En), ("p", P, Pn))}
            gap = score["e"] - score["p"]
            q = [(1 - LEVEL) / 2, (1 + LEVEL) / 2]
            rows.append({
                "adaptive_player": adaptive, "expert_player": e, "plain_player": plain, "opponents": " ".join(common),
                "runs": int(trio.run.nunique()), "pairs": len(units), "adaptive_score": round(score["a"], 4),
                "expert_score": round(score["e"], 4), "plain_score": round(score["p"], 4),
                "gap_recovered": round((score["a"] - score["p"]) / gap, 4) if gap else None,
                "gap_recovered_lo": round(float(np.quantile(finite, q[0])), 4) if len(finite) else None,
                "gap_recovered_hi": round(float(np.quantile(finite, q[1])), 4) if len(finite) else None,
                "bootstrap_samples": n_bootstrap, "level": LEVEL})
    return pd.DataFrame(rows)


def curve_table(sides: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for harness, plain in couples(sides):
        h = sides[sides.player == harness]
        epoch_pairs = next((int(s["epoch_pairs"]) for s in h.summary if s.get("epoch_pairs")), 1)
        version_of: dict[int, Any] = {}
        for row in _records(h):
            version_of.setdefault((row["pair"] - 1) // epoch_pairs + 1, row["summary"].get("harness_version"))
        for name, role in ((harness, "harness"), (plain, "plain")):
            mine = sides[(sides.player == name) & ~sides.opponent.isin([harness, plain])]
            mine = mine.assign(epoch=(mine.pair - 1) // epoch_pairs + 1)
            previous = None
            for epoch_key, part in mine.groupby("epoch"):
                epoch = int(str(epoch_key))
                version = version_of.get(epoch)
                interval = clustered({u: list(g.score) for u, g in part.groupby("unit")})
                assert interval is not None
                rows.append({"harness_player": harness, "player": name, "role": role, "epoch": epoch,
                             "first_pair": int(part.pair.min()), "last_pair": int(part.pair.max()),
                             "runs": int(part.run.nunique()), "games": len(part),
                             "score": round(float(part.score.mean()), 4),
                             "score_lo": round(interval.lo, 4) if interval.pairs > 1 else None,
                             "score_hi": round(interval.hi, 4) if interval.pairs > 1 else None,
                             "harness_version": version if role == "harness" else None,
                             "version_changed": bool(role == "harness" and previous is not None
                                                     and version != previous)})
                previous = version
    return _integers(pd.DataFrame(rows), ["harness_version"])


def _harness_files(run_dirs: list[Path], harness_players: list[str]) -> Iterator[tuple[Path, str, HarnessFiles]]:
    """Each (run folder, harness player, its harness files) that exists, runs in order."""
    for run_dir in run_dirs:
        for player in harness_players:
            files = HarnessFiles(run_dir / "players" / player)
            if files.exists():
                yield run_dir, player, files


def versions_table(run_dirs: list[Path], harness_players: list[str]) -> pd.DataFrame:
    rows = []
    for run_dir, player, files in _harness_files(run_dirs, harness_players):
        state = files.read_state()
        first_epoch: dict[int, int] = {}
        for epoch, version in sorted(state.epochs.items(), key=lambda kv: int(kv[0])):
            first_epoch.setdefault(version, int(epoch))
        for snap in files.versions():
            passes = snap.passes or {}
            rows.append({
                "run": run_dir.name, "player": player, "version": snap.version, "parent": snap.parent,
                "first_epoch": first_epoch.get(snap.version), "trigger": snap.trigger.get("kind"),
                "trigger_epochs": " ".join(str(e) for e in snap.trigger.get("epochs", [])),
                "trigger_games": len(snap.trigger.get("games", [])),
                "signatures": json.dumps(snap.trigger.get("signatures") or {}, sort_keys=True),
                **{f"{name}_applied": len((passes.get(name) or {}).get("applied", [])) for name in PASSES},
                **{f"{name}_rejected": len((passes.get(name) or {}).get("rejected", [])) for name in PASSES},
                **_refiner_calls(snap.calls), "refiner_cost_usd": snap.refiner_cost_usd,
                "at": snap.at, "harness": snap.harness.model_dump_json(),
                "learned_from": "; ".join(str(source) for source in snap.learned_from),
            })
        for attempt in state.attempts:
            if attempt.get("ok") and attempt.get("version") != attempt.get("from_version"):
                continue  # it made a version: that version's row
            passes = attempt.get("passes") or {}
            rows.append({"run": run_dir.name, "player": player, "version": None,
                         "parent": attempt.get("from_version"), "trigger": _no_version(attempt),
                         "trigger_epochs": " ".join(str(e) for e in attempt.get("epochs", [])),
                         "trigger_games": len(attempt.get("games", [])),
                         **{f"{name}_applied": 0 for name in PASSES},
                         **{f"{name}_rejected": len((passes.get(name) or {}).get("rejected", []))
                            for name in PASSES},
                         **_refiner_calls(attempt.get("calls", [])),
                         "refiner_cost_usd": attempt.get("cost_usd"), "at": attempt.get("at"),
                         "error": attempt.get("error"), "harness": None})
    return _integers(pd.DataFrame(rows), ["version", "parent", "first_epoch"])


def _refiner_calls(calls: list[dict[str, Any]]) -> dict[str, int]:
    """The refiner's calls of a version, or of a refinement that made none: their count and tokens."""
    return {"refiner_calls": len(calls), "refiner_input_tokens": sum(c.get("input_tokens") or 0 for c in calls),
            "refiner_output_tokens": sum(c.get("output_tokens") or 0 for c in calls)}


def _no_version(attempt: dict[str, Any]) -> str:
    """What a refinement that made no version was."""
    if attempt.get("killed"):
        return "killed refinement"
    return "refinement with no change" if attempt.get("ok") else "failed refinement"


def _integers(table: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Whole-number columns with gaps written as integers (``3``, not ``3.0``)."""
    for column in columns:
        if column in table.columns:
            table[column] = table[column].astype("Int64")
    return table


def edits_table(run_dirs: list[Path], harness_players: list[str]) -> pd.DataFrame:
    rows = []
    for run_dir, player, files in _harness_files(run_dirs, harness_players):
        unchanged = [(None, a.get("at"), a.get("passes") or {}) for a in files.read_state().attempts
                     if a.get("ok") and a.get("version") == a.get("from_version")]
        for version, at, passes in [(s.version, s.at, s.passes or {}) for s in files.versions()] + unchanged:
            for pass_name, result in passes.items():
                for status in ("applied", "rejected"):
                    for item in result.get(status, []):
                        rows.append({"run": run_dir.name, "player": player, "version": version, "at": at,
                                     "pass": pass_name, "status": status,
                                     "edit": json.dumps(item.get("edit"), ensure_ascii=False),
                                     "old": json.dumps(item.get("old"), ensure_ascii=False),
                                     "new": json.dumps(item.get("new"), ensure_ascii=False),
                                     "why": item.get("why")})
    return _integers(pd.DataFrame(rows, columns=["run", "player", "version", "at", "pass", "status", "edit", "old",
                                                 "new", "why"]), ["version"])


def refiner_costs(run_dirs: list[Path], harness_players: list[str]) -> dict[str, float]:
    """Each harness player's refiner spend over the runs (failed attempts included)."""
    total: dict[str, float] = {}
    for _, player, files in _harness_files(run_dirs, harness_players):
        spent = [a.get("cost_usd") or 0.0 for a in files.read_state().attempts]
        total[player] = total.get(player, 0.0) + float(sum(spent))
    return total


def harness_tables(games: pd.DataFrame, players: dict[str, dict[str, Any]], ratings: pd.DataFrame | None,
                   run_dirs: list[Path]) -> dict[str, pd.DataFrame]:
    """The four tables (empty dict when no harness player played)."""
    if games.empty:
        return {}
    sides = _sides(games, players)
    harness = sorted({str(row["player"]) for row in _records(sides) if "harness_version" in row["summary"]})
    if not harness:
        return {}
    tables = {"harness_gain": gain_table(sides, ratings, refiner_costs(run_dirs, harness)),
              "learning_curve": curve_table(sides), "harness_versions": versions_table(run_dirs, harness),
              "harness_edits": edits_table(run_dirs, harness)}
    if sides.run.nunique() > 1:
        tables["trajectory_gain"] = trajectory_gain_table(sides, run_dirs, harness)
    gap = gap_table(sides)
    return {**tables, "harness_gap": gap} if not gap.empty else tables



@register_tables
def published_tables(data: RunData, results: Results) -> dict[str, pd.DataFrame]:
    """The tables at every publish (registered with :func:`pokebench.results.figures.register_tables`)."""
    # the tables above key a game's player summaries by game id; in published results the uid is a game's one id
    games = results.games.assign(game_id=results.games["uid"])
    return harness_tables(games, data.players, results.ratings, data.run_dirs)
