"""Dependencies point one way: no module of pokebench/ imports a package above its own.

Every module is parsed with ``ast`` (nothing is imported); every ``import`` and ``from ... import``
in it counts, at the top or inside a function, except under ``if __name__ == "__main__":`` (a module
run as a command stands on top, like ``cli/``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pokebench"

# The floors, bottom first (docs/ARCHITECTURE.md's table read as imports: a package may import its own
# floor and those below). The bottom floor is the shared ground: where things live, the seeds, the
# game specs, small helpers. `player/` is what a competitor author sees; `llm/` and `engine/` are tools
# competitors use; `results/` (the store, ratings, published tables) and `analysis/` (the engine's
# verdict on decisions, published beside them) are written by `play/` and read by `site/`; the
# site is built from a published folder alone; the competitors in `players/` are below `play/`, which
# loads them by their config's name only, as results and site load the players' tables and pages
# (`plugins`, a list of module names on the bottom floor). `publish` orchestrates results and site;
# the commands are on top.
FLOORS: list[set[str]] = [
    {"pokebench", "paths", "seeds", "util", "games", "plugins", "invocation", "bars"},
    {"showdown", "text"},
    {"player"},
    {"llm", "engine"},
    {"results", "analysis"},
    {"site"},
    {"players"},
    {"play"},
    {"publish"},
    {"cli", "__main__"},
]
RANK = {package: floor for floor, packages in enumerate(FLOORS) for package in packages}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """``pokebench.results.store`` -> ``results``; ``pokebench.paths`` -> ``paths``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _is_main_block(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__")


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every pokebench module that `path` imports."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if _is_main_block(node):
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])])
            if base == "pokebench":  # from pokebench import paths: the module paths
                found.extend((node.lineno, f"pokebench.{alias.name}") for alias in node.names)
            else:
                found.append((node.lineno, base))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return [(line, name) for line, name in found if name.split(".")[0] == "pokebench"]


def upward_imports() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        own = package_of(module_name(path))
        for line, name in imported_modules(path):
            other = package_of(name)
            if other not in RANK:
                other = "pokebench"  # a name of the package itself (__version__)
            if RANK[other] > RANK[own]:
                found.append(f"{path.relative_to(PACKAGE.parent)}:{line} ({own}) imports {name} ({other})")
    return found


def test_every_package_has_a_floor() -> None:
    packages = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
                if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()}
    assert packages - set(RANK) == set(), "give the new package a floor in FLOORS"


def test_no_module_imports_a_package_above_its_own() -> None:
    upward = upward_imports()
    assert not upward, "upward imports (move the shared piece down, or register it):\n" + "\n".join(upward)


def test_no_two_modules_import_each_other() -> None:
    imports = {module_name(path): {name for _, name in imported_modules(path)} for path in PACKAGE.rglob("*.py")}
    circles = sorted(f"{a} <-> {b}" for a, names in imports.items() for b in names
                     if a < b and a in imports.get(b, ()) and not b.startswith(a + "."))  # a package's face
    assert not circles, "modules that import each other (one of them should not):\n" + "\n".join(circles)


def _fresh_python(code: str) -> str:
    """What `code` prints in a fresh Python process (nothing imported before it); it must exit with 0."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_running_and_publishing_import_no_search_engine() -> None:
    """poke-engine is optional (built from source with Rust): a run of the bots and its publish, luck tables
    included, import without it; only the search bot and the analyses need it."""
    blocker = ("import sys\n"
               "class NoEngine:\n"
               "    def find_spec(self, name, path, target=None):\n"
               "        if name.split('.')[0] == 'poke_engine':\n"
               "            raise ImportError('poke_engine is blocked here')\n"
               "sys.meta_path.insert(0, NoEngine())\n"
               "import pokebench.__main__, pokebench.publish, pokebench.cli.publish, pokebench.play.runner\n")
    _fresh_python(blocker)


@pytest.mark.parametrize("modules, heavy", [
    ("pokebench.__main__, pokebench.play.runner, pokebench.publish, pokebench.cli.replay", ("openai", "scipy.stats")),
    ("pokebench.analysis.worker", ("pandas", "scipy")),
], ids=["a run's start", "an analysis worker"])
def test_a_process_imports_no_heavy_library_before_it_needs_it(modules: str, heavy: tuple[str, ...]) -> None:
    """Every ``python -m pokebench``, publish, replay and analyse process starts by importing the run's modules:
    openai (a run without a model never needs it) and scipy.stats (0.6 s of CPU for two quantiles) wait. Each
    spawned worker of ``pokebench analyse`` imports its work's module: no table library there (0.6 s each)."""
    imported = _fresh_python(f"import sys\nimport {modules}\nprint(sorted(m for m in {heavy!r} if m in sys.modules))\n")
    assert imported == "[]", f"imported at the start: {imported}"
