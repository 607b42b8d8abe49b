"""Publishing a sharded run from its shards' processes at once: one publish of a folder at a time, and a
run complete when a publish gets its turn is never labelled partial (its stores decide, not who ended last).

The stores are synthetic (tests/support/synthetic_runs.py); the publishes are real `pokebench-publish`
processes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pokebench.publish import publishing

from support.processes import wait_for
from support.synthetic_runs import BOTS, make_run

pytestmark = pytest.mark.server  # needs the pinned server set up (make setup)


def _publish(runs: Path, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pokebench.cli.publish", "big", "--runs-dir", str(runs),
                             "--out", str(out), "--bootstrap", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _waits_on(pid: int, lock: Path) -> bool:
    """Whether process `pid` has `lock` open (it is then at or past taking the lock)."""
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.readlink(fd) == str(lock) for fd in fds.iterdir())
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_publish_that_waited_reads_the_stores_as_they_are_when_its_turn_comes(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "site" / "big"
    make_run(runs, "big", players=BOTS, pairs=2, store="shard-0-of-2.sqlite", only_pairs=[2], seed_text="s")
    with publishing(out):  # another shard's publish is writing the folder
        early = _publish(runs, out)  # started while shard 1 is still playing
        wait_for(lambda: early.poll() is not None or _waits_on(early.pid, out.parent / ".big.publish.lock"),
                 timeout=120, what="the publish to reach the folder's lock")
        assert early.poll() is None, f"published without waiting: {early.communicate()}"
        make_run(runs, "big", players=BOTS, pairs=2, store="shard-1-of-2.sqlite", only_pairs=[1], seed_text="s")
    _, err = early.communicate(timeout=300)
    assert early.returncode == 0, err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["partial"] is False, meta["runs"][0].get("partial_reasons")
    assert "Partial results." not in (out / "index.html").read_text()


def test_racing_publishes_of_a_complete_sharded_run_never_label_it_partial(tmp_path: Path) -> None:
    runs, out = tmp_path / "runs", tmp_path / "site" / "big"
    for shard, pairs in ((0, [2]), (1, [1, 3])):
        make_run(runs, "big", players=BOTS, pairs=3, store=f"shard-{shard}-of-2.sqlite", only_pairs=pairs,
                 seed_text="s")
    procs = [_publish(runs, out) for _ in range(3)]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    meta = json.loads((out / "meta.json").read_text())
    assert meta["partial"] is False, meta["runs"][0].get("partial_reasons")
    assert all("Partial results." not in page.read_text() for page in out.rglob("*.html"))
    assert not list(out.parent.glob(".big.tmp-*"))  # no publish removed another's folder in the making
