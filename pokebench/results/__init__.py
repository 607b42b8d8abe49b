"""What a run leaves: its store, the ratings fitted to its games, and the published folder."""

from pokebench.results.store import RunStore, StoreError, run_stores, store_path
from pokebench.results.ratings import RatingsError, fit_ratings, head_to_head, score_matrix
from pokebench.results.publish import PublishError, Results, load_results

__all__ = ["RunStore", "StoreError", "run_stores", "store_path", "RatingsError", "fit_ratings", "head_to_head", "score_matrix", "PublishError", "Results", "load_results"]
