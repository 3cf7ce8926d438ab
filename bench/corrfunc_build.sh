#!/usr/bin/env bash
# corrfunc_build.sh -- builds Corrfunc's command-line pair counters (the
# outside oracle of the (r_p, pi), (s, mu) and angular counts, and C1's CPU
# baseline) from a source tree OUTSIDE this repository (never vendored):
# double precision, OpenMP, the given -march (x86-64-v4: AVX-512 kernels;
# x86-64-v3: AVX2), and its outputs' weight averages printed with 17
# significant digits instead of %e's 7 (the only change to what it computes:
# none; it lets the weighted sums be compared to 1e-10).
#   git --git-dir=MIRROR archive HEAD | tar -x -C SRC   (manodeep/Corrfunc)
#   bash bench/corrfunc_build.sh SRC OUTDIR [MARCH]
# OUTDIR gets DDrppi, DDsmu and DDtheta_mocks (the last needs no GSL).
set -euo pipefail
src=$1 out=$2 march=${3:-x86-64-v4}
cd "$src"
sed -i 's/^#OPT += -DDOUBLE_PREC/OPT += -DDOUBLE_PREC/' theory.options mocks.options
grep -q '^OPT += -DDOUBLE_PREC' theory.options && grep -q '^OPT += -DDOUBLE_PREC' mocks.options
sed -i 's/^  opt := -march=native$/  opt := -march=$(or $(CORRFUNC_MARCH),native)/' common.mk
# the printed weightavg (and the bin's other doubles): %e -> %.17g
sed -i '/fprintf(stdout/s/%e/%.17g/g' theory/DDrppi/DDrppi.c theory/DDsmu/DDsmu.c
sed -i '/fprintf(stdout/s/%20\.8lf/%.17g/g' mocks/DDtheta_mocks/DDtheta_mocks.c
for d in theory/DDrppi theory/DDsmu mocks/DDtheta_mocks; do
  CORRFUNC_MARCH=$march make -C "$d" -j"$(nproc)" >/dev/null
done
mkdir -p "$out"
cp theory/DDrppi/DDrppi theory/DDsmu/DDsmu mocks/DDtheta_mocks/DDtheta_mocks "$out/"
echo "corrfunc_build: $(ls "$out" | tr "\n" " ")in $out (-march=$march, double precision, OpenMP)"
