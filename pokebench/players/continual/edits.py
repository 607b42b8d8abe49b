"""The refiner's edits: one JSON schema per pass (pydantic), validated, budgeted, applied.

Each pass answers ``{"edits": [...]}``. An edit that does not match its pass's schema, names
an entry that does not exist, or breaks a budget is **rejected and recorded** (with why),
never applied. Applied edits are recorded as ``{"edit", "old", "new"}`` so that a version's
history shows what changed. Near-duplicates (see :func:`similar`) are merged instead of
added: a memory entry or skill that says what an existing one says updates that one.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from pokebench.players.continual.harness import Budgets, Harness, MemoryEntry, Skill, SubAgent

PASSES = ("prompt", "memory", "skills", "subagents")


class _Edit(BaseModel):
    model_config = ConfigDict(extra="forbid")


# ---- pass 1: the strategy prompt ---------------------------------------------------------------
class RewriteStrategy(_Edit):
    op: Literal["rewrite"]
    text: str


# ---- pass 2: memory ------------------------------------------------------------------------------
class AddMemory(_Edit):
    op: Literal["add"]
    text: str
    importance: int = Field(ge=1, le=5)


class UpdateMemory(_Edit):
    op: Literal["update"]
    id: str
    text: str | None = None
    importance: int | None = Field(default=None, ge=1, le=5)


class DemoteMemory(_Edit):
    op: Literal["demote"]
    id: str


class RemoveMemory(_Edit):
    op: Literal["remove"]
    id: str


# ---- pass 3: skills ------------------------------------------------------------------------------
class AddSkill(_Edit):
    op: Literal["add"]
    name: str
    when: str
    steps: str


class UpdateSkill(_Edit):
    op: Literal["update"]
    name: str
    when: str | None = None
    steps: str | None = None


class RemoveSkill(_Edit):
    op: Literal["remove"]
    name: str


# ---- pass 4: sub-agents --------------------------------------------------------------------------
class AddSubAgent(_Edit):
    op: Literal["add"]
    name: str
    when: str
    instructions: str


class UpdateSubAgent(_Edit):
    op: Literal["update"]
    name: str
    when: str | None = None
    instructions: str | None = None


class RemoveSubAgent(_Edit):
    op: Literal["remove"]
    name: str


_BY_OP = Field(discriminator="op")  # an edit's class is chosen by its "op"
SCHEMAS: dict[str, TypeAdapter[Any]] = {
    "prompt": TypeAdapter(Annotated[RewriteStrategy, _BY_OP]),
    "memory": TypeAdapter(Annotated[AddMemory | UpdateMemory | DemoteMemory | RemoveMemory, _BY_OP]),
    "skills": TypeAdapter(Annotated[AddSkill | UpdateSkill | RemoveSkill, _BY_OP]),
    "subagents": TypeAdapter(Annotated[AddSubAgent | UpdateSubAgent | RemoveSubAgent, _BY_OP]),
}

#: The answer format of each pass, as its prompt shows it.
FORMATS = {
    "prompt": '{"op": "rewrite", "text": "<the whole new strategy>"}',
    "memory": '{"op": "add", "text": "...", "importance": 1-5} | {"op": "update", "id": "m3", "text": "...", '
              '"importance": 1-5} (text or importance or both) | {"op": "demote", "id": "m3"} | '
              '{"op": "remove", "id": "m3"}',
    "skills": '{"op": "add", "name": "...", "when": "...", "steps": "..."} | {"op": "update", "name": "...", '
              '"when": "...", "steps": "..."} | {"op": "remove", "name": "..."}',
    "subagents": '{"op": "add", "name": "lower_case_name", "when": "...", "instructions": "..."} | '
                 '{"op": "update", "name": "...", "when": "...", "instructions": "..."} | '
                 '{"op": "remove", "name": "..."}',
}


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9']+", text.lower()))


def similar(a: str, b: str, ratio: float) -> bool:
    """Near-duplicates: the same words, or word sequences at least `ratio` alike (difflib)."""
    wa, wb = _words(a), _words(b)
    if wa == wb:
        return True
    return difflib.SequenceMatcher(None, wa, wb, autojunk=False).ratio() >= ratio


def one_line(text: str) -> str:
    return " ".join(text.split())


@dataclass
class PassResult:
    """A pass's new harness, its applied edits (old -> new) and its rejected ones (with why)."""

    harness: Harness
    applied: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[dict[str, Any]] = field(default_factory=list)


class Rejected(ValueError):
    """An edit that cannot be applied; the message says why."""


def _limit(value: str, limit: int, what: str) -> str:
    value = one_line(value)
    if not value:
        raise Rejected(f"{what} is empty")
    if len(value) > limit:
        raise Rejected(f"{what} is {len(value)} characters; the budget is {limit}")
    return value


def apply_pass(harness: Harness, pass_name: str, edits: Any, budgets: Budgets) -> PassResult:
    """Validate `edits` against the pass's schema and apply the valid ones to a copy of `harness`."""
    result = PassResult(harness.model_copy(deep=True))
    if not isinstance(edits, list):
        result.rejected.append({"edit": edits, "why": "'edits' must be a list"})
        return result
    schema = SCHEMAS[pass_name]
    for n, raw in enumerate(edits):
        try:
            if n >= budgets.edits_per_pass:
                raise Rejected(f"more than {budgets.edits_per_pass} edits in one pass")
            try:
                edit = schema.validate_python(raw)
            except ValidationError as err:
                problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in err.errors())
                raise Rejected(f"not a valid {pass_name} edit ({problems})") from None
            old, new = _APPLY[pass_name](result.harness, edit, budgets)
        except Rejected as err:
            result.rejected.append({"edit": raw, "why": str(err)})
            continue
        result.applied.append({"edit": raw, "old": old, "new": new})
    return result


def _merged(old: dict[str, Any], twin: BaseModel) -> tuple[Any, Any]:
    """A near-duplicate merged into `twin` (which now holds the merge); rejected when it adds nothing."""
    new = twin.model_dump()
    if new == old:
        raise Rejected(f"a near-duplicate of {old.get('id') or old.get('name')!r}, with nothing new")
    return old, {**new, "merged": True}


def _strategy(h: Harness, edit: RewriteStrategy, b: Budgets) -> tuple[Any, Any]:
    text = edit.text.strip()
    if len(text) > b.strategy_chars:
        raise Rejected(f"the strategy is {len(text)} characters; the budget is {b.strategy_chars}")
    old, h.strategy = h.strategy, text
    return old, text


def _memory(h: Harness, edit: Any, b: Budgets) -> tuple[Any, Any]:
    if isinstance(edit, AddMemory):
        text = _limit(edit.text, b.memory_chars, "the entry's text")
        twin = next((m for m in h.memory if similar(m.text, text, b.duplicate_ratio)), None)
        if twin is not None:  # a near-duplicate: merge into the existing entry
            old = twin.model_dump()
            twin.text, twin.importance = (text if len(text) >= len(twin.text) else twin.text,
                                          max(twin.importance, edit.importance))
            return _merged(old, twin)
        entry = MemoryEntry(id=f"m{h.next_memory_id}", text=text, importance=edit.importance)
        if len(h.memory) >= b.memory_entries:
            if not h.memory:
                raise Rejected("memory holds no entries (its budget, memory_entries, is 0)")
            weakest = min(h.memory, key=lambda m: m.importance)
            if weakest.importance >= entry.importance:
                raise Rejected(f"memory is full ({b.memory_entries} entries) and none is less important; "
                               "remove or demote one first")
            h.memory.remove(weakest)
            evicted: Any = weakest.model_dump()
        else:
            evicted = None
        h.next_memory_id += 1
        h.memory.append(entry)
        return evicted, entry.model_dump()
    target = next((m for m in h.memory if m.id == edit.id), None)
    if target is None:
        raise Rejected(f"there is no memory entry {edit.id!r} (ids: {', '.join(m.id for m in h.memory) or 'none'})")
    old = target.model_dump()
    if isinstance(edit, RemoveMemory) or (isinstance(edit, DemoteMemory) and target.importance == 1):
        h.memory.remove(target)
        return old, None
    if isinstance(edit, DemoteMemory):
        target.importance -= 1
    else:
        if edit.text is None and edit.importance is None:
            raise Rejected("an update needs a text or an importance")
        if edit.text is not None:
            target.text = _limit(edit.text, b.memory_chars, "the entry's text")
        if edit.importance is not None:
            target.importance = edit.importance
    return old, target.model_dump()


def _named(items: list[Any], name: str, what: str) -> Any:
    found = next((i for i in items if i.name == name), None)
    if found is None:
        raise Rejected(f"there is no {what} {name!r} ({what}s: {', '.join(i.name for i in items) or 'none'})")
    return found


@dataclass(frozen=True)
class _NamedPart:
    """A part made of named items (skills, advisors): add, update, remove; near-duplicates merged."""

    attr: str  # the Harness field
    what: str  # how messages name an item
    model: type[Skill] | type[SubAgent]
    fields: dict[str, str]  # text field -> the Budgets field of its limit
    body: str  # the field compared for near-duplicates (with the name)
    cap: str  # the Budgets field of the number of items

    def name(self, raw: str, b: Budgets) -> str:
        if self.model is SubAgent:
            if not re.fullmatch(r"[a-z][a-z0-9_]{0,31}", raw):
                raise Rejected("an advisor's name is lower case letters, digits and _ (at most 32), "
                               "starting with a letter")
            return raw
        return _limit(raw, b.skill_name_chars, f"the {self.what}'s name")

    def __call__(self, h: Harness, edit: Any, b: Budgets) -> tuple[Any, Any]:
        items: list[Any] = getattr(h, self.attr)
        if edit.op == "add":
            name = self.name(edit.name, b)
            values = {f: _limit(getattr(edit, f), getattr(b, limit), f"'{f}'") for f, limit in self.fields.items()}
            twin = next((i for i in items if similar(i.name, name, b.duplicate_ratio)
                         or similar(getattr(i, self.body), values[self.body], b.duplicate_ratio)), None)
            if twin is not None:  # a near-duplicate: merge into the existing item
                old = twin.model_dump()
                for f, value in values.items():
                    setattr(twin, f, value)
                return _merged(old, twin)
            if len(items) >= getattr(b, self.cap):
                raise Rejected(f"at most {getattr(b, self.cap)} {self.what}s: remove or merge one first")
            item = self.model(name=name, **values)
            items.append(item)
            return None, item.model_dump()
        target = _named(items, edit.name, self.what)
        old = target.model_dump()
        if edit.op == "remove":
            items.remove(target)
            return old, None
        given = {f: getattr(edit, f) for f in self.fields if getattr(edit, f) is not None}
        if not given:
            raise Rejected(f"an update needs {' or '.join(repr(f) for f in self.fields)}")
        for f, value in given.items():
            setattr(target, f, _limit(value, getattr(b, self.fields[f]), f"'{f}'"))
        return old, target.model_dump()


_skills = _NamedPart("skills", "skill", Skill, {"when": "skill_chars", "steps": "skill_chars"}, "steps", "skills")
_subagents = _NamedPart("subagents", "advisor", SubAgent, {"when": "skill_chars", "instructions": "subagent_chars"},
                        "instructions", "subagents")


_APPLY: dict[str, Callable[[Harness, Any, Budgets], tuple[Any, Any]]] = {"prompt": _strategy, "memory": _memory, "skills": _skills, "subagents": _subagents}
