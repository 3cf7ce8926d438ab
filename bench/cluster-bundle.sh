#!/usr/bin/env bash
# Packs what the cluster benchmark needs on a lent GPU machine, which has no
# package manager and no PostgreSQL: histd (a CUDA + service build), the
# shared libraries it and PostgreSQL's programs load (ldd's closure, less
# glibc's own), Debian's PostgreSQL laid out as Debian installs it (so its
# relative share and lib dirs resolve), the benchmark and the test helpers
# it imports; compressed into DIR.tar.xz to fit the device tool's carry.
#
#   bash bench/cluster-bundle.sh BUILD_DIR build-cb/cb   # BUILD_DIR: -Dcuda=enabled -Dservice=enabled
#   # carry build-cb (ignored: /build*/)
#   # on the device:
#   tar xJf DIR.tar.xz && bash DIR/run.sh [bench_cluster.py args]
#   tar xJf DIR.tar.xz && SCRIPT=tests/cluster/gpu_node.py bash DIR/run.sh
set -euo pipefail
build=$1 out=$2
rm -rf "$out" "$out.tar.xz"
mkdir -p "$out/lib" "$out/pg" "$out/repo/bench" "$out/repo/tests/service" "$out/repo/tests/cluster"
cp "$build/src/service/histd" "$out/"
pgver=$(ls /usr/lib/postgresql | sort -n | tail -1)
mkdir -p "$out/pg/usr/lib/postgresql" "$out/pg/usr/share/postgresql"
cp -a "/usr/lib/postgresql/$pgver" "$out/pg/usr/lib/postgresql/"
cp -a "/usr/share/postgresql/$pgver" "$out/pg/usr/share/postgresql/"
rm -rf "$out/pg/usr/share/postgresql/$pgver/man" "$out/pg/usr/lib/postgresql/$pgver/lib/bitcode" \
       "$out"/pg/usr/lib/postgresql/"$pgver"/lib/llvmjit*   # JIT (libLLVM): off without it
# ldd's closure of every program, less glibc (the device has its own, newer)
for f in "$out/histd" "$out"/pg/usr/lib/postgresql/"$pgver"/bin/* \
         "$out"/pg/usr/lib/postgresql/"$pgver"/lib/*.so; do
  ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | grep -vE '/(libc|libm|libpthread|libdl|librt|libresolv|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
cp bench/bench_cluster.py "$out/repo/bench/"
cp tests/service/daemon.py "$out/repo/tests/service/"
cp tests/cluster/pg.py tests/cluster/gpu_node.py "$out/repo/tests/cluster/"
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs bench_cluster.py (or SCRIPT, a path in repo/) on the GPUs with the
# bundled PostgreSQL and libraries.
here=$(cd "$(dirname "$0")" && pwd)
pgver=$(ls "$here/pg/usr/lib/postgresql")
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HISTD_PG_BIN="$here/pg/usr/lib/postgresql/$pgver/bin"
chmod -R a+rX "$here"   # the PostgreSQL user reads the bundle
exec python3 "$here/repo/${SCRIPT:-bench/bench_cluster.py}" "$here/histd" "$@"
RUN
chmod +x "$out/run.sh"
tar cJf "$out.tar.xz" -C "$(dirname "$out")" "$(basename "$out")"
du -sh "$out" "$out.tar.xz"
rm -rf "$out"   # only the archive travels
