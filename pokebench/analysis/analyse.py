"""``pokebench analyse RUN [RUN ...]``: score every stored decision and measure the luck of every turn.

Each game is replayed in the pinned simulator (``positions.js``) once, by a pool of worker
processes, for both analyses:

- its decisions searched (:mod:`pokebench.analysis.scoring`), appended to the run's
  ``runs/NAME/decision_quality.jsonl`` (:mod:`pokebench.analysis.cache`) as each game finishes;
- the luck of its move turns (:mod:`pokebench.analysis.luck`), appended to ``runs/NAME/luck.jsonl``.

Games already in a cache for this engine version and these settings (for the luck: this value
function) are not analysed again; ``--no-quality`` / ``--no-luck`` skip either analysis.
``--spread N`` searches N of the decisions a second time (chosen by their keys' hashes, the same
every time): the run-to-run spread of the scores.

``--shard I/N`` analyses only the games whose uid, read as a number, is I modulo N (the same games in every
start, however many the runs hold then), into cache files of the shard's own
(:mod:`pokebench.analysis.cache`): N jobs on N nodes analyse a run between them, a job stopped and started
again goes on where it stopped, and what reads the caches (publish, a later ``analyse``) reads them as one.
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pokebench.analysis.cache import append_entries, cache_path, game_key, luck_path, read_entries
from pokebench.analysis.settings import Settings, engine_version
from pokebench.analysis.value import luck_settings
from pokebench.analysis.worker import StoredGame, Task, init_worker, work
from pokebench.bars import progress_bar
from pokebench.engine.check import EngineUnavailable
from pokebench.paths import RUNS_DIR
from pokebench.results.loading import PublishError, load_runs
from pokebench.util import parse_shard

__all__ = ["analyse_runs", "AnalysisReport", "StoredGame", "luck_entries", "recorded_policies", "in_shard", "main"]


@dataclass
class AnalysisReport:
    games: int  # games of the runs
    searched_games: int  # games searched now (the rest were in the cache)
    decisions: int  # decisions searched now
    repeats: int  # decisions searched a second time now (the spread)
    seconds: float  # wall time of the searches
    luck_games: int = 0  # games whose luck was measured now
    luck_turns: int = 0  # move turns valued now (their luck)
    shard_games: int | None = None  # with a shard: the games of the runs that are this shard's

    @property
    def seconds_per_decision(self) -> float:
        return self.seconds / self.decisions if self.decisions else 0.0


#: Games whose luck alone is measured, replayed per simulator process: a simulator started per game cost more
#: than the luck (200 games with 2 workers: 339 s wall and 225 s CPU, against 101 s and 64 s in chunks, the same
#: entries). A game with decisions to search is a chunk of its own: its searches dwarf a replay, and a stop loses
#: less.
LUCK_CHUNK = 25


def _chunks(tasks: list[Task]) -> list[list[Task]]:
    luck_only = [t for t in tasks if t.indices == frozenset()]
    return ([[t] for t in tasks if t.indices != frozenset()]
            + [luck_only[i:i + LUCK_CHUNK] for i in range(0, len(luck_only), LUCK_CHUNK)])


def recorded_policies(sides: dict[str, dict[str, Any]] | None) -> dict[str, list[dict[str, Any]]] | None:
    """Side -> the policy a bot recorded in its game summary (:mod:`pokebench.player.policy`), from a game's
    players' entries (``RunData.players[uid]``, ``RunStore.game_players()``); None when no side recorded one."""
    found = {side: info["policy"] for side, info in (sides or {}).items()
             if isinstance(info, dict) and isinstance(info.get("policy"), list)}
    return found or None


def luck_entries(games: Sequence[StoredGame]) -> list[dict[str, Any]]:
    """The luck cache's entries of `games` (:mod:`pokebench.analysis.cache`), measured in this process, one
    simulator process replaying them all: what ``analyse`` appends for them, for a caller that measures a few
    games itself (a run between its steps) rather than in a pool of workers."""
    tasks = [Task(game, Settings(), frozenset(), 0, True) for game in games]
    return [luck for _, luck in work(tasks) if luck is not None] if tasks else []


def _complete(entries: list[dict[str, Any]]) -> bool:
    """Whether a game's cached entries hold every one of its decisions."""
    return bool(entries) and len({e["index"] for e in entries}) == entries[0]["decisions_in_game"]


def _spread_sample(entries: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """`count` searched decisions (more than one option, both views searched), by the hash of their keys."""
    searched = [e for e in entries if e.get("options", 0) > 1 and e.get("repeat", 0) == 0
                and "actions" in e.get("full", {}) and "actions" in e.get("own", {})]
    searched.sort(key=lambda e: hashlib.sha256(f"{e['uid']}:{e['index']}".encode()).hexdigest())
    return searched[:count]


def in_shard(uid: str, shard: tuple[int, int] | None) -> bool:
    """Whether the game `uid` (a SHA-256 in hex) is shard (I, N)'s: its number is I modulo N (every game when None)."""
    return shard is None or int(uid, 16) % shard[1] == shard[0]


def analyse_runs(names: Sequence[str], runs_dir: Path | str = RUNS_DIR, settings: Settings = Settings(),
                 workers: int = 2, spread: int = 0, progress: bool = True, quality: bool = True,
                 luck: bool = True, shard: tuple[int, int] | None = None) -> AnalysisReport:
    """Search every decision (`quality`) and measure every turn's luck (`luck`) of the runs' games (of `shard`
    (I, N) alone, when given) not yet in their caches; see the module docstring."""
    from pokebench.engine.check import check_engine

    check_engine()  # a Gen 4 build, or none: a clear error with the command that builds the right one
    runs_dir = Path(runs_dir)
    engine = engine_version()
    with load_runs(names, runs_dir) as data:
        cached: dict[str, list[dict[str, Any]]] = {}
        lucky: set[str] = set()
        for run in dict.fromkeys(map(str, data.games["run"])):
            for entry in read_entries(cache_path(runs_dir / run), engine, settings.key):
                cached.setdefault(entry["uid"], []).append(entry)
            lucky |= {e["uid"] for e in read_entries(luck_path(runs_dir / run), engine, luck_settings(), key=game_key)}
        tasks = []
        games = [g for g in data.games.to_dict("records") if in_shard(str(g["uid"]), shard)]
        records = {str(g["uid"]): g for g in games}
        stored: dict[str, StoredGame] = {}

        def stored_game(uid: str) -> StoredGame:  # its record read once, for the analysis and the spread
            if uid not in stored:
                game = records[uid]
                stored[uid] = StoredGame(uid, str(game["run"]), str(game["game_id"]), {"p1": game["p1"], "p2": game["p2"]},
                                         list(data.record(uid).get("input_log") or []),
                                         recorded_policies(data.players.get(uid)))
            return stored[uid]

        for uid in records:
            mine = [e for e in cached.get(uid, []) if e.get("repeat", 0) == 0]
            search = quality and not _complete(mine)
            measure = luck and uid not in lucky
            if search or measure:
                tasks.append(Task(stored_game(uid), settings, None if search else frozenset(), 0, measure))
        started = time.perf_counter()
        decisions, luck_games, luck_turns = _run(tasks, runs_dir, workers, progress, "analyse", shard)
        repeats = 0
        if spread:
            every = [e for run in dict.fromkeys(str(g["run"]) for g in games)  # each run's cache read once
                     for e in read_entries(cache_path(runs_dir / run), engine, settings.key)
                     if e["uid"] in records and str(records[e["uid"]]["run"]) == run]
            done = {(e["uid"], e["index"]) for e in every if e.get("repeat", 0) == 1}
            wanted = [e for e in _spread_sample(every, spread) if (e["uid"], e["index"]) not in done]
            by_game: dict[str, set[int]] = {}
            for entry in wanted:
                by_game.setdefault(entry["uid"], set()).add(entry["index"])
            again = [Task(stored_game(uid), settings, frozenset(indices), 1) for uid, indices in by_game.items()]
            repeats = _run(again, runs_dir, workers, progress, "spread", shard)[0]
        seconds = time.perf_counter() - started
        return AnalysisReport(len(data.games), sum(t.indices != frozenset() for t in tasks), decisions, repeats,
                              seconds, luck_games, luck_turns, None if shard is None else len(games))


def _run(tasks: list[Task], runs_dir: Path, workers: int, progress: bool, label: str,
         shard: tuple[int, int] | None) -> tuple[int, int, int]:
    """Run the tasks in `workers` processes, appending each game's entries to its run's caches (`shard`'s files,
    when given); the decisions searched, the games and the turns whose luck was measured."""
    if not tasks:
        return 0, 0, 0
    done = games = turns = 0
    bar = progress_bar(len(tasks), label, "game", disable=not progress)
    context = multiprocessing.get_context("spawn")  # the workers import the engine afresh, no forked state
    with bar, context.Pool(max(1, workers), initializer=init_worker) as pool:
        for results in pool.imap_unordered(work, _chunks(tasks)):
            for entries, luck in results:
                if entries:
                    append_entries(cache_path(runs_dir / entries[0]["run"], shard), entries)
                if luck is not None:
                    append_entries(luck_path(runs_dir / luck["run"], shard), [luck])
                    games += 1
                    turns += len(luck["turns"])
                done += len(entries)
            bar.set_postfix(decisions=done, turns=turns, refresh=False)
            bar.update(len(results))
    return done, games, turns


def _shard(value: str) -> tuple[int, int]:
    try:
        return parse_shard(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """The ``pokebench analyse`` command."""
    parser = argparse.ArgumentParser(
        prog="pokebench analyse",
        description="Score every stored decision of the runs with poke-engine's search (regret, agreement with "
                    "the engine, blunders), from full information and from the player's own information, and "
                    "measure the luck of every turn (luck-adjusted scores). Cached in runs/NAME/"
                    "decision_quality.jsonl and runs/NAME/luck.jsonl; publish reads them.",
        epilog="Example:\n  pokebench analyse bots-smoke --workers 2\n  pokebench-publish bots-smoke\n"
               "In 4 jobs (one per node; the README's SLURM and Ray recipes):\n"
               "  pokebench analyse bots-smoke --shard 0/4   # ... --shard 3/4, then publish once\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run names (folders of --runs-dir)")
    parser.add_argument("--runs-dir", type=Path, default=RUNS_DIR, help="where the runs are (default: runs)")
    parser.add_argument("--iterations", type=int, default=Settings.iterations,
                        help=f"MCTS iterations per position (default: {Settings.iterations})")
    parser.add_argument("--samples", type=int, default=Settings.samples,
                        help=f"sampled positions of the player's information (default: {Settings.samples})")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default: 2)")
    parser.add_argument("--spread", type=int, default=0, metavar="N",
                        help="search N decisions a second time: the run-to-run spread (default: 0)")
    parser.add_argument("--shard", type=_shard, metavar="I/N",
                        help="analyse only shard I of N of the games (N jobs analyse a run between them, each into "
                             "cache files of its own; publish reads them as one). --spread N then searches N "
                             "decisions per shard")
    parser.add_argument("--no-quality", action="store_true", help="skip the decision scores (the luck alone)")
    parser.add_argument("--no-luck", action="store_true", help="skip the luck (the decision scores alone)")
    args = parser.parse_args(argv)
    if args.no_quality and args.no_luck:
        parser.error("--no-quality and --no-luck together leave nothing to analyse: drop one")
    if args.no_quality and args.spread:
        parser.error("--spread searches decisions again: it needs the decision scores (drop --no-quality)")
    if args.iterations < 1 or args.samples < 1 or args.workers < 1 or args.spread < 0:
        parser.error("--iterations, --samples and --workers must be 1 or more, --spread 0 or more")
    try:
        report = analyse_runs(args.runs, args.runs_dir, Settings(args.iterations, args.samples), args.workers,
                              args.spread, quality=not args.no_quality, luck=not args.no_luck, shard=args.shard)
    except (PublishError, EngineUnavailable) as err:
        print(f"analyse: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("\nanalyse: interrupted. Every game analysed so far is in the runs' caches (decision_quality.jsonl, "
              "luck.jsonl): the same command analyses the rest.", file=sys.stderr)
        return 130
    print(report_line(report, args.shard, quality=not args.no_quality, luck=not args.no_luck))
    return 0


def report_line(report: AnalysisReport, shard: tuple[int, int] | None, quality: bool, luck: bool) -> str:
    """What `analyse` did, one line: only the parts it was asked for."""
    games = f"{report.games} games" if shard is None else (
        f"shard {shard[0]}/{shard[1]}: {report.shard_games} of {report.games} games")
    scores = (f"{report.searched_games} searched now ({report.decisions} decisions, {report.repeats} searched twice"
              + (f"; {report.seconds_per_decision:.3f} s per decision)" if report.decisions else ")")
              if quality else "decision scores skipped (--no-quality)")
    measured = (f"luck of {report.luck_games} games measured now ({report.luck_turns} turns)" if luck
                else "luck skipped (--no-luck)")
    return f"Analysed {games} in {report.seconds:.1f} s: {scores}; {measured}."


if __name__ == "__main__":
    sys.exit(main())
