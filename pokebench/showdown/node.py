"""The only code of PokéBench that starts Node.js: the server process, and the scripts run at set-up.

The scripts live in ``showdown-server/scripts/`` (JavaScript files, not strings in Python).
What they export from the pinned server goes to :func:`pokebench.paths.generated_dir`; the
renderers read that JSON and never start node themselves.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Iterable

from pokebench import paths
from pokebench.showdown.errors import ServerError

__all__ = ["MIN_NODE_MAJOR", "node_version", "node_command", "node_env", "run_script", "GENERATED_EXPORTS",
           "export_generated", "run_text_oracle", "NODE_ENV_ALLOWED"]

#: The only variables of the harness's environment that a node process inherits: API keys and
#: other secrets never reach the Showdown server or its simulator processes.
NODE_ENV_ALLOWED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP",
                    "SYSTEMROOT", "NODE_EXTRA_CA_CERTS")

MIN_NODE_MAJOR = 18

#: File in the generated folder -> the script that writes it (args: package dir, out file).
GENERATED_EXPORTS = {"battle-text.json": "export_text.js", "showdown-data.json": "export_data.js"}


def node_version(node: str = "node") -> tuple[int, ...]:
    """The version of Node.js on PATH, or a :class:`ServerError` that says how to get it."""
    exe = shutil.which(node)
    if exe is None:
        raise ServerError(
            f"Node.js is not installed (no `{node}` on PATH). PokéBench's Showdown server "
            f"needs Node.js {MIN_NODE_MAJOR} or newer (20 recommended): install it from "
            "https://nodejs.org or your package manager, then run `make setup`."
        )
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False).stdout
    match = re.match(r"v(\d+)\.(\d+)\.(\d+)", out.strip())
    if not match:
        raise ServerError(f"Could not read the Node.js version from `{exe} --version` (got {out!r}).")
    version = tuple(int(x) for x in match.groups())
    if version[0] < MIN_NODE_MAJOR:
        raise ServerError(
            f"Node.js {out.strip()} is too old: PokéBench's Showdown server needs Node.js "
            f"{MIN_NODE_MAJOR} or newer (20 recommended). Upgrade Node.js, then run `make setup`."
        )
    return version


def node_command(*args: str) -> list[str]:
    """The argv that runs ``node`` with ``args``."""
    return ["node", *args]


def node_env(**extra: str) -> dict[str, str]:
    """The environment a node process gets: :data:`NODE_ENV_ALLOWED` and ``LC_*`` from ours, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k in NODE_ENV_ALLOWED or k.startswith("LC_")}
    env.update(extra)
    return env


def script_path(name: str) -> Path:
    return paths.server_sources_dir() / "scripts" / name


def run_script(name: str, *args: str, timeout: float = 600, stdin: str | None = None) -> str:
    """Run ``showdown-server/scripts/<name>`` with the installed package's folder as first argument; its stdout."""
    cmd = node_command(str(script_path(name)), str(paths.showdown_package_dir()), *args)
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False, input=stdin,
                              env=node_env())
    except (OSError, subprocess.SubprocessError) as err:
        raise ServerError(f"Could not run {name} with Node.js: {err!r}. Run `make setup`.") from err
    if done.returncode != 0:
        raise ServerError(f"{name} failed: {(done.stderr or done.stdout).strip()[-2000:]}\nRun `make setup`.")
    return done.stdout


def export_generated(out_dir: Path | None = None) -> list[Path]:
    """Write every generated file (text templates, names and move data) from the installed server."""
    out_dir = out_dir or paths.generated_dir()
    written = []
    for filename, script in GENERATED_EXPORTS.items():
        run_script(script, str(out_dir / filename))
        written.append(out_dir / filename)
    return written


def run_text_oracle(games: Iterable[dict[str, Any]], timeout: float = 1800) -> list[dict[str, Any]]:
    """Replay games' input logs and render each side with the independent renderer (test-only).

    `games`: ``{"id": ..., "input_log": [...]}``. Returns, per game in order, ``{"id", "p1", "p2"}`` where
    each side has the ``chunks`` the simulator sent it and ``text``, @pkmn/view's ``LogFormatter`` rendering
    of them (``showdown-server/scripts/text_oracle.js``; its packages: ``showdown-server/oracle``).
    """
    oracle = paths.text_oracle_dir()
    if not (oracle / "node_modules" / "@pkmn" / "view").is_dir():
        raise ServerError(f"The text oracle's npm packages are not installed in {oracle}/node_modules. "
                          "Run `make test` (it runs `npm ci` there before the tests).")
    stdin = "".join(json.dumps({"id": g["id"], "input_log": list(g["input_log"])}) + "\n" for g in games)
    out = run_script("text_oracle.js", str(oracle), timeout=timeout, stdin=stdin)
    return [json.loads(line) for line in out.splitlines() if line.strip()]
