#!/bin/bash
# test_slurm.sh -- deploy/slurm/submit.sh against a real one-node Slurm
# cluster started here in a temporary dir: slurmctld and slurmd (Debian's
# slurm-wlm 22.05) on two free loopback ports, AuthType=auth/none (no munge
# key to make), proctrack/linuxproc and task/none (no cgroups), the node
# declared with 4 CPUs (config_overrides: the array script asks for 4 a
# task) and state and spool dirs of its own. It plans a job, submits the
# array and the merge (--dependency=afterok), waits for the merge and holds
# DIR/result.json to sdh on the same file. About 10 s.
#
# Skips (77) without slurmctld/slurmd/sbatch, without root (slurmd runs the
# jobs as their user), or when the controller does not come up.
#
# usage: test_slurm.sh HISTD SDH
set -u
HISTD=$1
SDH=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for t in slurmctld slurmd sbatch scontrol squeue; do
  if ! command -v "$t" >/dev/null 2>&1 && [ ! -x "/usr/sbin/$t" ]; then
    echo "SKIP: no $t (Debian: apt-get install slurm-wlm)"
    exit 77
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: slurmd runs jobs as their user and needs root here"
  exit 77
fi
PATH=$PATH:/usr/sbin
tmp=$(mktemp -d /tmp/histd-slurm-XXXXXX)
ctld_pid= d_pid=
cleanup() {
  [ -n "$ctld_pid" ] && kill "$ctld_pid" 2>/dev/null
  [ -n "$d_pid" ] && kill "$d_pid" 2>/dev/null
  sleep 0.5
  [ -n "$ctld_pid" ] && kill -9 "$ctld_pid" 2>/dev/null
  [ -n "$d_pid" ] && kill -9 "$d_pid" 2>/dev/null
  if [ "${keep:-0}" = 1 ]; then echo "(kept for a look: $tmp)"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "---- slurmctld log (tail)"; tail -20 "$tmp/log/ctld.log" 2>/dev/null
  echo "---- slurmd log (tail)"; tail -20 "$tmp/log/d.log" 2>/dev/null
  keep=1
  exit 1
}

read -r p1 p2 < <(/usr/bin/python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/log" "$tmp/work"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=histdtest
SlurmctldHost=localhost
SlurmctldPort=$p1
SlurmdPort=$p2
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/ctld.log
SlurmdLogFile=$tmp/log/d.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=1
SlurmdParameters=config_overrides
ReturnToService=2
MpiDefault=none
NodeName=localhost NodeHostname=$(hostname) CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=histd Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$tmp/slurm.conf
# in the foreground (-D), so that the pids are ours to stop
slurmctld -D -i >"$tmp/log/ctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -N localhost >"$tmp/log/d.out" 2>&1 &
d_pid=$!
up=0
for _ in $(seq 60); do
  if sinfo -h -o '%t' 2>/dev/null | grep -qx idle; then up=1; break; fi
  sleep 0.5
done
if [ $up = 0 ]; then
  echo "SKIP: the one-node Slurm cluster did not come up in 30 s:"
  tail -5 "$tmp/log/ctld.log" "$tmp/log/d.log" "$tmp/log/ctld.out" "$tmp/log/d.out" 2>/dev/null
  exit 77
fi
echo "ok    a one-node Slurm cluster: $(sinfo -h -o '%P %D nodes %c CPUs %t')"

cd "$tmp/work" || exit 1
/usr/bin/python3 -c '
import numpy as np
p = np.random.default_rng(7).random((4000, 3)) * 100
np.savetxt("pts.csv", p, delimiter=",", fmt="%.17g")'
echo '{"dataset": "pts.csv", "bucket_width": 4}' >JOB.json
t0=$(date +%s)
out=$(HISTD=$HISTD "$root/deploy/slurm/submit.sh" JOB.json run1 6 2) || fail "submit.sh: $out"
echo "ok    submit.sh: $out"
merge=$(sed -n 's/.*merge \([0-9]*\):.*/\1/p' <<<"$out")
[ -n "$merge" ] || fail "no merge job id in: $out"
state=
for _ in $(seq 180); do
  state=$(scontrol show job "$merge" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case $state in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  sleep 0.5
done
[ "$state" = COMPLETED ] || fail "the merge job ended $state: $(cat histd-merge-*.out 2>/dev/null)"
echo "ok    the array and the merge (afterok) ran in $(($(date +%s) - t0)) s"
grep -q "on cpu: " histd-shard-*.out || fail "no shard log"
"$SDH" pts.csv --width 4 --format json >sdh.json || fail "sdh"
/usr/bin/python3 - run1/result.json sdh.json <<'EOF' || fail "the merged result is not sdh's"
import json, sys
got, want = (json.load(open(p)) for p in sys.argv[1:])
for k in ("counts", "overflow", "total", "edges"):
    assert got[k] == want[k], k
print("ok    DIR/result.json counts %d pairs, identical to sdh's" % got["total"])
EOF
echo "test_slurm: all ok"
