"""The searched decisions of a run: ``runs/NAME/decision_quality.jsonl``, one JSON object per line.

Each line is one decision's searches (:func:`pokebench.analysis.scoring.score_game`) with its
key: the game's uid, the decision's index in the game, the engine version, the settings and the
repeat (0; 1 for the second search of a decision sampled to measure the run-to-run spread).
Lines are appended as games finish, so an interrupted analysis keeps what it searched; a line
cut short by a kill is skipped on reading. Lines of another engine version or other settings
stay in the file and are not used. The luck of the games (``runs/NAME/luck.jsonl``, one line per
game: :mod:`pokebench.analysis.luck`) is kept the same way, keyed by game (:func:`game_key`).

An analysis split into shards (``pokebench analyse NAME --shard I/N``, one per node or job) writes files of its
own beside them, ``decision_quality.shard-I-of-N.jsonl`` and ``luck.shard-I-of-N.jsonl``: no two processes append
to one file (appends from several nodes to one file on a network file system can interleave). Reading a cache
reads the run's file and every shard's file as one (:func:`cache_files`); the last entry of a key wins, so a
decision searched by two shards counts once.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Hashable, Iterable, Iterator

Shard = tuple[int, int]  # (I, N): shard I of N

__all__ = ["CACHE_FILE", "LUCK_FILE", "cache_path", "luck_path", "cache_files", "entry_key", "game_key", "read_entries",
           "append_entries"]

CACHE_FILE = "decision_quality.jsonl"
LUCK_FILE = "luck.jsonl"


def _sharded(path: Path, shard: Shard | None) -> Path:
    return path if shard is None else path.with_name(f"{path.stem}.shard-{shard[0]}-of-{shard[1]}{path.suffix}")


def cache_path(run_dir: Path, shard: Shard | None = None) -> Path:
    """The decision searches' cache of a run (that shard I of N of an analysis writes, when given)."""
    return _sharded(Path(run_dir) / CACHE_FILE, shard)


def luck_path(run_dir: Path, shard: Shard | None = None) -> Path:
    """The luck's cache of a run (that shard I of N of an analysis writes, when given)."""
    return _sharded(Path(run_dir) / LUCK_FILE, shard)


def cache_files(path: Path) -> list[Path]:
    """A cache (:func:`cache_path`, :func:`luck_path`) as it is read: its file and its shards' files, those that
    exist, the shards' in order."""
    path = Path(path)
    return ([path] if path.is_file() else []) + sorted(path.parent.glob(f"{path.stem}.shard-*-of-*{path.suffix}"))


def entry_key(uid: str, index: int, engine: str, settings: str, repeat: int = 0) -> tuple[str, int, str, str, int]:
    return (uid, int(index), engine, settings, int(repeat))


def _key_of(entry: dict[str, Any]) -> tuple[str, int, str, str, int]:
    return entry_key(entry["uid"], entry["index"], entry["engine"], entry["settings"], entry.get("repeat", 0))


def game_key(entry: dict[str, Any]) -> tuple[str, str, str]:
    """The key of a per-game entry (the luck of a game)."""
    return (entry["uid"], entry["engine"], entry["settings"])


def read_entries(path: Path, engine: str | None = None, settings: str | None = None,
                 key: Callable[[dict[str, Any]], Hashable] = _key_of) -> Iterator[dict[str, Any]]:
    """The entries of the cache at `path` with its shards' (:func:`cache_files`), of `engine` and `settings` when
    given; the last one of each `key`."""
    found: dict[Hashable, dict[str, Any]] = {}
    for file in cache_files(path):
        with open(file, encoding="utf-8") as handle:
            for line in handle:
                try:
                    entry = json.loads(line)
                except json.JSONDecodeError:  # the last line of an analysis that was killed while writing it
                    continue
                if (engine is None or entry.get("engine") == engine) and (settings is None or entry.get("settings") == settings):
                    found[key(entry)] = entry
    yield from found.values()


def append_entries(path: Path, entries: Iterable[dict[str, Any]]) -> None:
    """Append entries (each a complete line, flushed before returning)."""
    text = "".join(json.dumps(entry, sort_keys=True, ensure_ascii=False) + "\n" for entry in entries)
    if text:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
