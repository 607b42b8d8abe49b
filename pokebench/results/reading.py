"""Reading a published folder back: :func:`load_results`, the entry point of the notebook and other tools."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from pydantic import BaseModel, ValidationError

from pokebench.results.figures import Results, compute_results
from pokebench.results.loading import PublishError, load_runs
from pokebench.results.redaction import unneutralise
from pokebench.results.schema import (SCHEMA_VERSION, DecisionQualityRow, DecisionRow, GameRow, H2HRow, LuckRow,
                                      LuckTurnRow, Meta, PairRow, QualitySpreadRow, RatingRow, columns)
from pokebench.results.store import run_stores

__all__ = ["load_results", "read_meta", "read_table", "ResultsVersionError"]


class ResultsVersionError(PublishError):
    """The folder was published with another version of the results contract."""


def read_meta(path: Path | str) -> Meta:
    """``meta.json`` of a published folder, checked against this package's :data:`SCHEMA_VERSION`."""
    path = Path(path)
    file = path / "meta.json"
    if not file.is_file():
        if (path / "ratings.csv").is_file():
            raise ResultsVersionError(
                f"{path} was published before the results had a versioned contract (it has no meta.json). "
                "Publish its runs again with this version: `pokebench-publish RUN [RUN ...] --out "
                f"{path}` (the runs' stores are unchanged).")
        raise PublishError(f"{path} is not a published folder (no meta.json). Publish a run first: "
                           "`pokebench-publish RUN`.")
    raw = json.loads(file.read_text(encoding="utf-8"))
    found = raw.get("schema_version")
    if found != SCHEMA_VERSION:
        if isinstance(found, int) and found > SCHEMA_VERSION:
            raise ResultsVersionError(f"{path} uses results schema {found}, newer than this PokéBench's "
                                      f"({SCHEMA_VERSION}). Upgrade PokéBench (`pip install -U pokebench`).")
        raise ResultsVersionError(f"{path} uses results schema {found}; this PokéBench reads schema "
                                  f"{SCHEMA_VERSION}. Publish its runs again: `pokebench-publish RUN [RUN ...] "
                                  f"--out {path}`.")
    try:
        return Meta.model_validate(raw)
    except ValidationError as err:
        raise PublishError(f"{file} does not match results schema {SCHEMA_VERSION}: {err}") from None


def read_table(path: Path, model: type[BaseModel]) -> pd.DataFrame:
    """A published CSV with the columns of ``model`` (missing file: no rows), formulas un-neutralised."""
    if not path.is_file():
        return pd.DataFrame(columns=columns(model))
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype=str)
    if list(frame.columns) != columns(model):
        raise PublishError(f"{path} has columns {list(frame.columns)}, not those of results schema "
                           f"{SCHEMA_VERSION}: {columns(model)}. Publish its runs again.")
    for name, info in model.model_fields.items():
        text = str(info.annotation)
        col = frame[name]
        if "int" in text:
            frame[name] = pd.to_numeric(col).astype("Int64" if "None" in text else "int64")
        elif "float" in text:
            frame[name] = pd.to_numeric(col).astype(float)
        elif "bool" in text:
            frame[name] = col.map({"True": True, "False": False}).astype("boolean")
        else:
            frame[name] = col.map(unneutralise).astype(object).where(col.notna(), None)
    return frame


def load_results(path: Path | str, anchor: str = "max-damage") -> Results:
    """Results of a published folder (its tables and meta.json, version checked), or of a run
    folder (``runs/NAME``: loaded from its stores and fitted now)."""
    path = Path(path)
    if (path / "meta.json").is_file() or (path / "ratings.csv").is_file():
        meta = read_meta(path)
        players = json.loads((path / "players.json").read_text(encoding="utf-8"))
        contract = {"games.csv", "decisions.csv", "ratings.csv", "h2h.csv", "pairs.csv", "decision_quality.csv",
                    "decision_quality_spread.csv", "luck.csv", "luck_turns.csv"}
        extra = {Path(t).stem: pd.read_csv(path / t) for t in meta.tables
                 if t.endswith(".csv") and t not in contract and (path / t).is_file()}
        return Results(ratings=read_table(path / "ratings.csv", RatingRow), h2h=read_table(path / "h2h.csv", H2HRow),
                       pairs=read_table(path / "pairs.csv", PairRow), games=read_table(path / "games.csv", GameRow),
                       decisions=read_table(path / "decisions.csv", DecisionRow), players=players, meta=meta,
                       extra=extra, quality=read_table(path / "decision_quality.csv", DecisionQualityRow),
                       quality_spread=read_table(path / "decision_quality_spread.csv", QualitySpreadRow),
                       luck=read_table(path / "luck.csv", LuckRow),
                       luck_turns=read_table(path / "luck_turns.csv", LuckTurnRow))
    if run_stores(path):
        from pokebench.analysis.luck_rows import read_luck
        from pokebench.analysis.quality import read_quality

        with load_runs([path.name], path.parent) as data:
            quality, spread = read_quality(data.run_dirs, data.games["uid"])
            luck, turns = read_luck(data.run_dirs, data.games)
            return compute_results(data, anchor=anchor, quality=quality, quality_spread=spread, luck=luck,
                                   luck_turns=turns)
    raise PublishError(f"{path} is neither a published folder (no meta.json) nor a run folder (no store.sqlite).")
