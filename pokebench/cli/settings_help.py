"""`python -m pokebench [+run=NAME] [key=value ...] --help`: every setting with its value and what it does.

The values are the composed config of the command line as given (so with ``+run=NAME`` that run's
players, pairs and matchups), the descriptions each key's comment in
``conf/config.yaml``. Nothing of the run is imported: the answer takes about a second.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Sequence

from omegaconf import DictConfig, ListConfig, OmegaConf

from pokebench import paths
from pokebench.invocation import command_prefix

_KEY = re.compile(r"^( *)([A-Za-z_][\w-]*):")


def descriptions(config_file: Path) -> dict[str, str]:
    """Dotted key -> the comment just above it, as one line, or "" (the `hydra` and `defaults` keys left out), in
    the file's order."""
    out: dict[str, str] = {}
    comment: list[str] = []
    parents: list[tuple[int, str]] = []
    for line in config_file.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            comment.append(stripped.lstrip("#").strip())
            continue
        match = _KEY.match(line)
        if match is None:
            comment = []
            continue
        indent, key = len(match.group(1)), match.group(2)
        parents = [(i, k) for i, k in parents if i < indent]
        dotted = ".".join([k for _, k in parents] + [key])
        parents.append((indent, key))
        if dotted.split(".")[0] not in ("hydra", "defaults"):
            out[dotted] = " ".join(line for line in comment if line)
        comment = []
    return out


def _entry(key: str, value: object, about: str, nested: bool) -> list[str]:
    """A setting's lines: ``key = value`` (a mapping or list: its YAML below), then its description."""
    block: list[str] = []
    if nested:  # its keys follow, each with its own line
        head = f"  {key}:"
    elif isinstance(value, (DictConfig, ListConfig)) and len(value):
        head = f"  {key}:"
        block = ["      " + line for line in OmegaConf.to_yaml(value).rstrip().splitlines()]
    else:
        shown = {None: "null", True: "true", False: "false"}.get(value, value) if isinstance(value, (bool, type(None))) \
            else OmegaConf.to_yaml(value).strip() if isinstance(value, (DictConfig, ListConfig)) else value
        head = f"  {key} = {shown}"
    about_lines = textwrap.wrap(about, width=110, initial_indent="      # ", subsequent_indent="      # ")
    return [head, *about_lines, *block]


def settings_help(overrides: Sequence[str], extra_dir: str | None = None) -> str:
    """The help text for a command line's `overrides` (Hydra's ``key=value`` arguments, ``+run=NAME`` among them),
    with the configs of `extra_dir` (``--config-dir``) beside the shipped ones."""
    from hydra import compose, initialize_config_dir

    conf = paths.conf_dir()
    dirs = [conf] + ([Path(extra_dir).resolve()] if extra_dir else [])
    search = [f"hydra.searchpath=[file://{dirs[1]}]"] if extra_dir else []
    with initialize_config_dir(config_dir=str(conf), version_base=None):
        cfg = compose("config", overrides=search + list(overrides))

    def names(group: str) -> list[str]:
        return sorted({p.stem for d in dirs for p in (d / group).glob("*.yaml")})

    runs = names("run")
    command = command_prefix()
    chosen = next((o.split("=", 1)[1] for o in overrides if o.startswith("+run=")), None)
    lines = ["PokéBench plays Gen 9 Random Battles between the players of a run on a pinned, seeded local Pokémon "
             "Showdown server, stores every game, and publishes Bradley–Terry Elo ratings with intervals.", "",
             f"Usage: {command} +run=NAME [key=value ...]",
             f"       {command} +run=NAME [key=value ...] --help   (that run's settings)",
             f"       {command} analyse RUN [RUN ...] --help   (score a run's decisions, measure its luck)",
             f"       {command} export-training RUN --help   (a run's decisions as training data)",
             "Runs: " + ", ".join(runs),
             "Players: " + ", ".join(names("player")),
             "Models: " + ", ".join(names("model")),
             "",
             f"Settings of {'run ' + repr(chosen) if chosen else 'every run (the defaults)'}"
             f"{' with ' + ' '.join(o for o in overrides if not o.startswith('+run=')) if len(overrides) > bool(chosen) else ''}:"]
    described = descriptions(conf / "config.yaml")
    for key, about in described.items():
        nested = any(k.startswith(key + ".") for k in described)
        lines += _entry(key, OmegaConf.select(cfg, key, throw_on_missing=False), about, nested)
    lines += ["", "Examples:",
              f"  {command} +run=bots-smoke",
              f"  {command} +run=bots-calibration pairs=200 concurrency=8",
              f"  {command} +run=bots-smoke name=my-copy seed_text=other",
              f"A run is safe to start again: it plays only the games that are missing. The settings are those of "
              f"{conf / 'config.yaml'}."]
    return "\n".join(lines)
