#!/usr/bin/env bash
# Ray, tested for real (`make test-ray`): the README's Ray recipe, small, on a one-node Ray cluster.
#
# Installs the `ray` extra (Ray with its dashboard, which serves the job API) into .venv, starts a
# Ray head with token authentication in network, PID and mount namespaces of its own (nothing but
# loopback, which no other user of the machine shares there: the job API runs any command it is
# sent; `ray stop` sees only the namespace's processes; every process Ray starts dies with it),
# plays bots-smoke unsharded, then as 2 shards, one `ray job submit` each, `kill -9`s shard 1's
# PokéBench process mid-run, submits that shard again, checks that every open port is on 127.0.0.1,
# publishes, and compares the merged result with the unsharded run byte for byte (games, input
# logs, teams, ratings, head-to-head, pairs); then the analysis the same way, a job per shard of
# `pokebench analyse split --shard I/2`, shard 1 killed mid-way and submitted again, published beside the
# unsharded analysis (the same luck and adjusted Elo, the same decisions scored). It stops Ray and removes its folder
# (POKEBENCH_RAY_KEEP=1 keeps it to read the logs).
#
# Needs root and `unshare`; elsewhere it says why and exits 0 (skipped).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PY="$REPO/.venv/bin/python"
RAY="$REPO/.venv/bin/ray"

if [ "${1:-}" != --in-namespace ]; then
  skip() { echo "test-ray skipped: $*"; exit 0; }
  [ "$(id -u)" = 0 ] || skip "needs root (network and PID namespaces for the Ray cluster)"
  command -v unshare >/dev/null || skip "needs unshare (a loopback-only network namespace)"
  [ -x "$PY" ] || { echo "run make setup first" >&2; exit 2; }
  unshare --net --pid --fork --mount-proc true 2>/dev/null || skip "cannot make network and PID namespaces here (unshare)"
  # the `ray` extra's requirements, as pyproject.toml pins them (`pip install -e '.[ray]'` would rebuild the
  # package); with the venv locked, as slurm.sh does: .ci/run runs the two side by side
  flock "$REPO/.venv" "$REPO/.venv/bin/pip" install --quiet $("$PY" -c "import sys, tomllib; \
print(*tomllib.load(open(sys.argv[1], 'rb'))['project']['optional-dependencies']['ray'])" "$REPO/pyproject.toml")
  exec unshare --net --pid --fork --mount-proc -- "$0" --in-namespace
fi

# ---- PID 1 of namespaces with nothing but loopback, our own processes and our own /proc ----------
began=$SECONDS
ip link set lo up
D="$(mktemp -d /tmp/pokebench-ray.XXXXXX)"
stop_all() {
  "$RAY" stop --force >"$D/ray-stop.log" 2>&1 || true  # sees only this namespace's processes
  times >"$D/times"  # not in a pipe: a subshell's children are not ours
  echo "test-ray took $((SECONDS - began)) s, $(awk 'NR == 2 {print $1, "user and", $2, "system"}' "$D/times") CPU time in its processes"
  if [ "${POKEBENCH_RAY_KEEP:-0}" = 1 ]; then echo "kept: $D"; else rm -rf "$D"; fi
}  # whatever Ray leaves (its dashboard's forkserver) is killed with the namespace when this script ends
trap stop_all EXIT
trap 'exit 130' INT TERM  # PID 1 ignores signals it does not handle
# shellcheck source=tests/cluster/common.sh
. "$REPO/tests/cluster/common.sh"  # wait_until, games, check_merged
mkdir -p "$D/log" "$D/work"
cd "$D/work"

started=$SECONDS
"$PY" -m pokebench +run=bots-smoke pairs=2 concurrency=2 name=whole >"$D/log/whole.log" 2>&1
echo "unsharded run: $((SECONDS - started)) s"

# ---- the README's recipe, small ----------------------------------------------------------------
export RAY_AUTH_MODE=token RAY_AUTH_TOKEN_PATH="$D/ray-token"  # every ray command and the head read these
(umask 077 && "$PY" -c "import secrets; print(secrets.token_hex(32), end='')" >"$RAY_AUTH_TOKEN_PATH")
start_head() {
  "$RAY" start --head --node-ip-address=127.0.0.1 --port=6379 --dashboard-host=127.0.0.1 --num-cpus=2 \
    --object-store-memory=100000000 --disable-usage-stats --temp-dir="$D/ray" >>"$D/log/ray-start.log" 2>&1
}
started=$SECONDS
# Ray gives its raylet a fixed 30 s to register (ray/_private/node.py): on a busy machine, once more
start_head || { echo "ray start failed ($(grep -m1 -o 'timed out during startup' "$D/log/ray-start.log" || echo see its log)): again"
  "$RAY" stop --force >>"$D/log/ray-start.log" 2>&1; start_head; } \
  || { echo "ray start failed:" >&2; tail -20 "$D/log/ray-start.log" >&2; exit 1; }
echo "Ray $("$PY" -c 'import ray; print(ray.__version__)'): head on 127.0.0.1 with 2 CPUs up in $((SECONDS - started)) s; folder $D"
submit() {  # submit SHARD TRY: shard SHARD of 2 as a Ray job, until it ends (exit 0 when it succeeded)
  "$RAY" job submit --address http://127.0.0.1:8265 --submission-id "split-shard-$1-of-2-try-$2" \
    --entrypoint-num-cpus=1 -- \
    "$PY" -m pokebench +run=bots-smoke pairs=2 name=split "shard=$1/2" server.sim_processes=1 concurrency=2 publish=false
}

started=$SECONDS
submit 0 1 >"$D/log/shard-0-try-1.log" 2>&1 &
shard_0=$!
submit 1 1 >"$D/log/shard-1-try-1.log" 2>&1 &
shard_1=$!
# polled every 20 ms, killed at once: a 1 s poll let the shard play all 6 games in between (CI, once)
killed="$("$PY" "$REPO/tests/support/kill_when_stored.py" runs/split/shard-1-of-2.sqlite "^$PY -m pokebench .*shard=1/2" 600)" \
  || { echo "shard 1 could not be killed mid-run:" >&2; tail -20 "$D/log/shard-1-try-1.log" >&2; exit 1; }
read -r pid played <<<"$killed"
[ "$played" -lt 6 ] || { echo "shard 1 had stored all its games when it was killed" >&2; exit 1; }
echo "shard 1 (pid $pid) had stored $played of 6 games: killed with kill -9"
first=0; wait "$shard_1" || first=$?
[ "$first" != 0 ] || { echo "ray job submit did not report shard 1's killed job as failed" >&2; exit 1; }
"$RAY" job status --address http://127.0.0.1:8265 split-shard-1-of-2-try-1 >"$D/log/shard-1-try-1.status" 2>&1
grep -Eq "exit code (137|-9)" "$D/log/shard-1-try-1.status" \
  || { echo "Ray does not say shard 1's job was killed:" >&2; tail -5 "$D/log/shard-1-try-1.log" >&2; exit 1; }
kept=$(games runs/split/shard-1-of-2.sqlite)
echo "shard 1's first job failed (killed) after $((SECONDS - started)) s, with $kept game(s) stored: submitted again"
submit 1 2 >"$D/log/shard-1-try-2.log" 2>&1 &
shard_1=$!
# What listens here is Ray's and the shards' alone: with these flags, all of it on 127.0.0.1
outside="$(ss -Hltnp | awk '$4 !~ /^(127\.0\.0\.1|\[::ffff:127\.0\.0\.1\]):/')"
[ -z "$outside" ] || { echo "listening beyond 127.0.0.1 (the README says it does not):" >&2; echo "$outside" >&2; exit 1; }
echo "Ray and the shards listen on $(ss -Hltn | wc -l) TCP ports, every one on 127.0.0.1"
wait "$shard_0" || { echo "shard 0's job failed:" >&2; tail -20 "$D/log/shard-0-try-1.log" >&2; exit 1; }
wait "$shard_1" || { echo "shard 1's second job failed:" >&2; tail -20 "$D/log/shard-1-try-2.log" >&2; exit 1; }
echo "both shards done after $((SECONDS - started)) s"
check_merged "$(hostname)"

# ---- the analysis of the run, split the same way: `pokebench analyse --shard I/N` as a job each ----------
analyse() {  # analyse SHARD TRY: shard SHARD of 2 of the analysis as a Ray job, until it ends
  "$RAY" job submit --address http://127.0.0.1:8265 --submission-id "analyse-shard-$1-of-2-try-$2" \
    --entrypoint-num-cpus=1 -- "$PY" -m pokebench analyse split --shard "$1/2" "${ANALYSE[@]}"
}
started=$SECONDS
analyse 0 1 >"$D/log/analyse-0-try-1.log" 2>&1 &
shard_0=$!
analyse 1 1 >"$D/log/analyse-1-try-1.log" 2>&1 &
shard_1=$!
killed="$("$PY" "$REPO/tests/support/kill_when_stored.py" runs/split/decision_quality.shard-1-of-2.jsonl \
  "^$PY -m pokebench analyse split --shard 1/2" 600)" \
  || { echo "the analysis's shard 1 could not be killed mid-way:" >&2; tail -20 "$D/log/analyse-1-try-1.log" >&2; exit 1; }
read -r pid lines <<<"$killed"
echo "the analysis's shard 1 (pid $pid) had cached $lines decision(s): killed with kill -9"
first=0; wait "$shard_1" || first=$?
[ "$first" != 0 ] || { echo "ray job submit did not report the analysis's killed job as failed" >&2; exit 1; }
analyse 1 2 >"$D/log/analyse-1-try-2.log" 2>&1 \
  || { echo "the analysis's shard 1 failed when submitted again:" >&2; tail -20 "$D/log/analyse-1-try-2.log" >&2; exit 1; }
wait "$shard_0" || { echo "the analysis's shard 0 failed:" >&2; tail -20 "$D/log/analyse-0-try-1.log" >&2; exit 1; }
grep -h "^Analysed" "$D"/log/analyse-*-try-*.log | sed 's/^/  /'
echo "the analysis in 2 jobs, one killed and submitted again: $((SECONDS - started)) s"
check_analysed
echo "test-ray passed"
