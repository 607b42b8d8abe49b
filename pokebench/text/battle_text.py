"""Showdown battle protocol -> the English battle log a player reads ("Granbull used Earthquake!").

The words are the pinned server's own text templates (``dist/data/text/*.js``, exported at set-up by
``showdown-server/scripts/export_text.js``), picked for each protocol line as Showdown's web client picks them.

* ``perspective="p1"``/``"p2"``: the battle as that side saw it: own Pokémon plain ("Go! Granbull!"),
  the other side's "the opposing ...". Of each ``|split|pN`` section of the omniscient log it reads
  the secret line if N is its side (exact HP), else the public line (HP in percent).
* ``perspective=None``: a spectator: public lines only, worded as Showdown's client words them for a
  spectator, from Player 1's side (p1's Pokémon plain, "Go! X!"; p2's "the opposing").

The players are "Player 1" and "Player 2": no Showdown user name reaches the text. HP losses are the
percentage of max HP lost ("lost 30.8% of its health"; "50%" when whole), from the HP before and
after. Lines have no indent, except the effect of an ability, under its pop-up::

    [The opposing Rotom's Levitate]
      It doesn't affect the opposing Rotom...

Left out: Roost's "loses Flying type" (types are not tracked). Events gen 9 singles never has
(Mega Evolution, Z-Moves) get the generic line of an unknown event: "(mega: Charizard, ...)".
CLI: ``python -m pokebench.cli.replay RUN GAME_ID --side p1`` prints a recorded game.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any, Iterable

from pokebench import paths

POPUP = "\x00"  # marks an ability pop-up line until the output is cleaned
OWN, NODEFAULT = "\x01OWN", "\x01NODEFAULT"  # namespaces of tpl() with a special meaning
KWARG = re.compile(r"^\[(\w+)\]\s?(.*)$", re.S)
IDENT = re.compile(r"^(p[1-4])([a-z]?):\s*(.*)$")
PLACEHOLDER = re.compile(r"\[(?:TRAINER|NICKNAME|NUMBER|FULLNAME|POKEMON|TARGET|MOVE|ABILITY|ITEM|SPECIES|TYPE|"
                         r"EFFECT|TEAM|SOURCE|PERCENTAGE|STAT|NAME|PARTY)\]")
ALLY = {"p1": "p3", "p2": "p4", "p3": "p1", "p4": "p2"}

# Lines with no text (protocol, chat, timers, HTML). Any other unknown command that is not an
# event ("-xyz") is skipped too; an unknown event gets a readable generic line.
PROTOCOL_ONLY = frozenset("""request t: gametype player teamsize gen tier rule rated seed title init deinit
    j J join l L leave n N name c c: chat raw html uhtml uhtmlchange inactive inactiveoff timestamp
    clearpoke poke teampreview updatepoke upkeep done sentchoice callback debug error bigerror badge
    notify hidelines unlink -anim -mustrecharge -candynamax -swapsideconditions -ohkogroup""".split())
# Events with one fixed template: cmd -> (template kind, namespace, {placeholder: argument index}).
# The namespace is an argument index, "[from]" (the effect of [from]) or None (default template).
SIMPLE: dict[str, tuple[str, Any, dict[str, int]]] = {
    "turn": ("turn", None, {"NUMBER": 0}), "faint": ("faint", None, {"POKEMON": 0}),
    "-crit": ("crit", None, {"POKEMON": 0}), "-supereffective": ("superEffective", None, {"POKEMON": 0}),
    "-resisted": ("resisted", None, {"POKEMON": 0}), "-terastallize": ("terastallize", None, {"POKEMON": 0, "TYPE": 1}),
    "-prepare": ("prepare", 1, {"POKEMON": 0, "TARGET": 2}), "-hitcount": ("hitCount", None, {"NUMBER": 1}),
    "-cureteam": ("activate", "[from]", {}), "-clearallboost": ("clearAllBoost", "[from]", {}),
    "-nothing": ("activate", "move: Splash", {}), "-center": ("center", None, {}), "-ohko": ("ohko", None, {}),
    "-combine": ("combine", None, {}), "-notarget": ("noTarget", None, {}),
    "-setboost": ("boost", "[from]", {"POKEMON": 0}), "-invertboost": ("invertBoost", "[from]", {"POKEMON": 0}),
    "-copyboost": ("copyBoost", "[from]", {"POKEMON": 0, "TARGET": 1}),
    "-swapboost": ("swapBoost", "[from]", {"POKEMON": 0, "TARGET": 1}),  # kind by [from]: SWAP_BOOSTS
    **{cmd: ("clearBoost", "[from]", {"POKEMON": 0, "SOURCE": 1})
       for cmd in ("-clearboost", "-clearpositiveboost", "-clearnegativeboost")},
}
SWAP_BOOSTS = {"guardswap": "swapDefensiveBoost", "powerswap": "swapOffensiveBoost"}
HANDLERS = {  # cmd -> method of BattleText
    "start": "_start", "win": "_win", "tie": "_win", "switch": "_switch", "drag": "_switch",
    "replace": "_switch", "move": "_move", "cant": "_cant", "detailschange": "_formechange",
    "-formechange": "_formechange", "-transform": "_formechange", "message": "_message", "-message": "_message",
    "-hint": "_message", "-start": "_start_effect", "-end": "_end_effect", "-ability": "_ability",
    "-endability": "_endability", "-item": "_item", "-enditem": "_enditem", "-status": "_status",
    "-curestatus": "_status", "-sethp": "_sethp", "-singleturn": "_singleevent", "-singlemove": "_singleevent",
    "-sidestart": "_side_effect", "-sideend": "_side_effect", "-weather": "_weather", "-fieldstart": "_field",
    "-fieldactivate": "_field", "-fieldend": "_field", "-activate": "_activate", "-damage": "_damage",
    "-heal": "_heal", "-boost": "_boost", "-unboost": "_boost", "-block": "_block", "-fail": "_fail",
    "-immune": "_immune", "-miss": "_miss", **{cmd: "_simple" for cmd in SIMPLE},
}
# A new species -> (the effect that changed it, its template kind), as the client words forme changes.
FORME_EFFECTS = {
    "greninjaash": ("battlebond", "transform"), "mimikyubusted": ("disguise", "transform"),
    "zygardecomplete": ("powerconstruct", "transform"), "darmanitanzen": ("zenmode", "transform"),
    "darmanitan": ("zenmode", "transformEnd"), "darmanitangalarzen": ("zenmode", "transform"),
    "darmanitangalar": ("zenmode", "transformEnd"), "aegislashblade": ("stancechange", "transform"),
    "aegislash": ("stancechange", "transformEnd"), "wishiwashischool": ("schooling", "transform"),
    "wishiwashi": ("schooling", "transformEnd"), "miniormeteor": ("shieldsdown", "transform"),
    "minior": ("shieldsdown", "transformEnd"), "eiscuenoice": ("iceface", "transform"),
    "eiscue": ("iceface", "transformEnd"), "terapagosterastal": ("terashift", "transform"),
}
START_FLAGS = (("upkeep", "upkeep"), ("block", "block"), ("damage", "activate"),
               ("fatigue", "startFromFatigue"), ("already", "alreadyStarted"))  # -start [flag] -> kind
COUNTED_STARTS = {"perish": ("activate", "perishsong"), "stockpile": ("start", "stockpile")}  # "perish3"
THAWING_MOVES = {"flamewheel", "flareblitz", "fusionflare", "sacredfire", "scald", "steameruption"}
WEATHER_MOVES = {"sunnyday", "raindance", "sandstorm", "hail", "snowscape", "chillyreception"}
ALREADY_STARTED = {"brn", "frz", "par", "psn", "slp", "substitute", "shedtail"}
NO_SWITCH_OUT_TEXT = {"batonpass", "zbatonpass", "shedtail", "teleport"}
ITEM_TAKERS = {"thief", "covet", "bestow", "magician", "pickpocket"}
BREAKS_PROTECTION = {"hyperdrill", "hyperspacefury", "hyperspacehole", "phantomforce", "shadowforce", "feint"}


class BattleTextError(RuntimeError):
    """The battle text cannot be made; the message says why and what to do."""


@functools.lru_cache(maxsize=4)
def load_templates(path: Path | None = None) -> dict[str, dict[str, str]]:
    """All text templates by effect id ("default", "leftovers", "stealthrock", ...) and kind.

    The sections of the export are merged as the client merges them (moves, abilities, items,
    then default). The export is written at set-up (:mod:`pokebench.showdown.node`).
    """
    path = Path(path) if path else paths.generated_dir() / "battle-text.json"
    if not path.exists():
        raise BattleTextError(f"The battle text templates are missing ({path}): they are exported from the "
                              "Showdown server at set-up. Run `make setup` (or `pokebench-server install`).")
    data = json.loads(path.read_text(encoding="utf-8"))
    table: dict[str, dict[str, str]] = {}
    for section in ("moves", "abilities", "items", "default"):
        for effect, entry in data["sections"].get(section, {}).items():
            table.setdefault(effect, {}).update(entry)
    return table


def effect_name(effect: str | None) -> str:
    """'move: Stealth Rock' -> 'Stealth Rock'; 'item: Leftovers' -> 'Leftovers'; 'brn' -> 'brn'."""
    match = re.match(r"^[a-z]+:\s*(.*)$", effect or "")
    return (match.group(1) if match else effect or "").strip()


def effect_id(effect: str | None) -> str:
    """'move: Stealth Rock' -> 'stealthrock'."""
    return re.sub(r"[^a-z0-9]+", "", effect_name(effect).lower())


def parse_line(line: str) -> tuple[str, list[str], dict[str, str]] | None:
    """'|-damage|p1a: X|50/100|[from] item: Life Orb' -> ('-damage', ['p1a: X', '50/100'], {'from': ...})."""
    if not line.startswith("|"):
        return None
    cmd, *args = line[1:].split("|")
    kw: dict[str, str] = {}
    while args and (match := KWARG.match(args[-1])):
        kw[match.group(1)] = match.group(2).strip()
        args.pop()
    return cmd, args, kw


def _pad(args: list[str], n: int) -> list[str]:
    return (args + [""] * n)[:n]


def _key(ident: str) -> tuple[str, str]:
    """'p1a: Granbull' -> ('p1', 'Granbull'): a Pokémon, wherever it is."""
    match = IDENT.match(ident or "")
    return (match.group(1), match.group(3).strip()) if match else ("", (ident or "").strip())


def _hp(health: str) -> tuple[int, int | None] | None:
    """'227/302 par' -> (227, 302); '0 fnt' -> (0, None)."""
    token = (health or "").split(" ")[0]
    try:
        hp, _, max_hp = token.partition("/")
        return int(float(hp)), int(float(max_hp)) if max_hp else None
    except ValueError:
        return None


def _public_percent(hp: int, max_hp: int) -> int:
    """The HP that Showdown shows the other side (HP Percentage Mod): rounded up, 99 until full."""
    percent = -(-100 * hp // max_hp)
    return 99 if percent == 100 and hp < max_hp else percent


def format_percentage(value: float) -> str:
    value = round(abs(value), 1)
    return f"{value:.0f}%" if value == int(value) else f"{value:.1f}%"


class BattleText:
    """Incremental renderer: feed it protocol lines as they come; it keeps HP, names and species."""

    def __init__(self, perspective: str | None = "p1", templates: dict[str, dict[str, str]] | None = None):
        if perspective not in ("p1", "p2", None):
            raise ValueError(f"perspective must be 'p1', 'p2' or None (spectator), not {perspective!r}")
        self.perspective = perspective
        self.view = perspective or "p1"  # whose side is "near" in the wording
        self.t = templates if templates is not None else load_templates()
        self.usernames: dict[str, str] = {}  # Showdown name -> side, to keep names out of the text
        self.hp: dict[tuple[str, str], tuple[int, int]] = {}
        self.species: dict[tuple[str, str], str] = {}
        self.active: dict[str, str] = {}  # position ('p1a') -> ident of the Pokémon there
        self.fainted: set[tuple[str, str]] = set()
        self.weather = ""
        self.spread = False
        self.unfilled: list[str] = []  # lines whose template kept a placeholder (a renderer gap)
        self._split: tuple[str, int] | None = None  # (side, lines of the split section seen)
        self._after_popup = False
        self._name_patterns: dict[re.Pattern[str], str] = {}
        prefixes = {self.t["default"][k].split("[")[0] for k in
                    ("pokemon", "opposingPokemon", "team", "opposingTeam", "party", "opposingParty")}
        prefixes = sorted((p for p in prefixes if p[:1].islower()), key=len, reverse=True)
        self._lowercase = re.compile(r"^([(\[]?)(" + "|".join(map(re.escape, prefixes)) + ")") if prefixes else None

    # ---- feeding ------------------------------------------------------------------------------
    def feed(self, lines: Iterable[str]) -> list[str]:
        """The text lines for these protocol lines (raw strings; a string may hold several lines)."""
        out: list[str] = []
        for item in [lines] if isinstance(lines, str) else lines:
            if isinstance(item, (list, tuple)):  # a line already split by poke-env
                item = "|".join(item)
            for line in str(item).split("\n"):
                out.extend(self._line(line.rstrip("\r")))
        return out

    def _line(self, line: str) -> list[str]:
        parsed = parse_line(line)
        if parsed is None:
            return []
        cmd, args, kw = parsed
        if cmd == "split":
            self._split = (args[0] if args else "", 0)
            return []
        if self._split is not None:  # the secret line, then the public line, of one event
            side, seen = self._split
            self._split = None if seen else (side, 1)
            if (self.perspective == side) != (seen == 0):
                return []
        if cmd == "player" and len(args) > 1 and args[1]:
            self.usernames[args[1]] = args[0]
            self._name_patterns[re.compile(r"(?<!\w)" + re.escape(args[1]) + r"(?!\w)")] = args[0]
        method = HANDLERS.get(cmd) or ("" if cmd in PROTOCOL_ONLY or not cmd.startswith("-") else "_unknown")
        if not method:
            return []
        parts = getattr(self, method)(cmd, args, kw)
        return [] if "silent" in kw else self._emit(parts)

    def _emit(self, parts: list[str]) -> list[str]:
        """Clean the lines of one event; indent what follows an ability pop-up (also in the next event)."""
        lines = [part for part in parts if part and part.strip(POPUP + " ")]
        if not lines:
            return []
        indent = self._after_popup and lines[0].startswith("  ")
        self._after_popup = all(line.startswith(POPUP) for line in lines)
        out = []
        for line in lines:
            out.append(("  " if indent and not line.startswith(POPUP) else "") + self._clean(line.lstrip(POPUP)))
            indent = indent or line.startswith(POPUP)
        return out

    def _clean(self, line: str) -> str:
        line = line.replace("**", "").strip()
        if PLACEHOLDER.search(line):  # a template asked for a value the protocol line did not give
            self.unfilled.append(line)
            line = re.sub(r"\s+", " ", PLACEHOLDER.sub("", line)).strip()
        if self._lowercase:
            line = self._lowercase.sub(lambda m: m.group(1) + m.group(2)[0].upper() + m.group(2)[1:], line, count=1)
        return line

    def scrub(self, text: str) -> str:
        """Free text ("alice forfeited.") with the Showdown user names replaced by "Player N"."""
        for pattern, side in self._name_patterns.items():
            text = pattern.sub(self.trainer(side), text)
        return text

    # ---- words --------------------------------------------------------------------------------
    def tpl(self, kind: str, *namespaces: str | None) -> str:
        """The template `kind` of the first effect that has one, else the default one (client rules)."""
        for namespace in namespaces:
            if namespace == OWN:
                return self.t["default"].get(kind + "Own", "")
            if namespace == NODEFAULT:
                return ""
            entry = self.t.get(effect_id(namespace), {}) if namespace else {}
            if kind in entry:
                text = entry[kind]
                return self.t.get(text[1:], {}).get(kind, "") if text.startswith("#") else text
        return self.t["default"].get(kind, "")

    @staticmethod
    def fill(template: str, **values: str | None) -> str:
        for key, value in values.items():
            if value is not None:
                template = template.replace(f"[{key}]", value)
        return template

    def near(self, side: str) -> bool:
        return side[:2] in (self.view, ALLY[self.view])

    def pk(self, ident: str | None) -> str:
        side, name = _key(ident or "")
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

    def _set_hp(self, ident: str, health: str | None) -> float | None:
        """Record the new HP as the viewer saw it; return the % of max HP lost if the old HP was known."""
        key, new = _key(ident), _hp(health or "")
        if new is None:
            return None
        if new[1] and new[1] != 100 and key[0] != self.perspective:  # exact HP the viewer did not see
            new = (_public_percent(*new), 100)
        old = self.hp.get(key)
        max_hp = new[1] or (old[1] if old else 100)
        self.hp[key] = (new[0], max_hp)
        return (old[0] / old[1] - new[0] / max_hp) * 100 if old and old[1] and max_hp else None

    # ---- handlers: (cmd, args, kw) -> raw template lines ----------------------------------------
    def _simple(self, cmd, args, kw):
        kind, namespace, slots = SIMPLE[cmd]
        if cmd in ("-crit", "-supereffective", "-resisted") and self.spread:
            kind += "Spread"
        if cmd == "-hitcount" and args[1:2] == ["1"]:
            kind = "hitCountSingular"
        if cmd == "-swapboost":
            kind = SWAP_BOOSTS.get(effect_id(kw.get("from")), kind)
        if cmd == "faint":
            self.fainted.add(_key(args[0] if args else ""))
        if isinstance(namespace, int):
            namespace = args[namespace] if namespace < len(args) else None
        elif namespace == "[from]":
            namespace = kw.get("from")
        values = {key: self.pk(args[i]) if key in ("POKEMON", "TARGET", "SOURCE") else args[i]
                  for key, i in slots.items() if i < len(args)}
        return [self.popup_from(kw, args[0] if args else ""), self.say(self.tpl(kind, namespace), None, kw, **values)]

    def _start(self, cmd, args, kw):
        return [self.tpl("startBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]

    def _win(self, cmd, args, kw):
        if cmd == "tie" or not args or not args[0]:
            return [self.tpl("tieBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]
        return [self.fill(self.tpl("winBattle"), TRAINER=self.trainer(self.usernames.get(args[0], "")))]

    def _switch(self, cmd, args, kw):
        """switch, drag, and replace (an Illusion ends: the true Pokémon takes the place and HP bar)."""
        ident, details, health = _pad(args, 3)
        position, key = ident.split(":")[0], _key(ident)
        out, previous, own = [], self.active.get(position), OWN if key[0] == self.view else ""
        if cmd == "switch" and previous and _key(previous) not in self.fainted \
                and effect_id(kw.get("from")) not in NO_SWITCH_OUT_TEXT:
            template = self.tpl("switchOut", kw.get("from"), own)
            out.append(self.say(template, previous, NICKNAME=_key(previous)[1]))
        if cmd == "replace" and previous and _key(previous) in self.hp:
            self.hp[key] = self.hp[_key(previous)]
        species = details.split(",")[0].strip() or key[1]
        self.active[position], self.species[key] = ident, species
        self.fainted.discard(key)
        self._set_hp(ident, health)
        if cmd == "replace":
            return []
        template = self.tpl("switchIn", own) if cmd == "switch" else self.tpl("drag")
        return out + [self.say(template, ident, FULLNAME=key[1] if species == key[1] else f"{key[1]} ({species})")]

    def _move(self, cmd, args, kw):
        ident, move = _pad(args, 2)
        self.spread = "spread" in kw
        return [self.popup_from(kw, ident), self.say(self.tpl("move", kw.get("from")), ident, MOVE=move)]

    def _cant(self, cmd, args, kw):
        ident, effect, move = _pad(args, 3)
        template = self.tpl("cant", effect, NODEFAULT) or self.tpl("cant" if move else "cantNoMove")
        return [self.maybe_ability(effect, kw.get("of") or ident), self.say(template, ident, MOVE=move)]

    def _formechange(self, cmd, args, kw):
        ident, arg = _pad(args, 2)
        if cmd == "-transform":
            new_species, effect, kind = self.species.get(_key(arg), _key(arg)[1]), "transform", "transform"
        else:
            new_species = arg.split(",")[0].strip()
            self.species[_key(ident)] = new_species
            effect, kind = FORME_EFFECTS.get(effect_id(new_species), ("", "transform"))
        template = self.tpl(kind, effect, "" if "msg" in kw else NODEFAULT)
        return [self.popup_from(kw, ident), self.say(template, ident, SPECIES=new_species)]

    def _message(self, cmd, args, kw):
        text = self.scrub("|".join(args))
        return [f"({text})" if cmd == "-hint" else text]

    def _start_effect(self, cmd, args, kw):
        ident, effect, arg3 = _pad(args, 3)
        eid, frm = effect_id(effect), kw.get("from")
        first = self.maybe_ability(effect, ident) or self.popup_from(kw, ident)
        values = {"EFFECT": effect_name(effect), "MOVE": arg3, "TYPE": arg3, "ITEM": effect_name(frm)}
        counted = next((prefix for prefix in COUNTED_STARTS if eid.startswith(prefix)), None)
        if eid in ("typechange", "typeadd"):
            template = self.tpl("typeChange" if eid == "typechange" else "typeAdd", frm)
        elif counted:
            template, values["NUMBER"] = self.tpl(*COUNTED_STARTS[counted]), eid[len(counted):]
        elif eid.startswith(("protosynthesis", "quarkdrive")):  # "protosynthesisatk"
            template, values["STAT"] = self.tpl("start", eid[:-3]), self.stat(eid[-3:])
        else:
            kind = next((name for flag, name in START_FLAGS if flag in kw), "start")
            kind = "startFromItem" if kind == "start" and (frm or "").startswith("item:") else kind
            template = self.tpl(kind, frm, effect)
        return [first, self.say(template, ident, kw, **values)]

    def _end_effect(self, cmd, args, kw):
        ident, effect = _pad(args, 2)
        frm = kw.get("from")
        first = self.maybe_ability(effect, ident) or self.popup_from(kw, ident)
        if effect_id(effect) in ("doomdesire", "futuresight"):
            return [first, self.say(self.tpl("activate", effect), None, TARGET=self.pk(ident))]
        template = (frm or "").startswith("item:") and self.tpl("endFromItem", effect) or self.tpl("end", effect)
        return [first, self.say(template, ident, kw, EFFECT=effect_name(effect), ITEM=effect_name(frm))]

    def _ability(self, cmd, args, kw):
        ident, ability, old = _pad(args, 3)
        old = "" if IDENT.match(old) or old == "boost" else old
        lines = [self.ability(old, ident), self.ability(ability, ident)]
        if "fail" in kw:
            return lines + [self.tpl("block", kw.get("from"))]
        if kw.get("from"):
            first = "" if old else self.maybe_ability(kw["from"], ident)
            template = self.tpl("changeAbility", kw["from"])
            return [first] + lines + [self.say(template, ident, kw, ABILITY=effect_name(ability))]
        aid = effect_id(ability)
        if aid == "unnerve":
            return lines + [self.say(self.tpl("start", ability), ident, TEAM=self.team(ident, them=True))]
        kind = "activate" if aid in ("anticipation", "sturdy") else "start"
        return lines + [self.say(self.tpl(kind, ability, NODEFAULT), ident)]

    def _endability(self, cmd, args, kw):
        ident, ability = _pad(args, 2)
        if ability:
            return [self.ability(ability, ident)]
        return [self.popup_from(kw, ident), self.say(self.tpl("start", "Gastro Acid"), ident)]

    def _item(self, cmd, args, kw):
        ident, item = _pad(args, 2)
        frm, of, target = kw.get("from"), kw.get("of"), ""
        fid, name = effect_id(frm), effect_name(item)
        if fid in ("magician", "pickpocket"):
            target, of = of, None
        first = self.maybe_ability(frm, of or ident)
        if fid in ITEM_TAKERS:
            return [first, self.say(self.tpl("takeItem", frm), ident, ITEM=name, SOURCE=self.pk(target or of))]
        if fid == "frisk":
            kind = "activate" if of and ident and of != ident else "activateNoTarget"
            return [first, self.say(self.tpl(kind, "Frisk"), of, ITEM=name, TARGET=self.pk(ident))]
        template = self.tpl("addItem", frm) if frm else self.tpl("start", item, NODEFAULT)
        return [first, self.say(template, ident, ITEM=name)]

    def _enditem(self, cmd, args, kw):
        ident, item = _pad(args, 2)
        frm, fid = kw.get("from"), effect_id(kw.get("from"))
        if "eat" in kw:
            template = self.tpl("eatItem", frm)
        elif fid == "gem":
            template = self.tpl("useGem", item)
        elif fid == "stealeat":
            template = self.tpl("removeItem", "Bug Bite")
        elif frm:
            template = self.tpl("removeItem", frm)
        elif "weaken" in kw:
            template = self.tpl("activateWeaken")
        else:
            template = self.tpl("end", item, NODEFAULT) or self.tpl("activateItem")
        return [self.popup_from(kw, ident), self.say(template, ident, kw, ITEM=effect_name(item), MOVE=kw.get("move"),
                                                     TARGET=self.pk(kw.get("of")))]

    def _status(self, cmd, args, kw):
        """-status and -curestatus."""
        ident, status = _pad(args, 2)
        frm, cure = kw.get("from") or "", cmd == "-curestatus"
        fid = effect_id(frm)
        if cure and fid == "naturalcure":
            return [self.say(self.tpl("activate", frm), ident)]
        if frm.startswith("item:"):
            kind = "endFromItem" if cure else "startFromItem"
        elif fid == "rest" and not cure:
            kind = "startFromRest"
        elif cure and frm.startswith("move:") and fid in THAWING_MOVES:
            kind = "endFromMove"
        else:
            kind = "end" if cure else "start"
        template = self.tpl(kind, status, NODEFAULT) or self.tpl("end" if cure else "start")
        return [self.popup_from(kw, ident), self.say(template, ident, EFFECT=status, ITEM=effect_name(frm),
                                                     MOVE=effect_name(frm))]

    def _sethp(self, cmd, args, kw):
        for ident, health in zip(args[0::2], args[1::2]):
            self._set_hp(ident, health)
        frm = kw.get("from")
        return [self.say(self.tpl("activate", frm), None, EFFECT=effect_name(frm))] if frm else []

    def _singleevent(self, cmd, args, kw):
        ident, effect = _pad(args, 2)
        eid = effect_id(effect)
        if eid == "roost":  # "loses Flying type": true only of a Flying type, and types are not tracked
            return []
        first = self.maybe_ability(effect, kw.get("of") or ident) or self.popup_from(kw, ident)
        if eid == "instruct":
            return [first, self.say(self.tpl("activate", effect), kw.get("of"), TARGET=self.pk(ident))]
        template = self.tpl("start", effect, NODEFAULT) or self.tpl("start")
        return [first, self.say(template, ident, kw, EFFECT=effect_name(effect))]

    def _side_effect(self, cmd, args, kw):
        side, effect = _pad(args, 2)  # side: "p2: <user name>"
        kind = "start" if cmd == "-sidestart" else "end"
        template = self.tpl(kind, effect, NODEFAULT) or self.tpl(kind + "TeamEffect")
        return [self.say(template, side[:2], EFFECT=effect_name(effect))]

    def _weather(self, cmd, args, kw):
        weather = args[0] if args else ""
        if not weather or weather == "none":
            previous, self.weather = self.weather, ""
            return [self.tpl("end", previous, NODEFAULT) or self.fill(self.tpl("endFieldEffect"), EFFECT=previous)]
        self.weather = weather
        if "upkeep" in kw:
            return [self.tpl("upkeep", weather, NODEFAULT)]
        template = self.tpl("start", weather, NODEFAULT) or self.fill(self.tpl("startFieldEffect"), EFFECT=weather)
        return [self.maybe_ability(kw.get("from"), kw.get("of")), template]

    def _field(self, cmd, args, kw):
        effect, frm, of = (args[0] if args else ""), kw.get("from"), kw.get("of")
        if effect_id(frm) == "hadronengine":
            return [self.maybe_ability(frm, of), self.say(self.tpl("start", "hadronengine"), of)]
        kind = "start" if effect_id(effect) == "perishsong" else cmd[len("-field"):]
        generic = "endFieldEffect" if kind == "end" else "startFieldEffect"
        template = self.tpl(kind, effect, NODEFAULT) or self.tpl(generic)
        return [self.maybe_ability(frm, of), self.say(template, of, EFFECT=effect_name(effect))]

    def _activate(self, cmd, args, kw):
        ident, effect, target, extra2 = _pad(args, 4)
        eid, of, extra = effect_id(effect), kw.get("of"), ""
        if target and not IDENT.match(target):  # a move, item or number as a plain argument
            target, extra = "", target
        if not target and eid in BREAKS_PROTECTION:
            ident, target = of or ident, ident
        target = target or of or ident
        lines = [self.maybe_ability(effect, ident)]
        if eid in ("lockon", "mindreader"):
            return lines + [self.say(self.tpl("start", effect), of, SOURCE=self.pk(ident))]
        if eid in ("mummy", "lingeringaroma") and kw.get("ability"):
            lines += [self.ability(kw["ability"], target), self.ability(effect_name(effect), target)]
            return lines + [self.say(self.tpl("changeAbility", eid), ident, TARGET=self.pk(target))]
        kind = "activate"
        if eid == "forewarn" and ident == target:
            kind = "activateNoTarget"
        elif eid in ("protosynthesis", "quarkdrive") and "fromitem" in kw:
            kind = "activateFromItem"
        elif eid == "orichalcumpulse" and "source" in kw:
            kind = "start"
        template = self.tpl(kind, effect, NODEFAULT) or self.tpl("block", effect, NODEFAULT)  # e.g. Protect
        if not template:
            return lines if any(lines) else [self.fill(self.tpl("activate"), EFFECT=effect_name(effect))]
        lines += [self.ability(kw.get("ability"), ident), self.ability(kw.get("ability2"), target)]
        return lines + [self.say(template, ident, kw, TARGET=self.pk(target), NAME=kw.get("name"),
                                 TEAM=self.team(target) if eid == "brickbreak" else None,
                                 MOVE=kw.get("move") or extra, ITEM=kw.get("item") or extra,
                                 NUMBER=kw.get("number") or extra2 or extra)]

    def _damage(self, cmd, args, kw):
        ident, health = _pad(args, 2)
        lost, frm = self._set_hp(ident, health), kw.get("from") or ""
        template = self.tpl("damage", frm, NODEFAULT)
        if not template and not frm:
            template = self.tpl("damage" if lost is None else "damagePercentage")
        elif not template and frm.startswith("item:"):
            template = self.tpl("damageFromPokemon" if kw.get("of") else "damageFromItem")
        elif not template and ("partiallytrapped" in kw or effect_id(frm) in ("bind", "wrap")):
            template = self.tpl("damageFromPartialTrapping")
        return [self.popup_from(kw, ident), self.say(template or self.tpl("damage"), ident, kw, ITEM=effect_name(frm),
                                                     MOVE=effect_name(frm),
                                                     PERCENTAGE=None if lost is None else format_percentage(lost))]

    def _heal(self, cmd, args, kw):
        ident, health = _pad(args, 2)
        self._set_hp(ident, health)
        frm = kw.get("from") or ""
        template = self.tpl("heal", frm, NODEFAULT) or self.tpl(
            "healFromEffect" if frm and not frm.startswith("ability:") else "heal")
        return [self.popup_from(kw, ident),
                self.say(template, ident, kw, NICKNAME=kw.get("wisher"), EFFECT=effect_name(frm))]

    def _boost(self, cmd, args, kw):
        ident, stat, amount = _pad(args, 3)
        frm = kw.get("from") or ""
        n = int(amount) if amount.lstrip("-").isdigit() else 1
        kind = cmd[1:] + ("3" if n >= 3 else "2" if n == 2 else "0" if n == 0 else "")
        kind += "FromItem" if n and frm.startswith("item:") else ""
        return [self.popup_from(kw, ident),
                self.say(self.tpl(kind, frm), ident, STAT=self.stat(stat), ITEM=effect_name(frm))]

    def _block(self, cmd, args, kw):
        ident, effect, move, attacker = _pad(args, 4)
        return [self.maybe_ability(effect, kw.get("of") or ident),
                self.say(self.tpl("block", effect), ident, SOURCE=self.pk(attacker or kw.get("of")), MOVE=move)]

    def _fail(self, cmd, args, kw):
        ident, effect, stat = _pad(args, 3)
        eid, frm = effect_id(effect), kw.get("from")
        kind = "block"
        if effect_id(frm) in ("desolateland", "primordialsea") and eid not in WEATHER_MOVES:
            kind = "blockMove"
        elif effect_id(frm) == "uproar" and "msg" in kw:
            kind = "blockSelf"
        template = self.tpl(kind, frm)
        if not template and eid == "unboost":
            template = self.tpl("failSingular" if stat else "fail", "unboost")
        elif not template:
            kind = "alreadyStarted" if eid in ALREADY_STARTED else "fail"
            kind = "failTooHeavy" if "heavy" in kw else "failWrongForme" if "forme" in kw else kind
            template = self.tpl(kind, effect)
        return [self.popup_from(kw, ident), self.say(template, ident, STAT=stat)]

    def _immune(self, cmd, args, kw):
        ident, frm = (args[0] if args else ""), kw.get("from")
        kind = ("immuneOHKO" if "ohko" in kw else "immune") if ident else "immuneNoPokemon"
        template = self.tpl("block", frm) or self.tpl(kind, frm)
        return [self.popup_from(kw, ident), self.say(template, ident)]

    def _miss(self, cmd, args, kw):
        source, target = _pad(args, 2)
        template = self.tpl("miss" if target else "missNoPokemon")
        return [self.popup_from(kw, target), self.say(template, target or None, SOURCE=self.pk(source))]

    def _unknown(self, cmd, args, kw):
        """An event this renderer does not know: a readable line, never a crash."""
        words = [self.pk(arg) if IDENT.match(arg) else effect_name(arg)
                 for arg in args + [kw.get("from", ""), kw.get("of", "")] if arg]
        return [self.scrub(f"({cmd.lstrip('-')}{': ' + ', '.join(words) if words else ''})")]


def render_battle(lines: Iterable[str], perspective: str | None = "p1") -> list[str]:
    """All text lines of a battle, in order, as `perspective` saw it ('p1', 'p2'; None = spectator)."""
    return BattleText(perspective).feed(lines)
