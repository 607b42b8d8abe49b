"""Shared fixtures: one real pinned Showdown server for the test session (helpers are in tests/support/).

Tests in lanes: a test that needs the server set up (``make setup``) is marked ``server``: every test using
the ``showdown`` fixture, marked here, and the modules that start it (or node) themselves, marked in the
module. ``make test-quick`` runs the rest (``-m "not server and not slow"``) on a clone without set-up.
"""

from __future__ import annotations

import pytest

from pokebench.showdown.server import LocalShowdown


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "showdown" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.server)


@pytest.fixture(scope="session")
def showdown(tmp_path_factory: pytest.TempPathFactory):
    """The real pinned server, started by the code, shared by the whole session."""
    with LocalShowdown(sim_processes=2, log_path=tmp_path_factory.mktemp("showdown") / "showdown.log") as server:
        yield server


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
