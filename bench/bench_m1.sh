#!/usr/bin/env bash
# bench_m1.sh -- workload M1 of issue 31: every species pair of a 3-species
# liquid in one job ("partials"), against one plain g(r) of all its atoms
# and against the 6 separate jobs a user ran before (one per species pair:
# select_a type:s alone for s's own pairs, select_a type:s, select_b type:t
# for s < t), in one run on one machine, each the median of ROUNDS runs of
# sdh: the whole command (parse, bind, count, write) and the result's own
# timing_ms.total (the count: every frame, every piece; no parse).
#
#   SDH=build/src/cli/sdh N=100000 FRAMES=10 ROUNDS=3 bash bench/bench_m1.sh
#
# The points: N atoms a frame, uniform in a periodic cube at number density
# 0.8 (side (N / 0.8)^(1/3)), types 1, 2, 3 in turn, FRAMES frames (awk's
# rand with a fixed seed), as a LAMMPS dump; r_max 10, 200 bins, as M1
# asks. (Uniform points, not a LAMMPS-equilibrated liquid: the pairs a
# grid meets within r_max, and so the work, are the same at that density.)
# Prints a table: each way's median seconds and its ratio to the plain g(r).
# PER_ATOM=1 adds issue 31's histogram per atom on the same liquid: every
# type-1 atom's own histogram against all atoms (--per-atom, N/3 rows of
# 200 bins, each pair met from the atom's end; JSON output, in wall s).
set -uo pipefail
SDH=${SDH:-build/src/cli/sdh}
N=${N:-100000} FRAMES=${FRAMES:-10} ROUNDS=${ROUNDS:-3}
DIR=${DIR:-$(mktemp -d)}
dump=$DIR/m1.lammpstrj
awk -v n="$N" -v frames="$FRAMES" 'BEGIN { srand(31); L = (n / 0.8) ^ (1 / 3)
  for (f = 0; f < frames; f++) {
    print "ITEM: TIMESTEP"; print f; print "ITEM: NUMBER OF ATOMS"; print n
    print "ITEM: BOX BOUNDS pp pp pp"; for (a = 0; a < 3; a++) printf "0 %.17g\n", L
    print "ITEM: ATOMS id type x y z"
    for (i = 0; i < n; i++)
      printf "%d %d %.6f %.6f %.6f\n", i + 1, i % 3 + 1, L * rand(), L * rand(), L * rand() } }' \
  > "$dump"
# SDH_ARGS: more flags for every run (--threads 16, --kernel grid)
common=(--r-max 10 --buckets 200 --format json ${SDH_ARGS:-})
# one timed run of sdh with args: "wall_s,count_s" on stdout
timed() {
  local t0 t1 ms
  t0=$(date +%s.%N)
  "$SDH" "$dump" "$@" "${common[@]}" > "$DIR/out.json" 2> "$DIR/err.txt" || {
    echo "sdh $* failed: $(cat "$DIR/err.txt")" >&2; echo "nan,nan"; return; }
  t1=$(date +%s.%N)
  ms=$(sed -n 's/.*"timing_ms":{[^}]*"total":\([0-9.e+-]*\).*/\1/p' "$DIR/out.json")
  awk -v a="$t0" -v b="$t1" -v ms="$ms" 'BEGIN { printf "%.3f,%.3f\n", b - a, ms / 1000 }'
}
add() { awk -F, -v x="$1" -v y="$2" 'BEGIN { split(x, a, ","); split(y, b, ",");
  printf "%.3f,%.3f\n", a[1] + b[1], a[2] + b[2] }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
declare -A runs
for ((r = 0; r < ROUNDS; r++)); do # the ways alternate round by round
  runs[plain]+="$(timed) "
  runs[partials]+="$(timed --partials type) "
  six=0,0
  for s in 1 2 3; do
    for t in 1 2 3; do
      [ "$t" -lt "$s" ] && continue
      if [ "$s" = "$t" ]; then x=$(timed --select-a "type:$s"); else
        x=$(timed --select-a "type:$s" --select-b "type:$t"); fi
      six=$(add "$six" "$x")
    done
  done
  runs[six]+="$six "
  [ -n "${PER_ATOM:-}" ] && runs[per_atom]+="$(timed --per-atom --select-a type:1 --select-b all) "
done
col() { echo ${runs[$1]} | tr ' ' '\n' | cut -d, -f"$2" | median; }
plain=$(col plain 1) plain_c=$(col plain 2)
kernel=$("$SDH" "$dump" --partials type "${common[@]}" | sed -n 's/.*"kernel":"\([^"]*\)".*/\1/p')
echo "== M1: $N atoms x $FRAMES frames, 3 types, r_max 10, 200 bins; $ROUNDS rounds; kernel $kernel"
printf '%-32s %9s %8s %9s %8s\n' "way" "wall s" "/ plain" "count s" "/ plain"
for way in plain partials six ${PER_ATOM:+per_atom}; do
  m=$(col "$way" 1) c=$(col "$way" 2)
  case $way in
  plain) label="one plain g(r), all atoms" ;;
  partials) label="6 partials in one job" ;;
  six) label="6 separate jobs (one a pair)" ;;
  per_atom) label="per atom: type 1 x all" ;;
  esac
  printf '%-32s %9s %8s %9s %8s\n' "$label" "$m" "$(awk -v a="$m" -v b="$plain" 'BEGIN { printf "%.2f", a / b }')" \
    "$c" "$(awk -v a="$c" -v b="$plain_c" 'BEGIN { printf "%.2f", a / b }')"
done
