"""The static site of a published folder, built from that folder's files only.

``build_site(folder)`` reads the tables, ``meta.json``, ``players.json``, ``logs/`` and
``teams/`` that :mod:`pokebench.results.writing` wrote (a folder copied anywhere works: no
store, no live object), and writes HTML from the Jinja2 templates in ``templates/``
(autoescaped: every text from the data is escaped), the CSS and JS of ``static/`` and the
plots of :mod:`pokebench.site.plots`. Pages (relative to the folder):

- ``index.html``: leaderboard (point rank and uncertainty rank; the luck-adjusted Elo beside the
  Elo and a table of each player's luck when the runs were analysed), ratings plot,
  head-to-head, mirror-pair splits, spend, cost against rating;
- ``games.html``: every game grouped by mirror pair with the pair's result (and each game's luck and
  adjusted score when analysed), sortable and filterable (``static/games.js``; without JS a plain table);
- ``players/<player>.html``: settings apart from figures, opponents, pair splits, extra
  tables, games;
- ``replays/<uid>.html``: Showdown's own replay viewer for the game's log (loaded from
  Showdown's client site like its saved replay files), the text view turn by turn as the
  offline fallback, each answer (what the model was sent, raw answer, invalid answer and
  the error sent back, tokens, cost, latency, served model) and both team sheets; for a game
  whose luck was analysed, its win-probability graph (:mod:`pokebench.site.luck`).

A folder whose runs were not analysed for luck (no ``luck.csv``) shows no luck anywhere.

A partial publish (missing shards, unfinished pairs) says so on every page.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from pokebench.analysis.quality import BLUNDER_THRESHOLD
from pokebench.plugins import PAGE_PLUGINS, load_plugins
from pokebench.results.loading import model_calls, safe_name
from pokebench.results.ratings import expected_score
from pokebench.results.reading import load_results, read_meta
from pokebench.results.schema import Meta
from pokebench.site import format as fmt
from pokebench.site.luck import SWING_THRESHOLD, win_graph
from pokebench.site.player_facts import player_facts
from pokebench.site.plots import plot_cost, plot_ratings, plot_value_calibration, save_svg
from pokebench.site.replay import (answers_by_turn, quality_by_turn, script_text, side_totals, team_sheet,
                                   team_states, text_turns, viewer_log)

__all__ = ["build_site", "check_site_inputs", "register_page", "SitePages", "SiteError", "VIEWER_URL", "EXTRA_PAGES"]

PageWriter = Callable[["SitePages"], "Path | None"]
#: Writers of extra pages, each called after the site's own pages; see :func:`register_page`.
EXTRA_PAGES: list[PageWriter] = []


def register_page(write: PageWriter) -> PageWriter:
    """Write an extra page at every site build: ``write(pages)`` reads the published folder ``pages.root``
    (e.g. the extra tables of :func:`pokebench.results.figures.register_tables`) and writes its page with
    :meth:`SitePages.write`, or nothing; it returns the page's path, or None. Usable as a decorator; a module
    that registers pages is listed in :data:`pokebench.plugins.PAGE_PLUGINS`."""
    EXTRA_PAGES.append(write)
    return write

#: Showdown's replay viewer, as its saved replay files load it (with a daily cache-buster).
VIEWER_URL = "https://play.pokemonshowdown.com/js/replay-embed.js"
TEMPLATES = Path(str(files("pokebench.site") / "templates"))
STATIC = Path(str(files("pokebench.site") / "static"))


class SiteError(RuntimeError):
    """The site cannot be built; the message says what to do."""


def check_site_inputs() -> None:
    """Fail early when the replays' text view cannot be rendered (Showdown's text templates missing)."""
    from pokebench.text import templates

    try:
        templates.load_templates()
    except templates.BattleTextError as err:
        raise SiteError(str(err)) from None


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html"]),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(fmt.FILTERS)
    env.filters["script_text"] = script_text
    env.globals.update(fmt.GLOBALS)
    return env


def _slugs(names: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in names:
        base = safe_name(name)
        slug, k = base, 2
        while slug.lower() in used:
            slug, k = f"{base}-{k}", k + 1
        used.add(slug.lower())
        out[name] = slug
    return out


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): (None if fmt.missing(v) else v) for k, v in row.items()} for row in df.to_dict("records")]


def _pair_label(grp: pd.DataFrame, a: str, b: str, me: str | None = None) -> str:
    """Who won a mirror pair: "A won 2–0", "split 1–1", ties said; from `me`'s side ("won 2–0", "lost 0–2")
    when given (a player's page)."""
    if len(grp) < 2:
        return "one game only"
    side = me or a
    scores = [0.5 if w == "tie" else float((w == "p1") == (p1 == side)) for w, p1 in zip(grp["winner"], grp["p1"])]
    wins, ties = scores.count(1.0), scores.count(0.5)
    if ties == 2:
        return "tied both"
    if wins == 1 and ties == 0:
        return "split 1–1"
    mine = wins == 2 or (wins == 1 and ties == 1)
    if me is not None:
        if ties:
            return f"{'won' if mine else 'lost'} one, tied one"
        return "won 2–0" if mine else "lost 0–2"  # the player's score first, as in its page's pair table
    winner = a if mine else b
    return f"{winner} won 2–0" if ties == 0 else f"{winner} won one, tied one"


def _game_totals(decisions: pd.DataFrame) -> pd.DataFrame:
    """Per game (uid) in which a model was called: tokens in and out, cost (every call of the game), re-asks and
    random picks of its answers. The rows of a bot that logs its decisions (the search bot, Foul Play: no model, no
    tokens, :func:`~pokebench.results.loading.is_bot_row`) count nothing here: a game of bots has no row."""
    decisions = model_calls(decisions)
    if decisions.empty:
        return pd.DataFrame(columns=["input_tokens", "output_tokens", "cost_usd", "reasks", "random_picks"])
    d = decisions.assign(reasks=decisions["reask"].fillna(False).astype(int),
                         random_picks=decisions["random_pick"].fillna(False).astype(int))
    return d.groupby("uid").agg(input_tokens=("input_tokens", "sum"), output_tokens=("output_tokens", "sum"),
                                cost_usd=("cost_usd", lambda c: c.sum(min_count=1)), reasks=("reasks", "sum"),
                                random_picks=("random_picks", "sum"))


def _pair_total(games: list[dict[str, Any]], key: str) -> float | None:
    values = [g[key] for g in games if g.get(key) is not None]
    return sum(values) if values else None


def _game_groups(games: pd.DataFrame, totals: pd.DataFrame, me: str | None = None) -> list[dict[str, Any]]:
    """Games grouped by mirror pair (run, matchup, pair), each with its totals (`totals`, by uid), and the
    pair's result (from `me`'s side when given) and totals."""
    games = games.join(totals, on="uid")
    groups = []
    for (run, matchup, _), grp in games.groupby(["run", "matchup", "pair"], sort=False):
        grp = grp.sort_values("game")
        first = grp.iloc[0]
        a = first["p1"] if int(first["game"]) == 1 else first["p2"]
        b = first["p2"] if a == first["p1"] else first["p1"]
        records = _records(grp)
        groups.append({"run": run, "matchup": matchup, "pair": int(first["pair"]), "a": a, "b": b,
                       "result": _pair_label(grp, a, b, me), "games": records,
                       **{key: _pair_total(records, key) for key in ("input_tokens", "output_tokens", "cost_usd",
                                                                      "reasks", "random_picks")}})
    return groups


@dataclass(frozen=True)
class SitePages:
    """The pages of the site of the published folder `root`: what every page shows (the navigation to each
    player's page, partial results, footer), and the writer. Handed to the writers of extra pages."""

    root: Path
    meta: Meta
    slugs: dict[str, str]  # each player's page: players/<slug>.html
    env: Environment = field(default_factory=_environment)

    @classmethod
    def read(cls, root: Path) -> SitePages:
        """Those of a folder already published (its ``meta.json`` and ``ratings.csv``), to write one more page."""
        ratings = pd.read_csv(root / "ratings.csv", usecols=["player"], keep_default_na=False)
        return cls(root, read_meta(root), _slugs(list(ratings["player"])))

    def write(self, path: str, template: str, depth: int = 0, **context: Any) -> Path:
        """Write the page ``root/path``, `depth` folders down, from a template of ``templates/`` that extends
        ``base.html`` (the site's navigation, stylesheet and partial-results notice). Its path."""
        meta = self.meta
        page = self.env.get_template(template).render(
            up="../" * depth, meta=meta, slugs=self.slugs, anchor=meta.anchor, several_runs=len(meta.runs) > 1,
            partial_reasons=[f"{r.name}: {why}" for r in meta.runs for why in r.partial_reasons], **context)
        (self.root / path).write_text(page, encoding="utf-8")
        return self.root / path


def _fit_against_observed(ratings: list[dict[str, Any]], h2h: pd.DataFrame) -> list[dict[str, Any]]:
    """Each pair of players that met (the better-rated one as A): games, A's observed score rate and the
    fit's P(A beats B) from the point Elos, largest disagreement first."""
    elo = {r["player"]: float(r["elo"]) for r in ratings}
    rank = {r["player"]: k for k, r in enumerate(ratings)}
    rows = []
    for row in _records(h2h):
        a, b = row["player"], row["opponent"]
        if a in rank and b in rank and rank[a] < rank[b]:
            predicted = expected_score(elo[a], elo[b])
            rows.append({"a": a, "b": b, "games": int(row["games"]), "observed": float(row["win_rate"]),
                         "wins": row["wins"], "ties": row["ties"], "losses": row["losses"],
                         "predicted": predicted, "difference": float(row["win_rate"]) - predicted})
    return sorted(rows, key=lambda r: -abs(r["difference"]))


class _Site:
    """The published folder's data and the page writer."""

    def __init__(self, root: Path, viewer_url: str) -> None:
        self.root = root
        self.viewer_url = viewer_url
        self.results = load_results(root)
        self.meta = self.results.meta
        self.ratings = _records(self.results.ratings)
        self.slugs = _slugs([r["player"] for r in self.ratings])
        self.pages = SitePages(root, self.meta, self.slugs)
        self.players = {p["player"]: p for p in self.results.players}
        self.games = self.results.games
        self.luck, self.luck_turns = self.results.luck, self.results.luck_turns  # load_results read them
        self.has_luck = not self.luck.empty
        self.totals = _game_totals(self.results.decisions)
        spend = self.results.decisions.assign(cost=pd.to_numeric(self.results.decisions["cost_usd"]))
        self.spend_by_run = {r: float(c) for r, c in spend.groupby("run")["cost"].sum(min_count=1).items()
                             if not fmt.missing(c)}

    def index(self, has_cost: bool, has_calibration: bool) -> None:
        errors = sum(r.harness_errors for r in self.meta.runs)
        h2h = {(c["player"], c["opponent"]): c for c in _records(self.results.h2h)}
        predicted = {(a["player"], b["player"]): expected_score(a["elo"], b["elo"])
                     for a in self.ratings for b in self.ratings if a is not b}
        self.pages.write("index.html", "index.html", 0, ratings=self.ratings, h2h=h2h, predicted=predicted,
                         fit=_fit_against_observed(self.ratings, self.results.h2h),
                         has_answers=any(r["answers"] is not None for r in self.ratings),
                         pairs=_records(self.results.pairs), errors=errors, has_cost=has_cost,
                         has_calibration=has_calibration,
                         spend_by_run=self.spend_by_run, has_decisions=not self.results.decisions.empty,
                         quality=self._quality_summary(),
                         has_luck=any(not fmt.missing(r.get(k)) for r in self.ratings for k in ("luck_mean",
                                                                                                "elo_adjusted")),
                         luck_games=self._luck_games(),
                         own_engine={name for name, p in self.players.items()
                                     if p.get("settings", {}).get("searches_with_engine")})

    def _luck_games(self) -> dict[str, int]:
        """Per player, its games whose luck was measured (luck.csv rows without an error)."""
        if not self.has_luck:
            return {}
        measured = self.luck[self.luck["error"].isna()]
        return pd.concat([measured["p1"], measured["p2"]]).value_counts().to_dict()

    def _quality_summary(self) -> dict[str, Any] | None:
        """What the leaderboard says of the decision quality: its settings and the engine's run-to-run spread."""
        quality = self.results.quality
        if quality.empty:
            return None
        spread = self.results.quality_spread
        player = spread[spread["view"] == "player"] if not spread.empty else spread
        diff = (pd.to_numeric(player["regret_1"]) - pd.to_numeric(player["regret_2"])).abs() if len(player) else None
        return {"engine": ", ".join(sorted(set(map(str, quality["engine"])))),
                "settings": ", ".join(sorted(set(map(str, quality["settings"])))),
                # searched: a decision with one legal action has a row, and no search
                "decisions": int((pd.to_numeric(quality["options"]) > 1).sum()), "repeated": len(player),
                "spread": None if diff is None else float(diff.mean()),
                "spread_p90": None if diff is None else float(diff.quantile(0.9)),
                "same_choice": None if diff is None else
                float((player["engine_action_1"] == player["engine_action_2"]).mean())}

    def _games_with_luck(self) -> pd.DataFrame:
        """games.csv with each analysed game's ``luck_p1``, ``adjusted_p1`` and ``luck_error`` (luck.csv)."""
        if not self.has_luck:
            return self.games
        luck = self.luck[["uid", "luck_p1", "adjusted_p1", "error"]].rename(columns={"error": "luck_error"})
        return self.games.merge(luck, on="uid", how="left")

    def games_page(self) -> None:
        self.pages.write("games.html", "games.html", 0, groups=_game_groups(self._games_with_luck(), self.totals),
                         has_reasons=self._reasons_script(), has_luck=self.has_luck)

    def _reasons_script(self) -> bool:
        """Write ``static/reasons.js`` (every answer's reason, for the games page's search); False if none."""
        d = self.results.decisions
        if d.empty:
            return False
        d = d[d["reason"].notna() & (d["reason"] != "")]
        rows = [[uid, None if fmt.missing(turn) else int(turn), player, reason]
                for uid, turn, player, reason in zip(d["uid"], d["turn"], d["player"], d["reason"])]
        if not rows:
            return False
        (self.root / "static" / "reasons.js").write_text(
            "window.POKEBENCH_REASONS = " + json.dumps(rows, ensure_ascii=True) + ";\n", encoding="utf-8")
        return True

    def player_pages(self) -> None:
        h2h, pairs = self.results.h2h, self.results.pairs
        games = self._games_with_luck()
        for r in self.ratings:
            name = r["player"]
            mine = games[(games["p1"] == name) | (games["p2"] == name)]
            info = self.players.get(name, {"settings": {}, "counters": {}, "tables": [], "kind": "bot"})
            extra = {t: _records(self.results.extra[t][self.results.extra[t]["player"] == name])
                     for t in info.get("tables", []) if t in self.results.extra}
            self.pages.write(f"players/{self.slugs[name]}.html", "player.html", 1, r=r, info=info,
                             facts=player_facts(info), opponents=_records(h2h[h2h["player"] == name]),
                             pairs=_records(pairs[(pairs["player_a"] == name) | (pairs["player_b"] == name)]),
                             extra=extra, groups=_game_groups(mine, self.totals, name), player=name,
                             has_luck=self.has_luck)

    def _system_prompts(self, players: set[str]) -> list[dict[str, Any]]:
        """The system prompt of each prompt version the game's model players used, with who used it."""
        from pokebench.text.prompt import system_prompt

        versions: dict[int, list[str]] = {}
        for name in sorted(players):
            version = self.players.get(name, {}).get("settings", {}).get("prompt_version")
            if isinstance(version, int):
                versions.setdefault(version, []).append(name)
        out = []
        for version, names in sorted(versions.items()):
            try:
                out.append({"version": version, "players": names, "text": system_prompt(version)})
            except FileNotFoundError:  # a version this PokéBench does not ship: say so rather than guess
                out.append({"version": version, "players": names, "text": None})
        return out

    def replays(self) -> None:
        decisions = self.results.decisions
        by_game = {uid: _records(grp) for uid, grp in decisions.groupby("uid")} if not decisions.empty else {}
        scored = self.results.quality
        quality = {uid: _records(grp) for uid, grp in scored.groupby("uid")} if not scored.empty else {}
        luck = {row["uid"]: row for row in _records(self.luck)} if self.has_luck else {}
        luck_turns = {uid: _records(grp) for uid, grp in self.luck_turns.groupby("uid")} \
            if not self.luck_turns.empty else {}
        partner: dict[str, str] = {}
        for _, grp in self.games.groupby(["run", "matchup", "pair"]):
            if len(grp) == 2:
                a, b = grp["uid"].tolist()
                partner[a], partner[b] = b, a
        for game in _records(self.games):
            uid = game["uid"]
            log = (self.root / "logs" / f"{uid}.log").read_text(encoding="utf-8").splitlines()
            teams_file = self.root / "teams" / f"{uid}.json"
            teams = json.loads(teams_file.read_text(encoding="utf-8")) if teams_file.is_file() else {}
            turns = text_turns(log)
            mine = quality.get(uid, [])
            answers = answers_by_turn(by_game.get(uid, []), [t for t, _ in turns],
                                      {(r["side"], int(r["decision"])): r for r in mine})
            rows = by_game.get(uid, [])
            graph = win_graph(luck_turns.get(uid, []), mine, rows, {"p1": game["p1"], "p2": game["p2"]})
            self.pages.write(f"replays/{uid}.html", "replay.html", 1, game=game, turns=turns, answers=answers,
                             states=team_states(log, teams), totals=side_totals(rows),
                             system_prompts=self._system_prompts({r["player"] for r in rows}),
                             engine=quality_by_turn(mine, [t for t, _ in turns]),
                             viewer_log=viewer_log(log), viewer_url=self.viewer_url, partner=partner.get(uid),
                             sheets={side: team_sheet(teams.get(side)) for side in ("p1", "p2")},
                             luck_analysed=self.has_luck, luck=luck.get(uid), graph=graph,
                             swing_threshold=SWING_THRESHOLD, blunder_threshold=BLUNDER_THRESHOLD)


def build_site(root: Path | str, viewer_url: str = VIEWER_URL) -> Path:
    """Write the HTML pages, plots and static files of the published folder ``root`` into it."""
    root = Path(root)
    check_site_inputs()
    site = _Site(root, viewer_url)
    for sub in ("players", "replays"):
        (root / sub).mkdir(exist_ok=True)
    if (root / "static").exists():
        shutil.rmtree(root / "static")
    shutil.copytree(STATIC, root / "static")
    save_svg(plot_ratings(site.results.ratings, anchor=site.meta.anchor), root / "ratings.svg")
    cost_fig = plot_cost(site.results.ratings)
    if cost_fig is not None:
        save_svg(cost_fig, root / "cost.svg")
    calibration = plot_value_calibration(site.luck_turns, site.luck) if site.has_luck else None
    if calibration is not None:
        save_svg(calibration, root / "value_calibration.svg")
    site.index(cost_fig is not None, calibration is not None)
    site.games_page()
    site.player_pages()
    site.replays()
    load_plugins(PAGE_PLUGINS)  # the players' pages register when their modules are imported
    for write in EXTRA_PAGES:  # e.g. the Continual Harness's harness.html, when the folder has its tables
        write(site.pages)
    return root
