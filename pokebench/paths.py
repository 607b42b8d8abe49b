"""Where PokéBench's files are: its configs, the Showdown server's sources, and what set-up writes.

In a checkout (the repository, installed editable or not at all) everything is in the
checkout: ``conf/``, ``showdown-server/`` (with its ``node_modules`` and ``generated/``).
Installed from a wheel, the configs and the server's sources ship as package data, and what
must be writable (``node_modules``, generated data) lives under a data folder:
``$POKEBENCH_HOME``, else the user data dir (``~/.local/share/pokebench`` on Linux), filled
by ``pokebench-server install``. Runs and sites are written under the current folder
(``runs/NAME``, ``data/site/NAME``), as Hydra writes its outputs where it is started.

Nothing here touches the disk at import time.
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

__all__ = ["checkout_dir", "conf_dir", "server_sources_dir", "server_dir", "showdown_package_dir",
           "generated_dir", "home_dir", "text_oracle_dir", "RUNS_DIR", "SITES_DIR"]

PACKAGE_ROOT = Path(__file__).resolve().parent
_DATA = PACKAGE_ROOT / "_data"

#: Relative to the current folder, like Hydra's outputs.
RUNS_DIR = Path("runs")
SITES_DIR = Path("data") / "site"


def checkout_dir() -> Path | None:
    """The repository this package runs from, or None when it is installed from a wheel."""
    root = PACKAGE_ROOT.parent
    if (root / "pyproject.toml").is_file() and (root / "showdown-server" / "package.json").is_file():
        return root
    return None


def home_dir() -> Path:
    """The writable data folder of an installation outside a checkout."""
    return Path(os.environ.get("POKEBENCH_HOME") or user_data_dir("pokebench", appauthor=False))


def conf_dir() -> Path:
    """Hydra's config folder: ``conf/`` of the checkout, else the copy shipped in the package."""
    root = checkout_dir()
    return root / "conf" if root else _DATA / "conf"


def server_sources_dir() -> Path:
    """PokéBench's sources of the server: package.json, the lock file, config, plugin and scripts."""
    root = checkout_dir()
    return root / "showdown-server" if root else _DATA / "showdown-server"


def server_dir() -> Path:
    """Where the server is installed with npm (writable): the checkout's ``showdown-server/``, else the home's."""
    root = checkout_dir()
    return root / "showdown-server" if root else home_dir() / "showdown-server"


def showdown_package_dir() -> Path:
    """The installed ``pokemon-showdown`` npm package."""
    return server_dir() / "node_modules" / "pokemon-showdown"


def text_oracle_dir() -> Path:
    """The test-only independent battle-text renderer's npm packages (``showdown-server/oracle``, checkout only)."""
    return server_dir() / "oracle"


def generated_dir() -> Path:
    """Data exported from the pinned server at set-up (text templates, move data, set tables)."""
    return server_dir() / "generated"
