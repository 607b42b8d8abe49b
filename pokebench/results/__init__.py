"""What a run leaves: its store, the ratings fitted to its games, and the published folder (its contract in
:mod:`pokebench.results.schema`)."""

from pokebench.results.store import RunStore, StoreError, run_stores, store_path
from pokebench.results.ratings import RatingsError, fit_ratings, head_to_head, score_matrix, uncertainty_rank
from pokebench.results.schema import SCHEMA_VERSION
from pokebench.results.loading import PublishError, RunData, load_runs
from pokebench.results.figures import Results, compute_results, register_table, register_tables
from pokebench.results.reading import ResultsVersionError, load_results


__all__ = ["RunStore", "StoreError", "run_stores", "store_path", "RatingsError", "fit_ratings", "head_to_head",
           "score_matrix", "uncertainty_rank", "SCHEMA_VERSION", "PublishError", "RunData", "load_runs", "Results",
           "compute_results", "register_table", "register_tables", "ResultsVersionError", "load_results"]
