"""The pinned Pokémon Showdown server: install, process, address, and the admin connection to its plugin."""

from pokebench.showdown.address import ServerAddress
from pokebench.showdown.server import ServerError, LocalShowdown, RemoteShowdown, pinned_version, check_installation, install
from pokebench.showdown.admin import AdminClient, AdminError

__all__ = ["ServerError", "ServerAddress", "LocalShowdown", "RemoteShowdown", "pinned_version", "check_installation", "install", "AdminClient", "AdminError"]
