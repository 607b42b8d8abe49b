"""Writing the published folder: the tables of the contract, ``meta.json``, the games' logs.

A published folder (``data/site/NAME/`` by default)::

    meta.json  games.csv  decisions.csv  ratings.csv  h2h.csv  pairs.csv  players.json
    decision_quality.csv  decision_quality_spread.csv   each decision scored by the engine (no rows: not analysed)
    luck.csv  luck_turns.csv   each game's and each turn's luck, the luck-adjusted scores (no rows: not analysed)
    inputlogs/<uid>.log   Showdown's input log: replays the game exactly
    logs/<uid>.log        the battle's protocol log (what the replay viewer plays)
    teams/<uid>.json      both teams' sheets {"p1": [...], "p2": [...]}
    <name>.csv            extra tables, e.g. harness_gain.csv (see :func:`pokebench.results.figures.register_tables`)
    index.html ...        the site, built from the files above only (:mod:`pokebench.site`)

:func:`pokebench.publish.publish` puts them and the site together into a folder.
"""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel

from pokebench.results.figures import Results
from pokebench.results.loading import PublishError, RunData
from pokebench.results.redaction import neutralise_frame
from pokebench.results.schema import (DecisionQualityRow, DecisionRow, GameRow, H2HRow, LuckRow, LuckTurnRow, PairRow,
                                      PlayerRow, QualitySpreadRow, RatingRow)

__all__ = ["write_published", "write_table", "input_log_text"]

def _dtype(annotation: Any) -> str | None:
    """The pandas dtype that writes a column of this annotation as the contract says (ints as ints)."""
    args = set(typing.get_args(annotation)) or {annotation}
    if int in args:
        return "Int64"
    if bool in args:
        return "boolean"
    if float in args:
        return "float64"
    return None


def write_table(path: Path, model: type[BaseModel], frame: pd.DataFrame) -> None:
    """Write ``frame`` as the CSV of ``model``: its columns in order, integers as integers,
    text that a spreadsheet would run as a formula neutralised."""
    out = frame.reindex(columns=list(model.model_fields)).copy()
    for name, info in model.model_fields.items():
        dtype = _dtype(info.annotation)
        if dtype is not None:
            values = out[name].map(lambda v: None if v is None or (isinstance(v, float) and v != v) else v)
            data: Any = values.astype(object).tolist() if dtype != "float64" else values.astype(float)
            out[name] = pd.array(data, dtype=dtype)
    neutralise_frame(out).to_csv(path, index=False, lineterminator="\n")


def input_log_text(record: dict[str, Any]) -> str:
    """A game's Showdown input log as a file: the lines joined with newlines, one at the end."""
    return "\n".join(record.get("input_log") or []) + "\n"


def _json(value: Any) -> str:
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n"


def write_published(root: Path, data: RunData, results: Results) -> None:
    """The data part of a published folder (no HTML) into the existing folder ``root``."""
    write_table(root / "games.csv", GameRow, results.games)
    write_table(root / "decisions.csv", DecisionRow, results.decisions)
    write_table(root / "decision_quality.csv", DecisionQualityRow, results.quality)
    write_table(root / "decision_quality_spread.csv", QualitySpreadRow, results.quality_spread)
    write_table(root / "luck.csv", LuckRow, results.luck)
    write_table(root / "luck_turns.csv", LuckTurnRow, results.luck_turns)
    write_table(root / "ratings.csv", RatingRow, results.ratings)
    write_table(root / "h2h.csv", H2HRow, results.h2h)
    write_table(root / "pairs.csv", PairRow, results.pairs)
    players = [PlayerRow(**row).model_dump() for row in results.players]
    (root / "players.json").write_text(_json(players), encoding="utf-8")
    tables = ["games.csv", "decisions.csv", "decision_quality.csv", "decision_quality_spread.csv", "luck.csv",
              "luck_turns.csv", "ratings.csv", "h2h.csv", "pairs.csv", "players.json"]
    for name, table in sorted(results.extra.items()):
        if f"{name}.csv" in tables or name in ("meta", "players"):
            raise PublishError(f"an extra table may not be named {name!r}: that is a table of the contract")
        neutralise_frame(table).to_csv(root / f"{name}.csv", index=False, lineterminator="\n")
        tables.append(f"{name}.csv")
    for sub in ("inputlogs", "logs", "teams"):
        (root / sub).mkdir()
    for uid in results.games["uid"]:
        record = data.record(uid)
        (root / "inputlogs" / f"{uid}.log").write_text(input_log_text(record), encoding="utf-8")
        (root / "logs" / f"{uid}.log").write_text("\n".join(record.get("log") or []) + "\n", encoding="utf-8")
        (root / "teams" / f"{uid}.json").write_text(_json({"p1": record.get("p1team"), "p2": record.get("p2team")}),
                                                    encoding="utf-8")
    meta = results.meta.model_copy(update={"tables": tables})
    results.meta = meta
    (root / "meta.json").write_text(meta.model_dump_json(indent=1) + "\n", encoding="utf-8")
