"""What the battle log revealed about each Pokémon that poke-env's battle state leaves out or gets wrong.

The prompt's state is poke-env's battle, corrected by what the player's own log showed
(:class:`pokebench.text.renderer.BattleText` feeds every line it reads to :meth:`Revealed.observe`):

* items an event named that poke-env does not record: the Toxic Orb or Flame Orb that gave a status
  (``|-status|p2a: X|tox|[from] item: Toxic Orb``), the item Poltergeist showed
  (``|-activate|p2a: X|move: Poltergeist|Leftovers``);
* the moves of an opponent's Pokémon that the player's own Transform copied (the request lists them as the
  transformed Pokémon's moves: :meth:`Revealed.transformed_moves`);
* Illusion: when a disguise breaks (``|replace|``), the Pokémon it showed was not the one on the field. The
  disguised-as Pokémon is back to what was seen of it before (unseen, or its own health and moves), and the
  moves used under its name are the wearer's (:class:`Disguise`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pokebench.text.protocol import effect_id, effect_name, key, pad

__all__ = ["Disguise", "Revealed", "Who", "move_id"]

Who = tuple[str, str]  # ('p2', 'Zoroark'): a Pokémon, wherever it is (protocol.key)


def move_id(name: str) -> str:
    """'U-turn' -> 'uturn', as poke-env keys moves."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass
class Disguise:
    """A Pokémon whose name Illusion wore, until it comes in itself: what had been seen of it before."""

    wearer: Who
    seen_before: bool  # it had come in itself before the disguise
    health: str | None  # its last health as seen before ("45/100 par")


@dataclass
class _Before:
    """What was seen of a Pokémon as it came in, should it turn out to be a disguise."""

    who: Who
    seen: bool
    health: str | None
    moves: list[str]  # the moves it had been seen using
    item: str | None


class Revealed:
    """Reads protocol lines (already upgraded, as the renderer reads them) and keeps what they revealed."""

    def __init__(self) -> None:
        self.items: dict[Who, str] = {}  # item names shown by events poke-env does not read
        self.moves_copied: dict[Who, list[str]] = {}  # move ids the player's own Transform copied from it
        self.transformed: dict[Who, Who] = {}  # a Pokémon -> the one it transformed into
        self.disguises: dict[Who, Disguise] = {}  # a disguised-as Pokémon -> its disguise record
        self.worn: dict[Who, list[str]] = {}  # a disguised-as Pokémon -> the moves a wearer used under its name
        self.wearing: dict[Who, list[str]] = {}  # a wearer -> the moves it used in disguise
        self._health: dict[Who, str] = {}
        self._moves: dict[Who, list[str]] = {}  # moves seen used, by the name they were used under
        self._seen: set[Who] = set()
        self._entered: dict[str, _Before] = {}  # position -> what was seen of the Pokémon that came in there

    # ---- reading the log -------------------------------------------------------------------
    def observe(self, cmd: str, args: list[str], kw: dict[str, str]) -> None:
        ident = args[0] if args else ""
        who = key(ident)
        if cmd in ("switch", "drag"):
            self._switch_in(ident, args[2] if len(args) > 2 else "")
        elif cmd == "replace":
            self._disguise_broken(ident)
        elif cmd in ("-damage", "-heal", "-sethp") and len(args) > 1:
            self._health[who] = args[1]
        elif cmd == "faint":
            self._health[who] = "0 fnt"
            self.transformed.pop(who, None)
        elif cmd in ("-status", "-curestatus") and len(args) > 1:
            hp = (self._health.get(who) or "").split(" ")[0]
            self._health[who] = f"{hp} {args[1]}" if cmd == "-status" and hp else hp
            if cmd == "-status" and (kw.get("from") or "").startswith("item:"):  # Toxic Orb, Flame Orb
                self.items[who] = effect_name(kw["from"])
        elif cmd == "-activate" and effect_id(pad(args, 2)[1]) == "poltergeist" and kw.get("item"):
            self.items[who] = kw["item"]
        elif cmd == "-transform" and len(args) > 1:
            self.transformed[who] = key(args[1])
        elif cmd == "move" and len(args) > 1 and "from" not in kw:
            moves = self._moves.setdefault(who, [])
            if move_id(args[1]) not in moves:
                moves.append(move_id(args[1]))

    def _switch_in(self, ident: str, health: str) -> None:
        position, who = ident.split(":")[0], key(ident)
        for other in list(self.transformed):  # the one leaving is no longer transformed
            if other[0] == who[0]:
                del self.transformed[other]
        disguise = self.disguises.pop(who, None)
        moves, item = list(self._moves.get(who, [])), self.items.get(who)
        if disguise is not None:  # an earlier disguise as it: what was seen of it before that
            before = _Before(who, disguise.seen_before, disguise.health, moves, item)
        else:
            before = _Before(who, who in self._seen, self._health.get(who), moves, item)
        self._entered[position] = before
        self._seen.add(who)
        self._health[who] = health

    def _disguise_broken(self, ident: str) -> None:
        """``|replace|``: the Pokémon that came in at this position was `ident` under another name."""
        before = self._entered.get(ident.split(":")[0])
        wearer = key(ident)
        if before is None or before.who == wearer:
            return
        worn = [m for m in self._moves.get(before.who, []) if m not in before.moves]
        self.disguises[before.who] = Disguise(wearer, before.seen, before.health)
        self._moves[before.who] = list(before.moves)
        for moves in (self.worn.setdefault(before.who, []), self.wearing.setdefault(wearer, []),
                      self._moves.setdefault(wearer, [])):
            moves += [m for m in worn if m not in moves]
        if before.seen and before.health is not None:
            self._health[before.who] = before.health
        else:
            self._seen.discard(before.who)
            self._health.pop(before.who, None)
        self._seen.add(wearer)
        if self.items.get(before.who) != before.item:  # an item shown under its name is the wearer's
            self.items[wearer] = self.items.pop(before.who)
            if before.item is not None:
                self.items[before.who] = before.item

    # ---- what the prompt asks ----------------------------------------------------------------
    def transformed_moves(self, who: Who, moves: list[str]) -> None:
        """The player's own `who` lists `moves` (its request): if it is transformed, they are its target's."""
        target = self.transformed.get(who)
        if target is None:
            return
        copied = self.moves_copied.setdefault(target, [])
        copied += [m for m in map(move_id, moves) if m not in copied]

    def hidden(self, who: Who) -> bool:
        """A Pokémon known only from a disguise: it was never seen itself."""
        disguise = self.disguises.get(who)
        return disguise is not None and not disguise.seen_before

    def moves(self, who: Who, known: list[str]) -> list[str]:
        """`known` (poke-env's move ids of `who`) without the moves a disguise used under its name, with the
        moves it used in disguise and those Transform copied from it."""
        worn, own = self.worn.get(who, []), self._moves.get(who, [])
        known = [m for m in known if m not in worn or m in own]
        extra = self.wearing.get(who, []) + self.moves_copied.get(who, [])
        return known + [m for i, m in enumerate(extra) if m not in known and m not in extra[:i]]

    def restored_health(self, who: Who) -> str | None:
        """The health of a Pokémon a disguise wore, as seen of it before ("45/100 par"); None if not disguised."""
        disguise = self.disguises.get(who)
        return disguise.health if disguise is not None and disguise.seen_before else None
