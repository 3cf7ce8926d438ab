"""make_gro_pdb.py -- writes the GRO and PDB test files of tests/io/data with
the real programs, and beside each file what MDAnalysis reads back from it.

Run it with Debian's python3 (MDAnalysis 2.4.2) and GROMACS on PATH
(Debian's `gromacs` package; `gmx mdrun` is not needed):

    cd tests/io/data && /usr/bin/python3 make_gro_pdb.py

Files (every one small; GRO in nm, PDB in Angstrom):
  water.gro       gmx solvate: SPC water in a 1.8 nm cube (one frame).
  frames.gro      gmx trjconv: three frames of Na+, Cl- and SPC water in a
                  triclinic box (gmx editconf -bt triclinic -angles 80 75 65,
                  then gmx solvate), with the velocities gmx grompp drew;
                  frame 2 is frame 1 translated, frame 3 scaled by 1.02
                  (gmx editconf -translate / -scale), box and all.
  frames_gmx.pdb  gmx trjconv: the same three frames as a PDB of MODEL
                  records with CRYST1 and the element columns.
  peptide.pdb     MDAnalysis's PDBWriter (multiframe=True): two frames of a
                  small protein-like system (ALA, VAL, GLY in chain A, water
                  and ions in chain B) without element columns, in a
                  triclinic box (one CRYST1 before MODEL 1, as the
                  writer does, frame 1's cell; see cryst1_before_model).
  peptide.gro     MDAnalysis's GROWriter: the same two frames, one written
                  after the other.
and for each FILE, FILE.ref: what MDAnalysis 2.4.2 reads from FILE (a GRO
file frame by frame, as its GRO reader reads one frame), in the file's unit:

  atoms N frames F
  a NAME RESNAME RESID MOL ELEMENT      (N lines; MOL = MDAnalysis's
                                         resindex + 1; ELEMENT its element
                                         column, else its guess from the
                                         name; '-' when empty)
  box ax ay az bx by bz cx cy cz        (per frame: the cell vectors,
                                         triclinic_vectors in float64)
  x y z                                 (N lines per frame)

tests/io/test_gro_pdb.c compares histd's parse of every file with it.
"""
import os
import shutil
import subprocess
import sys
import tempfile
import warnings

import numpy as np

warnings.simplefilter("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.lib.mdamath import triclinic_vectors  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

TOPOL = """#include "oplsaa.ff/forcefield.itp"
#include "oplsaa.ff/spc.itp"
#include "oplsaa.ff/ions.itp"

[ system ]
ions in water

[ molecules ]
NA 1
CL 1
"""

MDP = """integrator = md
nsteps     = 0
cutoff-scheme = Verlet
coulombtype = reaction-field
rcoulomb   = 0.6
rvdw       = 0.6
gen-vel    = yes
gen-temp   = 300
gen-seed   = 7
"""

IONS = """two ions
    2
    1NA      NA    1   0.400   0.400   0.400
    2CL      CL    2   0.900   0.800   0.700
   1.50000   1.50000   1.50000
"""


def gmx(work, *args, stdin=None):
    subprocess.run(["gmx", "-quiet"] + list(args), cwd=work, input=stdin, text=True,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def gromacs_files(work):
    """water.gro, frames.gro and frames_gmx.pdb, written by GROMACS."""
    gmx(work, "solvate", "-cs", "spc216.gro", "-box", "1.8", "1.8", "1.8", "-o", "water.gro")
    with open(os.path.join(work, "ions.gro"), "w") as f:
        f.write(IONS)
    with open(os.path.join(work, "topol.top"), "w") as f:
        f.write(TOPOL)
    with open(os.path.join(work, "run.mdp"), "w") as f:
        f.write(MDP)
    gmx(work, "editconf", "-f", "ions.gro", "-bt", "triclinic", "-box", "1.3", "1.4", "1.5",
        "-angles", "80", "75", "65", "-noc", "-o", "ions_tric.gro")
    gmx(work, "solvate", "-cp", "ions_tric.gro", "-cs", "spc216.gro", "-p", "topol.top",
        "-o", "solvated.gro")
    gmx(work, "grompp", "-f", "run.mdp", "-c", "solvated.gro", "-p", "topol.top",
        "-o", "run.tpr", "-maxwarn", "3")
    gmx(work, "editconf", "-f", "run.tpr", "-o", "f1.gro")  # with grompp's velocities
    gmx(work, "editconf", "-f", "f1.gro", "-translate", "0.05", "-0.03", "0.02", "-o", "f2.gro")
    gmx(work, "editconf", "-f", "f1.gro", "-scale", "1.02", "-o", "f3.gro")
    with open(os.path.join(work, "in.gro"), "w") as out:
        for k in (1, 2, 3):
            with open(os.path.join(work, "f%d.gro" % k)) as f:
                out.write(f.read())
    gmx(work, "trjconv", "-f", "in.gro", "-s", "run.tpr", "-o", "frames.gro", stdin="0\n")
    gmx(work, "trjconv", "-f", "in.gro", "-s", "run.tpr", "-o", "frames_gmx.pdb", stdin="0\n")
    for name in ("water.gro", "frames.gro", "frames_gmx.pdb"):
        shutil.copy(os.path.join(work, name), os.path.join(HERE, name))


# chain A: three residues of a peptide; chain B: a water, Na+ and Cl-
PEPTIDE = [
    ("A", "ALA", 1, ["N", "H", "CA", "HA", "CB", "HB1", "HB2", "HB3", "C", "O"]),
    ("A", "VAL", 2, ["N", "H", "CA", "HA", "CB", "HB", "CG1", "HG11", "HG12", "HG13", "CG2",
                     "C", "O"]),
    ("A", "GLY", 3, ["N", "H", "CA", "HA1", "HA2", "C", "O", "OXT"]),
    ("B", "SOL", 4, ["OW", "HW1", "HW2"]),
    ("B", "NA", 5, ["NA"]),
    ("B", "CL", 6, ["CL"]),
]


def mdanalysis_files(work):
    """peptide.pdb and peptide.gro, written by MDAnalysis."""
    names, resix, resnames, resids, chains = [], [], [], [], []
    for k, (chain, resname, resid, atoms) in enumerate(PEPTIDE):
        names += atoms
        resix += [k] * len(atoms)
        resnames.append(resname)
        resids.append(resid)
        chains += [chain] * len(atoms)
    n = len(names)
    u = mda.Universe.empty(n, n_residues=len(PEPTIDE), atom_resindex=resix, trajectory=True)
    u.add_TopologyAttr("names", names)
    u.add_TopologyAttr("resnames", resnames)
    u.add_TopologyAttr("resids", resids)
    u.add_TopologyAttr("chainIDs", chains)
    rng = np.random.default_rng(7)
    frames = []
    for f in range(2):
        dims = np.array([21.0 + f, 22.0, 23.5, 85.0, 80.0 - f, 70.0])
        pos = rng.uniform(0.0, 20.0, size=(n, 3)).astype(np.float32)
        frames.append((pos, dims))
    pdb = os.path.join(work, "peptide.pdb")
    with mda.Writer(pdb, n_atoms=n, multiframe=True) as w:
        for pos, dims in frames:
            u.atoms.positions = pos
            u.dimensions = dims
            w.write(u.atoms)
    with open(os.path.join(work, "peptide.gro"), "w") as out:
        for k, (pos, dims) in enumerate(frames):
            u.atoms.positions = pos
            u.dimensions = dims
            one = os.path.join(work, "peptide%d.gro" % k)
            u.atoms.write(one)
            with open(one) as f:
                out.write(f.read())
    for name in ("peptide.pdb", "peptide.gro"):
        shutil.copy(os.path.join(work, name), os.path.join(HERE, name))


def gro_frames(path, work):
    """The frames of a GRO file as one-frame files (MDAnalysis reads one)."""
    lines = open(path).read().splitlines(True)
    out, i = [], 0
    while i < len(lines):
        n = int(lines[i + 1])
        one = os.path.join(work, "frame%d.gro" % len(out))
        with open(one, "w") as f:
            f.writelines(lines[i:i + n + 3])
        out.append(one)
        i += n + 3
    return out


def cryst1_before_model(path, frame):
    """The cell of the last CRYST1 before the frame's MODEL, read as MDAnalysis
    reads CRYST1. MDAnalysis 2.4.2 reads a CRYST1 only inside a frame's MODEL
    unless every MODEL has one, so it gives no cell for the files its own
    PDBWriter writes (one CRYST1 before MODEL 1); the PDB's convention, and
    histd's, is that it holds for the models that follow."""
    models, cell = -1, None
    for line in open(path):
        if line.startswith("MODEL"):
            models += 1
            if models > frame:
                break
        elif line.startswith("CRYST1"):
            cell = np.array([line[6:15], line[15:24], line[24:33], line[33:40],
                             line[40:47], line[47:54]], dtype=np.float32)
    return cell


def element_of(u, a):
    if hasattr(u.atoms, "elements") and u.atoms.elements[a].strip():
        e = u.atoms.elements[a].strip()
    else:
        e = u.atoms.types[a].strip()  # MDAnalysis's guess from the name
    return e.capitalize() if e else "-"


def reference(name, work):
    path = os.path.join(HERE, name)
    gro = name.endswith(".gro")
    universes = [mda.Universe(p) for p in gro_frames(path, work)] if gro else [mda.Universe(path)]
    u0 = universes[0]
    scale = 0.1 if gro else 1.0  # MDAnalysis holds Angstrom; GRO files are in nm
    n = len(u0.atoms)
    rows = []
    for u in universes:
        for ts in u.trajectory:
            dims = ts.dimensions
            if dims is None and not gro:
                dims = cryst1_before_model(path, ts.frame)
            rows.append((triclinic_vectors(dims, dtype=np.float64) * scale
                         if dims is not None else np.zeros((3, 3)),
                         u.atoms.positions.astype(np.float64) * scale))
    with open(path + ".ref", "w") as f:
        f.write("atoms %d frames %d\n" % (n, len(rows)))
        for a in range(n):
            at = u0.atoms[a]
            f.write("a %s %s %d %d %s\n" % (at.name, at.resname, at.resid, at.resindex + 1,
                                            element_of(u0, a)))
        for box, pos in rows:
            f.write("box " + " ".join("%.9g" % v for v in box.flatten()) + "\n")
            for p in pos:
                f.write("%.6f %.6f %.6f\n" % tuple(p))


def main():
    if shutil.which("gmx") is None:
        sys.exit("make_gro_pdb.py: needs GROMACS's gmx (apt-get install gromacs)")
    with tempfile.TemporaryDirectory() as work:
        gromacs_files(work)
        mdanalysis_files(work)
        for name in ("water.gro", "frames.gro", "frames_gmx.pdb", "peptide.pdb",
                     "peptide.gro"):
            reference(name, work)
    print("make_gro_pdb.py: wrote", ", ".join(sorted(os.listdir(HERE))))


if __name__ == "__main__":
    main()
