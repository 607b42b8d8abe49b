"""The players' plug-ins: the modules that register published tables and site pages of their own.

``results/`` and ``site/`` import no player. The first time they need their registries
(:func:`pokebench.results.figures.compute_results`, :func:`pokebench.site.build.build_site`) they import the
modules listed here by name, so what a publish or ``load_results(run_folder)`` gives never depends on what
happened to be imported before.
"""

from __future__ import annotations

import functools
import importlib

__all__ = ["TABLE_PLUGINS", "PAGE_PLUGINS", "load_plugins"]

#: Modules that register extra published tables when imported (:func:`pokebench.results.figures.register_tables`).
TABLE_PLUGINS: tuple[str, ...] = ("pokebench.players.continual.tables",)
#: Modules that register extra site pages when imported (:func:`pokebench.site.build.register_page`).
PAGE_PLUGINS: tuple[str, ...] = ("pokebench.players.continual.page",)


@functools.cache
def load_plugins(modules: tuple[str, ...]) -> None:
    """Import `modules` (each registers what it publishes), once."""
    for name in modules:
        importlib.import_module(name)
