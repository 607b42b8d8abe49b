"""What an LLM player sees: prompt version 3 (method §2-§3); its answers are read in :mod:`pokebench.text.answers`.

One game is one conversation: the system prompt (:func:`system_prompt`, byte for
byte the text of the method), a first message (:func:`first_message`: the battle
log so far, the whole own team, what has been seen of the opponent, the field and
the numbered legal actions), then one short message per later decision
(:func:`later_message`: the new events, the state in short form, the legal
actions). Earlier messages are never changed, so the providers' prompt caches hit.

Names and short move descriptions come from the pinned Showdown install
(``showdown-server/node_modules/pokemon-showdown/dist/data``), read once per
process with Node; nothing is copied into the repository. If Node or the install
is missing, names fall back to poke-env's data and descriptions are left out.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Iterable, Sequence

from poke_env.battle import AbstractBattle, Move, Pokemon
from poke_env.battle.pokemon_type import PokemonType

from pokebench import paths
from pokebench.text.protocol import key
from pokebench.text.renderer import BattleText

log = logging.getLogger(__name__)

PROMPT_VERSION = 3


@functools.cache
def system_prompt(version: int = PROMPT_VERSION) -> str:
    """The system prompt of prompt ``version``, byte for byte the method's (``prompts/system-v<N>.txt``)."""
    return (resources.files("pokebench.text") / "prompts" / f"system-v{version}.txt").read_text(encoding="utf-8")


CLOSING_LINE = "Choose one action. Answer with only the ACTION line and the REASON line."

STATUS_NAMES = {"brn": "burned", "par": "paralyzed", "slp": "asleep", "frz": "frozen", "psn": "poisoned",
                "tox": "badly poisoned", "fnt": "fainted"}
STAT_NAMES = (("atk", "Atk"), ("def", "Def"), ("spa", "SpA"), ("spd", "SpD"), ("spe", "Spe"))
BOOST_ORDER = ("atk", "def", "spa", "spd", "spe", "accuracy", "evasion")
WEATHER_NAMES = {"RAINDANCE": "Rain", "SUNNYDAY": "Sun", "SANDSTORM": "Sandstorm", "SNOWSCAPE": "Snow",
                 "HAIL": "Hail", "DESOLATELAND": "Extremely harsh sunlight", "PRIMORDIALSEA": "Heavy rain",
                 "DELTASTREAM": "Strong winds"}
LAYERED_CONDITIONS = {"SPIKES", "TOXIC_SPIKES"}


# --------------------------------------------------------------------------- Showdown's names and texts

@dataclass(frozen=True)
class ShowdownData:
    """Display names and move data of the pinned Showdown, by id."""

    moves: dict[str, dict[str, Any]] = field(default_factory=dict)
    items: dict[str, str] = field(default_factory=dict)
    abilities: dict[str, str] = field(default_factory=dict)
    species: dict[str, str] = field(default_factory=dict)


@functools.lru_cache(maxsize=1)
def showdown_data() -> ShowdownData:
    """The names and move data exported from the pinned Showdown at set-up, read once per process."""
    path = paths.generated_dir() / "showdown-data.json"
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return ShowdownData(raw["moves"], raw["items"], raw["abilities"], raw["species"])
    except (OSError, ValueError, KeyError) as err:
        log.warning("Could not read Showdown's data from %s (%s); the prompt uses poke-env's names and "
                    "no move descriptions. Run `make setup` (or `pokebench-server install`).", path, err)
        return ShowdownData()


def _to_id(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _prettify(identifier: str) -> str:
    return identifier.replace("_", " ").title() if identifier else identifier


def move_name(move_id: str) -> str:
    entry = showdown_data().moves.get(move_id)
    if entry:
        return entry["name"]
    try:
        return Move(move_id, 9).entry.get("name") or _prettify(move_id)
    except Exception:  # an id poke-env does not know, like "recharge"
        return _prettify(move_id)


def item_name(item_id: str | None) -> str:
    if not item_id:
        return "none"
    return showdown_data().items.get(item_id, _prettify(item_id))


def ability_name(ability_id: str) -> str:
    return showdown_data().abilities.get(_to_id(ability_id), _prettify(ability_id))


def type_name(kind: PokemonType | str | None) -> str:
    if kind is None:
        return "?"
    if isinstance(kind, str):
        return kind
    if kind is PokemonType.THREE_QUESTION_MARKS:
        return "???"
    return kind.name.title()


def species_name(mon: Pokemon, details: str | None = None) -> str:
    """The species as Showdown shows it ("Palkia-Origin"), from the details line when known."""
    details = details or getattr(mon, "_last_details", "") or ""
    if details:
        return details.split(",")[0].strip()
    return showdown_data().species.get(mon.species, mon.species)


# --------------------------------------------------------------------------- small formatters


def _percent(hp: int, max_hp: int) -> int:
    if hp <= 0 or max_hp <= 0:
        return 0
    return max(1, round(100 * hp / max_hp))


def _status_suffix(status: str | None) -> str:
    return f", {STATUS_NAMES.get(status, status)}" if status and status != "fnt" else ""


def _types_text(mon: Pokemon, tera: str | None) -> str:
    """``Flying (Terastallized)`` while Terastallized (`tera`), else the types (poke-env's, without its Tera flag)."""
    if tera:
        return f"{tera} (Terastallized)"
    return "/".join(type_name(t) for t in mon.base_types if t is not None)


def _boosts_line(mon: Pokemon, order: Sequence[str] = ()) -> str | None:
    """``  Stat changes: spa -4, atk -1``: in the order the stats first changed (`order`), then the others."""
    stats = [*order, *(k for k in BOOST_ORDER if k not in order)]
    boosts = [(k, v) for k in stats if (v := (mon.boosts or {}).get(k, 0))]
    return "  Stat changes: " + ", ".join(f"{k} {v:+d}" for k, v in boosts) if boosts else None


def move_details(move_id: str) -> str:
    """``Body Press (Fighting, Physical, 80 BP, 100% accuracy: Uses user's Def stat as Atk ...)``."""
    entry = showdown_data().moves.get(move_id)
    if entry is None:
        try:
            pe = Move(move_id, 9).entry
            entry = {"type": pe.get("type", "?"), "category": pe.get("category", "?"),
                     "basePower": pe.get("basePower", 0), "accuracy": pe.get("accuracy", True), "shortDesc": ""}
        except Exception:
            return move_name(move_id)
    parts = [str(entry["type"]), str(entry["category"])]
    if entry["category"] != "Status" and entry.get("basePower"):
        parts.append(f"{entry['basePower']} BP")
    accuracy = entry.get("accuracy", True)
    parts.append("never misses" if accuracy is True else f"{accuracy}% accuracy")
    desc = f": {entry['shortDesc']}" if entry.get("shortDesc") else ""
    return f"{move_name(move_id)} ({', '.join(parts)}{desc})"


# --------------------------------------------------------------------------- what the battle log showed


class Seen:
    """What the player's battle log showed (its :class:`BattleText`), where poke-env's state differs from it.

    Abilities from pop-ups (and Trace), stat-change order, the forme of an active Pokémon (Minior-Meteor,
    Cramorant-Gulping), Terastallization (ended by a faint), items and moves that events revealed, and
    Illusion's disguises undone. Without a renderer (a caller that keeps no battle log), poke-env's state is
    shown as it is and stat changes are in the fixed order.
    """

    def __init__(self, text: BattleText | None):
        self.text = text

    def ability(self, ident: str, mon: Pokemon) -> str | None:
        """The ability the opponent's Pokémon was shown with: only once a pop-up revealed it."""
        if self.text is None:
            return ability_name(mon.ability) if mon.ability else None
        return self.text.state.abilities_shown.get(key(ident))

    def order(self, ident: str) -> list[str]:
        return list(self.text.state.boost_order.get(key(ident), [])) if self.text is not None else []

    def species(self, ident: str, mon: Pokemon) -> str:
        """The species as shown: an active Pokémon's temporary forme too (Minior-Meteor)."""
        if self.text is not None and mon.active and (shown := self.text.state.species.get(key(ident))):
            return shown
        return species_name(mon)

    def own_species(self, own: OwnMon) -> str:
        """The player's own Pokémon as its request names it; the active one in its temporary forme too."""
        if self.text is not None and own.active and (shown := self.text.state.species.get(key(own.ident))):
            return shown
        return own.name

    def tera(self, ident: str, mon: Pokemon) -> str | None:
        """The Tera type of a Terastallized Pokémon, None if it is not (any more: a faint ends it)."""
        if self.text is not None:
            return self.text.state.tera.get(key(ident))
        return type_name(mon.tera_type) if mon.is_terastallized and mon.tera_type is not None else None

    def item(self, mon: Pokemon, ident: str) -> str | None:
        """poke-env's item id; an item only an event showed (Toxic Orb's status, Poltergeist) when it has none."""
        if mon.item == "unknown_item" and self.text is not None and (shown := self.text.revealed.items.get(key(ident))):
            return _to_id(shown)
        return mon.item

    def moves(self, ident: str, mon: Pokemon) -> list[str]:
        known = list(mon.moves)
        return self.text.revealed.moves(key(ident), known) if self.text is not None else known

    def hidden(self, ident: str) -> bool:
        """An opponent's Pokémon known only as Illusion's disguise: not seen at all."""
        return self.text is not None and self.text.revealed.hidden(key(ident))

    def health(self, ident: str, mon: Pokemon) -> tuple[int, int, str | None, bool]:
        """(HP, max HP, status, fainted) as seen: a disguised-as Pokémon's own, from before the disguise."""
        shown = self.text.revealed.restored_health(key(ident)) if self.text is not None else None
        if shown is not None:
            hp, max_hp, status = _parse_condition(shown, 100)
            return hp, max_hp, status, status == "fnt"
        status = mon.status.name.lower() if mon.status else None
        return mon.current_hp or 0, mon.max_hp or 100, status, mon.fainted

    def own(self, team: Sequence[OwnMon]) -> None:
        """Note what the player's own request shows: a transformed Pokémon's moves are its target's."""
        if self.text is not None:
            for own in team:
                if own.active:
                    self.text.revealed.transformed_moves(key(own.ident), own.moves)


# --------------------------------------------------------------------------- the player's own team (from the request)


@dataclass(frozen=True)
class OwnMon:
    """One Pokémon of the player's team, as Showdown's request describes it."""

    ident: str
    name: str
    level: int
    hp: int
    max_hp: int
    status: str | None
    active: bool
    stats: dict[str, int]
    moves: list[str]
    ability: str
    item: str
    tera_type: str | None
    terastallized: bool
    mon: Pokemon | None

    @property
    def fainted(self) -> bool:
        return self.status == "fnt" or self.hp <= 0


def _parse_condition(condition: str, fallback_max: int) -> tuple[int, int, str | None]:
    """``"227/302 par"`` -> (227, 302, "par"); ``"0 fnt"`` -> (0, max, "fnt")."""
    parts = condition.split()
    status = parts[1] if len(parts) > 1 else None
    if "/" in parts[0]:
        hp, max_hp = (int(x) for x in parts[0].split("/"))
        return hp, max_hp, status
    return 0, fallback_max, status or "fnt"


def own_team(battle: AbstractBattle) -> list[OwnMon]:
    """The player's team in Showdown's order (the active Pokémon first), from the last request."""
    side = (battle.last_request or {}).get("side", {})
    team = []
    for entry in side.get("pokemon", []):
        mon = battle.team.get(entry["ident"])
        details = entry.get("details", "")
        level_match = re.search(r", L(\d+)", details)
        hp, max_hp, status = _parse_condition(entry.get("condition", "0 fnt"), mon.max_hp if mon else 0)
        tera = entry.get("terastallized") or entry.get("teraType")
        team.append(OwnMon(
            ident=entry["ident"], name=details.split(",")[0].strip() or entry["ident"].split(": ", 1)[-1],
            level=int(level_match.group(1)) if level_match else 100, hp=hp, max_hp=max_hp, status=status,
            active=bool(entry.get("active")), stats=entry.get("stats", {}), moves=list(entry.get("moves", [])),
            ability=entry.get("ability") or entry.get("baseAbility") or "", item=entry.get("item", ""),
            tera_type=tera, terastallized=bool(entry.get("terastallized")), mon=mon,
        ))
    return team


def _own_types(own: OwnMon) -> str:
    if own.terastallized and own.tera_type:
        return f"{own.tera_type} (Terastallized)"
    return _types_text(own.mon, None) if own.mon is not None else "?"


def _own_header(own: OwnMon, tag: str, seen: Seen) -> str:
    name = seen.own_species(own)
    if own.fainted and own.active:  # a forced switch after a faint: it is no longer in the battle
        return f"- {name} [fainted]"
    health = "fainted" if own.fainted else f"HP {own.hp}/{own.max_hp} ({_percent(own.hp, own.max_hp)}%){_status_suffix(own.status)}"
    return f"- {name} [{tag}], {_own_types(own)}, L{own.level}, {health}"


def _own_full(own: OwnMon, seen: Seen) -> list[str]:
    lines = [_own_header(own, "ACTIVE" if own.active else "bench", seen)]
    tera = f"{own.tera_type} (terastallized)" if own.terastallized else (own.tera_type or "unknown")
    lines.append(f"  Ability: {ability_name(own.ability)}, Item: {item_name(own.item)}, Tera type: {tera}")
    lines.append("  Stats: " + ", ".join(f"{label} {own.stats[key]}" for key, label in STAT_NAMES if key in own.stats))
    if own.active and not own.fainted and own.mon is not None and (boosts := _boosts_line(own.mon, seen.order(own.ident))):
        lines.append(boosts)
    if own.active and not own.fainted:
        lines.append("  Moves: " + "; ".join(move_details(m) for m in own.moves))
    else:
        lines.append("  Moves: " + "; ".join(move_name(m) for m in own.moves))
    return lines


def _own_short(own: OwnMon) -> str:
    if own.fainted:
        return f"{own.name} fainted"
    return f"{own.name} {own.hp}/{own.max_hp} ({_percent(own.hp, own.max_hp)}%){_status_suffix(own.status)}"


# --------------------------------------------------------------------------- the opponent, as far as seen


def _opp_hp(health: tuple[int, int, str | None, bool]) -> str:
    hp, max_hp, status, fainted = health
    return "fainted" if fainted else f"HP {_percent(hp, max_hp)}%{_status_suffix(status)}"


def _opp_entry(mon: Pokemon, ident: str, tag: str, seen: Seen) -> list[str]:
    health = seen.health(ident, mon)
    if health[3] and tag == "ACTIVE":  # fainted, not replaced yet
        tag = "fainted"
    lines = [f"- {seen.species(ident, mon)} [{tag}], {_types_text(mon, seen.tera(ident, mon))}, L{mon.level}, "
             f"{_opp_hp(health)}"]
    known = []
    if ability := seen.ability(ident, mon):
        known.append(f"Ability: {ability}")
    if (item := seen.item(mon, ident)) != "unknown_item":  # None or "": seen to have none (knocked off, used up)
        known.append(f"Item: {item_name(item)}")
    if known:
        lines.append("  " + ", ".join(known))
    if mon.active and not mon.fainted and (boosts := _boosts_line(mon, seen.order(ident))):
        lines.append(boosts)
    moves = [move_name(m) for m in seen.moves(ident, mon)]
    lines.append("  Moves seen: " + ("; ".join(moves) if moves else "none yet"))
    return lines


def _opponent_mons(battle: AbstractBattle, seen: Seen) -> tuple[tuple[str, Pokemon] | None, list[tuple[str, Pokemon]], int]:
    """((ident, active), the others seen in order of appearance, how many not seen yet).

    A Pokémon known only as Illusion's disguise is not seen: it is left out and counted as not seen yet.
    """
    mons = [(i, m) for i, m in battle.opponent_team.items() if not seen.hidden(i)]
    active = next(((i, m) for i, m in mons if m is battle.opponent_active_pokemon), None)
    others = [(i, m) for i, m in mons if m is not battle.opponent_active_pokemon]
    size = battle._team_size.get(battle.opponent_role or "", 6) if hasattr(battle, "_team_size") else 6
    return active, others, max(0, size - len(mons))


def _opp_short(mon: Pokemon, ident: str, seen: Seen) -> str:
    hp, max_hp, status, fainted = seen.health(ident, mon)
    if fainted:
        return f"{seen.species(ident, mon)} fainted"
    return f"{seen.species(ident, mon)} {_percent(hp, max_hp)}%{_status_suffix(status)}"


def _unseen(count: int) -> str:
    return f"{count} Pokémon not seen yet"


# --------------------------------------------------------------------------- the field


def _since(turn: int) -> str:
    """When a field condition started: "since turn 3", or "since the start" when set as the leads came in."""
    return f"since turn {turn}" if turn else "since the start"


def field_lines(battle: AbstractBattle) -> list[str]:
    """The ``FIELD`` block (hazards, screens, weather, terrain, rooms), or nothing when all is clear."""
    lines = []
    for weather in battle.weather:  # no "since": poke-env moves its turn forward at every upkeep message
        if weather.name != "UNKNOWN":
            lines.append(f"Weather: {WEATHER_NAMES.get(weather.name, _prettify(weather.name))}")
    terrains = [(f, t) for f, t in battle.fields.items() if f.name.endswith("_TERRAIN")]
    others = [(f, t) for f, t in battle.fields.items() if not f.name.endswith("_TERRAIN") and f.name != "UNKNOWN"]
    for terrain, since in terrains:
        lines.append(f"Terrain: {_prettify(terrain.name)} ({_since(since)})")
    if others:
        lines.append("Field effects: " + "; ".join(f"{_prettify(f.name)} ({_since(t)})" for f, t in others))

    def side(conditions: dict[Any, int]) -> str:
        parts = []
        for cond, value in conditions.items():
            if cond.name == "UNKNOWN":
                continue
            if cond.name in LAYERED_CONDITIONS:
                parts.append(f"{_prettify(cond.name)} ({value} layer{'s' if value != 1 else ''})")
            elif cond.name in ("STEALTH_ROCK", "STICKY_WEB"):
                parts.append(_prettify(cond.name))
            else:
                parts.append(f"{_prettify(cond.name)} ({_since(value)})")
        return "; ".join(parts)

    me, them = side_label(battle.player_role), side_label(battle.opponent_role)
    if mine := side(battle.side_conditions):
        lines.append(f"Your side ({me}): {mine}")
    if theirs := side(battle.opponent_side_conditions):
        lines.append(f"Opponent's side ({them}): {theirs}")
    return ["FIELD", *lines] if lines else []


# --------------------------------------------------------------------------- legal actions


@dataclass(frozen=True)
class LegalAction:
    """One numbered action: its text as listed, and what poke-env needs to send it."""

    text: str
    target: Move | Pokemon
    terastallize: bool = False


def legal_actions(battle: AbstractBattle) -> list[LegalAction]:
    """Moves, then each move with Terastallize, then switches (the order of the method's sample)."""
    actions: list[LegalAction] = []
    if not battle.force_switch and battle.active_pokemon is not None:
        requested = {m["id"]: m["move"] for m in (battle.last_request.get("active") or [{}])[0].get("moves", [])}
        names = {m.id: requested.get(m.id) or move_name(m.id) for m in battle.available_moves}
        actions += [LegalAction(f"move {names[m.id]}", m) for m in battle.available_moves]
        if battle.can_tera:  # the type Showdown's request names (poke-env knows a Tera type only once used)
            offered = (battle.last_request.get("active") or [{}])[0].get("canTerastallize")
            tera = offered if isinstance(offered, str) else battle.active_pokemon.tera_type
            actions += [LegalAction(f"move {names[m.id]} + Terastallize ({type_name(tera)})", m, True)
                        for m in battle.available_moves]
    if not battle.trapped:
        details = {e["ident"]: e.get("details") for e in battle.last_request.get("side", {}).get("pokemon", [])}
        verb = "revive" if battle.reviving else "switch"  # Revival Blessing: the choices are fainted Pokémon
        for mon in battle.available_switches:
            ident = next((i for i, m in battle.team.items() if m is mon), None)
            actions.append(LegalAction(f"{verb} {species_name(mon, details.get(ident))}", mon))
    return actions


def actions_block(actions: Sequence[LegalAction]) -> list[str]:
    return ["YOUR LEGAL ACTIONS", *(f"{i}. {a.text}" for i, a in enumerate(actions, 1))]


# --------------------------------------------------------------------------- the messages


def side_label(role: str | None) -> str:
    return {"p1": "Player 1", "p2": "Player 2"}.get(role or "", "Player ?")


def _events(lines: Iterable[str]) -> list[str]:
    lines = list(lines)
    return lines if lines else ["(nothing new)"]


def first_message(battle: AbstractBattle, log_lines: Iterable[str], text: BattleText | None = None) -> str:
    """The first message of a game (method §3): log, whole team, opponent, field, legal actions.

    `text` is the renderer that wrote the player's battle log: the opponent's abilities are the ones its
    pop-ups showed, and stat changes are listed in the order it saw them.
    """
    seen = Seen(text)
    team = own_team(battle)
    seen.own(team)
    active, others, unseen = _opponent_mons(battle, seen)
    out = ["BATTLE LOG", *_events(log_lines), "", f"CURRENT STATE (turn {battle.turn})",
           f"YOUR TEAM ({side_label(battle.player_role)}):"]
    for own in team:
        out += _own_full(own, seen)
    out += ["", f"OPPONENT'S TEAM ({side_label(battle.opponent_role)}), as far as you have seen it:"]
    if active is not None:
        out += _opp_entry(active[1], active[0], "ACTIVE", seen)
    for ident, mon in others:
        out += _opp_entry(mon, ident, "bench", seen)
    if unseen:
        out.append(f"- {_unseen(unseen)}")
    if block := field_lines(battle):
        out += ["", *block]
    out += ["", *actions_block(legal_actions(battle)), "", CLOSING_LINE]
    return "\n".join(out)


def later_message(battle: AbstractBattle, new_lines: Iterable[str], text: BattleText | None = None) -> str:
    """A later message (method §3): new events, the state now in short form, legal actions (`text`: as above)."""
    seen = Seen(text)
    team = own_team(battle)
    seen.own(team)
    active_own = [o for o in team if o.active]
    bench = [o for o in team if not o.active]
    active, others, unseen = _opponent_mons(battle, seen)
    out = ["NEW EVENTS", *_events(new_lines), "", f"STATE NOW (turn {battle.turn})", "YOUR ACTIVE POKÉMON:"]
    for own in active_own:
        out.append(_own_header(own, "ACTIVE", seen))
        if own.fainted:
            continue
        if own.mon is not None and (boosts := _boosts_line(own.mon, seen.order(own.ident))):
            out.append(boosts)
        out.append("  Moves: " + "; ".join(move_name(m) for m in own.moves))
    out.append("YOUR BENCH: " + ("; ".join(_own_short(o) for o in bench) or "none"))
    out += ["", f"OPPONENT ({side_label(battle.opponent_role)}):"]
    out += _opp_entry(active[1], active[0], "ACTIVE", seen) if active is not None else ["- no active Pokémon"]
    also = [_opp_short(m, i, seen) for i, m in others] + ([_unseen(unseen)] if unseen else [])
    out.append("ALSO SEEN: " + ("; ".join(also) or "none"))
    if block := field_lines(battle):
        out += ["", *block]
    out += ["", *actions_block(legal_actions(battle)), "", CLOSING_LINE]
    return "\n".join(out)


def reask_message(problem: str) -> str:
    """The message after an answer that names no legal action."""
    return (f"ERROR: {problem} Answer again with only the ACTION line and the REASON line. The ACTION is "
            "the number of one legal action listed above, or its text exactly as listed.")


def refusal_message(error: str, refused: str | None, actions: Sequence[LegalAction],
                    new_lines: Sequence[str] = ()) -> str:
    """The message after the simulator refused a choice: Showdown's own error, then the legal actions."""
    what = f' "{refused}"' if refused else ""
    out = [f"ERROR: Showdown refused your choice{what}: {error}"]
    if new_lines:
        out += ["", "NEW EVENTS", *new_lines]
    out += ["", *actions_block(actions), "", CLOSING_LINE]
    return "\n".join(out)
