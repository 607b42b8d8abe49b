"""The plots that the site and the notebook share: matplotlib figures, saved as reproducible SVG."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.typing import RcKeyType

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_ratings", "plot_h2h", "plot_cost", "plot_learning_curve", "plot_value_calibration", "save_svg"]

SVG_RC: dict[RcKeyType, Any] = {"svg.fonttype": "none", "svg.hashsalt": "pokebench", "font.size": 10}


def _axes(ax: "Axes | None", size: tuple[float, float]) -> "Axes":
    if ax is not None:
        return ax
    return Figure(figsize=size, layout="constrained").add_subplot()


def _figure(ax: "Axes") -> Figure:
    """The figure ``ax`` is drawn on (the top one if it sits in a sub-figure): the one that can be saved."""
    figure = ax.get_figure(root=True)
    assert figure is not None, "an axes made by matplotlib always belongs to a figure"
    return figure


def plot_ratings(ratings: pd.DataFrame, ax: "Axes | None" = None, anchor: str | None = None) -> Figure:
    """Each player's Elo with its 95% interval, best at the top."""
    r = ratings.sort_values("elo").reset_index(drop=True)
    ax = _axes(ax, (7.5, 0.9 + 0.38 * len(r)))
    y = np.arange(len(r))
    lo = (r["elo"] - r["ci_low"]).clip(lower=0).fillna(0)
    hi = (r["ci_high"] - r["elo"]).clip(lower=0).fillna(0)
    ax.errorbar(r["elo"], y, xerr=[lo, hi], fmt="o", color="#2f5fb3", ecolor="#8aa5d6", elinewidth=3, capsize=0)
    ax.set_yticks(y, [str(p) for p in r["player"]])
    if anchor is not None and anchor in set(r["player"]):
        ax.axvline(float(r.loc[r["player"] == anchor, "elo"].iloc[0]), color="#bbb", lw=1, ls="--", zorder=0)
    ax.set_xlabel("Elo (95% interval)")
    ax.grid(axis="x", color="#eee")
    ax.set_ylim(-0.6, len(r) - 0.4)
    return _figure(ax)


def plot_h2h(h2h: pd.DataFrame, order: Sequence[str] | None = None, ax: "Axes | None" = None) -> Figure:
    """Heat map of the head-to-head win rates (row player's, ties half); blank: never met."""
    players = list(order) if order is not None else sorted(set(h2h["player"]) | set(h2h["opponent"]))
    n = len(players)
    ax = _axes(ax, (1.6 + 0.7 * n, 1.2 + 0.6 * n))
    m = np.full((n, n), np.nan)
    idx = {p: k for k, p in enumerate(players)}
    for p, o, w in zip(h2h["player"], h2h["opponent"], h2h["win_rate"]):
        if p in idx and o in idx:
            m[idx[p], idx[o]] = w
    im = ax.imshow(np.ma.masked_invalid(m), cmap="RdBu", vmin=0, vmax=1)
    for i in range(n):
        for j in range(n):
            if not np.isnan(m[i, j]):
                ax.text(j, i, f"{100 * m[i, j]:.0f}", ha="center", va="center", fontsize=8,
                        color="white" if abs(m[i, j] - 0.5) > 0.35 else "black")
    ax.set_xticks(range(n), players, rotation=45, ha="right")
    ax.set_yticks(range(n), players)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    ax.figure.colorbar(im, ax=ax, label="win rate of the row player", shrink=0.8)
    return _figure(ax)


def _spread_labels(ax: "Axes", xs: Sequence[float], ys: Sequence[float], labels: Sequence[str],
                   fontsize: float = 8) -> None:
    """Label each point to its right, moving labels up past those already placed until none overlap (their
    boxes measured by the renderer); a label moved off its point gets a thin line to it."""
    fig = _figure(ax)
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    fig.draw_without_rendering()  # the final layout, so positions in pixels hold
    to_data = ax.transData.inverted()
    placed: list[Any] = []
    for k in sorted(range(len(xs)), key=lambda i: (ys[i], xs[i])):
        px, py = ax.transData.transform((xs[k], ys[k]))
        dy = 0.0
        while True:
            at_x, at_y = to_data.transform((px + 6, py + 3 + dy))
            at = (float(at_x), float(at_y))
            text = ax.annotate(str(labels[k]), (xs[k], ys[k]), xytext=at, textcoords="data", fontsize=fontsize,
                               va="bottom", ha="left")
            text.set_in_layout(False)  # the layout stays as measured
            box = text.get_window_extent(renderer).expanded(1.05, 1.1)
            if not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            text.remove()
            dy += box.height * 0.6
        if dy:
            ax.annotate("", (xs[k], ys[k]), xytext=at, textcoords="data",
                        arrowprops={"arrowstyle": "-", "color": "#aaa", "lw": 0.6}).set_in_layout(False)


def plot_cost(ratings: pd.DataFrame, ax: "Axes | None" = None) -> Figure | None:
    """Cost per game against rating for the players with a known cost; None if there are none, or if every one
    was free (a local model: a column of points at $0 compares nothing). The cost axis starts at 0 and the
    players' names never overlap."""
    r = ratings[ratings["cost_per_game"].notna()] if "cost_per_game" in ratings else ratings.iloc[:0]
    cost = pd.to_numeric(r["cost_per_game"]).clip(lower=0)
    if not (cost > 0).any():
        return None
    ax = _axes(ax, (7, 4.2))
    lo = (r["elo"] - r["ci_low"]).clip(lower=0).fillna(0)
    hi = (r["ci_high"] - r["elo"]).clip(lower=0).fillna(0)
    ax.errorbar(cost, r["elo"], yerr=[lo, hi], fmt="o", color="#2f5fb3", ecolor="#8aa5d6")
    ax.set_xlim(0, max(float(cost.max()), 1e-4) * 1.3)
    ax.set_xlabel("cost per game, one side (USD, list prices)")
    ax.set_ylabel("Elo (95% interval)")
    ax.grid(color="#eee")
    _spread_labels(ax, list(cost), list(r["elo"]), list(r["player"]))
    return _figure(ax)


def plot_learning_curve(curve: pd.DataFrame) -> Figure | None:
    """The Continual Harness's learning curve (``learning_curve.csv``): per harness player one panel, the score
    per epoch of the harness player (with its interval over pairs when known) and of its plain partner, and a
    dotted line where a new harness version came into use; None without rows."""
    if curve.empty:
        return None
    players = list(dict.fromkeys(curve["harness_player"]))
    fig = Figure(figsize=(7.5, 0.6 + 2.0 * len(players)), layout="constrained")
    axes = fig.subplots(len(players), 1, sharex=True, squeeze=False)[:, 0]
    for ax, name in zip(axes, players):
        mine = curve[curve["harness_player"] == name].sort_values("epoch")
        for role, style in (("plain", {"color": "#888", "ls": "--", "marker": "s"}),
                            ("harness", {"color": "#2f5fb3", "ls": "-", "marker": "o"})):
            r = mine[mine["role"] == role]
            if r.empty:
                continue
            score = pd.to_numeric(r["score"])
            lo = (score - pd.to_numeric(r.get("score_lo", score))).clip(lower=0).fillna(0)
            hi = (pd.to_numeric(r.get("score_hi", score)) - score).clip(lower=0).fillna(0)
            ax.errorbar(r["epoch"], score, yerr=[lo, hi], capsize=3, ms=5, lw=1.5, elinewidth=1,
                        label=f"{r['player'].iloc[0]} ({role})", **style)
        changed = mine[(mine["role"] == "harness") & mine["version_changed"].astype(str).str.lower().eq("true")]
        for epoch, version in zip(changed["epoch"], changed["harness_version"]):
            ax.axvline(float(epoch) - 0.5, color="#bbb", ls=":", lw=1)
            ax.annotate(f"version {int(version)}", (float(epoch) - 0.5, 1.02), xycoords=("data", "axes fraction"),
                        fontsize=7, ha="left", va="bottom", color="#666")
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("score")
        ax.set_title(name, fontsize=9, loc="left")
        ax.grid(axis="y", color="#eee")
        ax.legend(fontsize=7, loc="upper right", frameon=False)
    axes[-1].set_xlabel("epoch")
    axes[-1].xaxis.get_major_locator().set_params(integer=True)
    return fig


def value_calibration(turns: pd.DataFrame, luck: pd.DataFrame, bins: int = 10) -> pd.DataFrame:
    """The luck analysis's V against what happened: every valued turn's V before it (``luck_turns.csv``'s
    ``v_before``, side one's win probability) with its game's result for side one (``luck.csv``'s score_p1), in
    `bins` equal bins of V: per bin the positions, the mean V and the mean result."""
    valued = turns[["uid", "v_before"]].dropna().merge(luck[["uid", "score_p1"]].dropna(), on="uid")
    valued = valued.assign(bin=np.minimum((valued["v_before"] * bins).astype(int), bins - 1))
    return valued.groupby("bin").agg(positions=("uid", "size"), predicted=("v_before", "mean"),
                                     observed=("score_p1", "mean")).reset_index()


def plot_value_calibration(turns: pd.DataFrame, luck: pd.DataFrame) -> Figure | None:
    """:func:`value_calibration` drawn: the mean result against the mean V per bin, each point's area its
    positions, the diagonal where V is calibrated; None without a valued turn."""
    table = value_calibration(turns, luck)
    if table.empty:
        return None
    ax = _axes(None, (4.6, 4.2))
    ax.plot([0, 1], [0, 1], color="#bbb", lw=1, ls="--", zorder=0)
    area = 400 * table["positions"] / table["positions"].max()
    ax.scatter(table["predicted"], table["observed"], s=np.maximum(area, 8), color="#2f5fb3", alpha=0.8)
    ax.plot(table["predicted"], table["observed"], color="#8aa5d6", lw=1)
    ax.set_xlim(0, 1)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("V before the turn (side one's win probability)")
    ax.set_ylabel("side one's result (mean)")
    ax.set_title(f"{int(table['positions'].sum()):,} positions of {luck['uid'].nunique():,} games", fontsize=9,
                 loc="left")
    ax.grid(color="#eee")
    return _figure(ax)


def save_svg(fig: Figure, path: Path) -> None:
    """Write ``fig`` as SVG with no date and fixed ids, so identical data give identical files."""
    with rc_context(SVG_RC):
        fig.savefig(path, format="svg", metadata={"Date": None})
