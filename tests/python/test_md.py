"""test_md.py -- an MDAnalysis Universe and AtomGroup and an ASE Atoms
passed straight to the client (it reads .positions, .dimensions, .cell and
.pbc without importing either library), checked against numpy: g(r) in
the object's own box, and a histogram of an AtomGroup's pairs (in its
Universe's box; its positions alone in open space). A triclinic
box reaches the daemon as GROMACS's nine numbers. Skips (77) where
MDAnalysis or ASE is not installed (Debian: python3-mdanalysis,
python3-ase; deploy/install-deps.sh --test installs both).

usage: test_md.py HISTD_EXE
"""
import sys
import warnings

from common import Daemon, check, distances, exe, np, rdf, width_counts

import histd

warnings.simplefilter("ignore", DeprecationWarning)
try:
    import MDAnalysis
    import ase
except ImportError as e:
    print("skipped: %s (apt-get install python3-mdanalysis python3-ase)" % e)
    sys.exit(77)


def points(n, L, seed):
    return np.random.default_rng(seed).uniform(0, L, (n, 3))


def check_rdf(r, pts, L, what):
    counts, g, coord = rdf(distances(pts, box=[L] * 3), r.edges, len(pts) * (len(pts) - 1) // 2,
                           L ** 3, len(pts))
    check(np.array_equal(r.counts, counts), "%s: counts %s vs %s" % (what, r.counts, counts))
    check(np.allclose(r.g, g, rtol=1e-9) and np.allclose(r.coordination, coord, rtol=1e-9),
          "%s: g(r) %s vs %s" % (what, r.g, g))
    check(abs(r.volume - L ** 3) < 1e-6 * L ** 3, "%s: the box's volume %s" % (what, r.volume))


def test_mdanalysis(c):
    L = 20.0
    pts = points(300, L, 1)
    u = MDAnalysis.Universe.empty(300, trajectory=True)
    u.atoms.positions = pts
    u.dimensions = [L, L, L, 90, 90, 90]
    # the Universe: positions from .atoms, the box from .dimensions (float32 in MDAnalysis)
    r_u = r = c.rdf(u, r_max=8, buckets=16)
    check_rdf(r, u.atoms.positions.astype(np.float64), L, "Universe")
    # an AtomGroup: the first 100 atoms' own pairs, in the Universe's box
    # (its dimensions go with it); its positions alone are open space
    ag = u.atoms[:100]
    r = c.histogram(ag, bucket_width=1, buckets=10)
    counts, over = width_counts(distances(ag.positions.astype(np.float64), box=[L] * 3), 1, 10)
    check(np.array_equal(r.counts, counts) and r.overflow == over, "AtomGroup histogram")
    r = c.histogram(ag.positions, bucket_width=2, buckets=10)
    counts, over = width_counts(distances(ag.positions.astype(np.float64)), 2, 10)
    check(np.array_equal(r.counts, counts) and r.overflow == over, "positions histogram")
    # upload keeps the box for rdf()
    ds = c.upload(u.atoms)
    check(ds.box == [L, L, L] and ds.n == 300, ds)
    check(np.array_equal(c.rdf(ds, r_max=8, buckets=16).counts, r_u.counts),
          "a Dataset uploaded from a Universe keeps its box")
    # a triclinic box: GROMACS's 9 numbers, a along x, b in the xy plane
    u.dimensions = [L, L, L, 90, 90, 60]
    from histd._points import box_of
    box = box_of(u)
    check(len(box) == 9 and abs(box[3] - L * 0.5) < 1e-4 and abs(box[4] - L * 3 ** 0.5 / 2) < 1e-4,
          "triclinic: %s" % box)
    r = c.rdf(u, r_max=6, buckets=6)
    check(r.total == 300 * 299 // 2 and abs(r.volume - L ** 3 * 3 ** 0.5 / 2) < 1e-3 * L ** 3,
          "a triclinic Universe's rdf runs: volume %s" % r.volume)
    print("MDAnalysis %s: Universe (rdf in its box), AtomGroup (histogram), triclinic box"
          % MDAnalysis.__version__)


def test_ase(c):
    L = 15.0
    pts = points(250, L, 2)
    atoms = ase.Atoms("Ar250", positions=pts, cell=[L, L, L], pbc=True)
    r = c.rdf(atoms, r_max=7, buckets=14)
    check_rdf(r, atoms.positions, L, "ASE Atoms")
    atoms.pbc = False
    try:
        c.rdf(atoms, r_max=7, buckets=14)
        raise AssertionError("an Atoms without pbc has no box")
    except ValueError as e:
        check("box" in str(e), e)
    r = c.histogram(atoms, bucket_width=1.5, buckets=12)
    counts, over = width_counts(distances(atoms.positions), 1.5, 12)
    check(np.array_equal(r.counts, counts) and r.overflow == over, "Atoms histogram")
    print("ASE %s: Atoms (rdf in its cell; without pbc, a histogram and no box)" % ase.__version__)


def main():
    with Daemon(exe()) as d:
        c = histd.Client("http://127.0.0.1:%d" % d.port)
        test_mdanalysis(c)
        test_ase(c)
    print("test_md: all ok")


if __name__ == "__main__":
    main()
