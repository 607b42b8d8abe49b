"""The static site of a published folder, and the plots it shares with the notebook."""

from pokebench.site.plots import plot_ratings, plot_h2h, plot_cost, save_svg
from pokebench.site.build import write_site

__all__ = ["plot_ratings", "plot_h2h", "plot_cost", "save_svg", "write_site"]
