#!/usr/bin/python3
"""make_xtc.py -- writes the GROMACS trajectories that tests/io/test_xdr.c
reads, with real programs, and beside each one (NAME.txt) what MDAnalysis
reads back from it: the coordinates and box of every frame, in nm.

    cd tests/io/data && /usr/bin/python3 make_xtc.py

(Debian's MDAnalysis 2.4.2 is /usr/bin/python3's; GROMACS 2022 is
`apt-get install gromacs`, for gmx and gmx_d.) The inputs are seeded, so a
rerun writes the same files where the programs are the same versions.

  water.xtc      MDAnalysis XTCWriter: 50 three-atom molecules (150 atoms),
                 4 frames, orthorhombic box, precision 1000
  triclinic.xtc  MDAnalysis XTCWriter: 200 atoms, 3 frames, a triclinic box,
                 precision 100
  small.xtc      MDAnalysis XTCWriter: 7 atoms (stored uncompressed), 3
                 frames, no box (all zeros)
  wide.xtc       MDAnalysis XTCWriter: 12 atoms, 2 frames spanning 3300 nm
                 (a full atom packed into more than 64 bits) and 20000 nm (a
                 range above 2^24: three separate fields), no box
  gmx.xtc        GROMACS `gmx trjconv` from a 3-frame .gro: 120 atoms,
                 triclinic box
  water.trr      MDAnalysis TRRWriter (float, from A): 60 atoms, 3 frames,
                 with velocities and forces (which a reader skips), triclinic
                 box
  double.trr     GROMACS `gmx_d trjconv` (double precision) from a 3-frame
                 .gro with 7 decimals: 60 atoms, orthorhombic box

NAME.txt: '#' comments, then "real 4" (float32 values) or "real 8",
"natoms N", "frames F", "offsets O1 O2 ..." (each frame's first byte), then
per frame "frame K", "box" and the 9 box numbers (vectors a, b, c), and N
lines "x y z". Every number is the shortest decimal that reads back (with
strtof for real 4, strtod for real 8) as the exact value; XTC and float TRR
values are float32 (MDAnalysis decodes into float32). For double.trr the
values are the .gro's decimals as gmx_d parsed them (correctly rounded
doubles; MDAnalysis reads double TRR into float32, so its reading is
checked against them to float32 rounding here, not written).
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import MDAnalysis as mda
from MDAnalysis.coordinates.memory import MemoryReader
from MDAnalysis.coordinates.TRR import TRRWriter
from MDAnalysis.coordinates.XTC import XTCWriter
from MDAnalysis.lib.formats.libmdaxdr import TRRFile, XTCFile

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261124)


def molecules(n_mol, box, frames, step=0.02):
    """Three-atom molecules (an O and two H 0.1 nm away) drifting by
    `step` nm a frame: coordinates (frames, 3 n_mol, 3) in nm."""
    o = rng.uniform(0, 1, (n_mol, 3)) * box
    h = rng.normal(0, 1, (n_mol, 2, 3))
    h = 0.1 * h / np.linalg.norm(h, axis=2, keepdims=True)
    out = []
    for _ in range(frames):
        mol = np.concatenate([o[:, None, :], o[:, None, :] + h], axis=1)
        out.append(mol.reshape(-1, 3))
        o = o + rng.normal(0, step, o.shape)
        h = h + rng.normal(0, step / 4, h.shape)
    return np.array(out)


def universe(coords, dims, velocities=None, forces=None):
    u = mda.Universe.empty(coords.shape[1], trajectory=True)
    u.load_new(coords.astype(np.float32), format=MemoryReader, dimensions=dims,
               velocities=velocities, forces=forces)
    return u


def write_mda(writer, name, u, convert=False, **kw):
    """convert: the universe is in Angstrom and the writer converts to nm
    (MDAnalysis 2.4.2's XTCWriter needs that for a frame without a box)."""
    with writer(os.path.join(HERE, name), u.atoms.n_atoms, convert_units=convert, **kw) as w:
        for _ in u.trajectory:
            w.write(u.atoms)


def fmt(v):
    """The shortest decimal that reads back (strtof for float32, strtod
    for float64) as v."""
    return str(v) if isinstance(v, np.float32) else repr(float(v))


def dump(name, frames, comment, offsets):
    """frames: a list of (box 3x3, coordinates natoms x 3), float32 or
    float64 arrays."""
    lines = ["# " + c for c in comment]
    lines += ["real %d" % frames[0][1].dtype.itemsize,
              "natoms %d" % len(frames[0][1]), "frames %d" % len(frames),
              "offsets " + " ".join(str(int(o)) for o in offsets)]
    for k, (box, x) in enumerate(frames, 1):
        lines.append("frame %d" % k)
        lines.append("box " + " ".join(fmt(v) for v in np.asarray(box).ravel()))
        lines += [" ".join(fmt(v) for v in row) for row in x]
    with open(os.path.join(HERE, name + ".txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


def read_back(name, cls):
    """What MDAnalysis's xdrfile reads: per frame the box and x (float32)."""
    with cls(os.path.join(HERE, name)) as f:
        frames = [(fr.box.copy(), fr.x.copy()) for fr in f]
        offsets = f.offsets
    return frames, offsets


def xtc(name, coords, dims, precision, note):
    """dims None: no box (the coordinates go through MDAnalysis's A -> nm)."""
    u = universe(coords * 10, None) if dims is None else universe(coords, dims)
    write_mda(XTCWriter, name, u, convert=dims is None, precision=precision)
    frames, offsets = read_back(name, XTCFile)
    for (box, x), want in zip(frames, coords):  # the file's precision
        assert np.abs(x - want.astype(np.float32)).max() <= 0.5 * 10.0**-precision + 1e-6 * np.abs(want).max(), name
    dump(name, frames, ["%s: written by MDAnalysis %s XTCWriter (precision %d decimals), %s"
                        % (name, mda.__version__, precision, note),
                        "read back by MDAnalysis's xdrfile (libmdaxdr.XTCFile), nm"], offsets)


def gro(path, frames, box_line, decimals):
    """A multi-frame .gro with `decimals` digits (GROMACS reads the width
    from the first atom line)."""
    w = decimals + 5
    with open(path, "w") as f:
        for k, x in enumerate(frames):
            f.write("frame %d t= %d.00000\n%5d\n" % (k, k, len(x)))
            for i, (a, b, c) in enumerate(x):
                res, atom = i // 3 + 1, ("OW", "HW1", "HW2")[i % 3]
                f.write("%5d%-5s%5s%5d%*.*f%*.*f%*.*f\n" % (res % 100000, "SOL", atom,
                        (i + 1) % 100000, w, decimals, a, w, decimals, b, w, decimals, c))
            f.write(box_line + "\n")


def gmx(binary, *args):
    exe = shutil.which(binary)
    if exe is None:
        sys.exit("%s not found: apt-get install gromacs" % binary)
    env = dict(os.environ, GMX_MAXBACKUP="-1")  # overwrite: no #name.1# backups
    subprocess.run([exe, "-quiet", "-nocopyright"] + list(args), check=True, input=b"0\n",
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)


def gro_decimals(x, decimals):
    """The coordinates as the .gro holds them, parsed as doubles."""
    return np.array([[float("%.*f" % (decimals, v)) for v in row] for row in x])


def main():
    # water.xtc: orthorhombic, precision 1000
    box = np.array([3.2, 3.0, 2.9])
    c = molecules(50, box, 4)
    xtc("water.xtc", c, np.array([list(box) + [90, 90, 90]] * 4, dtype=np.float32), 3,
        "50 three-atom molecules, orthorhombic box")
    # triclinic.xtc: dimensions (a, b, c in nm, angles), precision 100
    dims = np.array([[3.0, 3.2, 3.4, 70, 80, 100]] * 3, dtype=np.float32)
    dims[:, :3] *= np.array([1.0, 1.01, 1.02])[:, None]
    c = np.concatenate([molecules(60, np.array([2.5, 2.5, 2.5]), 3),
                        rng.uniform(0, 2.5, (3, 20, 3))], axis=1)
    xtc("triclinic.xtc", c, dims, 2, "200 atoms, a triclinic box")
    # small.xtc: 7 atoms, stored as floats; no box
    c = rng.uniform(-1.5, 1.5, (3, 7, 3))
    xtc("small.xtc", c, None, 3, "7 atoms (uncompressed), no box")
    # wide.xtc: ranges needing > 64 bits, then > 2^24 per axis
    c = np.stack([rng.uniform(0, 3300, (12, 3)), rng.uniform(-10000, 10000, (12, 3))])
    c[0, 2], c[0, 3] = 0, 3300  # 3.3e6^3 > 2^64: a full atom takes 65 bits
    c[:, 1] = c[:, 0] + 0.05  # a small step too
    xtc("wide.xtc", c, None, 3,
        "12 atoms spanning 3300 nm, then 20000 nm")

    tmp = tempfile.mkdtemp()
    try:
        # gmx.xtc: GROMACS's own compressor, triclinic
        c = molecules(40, np.array([2.8, 2.6, 2.4]), 3)
        g = os.path.join(tmp, "in.gro")
        gro(g, c, "   2.80000   2.60000   2.40000   0.00000   0.00000   0.30000   0.00000  -0.20000   0.40000", 3)
        gmx("gmx", "trjconv", "-f", g, "-o", os.path.join(HERE, "gmx.xtc"))
        frames, offsets = read_back("gmx.xtc", XTCFile)
        for (b, x), want in zip(frames, c):
            assert np.abs(x - want).max() <= 0.0005 + 1e-6, "gmx.xtc"
        dump("gmx.xtc", frames, ["gmx.xtc: written by GROMACS 2022 gmx trjconv from a 3-frame .gro "
                                 "(3 decimals), 120 atoms, triclinic box",
                                 "read back by MDAnalysis's xdrfile (libmdaxdr.XTCFile), nm"], offsets)

        # water.trr: MDAnalysis, float, with v and f
        c = molecules(20, np.array([3.1, 3.1, 3.1]), 3)
        v = rng.normal(0, 0.5, c.shape).astype(np.float32)
        f = rng.normal(0, 100, c.shape).astype(np.float32)
        dims = np.array([[31, 31, 31, 90, 90, 60]] * 3, dtype=np.float32)  # A
        # in A (MDAnalysis 2.4.2's TRRWriter needs convert_units)
        write_mda(TRRWriter, "water.trr", universe(c * 10, dims, v * 10, f / 10), convert=True)
        frames, offsets = read_back("water.trr", TRRFile)
        for (b, x), want in zip(frames, c):
            assert np.abs(x - want).max() < 1e-6, "water.trr"
        dump("water.trr", frames, ["water.trr: written by MDAnalysis %s TRRWriter (float), "
                                   "60 atoms with velocities and forces, triclinic box"
                                   % mda.__version__,
                                   "read back by MDAnalysis's xdrfile (libmdaxdr.TRRFile), nm"],
             offsets)

        # double.trr: gmx_d from a 7-decimal .gro
        c = molecules(20, np.array([2.0, 2.1, 2.2]), 3)
        g = os.path.join(tmp, "in_d.gro")
        gro(g, c, "   2.00000   2.10000   2.20000", 7)
        gmx("gmx_d", "trjconv", "-f", g, "-o", os.path.join(HERE, "double.trr"))
        exact = [(np.diag([2.0, 2.1, 2.2]), gro_decimals(x, 7)) for x in c]
        frames, offsets = read_back("double.trr", TRRFile)
        for (b, x), (wb, wx) in zip(frames, exact):
            assert np.array_equal(x, wx.astype(np.float32)), "double.trr x"
            assert np.array_equal(b, wb.astype(np.float32)), "double.trr box"
        dump("double.trr", exact, ["double.trr: written by GROMACS 2022 gmx_d trjconv (double "
                                   "precision) from a 3-frame .gro with 7 decimals, 60 atoms",
                                   "the .gro's numbers as doubles (gmx_d parses them with "
                                   "strtod); MDAnalysis reads the file into float32 and agrees "
                                   "with them to float32 rounding"], offsets)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
