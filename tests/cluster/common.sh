# Shared by the cluster tests (slurm.sh, ray.sh); sourced after they set D (their folder) and PY.

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
