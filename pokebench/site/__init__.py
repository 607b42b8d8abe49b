"""The static site of a published folder (built from that folder only), and the plots it shares with the notebook."""

from pokebench.site.plots import plot_ratings, plot_h2h, plot_cost, save_svg
from pokebench.site.build import build_site, SiteError, VIEWER_URL

__all__ = ["plot_ratings", "plot_h2h", "plot_cost", "save_svg", "build_site", "SiteError", "VIEWER_URL"]
