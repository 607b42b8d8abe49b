"""Publishing: merge runs' stores into the published folder (:mod:`pokebench.results.writing`), then build
its site (:mod:`pokebench.site`) from that folder alone. It stands above both, as the orchestration.

Everything is checked and computed before anything is written; the folder is written into a
temporary folder next to the target and moved into place only when complete, so a failed
publish leaves no half-written folder and an existing one stays as it was.

``python -m pokebench.publish`` is the publish command of PokéBench before 0.2.0, kept as an alias of
``pokebench-publish`` (:mod:`pokebench.cli.publish`, the same arguments), with a note pointing to the new name.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from pokebench.analysis.luck_rows import read_luck
from pokebench.analysis.quality import other_settings, read_quality
from pokebench.analysis.settings import Settings
from pokebench.paths import RUNS_DIR, SITES_DIR
from pokebench.results.figures import compute_results
from pokebench.results.loading import PublishError, load_runs
from pokebench.results.redaction import redact_tree, secret_env_values
from pokebench.results.writing import write_published
from pokebench.site.build import SiteError, build_site, check_site_inputs
from pokebench.util import lock_file

__all__ = ["publish", "publishing", "default_out_dir", "SITE_MARKER"]

SITE_MARKER = ".pokebench-site"


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
    fd = None
    try:
        try:
            fd = lock_file(path, fcntl.LOCK_EX)  # waits for the publish before
        except OSError as err:
            raise PublishError(f"cannot write in {out_dir.parent} ({err.strerror}: {path}); choose another "
                               "--out.") from None
        assert fd is not None, "a blocking lock returns only when held"
        yield
    finally:
        if fd is not None:
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
    return SITES_DIR / names[0]


def _say_where_the_analysis_is(run_dirs: Sequence[Path], uids: Iterable[str], analysis: Settings) -> None:
    """A note on stderr when the caches hold decisions analysed with other settings than those published."""
    other = other_settings(run_dirs, uids, analysis)
    if other:
        found = "; ".join(f"{n} decision(s) with {key.split(',analysis=')[0].replace(',', ', ')}"
                          for key, n in sorted(other.items()))
        print(f"publish: note: no decision was analysed with iterations={analysis.iterations}, "
              f"samples={analysis.samples}, so decision_quality.csv is empty; the runs' analysis holds {found}. "
              "Publish those with the same --iterations and --samples.", file=sys.stderr)


def publish(names: Sequence[str], out_dir: Path | str | None = None, anchor: str = "max-damage",
            runs_dir: Path | str = RUNS_DIR, n_bootstrap: int = 200, seed: int = 0, level: float = 0.95,
            analyse: bool = False, workers: int = 2, analysis: Settings = Settings()) -> Path:
    """Merge the runs, compute the results, write the published folder and its site; return its path.

    The runs' decision quality (searched with the settings `analysis`) and luck are published as far as
    ``pokebench analyse`` cached them; `analyse` first analyses what the caches lack (`workers` processes).
    """
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
        if quality.empty:
            _say_where_the_analysis_is(data.run_dirs, data.games["uid"], analysis)
        luck, luck_turns = read_luck(data.run_dirs, data.games)
        results = compute_results(data, anchor=anchor, n_bootstrap=n_bootstrap, seed=seed, level=level,
                                  quality=quality, quality_spread=spread, luck=luck, luck_turns=luck_turns)
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


if __name__ == "__main__":
    from pokebench.cli.publish import main

    print("note: `python -m pokebench.publish` is deprecated; use `pokebench-publish` (the same arguments).",
          file=sys.stderr)
    sys.exit(main())
