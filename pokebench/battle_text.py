"""Showdown battle protocol -> the English battle log a player reads ("Granbull used Earthquake!").

The words are Showdown's own: the text templates of the pinned server (``dist/data/text/*.js``),
exported at set-up by ``showdown-server/export_text.js`` to ``showdown-server/generated/
battle-text.json``. This module picks the template for each protocol line the way Showdown's web
client does (its ``battle-text-parser``) and fills it in:

* ``perspective="p1"`` or ``"p2"``: the battle as that side saw it. Its own Pokémon are named
  plainly ("Granbull", "Go! Granbull!"), the other side's with "the opposing"; of every
  ``|split|pN`` section of Showdown's omniscient log it reads the secret line when N is its own
  side (exact HP) and the public line otherwise (HP in percent).
* ``perspective=None``: a spectator. It reads only the public lines, and it is worded as Showdown's
  client words it for a spectator, from Player 1's side of the field: p1's Pokémon plain, p2's
  "the opposing", "Go! X!" for p1's switch-ins.

The players are always "Player 1" and "Player 2": Showdown user names never reach the text.
HP changes are shown as the percentage of max HP lost ("lost 30.8% of its health", one decimal,
"50%" when whole), computed from each Pokémon's HP before and after. The lines have no indent,
except the effect of an ability, which is indented by two spaces under its pop-up line::

    [The opposing Rotom's Levitate]
      It doesn't affect the opposing Rotom...

Known gaps: Roost's "loses Flying type" note is left out (it would need the Pokémon's types), and
mechanics that gen 9 singles never shows (Mega Evolution, Z-Moves, doubles) get the generic
readable line of an unknown event, e.g. "(mega: the opposing Charizard, Charizardite X)".

CLI: ``python -m pokebench.battle_text RUN GAME_ID --side p1`` prints a recorded game.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Iterable

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_TEMPLATES = ROOT / "showdown-server" / "generated" / "battle-text.json"
EXPORT_SCRIPT = ROOT / "showdown-server" / "export_text.js"

POPUP = "\x00"  # marks an ability pop-up line until the output is cleaned
OWN, NODEFAULT = "\x01OWN", "\x01NODEFAULT"  # template() namespaces with a special meaning
KWARG = re.compile(r"^\[(\w+)\]\s?(.*)$", re.S)
IDENT = re.compile(r"^(p[1-4])([a-z]?):\s*(.*)$")
PLACEHOLDER = re.compile(r"\[(?:TRAINER|NICKNAME|NUMBER|FULLNAME|POKEMON|TARGET|MOVE|ABILITY|ITEM|SPECIES|TYPE|"
                         r"EFFECT|TEAM|SOURCE|PERCENTAGE|STAT|NAME|PARTY)\]")
ALLY = {"p1": "p3", "p2": "p4", "p3": "p1", "p4": "p2"}

# Lines with no text of their own (pure protocol, chat, timers, HTML); any other unknown command
# that is not an event ("-xyz") is skipped too.
PROTOCOL_ONLY = frozenset("""request t: gametype player teamsize gen tier rule rated seed title init
    deinit j J join l L leave n N name c c: chat raw html uhtml uhtmlchange inactive inactiveoff
    timestamp clearpoke poke teampreview updatepoke upkeep done sentchoice callback debug error
    bigerror badge notify hidelines unlink -anim -mustrecharge -candynamax -swapsideconditions
    -clearpoke -ohkogroup -zeffect""".split())
# A new species -> (the effect that changed it, its template), as the client words forme changes.
FORME_EFFECTS = {
    "greninjaash": ("battlebond", "transform"), "mimikyubusted": ("disguise", "transform"),
    "zygardecomplete": ("powerconstruct", "transform"), "necrozmaultra": ("ultranecroziumz", "transform"),
    "darmanitanzen": ("zenmode", "transform"), "darmanitan": ("zenmode", "transformEnd"),
    "darmanitangalarzen": ("zenmode", "transform"), "darmanitangalar": ("zenmode", "transformEnd"),
    "aegislashblade": ("stancechange", "transform"), "aegislash": ("stancechange", "transformEnd"),
    "wishiwashischool": ("schooling", "transform"), "wishiwashi": ("schooling", "transformEnd"),
    "miniormeteor": ("shieldsdown", "transform"), "minior": ("shieldsdown", "transformEnd"),
    "eiscuenoice": ("iceface", "transform"), "eiscue": ("iceface", "transformEnd"),
    "terapagosterastal": ("terashift", "transform"),
}
THAWING_MOVES = {"flamewheel", "flareblitz", "fusionflare", "sacredfire", "scald", "steameruption"}
WEATHER_MOVES = {"sunnyday", "raindance", "sandstorm", "hail", "snowscape", "chillyreception"}
ALREADY_STARTED = {"brn", "frz", "par", "psn", "slp", "substitute", "shedtail"}
NO_SWITCH_OUT_TEXT = {"batonpass", "zbatonpass", "shedtail", "teleport"}
NO_ARGUMENT_EVENTS = {"-center": "center", "-ohko": "ohko", "-combine": "combine", "-notarget": "noTarget"}
EFFECTIVENESS = {"-crit": "crit", "-supereffective": "superEffective", "-resisted": "resisted"}


class BattleTextError(RuntimeError):
    """The battle text cannot be made; the message says why and what to do."""


@functools.lru_cache(maxsize=4)
def load_templates(path: Path | None = None) -> dict[str, dict[str, str]]:
    """All text templates by effect id ("default", "leftovers", "stealthrock", ...) and key.

    The sections of the export (moves, abilities, items, default) are merged in that order, as
    the client merges them. A missing export is made by running the export script with node.
    """
    path = Path(path) if path else DEFAULT_TEMPLATES
    if not path.exists():
        _export_templates(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    table: dict[str, dict[str, str]] = {}
    for section in ("moves", "abilities", "items", "default"):
        for effect_id, entry in data["sections"].get(section, {}).items():
            table.setdefault(effect_id, {}).update(entry)
    return table


def _export_templates(path: Path) -> None:
    try:
        done = subprocess.run(["node", str(EXPORT_SCRIPT), str(path)], capture_output=True, text=True, timeout=120)
        problem = "" if done.returncode == 0 and path.exists() else (done.stderr or done.stdout).strip()
    except (OSError, subprocess.SubprocessError) as err:
        problem = repr(err)
    if problem:
        raise BattleTextError(f"The battle text templates are missing ({path}) and could not be exported "
                              f"from the Showdown server: {problem}\nRun `make setup` first.")


def to_id(text: str | None) -> str:
    return re.sub(r"[^a-z0-9]+", "", (text or "").lower())


def effect_name(effect: str | None) -> str:
    """'move: Stealth Rock' -> 'Stealth Rock'; 'item: Leftovers' -> 'Leftovers'; 'brn' -> 'brn'."""
    match = re.match(r"^[a-z]+:\s*(.*)$", effect or "")
    return (match.group(1) if match else effect or "").strip()


def effect_id(effect: str | None) -> str:
    return to_id(effect_name(effect))


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


def _side_and_name(ident: str) -> tuple[str, str]:
    match = IDENT.match(ident or "")
    return (match.group(1), match.group(3).strip()) if match else ("", (ident or "").strip())


def _hp(health: str) -> tuple[int, int | None] | None:
    """'227/302 par' -> (227, 302); '0 fnt' -> (0, None)."""
    token = (health or "").split(" ")[0]
    try:
        if "/" in token:
            hp, max_hp = token.split("/")
            return int(float(hp)), int(float(max_hp))
        return int(float(token)), None
    except ValueError:
        return None


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
        self.usernames: dict[str, str] = {}
        self.hp: dict[tuple[str, str], tuple[int, int]] = {}
        self.species: dict[tuple[str, str], str] = {}
        self.active: dict[str, str] = {}  # position ('p1a') -> ident of the Pokémon there
        self.fainted: set[tuple[str, str]] = set()
        self.weather = ""
        self.spread = False
        self._split: list[Any] | None = None  # [side, lines of the section seen so far]
        self._after_popup = False
        self._username_patterns: dict[re.Pattern[str], str] = {}
        self.unfilled: list[str] = []  # lines whose template kept a placeholder (a renderer gap)
        prefixes = [self.t["default"][k].split("[")[0] for k in
                    ("pokemon", "opposingPokemon", "team", "opposingTeam", "party", "opposingParty")]
        prefixes = sorted({p for p in prefixes if p[:1].islower()}, key=len, reverse=True)
        self._lowercase = re.compile(r"^([(\[]?)(" + "|".join(map(re.escape, prefixes)) + ")") if prefixes else None
        self.handlers: dict[str, Callable[[str, list[str], dict[str, str]], list[str]]] = {
            "start": self._start, "turn": self._turn, "win": self._win, "tie": self._win,
            "switch": self._switch, "drag": self._switch, "replace": self._replace, "faint": self._faint,
            "move": self._move, "cant": self._cant, "detailschange": self._formechange,
            "-formechange": self._formechange, "-transform": self._formechange, "message": self._message,
            "-message": self._message, "-hint": self._message, "-start": self._start_effect, "-end": self._end_effect,
            "-ability": self._ability, "-endability": self._endability, "-item": self._item, "-enditem": self._enditem,
            "-status": self._status, "-curestatus": self._curestatus, "-cureteam": self._from_activate,
            "-sethp": self._sethp, "-singleturn": self._singleevent, "-singlemove": self._singleevent,
            "-sidestart": self._side_effect, "-sideend": self._side_effect, "-weather": self._weather,
            "-fieldstart": self._field, "-fieldactivate": self._field, "-fieldend": self._field,
            "-activate": self._activate, "-prepare": self._prepare, "-damage": self._damage, "-heal": self._heal,
            "-boost": self._boost, "-unboost": self._boost, "-setboost": self._with_from,
            "-swapboost": self._with_from, "-copyboost": self._with_from, "-invertboost": self._with_from,
            "-clearboost": self._with_from, "-clearpositiveboost": self._with_from,
            "-clearnegativeboost": self._with_from, "-clearallboost": self._from_activate, "-block": self._block,
            "-fail": self._fail, "-immune": self._immune, "-miss": self._miss, "-terastallize": self._terastallize,
            "-hitcount": self._hitcount, "-nothing": self._nothing,
            **{cmd: self._effectiveness for cmd in EFFECTIVENESS},
            **{cmd: self._no_argument for cmd in NO_ARGUMENT_EVENTS},
        }

    # ---- feeding ------------------------------------------------------------------------------
    def feed(self, lines: Iterable[str]) -> list[str]:
        """The text lines for these protocol lines (raw strings; a string may hold several lines)."""
        out: list[str] = []
        for item in lines:
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
            self._split = [args[0] if args else "", 0]
            return []
        if self._split is not None:  # the secret line, then the public line, of one event
            side, seen = self._split
            self._split = None if seen else [side, 1]
            if (self.perspective == side) != (seen == 0):
                return []
        if cmd == "player" and len(args) > 1 and args[1]:
            self.usernames[args[1]] = args[0]
            self._username_patterns[re.compile(r"(?<!\w)" + re.escape(args[1]) + r"(?!\w)")] = args[0]
        handler = self.handlers.get(cmd)
        if handler is None:
            if cmd in PROTOCOL_ONLY or not cmd.startswith("-"):
                return []
            handler = self._unknown
        parts = handler(cmd, args, kw)
        return [] if "silent" in kw else self._emit(parts)

    def _emit(self, parts: list[str]) -> list[str]:
        lines = [part for part in parts if part and part.strip(POPUP + " ")]
        if not lines:
            return []
        indent = self._after_popup and lines[0].startswith("  ")
        self._after_popup = all(line.startswith(POPUP) for line in lines)
        out = []
        for line in lines:
            if line.startswith(POPUP):
                out.append(self._clean(line[1:]))
                indent = True
            else:
                out.append(("  " if indent else "") + self._clean(line))
        return out

    def _clean(self, line: str) -> str:
        line = line.replace("**", "").strip()
        if PLACEHOLDER.search(line):  # a template asked for a value the protocol line did not give
            self.unfilled.append(line)
            line = re.sub(r"\s+", " ", PLACEHOLDER.sub("", line)).strip()
        if self._lowercase:
            line = self._lowercase.sub(lambda m: m.group(1) + m.group(2)[0].upper() + m.group(2)[1:], line, count=1)
        for pattern, side in self._username_patterns.items():
            line = pattern.sub(self.trainer(side), line)
        return line

    # ---- words --------------------------------------------------------------------------------
    def tpl(self, kind: str, *namespaces: str | None) -> str:
        """The template `kind` of the first effect that has one, else the default one (client rules)."""
        for namespace in namespaces:
            if not namespace:
                continue
            if namespace == OWN:
                return self.t["default"].get(kind + "Own", "")
            if namespace == NODEFAULT:
                return ""
            entry = self.t.get(effect_id(namespace), {})
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
        return side in (self.view, ALLY[self.view])

    def pk(self, ident: str | None) -> str:
        if not ident:
            return ""
        side, name = _side_and_name(ident)
        if not side:
            return name
        return self.t["default"]["pokemon" if self.near(side) else "opposingPokemon"].replace("[NICKNAME]", name)

    @staticmethod
    def trainer(side: str) -> str:
        return f"Player {side[1]}" if re.match(r"^p[1-4]", side or "") else "Player ?"

    def team(self, side: str, them: bool = False) -> str:
        return self.t["default"]["team" if self.near(side[:2]) != them else "opposingTeam"]

    def party(self, side: str) -> str:
        return self.t["default"]["party" if self.near(side[:2]) else "opposingParty"]

    def own(self, side: str) -> str:
        return OWN if side[:2] == self.view else ""

    def stat(self, stat: str) -> str:
        return self.t.get(stat or "stats", {}).get("statName", stat)

    def ability(self, name: str | None, holder: str | None) -> str:
        if not name:
            return ""
        return POPUP + self.fill(self.t["default"]["abilityActivation"], POKEMON=self.pk(holder), ABILITY=effect_name(name))

    def maybe_ability(self, effect: str | None, holder: str | None) -> str:
        return self.ability(effect_name(effect), holder) if (effect or "").startswith("ability:") else ""

    def say(self, template: str, ident: str | None = None, kw: dict[str, str] | None = None, **values: str | None) -> str:
        """Fill a template about the Pokémon `ident`; [SOURCE] is its `[of]` Pokémon unless given."""
        kw = kw or {}
        side = _side_and_name(ident or "")[0]
        base = {"POKEMON": self.pk(ident), "SOURCE": self.pk(kw.get("of")), "TRAINER": self.trainer(side),
                "TEAM": self.team(side) if side else "", "PARTY": self.party(side) if side else ""}
        return self.fill(self.fill(template, **values), **base)

    # ---- state --------------------------------------------------------------------------------
    def _set_hp(self, ident: str, health: str | None) -> float | None:
        """Record the new HP; the percentage of max HP lost (negative: gained), if the old HP was known."""
        key, new = _side_and_name(ident), _hp(health or "")
        if new is None:
            return None
        old = self.hp.get(key)
        max_hp = new[1] or (old[1] if old else 100)
        self.hp[key] = (new[0], max_hp)
        if not old or not old[1] or not max_hp:
            return None
        return (old[0] / old[1] - new[0] / max_hp) * 100

    # ---- handlers: each returns raw template lines -------------------------------------------
    def _start(self, cmd, args, kw):
        return [self.tpl("startBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]

    def _turn(self, cmd, args, kw):
        return [self.fill(self.tpl("turn"), NUMBER=args[0] if args else "?")]

    def _win(self, cmd, args, kw):
        name = args[0] if args else ""
        if cmd == "tie" or not name:
            return [self.tpl("tieBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]
        return [self.fill(self.tpl("winBattle"), TRAINER=self.trainer(self.usernames.get(name, "")))]

    def _switch(self, cmd, args, kw):
        ident, details = (args + ["", ""])[:2]
        position, key = ident.split(":")[0], _side_and_name(ident)
        side, out = key[0], []
        previous = self.active.get(position)
        if cmd == "switch" and previous and _side_and_name(previous) not in self.fainted \
                and effect_id(kw.get("from")) not in NO_SWITCH_OUT_TEXT:
            template = self.tpl("switchOut", kw.get("from"), self.own(side))
            out.append(self.say(template, previous, NICKNAME=_side_and_name(previous)[1]))
        species = details.split(",")[0].strip() or key[1]
        self.active[position], self.species[key] = ident, species
        self.fainted.discard(key)
        if len(args) > 2:
            self._set_hp(ident, args[2])
        full = key[1] if species == key[1] else f"{key[1]} ({species})"
        template = self.tpl("switchIn", self.own(side)) if cmd == "switch" else self.tpl("drag")
        return out + [self.say(template, ident, FULLNAME=full)]

    def _replace(self, cmd, args, kw):  # Illusion ends: the true Pokémon takes the place and HP bar
        ident, details = (args + ["", ""])[:2]
        position, key = ident.split(":")[0], _side_and_name(ident)
        previous = self.active.get(position)
        if previous and _side_and_name(previous) in self.hp:
            self.hp[key] = self.hp[_side_and_name(previous)]
        self.active[position], self.species[key] = ident, details.split(",")[0].strip() or key[1]
        return []

    def _faint(self, cmd, args, kw):
        self.fainted.add(_side_and_name(args[0]))
        return [self.say(self.tpl("faint"), args[0])]

    def _move(self, cmd, args, kw):
        ident, move = (args + ["", ""])[:2]
        self.spread = "spread" in kw
        first = self.maybe_ability(kw.get("from"), kw.get("of") or ident)
        if "zeffect" in kw:
            first = self.say(self.tpl("zEffect"), ident)
        return [first, self.say(self.tpl("move", kw.get("from")), ident, MOVE=move)]

    def _cant(self, cmd, args, kw):
        ident, effect, move = (args + ["", "", ""])[:3]
        template = self.tpl("cant", effect, NODEFAULT) or self.tpl("cant" if move else "cantNoMove")
        return [self.maybe_ability(effect, kw.get("of") or ident), self.say(template, ident, MOVE=move)]

    def _formechange(self, cmd, args, kw):
        ident, arg = (args + ["", ""])[:2]
        key = _side_and_name(ident)
        if cmd == "-transform":
            new_species = self.species.get(_side_and_name(arg), _side_and_name(arg)[1])
            effect, kind = ("transform", "transform") if new_species else ("", "transform")
        else:
            new_species = arg.split(",")[0].strip()
            self.species[key] = new_species or self.species.get(key, key[1])
            effect, kind = FORME_EFFECTS.get(to_id(new_species), ("", "transform"))
        template = self.tpl(kind, effect, "" if "msg" in kw else NODEFAULT)
        return [self.maybe_ability(kw.get("from"), kw.get("of") or ident), self.say(template, ident, SPECIES=new_species)]

    def _message(self, cmd, args, kw):
        text = "|".join(args)
        return [f"({text})" if cmd == "-hint" else text]

    def _start_effect(self, cmd, args, kw):
        ident, effect, arg3 = (args + ["", "", ""])[:3]
        first = self.maybe_ability(effect, ident) or self.maybe_ability(kw.get("from"), kw.get("of") or ident)
        eid, frm = effect_id(effect), kw.get("from")
        if eid == "typechange":
            return [first, self.say(self.tpl("typeChange", frm), ident, kw, TYPE=arg3)]
        if eid == "typeadd":
            return [first, self.say(self.tpl("typeAdd", frm), ident, kw, TYPE=arg3)]
        if eid.startswith("stockpile"):
            return [first, self.say(self.tpl("start", "stockpile"), ident, kw, NUMBER=eid[9:])]
        if eid.startswith("perish"):
            return [first, self.say(self.tpl("activate", "perishsong"), ident, kw, NUMBER=eid[6:])]
        if eid.startswith(("protosynthesis", "quarkdrive")):
            return [first, self.say(self.tpl("start", eid[:-3]), ident, kw, STAT=self.stat(eid[-3:]))]
        kind = "start"
        for flag, name in (("already", "alreadyStarted"), ("fatigue", "startFromFatigue"),
                           ("zeffect", "startFromZEffect"), ("damage", "activate"), ("block", "block"),
                           ("upkeep", "upkeep")):
            kind = name if flag in kw else kind
        if eid in ("reflect", "lightscreen"):
            kind = "startGen1"
        if kind == "start" and (frm or "").startswith("item:"):
            kind = "startFromItem"
        return [first, self.say(self.tpl(kind, frm, effect), ident, kw, EFFECT=effect_name(effect), MOVE=arg3,
                                ITEM=effect_name(frm))]

    def _end_effect(self, cmd, args, kw):
        ident, effect = (args + ["", ""])[:2]
        frm = kw.get("from")
        first = self.maybe_ability(effect, ident) or self.maybe_ability(frm, kw.get("of") or ident)
        if effect_id(effect) in ("doomdesire", "futuresight"):
            return [first, self.say(self.tpl("activate", effect), None, TARGET=self.pk(ident))]
        template = self.tpl("endFromItem", effect) if (frm or "").startswith("item:") else ""
        template = template or self.tpl("end", effect)
        return [first, self.say(template, ident, kw, EFFECT=effect_name(effect), ITEM=effect_name(frm))]

    def _ability(self, cmd, args, kw):
        ident, ability, old = (args + ["", "", ""])[:3]
        if old and (IDENT.match(old) or old == "boost"):
            old = ""
        lines = [self.ability(old, ident), self.ability(ability, ident)]
        if "fail" in kw:
            return lines + [self.tpl("block", kw.get("from"))]
        if kw.get("from"):
            if not old:
                lines.insert(0, self.maybe_ability(kw["from"], ident))
            return lines + [self.say(self.tpl("changeAbility", kw["from"]), ident, kw, ABILITY=effect_name(ability))]
        aid = effect_id(ability)
        if aid == "unnerve":
            return lines + [self.say(self.tpl("start", ability), ident, TEAM=self.team(ident, them=True))]
        kind = "activate" if aid in ("anticipation", "sturdy") else "start"
        return lines + [self.say(self.tpl(kind, ability, NODEFAULT), ident)]

    def _endability(self, cmd, args, kw):
        ident, ability = (args + ["", ""])[:2]
        if ability:
            return [self.ability(ability, ident)]
        return [self.maybe_ability(kw.get("from"), kw.get("of") or ident), self.say(self.tpl("start", "Gastro Acid"), ident)]

    def _item(self, cmd, args, kw):
        ident, item = (args + ["", ""])[:2]
        frm, of, target = kw.get("from"), kw.get("of"), ""
        fid = effect_id(frm)
        if fid in ("magician", "pickpocket"):
            target, of = of, None
        first = self.maybe_ability(frm, of or ident)
        if fid in ("thief", "covet", "bestow", "magician", "pickpocket"):
            return [first, self.say(self.tpl("takeItem", frm), ident, ITEM=effect_name(item), SOURCE=self.pk(target or of))]
        if fid == "frisk":
            kind = "activate" if of and ident and of != ident else "activateNoTarget"
            return [first, self.say(self.tpl(kind, "Frisk"), of, ITEM=effect_name(item), TARGET=self.pk(ident))]
        if frm:
            return [first, self.say(self.tpl("addItem", frm), ident, ITEM=effect_name(item))]
        return [first, self.say(self.tpl("start", item, NODEFAULT), ident)]

    def _enditem(self, cmd, args, kw):
        ident, item = (args + ["", ""])[:2]
        frm, fid = kw.get("from"), effect_id(kw.get("from"))
        first = self.maybe_ability(frm, kw.get("of") or ident)
        name = effect_name(item)
        if "eat" in kw:
            return [first, self.say(self.tpl("eatItem", frm), ident, ITEM=name)]
        if fid == "gem":
            return [first, self.say(self.tpl("useGem", item), ident, ITEM=name, MOVE=kw.get("move"))]
        if fid == "stealeat":
            return [first, self.say(self.tpl("removeItem", "Bug Bite"), ident, kw, ITEM=name)]
        if frm:
            return [first, self.say(self.tpl("removeItem", frm), ident, kw, ITEM=name)]
        if "weaken" in kw:
            return [first, self.say(self.tpl("activateWeaken"), ident, ITEM=name)]
        template = self.tpl("end", item, NODEFAULT) or self.tpl("activateItem")
        return [first, self.say(template, ident, ITEM=name, TARGET=self.pk(kw.get("of")))]

    def _status(self, cmd, args, kw):
        ident, status = (args + ["", ""])[:2]
        frm = kw.get("from") or ""
        first = self.maybe_ability(frm, kw.get("of") or ident)
        if frm.startswith("item:"):
            return [first, self.say(self.tpl("startFromItem", status), ident, ITEM=effect_name(frm))]
        if effect_id(frm) == "rest":
            return [first, self.say(self.tpl("startFromRest", status), ident)]
        return [first, self.say(self.tpl("start", status), ident)]

    def _curestatus(self, cmd, args, kw):
        ident, status = (args + ["", ""])[:2]
        frm = kw.get("from") or ""
        if effect_id(frm) == "naturalcure":
            return [self.say(self.tpl("activate", frm), ident)]
        first = self.maybe_ability(frm, kw.get("of") or ident)
        if frm.startswith("item:"):
            return [first, self.say(self.tpl("endFromItem", status), ident, ITEM=effect_name(frm))]
        if frm.startswith("move:") and effect_id(frm) in THAWING_MOVES:
            return [first, self.say(self.tpl("endFromMove", status), ident, MOVE=effect_name(frm))]
        template = self.tpl("end", status, NODEFAULT) or self.tpl("end").replace("[EFFECT]", status)
        return [first, self.say(template, ident)]

    def _from_activate(self, cmd, args, kw):  # -cureteam, -clearallboost: the text of the effect only
        kind = "clearAllBoost" if cmd == "-clearallboost" else "activate"
        return [self.say(self.tpl(kind, kw.get("from")), args[0] if args else None, EFFECT=effect_name(kw.get("from")))]

    def _sethp(self, cmd, args, kw):
        for ident, health in zip(args[0::2], args[1::2]):
            self._set_hp(ident, health)
        if not kw.get("from"):
            return []
        return [self.say(self.tpl("activate", kw.get("from")), None, EFFECT=effect_name(kw.get("from")))]

    def _singleevent(self, cmd, args, kw):
        ident, effect = (args + ["", ""])[:2]
        eid = effect_id(effect)
        if eid == "roost":  # only true of a Flying type, which this renderer does not track
            return []
        first = self.maybe_ability(effect, kw.get("of") or ident) or self.maybe_ability(kw.get("from"), kw.get("of") or ident)
        if eid == "instruct":
            return [first, self.say(self.tpl("activate", effect), kw.get("of"), TARGET=self.pk(ident))]
        template = self.tpl("start", effect, NODEFAULT) or self.tpl("start").replace("[EFFECT]", effect_name(effect))
        return [first, self.say(template, ident, kw)]

    def _side_effect(self, cmd, args, kw):
        side, effect = (args + ["", ""])[:2]
        kind = "start" if cmd == "-sidestart" else "end"
        template = self.tpl(kind, effect, NODEFAULT) or self.tpl(kind + "TeamEffect")
        return [self.fill(template, EFFECT=effect_name(effect), TEAM=self.team(side), PARTY=self.party(side))]

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
        effect = args[0] if args else ""
        frm, of = kw.get("from"), kw.get("of")
        first = self.maybe_ability(frm, of)
        if effect_id(frm) == "hadronengine":
            return [first, self.say(self.tpl("start", "hadronengine"), of)]
        kind = "start" if effect_id(effect) == "perishsong" else cmd[len("-field"):]
        generic = "endFieldEffect" if kind == "end" else "startFieldEffect"
        template = self.tpl(kind, effect, NODEFAULT) or self.tpl(generic)
        return [first, self.say(template, of, EFFECT=effect_name(effect))]

    def _activate(self, cmd, args, kw):
        ident, effect, target, extra2 = (args + ["", "", "", ""])[:4]
        eid, of = effect_id(effect), kw.get("of")
        extra = ""  # a move, item or number given as a plain argument ("|move: Poltergeist|Leftovers")
        if target and not IDENT.match(target):
            target, extra = "", target
        if eid == "celebrate":
            return [self.say(self.tpl("activate", "celebrate"), ident)]
        if not target and eid in ("hyperdrill", "hyperspacefury", "hyperspacehole", "phantomforce", "shadowforce", "feint"):
            ident, target = of or ident, ident
        target = target or of or ident
        lines = [self.maybe_ability(effect, ident)]
        if eid in ("lockon", "mindreader"):
            return lines + [self.say(self.tpl("start", effect), of, SOURCE=self.pk(ident))]
        if eid in ("mummy", "lingeringaroma") and kw.get("ability"):
            lines += [self.ability(kw["ability"], target), self.ability("Mummy" if eid == "mummy" else "Lingering Aroma", target)]
            return lines + [self.say(self.tpl("changeAbility", eid), ident, TARGET=self.pk(target))]
        if eid == "commander" and target == ident:
            return lines
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
        if kw.get("ability"):
            lines.append(self.ability(kw["ability"], ident))
        if kw.get("ability2"):
            lines.append(self.ability(kw["ability2"], target))
        team = self.team(target) if eid == "brickbreak" else None
        return lines + [self.say(template, ident, kw, TARGET=self.pk(target), TEAM=team, NAME=kw.get("name"),
                                 MOVE=kw.get("move") or extra, ITEM=kw.get("item") or extra,
                                 NUMBER=kw.get("number") or extra2 or extra)]

    def _prepare(self, cmd, args, kw):
        ident, effect, target = (args + ["", "", ""])[:3]
        return [self.say(self.tpl("prepare", effect), ident, TARGET=self.pk(target))]

    def _damage(self, cmd, args, kw):
        ident, health = (args + ["", ""])[:2]
        lost = self._set_hp(ident, health)
        frm = kw.get("from")
        first = self.maybe_ability(frm, kw.get("of") or ident)
        template = self.tpl("damage", frm, NODEFAULT)
        if not template and not frm:
            template = self.tpl("damage" if lost is None else "damagePercentage")
        elif not template and frm.startswith("item:"):
            template = self.tpl("damageFromPokemon" if kw.get("of") else "damageFromItem")
        elif not template and ("partiallytrapped" in kw or effect_id(frm) in ("bind", "wrap")):
            template = self.tpl("damageFromPartialTrapping")
        template = template or self.tpl("damage")
        percentage = format_percentage(lost) if lost is not None else ""
        return [first, self.say(template, ident, kw, PERCENTAGE=percentage, ITEM=effect_name(frm), MOVE=effect_name(frm))]

    def _heal(self, cmd, args, kw):
        ident, health = (args + ["", ""])[:2]
        self._set_hp(ident, health)
        frm = kw.get("from")
        first = self.maybe_ability(frm, kw.get("of") or ident)
        template = self.tpl("heal", frm, NODEFAULT)
        if not template:
            template = self.tpl("healFromEffect" if frm and not frm.startswith("ability:") else "heal")
        return [first, self.say(template, ident, kw, NICKNAME=kw.get("wisher"), EFFECT=effect_name(frm))]

    def _boost(self, cmd, args, kw):
        ident, stat, amount = (args + ["", "", "1"])[:3]
        frm = kw.get("from") or ""
        amount_n = int(amount) if amount.lstrip("-").isdigit() else 1
        kind = cmd[1:] + ("3" if amount_n >= 3 else "2" if amount_n == 2 else "0" if amount_n == 0 else "")
        first = self.maybe_ability(frm, kw.get("of") or ident)
        if amount_n and "zeffect" in kw:
            kind += "MultipleFromZEffect" if "multiple" in kw else "FromZEffect"
        elif amount_n and frm.startswith("item:"):
            kind += "FromItem"
        return [first, self.say(self.tpl(kind, frm), ident, STAT=self.stat(stat), ITEM=effect_name(frm))]

    def _with_from(self, cmd, args, kw):
        """-setboost, -swapboost, -copyboost, -invertboost and the -clear*boost events."""
        ident, other = (args + ["", ""])[:2]
        frm = kw.get("from")
        kind = {"-setboost": "boost", "-copyboost": "copyBoost", "-invertboost": "invertBoost"}.get(cmd, "clearBoost")
        if cmd == "-swapboost":
            kind = {"guardswap": "swapDefensiveBoost", "powerswap": "swapOffensiveBoost"}.get(effect_id(frm), "swapBoost")
        if cmd == "-clearboost" and "zeffect" in kw:
            kind = "clearBoostFromZEffect"
        source = self.pk(other) if cmd.startswith("-clear") else self.pk(kw.get("of"))
        return [self.maybe_ability(frm, kw.get("of") or ident),
                self.say(self.tpl(kind, frm), ident, TARGET=self.pk(other), SOURCE=source)]

    def _effectiveness(self, cmd, args, kw):
        kind = EFFECTIVENESS[cmd] + ("Spread" if self.spread else "")
        return [self.say(self.tpl(kind), args[0] if args else None)]

    def _block(self, cmd, args, kw):
        ident, effect, move, attacker = (args + ["", "", "", ""])[:4]
        return [self.maybe_ability(effect, kw.get("of") or ident),
                self.say(self.tpl("block", effect), ident, SOURCE=self.pk(attacker or kw.get("of")), MOVE=move)]

    def _fail(self, cmd, args, kw):
        ident, effect, stat = (args + ["", "", ""])[:3]
        eid, frm = effect_id(effect), kw.get("from")
        blocker = effect_id(frm)
        first = self.maybe_ability(frm, kw.get("of") or ident)
        kind = "block"
        if blocker in ("desolateland", "primordialsea") and eid not in WEATHER_MOVES:
            kind = "blockMove"
        elif blocker == "uproar" and "msg" in kw:
            kind = "blockSelf"
        template = self.tpl(kind, frm)
        if template:
            return [first, self.say(template, ident)]
        if eid == "unboost":
            return [first, self.say(self.tpl("failSingular" if stat else "fail", "unboost"), ident, STAT=stat)]
        kind = "alreadyStarted" if eid in ALREADY_STARTED else "fail"
        kind = "failTooHeavy" if "heavy" in kw else "failWrongForme" if "forme" in kw else kind
        return [first, self.say(self.tpl(kind, effect), ident)]

    def _immune(self, cmd, args, kw):
        ident = args[0] if args else ""
        frm = kw.get("from")
        template = self.tpl("block", frm)
        if not template:
            kind = ("immuneOHKO" if "ohko" in kw else "immune") if ident else "immuneNoPokemon"
            template = self.tpl(kind, frm)
        return [self.maybe_ability(frm, kw.get("of") or ident), self.say(template, ident)]

    def _miss(self, cmd, args, kw):
        source, target = (args + ["", ""])[:2]
        first = self.maybe_ability(kw.get("from"), kw.get("of") or target)
        if not target:
            return [first, self.say(self.tpl("missNoPokemon"), None, SOURCE=self.pk(source))]
        return [first, self.say(self.tpl("miss"), target)]

    def _terastallize(self, cmd, args, kw):
        ident, tera_type = (args + ["", ""])[:2]
        return [self.say(self.tpl("terastallize"), ident, TYPE=tera_type)]

    def _hitcount(self, cmd, args, kw):
        count = args[1] if len(args) > 1 else ""
        return [self.tpl("hitCountSingular") if count == "1" else self.fill(self.tpl("hitCount"), NUMBER=count)]

    def _nothing(self, cmd, args, kw):
        return [self.tpl("activate", "move: Splash")]

    def _no_argument(self, cmd, args, kw):
        return [self.tpl(NO_ARGUMENT_EVENTS[cmd])]

    def _unknown(self, cmd, args, kw):
        """An event this renderer does not know: readable, never a crash."""
        words = []
        for arg in args + [kw.get("from", ""), kw.get("of", "")]:
            side, name = _side_and_name(arg)
            if side and self.usernames.get(name) == side:
                words.append(self.trainer(side))
            elif arg:
                words.append(self.pk(arg) if side else effect_name(arg))
        return [f"({cmd.lstrip('-')}{': ' + ', '.join(words) if words else ''})"]


def render_battle(lines: Iterable[str], perspective: str | None = "p1") -> list[str]:
    """All text lines of a battle, in order, as `perspective` saw it ('p1', 'p2'; None = spectator)."""
    return BattleText(perspective).feed(lines)


# ---- command line ---------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pokebench.battle_text",
        description="Print a recorded game's battle log in English, as one side saw it (the words a "
                    "model reads in its prompt), from the run's store runs/RUN/store.sqlite.")
    parser.add_argument("run", metavar="RUN", help="the run's name (a folder under --runs-dir)")
    parser.add_argument("game_id", metavar="GAME_ID", help="the game's id, as in the run's games.csv")
    parser.add_argument("--side", choices=("p1", "p2", "spectator"), default="p1",
                        help="whose view: p1 or p2 (own Pokémon plain, the other side 'the opposing', own HP "
                             "exact) or spectator (public information only, worded from p1's side); default p1")
    parser.add_argument("--runs-dir", type=Path, default=Path("runs"), help="the folder of the runs (default: runs)")
    options = parser.parse_args(argv)

    from pokebench.store import RunStore, StoreError

    path = options.runs_dir / options.run / "store.sqlite"
    try:
        store = RunStore.open_existing(path)
    except StoreError:
        runs = sorted(p.parent.name for p in options.runs_dir.glob("*/store.sqlite"))
        known = f"Runs in {options.runs_dir}: {', '.join(runs)}." if runs else f"There is no run in {options.runs_dir}."
        print(f"Unknown run {options.run!r}: there is no {path}. {known}", file=sys.stderr)
        return 2
    with store:
        try:
            record = store.record(options.game_id)
        except KeyError:
            ids = sorted(store.done_game_ids())
            some = ", ".join(ids[:8]) + (f", ... ({len(ids)} games)" if len(ids) > 8 else "")
            print(f"Unknown game {options.game_id!r} in run {options.run!r}. "
                  f"{'Finished games: ' + some if ids else 'The run has no finished game yet.'}", file=sys.stderr)
            return 2
    try:
        text = render_battle(record.get("log") or [], None if options.side == "spectator" else options.side)
    except BattleTextError as err:
        print(err, file=sys.stderr)
        return 1
    print("\n".join(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
