"""PokéBench's battle text against an independent renderer, over a long corpus of recorded bot games.

    .venv/bin/python benchmarks/battle_text_oracle.py [--show 30] [--run NAME --no-play]

Plays (or resumes; a finished run is reused) the long corpus of ``tests/data/text-corpus.json``: the
reference bots all against all, one run per entry (``runs/text-oracle-long``: 300 games;
``runs/text-oracle-limit``: 150 games ended at turn 10), then replays every recorded game's input log
through the pinned simulator, renders each side with @pkmn/view's LogFormatter
(:func:`pokebench.showdown.node.run_text_oracle`) and with PokéBench (:mod:`pokebench.text.differential`),
and compares them line by line. ``--run NAME --no-play`` compares an existing run instead.

Prints the mechanics the corpus covers, each class of difference kept on purpose, the differences that
change the meaning (the first ``--show`` of them), and last the two figures::

    identical <share of identical lines>
    meaning-changing <number of differences that change the meaning>
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

from pokebench.results.store import RunStore, run_stores
from pokebench.showdown.node import run_text_oracle
from pokebench.text.differential import compare_game, summarize

REPO = Path(__file__).resolve().parent.parent
CORPUS = json.loads((REPO / "tests" / "data" / "text-corpus.json").read_text())

#: What the corpus should cover: name -> pattern of a protocol line.
MECHANICS = {
    "Terastallization": r"^\|-terastallize\|", "weather": r"^\|-weather\|(?!none)", "terrain": r"^\|-fieldstart\|.*Terrain",
    "hazards": r"^\|-sidestart\|.*(Stealth Rock|Spikes|Toxic Spikes|Sticky Web)", "screens": r"^\|-sidestart\|.*(Reflect|Light Screen|Aurora Veil)",
    "status": r"^\|-status\|", "items": r"^\|-(end)?item\|", "ability [from]/[of]": r"\|\[from\] ability: .*\|\[of\] ",
    "[silent]": r"\|\[silent\]", "Transform/Ditto": r"^\|-transform\|", "Revival Blessing": r"Revival Blessing",
    "Illusion (Zoroark)": r"^\|replace\|", "Struggle": r"\|Struggle\|", "recharge": r"^\|cant\|.*\|recharge",
    "multi-hit": r"^\|-hitcount\|", "critical hit": r"^\|-crit\|", "forced switch (drag)": r"^\|drag\|",
    "forme change": r"^\|(detailschange|-formechange)\|", "Poltergeist": r"\|move: Poltergeist\|",
    "status orb": r"\[from\] item: (Toxic|Flame) Orb", "Minior-Meteor": r"\|Minior-Meteor", "Cramorant": r"\|Cramorant-G",
    "Trace": r"\[from\] ability: Trace",
}


def play_corpus(part: dict) -> None:
    """The reference bots, all against all, with one part's seeds: resumable, a finished run plays nothing.
    Without the search bot: the corpus is seeded and the engine's search is not."""
    cmd = [sys.executable, "-m", "pokebench", "+run=bots-calibration", "~players.search", "matchups=all", f"name={part['run']}",
           f"pairs={part['pairs']}",
           f"seed_text={part['seed_text']}", f"turn_limit={part['turn_limit']}", "publish=false", "concurrency=4"]
    print("playing:", " ".join(cmd[2:]), flush=True)
    done = subprocess.run(cmd, cwd=REPO, env={**os.environ, "TQDM_DISABLE": "1"}, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"the run failed:\n{(done.stdout + done.stderr)[-4000:]}")


def recorded_games(run: str) -> list[dict]:
    games = []
    for path in run_stores(REPO / "runs" / run):
        with RunStore.open_existing(path) as store:
            games += [{"id": record.get("game_id"), **record} for record in store.records()]
    return sorted(games, key=lambda g: str(g["id"]))


def covered(games: list[dict]) -> Counter:
    counts: Counter = Counter()
    for game in games:
        log = "\n".join(game.get("log") or [])
        for name, pattern in MECHANICS.items():
            counts[name] += bool(re.search(pattern, log, re.M))
        counts["fainting on both sides in one turn"] += bool(re.search(r"\|faint\|p1a.*\n(\|[^t].*\n)*\|faint\|p2a|\|faint\|p2a.*\n(\|[^t].*\n)*\|faint\|p1a", log))
        counts["turn limit"] += game.get("end_reason") == "turn_limit"
    return counts


def shape(difference) -> str:
    """A difference with its numbers and names left out, to count differences of one kind together."""
    text = " | ".join(difference.ours) + " => " + " | ".join(difference.oracle)
    return re.sub(r"\d+(\.\d+)?%", "N%", text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="append", help="compare this run (runs/NAME) instead of the corpus (repeatable)")
    parser.add_argument("--no-play", action="store_true", help="compare the runs' games as they are")
    parser.add_argument("--show", type=int, default=30, help="how many meaning-changing differences to print")
    args = parser.parse_args(argv)
    runs = args.run or [part["run"] for part in CORPUS["long"]]
    if not args.no_play:
        for part in CORPUS["long"]:
            if part["run"] in runs:
                play_corpus(part)
    games = [game for run in runs for game in recorded_games(run)]
    if not games:
        print(f"{', '.join('runs/' + r for r in runs)}: no finished game", file=sys.stderr)
        return 2
    print(f"{len(games)} games; mechanics covered (games):")
    for name, count in sorted(covered(games).items()):
        print(f"  {name}: {count}")
    comparisons = []
    for start in range(0, len(games), 50):
        batch = games[start:start + 50]
        for game, replayed in zip(batch, run_text_oracle(batch)):
            comparisons += compare_game(game, replayed)
    summary = summarize(comparisons)
    print(f"{summary['lines']} lines in {summary['sides']} sides; {summary['identical']} identical")
    print("differences kept on purpose:")
    for name, count in summary["kept"].items():
        print(f"  {name}: {count}")
    changing = summary["meaning_changing_examples"]
    shapes = Counter(shape(d) for d in changing)
    print(f"meaning-changing differences: {len(changing)} ({len(shapes)} distinct); the most frequent:")
    for text, count in shapes.most_common(args.show):
        example = next(d for d in changing if shape(d) == text)
        print(f"{count} x " + example.describe())
    print(f"identical {summary['identical_share']:.4f}")
    print(f"meaning-changing {summary['meaning_changing']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
