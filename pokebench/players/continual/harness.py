"""The harness of a Continual Harness player, its budgets, and how the player reads it.

The four parts of the paper (Shi et al. 2026), each with its own budget:

- ``strategy``: a text the refiner rewrites whole (PokéBench's system prompt is never changed:
  the harness goes in front of a game's first user message);
- ``memory``: entries with an importance (1 to 5), added, updated, demoted or removed;
- ``skills``: named procedures with when to use them;
- ``subagents``: named advisors with their own instructions, which the player may consult
  during a decision (see :mod:`pokebench.players.continual.subagents`).

A :class:`Harness` is a value: the refiner makes a new one from an old one by edits
(:mod:`pokebench.players.continual.edits`), and every version is kept whole
(:mod:`pokebench.players.continual.versions`).
"""

from __future__ import annotations

from typing import Collection, Iterable

from pydantic import BaseModel, ConfigDict, Field

#: The four parts, each with its refiner pass (:data:`pokebench.players.continual.edits.PASSES`).
PART_PASSES = {"strategy": "prompt", "memory": "memory", "skills": "skills", "advisors": "subagents"}
#: What an ablation can switch off (player option ``without``): the four parts and the failure-signature mining.
SWITCHES = (*PART_PASSES, "signatures")


class Budgets(BaseModel):
    """Size limits of each part (what the model reads at the start of every game); a part with a budget of 0 is off."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy_chars: int = Field(default=1200, ge=0)
    memory_entries: int = Field(default=24, ge=0)
    memory_chars: int = Field(default=240, ge=0)
    skills: int = Field(default=8, ge=0)
    skill_name_chars: int = Field(default=48, ge=0)
    skill_chars: int = Field(default=480, ge=0)
    subagents: int = Field(default=3, ge=0)
    subagent_chars: int = Field(default=800, ge=0)
    edits_per_pass: int = Field(default=12, ge=0)
    #: Texts at least this similar (difflib ratio of their normalised words) are near-duplicates: merged.
    duplicate_ratio: float = Field(default=0.8, ge=0, le=1)

    def empty_parts(self) -> set[str]:
        """The parts that can hold nothing under these budgets."""
        zero = {"strategy": [self.strategy_chars], "memory": [self.memory_entries, self.memory_chars],
                "skills": [self.skills, self.skill_name_chars, self.skill_chars],
                "advisors": [self.subagents, self.subagent_chars]}
        return {part for part, limits in zero.items() if self.edits_per_pass == 0 or 0 in limits}


def switched_on(without: Iterable[str], budgets: Budgets, advisors_usable: bool = True) -> tuple[str, ...]:
    """The parts (and "signatures") on, in order: not listed in `without`, not of budget 0, and the advisors
    only when they can be consulted. ValueError for a name that is not a switch."""
    off = list(without)
    unknown = [name for name in off if name not in SWITCHES]
    if unknown:
        raise ValueError(f"without: {unknown} are not parts of the harness; they are {', '.join(SWITCHES)}")
    empty = budgets.empty_parts() | (set() if advisors_usable else {"advisors"})
    parts = [p for p in PART_PASSES if p not in off and p not in empty]
    return (*parts, *(["signatures"] if "signatures" not in off and parts else []))


class MemoryEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    importance: int = Field(ge=1, le=5)


class Skill(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    when: str
    steps: str


class SubAgent(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z][a-z0-9_]{0,31}$")
    when: str
    instructions: str


class Harness(BaseModel):
    """One version of the harness's content."""

    model_config = ConfigDict(extra="forbid")

    strategy: str = ""
    memory: list[MemoryEntry] = Field(default_factory=list)
    skills: list[Skill] = Field(default_factory=list)
    subagents: list[SubAgent] = Field(default_factory=list)
    next_memory_id: int = 1

    def is_empty(self) -> bool:
        return not (self.strategy or self.memory or self.skills or self.subagents)

    def memory_by_importance(self) -> list[MemoryEntry]:
        return sorted(self.memory, key=lambda m: (-m.importance, int(m.id[1:]) if m.id[1:].isdigit() else 0))

    def render(self, with_ids: bool = False, parts: Collection[str] = tuple(PART_PASSES)) -> str:
        """The sections of the `parts` on, as the player (and, with ids, the refiner) reads them."""
        sections = {
            "strategy": [self.strategy or "(none yet)"],
            "memory": [f"- {f'[{m.id}] ' if with_ids else ''}(importance {m.importance}) {m.text}"
                       for m in self.memory_by_importance()] or ["(none yet)"],
            "skills": [f"- {s.name} — when: {s.when} — how: {s.steps}" for s in self.skills] or ["(none yet)"],
            "advisors": [f"- {a.name} — consult when: {a.when}"
                         + (f" — instructions: {a.instructions}" if with_ids else "")
                         for a in self.subagents] or ["(none yet)"],
        }
        return "\n\n".join("\n".join([part.upper(), *lines]) for part, lines in sections.items() if part in parts)


def _listing(parts: Collection[str]) -> str:
    names = [p for p in PART_PASSES if p in parts]
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def origin(mode: str, version: int, loaded: bool, learned_before: bool) -> str:
    """Where a version's contents came from, truthfully: written in this run, loaded, or both.

    `loaded`: version 0 was loaded (frozen, continue); `learned_before`: it was learned from games of
    another run (a harness written by hand was not)."""
    before = ("a harness learned before this run, from other games" if learned_before
              else "a harness written before this run")
    if not loaded:
        return ("you wrote them after earlier games of this run, from what happened in them" if version
                else "you write them after each epoch of this run, from what happens in its games; nothing is "
                     "written yet")
    if mode == "frozen":
        return f"they were loaded from {before}, and they do not change during this run"
    if version == 0:
        return f"they were loaded from {before}; you refine them after each epoch of this run"
    return f"they started from {before}, and you refined them after earlier games of this run"


def harness_block(harness: Harness, version: int, epoch: int | None, consult: bool,
                  parts: Collection[str] = tuple(PART_PASSES), where_from: str | None = None) -> str:
    """What the player reads in front of the first message of a game that uses this harness ("" with no part on)."""
    if not any(p in parts for p in PART_PASSES):
        return ""
    where = f"version {version}" + (f", used by every game of epoch {epoch} of this run" if epoch is not None else "")
    advisors = ("You may consult an advisor with the `consult` tool before you answer; each consultation is one "
                "more request.\n" if consult and harness.subagents and "advisors" in parts else "")
    said = where_from or origin("scratch", version, False, False)
    return (f"YOUR HARNESS ({where})\n"
            f"Your own {_listing(parts)}: {said}. Use them where they help.\n" + advisors + "\n"
            + harness.render(parts=parts) + "\n\n")
