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

from pydantic import BaseModel, ConfigDict, Field


class Budgets(BaseModel):
    """Size limits of each part (what the model reads at the start of every game)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    strategy_chars: int = 1200
    memory_entries: int = 24
    memory_chars: int = 240
    skills: int = 8
    skill_name_chars: int = 48
    skill_chars: int = 480
    subagents: int = 3
    subagent_chars: int = 800
    edits_per_pass: int = 12
    #: Texts at least this similar (difflib ratio of their normalised words) are near-duplicates: merged.
    duplicate_ratio: float = 0.8


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

    def render(self, with_ids: bool = False) -> str:
        """The four sections as the player (and, with ids, the refiner) reads them."""
        memory = [f"- {f'[{m.id}] ' if with_ids else ''}(importance {m.importance}) {m.text}"
                  for m in self.memory_by_importance()] or ["(none yet)"]
        skills = [f"- {s.name} — when: {s.when} — how: {s.steps}" for s in self.skills] or ["(none yet)"]
        advisors = [f"- {a.name} — consult when: {a.when}" + (f" — instructions: {a.instructions}" if with_ids else "")
                    for a in self.subagents] or ["(none yet)"]
        return "\n".join(["STRATEGY", self.strategy or "(none yet)", "", "MEMORY", *memory, "", "SKILLS", *skills,
                          "", "ADVISORS", *advisors])


def harness_block(harness: Harness, version: int, epoch: int | None, consult: bool) -> str:
    """What the player reads in front of the first message of a game that uses this harness."""
    where = f"version {version}" + (f", used by every game of epoch {epoch} of this run" if epoch is not None else "")
    advisors = ("You may consult an advisor with the `consult` tool before you answer; each consultation is one "
                "more request.\n" if consult and harness.subagents else "")
    return (f"YOUR HARNESS ({where})\n"
            "Your own strategy, memory, skills and advisors: you wrote them after earlier games of this run, "
            "from what happened in them. Use them where they help.\n" + advisors + "\n"
            + harness.render() + "\n\n")
