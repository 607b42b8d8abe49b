"""How the battle text names things: Pokémon by side ("the opposing Rotom"), players, teams, stats, HP.

The players are "Player 1" and "Player 2": no Showdown user name reaches the text. A Pokémon is named
plainly on the viewer's side and "the opposing ..." on the other. HP lost is worded as the Showdown
client words it (:func:`damage_percentage`).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal

from pokebench.text.protocol import ALLY, effect_name, key
from pokebench.text.templates import fill, lookup

__all__ = ["Wording", "POPUP", "format_percentage", "damage_percentage", "public_percent"]

POPUP = "\x00"  # marks an ability pop-up line until the output is cleaned


def public_percent(hp: int, max_hp: int) -> int:
    """The HP that Showdown shows the other side (HP Percentage Mod): rounded up, 99 until full."""
    percent = -(-100 * hp // max_hp)
    return 99 if percent == 100 and hp < max_hp else percent


def format_percentage(value: float, decimals: int = 1) -> str:
    """A percentage as the client writes it: whole numbers bare ("50%"), else to `decimals` places ("72.0%").

    Rounded half up from the exact value, as JavaScript's ``toFixed`` rounds.
    """
    value = abs(value)
    if math.floor(value) == value:
        return f"{value:.0f}%"
    step = Decimal(1).scaleb(-decimals)
    return f"{Decimal(value).quantize(step, rounding=ROUND_HALF_UP)}%"


def damage_percentage(old: tuple[int, int], new_hp: int, max_hp: int, fainted: bool = False) -> str:
    """The share of max HP lost from `old` (hp, max) to `new_hp`/`max_hp`, worded as the client words it.

    The client scales the old HP to the new maximum (rounded down, at least 1 unless fainted) and
    writes exact HP (own Pokémon) with one decimal, HP in percent (the other side's) with none.
    """
    old_hp, old_max = (0 if fainted else old[0] or 1), old[1] or max_hp
    old_scaled = (math.floor(max_hp * old_hp / old_max) or 1) if old_hp else 0
    return format_percentage((new_hp - old_scaled) / max_hp * 100, 0 if max_hp == 100 else 1)


class Wording:
    """Names and template filling for one viewer (``view``: whose side is "near").

    It knows the players' Showdown user names only to keep them out of the text (:meth:`scrub`), and
    notes the abilities whose pop-ups it words (``popups``: the renderer clears them at each event).
    """

    def __init__(self, view: str, templates: dict[str, dict[str, str]]):
        self.view = view
        self.t = templates
        self.popups: dict[tuple[str, str], str] = {}  # the abilities shown by the event being worded
        self.usernames: dict[str, str] = {}  # Showdown name -> side
        self._name_patterns: dict[re.Pattern[str], str] = {}

    def add_player(self, side: str, username: str) -> None:
        """A player's Showdown user name, from ``|player|``: the text says "Player N" instead."""
        self.usernames[username] = side
        self._name_patterns[re.compile(r"(?<!\w)" + re.escape(username) + r"(?!\w)")] = side

    def scrub(self, text: str) -> str:
        """Free text ("alice forfeited.") with the Showdown user names replaced by "Player N"."""
        for pattern, side in self._name_patterns.items():
            text = pattern.sub(self.trainer(side), text)
        return text

    def tpl(self, kind: str, *namespaces: str | None) -> str:
        return lookup(self.t, kind, *namespaces)

    fill = staticmethod(fill)

    def near(self, side: str) -> bool:
        return side[:2] in (self.view, ALLY[self.view])

    def pk(self, ident: str | None) -> str:
        side, name = key(ident or "")
        if not side:
            return name
        return self.t["default"]["pokemon" if self.near(side) else "opposingPokemon"].replace("[NICKNAME]", name)

    @staticmethod
    def trainer(side: str) -> str:
        return f"Player {side[1]}" if re.match(r"^p[1-4]", side or "") else "Player ?"

    def team(self, side: str, them: bool = False) -> str:
        return self.t["default"]["team" if self.near(side) != them else "opposingTeam"]

    def stat(self, stat: str) -> str:
        return self.t.get(stat or "stats", {}).get("statName", stat)

    def ability(self, name: str | None, holder: str | None) -> str:
        """The pop-up line "[The opposing Rotom's Levitate]"."""
        if not name:
            return ""
        template = self.t["default"]["abilityActivation"]
        if holder:
            self.popups[key(holder)] = effect_name(name)
        return POPUP + self.fill(template, POKEMON=self.pk(holder), ABILITY=effect_name(name))

    def maybe_ability(self, effect: str | None, holder: str | None) -> str:
        return self.ability(effect_name(effect), holder) if (effect or "").startswith("ability:") else ""

    def popup_from(self, kw: dict[str, str], holder: str) -> str:
        """The pop-up of a [from] ability, held by the [of] Pokémon or else by `holder`."""
        return self.maybe_ability(kw.get("from"), kw.get("of") or holder)

    def say(self, template: str, ident: str | None = None, kw: dict[str, str] | None = None,
            **values: str | None) -> str:
        """Fill a template about the Pokémon `ident`; [SOURCE] is its [of] Pokémon unless given."""
        side = (ident or "")[:2] if re.match(r"^p[1-4]", ident or "") else ""
        base = {"POKEMON": self.pk(ident), "SOURCE": self.pk((kw or {}).get("of")), "TRAINER": self.trainer(side),
                "TEAM": self.team(side) if side else None,
                "PARTY": self.t["default"]["party" if self.near(side) else "opposingParty"] if side else None}
        return self.fill(self.fill(template, **values), **base)
