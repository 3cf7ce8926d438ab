#!/usr/bin/python3
"""bench_formats.py -- parse throughput of every trajectory format, histd
(bench_parse --file) against MDAnalysis reading the same file, in one run.

    /usr/bin/python3 bench/bench_formats.py --bench build/bench/bench_parse \\
        [--atoms 32000] [--frames 50] [--runs 3] [--formats xtc,trr,...]

MDAnalysis writes FRAMES frames of ATOMS atoms (three-atom waters at
water's density, moving a little each frame) in each format: XTC, TRR, DCD,
AMBER NetCDF, multi-frame PDB and XYZ, GRO (one frame written per frame,
one after another) and a LAMMPS dump (written here: id type x y z). Then,
for each file (in the page cache: just written):
  histd: bench_parse --file FORMAT FILE RUNS: the parse from memory, median
         wall time, MB/s of input and frames/s;
  MDAnalysis: a Universe on it (the GRO as topology where the format has
         none) and a loop over every frame, median of RUNS, wall time.
The table's last column is MDAnalysis's time over histd's. The files are
not kept. On a shared machine the figures move; the ratios are what count.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402


def universe(atoms, side):
    n_res = atoms // 3
    u = mda.Universe.empty(atoms, n_residues=n_res, atom_resindex=np.repeat(np.arange(n_res), 3),
                           trajectory=True)
    u.add_TopologyAttr("names", ["OW", "HW1", "HW2"] * n_res)
    u.add_TopologyAttr("types", ["O", "H", "H"] * n_res)
    u.add_TopologyAttr("resnames", ["SOL"] * n_res)
    u.add_TopologyAttr("resids", np.arange(1, n_res + 1))
    u.dimensions = [side, side, side, 90, 90, 90]
    return u


def frames_of(atoms, frames, side, seed=5):
    rng = np.random.default_rng(seed)
    o = rng.uniform(0, side, (atoms // 3, 3))
    h = rng.normal(0, 1, (atoms // 3, 2, 3))
    h = 1.0 * h / np.linalg.norm(h, axis=2, keepdims=True)
    for _ in range(frames):
        o = o + rng.normal(0, 0.05, o.shape)
        yield np.concatenate([o[:, None, :], o[:, None, :] + h], axis=1).reshape(-1, 3).astype(np.float32)


def write_all(tmp, atoms, frames, formats):
    side = ((atoms // 3) / 0.0334) ** (1 / 3)  # Angstrom, water's density
    u = universe(atoms, side)
    paths = {}
    gro = os.path.join(tmp, "top.gro")
    u.atoms.write(gro)
    paths["top"] = gro
    writers = {"xtc": "w.xtc", "trr": "w.trr", "dcd": "w.dcd", "netcdf": "w.ncdf",
               "pdb": "w.pdb", "xyz": "w.xyz"}
    for fmt, name in writers.items():
        if fmt not in formats:
            continue
        path = os.path.join(tmp, name)
        kw = {"multiframe": True} if fmt == "pdb" else {}
        with mda.Writer(path, atoms, **kw) as w:
            for pos in frames_of(atoms, frames, side):
                u.atoms.positions = pos
                w.write(u.atoms)
        paths[fmt] = path
    if "gro" in formats:
        path = os.path.join(tmp, "w.gro")
        with open(path, "w") as out:
            for k, pos in enumerate(frames_of(atoms, frames, side)):
                u.atoms.positions = pos
                one = os.path.join(tmp, "one.gro")
                u.atoms.write(one)
                with open(one) as f:
                    out.write(f.read())
        paths["gro"] = path
    if "lammps" in formats:
        path = os.path.join(tmp, "w.lammpstrj")
        with open(path, "w") as out:
            for t, pos in enumerate(frames_of(atoms, frames, side)):
                out.write("ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n"
                          "0 %r\n0 %r\n0 %r\nITEM: ATOMS id type x y z\n" % (t, atoms, side, side, side))
                ids = np.arange(1, atoms + 1)
                types = np.tile([1, 2, 2], atoms // 3)
                np.savetxt(out, np.column_stack([ids, types, pos]), fmt="%d %d %.5f %.5f %.5f")
        paths["lammps"] = path
    return paths


def time_histd(bench, fmt, path, runs):
    out = subprocess.run([bench, "--file", fmt, path, str(runs)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^%s: (\S+) (\S+) (\S+)$" % fmt, out, re.M)
    mbs, fps = float(m.group(1)), float(m.group(2))
    return os.path.getsize(path) / 1e6 / mbs, mbs, fps


def time_mda(fmt, path, top, runs):
    def once():
        t0 = time.perf_counter()
        if fmt in ("pdb", "gro"):
            u = mda.Universe(path)
        elif fmt == "lammps":
            u = mda.Universe(top, path, format="LAMMPSDUMP")
        elif fmt == "netcdf":
            u = mda.Universe(top, path, format="NCDF")
        else:
            u = mda.Universe(top, path)
        n = 0
        for _ in u.trajectory:
            n += 1
        return time.perf_counter() - t0, n
    times, frames = [], 0
    for _ in range(runs):
        t, frames = once()
        times.append(t)
    return statistics.median(times), frames


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--atoms", type=int, default=32001)
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="xtc,trr,dcd,netcdf,gro,pdb,xyz,lammps")
    a = ap.parse_args()
    formats = a.formats.split(",")
    tmp = tempfile.mkdtemp(prefix="histd-formats-")
    try:
        paths = write_all(tmp, a.atoms - a.atoms % 3, a.frames, formats)
        print("# %d atoms, %d frames, medians of %d runs; load %s" % (
            a.atoms - a.atoms % 3, a.frames, a.runs, open("/proc/loadavg").read().split()[0]))
        print("%-8s %9s %10s %10s %12s %10s %10s" % ("format", "MB", "histd s", "MB/s",
                                                    "frames/s", "MDA s", "MDA/histd"))
        for fmt in formats:
            path = paths[fmt]
            hs, mbs, fps = time_histd(a.bench, fmt, path, a.runs)
            ms, n = time_mda(fmt, path, paths["top"], a.runs)
            ratio = "%10.2f" % (ms / hs) if n == a.frames else "%10s" % "-"
            print("%-8s %9.1f %10.3f %10.0f %12.0f %10.3f %s" % (
                fmt, os.path.getsize(path) / 1e6, hs, mbs, fps, ms, ratio))
            if n != a.frames:
                print("# %s: MDAnalysis reads %d frame(s) of the %d, so no ratio" % (fmt, n, a.frames))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
