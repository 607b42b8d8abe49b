"""Showdown's battle-text templates ("[POKEMON] used [MOVE]!"), exported from the pinned server at set-up.

The words are the pinned server's own ``dist/data/text/*.js`` (written to the generated folder by
``showdown-server/scripts/export_text.js``), looked up by effect and kind as the Showdown client
looks them up.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from pokebench import paths
from pokebench.text.protocol import effect_id

__all__ = ["BattleTextError", "load_templates", "lookup", "fill", "PLACEHOLDER", "OWN", "NODEFAULT"]

OWN, NODEFAULT = "\x01OWN", "\x01NODEFAULT"  # namespaces of lookup() with a special meaning
PLACEHOLDER = re.compile(r"\[(?:TRAINER|NICKNAME|NUMBER|FULLNAME|POKEMON|TARGET|MOVE|ABILITY|ITEM|SPECIES|TYPE|"
                         r"EFFECT|TEAM|SOURCE|PERCENTAGE|STAT|NAME|PARTY)\]")


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


def lookup(table: dict[str, dict[str, str]], kind: str, *namespaces: str | None) -> str:
    """The template `kind` of the first effect that has one, else the default one (client rules).

    ``OWN`` asks for the default's "<kind>Own" variant, ``NODEFAULT`` stops the search with "".
    A template "#other" refers to another effect's template of the same kind.
    """
    for namespace in namespaces:
        if namespace == OWN:
            return table["default"].get(kind + "Own", "")
        if namespace == NODEFAULT:
            return ""
        entry = table.get(effect_id(namespace), {}) if namespace else {}
        if kind in entry:
            text = entry[kind]
            return table.get(text[1:], {}).get(kind, "") if text.startswith("#") else text
    return table["default"].get(kind, "")


def fill(template: str, **values: str | None) -> str:
    """Replace each ``[KEY]`` whose value is given (None leaves the placeholder)."""
    for name, value in values.items():
        if value is not None:
            template = template.replace(f"[{name}]", value)
    return template
