# Shared by the cluster tests (slurm.sh, ray.sh); sourced after they set REPO, PY and D (their folder).

wait_until() {  # wait_until SECONDS WHAT COMMAND...
  local deadline=$((SECONDS + $1)) what=$2; shift 2
  until "$@" >"$D/wait.out" 2>&1; do
    [ $SECONDS -lt $deadline ] || { echo "timed out waiting for $what: $(tail -3 "$D/wait.out")" >&2; return 1; }
    sleep 1
  done
}

games() {  # games STORE: how many games the store holds (0 before it exists)
  "$PY" -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('SELECT count(*) FROM games').fetchone()[0])" "$1" 2>/dev/null || echo 0
}

check_merged() {  # check_merged HOST: publish run split, compare it with run whole; shard 1 started twice on HOST
  "$PY" -m pokebench.cli.publish split >"$D/log/publish.log" 2>&1
  "$PY" "$REPO/tests/support/published.py" data/site/whole data/site/split
  local attempts
  attempts=$(grep -c "PokéBench starts the server on $1 " runs/split/showdown-shard-1-of-2.log)
  [ "$attempts" -ge 2 ] || { echo "shard 1's server log holds $attempts server start(s), not both attempts" >&2; return 1; }
  "$PY" -c "import sys; from pokebench.results.store import RunStore; s = RunStore.open_existing(sys.argv[1]); \
hosts = [x['host'] for x in s.starts()]; assert hosts == [sys.argv[2]] * 2, hosts" runs/split/shard-1-of-2.sqlite "$1"
  echo "shard 1: both attempts in its store's starts (host $1), $attempts server starts in its log"
}

#: the analysis's small searches in the cluster tests (the shards' cache files are tested, not the searches)
SEARCHES=(--iterations 20 --samples 1)
ANALYSE=("${SEARCHES[@]}" --workers 1)

check_analysed() {  # check_analysed: the analysis of run whole (unsharded) published beside split's (sharded)
  "$PY" -m pokebench analyse whole "${ANALYSE[@]}" >"$D/log/analyse-whole.log" 2>&1
  local shard
  for shard in 0 1; do
    [ -s "runs/split/luck.shard-$shard-of-2.jsonl" ] || { echo "shard $shard of the analysis wrote no luck" >&2; return 1; }
  done
  [ ! -e runs/split/luck.jsonl ] || { echo "a shard of the analysis wrote the run's own cache file" >&2; return 1; }
  "$PY" -m pokebench.cli.publish whole "${SEARCHES[@]}" >"$D/log/publish-whole.log" 2>&1
  "$PY" -m pokebench.cli.publish split "${SEARCHES[@]}" >"$D/log/publish-analysed.log" 2>&1
  "$PY" "$REPO/tests/support/published.py" data/site/whole data/site/split --analysed
}
