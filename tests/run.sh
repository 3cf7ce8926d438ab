#!/usr/bin/env bash
# Builds histd and runs every test suite: the default build (CUDA compiled
# where nvcc exists; GPU tests skip without a GPU), then the sanitizer build,
# then the ThreadSanitizer build (unit, service and cluster suites: the
# threads live there; a report stops the process, and any report in the logs fails the
# run), then each fuzz target (tests/io's parsers, tests/engine's engine) for a
# bounded time on its seeds (tests/<dir>/corpus/<name>). Ends with the line
#   tests: N passed, N failed, N skipped
# counted from meson's test logs and the fuzz runs.
set -uo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh --test || exit 1
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"

passed=0 failed=0 skipped=0
count_log() { # meson's testlog.json: one JSON object per test
  local log=$1 p f s
  p=$(grep -c '"result": "OK"' "$log" || true)
  s=$(grep -c '"result": "SKIP"' "$log" || true)
  f=$(grep -cE '"result": "(FAIL|ERROR|TIMEOUT|UNEXPECTEDPASS)"' "$log" || true)
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}
build_and_test() { # dir, meson options...
  local dir=$1; shift
  if ! { meson setup --wipe "$dir" "$@" >"$dir.setup.log" 2>&1 ||
         meson setup "$dir" "$@" >"$dir.setup.log" 2>&1; } ||
     ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
    echo "build $dir failed:"; tail -40 "$dir.setup.log" "$dir.build.log" 2>/dev/null
    failed=$((failed + 1)); return
  fi
  # shellcheck disable=SC2086 # TEST_ARGS: words for meson test (--suite ...)
  meson test -C "$dir" --print-errorlogs --num-processes 2 ${TEST_ARGS:-}
  count_log "$dir/meson-logs/testlog.json"
  if grep -q "WARNING: ThreadSanitizer" "$dir/meson-logs/testlog.txt"; then
    echo "$dir: ThreadSanitizer reports:"; grep -A30 "WARNING: ThreadSanitizer" \
      "$dir/meson-logs/testlog.txt" | head -80
    failed=$((failed + 1))
  fi
}

build_and_test build-test
# The sanitizer build runs every suite but the browser's and the docs'
# (web, js, docs: the same daemon routes the service suite drives, 3 of the
# CI run's 30 minutes under ASan)
TEST_ARGS="--no-suite web --no-suite js --no-suite docs" \
  build_and_test build-asan -Dsanitize=true -Dcuda=disabled -Db_lundef=false
# ThreadSanitizer runs the daemon 5-15x slower: the tests' own time
# limits (test_api's 180 s) scale with it (test_api took 110-180 s there
# on a loaded 2-core machine, and timed out)
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
  TEST_ARGS="--suite unit --suite service --suite cluster --timeout-multiplier 3" \
  build_and_test build-tsan -Dtsan=true -Dcuda=disabled

# Fuzz targets (clang + libFuzzer), 20 s each (FUZZ_SECONDS), on their seed corpora,
# FUZZ_JOBS (2) at a time (the whole CI run took 28.5 min with 30 s each on 2 cores
# one at a time: 20 keeps it under 30).
if command -v clang >/dev/null; then
  if CC=clang meson setup --wipe build-fuzz -Dfuzz=true -Dcuda=disabled -Dservice=disabled \
       >build-fuzz.setup.log 2>&1 || CC=clang meson setup build-fuzz -Dfuzz=true \
       -Dcuda=disabled -Dservice=disabled >build-fuzz.setup.log 2>&1; then
    ninja -C build-fuzz >build-fuzz.build.log 2>&1 || { tail -30 build-fuzz.build.log; failed=$((failed + 1)); }
    # two targets at a time (each is one thread; CI has 2 cores): 12 x 20 s
    # took 4 of the run's 27 minutes one after another
    fuzz_one() { # target: runs it on a copy of its seeds; build-fuzz/NAME.ok when it passed
      local f=$1 name corpus work
      name=$(basename "$f")
      # fuzz_netcdf also fuzzes Debian 12's libnetcdf 4.9.0, which is not
      # fuzz-safe: it crashed (SIGFPE) and allocated gigabytes on 1 KB inputs
      # (tests/io/corpus/netcdf/libnetcdf-*.nc, kept as seeds). parse_netcdf.c
      # walks the header before libnetcdf reads it, and the target runs clean
      # behind that walk; a new finding here is one more case for the walk.
      corpus="tests/$(basename "$(dirname "$f")")/corpus/${name#fuzz_}"
      work=$(mktemp -d)
      [ -d "$corpus" ] && cp -r "$corpus"/. "$work"/
      rm -f "build-fuzz/$name.ok"
      "$f" -max_total_time="${FUZZ_SECONDS:-20}" -rss_limit_mb=2048 "$work" >"build-fuzz/$name.log" 2>&1 &&
        touch "build-fuzz/$name.ok"
      rm -rf "$work"
    }
    targets=()
    for f in build-fuzz/tests/io/fuzz_* build-fuzz/tests/engine/fuzz_*; do
      [ -f "$f" ] && [ -x "$f" ] && targets+=("$f")   # not meson's fuzz_*.p folders
    done
    for ((i = 0; i < ${#targets[@]}; i += ${FUZZ_JOBS:-2})); do
      for f in "${targets[@]:i:${FUZZ_JOBS:-2}}"; do fuzz_one "$f" & done
      wait
    done
    for f in "${targets[@]}"; do
      name=$(basename "$f")
      if [ -e "build-fuzz/$name.ok" ]; then
        echo "fuzz $name: ok ($(grep -o 'Done [0-9]* runs' "build-fuzz/$name.log"))"; passed=$((passed + 1))
      else
        echo "fuzz $name: FAILED"; tail -30 "build-fuzz/$name.log"; failed=$((failed + 1))
      fi
    done
  else
    echo "fuzz build setup failed"; tail -20 build-fuzz.setup.log; failed=$((failed + 1))
  fi
fi

# The container (suite 'container', tests/deploy/test_container.py): the
# image built from the Dockerfile with podman and histd run from it; only
# with HISTD_CI_CONTAINER=1, as it takes minutes (see the test).
if [ "${HISTD_CI_CONTAINER:-0}" = 1 ]; then
  if bash deploy/install-deps.sh --container; then
    meson test -C build-test --print-errorlogs --suite container
    count_log build-test/meson-logs/testlog.json
  else
    echo "install-deps.sh --container failed"; failed=$((failed + 1))
  fi
fi

echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
