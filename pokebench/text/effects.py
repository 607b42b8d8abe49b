"""The words of effects: volatile conditions, abilities, items, status, side and field conditions, and
outcomes (blocked, failed, immune, missed). A mixin of :class:`pokebench.text.renderer.BattleText`.

Each handler takes one (upgraded) protocol event, ``(cmd, args, kw)``, and returns its raw template
lines (pop-ups marked), which the renderer cleans and indents. Handlers read and update the renderer's
state (``types``, ``weather``...).
"""

from __future__ import annotations

from typing import Callable

from pokebench.text.names import Wording
from pokebench.text.protocol import (ALREADY_STARTED, BREAKS_PROTECTION, COUNTED_STARTS, IDENT, ITEM_TAKERS,
                                     START_FLAGS, THAWING_MOVES, WEATHER_MOVES, effect_id, effect_name, key, pad)
from pokebench.text.templates import NODEFAULT

__all__ = ["EffectWords"]


class EffectWords(Wording):
    """Handlers of effect events (``-start``, ``-ability``, ``-item``, ``-status``, ``-weather``, ``-fail``...)."""

    types: dict[tuple[str, str], tuple[str, ...]]
    abilities_shown: dict[tuple[str, str], str]
    weather: str
    scrub: Callable[[str], str]  # the renderer's: free text with the user names replaced

    def _start_effect(self, cmd, args, kw):
        ident, effect, arg3 = pad(args, 3)
        eid, frm = effect_id(effect), kw.get("from")
        first = self.maybe_ability(effect, ident) or self.popup_from(kw, ident)
        values = {"EFFECT": effect_name(effect), "MOVE": arg3, "TYPE": arg3, "ITEM": effect_name(frm)}
        counted = next((prefix for prefix in COUNTED_STARTS if eid.startswith(prefix)), None)
        if eid == "typechange" and arg3:
            self.types[key(ident)] = tuple(arg3.split("/"))
        elif eid == "typeadd" and arg3:
            self.types[key(ident)] = (*self.types.get(key(ident), ()), arg3)
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
        ident, effect = pad(args, 2)
        frm = kw.get("from")
        first = self.maybe_ability(effect, ident) or self.popup_from(kw, ident)
        if effect_id(effect) in ("doomdesire", "futuresight"):
            return [first, self.say(self.tpl("activate", effect), None, TARGET=self.pk(ident))]
        template = (frm or "").startswith("item:") and self.tpl("endFromItem", effect) or self.tpl("end", effect)
        return [first, self.say(template, ident, kw, EFFECT=effect_name(effect), ITEM=effect_name(frm))]

    def _ability(self, cmd, args, kw):
        ident, ability, old = pad(args, 3)
        old = "" if IDENT.match(old) or old == "boost" else old
        lines = [self.ability(old, ident), self.ability(ability, ident)]
        if "fail" in kw:
            return lines + [self.tpl("block", kw.get("from"))]
        if kw.get("from"):
            if effect_id(kw["from"]) == "trace" and kw.get("of"):  # Trace shows the ability it copied
                self.abilities_shown[key(kw["of"])] = ability
            first = "" if old else self.maybe_ability(kw["from"], ident)
            template = self.tpl("changeAbility", kw["from"])
            return [first] + lines + [self.say(template, ident, kw, ABILITY=effect_name(ability))]
        aid = effect_id(ability)
        if aid == "unnerve":
            return lines + [self.say(self.tpl("start", ability), ident, TEAM=self.team(ident, them=True))]
        kind = "activate" if aid in ("anticipation", "sturdy") else "start"
        return lines + [self.say(self.tpl(kind, ability, NODEFAULT), ident)]

    def _endability(self, cmd, args, kw):
        ident, ability = pad(args, 2)
        if ability:
            return [self.ability(ability, ident)]
        return [self.popup_from(kw, ident), self.say(self.tpl("start", "Gastro Acid"), ident)]

    def _item(self, cmd, args, kw):
        ident, item = pad(args, 2)
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
        ident, item = pad(args, 2)
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
        ident, status = pad(args, 2)
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

    def _singleevent(self, cmd, args, kw):
        ident, effect = pad(args, 2)
        eid = effect_id(effect)
        if eid == "roost" and "Flying" not in self.types.get(key(ident), ()):  # the client says it of Flying types
            return []
        first = self.maybe_ability(effect, kw.get("of") or ident) or self.popup_from(kw, ident)
        if eid == "instruct":
            return [first, self.say(self.tpl("activate", effect), kw.get("of"), TARGET=self.pk(ident))]
        template = self.tpl("start", effect, NODEFAULT) or self.tpl("start")
        return [first, self.say(template, ident, kw, EFFECT=effect_name(effect))]

    def _side_effect(self, cmd, args, kw):
        side, effect = pad(args, 2)  # side: "p2: <user name>"
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
        ident, effect, target, extra2 = pad(args, 4)
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

    def _block(self, cmd, args, kw):
        ident, effect, move, attacker = pad(args, 4)
        return [self.maybe_ability(effect, kw.get("of") or ident),
                self.say(self.tpl("block", effect), ident, SOURCE=self.pk(attacker or kw.get("of")), MOVE=move)]

    def _fail(self, cmd, args, kw):
        ident, effect, stat = pad(args, 3)
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
            kind = "fail" if "weak" in kw else kind  # Substitute with too little HP: not "already has one"
            kind = "failTooHeavy" if "heavy" in kw else "failWrongForme" if "forme" in kw else kind
            template = self.tpl(kind, effect)
        return [self.popup_from(kw, ident), self.say(template, ident, STAT=stat)]

    def _immune(self, cmd, args, kw):
        ident, frm = (args[0] if args else ""), kw.get("from")
        kind = ("immuneOHKO" if "ohko" in kw else "immune") if ident else "immuneNoPokemon"
        template = self.tpl("block", frm) or self.tpl(kind, frm)
        return [self.popup_from(kw, ident), self.say(template, ident)]

    def _miss(self, cmd, args, kw):
        source, target = pad(args, 2)
        template = self.tpl("miss" if target else "missNoPokemon")
        return [self.popup_from(kw, target), self.say(template, target or None, SOURCE=self.pk(source))]

    def _unknown(self, cmd, args, kw):
        """An event this renderer does not know: a readable line, never a crash."""
        words = [self.pk(arg) if IDENT.match(arg) else effect_name(arg)
                 for arg in args + [kw.get("from", ""), kw.get("of", "")] if arg]
        return [self.scrub(f"({cmd.lstrip('-')}{': ' + ', '.join(words) if words else ''})")]
