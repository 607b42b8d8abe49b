"""Runs on the test worker's server: what a user with a server already running does.

A test whose run ends normally (it neither kills nor breaks its server, nor asserts on the server the run
starts itself) plays on the worker's server (fixture ``showdown``) with ``server.port=N`` and the server's
token in ``POKEBENCH_ADMIN_TOKEN`` (README.md, the server section), and so starts no server of its own.
"""

from __future__ import annotations

from pokebench.showdown.server import LocalShowdown


def on_server(server: LocalShowdown) -> tuple[list[str], dict[str, str]]:
    """The overrides and the environment that make `python -m pokebench` play on `server`, already running."""
    assert server.address is not None, "the server is not running"
    return [f"server.port={server.address.port}"], {"POKEBENCH_ADMIN_TOKEN": server.admin_token}
