#!/usr/bin/env bash
# gpu-session.sh -- one call on a lent GPU machine: build, disassemble the
# hot kernel, run the GPU test suite, run bench_gpu; logs go to $OUT.
#   STEPS="build sass test bench" BENCH_ARGS="table chunk" bash bench/gpu-session.sh
# STEPS may also name svcbench: bench_service (SERVICE=enabled, libcurl) on
# every core and on two (taskset).
# SERVICE=enabled also builds the daemon (from the carried .debs; a stub
# gnutls.pc stands in for libmicrohttpd's private requirement) and adds the
# service and cli suites to the test step.
# quick: STEPS="build sass test bench" BENCH_ARGS=table BENCH_GPU_WL="W2 W3" \
#        BENCH_GPU_KERNELS=auto,tiled-privatized-f64 BENCH_GPU_PREC=exact bash bench/gpu-session.sh
# (bench_gpu.c's header lists those variables)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
STEPS=${STEPS:-build sass test bench}
has() { [[ " $STEPS " == *" $1 "* ]]; }
export PATH="$PATH:/usr/local/cuda/bin"
export NCCL_NVLS_ENABLE=0
debs=.debs; [ -d "$debs" ] || debs=../.debs   # carried beside the tree or in it
if ls "$debs"/*.deb >/dev/null 2>&1; then
  for f in "$debs"/*.deb; do dpkg -x "$f" /tmp/prefix; done
  for pc in /tmp/prefix/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc; do
    sed -i -E -e 's#^prefix=.*#prefix=/tmp/prefix/usr#' -e 's#^(libdir|includedir)=/usr#\1=/tmp/prefix/usr#' "$pc"; done
  export PKG_CONFIG_PATH=/tmp/prefix/usr/lib/x86_64-linux-gnu/pkgconfig
  export LD_LIBRARY_PATH=/tmp/prefix/usr/lib/x86_64-linux-gnu
  # bench_service: Debian's libcurl headers over the machine's own
  # libcurl.so.4 (its private requirements are for static links only)
  lib=/tmp/prefix/usr/lib/x86_64-linux-gnu
  if [ -f $lib/pkgconfig/libcurl.pc ]; then
    if [ -e /usr/lib/x86_64-linux-gnu/libcurl.so.4 ]; then
      ln -sf /usr/lib/x86_64-linux-gnu/libcurl.so.4 $lib/libcurl.so
      sed -i '/^Requires.private/d' $lib/pkgconfig/libcurl.pc
    else
      rm -f $lib/pkgconfig/libcurl.pc
    fi
  fi
fi
SERVICE=${SERVICE:-disabled}
suites="--suite gpu --suite unit"
if [ "$SERVICE" != disabled ]; then
  pkg-config --exists gnutls 2>/dev/null ||
    printf 'Name: gnutls\nDescription: stub\nVersion: 3.7.9\nLibs:\nCflags:\n' \
      > "${PKG_CONFIG_PATH%%:*}/gnutls.pc"
  suites="$suites --suite cli --suite service"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
t0=$(date +%s)
if has build; then
  { meson setup build-gpu -Dservice=$SERVICE -Dbuildtype=release >/dev/null &&
    ninja -C build-gpu; } > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  grep -A1 "k_linearILi0ELi2E\|k_classicILi2ELi1E\|k_linearILi0ELi1E" "$OUT/build.log" | grep -B1 "Used" | grep -A1 sm_90 | head -12 > "$OUT/ptxas.txt"
  echo "build: $(( $(date +%s) - t0 )) s"
fi
if has sass; then
  # the hot loop of exact balanced (LANE and GEN sinks), exact and fast tiled-privatized
  obj=build-gpu/kernels/libhistd_cuda.a.p/sdh_kernels.cu.o
  : > "$OUT/sass_count.txt"
  for f in _Z8k_linearILi0ELi2EEv10sdh_paramsmm _Z8k_linearILi0ELi1EEv10sdh_paramsmm \
           _Z9k_classicILi0ELi1EEv10sdh_paramsmm _Z9k_classicILi1ELi1EEv10sdh_paramsmm; do
    cuobjdump -sass -arch sm_90 -fun "$f" "$obj" > "/tmp/sass_$f.txt" 2>&1
    cat "/tmp/sass_$f.txt" >> "$OUT/sass.txt"
    { echo "$f:"; python3 bench/sass_hotloop.py "/tmp/sass_$f.txt" | head -2; } >> "$OUT/sass_count.txt"
  done
  cat "$OUT/sass_count.txt"
fi
if has test; then
  t1=$(date +%s)
  meson test -C build-gpu $suites --print-errorlogs -t 1 > "$OUT/test.log" 2>&1
  cp build-gpu/meson-logs/testlog.txt "$OUT/testlog.txt" 2>/dev/null; rm -f "$OUT/test.log.keep"
  grep -E "^ *[0-9]+/[0-9]+ " "$OUT/test.log"
  grep -E "^(Ok|Fail|Skipped|Timeout):" "$OUT/test.log" | tr '\n' ' '; echo
  grep -E "^  |GPU runs|test_gpu:|check failed|skipped" "$OUT/testlog.txt" | grep -v "^  *$" | head -60
  echo "test: $(( $(date +%s) - t1 )) s"
fi
if has svcbench; then
  # the service benchmark (CPU engine) on every core, then on two of them
  if [ -x build-gpu/bench/bench_service ]; then
    echo "== bench_service, $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
    build-gpu/bench/bench_service build-gpu/src/service/histd 2>/dev/null | tee "$OUT/svcbench.log"
    echo "== bench_service, taskset -c 0,1 (daemon and load generator on two cores)"
    BENCH_ONLY=latency taskset -c 0,1 build-gpu/bench/bench_service build-gpu/src/service/histd \
      2>/dev/null | tee -a "$OUT/svcbench.log"
  else
    echo "svcbench: bench_service was not built (no libcurl)"
  fi
fi
if has bench; then
  t1=$(date +%s)
  ./build-gpu/bench/bench_gpu ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
  echo "bench: $(( $(date +%s) - t1 )) s"
  sed -n '/== summary/,$p' "$OUT/bench.log"
  grep -E "^  GS[0-9]|error" "$OUT/bench.log" || true
fi
