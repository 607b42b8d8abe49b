"""How figures read on the site: the Jinja2 filters (a missing figure is a dash, never a zero)."""

from __future__ import annotations

import math
from typing import Any
from urllib.parse import quote

import pandas as pd

__all__ = ["DASH", "missing", "FILTERS"]

DASH = "—"


def missing(x: Any) -> bool:
    return x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) or (
        hasattr(x, "dtype") and pd.isna(x))


def elo(x: Any) -> str:
    return DASH if missing(x) else f"{float(x):.0f}"


def interval(lo: Any, hi: Any) -> str:
    return DASH if missing(lo) or missing(hi) else f"{float(lo):.0f}–{float(hi):.0f}"


def regret(x: Any) -> str:
    """A regret (expected score, 0 to 1) to three decimals."""
    return DASH if missing(x) else f"{float(x):.3f}"


def regret_interval(lo: Any, hi: Any) -> str:
    return DASH if missing(lo) or missing(hi) else f"{float(lo):.3f}–{float(hi):.3f}"


def _minus(text: str) -> str:
    return text.replace("-", "\u2212")


def luck(x: Any) -> str:
    """A luck (expected score: a tenth of a win is 0.100), signed: ``+0.124``, ``−0.031``."""
    return DASH if missing(x) else _minus(f"{float(x):+.3f}")


def luck_interval(lo: Any, hi: Any) -> str:
    return DASH if missing(lo) or missing(hi) else f"[{luck(lo)}, {luck(hi)}]"


def variance(x: Any) -> str:
    """A variance of scores, to four decimals."""
    return DASH if missing(x) else f"{float(x):.4f}"


def ratio(x: Any) -> str:
    """A variance ratio (raw / luck-adjusted): ``1.29×``."""
    return DASH if missing(x) else f"{float(x):.2f}×"


def ratio_interval(lo: Any, hi: Any) -> str:
    return DASH if missing(lo) or missing(hi) else f"[{float(lo):.2f}, {float(hi):.2f}]"


def score(x: Any) -> str:
    """A score (1 a win, 0.5 a tie, 0 a loss; an adjusted score can fall outside) to three decimals."""
    return DASH if missing(x) else _minus(f"{float(x):.3f}")


def cost(x: Any) -> str:
    if missing(x):
        return DASH
    x = float(x)
    return f"${x:.4f}" if x < 0.1 else f"${x:.2f}"


def integer(x: Any) -> str:
    return DASH if missing(x) else f"{float(x):,.0f}"


def seconds(x: Any) -> str:
    if missing(x):
        return DASH
    x = float(x)
    return f"{x * 1000:.0f} ms" if x < 1 else f"{x:.1f} s"


def rate(x: Any) -> str:
    return DASH if missing(x) else f"{100 * float(x):.1f}%"


def text(x: Any) -> str:
    return DASH if missing(x) or x == "" else str(x)


def whole(x: Any) -> str:
    """A whole number as one (``1``, never ``1.0``: a column with gaps reads as floats); other values as they are."""
    if missing(x):
        return DASH
    return str(int(x)) if isinstance(x, float) and x.is_integer() else str(x)


def url(*parts: str) -> str:
    """A relative URL from path parts, each percent-encoded (Jinja2 escapes it for HTML)."""
    return "/".join(quote(str(p)) for p in parts)


def sort_value(x: Any) -> str:
    """A cell's value for the games table's sorting script (numbers as numbers, missing last)."""
    return "" if missing(x) else str(x)


FILTERS = {"elo": elo, "regret": regret, "luck": luck, "ratio": ratio, "variance": variance, "score": score, "cost": cost, "integer": integer, "seconds": seconds, "rate": rate, "text": text,
           "sortval": sort_value, "whole": whole}
#: Below this many complete mirror pairs a player's interval is tagged "few pairs" on the leaderboard: a
#: bootstrap over so few pairs has few distinct samples (the reported interval is the wider of it and the posterior).
FEW_PAIRS = 10

GLOBALS = {"FEW_PAIRS": FEW_PAIRS, "interval": interval, "regret_interval": regret_interval,
           "luck_interval": luck_interval, "ratio_interval": ratio_interval, "url": url, "missing": missing, "DASH": DASH}
