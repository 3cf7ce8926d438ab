#!/usr/bin/env bash
# bench_grid_cpu.sh -- where the grid pays on the CPU: the same periodic
# g(r) (N uniform points in a cube of 100, 200 bins) with r_max from 5% to
# 45% of the box, on "grid" and on brute-force "cpu", alternating, median
# kernel time of REPEAT runs each; prints the grid's cells, the share of
# the pairs they visit (grid.h's estimate) and grid / cpu. auto takes the
# grid where that share is at most GRID_SHARE_MAX_CPU (src/engine/grid.c).
#   bash bench/bench_grid_cpu.sh build/src/cli/sdh [N] [REPEAT]
set -euo pipefail
sdh=${1:?usage: bench_grid_cpu.sh SDH [N] [REPEAT]}
n=${2:-30000}
repeat=${3:-3}
kernel_ms() { "$sdh" --random "$n" --box 100 --periodic 100 --r-max "$1" --buckets 200 -k "$2" |
                sed -n 's/^time: .*(kernel \([0-9.]*\),.*/\1/p'; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
printf '| r_max / L | cells | share of pairs | grid ms | cpu ms | grid / cpu |\n| ---: | --- | ---: | ---: | ---: | ---: |\n'
for r in 5 10 15 20 25 30 35 45; do
  g=(); c=()
  for _ in $(seq "$repeat"); do g+=("$(kernel_ms "$r" grid)"); c+=("$(kernel_ms "$r" cpu)"); done
  gm=$(printf '%s\n' "${g[@]}" | median); cm=$(printf '%s\n' "${c[@]}" | median)
  why=$("$sdh" --random "$n" --box 100 --periodic 100 --r-max "$r" --buckets 200 -k auto | sed -n 's/^chosen: //p')
  cells=$(sed -n 's/.* gives \([0-9x]*\) cells.*/\1/p' <<<"$why")
  share=$(sed -n 's/.*visit about \([0-9.e+-]*%\).*/\1/p' <<<"$why")
  printf '| %s%% | %s | %s | %.1f | %.1f | %.2f |\n' "$r" "$cells" "$share" "$gm" "$cm" \
    "$(awk -v a="$gm" -v b="$cm" 'BEGIN {print a / b}')"
done
