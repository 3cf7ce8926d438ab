#!/usr/bin/python3
"""make_netcdf.py -- writes the small AMBER NetCDF trajectories that
tests/io/test_netcdf.c reads, with MDAnalysis's NCDFWriter, and beside each
(<file>.txt) what MDAnalysis's NCDFReader reads back from it: every frame's
box and coordinates.

    cd tests/io/data && /usr/bin/python3 make_netcdf.py

Needs Debian 12's python3-mdanalysis (2.4.2) for /usr/bin/python3. Without
the netCDF4 module MDAnalysis writes through scipy.io.netcdf (a writer of
its own, independent of the libnetcdf histd reads with): the classic 64-bit
offset format (CDF-2) that the AMBER convention asks for.

The files (fixed seeds, so a rerun writes the same numbers):
  ortho.nc        64 atoms, 5 frames, an orthorhombic box that changes
                  size from frame to frame (NPT), atoms partly outside it
  triclinic.ncdf  100 atoms, 3 frames, a triclinic box (angles not 90)
  nobox.nc        50 atoms, 4 frames, no cell variables (open space)
  scaled.nc       60 atoms, 3 frames, coordinates stored with a
                  scale_factor attribute (0.1), orthorhombic box
and the fuzz target's seeds, tiny ones of the same kinds, in
../corpus/netcdf/ (no .txt beside them).

A .txt file holds
  # comment lines
  frames atoms
  then per frame: "frame F KIND ax bx by cx cy cz" (KIND none, ortho or
  triclinic; the box vectors a = (ax,0,0), b = (bx,by,0), c = (cx,cy,cz)
  from MDAnalysis's triclinic_vectors in float64; zeros for none), then one
  line "x y z" per atom: the reader's float values printed with %.17g, so
  that they read back exactly.
"""
import os
import warnings

import numpy as np
import MDAnalysis as mda
from MDAnalysis.coordinates.TRJ import NCDFReader, NCDFWriter
from MDAnalysis.lib.mdamath import triclinic_vectors

HERE = os.path.dirname(os.path.abspath(__file__))


def boxes(kind, frames, rng):
    """Per frame: MDAnalysis's dimensions [lx, ly, lz, alpha, beta, gamma] or None."""
    if kind == "none":
        return [None] * frames
    out = []
    for _ in range(frames):
        lengths = rng.uniform(18.0, 26.0, 3)
        if kind == "ortho":
            angles = [90.0, 90.0, 90.0]
        else:
            angles = rng.uniform(70.0, 110.0, 3)
        out.append(np.concatenate([lengths, angles]))
    return out


def write(name, atoms, frames, kind, seed, scale=None, folder=HERE):
    rng = np.random.default_rng(seed)
    path = os.path.join(folder, name)
    dims = boxes(kind, frames, rng)
    u = mda.Universe.empty(atoms, trajectory=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "falling back to scipy.io.netcdf"
        with NCDFWriter(path, atoms, remarks="histd test: " + name,
                        scale_coordinates=scale) as w:
            for f in range(frames):
                # atoms in and around the box (-2 .. 26 Angstrom)
                u.atoms.positions = rng.uniform(-2.0, 26.0, (atoms, 3)).astype(np.float32)
                u.dimensions = dims[f]
                u.trajectory.ts.time = float(f)
                w.write(u)
    if folder == HERE:
        read_back(path, kind)


def read_back(path, kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = NCDFReader(path)
    lines = ["# make_netcdf.py: what MDAnalysis %s's NCDFReader reads back from %s"
             % (mda.__version__, os.path.basename(path)),
             "# frames atoms, then per frame 'frame F KIND ax bx by cx cy cz' and x y z per atom",
             "%d %d" % (r.n_frames, r.n_atoms)]
    for ts in r:
        if ts.dimensions is None:
            k, v = "none", np.zeros((3, 3))
        else:
            v = triclinic_vectors(ts.dimensions, dtype=np.float64)
            k = "ortho" if np.all(ts.dimensions[3:] == 90.0) else "triclinic"
        assert k == kind, (path, ts.frame, k, kind)
        lines.append("frame %d %s %s" % (ts.frame, k, " ".join(
            "%.17g" % x for x in (v[0, 0], v[1, 0], v[1, 1], v[2, 0], v[2, 1], v[2, 2]))))
        for p in ts.positions:
            lines.append("%.17g %.17g %.17g" % (float(p[0]), float(p[1]), float(p[2])))
    r.close()
    with open(path + ".txt", "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    write("ortho.nc", 64, 5, "ortho", 1)
    write("triclinic.ncdf", 100, 3, "triclinic", 2)
    write("nobox.nc", 50, 4, "none", 3)
    write("scaled.nc", 60, 3, "ortho", 4, scale=0.1)
    seeds = os.path.join(HERE, "..", "corpus", "netcdf")
    os.makedirs(seeds, exist_ok=True)
    write("ortho.nc", 3, 2, "ortho", 5, folder=seeds)
    write("triclinic.nc", 4, 2, "triclinic", 6, folder=seeds)
    write("nobox.nc", 2, 1, "none", 7, folder=seeds)
    write("scaled.nc", 3, 2, "ortho", 8, scale=0.5, folder=seeds)


if __name__ == "__main__":
    main()
