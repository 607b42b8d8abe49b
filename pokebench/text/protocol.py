"""Showdown's battle protocol as the text renderer reads it: lines, identities, effects, and its tables.

A protocol line is ``|cmd|arg|arg|[kw] value``. Before a line is worded it is *upgraded* as the Showdown
client upgrades it (:func:`upgrade_args`, the client's ``BattleTextParser.upgradeArgs``): the simulator
writes some events in an older shape (``-activate`` of a partial-trapping move is a ``-start``, of
Protect a ``-block``; the ``[of]`` of Water Absorb's heal is the attacker, not the holder), and the
client's text is written for the upgraded shape.
"""

from __future__ import annotations

import re

__all__ = ["parse_line", "upgrade_args", "effect_name", "effect_id", "pad", "key", "parse_hp", "IDENT", "KWARG",
           "PROTOCOL_ONLY", "SIMPLE", "FORME_EFFECTS"]

KWARG = re.compile(r"^\[(\w+)\]\s?(.*)$", re.S)
IDENT = re.compile(r"^(p[1-4])([a-z]?):\s*(.*)$")
ALLY = {"p1": "p3", "p2": "p4", "p3": "p1", "p4": "p2"}

# Lines with no text (protocol, chat, timers, HTML). Any other unknown command that is not an
# event ("-xyz") is skipped too; an unknown event gets a readable generic line.
PROTOCOL_ONLY = frozenset("""request t: gametype player teamsize gen tier rule rated seed title init deinit
    j J join l L leave n N name c c: chat raw html uhtml uhtmlchange inactive inactiveoff timestamp
    clearpoke poke teampreview updatepoke upkeep done sentchoice callback debug error bigerror badge
    notify hidelines unlink -anim -mustrecharge -candynamax -swapsideconditions -ohkogroup""".split())
# Events with one fixed template: cmd -> (template kind, namespace, {placeholder: argument index}).
# The namespace is an argument index, "[from]" (the effect of [from]) or None (default template).
SIMPLE: dict[str, tuple[str, int | str | None, dict[str, int]]] = {
    "turn": ("turn", None, {"NUMBER": 0}), "faint": ("faint", None, {"POKEMON": 0}),
    "-crit": ("crit", None, {"POKEMON": 0}), "-supereffective": ("superEffective", None, {"POKEMON": 0}),
    "-resisted": ("resisted", None, {"POKEMON": 0}), "-terastallize": ("terastallize", None, {"POKEMON": 0, "TYPE": 1}),
    "-prepare": ("prepare", 1, {"POKEMON": 0, "TARGET": 2}), "-hitcount": ("hitCount", None, {"NUMBER": 1}),
    "-cureteam": ("activate", "[from]", {}), "-clearallboost": ("clearAllBoost", "[from]", {}),
    "-center": ("center", None, {}), "-ohko": ("ohko", None, {}),
    "-combine": ("combine", None, {}), "-notarget": ("noTarget", None, {}),
    "-setboost": ("boost", "[from]", {"POKEMON": 0}), "-invertboost": ("invertBoost", "[from]", {"POKEMON": 0}),
    "-copyboost": ("copyBoost", "[from]", {"POKEMON": 0, "TARGET": 1}),
    "-swapboost": ("swapBoost", "[from]", {"POKEMON": 0, "TARGET": 1}),  # kind by [from]: SWAP_BOOSTS
    **{cmd: ("clearBoost", "[from]", {"POKEMON": 0, "SOURCE": 1})
       for cmd in ("-clearboost", "-clearpositiveboost", "-clearnegativeboost")},
}
SWAP_BOOSTS = {"guardswap": "swapDefensiveBoost", "powerswap": "swapOffensiveBoost"}
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

# The client's tables for upgrading old-shape events (BattleTextParser.upgradeArgs).
ACTIVATE_BLOCKABLE = frozenset("""ingrain quickguard wideguard craftyshield matblock protect mist safeguard
    electricterrain mistyterrain psychicterrain telepathy stickyhold suctioncups aromaveil flowerveil sweetveil
    disguise safetygoggles protectivepads""".split())
CANT_BLOCKABLE = frozenset(("ability: Damp", "ability: Dazzling", "ability: Queenly Majesty", "ability: Armor Tail"))
STARTABLE = frozenset("thundercage clamp whirlpool firespin magmastorm sandtomb infestation trapped bind snaptrap wrap".split())
NUMBERABLE = frozenset("eeriespell gmaxdepletion spite grudge forewarn sketch leppaberry mysteryberry".split())
HEALING_ABILITIES = frozenset(("dryskin", "eartheater", "voltabsorb", "waterabsorb"))


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


def upgrade_args(cmd: str, args: list[str], kw: dict[str, str]) -> tuple[str, list[str], dict[str, str]]:
    """An event in the shape the client's text is written for (the client's ``upgradeArgs``)."""
    if cmd == "-activate" and not any(k in kw for k in ("item", "move", "number", "ability")):
        ident, effect, arg3, arg4 = pad(args, 4)
        eid, target = effect_id(effect), kw.get("of", "")
        if "block" in kw:
            return "-fail", [ident], kw
        if eid == "sturdy":
            return "-activate", [ident, "ability: Sturdy"], kw
        if eid == "wonderguard":
            return "-immune", [ident], {"from": "ability: Wonder Guard"}
        if eid == "beatup" and target:
            return "-activate", args, {"name": target}
        if eid in ACTIVATE_BLOCKABLE:
            if target:
                return "-block", [target, effect, arg3], {**kw, "of": ident}
            return "-block", [ident, effect, arg3], kw
        if eid == "charge":
            return "-singlemove", [ident, "Charge"], {"of": target} if target else {}
        if eid in STARTABLE:
            return "-start", [ident, effect], {"of": target}
        if eid == "fairylock":
            return "-fieldactivate", [effect], {}
        kw = dict(kw)
        if eid in ("symbiosis", "poltergeist"):
            kw["item"] = arg3
        elif eid == "magnitude":
            kw["number"] = arg3
        elif eid in ("skillswap", "mummy", "lingeringaroma") or (eid == "wanderingspirit" and arg3):
            kw["ability"], kw["ability2"] = arg3, arg4
        elif eid == "wanderingspirit":
            return "-ability", [ident, "Wandering Spirit"], {}
        elif eid in NUMBERABLE:
            kw["move"], kw["number"] = arg3, arg4
        return "-activate", [ident, effect, target], kw
    if cmd == "-start" and kw.get("from") in ("Protean", "Color Change"):
        return cmd, args, {**kw, "from": "ability: " + kw["from"]}
    if cmd == "move" and kw.get("from") == "Magic Bounce":
        return cmd, args, {**kw, "from": "ability: Magic Bounce"}
    if cmd == "cant" and len(args) > 1 and args[1] in CANT_BLOCKABLE:
        ident, effect, move = pad(args, 3)
        return "-block", [ident, effect, move, kw.get("of", "")], {}
    if cmd == "-heal" and effect_id(kw.get("from")) in HEALING_ABILITIES:
        return cmd, args, {k: v for k, v in kw.items() if k != "of"}
    if cmd == "-weather" and args[:1] == ["Snow"]:
        return cmd, ["Snowscape", *args[1:]], kw
    if cmd == "-nothing":
        return "-activate", ["", "move: Splash"], kw
    if cmd == "-restoreboost":
        return "-clearnegativeboost", args, kw
    return cmd, args, kw


def pad(args: list[str], n: int) -> list[str]:
    return (args + [""] * n)[:n]


def key(ident: str) -> tuple[str, str]:
    """'p1a: Granbull' -> ('p1', 'Granbull'): a Pokémon, wherever it is."""
    match = IDENT.match(ident or "")
    return (match.group(1), match.group(3).strip()) if match else ("", (ident or "").strip())


def parse_hp(health: str) -> tuple[int, int | None] | None:
    """'227/302 par' -> (227, 302); '0 fnt' -> (0, None)."""
    token = (health or "").split(" ")[0]
    try:
        hp, _, max_hp = token.partition("/")
        return int(float(hp)), int(float(max_hp)) if max_hp else None
    except ValueError:
        return None
