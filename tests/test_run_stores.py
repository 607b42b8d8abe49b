"""The stores of one run, each opened once (pokebench/results/run_stores.py): real stores, real SQLite, and
other shards written by real other processes while the run holds their stores open."""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pokebench.play.schedule import build_schedule
from pokebench.results.run_stores import RunStores
from pokebench.results.store import RunStore, store_path

from support.synthetic_runs import BOTS, REPO, make_run

MATCHUPS = [("random", "llm-a"), ("llm-a", "heuristic")]
PLAYERS = [*BOTS, "llm-a"]
SPECS = build_schedule("r", "seed-r", 2, MATCHUPS)


def _shard(runs: Path, shard: int, pairs: list[int]) -> Path:
    """Shard `shard` of 2 of run 'r' with the games of `pairs`, written and closed (no -wal file left)."""
    return make_run(runs, "r", players=PLAYERS, pairs=2, matchups=MATCHUPS, store=f"shard-{shard}-of-2.sqlite",
                    only_pairs=pairs, run="r", seed_text="seed-r")


def _ids(pairs: list[int]) -> set[str]:
    return {s.game_id for s in SPECS if s.pair in pairs}


def _write_in_another_process(runs: Path, shard: int, pairs: list[int]) -> None:
    code = ("import sys; from pathlib import Path; sys.path.insert(0, 'tests'); "
            "from support.synthetic_runs import make_run; "
            f"make_run(Path(sys.argv[1]), 'r', players={PLAYERS!r}, pairs=2, matchups={MATCHUPS!r}, "
            f"store='shard-{shard}-of-2.sqlite', only_pairs={pairs!r}, run='r', seed_text='seed-r')")
    subprocess.run([sys.executable, "-c", code, str(runs)], cwd=REPO, check=True, timeout=120)


def test_a_store_held_open_sees_the_games_another_process_writes_after_it_was_opened(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    other = _shard(runs, 1, [1])
    assert not other.with_name(other.name + "-wal").exists()  # idle when opened: not read as an immutable file
    with RunStores(runs / "r", store_path(runs / "r", (0, 2))) as stores:
        assert stores.done_game_ids() == _ids([1])
        held = stores.stores()
        _write_in_another_process(runs, 1, [2])  # the other shard's node plays on
        assert stores.done_game_ids() == _ids([1, 2])
        assert len(stores.games()) == len(_ids([1, 2]))
        assert stores.stores() == held, "each store is opened once"
        # no read snapshot is held between reads: the other shard's checkpoint goes through the whole WAL
        with contextlib.closing(sqlite3.connect(other, isolation_level=None)) as writer:
            busy, log_frames, checkpointed = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            assert busy == 0 and log_frames == checkpointed
            writer.execute("INSERT INTO meta (key, value) VALUES ('written', 'last')")  # then it ends first
    # the run closed the store last: the other shard's last writes are in its file, not left in a -wal beside it
    assert not other.with_name(other.name + "-wal").exists()
    with contextlib.closing(sqlite3.connect(f"file:{other}?immutable=1", uri=True)) as file_alone:
        assert file_alone.execute("SELECT value FROM meta WHERE key = 'written'").fetchone() == ("last",)


def test_a_shard_store_made_after_the_run_started_is_seen_at_the_next_read(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    with RunStores(runs / "r", store_path(runs / "r", (0, 2))) as stores:
        own = stores.open_own()
        assert stores.done_game_ids() == set() and stores.games().empty and list(stores.games().columns)
        begun = runs / "r" / "shard-1-of-2.sqlite"
        sqlite3.connect(begun).close()  # another process has only begun its store: no tables yet
        assert stores.done_game_ids() == set()
        begun.unlink()
        _write_in_another_process(runs, 1, [1, 2])
        assert stores.done_game_ids() == _ids([1, 2])
        assert stores.stores()[0] is own and len(stores.stores()) == 2
    with pytest.raises(sqlite3.ProgrammingError):  # closed at the end of the run
        own.done_game_ids()


def test_the_sums_cover_every_store_of_the_run(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    _shard(runs, 0, [1])
    _shard(runs, 1, [2])
    with RunStore(runs / "r" / "shard-0-of-2.sqlite") as one, RunStore(runs / "r" / "shard-1-of-2.sqlite") as two:
        by_store = [one.spend_by_player(), two.spend_by_player()]
        errors = len(one.harness_errors()) + len(two.harness_errors())
    with RunStores(runs / "r") as stores:  # every store only read
        assert set(stores.games().game_id) == _ids([1, 2])
        assert stores.spend_by_player() == {p: {k: sum(s.get(p, {}).get(k, 0) for s in by_store) for k in row}
                                            for p, row in (by_store[0] | by_store[1]).items()}
        assert len(stores.table("harness_errors")) == errors
        with pytest.raises(RuntimeError, match="only reads"):
            stores.open_own()


def test_the_summary_counts_a_shards_own_games_and_lists_spend_only_for_players_that_call_a_model(tmp_path) -> None:
    from pokebench.play.summary import ThisStart, run_summary

    runs = tmp_path / "runs"
    _shard(runs, 0, [1])
    _shard(runs, 1, [2])
    with sqlite3.connect(runs / "r" / "shard-0-of-2.sqlite") as db:  # a bot that records decisions, no model
        game_id = next(iter(_ids([1])))
        db.execute("INSERT INTO decisions (game_id, side, player, idx, turn, data) VALUES (?, 'p1', 'random', 999, 1, ?)",
                   (game_id, '{"engine_error": null}'))
    with RunStores(runs / "r") as stores:
        summary = run_summary(stores, "r", _ids([1]), ThisStart(), None)
    assert f"0 game(s) played now; {len(_ids([1]))} of {len(_ids([1]))} stored in all ({len(SPECS)} with the other " \
           "shards' stores)." in summary
    spend = summary.split("Spend by model", 1)[1].splitlines()[1:]
    assert any(line.split()[0] == "llm-a" for line in spend)
    assert not any(line.split() and line.split()[0] == "random" for line in spend)


def test_the_summary_says_whether_the_games_harness_errors_voided_were_played_again(tmp_path) -> None:
    """A retry round plays them again in the same start: 'played again on the next start' was said after it too."""
    from collections import Counter

    from pokebench.play.summary import ThisStart, run_summary

    runs = tmp_path / "runs"
    _shard(runs, 0, [1])
    now = ThisStart(played=len(_ids([1])), harness_errors=Counter({"server connection lost": 4}))
    with RunStores(runs / "r") as stores:
        replayed = run_summary(stores, "r", _ids([1]), now, None)
        missing = run_summary(stores, "r", _ids([1, 2]), now, None)
    assert "Harness errors now: server connection lost ×4 (every game they voided was played again)." in replayed
    assert (f"Harness errors now: server connection lost ×4 ({len(_ids([2]))} planned game(s) not stored yet: "
            "the next start plays them).") in missing


def test_the_summary_ends_a_stop_reason_with_one_full_stop(tmp_path) -> None:
    """A provider's refusal is a sentence of its own: 'Stopped: … model m..' was printed after a refused key."""
    from pokebench.play.summary import StopKind, StopReason, ThisStart, run_summary

    runs = tmp_path / "runs"
    _shard(runs, 0, [1])
    sentence = ThisStart(stop_reason=StopReason(StopKind.FATAL, "llm-a: the API refused the key in K. Check K."))
    budget = ThisStart(stop_reason=StopReason(StopKind.BUDGET, "the run would pass budget_usd=1"))
    with RunStores(runs / "r") as stores:
        assert run_summary(stores, "r", _ids([1]), sentence, None).endswith("Stopped: llm-a: the API refused the key "
                                                                            "in K. Check K.")
        assert run_summary(stores, "r", _ids([1]), budget, None).endswith("Stopped: budget: the run would pass "
                                                                          "budget_usd=1.")
