#!/usr/bin/env bash
# cucount_build.sh -- builds bench/cucount_c1.cu (a command-line front end
# to cucount's count2) against cucount's CUDA sources in a tree OUTSIDE this
# repository (adematti/cucount; never vendored), for sm_80 and sm_90, with
# the CUDA runtime linked statically: no Python, pybind11 or numpy needed.
#   git --git-dir=MIRROR archive HEAD | tar -x -C SRC   (adematti/cucount)
#   bash bench/cucount_build.sh SRC OUTDIR
set -euo pipefail
src=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
mkdir -p "$out"
"$nvcc" -O3 -std=c++17 -rdc=true -cudart static \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
  -I"$src/include" -o "$out/cucount_c1" "$here/cucount_c1.cu" \
  "$src/src/common.cu" "$src/src/logger.cu" "$src/src/mesh.cu" "$src/src/count2.cu"
echo "cucount_build: $out/cucount_c1 (cucount $(git --git-dir="$src/.git" rev-parse --short HEAD 2>/dev/null || echo "from $src"))"
