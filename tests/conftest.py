"""Shared fixtures: one real pinned Showdown server for the test session (helpers are in tests/support/).

Tests in lanes: a test that needs the server set up (``make setup``) is marked ``server``: every test using
the ``showdown`` fixture, marked here, and the modules that start it (or node) themselves, marked in the
module. ``make test-quick`` runs the rest (``-m "not server and not slow"``) on a clone without set-up.

In parallel (``make test``: pytest-xdist, a worker per core and one more, ``--dist loadgroup``) every worker is a session
of its own: it starts its own ``showdown`` server (on a free port; a port taken meanwhile by another worker
makes the server start again on another), and every test writes under its own ``tmp_path``. Two rules keep
the expensive things done once and the workers busy to the end:

- the tests that use a module-scoped fixture of their own module (a real run, a played corpus, a built site)
  are one unit of work (an ``xdist_group`` named after the module), so that fixture is made on one worker,
  once (a module marked ``per_worker``, whose module fixture is cheap, e.g. a server, is spread instead: each
  worker makes its own);
- the tests marked ``slow`` are handed out first, so that no long test starts last while the other worker
  idles.

What is expensive is done once where a test does not need its own: a run that ends normally plays on the
worker's server (``support/existing_server.py``), and a test that only reads a played run reads
``stored_run``, played once for all the workers (``support/stored_run.py``).
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import Iterator

import pytest

from pokebench.showdown.server import LocalShowdown

from support import stored_run as stored


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the xdist_group marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "showdown" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.server)
        if _uses_a_module_fixture(item) and item.get_closest_marker("per_worker") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: slow ones first, in order


def pytest_configure(config: pytest.Config) -> None:
    """Refuse ``--dist loadgroup`` where it does not group: with pytest 9.2, pytest-xdist 3.8's groups are
    lost (it marks a group in the test's id, which pytest 9.2 no longer lets it change: pytest-xdist issue
    1386), and every worker would make the module fixtures again, silently."""
    if config.getoption("dist", "no") != "loadgroup":
        return
    pytest_version = tuple(int(part) for part in pytest.__version__.split(".")[:2] if part.isdigit())
    xdist_version = tuple(int(part) for part in importlib.metadata.version("pytest-xdist").split(".")[:2])
    if pytest_version >= (9, 2) and xdist_version <= (3, 8):
        raise pytest.UsageError(f"pytest {pytest.__version__} with pytest-xdist {'.'.join(map(str, xdist_version))}: "
                                "--dist loadgroup does not group; `make setup` installs the pytest that "
                                "pyproject.toml's test extra pins (below 9.2)")


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    """Whether `item` uses a module-scoped fixture defined in its own module (made once per module)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = item.nodeid.split("::", 1)[0]
    return any(defs[-1].scope == "module" and defs[-1].baseid == module for defs in info.name2fixturedefs.values())


@pytest.fixture(scope="session")
def showdown(tmp_path_factory: pytest.TempPathFactory):
    """The real pinned server, started by the code, shared by the whole session."""
    with LocalShowdown(sim_processes=2, log_path=tmp_path_factory.mktemp("showdown") / "showdown.log") as server:
        yield server


@pytest.fixture(scope="session")
def stored_run(showdown: LocalShowdown, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The runs/ folder of one real bots-smoke run (6 games), played once for all the workers (support/stored_run.py).

    Read-only: a test that writes into a run folder takes ``support.stored_run.copy_of(stored_run, tmp_path)``."""
    base = tmp_path_factory.getbasetemp()
    runs = stored.play_once(base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base, showdown)
    yield runs
    assert stored.unchanged(runs), f"a test wrote into the shared stored run {runs}: give it a copy (copy_of)"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say at the end, in one place, when the site's browser tests were skipped and how to run them."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "test_site_browser" in r.nodeid]
    if not skipped:
        return
    reason = skipped[0].longrepr[2] if isinstance(skipped[0].longrepr, tuple) else str(skipped[0].longrepr)
    terminalreporter.write_sep("-", "browser tests skipped")
    terminalreporter.write_line(f"{len(skipped)} browser test(s) of the site (tests/test_site_browser.py) did not run: "
                                f"{reason.removeprefix('Skipped: ')}. `.ci/run` installs Chromium where it can "
                                "(root with apt-get) and runs them.")
