#!/usr/bin/env bash
# weighted_grid_ab.sh -- weighted two-axis jobs on the GPU grid, two builds'
# sdh alternated in one run: (s, mu) 25 log s bins from 0.1 to 200 x 50 mu
# bins, and (r_p, pi) 25 log r_p bins x pi_max 40 in 40 bins, N points
# uniform in a periodic 1000 box, weights in [0.5, 1.5); three rounds, the
# median kernel ms of each side, and whether every run's counts are identical
# (the weighted sums: their largest relative difference; the GPU's atomics
# order them differently run to run).
#   here:     bash bench/weighted_grid_ab.sh pack BEFORE_BUILD AFTER_BUILD DIR.tar.xz
#   on a GPU: N=500000 bash bench/weighted_grid_ab.sh run DIR.tar.xz   (the run tool, carry it)
set -uo pipefail
if [ "${1:-}" = pack ]; then
  . "$(dirname "$0")/pack_util.sh"
  dir=$(mktemp -d)/wgrid
  mkdir -p "$dir/lib"
  pack_exe "$2/src/cli/sdh" "$dir/sdh_before" "$dir/lib" &&
    pack_exe "$3/src/cli/sdh" "$dir/sdh_after" "$dir/lib" || exit 1
  cp -L /usr/local/cuda/lib64/libcudart.so.13 "$dir/lib/"
  cp "$0" "$dir/"
  tar -cJf "$4" -C "$(dirname "$dir")" wgrid && ls -l "$4"
  exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 pack BEFORE AFTER OUT.tar.xz | run OUT.tar.xz"; exit 2; }
tmp=$(mktemp -d)
tar -xJf "$2" -C "$tmp" || exit 1
d=$tmp/wgrid
export LD_LIBRARY_PATH=$d/lib
N=${N:-500000}; OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
awk -v n="$N" 'BEGIN{srand(7); print "x,y,z,w"; for(i=0;i<n;i++) printf "%.9f,%.9f,%.9f,%.6f\n", rand()*1000, rand()*1000, rand()*1000, 0.5+rand()}' > "$tmp/pts.csv"
nvidia-smi --query-gpu=name --format=csv,noheader
declare -A args
args[s_mu]="--statistic s_mu --log-bins 0.1,200,25 --mu-bins 50"
args[rp_pi]="--statistic rp_pi --rp-log-bins 0.1,200,25 --pi-max 40 --pi-bins 40"
for st in s_mu rp_pi; do for r in 1 2 3; do for side in before after; do
  # shellcheck disable=SC2086 # the statistic's flags: words
  "$d/sdh_$side" "$tmp/pts.csv" --periodic 1000 ${args[$st]} --weighted -k grid --format json > "$OUT/${st}_${side}_$r.json" 2> "$OUT/${st}_${side}_$r.err"
done; done; done
python3 - "$OUT" <<'PY'
import json, sys, statistics
out = sys.argv[1]
for st in ("s_mu", "rp_pi"):
    t, runs = {}, {}
    for side in ("before", "after"):
        runs[side] = [json.load(open(f"{out}/{st}_{side}_{r}.json")) for r in (1, 2, 3)]
        t[side] = statistics.median(x["timing_ms"]["kernel"] for x in runs[side])
    ref = runs["before"][0]
    counts_same = all(r["counts"] == ref["counts"] and r["overflow"] == ref["overflow"]
                      for s in runs.values() for r in s)
    def flat(v):
        return [y for x in v for y in (x if isinstance(x, list) else [x])]
    w0 = flat(ref["weighted"])
    rel = 0.0
    for s in runs.values():
        for r in s:
            for a, b in zip(flat(r["weighted"]), w0):
                if a != b:
                    rel = max(rel, abs(a - b) / max(abs(b), 1e-300))
    print(f"{st}: before {t['before']:.1f} ms  after {t['after']:.1f} ms  ratio {t['before']/t['after']:.3f}x  "
          f"counts identical (6 runs): {counts_same}  weighted sums: max rel diff {rel:.2e} over the 6 runs")
    print(f"  before: {ref['device']}, block {ref['block_size']}\n  after:  {runs['after'][0]['device']}, block {runs['after'][0]['block_size']}")
PY
