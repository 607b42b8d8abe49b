#!/usr/bin/env bash
# SLURM, tested for real (`make test-slurm`): the README's SLURM recipe, small, on a one-node cluster.
#
# Installs Debian's slurm-wlm, munge and accounting (slurmdbd on MariaDB: submitit follows its jobs
# with `sacct`), starts every daemon in a network namespace that has only loopback, plays bots-smoke
# unsharded, then as 2 shards through Hydra's submitit launcher, `scancel`s shard 1 mid-run, submits
# the same command again, publishes, and compares the merged result with the unsharded run byte for
# byte (games, input logs, teams, ratings, head-to-head, pairs). Then the analysis the same way: a job
# array of `pokebench analyse split --shard I/2`, shard 1 cancelled mid-way and submitted again, published
# beside the unsharded analysis of the whole run (the same luck and adjusted Elo, the same decisions
# scored, each once). Every daemon it started is stopped,
# and its folder removed (POKEBENCH_SLURM_KEEP=1 keeps it to read the logs).
#
# Needs root, apt-get and `unshare`; elsewhere it says why and exits 0 (skipped).
set -euo pipefail
REPO="$(cd "$(dirname "$0")/../.." && pwd)"
PY="$REPO/.venv/bin/python"

if [ "${1:-}" != --in-namespace ]; then
  skip() { echo "test-slurm skipped: $*"; exit 0; }
  [ "$(id -u)" = 0 ] || skip "needs root (it installs SLURM and starts its daemons)"
  command -v apt-get >/dev/null || skip "needs apt-get (Debian's slurm-wlm)"
  command -v unshare >/dev/null || skip "needs unshare (a loopback-only network namespace)"
  [ -x "$PY" ] || { echo "run make setup first" >&2; exit 2; }
  if ! command -v slurmctld >/dev/null || ! command -v slurmdbd >/dev/null || ! command -v mariadbd >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      slurm-wlm slurmdbd munge mariadb-server >/dev/null
  fi
  flock "$REPO/.venv" "$REPO/.venv/bin/pip" install --quiet hydra-submitit-launcher  # venv locked: see ray.sh
  unshare --net --mount true 2>/dev/null || skip "cannot make network and mount namespaces here (unshare)"
  exec unshare --net --mount --propagation private -- "$0" --in-namespace
fi

# ---- inside a network namespace with nothing but loopback, and a mount namespace of its own ----
mkdir -p /run/munge
mount -t tmpfs -o mode=755 tmpfs /run/munge  # munge's default socket, seen only in this namespace
ip link set lo up
# SLURM's daemons ask getaddrinfo for AI_ADDRCONFIG addresses, which counts no 127.x address: a
# second address on loopback itself (the namespace still has no other interface and no route out).
ip addr add 10.254.254.1/32 dev lo
D="$(mktemp -d /tmp/pokebench-slurm.XXXXXX)"
chmod 755 "$D"
DAEMONS=()
stop_all() {
  local i
  [ -z "${driver:-}" ] || kill "$driver" 2>/dev/null || true
  if command -v scancel >/dev/null && [ -e "${SLURM_CONF:-/nonexistent}" ]; then
    scancel --user=root 2>/dev/null || true  # no job outlives the cluster
    wait_until 30 "the jobs to end" no_jobs || true
  fi
  for ((i = ${#DAEMONS[@]} - 1; i >= 0; i--)); do  # the last started first, each to its end
    kill "${DAEMONS[i]}" 2>/dev/null || true
    wait "${DAEMONS[i]}" 2>/dev/null || true
  done
  if [ "${POKEBENCH_SLURM_KEEP:-0}" = 1 ]; then echo "kept: $D"; else rm -rf "$D"; fi
}
trap stop_all EXIT
# shellcheck source=tests/cluster/common.sh
. "$REPO/tests/cluster/common.sh"  # wait_until, games, check_merged
no_jobs() { [ -z "$(squeue -h 2>/dev/null)" ]; }
HOST="$(hostname -s)"
mkdir -p "$D"/{munge,db,ctld,slurmd,log,work}
chmod 700 "$D/munge"

# munge: the daemons' shared key and socket, here
mungekey --create --keyfile="$D/munge/munge.key"
munged --foreground --key-file="$D/munge/munge.key" \
  --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/munged.seed" \
  >>"$D/log/munged.log" 2>&1 &
DAEMONS+=($!)
wait_until 30 munged test -S /run/munge/munge.socket.2

# MariaDB, for slurmdbd (accounting: what sacct answers)
mariadb-install-db --no-defaults --user=root --datadir="$D/db" --auth-root-authentication-method=normal \
  --skip-test-db >"$D/log/mariadb-install.log" 2>&1
mariadbd --no-defaults --user=root --datadir="$D/db" --socket="$D/mysqld.sock" --bind-address=127.0.0.1 \
  --port=3306 --pid-file="$D/mysqld.pid" --log-error="$D/log/mariadb.log" >>"$D/log/mariadb.log" 2>&1 &
DAEMONS+=($!)
wait_until 60 MariaDB mariadb --no-defaults -S "$D/mysqld.sock" -e "SELECT 1"
mariadb --no-defaults -S "$D/mysqld.sock" -e \
  "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

export SLURM_CONF="$D/slurm.conf"  # every SLURM command (and submitit's) reads this one
cat >"$D/slurmdbd.conf" <<EOF
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=3306
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
LogFile=$D/log/slurmdbd.log
PidFile=$D/slurmdbd.pid
EOF
chmod 600 "$D/slurmdbd.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=pokebench
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$D/ctld
SlurmdSpoolDir=$D/slurmd
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=6819
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2048 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmdbd -D >>"$D/log/slurmdbd.log" 2>&1 &
DAEMONS+=($!)
wait_until 60 slurmdbd sacctmgr -n list cluster
slurmctld -D -i >>"$D/log/slurmctld.log" 2>&1 &
DAEMONS+=($!)
slurmd -D >>"$D/log/slurmd.log" 2>&1 &
DAEMONS+=($!)
wait_until 60 "an idle node" bash -c "sinfo -h -o %T | grep -q idle"
wait_until 60 "the cluster in accounting" bash -c "sacctmgr -n -P list cluster format=cluster | grep -qx pokebench"
echo "SLURM $(sinfo -V | cut -d' ' -f2): node $HOST with $(nproc) CPUs, accounting on; folder $D"

# ---- the README's recipe, small ----------------------------------------------------------------
cd "$D/work"
started=$SECONDS
"$PY" -m pokebench +run=bots-smoke pairs=2 concurrency=2 name=whole >"$D/log/whole.log" 2>&1
echo "unsharded run: $((SECONDS - started)) s"

SHARDS=(-m +run=bots-smoke pairs=2 name=split shard=0/2,1/2
  hydra/launcher=submitit_slurm hydra.launcher.partition=debug
  hydra.launcher.cpus_per_task=1 hydra.launcher.mem_gb=1 hydra.launcher.timeout_min=20
  hydra.launcher.signal_delay_s=120 hydra.launcher.max_num_timeout=2
  concurrency=2 publish=false)
started=$SECONDS
"$PY" -m pokebench "${SHARDS[@]}" >"$D/log/submit-1.log" 2>&1 &
driver=$!
# stopped within 20 ms of its first game (SIGSTOP; the cancel's SIGCONT, SIGTERM and SIGKILL end it), so
# that it is cancelled mid-run: a 1 s poll could let it play all 6 games in between
stopped="$("$PY" "$REPO/tests/support/kill_when_stored.py" runs/split/shard-1-of-2.sqlite "-m submitit\.core\._submit" 600 \
  --signal STOP --env SLURM_ARRAY_TASK_ID=1)" || { echo "shard 1 could not be stopped mid-run" >&2; squeue >&2; exit 1; }
read -r pid played <<<"$stopped"
job="$(squeue -h -o '%i %K' | awk '$2 == 1 {print $1}')"
[ -n "$job" ] || { echo "shard 1's job is not in the queue" >&2; squeue >&2; exit 1; }
echo "shard 1 (job $job, pid $pid, stopped) has stored $played of 6 games: scancel $job"
scancel "$job"
driver_ended() { ! kill -0 "$driver" 2>/dev/null; }
wait_until 900 "the first submission to end (does sacct answer?)" driver_ended
first=0; wait "$driver" || first=$?
echo "first submission: exit $first after $((SECONDS - started)) s; sacct:"
sacct -X -n -P -o JobID,State,NodeList | sed 's/^/  /'
[ "$first" != 0 ] || { echo "the driver did not notice the cancelled job" >&2; exit 1; }
sacct -X -n -P -o JobID,State | grep "^${job}|CANCELLED" >/dev/null || { echo "sacct does not say $job was cancelled" >&2; exit 1; }
job_ended() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
wait_until 60 "the cancelled job to end" job_ended
kept=$(games runs/split/shard-1-of-2.sqlite)

started=$SECONDS
"$PY" -m pokebench "${SHARDS[@]}" >"$D/log/submit-2.log" 2>&1
echo "second submission (the same command): $((SECONDS - started)) s; shard 1 had kept $kept game(s)"
check_merged "$HOST"

# ---- the analysis of the run, split the same way: a job array of `pokebench analyse --shard I/N` --------
ANALYSIS="$PY -m pokebench analyse split --shard \$SLURM_ARRAY_TASK_ID/2 ${ANALYSE[*]}"
started=$SECONDS
array="$(sbatch --parsable --array=0-1 --cpus-per-task=1 --mem=1G --output="$D/log/analyse-%a-try-1.log" --wrap "$ANALYSIS")"
stopped="$("$PY" "$REPO/tests/support/kill_when_stored.py" runs/split/decision_quality.shard-1-of-2.jsonl \
  "-m pokebench analyse split --shard 1/2" 600 --signal STOP)" \
  || { echo "the analysis's shard 1 could not be stopped mid-way" >&2; squeue >&2; exit 1; }
read -r pid lines <<<"$stopped"
echo "the analysis's shard 1 (job ${array}_1, pid $pid, stopped) has cached $lines decision(s): scancel"
scancel "${array}_1"
wait_until 300 "the analysis's jobs to end" no_jobs
sacct -X -n -P -o JobID,State | grep "^${array}_1|CANCELLED" >/dev/null \
  || { echo "sacct does not say the analysis's shard 1 was cancelled:" >&2; sacct -X -n -P -o JobID,State >&2; exit 1; }
sbatch --wait --array=1 --cpus-per-task=1 --mem=1G --output="$D/log/analyse-%a-try-2.log" --wrap "$ANALYSIS" >/dev/null \
  || { echo "the analysis's shard 1 failed when submitted again:" >&2; tail -5 "$D/log/analyse-1-try-2.log" >&2; exit 1; }
grep -h "^Analysed" "$D"/log/analyse-*-try-*.log | sed 's/^/  /'
echo "the analysis in 2 jobs, one cancelled and submitted again: $((SECONDS - started)) s"
check_analysed
echo "test-slurm passed"
