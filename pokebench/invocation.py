"""The command that started this process, written so that it runs as printed (in a hint such as "To resume: ...").

A bare ``python`` is whatever interpreter the shell finds first, on a fresh machine seldom the project's venv
(where PokéBench is installed). So a hint names the interpreter this process runs on (``sys.executable``,
relative to the current folder when it is inside it, e.g. ``.venv/bin/python``), or the console script when
the process was started by one (``pokebench``, bare when the shell finds that very script on ``PATH``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Sequence

__all__ = ["command_prefix", "module_command", "CONFIG_FLAGS", "config_flags", "config_dir"]

#: Hydra's flags that say where the configs are: a command that runs again needs them as given.
CONFIG_FLAGS = ("--config-dir", "-cd", "--config-path", "-cp", "--config-name", "-cn")


def config_flags(argv: Sequence[str]) -> list[str]:
    """The :data:`CONFIG_FLAGS` of a command line, with their values (``--config-dir X`` or ``--config-dir=X``)."""
    flags: list[str] = []
    args = iter(argv)
    for arg in args:
        flag, equals, _ = arg.partition("=")
        if flag in CONFIG_FLAGS:
            flags.append(arg)
            if not equals:
                flags.append(next(args, ""))
    return flags


def config_dir(argv: Sequence[str]) -> str | None:
    """The ``--config-dir`` (``-cd``) of a command line: a folder of configs added to the shipped ones."""
    flags = config_flags(argv)
    for i, arg in enumerate(flags):
        flag, equals, value = arg.partition("=")
        if flag in ("--config-dir", "-cd"):
            return value if equals else (flags[i + 1] if i + 1 < len(flags) else None)
    return None


def _as_typed(path: str) -> str:
    """`path` relative to the current folder when inside it (``./x`` rather than a bare ``x``), else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path.cwd())
    except ValueError:
        return shlex.quote(str(absolute))
    return shlex.quote(str(relative) if len(relative.parts) > 1 else f"./{relative}")


def command_prefix(module: str = "pokebench") -> str:
    """How to start `module` again as this process was started: ``.venv/bin/python -m pokebench``, or the
    console script that started it (``pokebench``, ``.venv/bin/pokebench``)."""
    script = sys.argv[0] if sys.argv else ""
    name = os.path.basename(script)
    if module == "pokebench" and name == "pokebench":  # the console script of `[project.scripts]`
        found = shutil.which(name)
        try:
            if found and os.path.samefile(found, script):
                return name
        except OSError:  # the script is gone (a venv removed while it runs): its path says the most
            pass
        return _as_typed(script)
    return f"{_as_typed(sys.executable)} -m {module}"


def module_command(*args: str, module: str = "pokebench") -> str:
    """``<command_prefix> arg ...``, each argument quoted for the shell."""
    return " ".join([command_prefix(module), *(shlex.quote(a) for a in args)])
