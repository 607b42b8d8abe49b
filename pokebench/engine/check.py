"""Is poke-engine here, at the pinned version, built for Gen 9 with Terastallization?

The default build of poke-engine plays Gen 4 rules and never terastallizes, without a word:
a search bot on it would play another game. :func:`check_engine` refuses it loudly, with the
command that builds the right one (``make setup`` runs it). The test of the build is a search
on a small state: a Gen 9 build with Terastallization offers side one ``-tera`` actions
(:func:`offers_tera`).

``python -m pokebench.engine.check`` prints the verdict (exit 1 with the fix when unusable).
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from typing import Iterable

from pokebench.engine.errors import guarded

ENGINE = "poke-engine"
ENGINE_VERSION = "0.0.48"
BUILD_ARGS = "--features poke-engine/terastallization --no-default-features"
#: Builds the engine from its source on PyPI (Rust's cargo needed; about 3 minutes of CPU).
INSTALL_COMMAND = (f"pip install --force-reinstall --no-cache-dir --no-binary {ENGINE} {ENGINE}=={ENGINE_VERSION} "
                   f'--config-settings="build-args={BUILD_ARGS}"')
WHAT_TO_DO = (f"Build it with PokéBench's Python: `.venv/bin/python -m {INSTALL_COMMAND}` (or `make setup`); "
              "it needs Rust's cargo (https://rustup.rs). Without it everything but the search bot and the "
              "engine's analysis works.")


class EngineUnavailable(RuntimeError):
    """No usable poke-engine: the message says what to install."""


def offers_tera(side_one_actions: Iterable[str]) -> bool:
    """Whether a search's actions for side one include Terastallization (a Gen 9 build with the feature)."""
    return any(action.endswith("-tera") for action in side_one_actions)


def verdict(version: str | None, actions: Iterable[str]) -> str | None:
    """None for a usable engine, else why not and what to do (the check's decision, on what it found)."""
    if version is None:
        return f"{ENGINE} is not installed. {WHAT_TO_DO}"
    if version != ENGINE_VERSION:
        return f"{ENGINE} {version} is installed; PokéBench needs {ENGINE_VERSION}. {WHAT_TO_DO}"
    if not offers_tera(actions):
        return (f"{ENGINE} {version} was built without Gen 9 and Terastallization (the default build plays Gen 4 "
                f"rules and never terastallizes). {WHAT_TO_DO}")
    return None


def _probe() -> tuple[str | None, list[str]]:
    """The installed version and side one's actions on a small Gen 9 state (empty when not installed)."""
    try:
        version = importlib.metadata.version(ENGINE)
        import poke_engine as pe
    except (ImportError, importlib.metadata.PackageNotFoundError):
        return None, []

    def mon(species: str) -> pe.Pokemon:
        return pe.Pokemon(id=species, level=80, types=("electric", "typeless"), hp=200, maxhp=200,
                          tera_type="water", moves=[pe.Move(id="thunderbolt", pp=24)])

    state = pe.State(side_one=pe.Side(pokemon=[mon("pikachu")]), side_two=pe.Side(pokemon=[mon("raichu")]))
    result = guarded("on the check's small state", lambda: pe.monte_carlo_tree_search(state, iterations=200))
    return version, [o.move_choice for o in result.side_one]


@functools.lru_cache(maxsize=1)
def check_engine() -> str:
    """``"poke-engine 0.0.48 (gen 9, terastallization)"``, or :class:`EngineUnavailable` saying what to do."""
    version, actions = _probe()
    problem = verdict(version, actions)
    if problem:
        raise EngineUnavailable(problem)
    return f"{ENGINE} {version} (gen 9, terastallization)"


def main() -> int:
    try:
        print(check_engine())
    except EngineUnavailable as err:
        print(f"pokebench engine check: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
