"""The walk of one run config through PokéBench's packages: which package calls which, and where control climbs back.

    .venv/bin/python benchmarks/run_walk.py [--pairs 1] [--run bots-smoke] [key=value ...]

Plays ``python -m pokebench +run=RUN pairs=N`` in this process, in a temporary folder (the run and its
published site are thrown away), under ``sys.setprofile`` and ``threading.setprofile``, and records every
call into a function of ``pokebench/`` whose caller is in another first-level package (``play``,
``results``, ``site``, ``paths``, ``__main__``...). The caller is the nearest ``pokebench`` function on the
calling thread's stack: a call made through a library (Hydra calling ``__main__.play``, asyncio resuming a
task, poke-env asking a player for its move) is counted from the ``pokebench`` function below it (for a
task: the function running the event loop), and a call with none below it (a thread of poke-env's) is not
counted. A generator or coroutine counts when it starts, not at every resume; a module's body run by an
import is not a call. Printed:

- the cross-package edges (caller -> callee, functions by module and qualified name) in first-seen order,
  with how many calls went along each;
- the rooms: per package, how many distinct edges enter it ("entered N times", as one reads the code) and
  how many calls they carried, for the run (the edges first seen before ``__main__`` calls the publish)
  and for its publish;
- the climbs back: edges whose callee's package sits on a higher floor than the caller's in
  ``tests/test_layout.py``'s ``FLOORS`` (the floors the import graph must respect: a package imports only
  its own floor and those below). Control that climbs is a call the import direction forbids, made through
  an object or callback handed down (a ``GameSpec`` method defined in ``play/`` run by ``results/``, a
  publisher of ``results/`` that builds ``site/`` pages), i.e. a step back up the flow
  config -> play -> store -> publish -> site. A return is never a climb.

The floors are read from this checkout's ``tests/test_layout.py``; the ``pokebench`` walked is the one
Python imports (``PYTHONPATH=/path/to/other/checkout`` walks another version with this script).
"""

from __future__ import annotations

import argparse
import dis
import importlib.util
import inspect
import os
import runpy
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import CodeType, FrameType, ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
_RESUMABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR


def _layout() -> ModuleType:
    """This checkout's tests/test_layout.py (its FLOORS, RANK and package_of), loaded as a module."""
    spec = importlib.util.spec_from_file_location("test_layout", REPO / "tests" / "test_layout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _first_resume(code: CodeType) -> int:
    """The offset where a generator or coroutine starts its body (its first RESUME)."""
    return next((i.offset for i in dis.get_instructions(code) if i.opname == "RESUME"), -1)


class Walk:
    """The cross-package calls seen while the profile function is installed."""

    def __init__(self, root: Path, package_of: Any) -> None:
        self.root = root
        self.package_of = package_of
        self.edges: Counter[tuple[str, str]] = Counter()  # (caller, callee) -> calls, in first-seen order
        self.calls: Counter[str] = Counter()  # function -> calls, from anywhere
        self.package: dict[str, str] = {}  # function name -> its package
        self._where: dict[CodeType, str | None] = {}
        self._starts: dict[CodeType, int] = {}

    def _function(self, code: CodeType) -> str | None:
        """``play.runner.run`` for a code object of pokebench/, else None (cached per code object)."""
        if code not in self._where:
            path = Path(code.co_filename)
            name = None
            if path.suffix == ".py" and path.is_relative_to(self.root):
                parts = ("pokebench", *path.relative_to(self.root).with_suffix("").parts)
                module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                name = f"{module.removeprefix('pokebench.')}.{getattr(code, 'co_qualname', code.co_name)}"
                self.package.setdefault(name, self.package_of(module))
            self._where[code] = name
        return self._where[code]

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = self._function(frame.f_code)
        if callee is None:
            return
        if frame.f_code.co_flags & _RESUMABLE:
            start = self._starts.setdefault(frame.f_code, _first_resume(frame.f_code))
            if frame.f_lasti > start:  # a resume, not a start
                return
        self.calls[callee] += 1
        back = frame.f_back
        while back is not None and self._function(back.f_code) is None:
            back = back.f_back
        if back is None:
            return
        caller = self._function(back.f_code)
        assert caller is not None
        if self.package[caller] != self.package[callee] and not callee.endswith(".<module>"):  # not an import
            self.edges[caller, callee] += 1


def play_under_profile(walk: Walk, overrides: list[str]) -> int:
    """Run ``python -m pokebench OVERRIDES`` in this process, in a temporary folder; its exit code."""
    here, argv = os.getcwd(), sys.argv
    with tempfile.TemporaryDirectory() as work:
        os.chdir(work)
        sys.argv = ["pokebench", *overrides]
        threading.setprofile(walk.profile)
        sys.setprofile(walk.profile)
        try:
            runpy.run_module("pokebench", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        finally:
            sys.setprofile(None)
            threading.setprofile(None)
            os.chdir(here)
            sys.argv = argv
    return code


def _rooms(walk: Walk, edges: list[tuple[tuple[str, str], int]]) -> tuple[Counter[str], Counter[str]]:
    """Per package: the distinct edges entering it, and the calls they carried."""
    entered: Counter[str] = Counter()
    carried: Counter[str] = Counter()
    for (_, callee), calls in edges:
        entered[walk.package[callee]] += 1
        carried[walk.package[callee]] += calls
    return entered, carried


def report(walk: Walk, rank: dict[str, int]) -> list[str]:
    """The walk as text lines: edges, then for the run (edges first seen before ``__main__`` publishes) and
    for its publish: rooms, climbs back and a headline."""
    edges = list(walk.edges.items())

    def climbs(caller: str, callee: str) -> bool:
        up, down = rank.get(walk.package[callee]), rank.get(walk.package[caller])
        return up is not None and down is not None and up > down

    lines = [f"Cross-package calls in first-seen order ({len(edges)} distinct edges; calls along each):"]
    for n, ((caller, callee), calls) in enumerate(edges, 1):
        mark = "  ^ climbs back" if climbs(caller, callee) else ""
        lines.append(f"  {n:3}. {caller} -> {callee}  ({calls}){mark}")
    split = next((n for n, ((caller, callee), _) in enumerate(edges)
                  if caller.startswith("__main__.") and callee.endswith(".publish")), len(edges))
    headline = []
    for part, some in (("the run", edges[:split]), ("its publish", edges[split:])):
        entered, carried = _rooms(walk, some)
        up = [(edge, calls) for edge, calls in some if climbs(*edge)]
        lines.append(f"Rooms visited by {part} ({len(some)} edges; package: distinct edges entering it, calls):")
        lines += [f"  {package + '/':<12} entered {count:3} times  ({carried[package]} calls)"
                  for package, count in entered.most_common()]
        lines.append(f"Climbs back in {part} (callee's floor above the caller's in tests/test_layout.py): "
                     f"{len(up)} distinct edges, {sum(calls for _, calls in up)} calls")
        lines += [f"  {walk.package[caller]}/ -> {walk.package[callee]}/: {caller} -> {callee}  ({calls})"
                  for (caller, callee), calls in up]
        headline.append(f"{part}: {len(some)} edges, {len(up)} climbs back, "
                        + ", ".join(f"{p}/ entered {entered[p]} times" for p in ("play", "results")))
    lines.append(f"Headline: {'; '.join(headline)}; "
                 f"RunStore opened {walk.calls['results.store.RunStore.__init__']} times (the run and its publish)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", default="bots-smoke")
    parser.add_argument("--pairs", type=int, default=1)
    parser.add_argument("overrides", nargs="*", help="more key=value settings of the run")
    args = parser.parse_args()
    layout = _layout()
    spec = importlib.util.find_spec("pokebench")  # found, not imported: the walk starts before any of it runs
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    walk = Walk(root, layout.package_of)
    overrides = [f"+run={args.run}", f"pairs={args.pairs}", *args.overrides]
    code = play_under_profile(walk, overrides)
    print(f"Walk of `python -m pokebench {' '.join(overrides)}` (pokebench in {root}; exit code {code})")
    print("\n".join(report(walk, layout.RANK)))
    return code


if __name__ == "__main__":
    sys.exit(main())
