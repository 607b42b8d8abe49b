"""Shared fixtures: one real pinned Showdown server for the test session (helpers are in tests/support/)."""

from __future__ import annotations

import pytest

from pokebench.showdown.server import LocalShowdown


@pytest.fixture(scope="session")
def showdown(tmp_path_factory: pytest.TempPathFactory):
    """The real pinned server, started by the code, shared by the whole session."""
    with LocalShowdown(sim_processes=2, log_path=tmp_path_factory.mktemp("showdown") / "showdown.log") as server:
        yield server
