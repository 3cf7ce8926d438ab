"""make_dcd.py -- writes the DCD test files of tests/io/data/ (and
tests/cli/lammps/frames.dcd) with real DCD writers, and beside each one a
.expect file of what MDAnalysis reads from it (test_dcd.c compares histd's
parser to these values).

Writers (Debian's packages; run with Debian's Python: /usr/bin/python3
tests/io/data/make_dcd.py, from anywhere):
  mda_degrees.dcd   MDAnalysis 2.4.2's DCDWriter (CHARMM header, a unit cell
                    every frame, its angles in degrees as NAMD 2.5 wrote
                    them; a frame without dimensions gets a zeroed cell)
  mdtraj_cosines.dcd  MDTraj 1.9.7's DCDTrajectoryFile (python3-mdtraj; the
                    VMD plugin's writer: the angles as cosines, as CHARMM
                    and NAMD >= 2.5 write them)
  mda_xplor.dcd     MDAnalysis's libdcd DCDFile with is_periodic=0: an
                    X-PLOR header (no CHARMM version, DELTA a double), no
                    unit cell records
  mda_matrix.dcd    DCDFile with the unit cell written as the six values of a
                    symmetric box matrix (some negative, which MDAnalysis's
                    reader takes as cell vectors)
  be_degrees.dcd    mda_degrees.dcd byte-swapped record by record into a
                    big-endian file (no writer here makes one; MDAnalysis
                    reads it back, so its .expect is MDAnalysis's own reading)
  m8_cosines.dcd    mdtraj_cosines.dcd with 8-byte record markers (as old
                    64-bit Fortran compilers wrote them); MDAnalysis cannot
                    read these, so its .expect is mdtraj_cosines.dcd's
  ../../cli/lammps/frames.dcd  the three frames of the LAMMPS liquid in
                    tests/cli/lammps/frames.dump (LAMMPS 20220106; Debian's
                    LAMMPS has no dump dcd) converted by MDAnalysis's
                    DCDWriter; test_lammps_rdf.py compares its g(r)
                    to LAMMPS's compute rdf.

The .expect layout (whitespace separated, '#' lines are comments):
  natoms N frames F
  frame f box KIND ax bx by cx cy cz      (KIND none|ortho|triclinic; the
                                          cell vectors a = (ax, 0, 0),
                                          b = (bx, by, 0), c = (cx, cy, cz)
                                          from triclinic_vectors(ts.dimensions,
                                          float64); zeros for none)
  i x y z                                 (N lines: ts.positions, float32
                                          printed exactly)
MDAnalysis keeps dimensions in float32, so the box values agree with a
double computation to about 1e-7 of the box's length.
"""
import os
import struct
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.coordinates.DCD import DCDReader, DCDWriter  # noqa: E402
from MDAnalysis.lib.formats.libdcd import DCDFile  # noqa: E402
from MDAnalysis.lib.mdamath import triclinic_vectors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CLI = os.path.join(HERE, "..", "..", "cli", "lammps")
N = 16


def points(seed, frames, lo=-2.0, hi=12.0):
    rng = np.random.RandomState(seed)
    return (lo + (hi - lo) * rng.rand(frames, N, 3)).astype(np.float32)


def write_mda_degrees(path):
    """DCDWriter: the dimensions [A, B, C, alpha, beta, gamma] per frame."""
    dims = [[10.0, 11.0, 12.0, 90.0, 90.0, 90.0], [10.5, 11.25, 12.5, 80.0, 85.0, 70.0],
            None, [9.75, 10.0, 11.0, 95.0, 100.0, 60.0]]
    xyz = points(1, len(dims))
    u = mda.Universe.empty(N, trajectory=True)
    with DCDWriter(path, n_atoms=N) as w:
        for f, d in enumerate(dims):
            u.atoms.positions = xyz[f]
            u.dimensions = d
            w.write(u.atoms)


def write_mdtraj_cosines(path):
    from mdtraj.formats import DCDTrajectoryFile
    lengths = np.array([[10.0, 10.0, 10.0], [10.0, 11.0, 12.0], [12.0, 11.5, 10.5]])
    angles = np.array([[90.0, 90.0, 90.0], [80.0, 85.0, 70.0], [75.0, 95.0, 105.0]])
    with DCDTrajectoryFile(path, "w") as f:
        f.write(points(2, 3), cell_lengths=lengths, cell_angles=angles)


def write_mda_xplor(path):
    f = DCDFile(path, "w")
    f.write_header(remarks="histd test: an X-PLOR DCD, no unit cell", natoms=N, istart=0,
                   nsavc=1, delta=0.5, is_periodic=0)
    for xyz in points(3, 3):
        f.write(xyz)
    f.close()


def write_mda_matrix(path):
    # [A, gamma, B, beta, alpha, C] slots holding H11 H12 H22 H13 H23 H33
    boxes = [[10.0, -2.0, 11.0, 1.5, -1.25, 12.0], [10.5, 2.5, 11.0, -1.0, 0.75, 11.5]]
    f = DCDFile(path, "w")
    f.write_header(remarks="histd test: a box matrix unit cell", natoms=N, istart=0,
                   nsavc=1, delta=1.0, is_periodic=1)
    for xyz, box in zip(points(4, 2), boxes):
        f.write(xyz, box=np.array(box))
    f.close()


def write_cli_frames(path):
    """tests/cli/lammps/frames.dump (LAMMPS's three frames) as a DCD."""
    from MDAnalysis.coordinates.LAMMPS import DumpReader
    r = DumpReader(os.path.join(CLI, "frames.dump"))
    u = mda.Universe.empty(r.n_atoms, trajectory=True)
    with DCDWriter(path, n_atoms=r.n_atoms) as w:
        for ts in r:
            u.atoms.positions = ts.positions
            u.dimensions = ts.dimensions
            w.write(u.atoms)


def records(data):
    """The Fortran records of a little-endian DCD with 4-byte markers."""
    out, p = [], 0
    while p < len(data):
        (n,) = struct.unpack_from("<i", data, p)
        assert struct.unpack_from("<i", data, p + 4 + n)[0] == n, "bad record at %d" % p
        out.append(data[p + 4:p + 4 + n])
        p += 8 + n
    return out


def swap_words(payload, width):
    fmt = {4: "I", 8: "Q"}[width]
    k = len(payload) // width
    return struct.pack(">%d%s" % (k, fmt), *struct.unpack("<%d%s" % (k, fmt), payload))


def big_endian(src, dst):
    """Every record's markers and numbers in the other byte order: the header's
    ints (its "CORD" kept, a float32 DELTA swapped as a word), NTITLE (the
    title text kept), NATOM, the unit cell's doubles, the coordinates' floats."""
    recs = records(open(src, "rb").read())
    head, title = recs[0], recs[1]
    charmm = struct.unpack_from("<i", head, 80)[0] != 0
    assert charmm, "the header's DELTA would be a double"
    out = []
    for i, r in enumerate(recs):
        if i == 0:
            body = r[:4] + swap_words(r[4:], 4)
        elif i == 1:
            body = swap_words(title[:4], 4) + title[4:]
        elif len(r) == 48 and N * 4 != 48:
            body = swap_words(r, 8)
        else:
            body = swap_words(r, 4)
        out.append(struct.pack(">i", len(r)) + body + struct.pack(">i", len(r)))
    open(dst, "wb").write(b"".join(out))


def wide_markers(src, dst):
    out = [struct.pack("<q", len(r)) + r + struct.pack("<q", len(r))
           for r in records(open(src, "rb").read())]
    open(dst, "wb").write(b"".join(out))


def expect(dcd, out, comment):
    r = DCDReader(dcd)
    lines = ["# %s as MDAnalysis %s reads it (%s); written by make_dcd.py"
             % (os.path.basename(dcd), mda.__version__, comment),
             "natoms %d frames %d" % (r.n_atoms, r.n_frames)]
    for f, ts in enumerate(r):
        d = ts.dimensions
        if d is None:
            kind, v = "none", [0.0] * 6
        else:
            m = triclinic_vectors(d, dtype=np.float64)
            kind = "ortho" if np.all(d[3:] == 90.0) else "triclinic"
            v = [m[0][0], m[1][0], m[1][1], m[2][0], m[2][1], m[2][2]]
        lines.append("frame %d box %s %s" % (f, kind, " ".join(repr(float(x)) for x in v)))
        for i, p in enumerate(ts.positions):
            lines.append("%d %s" % (i, " ".join(repr(float(x)) for x in p)))
    r.close()
    open(out, "w").write("\n".join(lines) + "\n")


def main():
    d = lambda name: os.path.join(HERE, name)  # noqa: E731
    write_mda_degrees(d("mda_degrees.dcd"))
    write_mdtraj_cosines(d("mdtraj_cosines.dcd"))
    write_mda_xplor(d("mda_xplor.dcd"))
    write_mda_matrix(d("mda_matrix.dcd"))
    big_endian(d("mda_degrees.dcd"), d("be_degrees.dcd"))
    wide_markers(d("mdtraj_cosines.dcd"), d("m8_cosines.dcd"))
    for name, how in (("mda_degrees", "DCDWriter, angles in degrees"),
                      ("mdtraj_cosines", "MDTraj, angles as cosines"),
                      ("mda_xplor", "X-PLOR, no unit cell"),
                      ("mda_matrix", "a box matrix"),
                      ("be_degrees", "big-endian")):
        expect(d(name + ".dcd"), d(name + ".expect"), how)
    expect(d("mdtraj_cosines.dcd"), d("m8_cosines.expect"),
           "read from mdtraj_cosines.dcd, the same file with 4-byte markers")
    write_cli_frames(os.path.join(CLI, "frames.dcd"))
    print("wrote", ", ".join(sorted(f for f in os.listdir(HERE) if f.endswith(".dcd"))),
          "and", os.path.join("tests/cli/lammps", "frames.dcd"), file=sys.stderr)


if __name__ == "__main__":
    main()
