#!/usr/bin/env python3
"""bench_m1_mda.py -- M1 (issue 31) against MDAnalysis, in the same run, on
this machine's CPU: every species pair of a 3-species liquid in one histd
job ("partials": "type") against MDAnalysis's 6 InterRDF runs (one a type
pair), and against one plain histd g(r) of all atoms.

    bash bench/bench_m1.sh ...   # not needed: this script makes the dump
    python3 bench/bench_m1_mda.py --sdh build/src/cli/sdh [--n 100000] [--frames 10]

The liquid is bench_m1.sh's (uniform points at number density 0.8, types
1, 2, 3 in turn, a periodic cube, awk's rand with seed 31, written as a
LAMMPS dump by the same awk program), r_max 10 and 200 bins. histd runs
`sdh --partials type` and the plain job (the median of REPEAT runs each,
its count time being the result's timing_ms.total); MDAnalysis (Debian's
python3-mdanalysis, 2.4.2) runs InterRDF(type s, type t, nbins=200,
range=(0, 10)) for s <= t, with exclusion_block=(1, 1) for s = t (an atom
is not its own pair), once, over every frame, timed by the wall clock.
Their counts are compared: InterRDF counts ordered pairs (s = t: twice
histd's); MDAnalysis keeps float32 coordinates, so a pair within float32
rounding of an edge may land in the other bin (the script reports how
many bins differ and by how much).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

AWK = r'''BEGIN { srand(31); L = (n / 0.8) ^ (1 / 3)
  for (f = 0; f < frames; f++) {
    print "ITEM: TIMESTEP"; print f; print "ITEM: NUMBER OF ATOMS"; print n
    print "ITEM: BOX BOUNDS pp pp pp"; for (a = 0; a < 3; a++) printf "0 %.17g\n", L
    print "ITEM: ATOMS id type x y z"
    for (i = 0; i < n; i++)
      printf "%d %d %.6f %.6f %.6f\n", i + 1, i % 3 + 1, L * rand(), L * rand(), L * rand() } }'''


def sdh_run(sdh, dump, extra, repeat):
    walls, counts = [], []
    doc = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = subprocess.run([sdh, dump, "--r-max", "10", "--buckets", "200", "-f", "json"] + extra,
                             check=True, capture_output=True, text=True).stdout
        walls.append(time.perf_counter() - t0)
        doc = json.loads(out)
        counts.append(doc["timing_ms"]["total"] / 1000)
    return statistics.median(walls), statistics.median(counts), doc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdh", required=True)
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import MDAnalysis as mda
    from MDAnalysis.analysis.rdf import InterRDF
    with tempfile.TemporaryDirectory() as tmp:
        dump = os.path.join(tmp, "m1.lammpstrj")
        with open(dump, "w") as f:
            subprocess.run(["awk", "-v", "n=%d" % args.n, "-v", "frames=%d" % args.frames, AWK],
                           check=True, stdout=f)
        plain = sdh_run(args.sdh, dump, [], args.repeat)
        parts = sdh_run(args.sdh, dump, ["--partials", "type"], args.repeat)
        u = mda.Universe(dump, format="LAMMPSDUMP")
        t0 = time.perf_counter()
        ref = {}
        for s in (1, 2, 3):
            for t in (1, 2, 3):
                if t < s:
                    continue
                a, b = u.select_atoms("type %d" % s), u.select_atoms("type %d" % t)
                kw = {"exclusion_block": (1, 1)} if s == t else {}
                ref[(s, t)] = InterRDF(a, b, nbins=200, range=(0.0, 10.0), **kw).run()
        mda_s = time.perf_counter() - t0
    p = parts[2]["partial"]
    worst, bins_off = 0, 0
    for k, (sa, sb) in enumerate(zip(p["a"], p["b"])):
        want = ref[(int(sa), int(sb))].results.count
        got = [c * (2 if sa == sb else 1) for c in p["counts"][k]]
        for g, w in zip(got, want):
            if g != int(w):
                bins_off += 1
                worst = max(worst, abs(g - int(w)))
    print("== M1 on this machine's CPU (%d cores): %d atoms x %d frames, 3 types, r_max 10, "
          "200 bins; histd the median of %d runs, MDAnalysis %s once"
          % (os.cpu_count(), args.n, args.frames, args.repeat, mda.__version__))
    print("counts: %d of %d bins differ from InterRDF's (at most %d pairs: float32 at the "
          "edges)" % (bins_off, 6 * 200, worst))
    print("%-36s %9s %8s %9s %8s" % ("way", "wall s", "/ plain", "count s", "/ plain"))
    for label, (wall, count) in (("histd: one plain g(r), all atoms", plain[:2]),
                                 ("histd: 6 partials in one job", parts[:2]),
                                 ("MDAnalysis: 6 InterRDF runs", (mda_s, mda_s))):
        print("%-36s %9.3f %8.2f %9.3f %8.2f" % (label, wall, wall / plain[0], count,
                                                count / plain[1]))


if __name__ == "__main__":
    sys.exit(main())
