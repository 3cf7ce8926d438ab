#!/usr/bin/env bash
# before-after.sh -- the same benchmarks from two builds, alternated in one
# run on one machine, so that a change is measured against what it
# changed (issue 29: W2, W3, B70k, GS1, G1, G2 and the CPU engine within 2%
# of before).
#
#   here:     bash bench/before-after.sh pack BEFORE_BUILD AFTER_BUILD DIR
#             (each build dir configured with -Dcuda=enabled -Dservice=disabled;
#             stripped bench_gpu and bench_cpu of each, and libcudart, into DIR,
#             packed as DIR.tar.xz: the run tool carries at most 64 MiB)
#   on a GPU: ROUNDS=2 bash bench/before-after.sh run DIR.tar.xz
#             (the run tool with carry ["DIR.tar.xz"]; logs under $OUT;
#             SECTIONS="grid" runs only those of bench_gpu's sections,
#             NO_CPU=1 leaves bench_cpu out)
#
# Each round runs before's bench_gpu, then after's (and bench_cpu the
# same), so drift in clocks or temperature falls on both. Every figure is a
# kernel time (ms, CUDA events or the CPU's wall clock), the median of the
# rounds' medians; the ratio is before / after (above 1: after is faster).
set -uo pipefail
if [ "${1:-}" = pack ]; then
  before=$2 after=$3 dir=$4
  rm -rf "$dir" && mkdir -p "$dir"
  for side in before after; do
    b=${!side}
    for exe in bench_gpu bench_cpu; do
      strip -o "$dir/${exe}_$side" "$b/bench/$exe" || exit 1
    done
    (cd "$b/.." && git rev-parse HEAD) > "$dir/commit_$side.txt"
  done
  cp -L /usr/local/cuda/lib64/libcudart.so.13 "$dir/"
  cp "$0" "$dir/"
  tar -cJf "$dir.tar.xz" -C "$(dirname "$dir")" "$(basename "$dir")"
  du -sh "$dir.tar.xz"
  exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 pack BEFORE AFTER DIR | run DIR.tar.xz"; exit 2; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
tmp=$(mktemp -d)
tar -xJf "$2" -C "$tmp"
dir=$(ls -d "$tmp"/*/ | head -1)
export LD_LIBRARY_PATH="$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "before: $(cat "$dir/commit_before.txt")  after: $(cat "$dir/commit_after.txt")"
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader | head -1
export BENCH_GPU_WL="W3 W2 B70k" BENCH_GPU_KERNELS=auto BENCH_GPU_PREC=exact
for r in $(seq 1 "${ROUNDS:-2}"); do
  for side in before after; do
    "$dir/bench_gpu_$side" ${SECTIONS:-table stats grid} > "$OUT/gpu_${side}_$r.log" 2>&1
    [ -n "${NO_CPU:-}" ] || "$dir/bench_cpu_$side" --quick --runs 5 > "$OUT/cpu_${side}_$r.log" 2>&1
  done
done
# one figure (ms) from one log: W2 W3 B70k GS1 GS2 G1 G2 W4cpu N200kcpu
figure() {
  case $1 in
    W2|W3|B70k) awk -v w="$1" '$1 == w && $2 == "auto" && $3 == "exact" {print $4; exit}' "$2" ;;
    GS1|GS2) grep -m1 "^  $1 " "$2" | sed -E 's/.*tiled-stats +([0-9.]+) ms.*/\1/' ;;
    G1|G2) grep -m1 "^$1 grid " "$2" | sed -E 's/^G. grid ([0-9.]+) ms.*/\1/' ;;
    W4cpu) grep -m1 "^W4 N=100000 *cpu " "$2" | sed -E 's/.*median +([0-9.]+) ms.*/\1/' ;;
    N200kcpu) grep -m1 "^N=200000 *cpu " "$2" | sed -E 's/.*median +([0-9.]+) ms.*/\1/' ;;
  esac
}
median() { sort -g | awk '{v[NR] = $1} END {if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2)}'; }
echo "== before/after on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), ${ROUNDS:-2} rounds alternated"
printf '%-9s %12s %12s %8s\n' figure "before ms" "after ms" ratio
for f in W2 W3 B70k GS1 GS2 G1 G2 W4cpu N200kcpu; do
  kind=gpu; case $f in *cpu) kind=cpu ;; esac
  b=$(for l in "$OUT"/${kind}_before_*.log; do figure "$f" "$l"; done | median)
  a=$(for l in "$OUT"/${kind}_after_*.log; do figure "$f" "$l"; done | median)
  if [ -n "$b" ] && [ -n "$a" ]; then
    printf '%-9s %12.3f %12.3f %7.3fx\n' "$f" "$b" "$a" "$(awk "BEGIN{print $b / $a}")"
  else
    printf '%-9s %12s %12s\n' "$f" "${b:--}" "${a:--}"
  fi
done
rm -rf "$tmp"
