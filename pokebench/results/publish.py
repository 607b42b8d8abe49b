"""Publish runs: ``pokebench-publish RUN [RUN ...]`` (see :mod:`pokebench.results.cli`).

The work is done by five modules, one concept each:

- :mod:`pokebench.results.loading`: every store of the runs, merged into distinct games
  (one uid per game; identical games of several runs count once; partial runs marked);
- :mod:`pokebench.results.figures`: ratings with honest intervals and both ranks,
  head-to-head, mirror-pair splits, per-player figures and settings, extra tables;
- :mod:`pokebench.results.redaction`: no secrets, no spreadsheet formulas;
- :mod:`pokebench.results.writing`: the published folder (the contract of
  :mod:`pokebench.results.schema`, ``meta.json``), then the site from it;
- :mod:`pokebench.results.reading`: :func:`load_results` reads a published folder back.

This module keeps the names callers used before the split.
"""

from __future__ import annotations

import sys

from pokebench.results.cli import main
from pokebench.results.figures import FIGURE_COLUMNS, Results, compute_results, per_player_figures, register_table
from pokebench.results.loading import RUNS_DIR, PublishError, RunData, check_publishable, load_runs, safe_name
from pokebench.results.reading import load_results
from pokebench.results.writing import SITE_DIR, input_log_text, publish

__all__ = ["PublishError", "RunData", "Results", "load_runs", "check_publishable", "compute_results",
           "per_player_figures", "register_table", "publish", "load_results", "main", "safe_name",
           "input_log_text", "RUNS_DIR", "SITE_DIR", "FIGURE_COLUMNS"]

if __name__ == "__main__":
    sys.exit(main())
