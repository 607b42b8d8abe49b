"""How an event reaches its words: a handler per protocol command, found in a table.

A handler is a plain function ``(ctx, cmd, args, kw) -> lines``: it gets one (upgraded) protocol event and
the :class:`Context` (the viewer's :class:`~pokebench.text.names.Wording` and the
:class:`~pokebench.text.state.BattleState` it reads and updates) and returns its raw template lines
(pop-ups marked), which the renderer cleans and indents. Each module of handlers keeps its own table,
filled by :func:`registrar`'s decorator beside each function::

    HANDLERS: dict[str, Handler] = {}
    handles = registrar(HANDLERS)

    @handles("-start")
    def start_effect(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]: ...
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from pokebench.text.names import Wording
from pokebench.text.state import BattleState

__all__ = ["Context", "Handler", "registrar"]


@dataclass(frozen=True)
class Context:
    """What a handler works with: the words of one viewer and the battle state as that viewer knows it."""

    words: Wording
    state: BattleState


Handler = Callable[[Context, str, list[str], dict[str, str]], list[str]]


def registrar(table: dict[str, Handler]) -> Callable[..., Callable[[Handler], Handler]]:
    """A decorator ``@handles("-start", "-end")`` that enters the function below it in `table` for those commands."""

    def handles(*commands: str) -> Callable[[Handler], Handler]:
        def register(handler: Handler) -> Handler:
            for command in commands:
                table[command] = handler
            return handler
        return register

    return handles
