"""Can the luck adjustment remove more variance? Several control variates, and a nonlinear V (issue 31).

    .venv/bin/python benchmarks/luck_variates.py [--runs-dir /tmp/pb-luck/runs] [--fit-run luck-action-fit]
                                                [--fit-pairs 100] [--train-pairs 300] [--check-run luck-eval]
                                                [--players] [--held-out]

Run ``benchmarks/luck_validation.py`` on both runs first (``--run luck-action-fit --seed-text pokebench-luck-fit``
and the held-out ``--run luck-eval``): their luck caches give each game's action term (the bots' own draws), which
is kept as it is, and the shipped V's path through each game. This script then plays `--fit-run` on to
`--train-pairs` pairs (the same matchups, seed text ``pokebench-luck-fit``) and prints:

1. **where the variance is**: the covariance over mirror pairs of the score with the shipped V's path through the
   games (:data:`PATH`: the chance the luck measures, the drift at the players' choices, the gaps between turns);
2. **fitted value functions**: a logistic regression and scikit-learn's HistGradientBoostingClassifier on per-side
   features (each side's HP, Pokémon left, active HP, sleep, status, boosts, hazards, Terastallization left), who
   moves first, and each active's turns to knock the other out at its best move's mean damage (poke-engine's
   ``calculate_damage``), each with and without the whole teams' matchups (:func:`team_features`: who wins each
   one-on-one of the Pokémon left, from a damage table made once per game), with `--players` also who plays each
   side; symmetrised (trained on both sides' views,
   V = ½ (f(x) + 1 − f(swapped x)), so swapping the sides gives 1 − V); trained on the decision points of the fit
   run's pairs past `--fit-pairs` (team draws of their own); their calibration beside the shipped logistic's;
3. **each V's own path** through the games: its start's variance per game, and over mirror pairs the chance's
   and the drift's variance and covariance with the score (what a better win probability knows that the adjustment
   can use, and what only the deal);
4. **several control variates**, under each V: each turn's chance luck split into parts that each weigh to zero,
   the outcome's (V averaged over its damage rolls, less the turn's expectation) and the damage roll's (V of the
   roll less that average), each also times functions of the position before the turn (how close V was to ½, how
   many Pokémon are left), and the action term: one weight per part, the least pooled variance over the fit run's
   first `--fit-pairs` pairs (a regression of the pair score on the parts' sums). Fixed weights on parts that
   each weigh to zero keep the adjusted score unbiased.

The variance ratio raw / adjusted (pooled over mirror pairs, each matchup around its own mean) is printed for the
fit pairs, where everything is chosen; with `--held-out`, once the choice is made, also for `--check-run` with
the weights chosen on the fit pairs, and adjusted − raw per matchup. The turns' outcome × roll rows are cached in
``RUNS_DIR/../variates-RUN.npz``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import poke_engine
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

from luck_validation import current_luck, mean_interval, play, ratio_interval  # benchmarks/: the script's folder, on sys.path
from pokebench.analysis.luck import move_turns, turn_outcomes
from pokebench.analysis.settings import ACTION_WEIGHT
from pokebench.analysis.value import SideSnapshot, Snapshot, load_value_model
from pokebench.engine.errors import EngineError, hold_panic_output
from pokebench.engine.from_showdown import game_positions, position_of_state
from pokebench.engine.position import Position
from pokebench.engine.state import build_state
from pokebench.results.loading import load_runs

FIT_SEEDS = "pokebench-luck-fit"
PLAYERS = ("noisy-30", "noisy-10", "max-damage", "heuristic")
MATCHUPS = "[[noisy-30,max-damage],[noisy-10,max-damage],[max-damage,heuristic],[noisy-10,heuristic]]"
SIDE = 9  # per-side features (SideSnapshot.columns but its active's speed)
TEAM = 3  # per-side features of the whole teams' matchups (team_features)
RICH = 2 * SIDE + 3 + 2 * TEAM  # rich_features' columns
NO_KO = 10.0  # turns to knock out when the best move does nothing (or the attacker is down)


def _best_damage(state: poke_engine.State) -> tuple[float, float]:
    """Each active Pokémon's highest-roll damage to the other with its best move (poke-engine's calculation)."""
    one = state.side_one.pokemon[int(state.side_one.active_index)].moves
    two = state.side_two.pokemon[int(state.side_two.active_index)].moves
    best = [0.0, 0.0]
    for a, b in zip(one, two):
        try:
            rolls = poke_engine.calculate_damage(state, a.id, b.id, True)
        except BaseException:  # noqa: BLE001 - a panic of the calculation: that move pair adds nothing
            continue
        best = [max(best[0], float(rolls[0][0])), max(best[1], float(rolls[1][0]))]
    return best[0], best[1]


@dataclass(frozen=True)
class TeamMatchups:
    """Every Pokémon of side one against every one of side two, as the game's first position has them (full
    information): the best mean damage each deals the other with both active (``one[i, j]``: side one's i to side
    two's j, ``two[j, i]`` the other way), and each one's speed (no boosts)."""

    one: np.ndarray
    two: np.ndarray
    speed_one: np.ndarray
    speed_two: np.ndarray
    ids_one: tuple[str, ...]
    ids_two: tuple[str, ...]

    def aligned(self, snap: Snapshot) -> "TeamMatchups":
        """The same in the order of `snap`'s Pokémon (by id; one whose id changed, a forme, deals and takes none)."""
        one = [self.ids_one.index(i) if i in self.ids_one else -1 for i in snap.one.ids]
        two = [self.ids_two.index(i) if i in self.ids_two else -1 for i in snap.two.ids]

        def pick(matrix: np.ndarray, rows: list[int], columns: list[int]) -> np.ndarray:
            padded = np.pad(matrix, ((0, 1), (0, 1)))  # index −1: the zero row and column
            return padded[np.ix_(rows, columns)]

        return TeamMatchups(pick(self.one, one, two), pick(self.two, two, one),
                            np.append(self.speed_one, 0.0)[one], np.append(self.speed_two, 0.0)[two],
                            snap.one.ids, snap.two.ids)

    @classmethod
    def of(cls, position: Position) -> "TeamMatchups":
        n1, n2 = len(position.side_one.mons), len(position.side_two.mons)
        one, two = np.zeros((n1, n2)), np.zeros((n2, n1))
        state = build_state(position)
        for i in range(n1):
            for j in range(n2):
                try:
                    paired = build_state(replace(position, side_one=replace(position.side_one, active=i),
                                                 side_two=replace(position.side_two, active=j)))
                except EngineError:
                    continue
                one[i, j], two[j, i] = (d * 92.5 / 100 for d in _best_damage(paired))
        snap = Snapshot.of(state)
        return cls(one, two, np.array([float(m.speed) for m in state.side_one.pokemon]),
                   np.array([float(m.speed) for m in state.side_two.pokemon]), snap.one.ids, snap.two.ids)


def _beats(hp_a: np.ndarray, hp_b: np.ndarray, damage_ab: np.ndarray, damage_ba: np.ndarray,
           faster: np.ndarray) -> np.ndarray:
    """Per row, a × b: whether a's Pokémon i, alive, knocks out b's j, alive, first in a one-on-one at the HP of the
    row (turns to knock out at the best mean damage; a tie goes to the faster)."""
    with np.errstate(divide="ignore", invalid="ignore"):  # 0 HP over 0 damage: replaced below
        a_needs = np.where(damage_ab[None] > 0, np.ceil(hp_b[:, None, :] / damage_ab[None]), np.inf)
        b_needs = np.where(damage_ba.T[None] > 0, np.ceil(hp_a[:, :, None] / damage_ba.T[None]), np.inf)
    alive = (hp_a[:, :, None] > 0) & (hp_b[:, None, :] > 0)
    return alive & np.isfinite(a_needs) & ((a_needs < b_needs) | ((a_needs == b_needs) & faster[None]))


def team_features(team: TeamMatchups, hp_one: np.ndarray, hp_two: np.ndarray, trick_room: bool) -> np.ndarray:
    """Per row, for each side: the share of the other's Pokémon left that one of its own beats one-on-one, the
    largest share one of its Pokémon beats alone, and the share of all pairs left that it wins."""
    faster = team.speed_one[:, None] > team.speed_two[None, :]
    slower = team.speed_one[:, None] < team.speed_two[None, :]
    if trick_room:
        faster, slower = slower, faster
    columns = []
    for beats, mine, theirs in ((_beats(hp_one, hp_two, team.one, team.two, faster), hp_one, hp_two),
                                (_beats(hp_two, hp_one, team.two, team.one, slower.T), hp_two, hp_one)):
        left = np.maximum(1, (theirs > 0).sum(axis=1))
        pairs = np.maximum(1, (mine > 0).sum(axis=1) * (theirs > 0).sum(axis=1))
        columns += [beats.any(axis=1).sum(axis=1) / left, beats.sum(axis=2).max(axis=1) / left,
                    beats.sum(axis=(1, 2)) / pairs]
    return np.column_stack(columns)


def _turns_to_ko(damage: float, attacker: SideSnapshot, hp_attacker: np.ndarray, target: SideSnapshot,
                 hp_target: np.ndarray) -> np.ndarray:
    mean = damage * 92.5 / 100  # the mean roll
    left = hp_target[:, target.active]
    turns = np.ceil(left / max(mean, 1e-9))
    return np.where((mean > 0) & (hp_attacker[:, attacker.active] > 0), np.minimum(turns, NO_KO), NO_KO)


def rich_features(snap: Snapshot, damage: tuple[float, float], team: TeamMatchups, hp_one: np.ndarray | None = None,
                  hp_two: np.ndarray | None = None) -> np.ndarray:
    """Per HP row: side one's features, side two's, who moves first (+1 / 0 / −1), the turns each active needs to
    knock the other out, the teams' matchups (:func:`team_features`). :func:`swap` gives side two's view."""
    hp_one = snap.one.hp[None, :] if hp_one is None else hp_one
    hp_two = snap.two.hp[None, :] if hp_two is None else hp_two
    n = max(len(hp_one), len(hp_two))
    hp_one, hp_two = np.broadcast_to(hp_one, (n, hp_one.shape[1])), np.broadcast_to(hp_two, (n, hp_two.shape[1]))
    one, two = snap.one.columns(hp_one), snap.two.columns(hp_two)
    faster = np.where((one[-1] > 0) & (two[-1] > 0), np.sign(one[-1] - two[-1]), 0.0)
    return np.column_stack([*one[:SIDE], *two[:SIDE], -faster if snap.trick_room else faster,
                            _turns_to_ko(damage[0], snap.one, hp_one, snap.two, hp_two),
                            _turns_to_ko(damage[1], snap.two, hp_two, snap.one, hp_one),
                            team_features(team.aligned(snap), hp_one, hp_two, snap.trick_room)])


def swap(x: np.ndarray) -> np.ndarray:
    """The rows seen from side two (:func:`rich_features`' layout, then with ``--players`` side one's player and
    side two's, one-hot)."""
    players = x[:, RICH:]
    half = players.shape[1] // 2
    team = 2 * SIDE + 3
    return np.column_stack([x[:, SIDE:2 * SIDE], x[:, :SIDE], -x[:, 2 * SIDE], x[:, 2 * SIDE + 2],
                            x[:, 2 * SIDE + 1], x[:, team + TEAM:team + 2 * TEAM], x[:, team:team + TEAM],
                            players[:, half:], players[:, :half]])


def _chunk(logs: list[tuple[str, list[str], bool]]) -> dict[str, dict[str, Any]]:
    """Per game: its decision points' rich features and, where asked, every valued move turn's outcome × roll rows
    (rich features, finished value, probability, outcome, the row that happened) and the position before it."""
    hold_panic_output()
    model = load_value_model()
    out: dict[str, dict[str, Any]] = {}
    wanted = {uid for uid, _, rows in logs if rows}
    for game in game_positions([(uid, log) for uid, log, _ in logs]):
        points = []
        seen = set()
        try:
            team = TeamMatchups.of(position_of_state(game.decisions[0].state, "p1"))
        except (EngineError, IndexError):
            continue
        for decision in game.decisions:
            key = (decision.turn, decision.request.get("forceSwitch") is not None)
            if key in seen:
                continue
            seen.add(key)
            try:
                state = build_state(position_of_state(decision.state, "p1"))
                snap = Snapshot.of(state)
                if np.isnan(snap.finished()[0]):
                    points.append(rich_features(snap, _best_damage(state), team)[0])
            except EngineError:
                continue
        turns = []
        for move_turn in move_turns(game) if game.id in wanted else ():
            try:
                state, one, two, real = move_turn.position()
                chance = turn_outcomes(state, one, two, real)
                before = Snapshot.of(state)
                pre = rich_features(before, _best_damage(state), team)[0]
            except EngineError:
                continue
            rich = [rich_features(o.snapshot, _best_damage(o.state), team, o.hp_one, o.hp_two) for o in chance.outcomes]
            turns.append({
                "rich": np.vstack(rich).astype(np.float32),
                "finished": np.concatenate([o.snapshot.finished(o.hp_one, o.hp_two) for o in chance.outcomes]),
                "weight": np.concatenate([np.full(len(r), w / len(r)) for r, w in zip(rich, chance.weights)]),
                "outcome": np.concatenate([np.full(len(r), k) for k, r in enumerate(rich)]),
                "happened": sum(len(r) for r in rich[:chance.happened]) + chance.row,
                "pre": pre, "v_before": model(state), "turn": move_turn.first.turn})
        out[game.id] = {"points": np.array(points, dtype=np.float32).reshape(-1, RICH), "turns": turns}
    return out


class Rows:
    """A run's games (games.csv's frame, sorted by matchup and pair), decision points and turns' rows, flat."""

    def __init__(self, runs_dir: Path, run: str, workers: int, turn_pairs: range | None = None) -> None:
        """`turn_pairs`: the pairs whose turns' rows are taken (None: all)."""
        cache = runs_dir.parent / f"variates-{run}.npz"
        with load_runs([run], runs_dir) as data:
            games = data.games.sort_values(["matchup", "pair", "game"]).reset_index(drop=True)
            if not cache.exists():
                logs = [(str(g["uid"]), list(data.record(str(g["uid"]))["input_log"]),
                         turn_pairs is None or g["pair"] in turn_pairs) for g in games.to_dict("records")]
                _extract(logs, cache, workers)
        flat = dict(np.load(cache))
        order = {uid: i for i, uid in enumerate(flat["uids"])}
        games = games[games["uid"].astype(str).isin(order)].reset_index(drop=True)
        self.games = games.assign(index=games["uid"].astype(str).map(order))
        self.flat = flat
        entries = current_luck(runs_dir / run)
        action = {uid: sum(t["action_luck"] for t in e["turns"]) / ACTION_WEIGHT for uid, e in entries.items()}
        self.games["action"] = self.games["uid"].astype(str).map(action).fillna(0.0)  # the term at weight 1
        path = pd.DataFrame([{"uid": uid, **_path(e["turns"])} for uid, e in entries.items()], columns=["uid", *PATH])
        self.games = self.games.merge(path, on="uid", how="left")


#: The shipped V's path through a game (score − ½ = start + chance + drift + gap + end; the action term beside).
PATH = ("start", "chance", "drift", "gap", "end")


def _path(turns: list[dict[str, Any]]) -> dict[str, float]:
    """A game's cached luck turns as the shipped V's path: V before the first turn − ½, the chance the luck measured
    (V after − the turn's expectation), the drift at the players' choices (the expectation − V before the turn),
    the gaps between a turn's outcome and the next turn's start (forced switches, pivots' second halves, turns not
    valued, what the matched outcome misses); ``end`` (score − the last V) is added with the score."""
    valued = [t for t in turns if t["error"] is None]
    if not valued:
        return {name: np.nan for name in PATH}
    return {"start": valued[0]["v_before"] - 0.5,
            "chance": sum(t["luck_p1"] - t["action_luck"] for t in valued),
            "drift": sum(t["expected"] - t["v_before"] for t in valued),
            "gap": sum(b["v_before"] - a["v_after"] for a, b in zip(valued, valued[1:])),
            "end": valued[-1]["v_after"]}


def _extract(logs: list[tuple[str, list[str], bool]], cache: Path, workers: int) -> None:
    per_game: dict[str, dict[str, Any]] = {}
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        for part in pool.imap_unordered(_chunk, [logs[i:i + 50] for i in range(0, len(logs), 50)]):
            per_game.update(part)
    uids = sorted(per_game)
    turns = [(g, t) for g, uid in enumerate(uids) for t in per_game[uid]["turns"]]
    starts = np.cumsum([0] + [len(t["rich"]) for _, t in turns])
    np.savez_compressed(
        cache, uids=np.array(uids),
        points=np.vstack([per_game[u]["points"] for u in uids]),
        point_game=np.concatenate([np.full(len(per_game[u]["points"]), g) for g, u in enumerate(uids)]),
        rich=np.vstack([t["rich"] for _, t in turns]),
        finished=np.concatenate([t["finished"] for _, t in turns]),
        weight=np.concatenate([t["weight"] for _, t in turns]),
        outcome=np.concatenate([t["outcome"] for _, t in turns]),
        row_turn=np.concatenate([np.full(len(t["rich"]), i) for i, (_, t) in enumerate(turns)]),
        happened=np.array([starts[i] + t["happened"] for i, (_, t) in enumerate(turns)]),
        turn_game=np.array([g for g, _ in turns]), pre=np.vstack([t["pre"] for _, t in turns]),
        v_before=np.array([t["v_before"] for _, t in turns]), turn=np.array([t["turn"] for _, t in turns]))


def with_players(rows: Rows, x: np.ndarray, game: np.ndarray) -> np.ndarray:
    """`x` with each row's players (side one's, side two's: one-hot over :data:`PLAYERS`), `game` its game's index
    (``--players``: a V that knows who plays, fixed before the games it values like any other)."""
    players = rows.games.set_index("index").loc[game]
    return np.column_stack([x, *[(players[side] == p).to_numpy(float) for side in ("p1", "p2") for p in PLAYERS]])


def in_pairs(rows: Rows, pairs: range | None) -> pd.DataFrame:
    """The games of `pairs` (all: None)."""
    return rows.games if pairs is None else rows.games[rows.games["pair"].isin(pairs)]


def paired(games: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The games whose mirror pair has both games here, +1 / −1 where side one is / is not the matchup's first
    player, and side one's score."""
    games = games[games.groupby(["matchup", "pair"])["uid"].transform("size") == 2]
    sign = np.where(games["p1"] == games["matchup"].str.split("-vs-").str[0], 1.0, -1.0)
    score = np.where(games["winner"] == "p1", 1.0, np.where(games["winner"] == "p2", 0.0, 0.5))
    return games, sign, score


def first_player_pairs(rows: Rows, pairs: range | None, per_game: dict[str, np.ndarray]) -> pd.DataFrame:
    """Per complete mirror pair: its matchup, the first player's mean score ``y`` and the mean of each of
    `per_game`'s side-one sums (indexed by game), from the first player's side."""
    games, sign, score = paired(in_pairs(rows, pairs))
    index = games["index"].to_numpy()
    frame = pd.DataFrame({"matchup": games["matchup"].to_numpy(), "pair": games["pair"].to_numpy(),
                          "y": np.where(sign > 0, score, 1 - score),
                          **{name: sign * column[index] for name, column in per_game.items()}})
    return frame.groupby(["matchup", "pair"], as_index=False).mean()


def where_the_variance_is(rows: Rows, pairs: range | None) -> None:
    """The covariance over mirror pairs (pooled, centred per matchup) of the first player's score with the shipped
    V's path through its games (:data:`PATH`): what the adjusted score keeps is everything but the chance and 0.4
    of the action term."""
    games, sign, score = paired(in_pairs(rows, pairs).dropna(subset=list(PATH)))
    frame = pd.DataFrame({"score − ½": score - 0.5, **{name: games[name].to_numpy() for name in PATH[:-1]},
                          "end": score - games["end"].to_numpy(), "action": games["action"].to_numpy()})
    frame = frame.mul(sign, axis=0).assign(matchup=games["matchup"].to_numpy(), pair=games["pair"].to_numpy())
    per_pair = frame.groupby(["matchup", "pair"]).mean()
    per_pair = per_pair - per_pair.groupby(level="matchup").transform("mean")
    print(f"  {len(per_pair)} pairs; covariance ×1000 (score − ½ = start + chance + drift + gap + end):")
    print("  " + per_pair.cov().mul(1000).round(1).to_string().replace("\n", "\n  "))


def path_under(name: str, rows: Rows, model: Any, value: np.ndarray, pairs: range | None) -> None:
    """A V's own path through the games (its start, the chance it measures, its drift), without the ``--players``
    one-hot: the variance of each game's start, and over mirror pairs (pooled, centred per matchup, ×1000) the
    chance's and the drift's variance and covariance with the score."""
    f = rows.flat
    v = np.where(np.isnan(f["finished"]), value, f["finished"])
    turns, n = len(f["turn"]), len(f["uids"])
    expected = np.bincount(f["row_turn"], weights=f["weight"] * v, minlength=turns)
    before = model(f["pre"].astype(float))
    game = f["turn_game"]
    chance = np.bincount(game, weights=v[f["happened"]] - expected, minlength=n)
    drift = np.bincount(game, weights=expected - before, minlength=n)
    start = np.full(n, np.nan)
    first = pd.Series(np.arange(turns)).groupby(game).min()
    start[first.index] = before[first.to_numpy()] - 0.5
    per_pair = first_player_pairs(rows, pairs, {"chance": chance, "drift": drift})
    values = per_pair[["y", "chance", "drift"]]
    c = (values - values.groupby(per_pair["matchup"]).transform("mean")).cov() * 1000
    index = paired(in_pairs(rows, pairs))[0]["index"].to_numpy()
    print(f"  {name:44s} var(start) per game {np.nanvar(start[index]) * 1000:5.1f}; over pairs: var(score) "
          f"{c.loc['y', 'y']:.1f}, var(chance) {c.loc['chance', 'chance']:.1f}, cov(score, chance) "
          f"{c.loc['y', 'chance']:.1f}, var(drift) {c.loc['drift', 'drift']:.1f}, cov(score, drift) "
          f"{c.loc['y', 'drift']:.1f}")


def shipped_features(rich: np.ndarray) -> np.ndarray:
    """The shipped logistic's features (value.FEATURES) from :func:`rich_features`' rows."""
    one, two = rich[:, :SIDE].astype(float), rich[:, SIDE:2 * SIDE].astype(float)
    diff = one - two
    both = one[:, 0] + two[:, 0]
    share = np.divide(diff[:, 0], both, out=np.zeros(len(rich)), where=both > 0)
    return np.column_stack([diff[:, 0], diff[:, 1], share, *diff[:, 2:].T, rich[:, 2 * SIDE]])


class Symmetric:
    """A classifier of side one's win on :func:`rich_features`, fitted on both sides' views and averaged over
    them, so that swapping the sides gives 1 − V."""

    def __init__(self, classifier: Any, team: bool = True) -> None:
        """`team`: whether it reads the teams' matchups (:func:`team_features`)."""
        self.classifier, self.team = classifier, team

    def _columns(self, x: np.ndarray) -> np.ndarray:
        return x if self.team else np.delete(x, np.s_[2 * SIDE + 3:RICH], axis=1)

    def fit(self, x: np.ndarray, y: np.ndarray) -> "Symmetric":
        self.classifier.fit(self._columns(np.vstack([x, swap(x)])), np.concatenate([y, 1 - y]) > 0.5)
        return self

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return 0.5 * (self.classifier.predict_proba(self._columns(x))[:, 1] + 1
                      - self.classifier.predict_proba(self._columns(swap(x)))[:, 1])


def shipped(x: np.ndarray) -> np.ndarray:
    return load_value_model().of_features(shipped_features(x[:, :RICH]))


def luck_parts(rows: Rows, value: np.ndarray) -> pd.DataFrame:
    """Per valued turn (side one's): the outcome part and the damage roll part of its chance luck under the row
    values `value` (finished rows: their result), and the position before it."""
    f = rows.flat
    v = np.where(np.isnan(f["finished"]), value, f["finished"])
    turns = len(f["turn"])
    expected = np.bincount(f["row_turn"], weights=f["weight"] * v, minlength=turns)
    group, _ = pd.factorize(f["row_turn"] * 10_000 + f["outcome"])
    mean = np.bincount(group, weights=v) / np.bincount(group)
    happened = f["happened"]
    outcome_mean = mean[group[happened]]
    pre = f["pre"]
    return pd.DataFrame({"game": f["turn_game"], "outcome": outcome_mean - expected,
                         "roll": v[happened] - outcome_mean,
                         "close": 4 * f["v_before"] * (1 - f["v_before"]),
                         "left": (pre[:, 1] + pre[:, SIDE + 1]) / 12})


#: The control variates: (turn part, the function of the position before the turn it is multiplied by).
PARTS = (("outcome", None), ("outcome", "close"), ("outcome", "left"), ("roll", None), ("roll", "close"))


def pair_parts(rows: Rows, parts: pd.DataFrame, pairs: range | None = None) -> pd.DataFrame:
    """Per mirror pair (both games valued): its matchup, the first player's mean raw score ``y`` and mean parts
    ``c0``... (:data:`PARTS`, then the action term at weight 1), from the first player's side."""
    n = len(rows.flat["uids"])
    columns = {f"c{k}": np.bincount(parts["game"], weights=parts[part] * (parts[by] if by else 1.0), minlength=n)
               for k, (part, by) in enumerate(PARTS)}
    action = np.zeros(n)
    action[rows.games["index"].to_numpy()] = rows.games["action"].to_numpy()
    return first_player_pairs(rows, pairs, {**columns, "action": action})


def centred(pairs: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The pairs' score and parts, each matchup around its own mean (the pooled variance's terms)."""
    values = pairs.drop(columns=["matchup", "pair"])
    values = values - values.groupby(pairs["matchup"]).transform("mean")
    return values["y"].to_numpy(), values.drop(columns=["y"]).to_numpy()


SHIPPED_WEIGHTS = np.array([1.0, 0.0, 0.0, 1.0, 0.0, ACTION_WEIGHT])  # PARTS then the action term


def ratio(y: np.ndarray, c: np.ndarray, weights: np.ndarray) -> tuple[float, float, float]:
    adjusted = y - c @ weights
    lo, hi = ratio_interval(y, adjusted, np.random.default_rng(0))
    return float(y.var(ddof=1) / adjusted.var(ddof=1)), lo, hi


def calibration(name: str, p: np.ndarray, y: np.ndarray) -> None:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    edges = np.linspace(0, 1, 11)
    bins = np.clip(np.digitize(p, edges[1:-1]), 0, 9)
    cells = " ".join(f"{p[bins == b].mean():.2f}/{y[bins == b].mean():.2f}" for b in range(10) if (bins == b).any())
    print(f"  {name:34s} log loss {loss:.4f}  Brier {np.mean((p - y) ** 2):.4f}  bins predicted/observed: {cells}")


def point_scores(rows: Rows, pairs: range | None, players: bool) -> tuple[np.ndarray, np.ndarray]:
    """The decision points (rich features, and the players with `players`) of the games of `pairs` (all: None),
    and side one's score in each."""
    games = rows.games if pairs is None else rows.games[rows.games["pair"].isin(pairs)]
    score = np.where(games["winner"] == "p1", 1.0, np.where(games["winner"] == "p2", 0.0, 0.5))
    by_index = pd.Series(score, index=games["index"].to_numpy())
    keep = np.isin(rows.flat["point_game"], games["index"].to_numpy())
    x, game = rows.flat["points"][keep].astype(float), rows.flat["point_game"][keep]
    return with_players(rows, x, game) if players else x, by_index.loc[game].to_numpy()


def _chunked(model: Any, rows: Rows, players: bool, size: int = 200_000) -> np.ndarray:
    """V of every outcome × roll row of the run, `size` rows at a time."""
    rich, game = rows.flat["rich"], rows.flat["turn_game"][rows.flat["row_turn"]]
    parts = []
    for i in range(0, len(rich), size):
        x = rich[i:i + size].astype(float)
        parts.append(model(with_players(rows, x, game[i:i + size]) if players else x))
    return np.concatenate(parts)


def report(name: str, rows: Rows, value: np.ndarray, pairs: range | None,
           weights: dict[str, np.ndarray]) -> pd.DataFrame:
    """The pooled variance ratio raw / adjusted of these row values under each set of part weights."""
    frame = pair_parts(rows, luck_parts(rows, value), pairs)
    y, c = centred(frame)
    cells = []
    for label, w in weights.items():
        r, lo, hi = ratio(y, c, w)
        cells.append(f"{label} {r:.3f} [{lo:.2f}, {hi:.2f}]")
    print(f"  {name:44s} {len(frame):4d} pairs: " + "; ".join(cells))
    return frame


def least_variance(frame: pd.DataFrame) -> np.ndarray:
    """The part weights of least pooled variance of the adjusted pair score (a regression, no intercept)."""
    y, c = centred(frame)
    return np.linalg.lstsq(c, y, rcond=None)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs-dir", type=Path, default=Path("/tmp/pb-luck/runs"))
    parser.add_argument("--fit-run", default="luck-action-fit")
    parser.add_argument("--fit-pairs", type=int, default=100, help="pairs 1.. whose variance chooses (default 100)")
    parser.add_argument("--train-pairs", type=int, default=300, help="V is trained on the pairs after --fit-pairs "
                                                                    "up to this (default 300)")
    parser.add_argument("--check-run", default="luck-eval")
    parser.add_argument("--held-out", action="store_true",
                        help="also measure on --check-run (once, after the choice is made on the fit pairs)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--players", action="store_true", help="the fitted V's also know who plays each side")
    args = parser.parse_args()
    play(args.runs_dir, args.fit_run, args.train_pairs, MATCHUPS, FIT_SEEDS)
    chosen, training = range(1, args.fit_pairs + 1), range(args.fit_pairs + 1, args.train_pairs + 1)
    fit = Rows(args.runs_dir, args.fit_run, args.workers, chosen)
    check = Rows(args.runs_dir, args.check_run, args.workers) if args.held_out else None
    x, y = point_scores(fit, training, args.players)
    print(f"V trained on {len(y)} decision points of {args.fit_run}'s pairs {training.start}-{training.stop - 1}")
    known = " and the players" if args.players else ""
    models: dict[str, Any] = {"shipped logistic (value_model.json)": shipped}
    for team, label in ((False, ""), (True, " and the teams' matchups")):
        models[f"logistic, rich features{label}{known}"] = Symmetric(
            LogisticRegression(C=1.0, fit_intercept=False, max_iter=2000), team).fit(x, y)
        models[f"gradient boosting, rich features{label}{known}"] = Symmetric(HistGradientBoostingClassifier(
            max_iter=300, learning_rate=0.05, max_leaf_nodes=15, min_samples_leaf=200, l2_regularization=1.0,
            random_state=0), team).fit(x, y)
    print(f"\nwhere the variance is: the shipped V's path through the games of {args.fit_run}, pairs 1-{args.fit_pairs}")
    where_the_variance_is(fit, chosen)
    if check:
        print(f"the same on {args.check_run}")
        where_the_variance_is(check, None)
    print("\ncalibration (predicted / observed per tenth of V)")
    for label, run, pairs in ((f"{args.fit_run} pairs 1-{args.fit_pairs}", fit, chosen), (args.check_run, check, None)
                              )[:2 if check else 1]:
        px, py = point_scores(run, pairs, args.players)
        print(f" {label}: {len(py)} decision points")
        for name, model in models.items():
            calibration(name, model(px), py)
    values = {}
    for name, model in models.items():
        started = time.process_time()
        values[name] = (_chunked(model, fit, args.players), _chunked(model, check, args.players) if check else None)
        turns = len(fit.flat["turn"]) + (len(check.flat["turn"]) if check else 0)
        print(f"cost of {name}: {(time.process_time() - started) / turns * 1000:.2f} ms CPU per turn")
    if not args.players:
        print("\neach V's own path through the games (×1000; the chance alone)")
        for name, model in models.items():
            path_under(f"{name}, {args.fit_run} 1-{args.fit_pairs}", fit, model, values[name][0], chosen)
            if check:
                path_under(f"{name}, {args.check_run}", check, model, values[name][1], None)
    print("\npooled variance ratio over mirror pairs, raw / adjusted [95 % bootstrap over pairs]; weights: "
          "'shipped' = chance parts 1, action 0.4; 'chance' = action 0; 'fitted' = least variance on the fit pairs")
    print("  parts: " + ", ".join(f"{p}×{b or 1}" for p, b in PARTS) + ", action")
    chance = SHIPPED_WEIGHTS * np.array([1, 1, 1, 1, 1, 0])
    for name in models:
        frame = report(f"{name}, {args.fit_run} 1-{args.fit_pairs}", fit, values[name][0], chosen,
                       {"shipped": SHIPPED_WEIGHTS, "chance": chance})
        weights = least_variance(frame)
        simple = least_variance(frame[["matchup", "pair", "y", "c0", "c3", "action"]])
        two = np.array([simple[0], 0, 0, simple[1], 0, simple[2]])
        print(f"    fitted weights: {np.round(weights, 3).tolist()}; outcome/roll/action only: "
              f"{np.round(simple, 3).tolist()}")
        report(f"{name}, fit pairs, fitted", fit, values[name][0], chosen, {"fitted": weights, "3 parts": two})
        if check is None:
            continue
        held = report(f"{name}, {args.check_run} (held out)", check, values[name][1], None,
                      {"shipped": SHIPPED_WEIGHTS, "chance": chance, "fitted": weights, "3 parts": two})
        for label, w in (("shipped", SHIPPED_WEIGHTS), ("fitted", weights)):
            diffs = held.drop(columns=["matchup", "pair", "y"]).to_numpy() @ -w
            per = "; ".join(f"{m} {mean_interval(diffs[held['matchup'] == m])}" for m in sorted(set(held["matchup"])))
            print(f"    adjusted − raw, {label} weights (must cover 0): {per}")


if __name__ == "__main__":
    main()
