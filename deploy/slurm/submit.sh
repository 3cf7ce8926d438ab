#!/bin/bash
# Plans a histd job into shards and submits it to Slurm: a job array that
# runs every shard (at most PARALLEL at once), then a merge job that starts
# when all of them succeeded (--dependency=afterok). The result lands in
# DIR/result.FORMAT.
#
#   deploy/slurm/submit.sh JOB.json DIR [SHARDS [PARALLEL [FORMAT]]]
#
# SHARDS (default 64) is an upper bound: the plan may make fewer, and the
# array is as long as the plan. HISTD names the histd binary (default: histd
# on PATH); it is passed to the jobs, like the rest of the environment.
# Options for both jobs go in sbatch's own variables (SBATCH_PARTITION,
# SBATCH_ACCOUNT, SBATCH_TIMELIMIT, ...). Prints the two job ids.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
job=$1
dir=$2
shards=${3:-64}
parallel=${4:-16}
format=${5:-json}
export HISTD=${HISTD:-histd}

count=$("$HISTD" batch plan "$job" --shards "$shards" --out "$dir")
dir=$(cd "$dir" && pwd)
array=$(sbatch --parsable --array="0-$((count - 1))%$parallel" \
               "$here/histd-array.sbatch" "$dir")
array=${array%%;*} # --parsable prints "id" or "id;cluster"
merge=$(sbatch --parsable --dependency="afterok:$array" \
               "$here/histd-merge.sbatch" "$dir" "$format")
merge=${merge%%;*}
echo "array $array ($count shards), merge $merge: the result will be $dir/result.$format"
