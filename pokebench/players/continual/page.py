"""``harness.html``: the Continual Harness's gain, learning curve and browsable history, from a published folder.

Reads only the published tables (``harness_gain.csv``, ``learning_curve.csv``,
``harness_versions.csv``, ``harness_edits.csv``; see :mod:`pokebench.players.continual.tables`), so it
works on a copy of the folder with no store; Jinja2 autoescapes everything the models wrote.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from pokebench.players.continual.harness import Harness
from pokebench.site.build import SitePages, register_page
from pokebench.site.plots import plot_learning_curve, save_svg

__all__ = ["write_harness_page"]


#: Whole-number columns: read as integers with gaps (``version 1``, never ``version 1.0``).
_WHOLE = ("version", "parent", "first_epoch", "harness_version", "epoch", "pairs", "runs", "games", "first_pair",
          "last_pair", "refiner_calls", "trigger_games")


def _rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    table = pd.read_csv(path, keep_default_na=False, na_values=[""])
    for column in set(_WHOLE) & set(table.columns):
        table[column] = table[column].astype("Int64")
    return [{str(k): (None if pd.isna(v) else v) for k, v in row.items()} for row in table.to_dict("records")]


@register_page
def write_harness_page(pages: SitePages) -> Path | None:
    """Write ``harness.html`` in the site's folder when it has harness tables; its path, or None."""
    root = pages.root
    versions = _rows(root / "harness_versions.csv")
    if not versions:
        return None
    edits = _rows(root / "harness_edits.csv")
    for v in versions:
        v["edits"] = [e for e in edits if (e["run"], e["player"], e["version"]) == (v["run"], v["player"], v["version"])
                      and (v["version"] is not None or e.get("at") == v.get("at"))]
        v["harness_text"] = Harness.model_validate_json(v["harness"]).render(with_ids=True) if v.get("harness") else None
        counts = json.loads(v["signatures"]) if v.get("signatures") else {}
        v["signatures"] = ", ".join(f"{kind} {n}" for kind, n in counts.items() if n) or None
    gains = _rows(root / "harness_gain.csv")
    curve = _rows(root / "learning_curve.csv")
    figure = plot_learning_curve(pd.DataFrame(curve))
    if figure is not None:
        save_svg(figure, root / "learning_curve.svg")
    return pages.write("harness.html", "harness.html", gains=gains, gaps=_rows(root / "harness_gap.csv"),
                       curve=curve, versions=versions, has_curve_plot=figure is not None,
                       level=f"{gains[0]['level']:.0%}" if gains else "95%")
