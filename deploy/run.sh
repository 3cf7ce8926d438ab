#!/usr/bin/env bash
# Builds histd and starts the daemon on 127.0.0.1:8080 (GPU workers when a
# GPU and nvcc are present, else the CPU engine). Extra arguments go to histd.
set -euo pipefail
cd "$(dirname "$0")/.."
bash deploy/install-deps.sh
[ -d /usr/local/cuda/bin ] && export PATH="$PATH:/usr/local/cuda/bin"
[ -f build/build.ninja ] || meson setup build
ninja -C build
if [ -x build/src/service/histd ]; then
  exec build/src/service/histd --data-dir "${HISTD_DATA_DIR:-$PWD/histd-data}" "$@"
fi
echo "the daemon is not built yet; running the CLI demo instead" >&2
build/src/cli/sdh --random 20000 --width 500
