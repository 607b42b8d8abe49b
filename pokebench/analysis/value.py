"""The value function of the luck analysis: side one's win probability of a full-information position.

A logistic model of a few features of the engine's ``State`` (:func:`features`: side one's minus
side two's HP, Pokémon left, status, boosts, hazards, Terastallization left, and which active Pokémon
moves first), fitted on the positions and outcomes of bot games played on seeds of their own
(``benchmarks/luck_value_fit.py`` refits it and prints its calibration), never on the games it
analyses: a value fitted on the evaluated games' outcomes would bias the luck estimate.

Why a fitted model and not the engine's search: the luck estimate is unbiased with *any* fixed
value function, but it removes variance only as far as the value is calibrated and steady (the same
position, the same value). A short MCTS root value is neither (issue 31's probe: variance ratio
0.93 with 200 iterations against 1.17 with a logistic of the HP balance alone); this model has no
noise at all and costs microseconds.

The model has no intercept and its features are differences, so that swapping the sides gives
1 − V: side one has no advantage of its own. A finished game is valued as finished: 1, 0, or ½
when both sides have nothing left.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from pokebench.analysis.settings import ACTION_WEIGHT, LUCK_VERSION

if TYPE_CHECKING:  # the model is read without the engine (publishing needs none); only its inputs are engine states
    import poke_engine

__all__ = ["FEATURES", "ValueModel", "Snapshot", "SideSnapshot", "features", "finished_value", "load_value_model",
           "luck_settings", "MODEL_FILE"]

MODEL_FILE = "value_model.json"
#: The features, each side one's minus side two's (``speed`` is +1 / 0 / −1).
FEATURES = ("hp", "alive", "hp_share", "active_hp", "asleep", "status", "attack_boosts", "defence_boosts",
            "hazards", "tera", "speed")
_SLEEPING = frozenset({"sleep", "freeze"})
_STATUSED = frozenset({"burn", "paralyze", "poison", "toxic"})


def _boost(stage: int) -> float:
    return (2 + stage) / 2 if stage >= 0 else 2 / (2 - stage)


@dataclass(frozen=True)
class SideSnapshot:
    """What the features read of one side of an engine ``State`` (its Pokémon in the state's order).

    Ids and statuses are lowercased: a state the engine wrote (``apply_instructions``) spells them in capitals.
    """

    ids: tuple[str, ...]
    hp: np.ndarray
    maxhp: np.ndarray
    status: tuple[str, ...]
    active: int
    speed: float  # the active Pokémon's speed with its boost and paralysis
    attack_boosts: int
    defence_boosts: int
    boosts: tuple[int, ...]  # attack, defence, sp. attack, sp. defence, speed (for matching positions)
    hazards: float
    tera_left: bool

    @classmethod
    def of(cls, side: Any) -> "SideSnapshot":
        mons = side.pokemon
        active = mons[int(side.active_index)]
        conditions = side.side_conditions
        boosts = (side.attack_boost, side.defense_boost, side.special_attack_boost, side.special_defense_boost,
                  side.speed_boost)
        return cls(
            ids=tuple(m.id.lower() for m in mons), hp=np.array([max(0, m.hp) for m in mons], dtype=float),
            maxhp=np.array([max(1, m.maxhp) for m in mons], dtype=float), status=tuple(m.status.lower() for m in mons),
            active=int(side.active_index),
            speed=active.speed * _boost(side.speed_boost) * (0.5 if active.status.lower() == "paralyze" else 1.0),
            attack_boosts=max(-6, min(6, boosts[0] + boosts[2] + boosts[4])),
            defence_boosts=max(-6, min(6, boosts[1] + boosts[3])), boosts=boosts,
            hazards=conditions.stealth_rock + conditions.spikes / 3 + conditions.toxic_spikes / 2
            + conditions.sticky_web,
            tera_left=not any(m.terastallized for m in mons))

    def columns(self, hp: np.ndarray) -> tuple[np.ndarray, ...]:
        """The side's features for rows of HP (n × its Pokémon), and the active Pokémon's speed per row."""
        alive = hp > 0
        asleep = np.array([s in _SLEEPING for s in self.status])
        statused = np.array([s in _STATUSED for s in self.status])
        total = (hp / self.maxhp).sum(axis=1)
        n = len(hp)
        return (total, alive.sum(axis=1).astype(float), hp[:, self.active] / self.maxhp[self.active],
                (alive & asleep).sum(axis=1).astype(float), (alive & statused).sum(axis=1).astype(float),
                np.full(n, float(self.attack_boosts)), np.full(n, float(self.defence_boosts)),
                np.full(n, self.hazards), np.full(n, float(self.tera_left)),
                np.where(alive[:, self.active], self.speed, 0.0))


@dataclass(frozen=True)
class Snapshot:
    """Both sides of an engine ``State`` as the features read them."""

    one: SideSnapshot
    two: SideSnapshot
    trick_room: bool

    @classmethod
    def of(cls, state: poke_engine.State) -> "Snapshot":
        return cls(SideSnapshot.of(state.side_one), SideSnapshot.of(state.side_two), bool(state.trick_room))

    def features(self, hp_one: np.ndarray | None = None, hp_two: np.ndarray | None = None) -> np.ndarray:
        """The features (n × :data:`FEATURES`), for rows of HP of either side (default: the snapshot's own)."""
        hp_one = self.one.hp[None, :] if hp_one is None else hp_one
        hp_two = self.two.hp[None, :] if hp_two is None else hp_two
        n = max(len(hp_one), len(hp_two))
        one = self.one.columns(np.broadcast_to(hp_one, (n, hp_one.shape[1])))
        two = self.two.columns(np.broadcast_to(hp_two, (n, hp_two.shape[1])))
        diff = [a - b for a, b in zip(one[:-1], two[:-1])]
        both = one[0] + two[0]
        diff.insert(2, np.divide(one[0] - two[0], both, out=np.zeros(n), where=both > 0))
        faster = np.where((one[-1] > 0) & (two[-1] > 0), np.sign(one[-1] - two[-1]), 0.0)
        diff.append(-faster if self.trick_room else faster)
        return np.column_stack(diff)

    def hp_left(self) -> float:
        """The share of both teams' HP still standing (1 at the start, 0 when both are out): how much game is left."""
        total = (self.one.hp / self.one.maxhp).sum() + (self.two.hp / self.two.maxhp).sum()
        return float(total / (len(self.one.hp) + len(self.two.hp)))

    def finished(self, hp_one: np.ndarray | None = None, hp_two: np.ndarray | None = None) -> np.ndarray:
        """Per row: side one's score when a side has no Pokémon left (1, 0, ½), NaN while the game goes on."""
        left_one = np.asarray((self.one.hp[None, :] if hp_one is None else hp_one) > 0).any(axis=1)
        left_two = np.asarray((self.two.hp[None, :] if hp_two is None else hp_two) > 0).any(axis=1)
        return np.where(left_one & left_two, np.nan, np.where(left_one, 1.0, np.where(left_two, 0.0, 0.5)))


def features(state: poke_engine.State) -> np.ndarray:
    """The model's features of `state` (:data:`FEATURES`), side one's minus side two's."""
    return Snapshot.of(state).features()[0]


def finished_value(state: poke_engine.State) -> float | None:
    """1 / 0 / ½ when a side has no Pokémon left (side one's score), else None."""
    value = float(Snapshot.of(state).finished()[0])
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class ValueModel:
    """A fitted logistic value: side one's win probability from :func:`features`."""

    coefficients: tuple[float, ...]
    #: What it was fitted on (run, seed text, games, positions), for the record.
    fitted_on: dict[str, Any]

    def __post_init__(self) -> None:
        if len(self.coefficients) != len(FEATURES):
            raise ValueError(f"the value model has {len(self.coefficients)} coefficients, not {len(FEATURES)} "
                             f"({', '.join(FEATURES)}): refit it with benchmarks/luck_value_fit.py")

    @property
    def key(self) -> str:
        """A short hash of the coefficients: cached luck of another model is not reused."""
        return hashlib.sha256(json.dumps(self.coefficients).encode()).hexdigest()[:12]

    def of_features(self, rows: np.ndarray) -> np.ndarray:
        """V of feature rows (n × len(FEATURES))."""
        return 1.0 / (1.0 + np.exp(-(np.atleast_2d(rows) @ np.asarray(self.coefficients))))

    def __call__(self, state: poke_engine.State) -> float:
        return float(self.of_snapshot(Snapshot.of(state))[0])

    def of_snapshot(self, snap: Snapshot, hp_one: np.ndarray | None = None,
                    hp_two: np.ndarray | None = None) -> np.ndarray:
        """V per row of HP (:meth:`Snapshot.features`); a finished game is worth its result."""
        return self.shifted(snap, np.zeros(1), hp_one, hp_two)[:, 0]

    def shifted(self, snap: Snapshot, shifts: np.ndarray, hp_one: np.ndarray | None = None,
                hp_two: np.ndarray | None = None) -> np.ndarray:
        """V per row of HP and per shift of its log-odds (rows × shifts): side one's win probability when its player
        is that much the stronger (pokebench/analysis/luck_rows.py); a finished game is worth its result."""
        finished = snap.finished(hp_one, hp_two)[:, None]
        logits = snap.features(hp_one, hp_two) @ np.asarray(self.coefficients)
        values = 1.0 / (1.0 + np.exp(-(logits[:, None] + np.asarray(shifts, dtype=float)[None, :])))
        return np.where(np.isnan(finished), values, finished)

    def to_json(self) -> str:
        return json.dumps({"features": list(FEATURES), "coefficients": [round(c, 6) for c in self.coefficients],
                           "fitted_on": self.fitted_on}, indent=1) + "\n"

    @classmethod
    def from_json(cls, text: str) -> "ValueModel":
        raw = json.loads(text)
        if list(raw.get("features", [])) != list(FEATURES):
            raise ValueError(f"the value model's features are {raw.get('features')}, not {list(FEATURES)}: "
                             "refit it with benchmarks/luck_value_fit.py")
        return cls(tuple(float(c) for c in raw["coefficients"]), dict(raw.get("fitted_on", {})))

    @classmethod
    def of(cls, coefficients: Sequence[float], fitted_on: dict[str, Any]) -> "ValueModel":
        return cls(tuple(float(c) for c in coefficients), fitted_on)


@lru_cache(maxsize=1)
def load_value_model() -> ValueModel:
    """The shipped model (``pokebench/analysis/value_model.json``)."""
    return ValueModel.from_json(resources.files("pokebench.analysis").joinpath(MODEL_FILE).read_text("utf-8"))


def luck_settings(model: ValueModel | None = None) -> str:
    """What a game's luck depends on besides the engine: the value function and the analysis's version."""
    return f"value={(model or load_value_model()).key},luck={LUCK_VERSION},action={ACTION_WEIGHT}"
