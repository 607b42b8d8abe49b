"""Where the user's Foul Play is, and whether it can play: checkout, Python, commit, engine.

Foul Play is not part of PokéBench and PokéBench does not install it: the user makes the
installation as Foul Play's own README says. PokéBench looks for it, in this order:

1. the player options ``checkout`` and ``python`` (conf/player/foul_play.yaml);
2. ``$FOULPLAY_DIR`` and ``$FOULPLAY_PYTHON``;
3. the default places (:func:`default_checkouts`): ``.foulplay/foul-play/`` of the PokéBench
   checkout (ignored by git), or, installed from a wheel, ``$POKEBENCH_HOME/foulplay/foul-play/``
   (see :mod:`pokebench.paths`).

The Python is the one named, else the checkout's ``.venv`` (or ``venv``). An installation
that plays has Foul Play's requirements in that Python with poke-engine built for gen 9
with terastallization (:func:`check_engine`; the default build of poke-engine plays the
gen 4 rules and never terastallizes).

``python -m pokebench.players.foul_play.installation`` (console script ``pokebench-foulplay``)
says which installation PokéBench finds and checks it.
"""

from __future__ import annotations

import argparse
import functools
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from pokebench import paths
from pokebench.engine.check import BUILD_ARGS, ENGINE, ENGINE_VERSION

__all__ = ["PINNED_COMMIT", "UPSTREAM", "Installation", "default_checkouts", "find_installation",
           "check_engine", "check_layout", "engine_version", "main"]

#: The commit the method names. Not every source has it (the newest one at hand may be
#: 25c976f): another commit plays, with a warning, and each game's record keeps the commit.
PINNED_COMMIT = "6c467c08"
UPSTREAM = "https://github.com/pmariglia/foul-play"
#: what `Installation.commit` holds for a checkout git cannot name a commit of
NO_COMMIT = "unknown (not a git checkout)"
ENGINE_FLAGS = f'--config-settings="build-args={BUILD_ARGS}"'
REBUILD = (f"pip uninstall -y {ENGINE} && pip install -v --force-reinstall --no-cache-dir {ENGINE}=={ENGINE_VERSION} "
           + ENGINE_FLAGS)

# Run with the user's Python: can the engine terastallize? (0.0.48's Python API)
_ENGINE_CHECK = r"""
import sys
try:
    import requests, websockets
    from poke_engine import Move, Pokemon, Side, State, monte_carlo_tree_search
except ImportError as err:
    print("missing", err)
    sys.exit(3)
def mon():
    return Pokemon(id="pikachu", level=50, types=("electric", "typeless"), hp=100, maxhp=100,
                   tera_type="water", moves=[Move(id="tackle", pp=32)])
result = monte_carlo_tree_search(State(side_one=Side(pokemon=[mon()]), side_two=Side(pokemon=[mon()])), duration_ms=20)
print("tera" if any(o.move_choice.endswith("-tera") for o in result.side_one) else "no-tera")
"""
_VERSION_CHECK = "import importlib.metadata as m; print(m.version('poke-engine'))"


def default_checkouts() -> list[Path]:
    """Where PokéBench looks for Foul Play when nothing names it."""
    root = paths.checkout_dir()
    return [root / ".foulplay" / "foul-play"] if root else [paths.home_dir() / "foulplay" / "foul-play"]


def what_to_install(places: Sequence[Path] = ()) -> str:
    """The requirements of an installation, and where PokéBench would find it."""
    where = ", ".join(str(p) for p in places) or ", ".join(str(p) for p in default_checkouts())
    return (f"PokéBench needs a checkout of Foul Play ({UPSTREAM}; the method pins commit {PINNED_COMMIT}) and a "
            f"Python with its requirements (its virtualenv in the checkout's .venv), installed as Foul Play's README "
            f"says; its requirements.txt builds {ENGINE} {ENGINE_VERSION} from source with terastallization (Rust and "
            f"crates.io needed). Put the checkout at {where}, or set FOULPLAY_DIR (and FOULPLAY_PYTHON), or the "
            "`checkout` and `python` options of conf/player/foul_play.yaml (README, section Foul Play). "
            "`pokebench-foulplay` (in a checkout: `.venv/bin/pokebench-foulplay`) checks what PokéBench finds.")


@dataclass(frozen=True)
class Installation:
    checkout: Path
    python: str
    commit: str

    @property
    def pinned(self) -> bool:
        return self.commit.startswith(PINNED_COMMIT)

    @property
    def short_commit(self) -> str:
        """The commit's first 12 hex digits, or NO_COMMIT whole."""
        return self.commit if self.commit == NO_COMMIT else self.commit[:12]


def find_installation(checkout: str | None = None, python: str | None = None,
                      defaults: Sequence[Path] | None = None) -> Installation:
    """The user's Foul Play (module docstring, the order); a ValueError says what is missing."""
    named = checkout or os.environ.get("FOULPLAY_DIR")
    places = list(default_checkouts() if defaults is None else defaults)
    if named:
        path = Path(named).expanduser().resolve()
    else:
        found = [p for p in places if (p / "run.py").is_file()]
        if not found:
            raise ValueError("Foul Play is not installed (no checkout at "
                             f"{', '.join(str(p) for p in places) or 'any default place'}, FOULPLAY_DIR not set). "
                             + what_to_install(places))
        path = found[0].resolve()
    if not (path / "run.py").is_file() or not (path / "fp").is_dir():
        raise ValueError(f"{path} is not a Foul Play checkout (it has no run.py and fp/). " + what_to_install(places))
    python = python or os.environ.get("FOULPLAY_PYTHON")
    if not python:
        candidates = [path / d / "bin" / "python" for d in (".venv", "venv")]
        existing = [c for c in candidates if c.exists()]
        if not existing:
            raise ValueError(f"Which Python runs Foul Play? Set FOULPLAY_PYTHON (or the `python` option) to the Python "
                             f"that has its requirements; {path}/.venv does not exist. " + what_to_install(places))
        python = str(existing[0])
    try:
        commit = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = NO_COMMIT
    return Installation(path, python, commit)


def check_engine(python: str) -> None:
    """Refuse a Python without Foul Play's requirements, or with a poke-engine that cannot terastallize."""
    try:
        proc = subprocess.run([python, "-c", _ENGINE_CHECK], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError) as err:
        raise ValueError(f"Cannot run Foul Play's Python {python!r} ({err}). " + what_to_install()) from None
    answer = proc.stdout.strip().splitlines()[-1:] or [""]
    if proc.returncode == 3:
        raise ValueError(f"Foul Play's Python {python} lacks its requirements ({answer[0]}). " + what_to_install())
    if proc.returncode != 0:
        raise ValueError(f"Could not check {ENGINE} with {python}: {proc.stderr.strip()[-1500:]}. "
                         f"Foul Play needs {ENGINE} {ENGINE_VERSION} built for gen 9 with terastallization: {REBUILD}")
    if answer[0] != "tera":
        raise ValueError(f"The {ENGINE} of {python} was built without terastallization (the default build plays "
                         f"gen 4 rules and never terastallizes). Rebuild it with that Python: {REBUILD}")


#: PokéBench's launcher of Foul Play (run with Foul Play's Python): ``--check`` checks the checkout's layout.
LAUNCHER = Path(__file__).with_name("launcher.py")


def check_layout(install: Installation) -> None:
    """Refuse a checkout whose layout the launcher cannot start (it would exit 78 at every game's start)."""
    try:
        proc = subprocess.run([install.python, str(LAUNCHER), "--checkout", str(install.checkout), "--check"],
                              capture_output=True, text=True, timeout=120, cwd=install.checkout)
    except (OSError, subprocess.SubprocessError) as err:
        raise ValueError(f"Cannot run Foul Play's Python {install.python!r} ({err}). " + what_to_install()) from None
    if proc.returncode != 0:
        said = proc.stderr.strip().splitlines()[-1:] or [f"exit code {proc.returncode}"]
        raise ValueError(f"{install.checkout} cannot be started: {said[0]} " + what_to_install())


@functools.lru_cache(maxsize=8)
def engine_version(python: str) -> str:
    """The installed poke-engine's version in Foul Play's Python ("unknown" if it cannot say)."""
    try:
        proc = subprocess.run([python, "-c", _VERSION_CHECK], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the installation PokéBench finds and check its engine; exit 1 (with what to do) if unusable."""
    parser = argparse.ArgumentParser(prog="pokebench-foulplay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkout", help="a Foul Play checkout (default: FOULPLAY_DIR, then the default places)")
    parser.add_argument("--python", help="the Python with its requirements (default: FOULPLAY_PYTHON, the checkout's .venv)")
    args = parser.parse_args(argv)
    try:
        install = find_installation(args.checkout, args.python)
        check_engine(install.python)
        check_layout(install)
    except ValueError as err:
        print(f"pokebench-foulplay: {err}", file=sys.stderr)
        return 1
    print(f"Foul Play at {install.checkout}, commit {install.commit}, Python {install.python}, "
          f"{ENGINE} {engine_version(install.python)} with terastallization.")
    if not install.pinned:
        print(f"Warning: the method pins commit {PINNED_COMMIT}; this checkout is at {install.short_commit}. "
              "It plays, and each game's record keeps its commit.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
