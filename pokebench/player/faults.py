"""The one exception that tells the arena a game failed through no fault of the competitors' play."""


class HarnessFault(Exception):
    """Something outside the game's play broke: a program that exited or went silent, a lost connection.

    The arena voids the game and records it as a harness error (played again on the next round or
    start; never a loss). Raise it (or a subclass) from a seat or an external competitor; a seat turns
    whatever the library under it raises into one (:meth:`pokebench.player.seats.PokeEnvSeat._library`:
    poke-env's assertions, a closed websocket, a time-out). Any other exception is a bug, and is not
    hidden as a harness error.
    """


class RunStopper(Exception):
    """An error that no retry and no replay can fix (a wrong API key, an unknown model, a refused parameter).

    A player that raises it voids its game like any failure, and the run stops at once instead of
    voiding game after game: the message says what to fix.
    """


def fault_text(err: BaseException) -> str:
    """How a harness error's detail names `err`: a :class:`HarnessFault`'s own words, any other exception's type and
    words (a time-out's words are empty: its type alone), never its repr (``HarnessFault('…')`` in a log line)."""
    if isinstance(err, HarnessFault):
        return str(err)
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
