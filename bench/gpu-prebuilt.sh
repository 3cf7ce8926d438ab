#!/usr/bin/env bash
# gpu-prebuilt.sh -- the GPU tests and bench_gpu from executables built
# beforehand on the development machine (same x86-64, CUDA 13.0), so that
# a lent GPU's time goes to running, not to nvcc.
#   here:     meson setup build -Dcuda=enabled -Dservice=disabled -Dnetcdf=disabled
#             ninja -C build && bash bench/gpu-prebuilt.sh pack
#             (stripped copies and libcudart into build-bin/, git-ignored;
#             no libnetcdf: the lent machine has none, and no GPU test reads NetCDF).
#             Each executable is ~12 MB (the kernels for two architectures) and
#             what travels is at most 64 MiB: PACK names the ones to pack
#             (default: test_gpu test_grid_gpu test_stats bench_gpu tc_probe)
#   on a GPU: BENCH_ARGS=grid bash bench/gpu-prebuilt.sh
#             (the run tool with carry ["build-bin"]; logs under $OUT)
# TC_PROBE=1 also runs tc_probe (the tensor-core pair against auto and
# binary64) after the tests and prints its table.
# TESTS names the test executables to run (default: test_grid_gpu test_gpu
# test_stats; test_stats is the unit suite's statistics test, which runs
# "grid" on the GPU when there is one; test_topology, packed too, runs the
# exclusions through the GPU's auto and grid). The last lines are a short table.
# The folder is self-contained (this script is copied into it): where the
# run tool sends another checkout than this one (a helper's worktree: it
# sends the session's own), pack into an ignored folder of that checkout,
#   bash bench/gpu-prebuilt.sh pack /work/main/build-grid-bin
# and run it there: cd build-grid-bin && BIN=. BENCH_ARGS=grid bash gpu-prebuilt.sh
set -uo pipefail
if [ "${1:-}" = pack ]; then
  cd "$(dirname "$0")/.."
  bin=${2:-build-bin}
  rm -rf "$bin" && mkdir -p "$bin"
  for name in ${PACK:-test_gpu test_grid_gpu test_stats bench_gpu tc_probe}; do
    f=$(ls build/tests/gpu/$name build/tests/engine/$name build/bench/$name 2>/dev/null | head -1)
    [ -n "$f" ] || { echo "pack: no executable $name under build/"; exit 1; }
    strip -o "$bin/$name" "$f"
  done
  cp -L /usr/local/cuda/lib64/libcudart.so.13 "$bin/"
  cp bench/gpu-prebuilt.sh "$bin/"
  git rev-parse HEAD > "$bin/commit.txt"
  git status --short >> "$bin/commit.txt"
  du -sh "$bin"
  exit 0
fi
if [ -n "${BIN:-}" ]; then
  bin=$BIN
else
  cd "$(dirname "$0")/.."
  bin=build-bin
fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LD_LIBRARY_PATH="$(cd "$bin" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
echo "build-bin from: $(head -1 $bin/commit.txt)"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
summary=()
for t in ${TESTS:-test_grid_gpu test_gpu test_stats}; do
  t0=$(date +%s.%N)
  "./$bin/$t" > "$OUT/$t.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  line=$(printf '%-14s rc=%-3s %6.1f s  %s' "$t" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" \
         "$(grep -E 'all checks passed|check\(s\) failed|skipped' "$OUT/$t.log" | tail -1)")
  summary+=("$line")
  grep -E "FAILED|check failed" "$OUT/$t.log" | head -20
done
grep -E "^  " "$OUT/test_grid_gpu.log" | head -80
if [ -n "${BENCH_ARGS:-}" ]; then
  t0=$(date +%s)
  "./$bin/bench_gpu" $BENCH_ARGS > "$OUT/bench.log" 2>&1
  rc=$?
  echo "bench: $(( $(date +%s) - t0 )) s, rc $rc"
  sed -n '/^== grid/,/^== summary/p' "$OUT/bench.log" | grep -v '^== summary'
  sed -n '/== summary/,$p' "$OUT/bench.log"
fi
if [ -n "${TC_PROBE:-}" ]; then
  t0=$(date +%s)
  "./$bin/tc_probe" > "$OUT/tc_probe.log" 2>&1
  rc=$?
  echo "tc_probe: $(( $(date +%s) - t0 )) s, rc $rc"
  sed -n '/== summary/,$p' "$OUT/tc_probe.log"
fi
echo "== tests"
printf '%s\n' "${summary[@]}"
