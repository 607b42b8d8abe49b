"""The plots that the site and the notebook share: matplotlib figures, saved as reproducible SVG."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.figure import Figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes

__all__ = ["plot_ratings", "plot_h2h", "plot_cost", "plot_learning_curve", "save_svg"]

SVG_RC = {"svg.fonttype": "none", "svg.hashsalt": "pokebench", "font.size": 10}


def _axes(ax: "Axes | None", size: tuple[float, float]) -> "Axes":
    if ax is not None:
        return ax
    return Figure(figsize=size, layout="constrained").add_subplot()


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
    return ax.figure


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
    return ax.figure


def plot_cost(ratings: pd.DataFrame, ax: "Axes | None" = None) -> Figure | None:
    """Cost per game against rating for the players with a known cost; None if there are none."""
    r = ratings[ratings["cost_per_game"].notna()] if "cost_per_game" in ratings else ratings.iloc[:0]
    if r.empty:
        return None
    ax = _axes(ax, (7, 4.2))
    lo = (r["elo"] - r["ci_low"]).clip(lower=0).fillna(0)
    hi = (r["ci_high"] - r["elo"]).clip(lower=0).fillna(0)
    ax.errorbar(r["cost_per_game"], r["elo"], yerr=[lo, hi], fmt="o", color="#2f5fb3", ecolor="#8aa5d6")
    for x, y, p in zip(r["cost_per_game"], r["elo"], r["player"]):
        ax.annotate(str(p), (x, y), textcoords="offset points", xytext=(5, 4), fontsize=8)
    ax.set_xlabel("cost per game, one side (USD, list prices)")
    ax.set_ylabel("Elo (95% interval)")
    ax.grid(color="#eee")
    return ax.figure


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


def save_svg(fig: Figure, path: Path) -> None:
    """Write ``fig`` as SVG with no date and fixed ids, so identical data give identical files."""
    with rc_context(SVG_RC):
        fig.savefig(path, format="svg", metadata={"Date": None})
