"""Figures: ratings with honest intervals, head-to-head, mirror-pair splits, per-player figures and settings.

Everything here is computed from loaded runs (:class:`pokebench.results.loading.RunData`) and
becomes the published tables; :func:`compute_results` is the one entry point. Extra
per-player tables (a Continual Harness gain table, a learning curve, ...) plug in with
:func:`register_tables` and are written as ``<name>.csv``; a table with a ``player``
column is shown on that player's page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Callable

import numpy as np
import pandas as pd

from pokebench.plugins import TABLE_PLUGINS, load_plugins
from pokebench.results.loading import PublishError, RunData, check_publishable, is_missing, model_answers
from pokebench.results.luck_gain import with_luck_gain
from pokebench.results.ratings import (INTERVAL_RULE, LUCK_COLUMNS, RANK_RULE, RatingsError, fit_ratings, head_to_head,
                                       luck_figures, with_luck)
from pokebench.results.schema import (SCHEMA_VERSION, BootstrapInfo, DecisionQualityRow, LuckRow, LuckTurnRow, Meta,
                                      SIDE_ONE_SCORE, PairRow, QualitySpreadRow, RatingRow, columns)

__all__ = ["Results", "compute_results", "per_player_figures", "pair_results", "player_rows", "register_table",
           "register_tables", "adjusted_figures", "EXTRA_TABLES", "FIGURE_COLUMNS", "ADJUSTED_COLUMNS"]

#: Per-player figures of method section 7 in ``ratings.csv`` (empty for players without them).
FIGURE_COLUMNS = ("answers", "cost_total", "cost_per_game", "output_tokens_per_decision", "seconds_per_decision",
                  "reask_rate", "random_pick_rate")
#: Fields of a side's player info that are per-game counters (summed), not settings.
COUNTERS = {"decisions", "refusals", "answers", "llm_decisions", "reasks", "invalid_answers", "random_picks",
            "refused_answers", "answers_without_usage", "api_retries", "cost_usd", "latency_s"}
#: Fields of a side's player info that are neither settings nor counters.
NOT_SETTINGS = {"player", "username", "choice_errors", "decision_ms", "policy"}

ExtraTables = Callable[[RunData, "Results"], "dict[str, pd.DataFrame]"]
#: Functions of (runs, results) giving extra tables by name; see :func:`register_tables`.
EXTRA_TABLES: list[ExtraTables] = []


def register_tables(make: ExtraTables) -> ExtraTables:
    """Publish the extra tables ``<name>.csv`` that ``make(runs, results)`` returns, at every publish.

    ``make`` returns {name: table} (empty when the runs have nothing for it). A table with a
    ``player`` column is shown on that player's page and listed in ``players.json`` (``tables``).
    Usable as a decorator; a module that registers tables is listed in :data:`pokebench.plugins.TABLE_PLUGINS`.
    """
    EXTRA_TABLES.append(make)
    return make


def register_table(name: str, make: Callable[[RunData, "Results"], "pd.DataFrame | None"]) -> None:
    """One extra table ``<name>.csv`` (``make`` returns it, or None when there is nothing)."""
    def one(data: RunData, results: "Results") -> dict[str, pd.DataFrame]:
        table = make(data, results)
        return {} if table is None else {name: table}

    register_tables(one)


def _col(df: pd.DataFrame, name: str) -> pd.Series:
    if name in df.columns:
        return pd.to_numeric(df[name], errors="coerce")
    return pd.Series(np.nan, index=df.index, dtype=float)


def _flag(df: pd.DataFrame, name: str) -> pd.Series | None:
    if name not in df.columns or df[name].map(is_missing).all():
        return None
    return df[name].map(lambda v: bool(v) if not is_missing(v) else False)


def _decision_count(rows: pd.DataFrame, key: str) -> int:
    """Decisions among a player's answer rows: distinct (game, side, decision number); a re-ask keeps its
    decision's number. Rows without decision numbers count one decision each."""
    cols = [c for c in (key, "side", "decision") if c in rows.columns]
    if "decision" not in cols or rows["decision"].map(is_missing).any():
        return len(rows)
    return len(rows.drop_duplicates(cols))


def _bot_seconds(players: dict[str, dict[str, Any]] | None) -> dict[str, float]:
    """Mean seconds per decision of players that measure their own (Foul Play's ``decision_ms``)."""
    total: dict[str, float] = {}
    count: dict[str, int] = {}
    for sides in (players or {}).values():
        for info in sides.values():
            ms = info.get("decision_ms") if isinstance(info, dict) else None
            n = info.get("decisions") if isinstance(info, dict) else None
            if isinstance(ms, dict) and isinstance(ms.get("mean"), (int, float)) and isinstance(n, int) and n > 0:
                total[info["player"]] = total.get(info["player"], 0.0) + ms["mean"] / 1000 * n
                count[info["player"]] = count.get(info["player"], 0) + n
    return {p: total[p] / count[p] for p in total}


def per_player_figures(games: pd.DataFrame, decisions: pd.DataFrame | None,
                       players: dict[str, dict[str, Any]] | None = None) -> pd.DataFrame:
    """Per player: games, wins, ties, losses, win_rate and the figures of method section 7.

    - ``answers``: saved answers of a model (decisions rows of model calls; re-asks and refused choices included;
      a bot's own decision records, the search bot's, are not answers);
    - ``cost_total``: the player's total ``cost_usd`` over its finished games (refinement
      calls included; NaN if an answer with usage has no cost); ``cost_per_game`` divides it
      by the games: the cost of one side of one game;
    - ``output_tokens_per_decision``: output tokens per saved answer with usage (reasoning
      is already inside output and is not added again; input and cached input excluded);
    - ``seconds_per_decision``: mean ``latency_s`` (request to answer), or for a player that
      measures its own decisions (``decision_ms`` in its game info: Foul Play) their mean;
    - ``reask_rate``: share of saved answers that were a re-ask;
    - ``random_pick_rate``: share of decisions that ended in a random pick (a decision is one
      chosen action; its re-asks are answers of the same decision).

    Figures a player has no data for are NaN (never zero).
    """
    long = pd.concat([
        pd.DataFrame({"player": games["p1"], "score": games["winner"].map(SIDE_ONE_SCORE)}),
        pd.DataFrame({"player": games["p2"], "score": 1.0 - games["winner"].map(SIDE_ONE_SCORE)}),
    ], ignore_index=True)
    out = long.groupby("player").agg(games=("score", "size"), wins=("score", lambda s: int((s == 1).sum())),
                                     ties=("score", lambda s: int((s == 0.5).sum())),
                                     losses=("score", lambda s: int((s == 0).sum())))
    out["win_rate"] = (out["wins"] + 0.5 * out["ties"]) / out["games"]
    for col in FIGURE_COLUMNS:
        out[col] = np.nan
    for player, seconds in _bot_seconds(players).items():
        if player in out.index:
            out.loc[player, "seconds_per_decision"] = seconds
    games_of = {str(p): g for p, g in long.groupby("player")["score"]}
    key = "uid" if "uid" in games.columns else "game_id"
    if decisions is not None and not decisions.empty and "player" in decisions.columns:
        d = decisions
        if key in d.columns and key in games.columns:
            d = d[d[key].isin(set(games[key]))]
        for key_, rows in d.groupby("player"):
            player = str(key_)
            if player not in out.index:
                continue
            cost, all_out = _col(rows, "cost_usd"), _col(rows, "output_tokens")  # refiner calls are spend too
            if "kind" in rows.columns:  # ...but only answers are decisions (not a refinement or a consultation)
                rows = rows[rows["kind"].map(is_missing)]
            answers = len(model_answers(rows))  # a bot's own decision records (the search bot's) are no model's answers
            if answers:
                out.loc[player, "answers"] = answers
            if cost.notna().any() and not (cost.isna() & all_out.notna()).any():
                out.loc[player, "cost_total"] = cost.sum()  # an answer with usage but no price: unknown
                out.loc[player, "cost_per_game"] = float(cost.sum()) / len(games_of[player])
            out_tokens = _col(rows, "output_tokens")
            if out_tokens.notna().any():
                out.loc[player, "output_tokens_per_decision"] = out_tokens.sum() / out_tokens.notna().sum()
            latency = _col(rows, "latency_s")
            if latency.notna().any():
                out.loc[player, "seconds_per_decision"] = latency.mean()
            reask, random_pick = _flag(rows, "reask"), _flag(rows, "random_pick")
            if reask is not None:
                out.loc[player, "reask_rate"] = reask.mean()  # per answer: a re-ask is an answer
            if random_pick is not None:  # per decision: at most one random pick ends a decision
                out.loc[player, "random_pick_rate"] = random_pick.sum() / _decision_count(rows, key)
    out = out.reset_index().rename(columns={"index": "player"})
    for col in ("games", "wins", "ties", "losses"):
        out[col] = out[col].astype(int)
    return out


def pair_results(games: pd.DataFrame) -> pd.DataFrame:
    """Per matchup: mirror pairs won 2–0 by A, split 1–1, won 2–0 by B, with ties, incomplete.

    A is side 1 of game 1 (the first name of the matchup).
    """
    rows = []
    for matchup, grp in games.groupby("matchup", sort=True):
        first = grp.sort_values(["pair", "game"]).iloc[0]
        a, b = (first["p1"], first["p2"]) if int(first["game"]) == 1 else (first["p2"], first["p1"])
        counts = dict.fromkeys(("a_2_0", "split_1_1", "b_2_0", "with_ties", "incomplete"), 0)
        complete = 0
        for _, pair in grp.groupby(["run", "pair"]):
            if len(pair) < 2:
                counts["incomplete"] += 1
                continue
            complete += 1
            if (pair["winner"] == "tie").any():
                counts["with_ties"] += 1
                continue
            a_wins = int(sum((w == "p1") == (p1 == a) for w, p1 in zip(pair["winner"], pair["p1"])))
            counts[{2: "a_2_0", 1: "split_1_1", 0: "b_2_0"}[a_wins]] += 1
        rows.append({"matchup": matchup, "player_a": a, "player_b": b, "pairs": complete, **counts})
    return pd.DataFrame(rows, columns=columns(PairRow))


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys: {"model": {"prices": {"input": 3}}} -> {"model.prices.input": 3}."""
    if not isinstance(value, dict):
        return {prefix: value}
    out: dict[str, Any] = {}
    for k, v in value.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def player_rows(ratings: pd.DataFrame, games: pd.DataFrame, players: dict[str, dict[str, Any]],
                tables: dict[str, pd.DataFrame], decisions: pd.DataFrame | None = None,
                configs: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One entry of ``players.json`` per player: settings apart from summed counters.

    ``kind`` is ``llm`` for a player whose decisions name a model or report tokens, else ``bot``
    (a bot may report decisions too, e.g. Foul Play's time per choice). The settings are what the
    player reported identically in all its games plus, under ``config.``, its run config (model,
    provider address, reasoning levels, prices and their date, bot parameters; no secrets)."""
    llm: set[str] = set()
    if decisions is not None and not decisions.empty:
        uses = decisions["model"].notna() | pd.to_numeric(decisions["output_tokens"], errors="coerce").notna()
        llm = set(decisions.loc[uses, "player"])
    out = []
    for player in ratings["player"]:
        infos = []
        for uid, p1, p2 in zip(games["uid"], games["p1"], games["p2"]):
            for side, name in (("p1", p1), ("p2", p2)):
                info = players.get(uid, {}).get(side)
                if name == player and isinstance(info, dict):
                    infos.append(info)
        settings: dict[str, Any] = {}
        counters: dict[str, float] = {}
        keys = sorted(set().union(*infos)) if infos else []
        for k in keys:
            values = [i.get(k) for i in infos]
            numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            same = all(json.dumps(v, sort_keys=True, default=str) == json.dumps(values[0], sort_keys=True, default=str)
                       for v in values)
            if k in NOT_SETTINGS:
                continue
            if k in COUNTERS or k.endswith("_tokens") or (numbers and len(numbers) == len(values) and not same):
                if numbers:
                    total = sum(numbers)
                    counters[k] = int(total) if all(isinstance(v, int) for v in numbers) else round(float(total), 10)
            elif same and k in infos[0] and all(k in i for i in infos):
                settings[k] = values[0]
        for k, v in _flat((configs or {}).get(player, {}), "config").items():
            settings.setdefault(k, v)
        listed = [name for name, t in tables.items() if "player" in t.columns and (t["player"] == player).any()]
        out.append({"player": player, "kind": "llm" if player in llm else "bot", "settings": settings,
                    "counters": counters, "tables": listed})
    return out


@dataclass
class Results:
    """Everything a published folder holds, as tables (the row models of :mod:`pokebench.results.schema`)."""

    ratings: pd.DataFrame
    h2h: pd.DataFrame
    pairs: pd.DataFrame
    games: pd.DataFrame
    decisions: pd.DataFrame
    players: list[dict[str, Any]]
    meta: Meta
    extra: dict[str, pd.DataFrame] = field(default_factory=dict)
    errors: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: decision_quality.csv and decision_quality_spread.csv (:mod:`pokebench.analysis.quality`); no rows
    #: when the runs were not analysed.
    quality: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=columns(DecisionQualityRow)))
    quality_spread: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=columns(QualitySpreadRow)))
    #: luck.csv and luck_turns.csv (:mod:`pokebench.analysis.luck_rows`); no rows when the runs were not analysed.
    luck: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=columns(LuckRow)))
    luck_turns: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=columns(LuckTurnRow)))

    @property
    def anchor(self) -> str:
        return self.meta.anchor

    @property
    def partial(self) -> bool:
        return self.meta.partial

    @property
    def llm_players(self) -> list[str]:
        kinds = {p["player"]: p["kind"] for p in self.players}
        return [p for p in self.ratings["player"] if kinds.get(p) == "llm"]


#: The luck-adjusted rating beside the raw one in ``ratings.csv`` (:func:`adjusted_figures`).
ADJUSTED_COLUMNS = ("elo_adjusted", "adjusted_lo", "adjusted_hi")


def adjusted_figures(games: pd.DataFrame, luck: pd.DataFrame | None, anchor: str, n_bootstrap: int, seed: int,
                     level: float, prior_sd: float) -> pd.DataFrame:
    """Per player: the Elo from luck-adjusted scores with its interval (:data:`ADJUSTED_COLUMNS`, the fit of
    :func:`fit_ratings` with ``score="adjusted_p1"``) and its mean luck (:data:`LUCK_COLUMNS`); every column
    empty when no game has measured luck."""
    joined = with_luck(games, luck) if luck is not None and len(luck) else None
    if joined is None or joined["luck_p1"].isna().all():
        return pd.DataFrame(columns=["player", *ADJUSTED_COLUMNS, *LUCK_COLUMNS])
    fit = fit_ratings(joined, anchor=anchor, n_bootstrap=n_bootstrap, seed=seed, ci=level, prior_sd=prior_sd,
                      score="adjusted_p1")
    fit = fit.rename(columns=dict(zip(("elo", "ci_low", "ci_high"), ADJUSTED_COLUMNS)))
    return fit[["player", *ADJUSTED_COLUMNS]].merge(luck_figures(joined, n_bootstrap, seed, level), on="player")


def _pokebench_version() -> str:
    try:
        return version("pokebench")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout that is not installed
        return "unknown"


def compute_results(data: RunData, anchor: str = "max-damage", n_bootstrap: int = 200, seed: int = 0,
                    level: float = 0.95, prior_sd: float = 800.0, quality: pd.DataFrame | None = None,
                    quality_spread: pd.DataFrame | None = None, luck: pd.DataFrame | None = None,
                    luck_turns: pd.DataFrame | None = None) -> Results:
    """Ratings with intervals and both ranks, head-to-head, pair splits and per-player figures.

    `quality` and `quality_spread`: the runs' decision quality (:func:`pokebench.analysis.quality.read_quality`),
    whose per-player figures join the ratings; `luck` and `luck_turns`: the games' luck
    (:func:`pokebench.analysis.luck_rows.read_luck`), from which the ratings gain the luck-adjusted Elo and the
    mean luck per player (:func:`adjusted_figures`); none (empty columns) when the runs were not analysed.
    """
    from pokebench.analysis.quality import FIGURE_COLUMNS as QUALITY_FIGURES, quality_figures

    check_publishable(data)
    games = data.games
    names = sorted(set(games["p1"]) | set(games["p2"]))
    if len(names) < 2:
        raise PublishError(f"only one player ({names[0]}) in these games: ratings need games between two "
                           "or more players.")
    if anchor not in names:
        raise PublishError(f"the anchor player {anchor!r} has no games here, so it cannot fix the rating scale. "
                           f"Players: {', '.join(names)}. Pass --anchor PLAYER (one of them).")
    try:
        ratings = fit_ratings(games, anchor=anchor, n_bootstrap=n_bootstrap, seed=seed, ci=level, prior_sd=prior_sd)
        h2h = head_to_head(games)
    except RatingsError as err:
        raise PublishError(str(err).replace("Pass anchor=<one of them>.", "Pass --anchor PLAYER.")) from None
    figures = per_player_figures(games, data.decisions, data.players)
    ratings = ratings.merge(figures[["player", *FIGURE_COLUMNS]], on="player", how="left")
    quality = quality if quality is not None else pd.DataFrame(columns=columns(DecisionQualityRow))
    ratings = ratings.merge(quality_figures(quality, n_bootstrap, seed, level), on="player", how="left")
    ratings = ratings.merge(adjusted_figures(games, luck, anchor, n_bootstrap, seed, level, prior_sd), on="player",
                            how="left")
    for col in QUALITY_FIGURES:
        if col not in ratings.columns:
            ratings[col] = np.nan
    ratings.insert(0, "rank", np.arange(1, len(ratings) + 1))
    ratings = ratings[columns(RatingRow)]
    prompts = sorted({int(info["prompt_version"]) for sides in data.players.values() for info in sides.values()
                      if isinstance(info, dict) and isinstance(info.get("prompt_version"), int)})
    meta = Meta(
        schema_version=SCHEMA_VERSION, pokebench_version=_pokebench_version(),
        showdown_versions=sorted(set(map(str, games["showdown_version"]))), prompt_versions=prompts,
        runs=data.runs, anchor=anchor, anchor_elo=1000.0, prior_sd=prior_sd,
        bootstrap=BootstrapInfo(samples=n_bootstrap, seed=seed, level=level, unit="mirror pair"),
        interval_rule=INTERVAL_RULE, rank_rule=RANK_RULE, games=len(games), duplicates_merged=data.duplicates_merged,
        partial=data.partial, tables=[], played_from=str(games["started_at"].min()) if len(games) else None,
        played_to=str(games["ended_at"].max()) if len(games) else None)
    pairs = pair_results(games)
    if luck is not None and len(luck):
        pairs = with_luck_gain(pairs, games, luck, n_bootstrap, seed, level)
    results = Results(ratings=ratings, h2h=h2h, pairs=pairs, games=games, decisions=data.decisions,
                      players=[], meta=meta, errors=data.errors, quality=quality)
    if quality_spread is not None:
        results.quality_spread = quality_spread
    if luck is not None:
        results.luck = luck
    if luck_turns is not None:
        results.luck_turns = luck_turns
    load_plugins(TABLE_PLUGINS)  # the players' tables register when their modules are imported
    for make in EXTRA_TABLES:
        for name, table in make(data, results).items():
            if table is not None and not table.empty:
                results.extra[name] = table
    results.players = player_rows(ratings, games, data.players, results.extra, data.decisions, data.configs)
    return results
