#!/usr/bin/env python3
"""bench_g3.py -- G3: g(r) of a Lennard-Jones liquid trajectory, histd's CPU
engine against MDAnalysis's InterRDF, in the same run, on this machine.

    python3 bench/bench_g3.py --sdh build/src/cli/sdh [--frames 20] [--mda-frames 3]

1. LAMMPS (Debian's `lmp`) melts an fcc lattice of 32,000 atoms (density
   0.8442, L = 33.6 sigma) and writes FRAMES frames, 20 steps apart, as a
   LAMMPS dump (about 1.4 MB a frame).
2. histd (`sdh`, the CPU engine, every core) computes g(r) to r_max = 4
   sigma in 200 bins over every frame: once with "auto" (which takes the
   grid here) and once with the brute-force "cpu" kernel; the kernel time
   per frame is the median over REPEAT runs divided by the frames.
3. MDAnalysis (Debian's python3-mdanalysis) computes the same g(r) with
   InterRDF over the first MDA_FRAMES frames (it takes seconds a frame),
   and histd over those same frames is compared with it: InterRDF counts
   ordered pairs (a, b) with a != b, twice histd's i < j, and its default
   normalisation with exclusion_block=(1, 1) is then LAMMPS's, histd's
   (g_k = count_k / (N (N - 1) / 2 x V_shell,k / V)). MDAnalysis holds
   coordinates in float32, so pairs within float32 rounding of an edge may
   fall on the other side: the script reports how many pair counts differ.

The last lines are a table: per-frame times and the ratios, measured here.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

LAMMPS_IN = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 20 0 20 0 20
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.5 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 20 delay 0 check no
fix 1 all nve
thermo 100
run 200
dump 1 all custom 20 traj.dump id type x y z
dump_modify 1 format float %.17g
run {steps}
"""


def sdh_run(sdh, path, kernel):
    out = subprocess.run([sdh, path, "--r-max", "4", "--buckets", "200", "-k", kernel,
                          "--format", "json"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def first_frames(src, dst, frames):
    """Copies the first `frames` frames of a LAMMPS dump."""
    seen = 0
    with open(src) as f, open(dst, "w") as o:
        for line in f:
            if line.startswith("ITEM: TIMESTEP"):
                seen += 1
                if seen > frames:
                    break
            o.write(line)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdh", required=True)
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--mda-frames", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="keep the trajectory in this directory")
    args = ap.parse_args()
    sdh = os.path.abspath(args.sdh)
    work = args.keep or tempfile.mkdtemp(prefix="histd-g3-")
    os.makedirs(work, exist_ok=True)
    try:
        traj = os.path.join(work, "traj.dump")
        if not os.path.exists(traj):
            with open(os.path.join(work, "in.g3"), "w") as f:
                f.write(LAMMPS_IN.format(steps=20 * (args.frames - 1)))
            t = time.time()
            subprocess.run(["lmp", "-in", "in.g3", "-log", "none", "-screen", "none"],
                           cwd=work, check=True)
            print("lammps: %d frames of 32,000 atoms in %.1f s" % (args.frames, time.time() - t))

        times = {}
        for kernel in ("auto", "cpu"):
            runs = [sdh_run(sdh, traj, kernel) for _ in range(args.repeat if kernel == "auto" else 1)]
            frames = runs[0]["frames"]
            times[kernel] = statistics.median(r["timing_ms"]["kernel"] for r in runs) / frames
            print("histd %s: %s, %s; %.2f ms a frame (kernel, median of %d), parse %.0f ms"
                  % (kernel, runs[0]["kernel"], runs[0]["device"], times[kernel], len(runs),
                     runs[0]["timing_ms"]["parse"]))
            if kernel == "auto":
                print("  chosen: %s" % runs[0].get("kernel_reason", ""))
                auto_counts = runs[0]["counts"]
            else:
                same = runs[0]["counts"] == auto_counts
                print("  counts identical to auto's: %s" % same)
                if not same:
                    sys.exit("grid and brute force disagree")

        # MDAnalysis over the first mda_frames frames, and histd over the same
        import MDAnalysis as mda
        from MDAnalysis.analysis.rdf import InterRDF
        import numpy as np

        k = args.mda_frames
        part = os.path.join(work, "first.dump")
        first_frames(traj, part, k)
        h = sdh_run(sdh, part, "auto")
        u = mda.Universe(part, format="LAMMPSDUMP")
        t = time.time()
        rdf = InterRDF(u.atoms, u.atoms, nbins=200, range=(0.0, 4.0), exclusion_block=(1, 1))
        rdf.run()
        mda_frame = (time.time() - t) * 1000 / k
        mine = np.array(h["counts"], dtype=np.int64) * 2
        theirs = np.rint(rdf.results.count).astype(np.int64)
        g_h, g_m = np.array(h["g"]), rdf.results.rdf
        nz = g_h > 0
        rel = float(np.max(np.abs(g_h[nz] - g_m[nz]) / g_h[nz])) if nz.any() else 0.0
        moved = int(np.abs(mine - theirs).sum()) // 2
        print("MDAnalysis %s InterRDF: %d frames, %.0f ms a frame" % (mda.__version__, k, mda_frame))
        print("  g(r) over those frames: histd vs MDAnalysis max relative difference %.2e; "
              "%d of %d pairs within r_max in another bin (float32 coordinates)"
              % (rel, moved, int(np.sum(mine)) // 2))

        print()
        print("| what (32,000 LJ atoms, r_max 4 sigma, 200 bins) | ms / frame | vs MDAnalysis |")
        print("| --- | ---: | ---: |")
        print("| MDAnalysis InterRDF | %.0f | 1x |" % mda_frame)
        print("| histd cpu (brute force) | %.1f | %.0fx |" % (times["cpu"], mda_frame / times["cpu"]))
        print("| histd auto (grid) | %.2f | %.0fx |" % (times["auto"], mda_frame / times["auto"]))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
