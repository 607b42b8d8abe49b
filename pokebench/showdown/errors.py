"""The one error of the server package."""


class ServerError(RuntimeError):
    """The Showdown server cannot be installed, started or reached; the message says how to fix it."""
