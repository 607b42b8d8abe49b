"""The words of the main events: the battle's start and end, turns, switches, moves, HP, stats and forme changes.

Handlers ``(ctx, cmd, args, kw) -> lines`` (:mod:`pokebench.text.dispatch`), entered in :data:`HANDLERS`
by the command they word; the words of effects are in :mod:`pokebench.text.effects`.
"""

from __future__ import annotations

from pokebench.text.dispatch import Context, Handler, registrar
from pokebench.text.protocol import (FORME_EFFECTS, NO_SWITCH_OUT_TEXT, SIMPLE, SWAP_BOOSTS, effect_id, effect_name,
                                     key, pad)
from pokebench.text.names import damage_percentage
from pokebench.text.state import species_types
from pokebench.text.templates import NODEFAULT, OWN

__all__ = ["HANDLERS"]

HANDLERS: dict[str, Handler] = {}
handles = registrar(HANDLERS)


@handles(*SIMPLE)
def on_simple(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    """An event with one fixed template (:data:`pokebench.text.protocol.SIMPLE`), and what it changes."""
    words, state = ctx.words, ctx.state
    kind, namespace, slots = SIMPLE[cmd]
    if cmd in ("-crit", "-supereffective", "-resisted") and state.spread:
        kind += "Spread"
    if cmd == "-hitcount" and args[1:2] == ["1"]:
        kind = "hitCountSingular"
    if cmd == "-swapboost":
        kind = SWAP_BOOSTS.get(effect_id(kw.get("from")), kind)
    if cmd == "faint":
        state.fainted.add(key(args[0] if args else ""))
        state.boost_order.pop(key(args[0] if args else ""), None)
        state.tera.pop(key(args[0] if args else ""), None)
    if cmd == "-clearallboost":
        state.boost_order.clear()
    elif cmd in ("-clearboost", "-setboost") and args:
        state.boost_order[key(args[0])] = [args[1]] if cmd == "-setboost" and len(args) > 1 else []
    if cmd == "-terastallize" and len(args) > 1:
        state.tera[key(args[0])] = args[1]
        state.types[key(args[0])] = (args[1],)
    if isinstance(namespace, int):
        namespace = args[namespace] if namespace < len(args) else None
    elif namespace == "[from]":
        namespace = kw.get("from")
    values = {name: words.pk(args[i]) if name in ("POKEMON", "TARGET", "SOURCE") else args[i]
              for name, i in slots.items() if i < len(args)}
    return [words.popup_from(kw, args[0] if args else ""), words.say(words.tpl(kind, namespace), None, kw, **values)]


@handles("start")
def on_battle_start(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    return [ctx.words.tpl("startBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]


@handles("win", "tie")
def on_battle_end(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    if cmd == "tie" or not args or not args[0]:
        return [words.tpl("tieBattle").replace("[TRAINER]", "Player 1", 1).replace("[TRAINER]", "Player 2", 1)]
    return [words.fill(words.tpl("winBattle"), TRAINER=words.trainer(words.usernames.get(args[0], "")))]


@handles("switch", "drag", "replace")
def on_switch(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    """switch, drag, and replace (an Illusion ends: the true Pokémon takes the place and HP bar)."""
    words, state = ctx.words, ctx.state
    ident, details, health = pad(args, 3)
    position, who = ident.split(":")[0], key(ident)
    out, previous, own = [], state.active.get(position), OWN if who[0] == words.view else ""
    if cmd == "switch" and previous and key(previous) not in state.fainted \
            and effect_id(kw.get("from")) not in NO_SWITCH_OUT_TEXT:
        template = words.tpl("switchOut", kw.get("from"), own)
        out.append(words.say(template, previous, NICKNAME=key(previous)[1]))
    if cmd == "replace" and previous and key(previous) in state.hp:
        state.hp[who] = state.hp[key(previous)]
    species = details.split(",")[0].strip() or who[1]
    if previous and cmd != "replace":
        state.boost_order.pop(key(previous), None)
    state.active[position], state.species[who] = ident, species
    state.set_types(who, species_types(species))
    state.fainted.discard(who)
    state.set_hp(ident, health)
    if cmd == "replace":
        return []
    template = words.tpl("switchIn", own) if cmd == "switch" else words.tpl("drag")
    return out + [words.say(template, ident, FULLNAME=who[1] if species == who[1] else f"{who[1]} ({species})")]


@handles("move")
def on_move(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, used = pad(args, 2)
    ctx.state.spread = "spread" in kw
    return [words.popup_from(kw, ident), words.say(words.tpl("move", kw.get("from")), ident, MOVE=used)]


@handles("cant")
def on_cant(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, effect, move = pad(args, 3)
    template = words.tpl("cant", effect, NODEFAULT) or words.tpl("cant" if move else "cantNoMove")
    return [words.maybe_ability(effect, kw.get("of") or ident), words.say(template, ident, MOVE=move)]


@handles("detailschange", "-formechange", "-transform")
def on_formechange(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words, state = ctx.words, ctx.state
    ident, arg = pad(args, 2)
    if cmd == "-transform":
        new_species, effect, kind = state.species.get(key(arg), key(arg)[1]), "transform", "transform"
        state.types[key(ident)] = state.types.get(key(arg), species_types(new_species))
    else:
        new_species = arg.split(",")[0].strip()
        state.species[key(ident)] = new_species
        state.set_types(key(ident), species_types(new_species))
        effect, kind = FORME_EFFECTS.get(effect_id(new_species), ("", "transform"))
    template = words.tpl(kind, effect, "" if "msg" in kw else NODEFAULT)
    return [words.popup_from(kw, ident), words.say(template, ident, SPECIES=new_species)]


@handles("message", "-message", "-hint")
def on_message(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    text = ctx.words.scrub("|".join(args))
    return [f"({text})" if cmd == "-hint" else text]


@handles("-sethp")
def on_sethp(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    for ident, health in zip(args[0::2], args[1::2]):
        ctx.state.set_hp(ident, health)
    frm = kw.get("from")
    return [words.say(words.tpl("activate", frm), None, EFFECT=effect_name(frm))] if frm else []


@handles("-damage")
def on_damage(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words, state = ctx.words, ctx.state
    ident, health = pad(args, 2)
    who, old, frm = key(ident), state.set_hp(ident, health), kw.get("from") or ""
    lost = damage_percentage(old, *state.hp[who], who in state.fainted) if old and old[1] else None  # "25%"
    template = words.tpl("damage", frm, NODEFAULT)
    if not template and not frm:
        template = words.tpl("damage" if lost is None else "damagePercentage")
    elif not template and frm.startswith("item:"):
        template = words.tpl("damageFromPokemon" if kw.get("of") else "damageFromItem")
    elif not template and ("partiallytrapped" in kw or effect_id(frm) in ("bind", "wrap")):
        template = words.tpl("damageFromPartialTrapping")
    return [words.popup_from(kw, ident), words.say(template or words.tpl("damage"), ident, kw, ITEM=effect_name(frm),
                                                   MOVE=effect_name(frm), PERCENTAGE=lost)]


@handles("-heal")
def on_heal(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, health = pad(args, 2)
    ctx.state.set_hp(ident, health)
    frm = kw.get("from") or ""
    template = words.tpl("heal", frm, NODEFAULT) or words.tpl(
        "healFromEffect" if frm and not frm.startswith("ability:") else "heal")
    return [words.popup_from(kw, ident),
            words.say(template, ident, kw, NICKNAME=kw.get("wisher"), EFFECT=effect_name(frm))]


@handles("-boost", "-unboost")
def on_boost(ctx: Context, cmd: str, args: list[str], kw: dict[str, str]) -> list[str]:
    words = ctx.words
    ident, stat, amount = pad(args, 3)
    frm = kw.get("from") or ""
    n = int(amount) if amount.lstrip("-").isdigit() else 1
    order = ctx.state.boost_order.setdefault(key(ident), [])
    if stat and stat not in order:
        order.append(stat)
    kind = cmd[1:] + ("3" if n >= 3 else "2" if n == 2 else "0" if n == 0 else "")
    kind += "FromItem" if n and frm.startswith("item:") else ""
    return [words.popup_from(kw, ident),
            words.say(words.tpl(kind, frm), ident, STAT=words.stat(stat), ITEM=effect_name(frm))]
