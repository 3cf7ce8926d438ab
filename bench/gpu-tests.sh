#!/usr/bin/env bash
# gpu-tests.sh -- GPU test programs and sdh built here, run on a lent GPU
# machine (Ubuntu, no package manager): the executables stripped, with the
# Debian libraries they link that such a machine lacks (ldd: libnetcdf,
# libhdf5 and theirs), packed into one tar.xz the run tool carries.
#   here:     bash bench/gpu-tests.sh pack build-cuda gpu-tests.tar.xz
#             (PACK names the executables; default below)
#   on a GPU: bash bench/gpu-tests.sh run gpu-tests.tar.xz
#             (TESTS names the ones to run; each GPU suite's variable is
#             set, so a test without a GPU exits 77; M1=1 also runs
#             bench/bench_m1.sh with the packed sdh on the GPU, N atoms and
#             FRAMES frames, and on the CPU's cores, FRAMES_CPU frames). The
#             last lines are a short table.
set -uo pipefail
PACK=${PACK:-test_gpu test_grid_gpu test_points test_pairing test_partials test_blocks test_topology test_images test_bins2 test_stats sdh}
if [ "${1:-}" = pack ]; then
  . "$(dirname "$0")/pack_util.sh"
  build=$2 tarball=$3 dir=$(mktemp -d)
  mkdir -p "$dir/bin/lib"
  for name in $PACK; do
    f=$(find "$build" -name "$name" -type f -perm -u+x | head -1)
    [ -n "$f" ] || { echo "pack: no executable $name under $build"; exit 1; }
    pack_exe "$f" "$dir/bin/$name" "$dir/bin/lib" || exit 1
  done
  cp -L /usr/local/cuda/lib64/libcudart.so.13 "$dir/bin/lib/"
  cp "$0" bench/bench_m1.sh "$dir/bin/"
  git rev-parse HEAD > "$dir/bin/commit.txt"
  tar -C "$dir" -cJf "$tarball" bin && rm -rf "$dir"
  ls -l "$tarball"
  exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 pack BUILD TARBALL | run TARBALL"; exit 2; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
dir=$(mktemp -d)
tar -C "$dir" -xJf "$2" || exit 1
bin=$dir/bin
export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export TEST_POINTS_GPU=1 TEST_PAIRING_GPU=1 TEST_BINS2_GPU=1
echo "commit: $(cat "$bin/commit.txt")"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/gpu.txt"
summary=()
for t in ${TESTS:-test_gpu test_grid_gpu test_points test_pairing test_partials test_blocks test_topology test_images test_bins2 test_stats}; do
  t0=$(date +%s.%N)
  (cd "$(dirname "$0")/.." 2>/dev/null; "$bin/$t") > "$OUT/$t.log" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  summary+=("$(printf '%-14s rc=%-3s %6.1f s  %s' "$t" "$rc" "$(awk "BEGIN{print $t1 - $t0}")" \
    "$(grep -E 'all checks passed|checks? failed|skipped|on .*(H100|H200|CPU)' "$OUT/$t.log" | tail -1)")")
  grep -E "check failed" "$OUT/$t.log" | head -5
done
if [ -n "${M1:-}" ]; then
  SDH=$bin/sdh N=${N:-100000} FRAMES=${FRAMES:-10} ROUNDS=${ROUNDS:-3} DIR=$dir PER_ATOM=${PER_ATOM:-} \
    bash "$bin/bench_m1.sh" 2>&1 | tail -5 | tee "$OUT/m1_gpu.txt"
  # the CPU's cores (no GPU visible): fewer frames and rounds (minutes otherwise)
  CUDA_VISIBLE_DEVICES= PER_ATOM=${PER_ATOM:-} SDH=$bin/sdh N=${N:-100000} FRAMES=${FRAMES_CPU:-2} \
    ROUNDS=${ROUNDS_CPU:-1} DIR=$dir bash "$bin/bench_m1.sh" 2>&1 | tail -5 | tee "$OUT/m1_cpu.txt"
fi
echo "== tests"
printf '%s\n' "${summary[@]}"
