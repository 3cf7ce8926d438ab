#!/usr/bin/env bash
# bench_c1.sh -- workload C1 of issue 30 on a lent GPU machine (Ubuntu,
# python3, no package manager, no network): histd's sdh from a CUDA build
# against Corrfunc's DDrppi and DDsmu on the same machine's cores
# (bench/bench_c1.py: the mock, the runs, the table, the counts compared).
#   here:     bash bench/bench_c1.sh pack BUILD_DIR CORRFUNC_BIN c1.tar.xz
#             (CORRFUNC_BIN: bench/corrfunc_build.sh's OUTDIR, -march
#             x86-64-v4; CORRFUNC_BIN_V3=DIR also packs an x86-64-v3 build,
#             run where the CPU has no AVX-512)
#   on a GPU: bash bench/bench_c1.sh run c1.tar.xz
#             (N_D, N_R, ROUNDS, CF_ROUNDS, CF_R, THREADS, KERNEL, SLOW_S,
#             SDH_ARGS pass through to bench_c1.py; the table lands in $OUT/c1.txt)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# the libraries a lent machine may lack (pack_util.sh) go to bin/lib: only
# the tools see them (TOOL_LIBS), not python3
if [ "${1:-}" = pack ]; then
  . "$here/pack_util.sh"
  build=$2 cfbin=$3 tarball=$4 dir=$(mktemp -d)
  mkdir -p "$dir/bin/lib" "$dir/bin/corrfunc"
  sdh=$build/src/cli/sdh
  [ -x "$sdh" ] || { echo "pack: no sdh at $sdh"; exit 1; }
  pack_exe "$sdh" "$dir/bin/sdh" "$dir/bin/lib" || exit 1
  for v in "$cfbin:corrfunc" "${CORRFUNC_BIN_V3:-}:corrfunc-v3"; do
    src=${v%%:*} dst=$dir/bin/${v##*:}
    [ -n "$src" ] || continue
    mkdir -p "$dst"
    for p in DDrppi DDsmu; do
      [ -x "$src/$p" ] || { echo "pack: no $p in $src"; exit 1; }
      pack_exe "$src/$p" "$dst/$p" "$dir/bin/lib" || exit 1
    done
  done
  if [ -n "${CUCOUNT_BIN:-}" ]; then
    pack_exe "$CUCOUNT_BIN/cucount_c1" "$dir/bin/cucount_c1" "$dir/bin/lib" || exit 1
  fi
  cp "$0" "$here/bench_c1.py" "$here/corrfunc_compare.py" "$dir/bin/"
  git -C "$here" rev-parse HEAD > "$dir/bin/commit.txt"
  tar -C "$dir" -cJf "$tarball" bin && rm -rf "$dir"
  ls -l "$tarball"
  exit 0
fi
[ "${1:-}" = run ] || { echo "usage: $0 pack BUILD_DIR CORRFUNC_BIN TARBALL | run TARBALL"; exit 2; }
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
dir=$(mktemp -d)
tar -C "$dir" -xJf "$2" || exit 1
bin=$dir/bin
cf=$bin/corrfunc
if ! grep -qw avx512f /proc/cpuinfo; then
  [ -d "$bin/corrfunc-v3" ] || { echo "run: this CPU has no AVX-512 and the pack no x86-64-v3 Corrfunc (CORRFUNC_BIN_V3)"; exit 1; }
  cf=$bin/corrfunc-v3
fi
{
  echo "commit: $(cat "$bin/commit.txt")  date: $(date -u +%FT%TZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) x $(nproc); corrfunc: $(basename "$cf")"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo "gpu: none"
} | tee "$OUT/c1.txt"
[ -x "$bin/cucount_c1" ] && [ -z "${NO_CUCOUNT:-}" ] && export CUCOUNT=$bin/cucount_c1
TOOL_LIBS=$bin/lib SDH=$bin/sdh CORRFUNC=$cf DIR=$dir python3 "$bin/bench_c1.py" 2>&1 | tee -a "$OUT/c1.txt"
exit "${PIPESTATUS[0]}"
