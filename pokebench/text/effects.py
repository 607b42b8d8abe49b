"""The words of effects: volatile conditions, abilities, items, status, side and field conditions, and
outcomes (blocked, failed, immune, missed); and the generic line of an event no handler knows.

Handlers ``(ctx, cmd, args, kw) -> lines`` (:mod:`pokebench.text.dispatch`), entered in :data:`HANDLERS`
by the command they word; they read and update the battle state (``types``, ``weather``...). The words
of the main events (switches, moves, HP, stats) are in :mod:`pokebench.text.events`.
"""

from __future__ import annotations

from pokebench.text.dispatch import Context, Handler, registrar
from pokebench.text.protocol import (ALREADY_STARTED, BREAKS_PROTECTION, COUNTED_STARTS, IDENT, ITEM_TAKERS,
                                     START_FLAGS, THAWING_MOVES, WEATHER_MOVES, effect_id, effect_name, key, pad)
from pokebench.text.templates import NODEFAULT

__all__ = ["HANDLERS", "unknown"]

HANDLERS: dict[str, Handler] = {}
handles = registrar(HANDLERS)


@handles("-start")
def on_start_effect(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words, state = ctx.words, ctx.state
    ident, effect, arg3 = pad(args, 3)
    eid, frm = effect_id(effect), kw.get("from")
    first = words.maybe_ability(effect, ident) or words.popup_from(kw, ident)
    values = {"EFFECT": effect_name(effect), "MOVE": arg3, "TYPE": arg3, "ITEM": effect_name(frm)}
    counted = next((prefix for prefix in COUNTED_STARTS if eid.startswith(prefix)), None)
    if eid == "typechange" and arg3:
        state.types[key(ident)] = tuple(arg3.split("/"))
    elif eid == "typeadd" and arg3:
        state.types[key(ident)] = (*state.types.get(key(ident), ()), arg3)
    if eid in ("typechange", "typeadd"):
        template = words.tpl("typeChange" if eid == "typechange" else "typeAdd", frm)
    elif counted:
        template, values["NUMBER"] = words.tpl(*COUNTED_STARTS[counted]), eid[len(counted):]
    elif eid.startswith(("protosynthesis", "quarkdrive")):  # "protosynthesisatk"
        template, values["STAT"] = words.tpl("start", eid[:-3]), words.stat(eid[-3:])
    else:
        kind = next((name for flag, name in START_FLAGS if flag in kw), "start")
        kind = "startFromItem" if kind == "start" and (frm or "").startswith("item:") else kind
        template = words.tpl(kind, frm, effect)
    return [first, words.say(template, ident, kw, **values)]


@handles("-end")
def on_end_effect(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, effect = pad(args, 2)
    frm = kw.get("from")
    first = words.maybe_ability(effect, ident) or words.popup_from(kw, ident)
    if effect_id(effect) in ("doomdesire", "futuresight"):
        return [first, words.say(words.tpl("activate", effect), None, TARGET=words.pk(ident))]
    template = (frm or "").startswith("item:") and words.tpl("endFromItem", effect) or words.tpl("end", effect)
    return [first, words.say(template, ident, kw, EFFECT=effect_name(effect), ITEM=effect_name(frm))]


@handles("-ability")
def on_ability(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words, state = ctx.words, ctx.state
    ident, ability, old = pad(args, 3)
    old = "" if IDENT.match(old) or old == "boost" else old
    lines = [words.ability(old, ident), words.ability(ability, ident)]
    if "fail" in kw:
        return lines + [words.tpl("block", kw.get("from"))]
    if kw.get("from"):
        if effect_id(kw["from"]) == "trace" and kw.get("of"):  # Trace shows the ability it copied
            state.abilities_shown[key(kw["of"])] = ability
        first = "" if old else words.maybe_ability(kw["from"], ident)
        template = words.tpl("changeAbility", kw["from"])
        return [first] + lines + [words.say(template, ident, kw, ABILITY=effect_name(ability))]
    aid = effect_id(ability)
    if aid == "unnerve":
        return lines + [words.say(words.tpl("start", ability), ident, TEAM=words.team(ident, them=True))]
    kind = "activate" if aid in ("anticipation", "sturdy") else "start"
    return lines + [words.say(words.tpl(kind, ability, NODEFAULT), ident)]


@handles("-endability")
def on_endability(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, ability = pad(args, 2)
    if ability:
        return [words.ability(ability, ident)]
    return [words.popup_from(kw, ident), words.say(words.tpl("start", "Gastro Acid"), ident)]


@handles("-item")
def on_item(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, item = pad(args, 2)
    frm, of = kw.get("from"), kw.get("of")
    target: str | None = ""  # Magician, Pickpocket: [of] is the Pokémon the item was taken from
    fid, name = effect_id(frm), effect_name(item)
    if fid in ("magician", "pickpocket"):
        target, of = of, None
    first = words.maybe_ability(frm, of or ident)
    if fid in ITEM_TAKERS:
        return [first, words.say(words.tpl("takeItem", frm), ident, ITEM=name, SOURCE=words.pk(target or of))]
    if fid == "frisk":
        kind = "activate" if of and ident and of != ident else "activateNoTarget"
        return [first, words.say(words.tpl(kind, "Frisk"), of, ITEM=name, TARGET=words.pk(ident))]
    template = words.tpl("addItem", frm) if frm else words.tpl("start", item, NODEFAULT)
    return [first, words.say(template, ident, ITEM=name)]


@handles("-enditem")
def on_enditem(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, item = pad(args, 2)
    frm, fid = kw.get("from"), effect_id(kw.get("from"))
    if "eat" in kw:
        template = words.tpl("eatItem", frm)
    elif fid == "gem":
        template = words.tpl("useGem", item)
    elif fid == "stealeat":
        template = words.tpl("removeItem", "Bug Bite")
    elif frm:
        template = words.tpl("removeItem", frm)
    elif "weaken" in kw:
        template = words.tpl("activateWeaken")
    else:
        template = words.tpl("end", item, NODEFAULT) or words.tpl("activateItem")
    return [words.popup_from(kw, ident), words.say(template, ident, kw, ITEM=effect_name(item), MOVE=kw.get("move"),
                                                   TARGET=words.pk(kw.get("of")))]


@handles("-status", "-curestatus")
def on_status(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    """-status and -curestatus."""
    words = ctx.words
    ident, status = pad(args, 2)
    frm, cure = kw.get("from") or "", cmd == "-curestatus"
    fid = effect_id(frm)
    if cure and fid == "naturalcure":
        return [words.say(words.tpl("activate", frm), ident)]
    if frm.startswith("item:"):
        kind = "endFromItem" if cure else "startFromItem"
    elif fid == "rest" and not cure:
        kind = "startFromRest"
    elif cure and frm.startswith("move:") and fid in THAWING_MOVES:
        kind = "endFromMove"
    else:
        kind = "end" if cure else "start"
    template = words.tpl(kind, status, NODEFAULT) or words.tpl("end" if cure else "start")
    return [words.popup_from(kw, ident), words.say(template, ident, EFFECT=status, ITEM=effect_name(frm),
                                                   MOVE=effect_name(frm))]


@handles("-singleturn", "-singlemove")
def on_singleevent(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words, state = ctx.words, ctx.state
    ident, effect = pad(args, 2)
    eid = effect_id(effect)
    if eid == "roost" and "Flying" not in state.types.get(key(ident), ()):  # the client says it of Flying types
        return []
    first = words.maybe_ability(effect, kw.get("of") or ident) or words.popup_from(kw, ident)
    if eid == "instruct":
        return [first, words.say(words.tpl("activate", effect), kw.get("of"), TARGET=words.pk(ident))]
    template = words.tpl("start", effect, NODEFAULT) or words.tpl("start")
    return [first, words.say(template, ident, kw, EFFECT=effect_name(effect))]


@handles("-sidestart", "-sideend")
def on_side_effect(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    side, effect = pad(args, 2)  # side: "p2: <user name>"
    kind = "start" if cmd == "-sidestart" else "end"
    template = words.tpl(kind, effect, NODEFAULT) or words.tpl(kind + "TeamEffect")
    return [words.say(template, side[:2], EFFECT=effect_name(effect))]


@handles("-weather")
def on_weather(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words, state = ctx.words, ctx.state
    weather = args[0] if args else ""
    if not weather or weather == "none":
        previous, state.weather = state.weather, ""
        return [words.tpl("end", previous, NODEFAULT) or words.fill(words.tpl("endFieldEffect"), EFFECT=previous)]
    state.weather = weather
    if "upkeep" in kw:
        return [words.tpl("upkeep", weather, NODEFAULT)]
    template = words.tpl("start", weather, NODEFAULT) or words.fill(words.tpl("startFieldEffect"), EFFECT=weather)
    return [words.maybe_ability(kw.get("from"), kw.get("of")), template]


@handles("-fieldstart", "-fieldactivate", "-fieldend")
def on_field(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    effect, frm, of = (args[0] if args else ""), kw.get("from"), kw.get("of")
    if effect_id(frm) == "hadronengine":
        return [words.maybe_ability(frm, of), words.say(words.tpl("start", "hadronengine"), of)]
    kind = "start" if effect_id(effect) == "perishsong" else cmd[len("-field"):]
    generic = "endFieldEffect" if kind == "end" else "startFieldEffect"
    template = words.tpl(kind, effect, NODEFAULT) or words.tpl(generic)
    return [words.maybe_ability(frm, of), words.say(template, of, EFFECT=effect_name(effect))]


@handles("-activate")
def on_activate(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, effect, target, extra2 = pad(args, 4)
    eid, of, extra = effect_id(effect), kw.get("of"), ""
    if target and not IDENT.match(target):  # a move, item or number as a plain argument
        target, extra = "", target
    if not target and eid in BREAKS_PROTECTION:
        ident, target = of or ident, ident
    target = target or of or ident
    lines = [words.maybe_ability(effect, ident)]
    if eid in ("lockon", "mindreader"):
        return lines + [words.say(words.tpl("start", effect), of, SOURCE=words.pk(ident))]
    if eid in ("mummy", "lingeringaroma") and kw.get("ability"):
        lines += [words.ability(kw["ability"], target), words.ability(effect_name(effect), target)]
        return lines + [words.say(words.tpl("changeAbility", eid), ident, TARGET=words.pk(target))]
    kind = "activate"
    if eid == "forewarn" and ident == target:
        kind = "activateNoTarget"
    elif eid in ("protosynthesis", "quarkdrive") and "fromitem" in kw:
        kind = "activateFromItem"
    elif eid == "orichalcumpulse" and "source" in kw:
        kind = "start"
    template = words.tpl(kind, effect, NODEFAULT) or words.tpl("block", effect, NODEFAULT)  # e.g. Protect
    if not template:
        return lines if any(lines) else [words.fill(words.tpl("activate"), EFFECT=effect_name(effect))]
    lines += [words.ability(kw.get("ability"), ident), words.ability(kw.get("ability2"), target)]
    return lines + [words.say(template, ident, kw, TARGET=words.pk(target), NAME=kw.get("name"),
                              TEAM=words.team(target) if eid == "brickbreak" else None,
                              MOVE=kw.get("move") or extra, ITEM=kw.get("item") or extra,
                              NUMBER=kw.get("number") or extra2 or extra)]


@handles("-block")
def on_block(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, effect, move, attacker = pad(args, 4)
    return [words.maybe_ability(effect, kw.get("of") or ident),
            words.say(words.tpl("block", effect), ident, SOURCE=words.pk(attacker or kw.get("of")), MOVE=move)]


@handles("-fail")
def on_fail(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, effect, stat = pad(args, 3)
    eid, frm = effect_id(effect), kw.get("from")
    kind = "block"
    if effect_id(frm) in ("desolateland", "primordialsea") and eid not in WEATHER_MOVES:
        kind = "blockMove"
    elif effect_id(frm) == "uproar" and "msg" in kw:
        kind = "blockSelf"
    template = words.tpl(kind, frm)
    if not template and eid == "unboost":
        template = words.tpl("failSingular" if stat else "fail", "unboost")
    elif not template:
        kind = "alreadyStarted" if eid in ALREADY_STARTED else "fail"
        kind = "fail" if "weak" in kw else kind  # Substitute with too little HP: not "already has one"
        kind = "failTooHeavy" if "heavy" in kw else "failWrongForme" if "forme" in kw else kind
        template = words.tpl(kind, effect)
    return [words.popup_from(kw, ident), words.say(template, ident, STAT=stat)]


@handles("-immune")
def on_immune(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, frm = (args[0] if args else ""), kw.get("from")
    kind = ("immuneOHKO" if "ohko" in kw else "immune") if ident else "immuneNoPokemon"
    template = words.tpl("block", frm) or words.tpl(kind, frm)
    return [words.popup_from(kw, ident), words.say(template, ident)]


@handles("-miss")
def on_miss(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    source, target = pad(args, 2)
    template = words.tpl("miss" if target else "missNoPokemon")
    return [words.popup_from(kw, target), words.say(template, target or None, SOURCE=words.pk(source))]


def unknown(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    """An event this renderer does not know: a readable line, never a crash."""
    words = ctx.words
    named = [words.pk(arg) if IDENT.match(arg) else effect_name(arg)
             for arg in args + [kw.get("from", ""), kw.get("of", "")] if arg]
    return [words.scrub(f"({cmd.lstrip('-')}{': ' + ', '.join(named) if named else ''})")]
