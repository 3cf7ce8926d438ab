#!/usr/bin/python3
"""bench_xtc_mda.py -- reading a GROMACS XTC trajectory: histd's parser
(bench_parse --xtc) against MDAnalysis, on the same file, in one run.

    /usr/bin/python3 bench/bench_xtc_mda.py --bench build/bench/bench_parse \\
        [--frames 1000] [--atoms 32000] [--runs 3] [--keep FILE]

1. MDAnalysis's XTCWriter (precision 1000, coordinates in nm) writes
   FRAMES frames of ATOMS atoms: three-atom molecules (an O and two H 0.1
   nm away) at water's density, 33.4 molecules/nm^3, each moving by a
   random 0.02 nm a frame. The file is not kept (unless --keep).
2. bench_parse --xtc FILE RUNS: histd's parse from memory (the file read
   first), median wall time: MB/s of input, frames/s, Mpoints/s, and
   the peak memory over the float64 payload.
3. MDAnalysis, end to end, median of RUNS: XTCReader(FILE,
   refresh_offsets=True) (it scans the file for its frames' offsets) and a
   loop over every frame (each decoded into a Timestep, nm to A); and
   libmdaxdr.XTCFile (xdrfile's decoder alone, no Timestep) over every
   frame. The page cache holds the file for all of them (it was just
   written and read).

The last lines are a table: median wall and CPU seconds (histd: its
parsing thread's; MDAnalysis: the process's), MB/s and frames/s of each,
and histd's speed-up. On a shared machine the CPU seconds are the fairer
comparison; a fresh process's first histd parse also pays for faulting in
its float64 dataset (bench_parse prints every run).
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

warnings.filterwarnings("ignore", category=DeprecationWarning)
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.coordinates.XTC import XTCReader, XTCWriter  # noqa: E402
from MDAnalysis.lib.formats.libmdaxdr import XTCFile  # noqa: E402


def write_xtc(path, frames, atoms, seed=7):
    rng = np.random.default_rng(seed)
    n_mol = (atoms + 2) // 3
    side = (n_mol / 33.4) ** (1.0 / 3.0)  # nm
    o = rng.uniform(0, side, (n_mol, 3))
    h = rng.normal(0, 1, (n_mol, 2, 3))
    h = 0.1 * h / np.linalg.norm(h, axis=2, keepdims=True)
    u = mda.Universe.empty(atoms, trajectory=True)
    u.dimensions = [side, side, side, 90, 90, 90]
    with XTCWriter(path, atoms, convert_units=False, precision=3) as w:
        for _ in range(frames):
            mol = np.concatenate([o[:, None, :], o[:, None, :] + h], axis=1).reshape(-1, 3)
            u.atoms.positions = mol[:atoms].astype(np.float32)
            w.write(u.atoms)
            o += rng.normal(0, 0.02, o.shape)
            h += rng.normal(0, 0.005, h.shape)
            h = 0.1 * h / np.linalg.norm(h, axis=2, keepdims=True)
    return side


def time_mda(path, runs):
    def reader():
        r = XTCReader(path, refresh_offsets=True)
        k = 0
        for ts in r:
            k += ts.positions.shape[0] > 0
        r.close()
        return k

    def xdrfile():
        k = 0
        with XTCFile(path) as f:
            for fr in f:
                k += fr.x.shape[0] > 0
        return k

    out = {}
    for name, fn in (("MDAnalysis XTCReader", reader), ("MDAnalysis libmdaxdr.XTCFile", xdrfile)):
        times, cpu = [], []
        for _ in range(runs):
            t0, c0 = time.perf_counter(), time.process_time()
            frames = fn()
            times.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        out[name] = (statistics.median(times), statistics.median(cpu), frames)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", required=True, help="build/bench/bench_parse")
    ap.add_argument("--frames", type=int, default=1000)
    ap.add_argument("--atoms", type=int, default=32000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", help="write the XTC here and keep it")
    a = ap.parse_args()

    tmp = tempfile.mkdtemp()
    path = a.keep or os.path.join(tmp, "bench.xtc")
    t0 = time.perf_counter()
    side = write_xtc(path, a.frames, a.atoms)
    size = os.path.getsize(path)
    print("# %s: %d frames x %d atoms, box %.3f nm, %.1f MB (%.2f bytes an atom), written by "
          "MDAnalysis %s in %.1f s" % (path, a.frames, a.atoms, side, size / 1e6,
                                       size / (a.frames * a.atoms), mda.__version__,
                                       time.perf_counter() - t0))
    try:
        out = subprocess.run([a.bench, "--xtc", path, str(a.runs)], check=True,
                             capture_output=True, text=True).stdout
        print(out, end="")
        m = re.search(r"^xtc: (\S+) (\S+) (\S+)$", out, re.M)
        histd_mbs = float(m.group(1))
        histd_cpu = size / 1e6 / float(re.search(r"^xtc +\S+ +\S+ +\S+ +\S+ +(\S+)", out,
                                                  re.M).group(1))
        mda_times = time_mda(path, a.runs)
    finally:
        shutil.rmtree(tmp)  # the file (unless --keep) and MDAnalysis's offsets cache

    rows = [("histd bench_parse (from memory)", size / 1e6 / histd_mbs, histd_cpu, a.frames)]
    rows += [(k, t, c, f) for k, (t, c, f) in mda_times.items()]
    print("| reader | s (median) | CPU s | MB/s | frames/s | histd's speed-up (wall, CPU) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, t, c, frames in rows:
        if frames != a.frames:
            sys.exit("%s read %d frames, want %d" % (name, frames, a.frames))
        print("| %s | %.3f | %.3f | %.0f | %.0f | %s |" % (
            name, t, c, size / 1e6 / t, frames / t,
            "" if name.startswith("histd") else "%.2fx, %.2fx" % (t / rows[0][1], c / rows[0][2])))


if __name__ == "__main__":
    main()
