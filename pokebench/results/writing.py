"""Writing the published folder: the tables of the contract, ``meta.json``, the games' logs, then the site.

A published folder (``data/site/NAME/`` by default)::

    meta.json  games.csv  decisions.csv  ratings.csv  h2h.csv  pairs.csv  players.json
    decision_quality.csv  decision_quality_spread.csv   each decision scored by the engine (no rows: not analysed)
    inputlogs/<uid>.log   Showdown's input log: replays the game exactly
    logs/<uid>.log        the battle's protocol log (what the replay viewer plays)
    teams/<uid>.json      both teams' sheets {"p1": [...], "p2": [...]}
    <name>.csv            extra tables, e.g. harness_gain.csv (see :func:`pokebench.results.figures.register_tables`)
    index.html ...        the site, built from the files above only (:mod:`pokebench.site`)

Everything is checked and computed before anything is written; the folder is written into a
temporary folder next to the target and moved into place only when complete, so a failed
publish leaves no half-written folder and an existing one stays as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import typing
import uuid
from pathlib import Path
from typing import Any, Iterator, Sequence

import pandas as pd
from pydantic import BaseModel

from pokebench.analysis.settings import Settings
from pokebench.results.figures import Results, compute_results
from pokebench.results.loading import RUNS_DIR, PublishError, RunData, load_runs
from pokebench.results.redaction import neutralise_frame, redact_tree, secret_env_values
from pokebench.results.schema import (DecisionQualityRow, DecisionRow, GameRow, H2HRow, PairRow, PlayerRow,
                                      QualitySpreadRow, RatingRow)

__all__ = ["publish", "write_published", "write_table", "input_log_text", "default_out_dir", "SITE_DIR",
           "SITE_MARKER"]

SITE_DIR = Path("data/site")
SITE_MARKER = ".pokebench-site"


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
    write_table(root / "ratings.csv", RatingRow, results.ratings)
    write_table(root / "h2h.csv", H2HRow, results.h2h)
    write_table(root / "pairs.csv", PairRow, results.pairs)
    players = [PlayerRow(**row).model_dump() for row in results.players]
    (root / "players.json").write_text(_json(players), encoding="utf-8")
    tables = ["games.csv", "decisions.csv", "decision_quality.csv", "decision_quality_spread.csv", "ratings.csv",
              "h2h.csv", "pairs.csv", "players.json"]
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


def _is_site(path: Path) -> bool:
    return (path / SITE_MARKER).is_file()


@contextlib.contextmanager
def publishing(out_dir: Path) -> Iterator[None]:
    """Hold `out_dir` for one publish at a time (an OS file lock beside it, ``.NAME.publish.lock``).

    The shards of a run often publish into one folder as each ends. Serialised, every publish reads
    the stores after the one before it wrote, so the last to write has seen the most games: a run
    that is complete when its last shard publishes is never left labelled partial by a slower
    publish that read the stores earlier.
    """
    made = [p for p in (out_dir.parent, *out_dir.parent.parents) if not p.exists()]  # deepest first
    path = out_dir.parent / f".{out_dir.name}.publish.lock"
    while True:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # a refused publish removed the empty folder it had made: make it again
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when the descriptor closes, or its process ends
        try:
            if os.path.samestat(os.fstat(fd), os.stat(path)):
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # the publish before removed the file between our open and our lock: lock the new one
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # removed while held: nothing is left beside the published folder
        os.close(fd)
        for folder in made:  # a refused publish leaves no empty folder it made for its lock
            with contextlib.suppress(OSError):
                folder.rmdir()


def _clean_stale_temps(out_dir: Path) -> None:
    """Remove temporary folders of earlier publishes of `out_dir` whose process is gone."""
    for tmp in out_dir.parent.glob(f".{out_dir.name}.tmp-*"):
        m = re.match(rf"\.{re.escape(out_dir.name)}\.tmp-(\d+)-", tmp.name)
        if not m:
            continue
        pid = int(m.group(1))
        try:
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
        if not alive and tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)


def _replace_dir(tmp: Path, out_dir: Path) -> None:
    """Move the finished `tmp` to `out_dir`, replacing an old folder there."""
    if not out_dir.exists():
        os.replace(tmp, out_dir)
        return
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    os.replace(out_dir, old)
    try:
        os.replace(tmp, out_dir)
    except BaseException:
        os.replace(old, out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


def default_out_dir(names: Sequence[str]) -> Path:
    if len(names) != 1:
        raise PublishError("several runs need --out DIR: the folder of the merged site, "
                           "e.g. --out data/site/all.")
    return SITE_DIR / names[0]


def publish(names: Sequence[str], out_dir: Path | str | None = None, anchor: str = "max-damage",
            runs_dir: Path | str = RUNS_DIR, n_bootstrap: int = 200, seed: int = 0, level: float = 0.95,
            analyse: bool = False, workers: int = 2, analysis: Settings = Settings()) -> Path:
    """Merge the runs, compute the results, write the published folder and its site; return its path.

    The runs' decision quality (searched with the settings `analysis`) is published as far as
    ``pokebench analyse`` cached it; `analyse` first searches what the cache lacks (`workers` processes).
    """
    from pokebench.analysis.quality import read_quality
    from pokebench.site.build import SiteError, build_site, check_site_inputs

    names = list(dict.fromkeys(names))
    out = Path(out_dir) if out_dir is not None else default_out_dir(names)
    if out.exists() and not out.is_dir():
        raise PublishError(f"{out} exists and is not a folder; choose another --out.")
    if out.is_dir() and any(out.iterdir()) and not _is_site(out):
        raise PublishError(f"{out} exists and is not a PokéBench site; it is left as it is. "
                           "Choose another --out, or remove that folder.")
    if analyse:
        from pokebench.analysis.analyse import analyse_runs

        analyse_runs(names, runs_dir, analysis, workers=workers)
    with publishing(out), load_runs(names, runs_dir) as data:
        quality, spread = read_quality(data.run_dirs, data.games["uid"], analysis)
        results = compute_results(data, anchor=anchor, n_bootstrap=n_bootstrap, seed=seed, level=level,
                                  quality=quality, quality_spread=spread)
        try:  # the replays need Showdown's text templates: fail before writing anything
            check_site_inputs()
        except SiteError as err:
            raise PublishError(str(err)) from None
        out.parent.mkdir(parents=True, exist_ok=True)
        _clean_stale_temps(out)
        tmp = out.parent / f".{out.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            write_published(tmp, data, results)
            build_site(tmp)  # from the files just written, nothing else
            secrets = secret_env_values()
            if secrets:
                redact_tree(tmp, secrets)
            (tmp / SITE_MARKER).write_text(json.dumps({"runs": names, "anchor": anchor}) + "\n")
            _replace_dir(tmp, out)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    return out
