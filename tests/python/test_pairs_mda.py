"""test_pairs_mda.py -- histd's pair list (pairs_within), per-point counts
(within + per_point) and nearest neighbours against numpy's binary64
definition and against MDAnalysis's capped_distance / self_capped_distance,
on a real MD system: tests/io/data/water.gro (176 SPC waters, 528 atoms,
that gmx solvate wrote; a periodic 1.8 nm cube).

The contract (README "Job parameters", include/histd/pair.h): dx = xi - xj
(then the minimum image: per axis dx - L * nearbyint(dx / L), or the
triclinic rule), s = (dx*dx + dy*dy) + dz*dz, d = sqrt(s), each operation
one binary64 rounding, and a pair is listed when d <= R. numpy computes
that on its own (common.py's dmatrix), and histd must equal it exactly: the same pairs,
each d bit for bit, the same counts per point, the same nearest neighbours
(ties: the lowest index).

MDAnalysis measures differently: float32 coordinates subtracted in float32,
its own minimum image (box * (s - round(s)) with a float32 1/box) or a grid
or a KD tree, and it keeps d <= max_cutoff too. So its list may differ from
the definition's only by pairs whose d lies within float32 rounding of R:
|d - R| at most a few float32 ulps of the box's side (the coordinates'
magnitude sets the error of dx, not d's). Every difference is checked to be
such a pair, for each of MDAnalysis's methods (bruteforce, nsgrid,
pkdtree); R is also set to a pair's exact distance, where d == R must be
listed (<=) and R one ulp below must not.

Cases: the whole box's own pairs (orthorhombic, and the same atoms in a
triclinic box); O x H as two uploads (A x B, no pair left out); and the
GRO file uploaded as histd reads it (nm, parsed here from its text) with
the selections name:OW x all of one dataset, where a point never meets
itself.

Skips (77) without MDAnalysis (Debian: python3-mdanalysis).

usage: test_pairs_mda.py HISTD_EXE
"""
import math
import os
import sys
import warnings

from common import ROOT, Daemon, check, dmatrix, exe, np, read_gro

import histd
from histd._points import box_of

warnings.simplefilter("ignore", DeprecationWarning)
try:
    import MDAnalysis
    from MDAnalysis.lib.distances import capped_distance, self_capped_distance
except ImportError as e:
    print("skipped: %s (apt-get install python3-mdanalysis)" % e)
    sys.exit(77)

WATER = os.path.join(ROOT, "tests", "io", "data", "water.gro")
METHODS = ("bruteforce", "nsgrid", "pkdtree")
# MDAnalysis's error on d: float32 dx (half an ulp of |dx| <= the box's
# side), its 1/box in float32 and box * (s - round(s)), nsgrid's float32
# squares. A few ulps of the side bound them all (measured: see the output).
ULPS = 8


# ---- the definition: common.py's dmatrix (the contract in numpy) -------------------


def definition_pairs(dm, r, self_pairs, same=None):
    """(i, j, d) of every pair with d <= r, sorted by (i, j): i < j for a
    self job; `same` (a boolean matrix) marks the (i, j) that are one point."""
    keep = dm <= r
    if self_pairs:
        keep &= np.triu(np.ones(dm.shape, dtype=bool), k=1)
    if same is not None:
        keep &= ~same
    i, j = np.nonzero(keep)  # row-major: sorted by (i, j)
    return i.astype(np.int64), j.astype(np.int64), dm[i, j]


def sorted_list(i, j, d):
    i = np.asarray(i, dtype=np.int64)
    j = np.asarray(j, dtype=np.int64)
    order = np.lexsort((j, i))
    return i[order], j[order], np.asarray(d, dtype=np.float64)[order]


# ---- the comparisons ----------------------------------------------------------------


def check_exact(res, want, what):
    """histd's list equals the definition's: pairs and every d's bits."""
    wi, wj, wd = want
    check(int(res.pairs) == len(wi), "%s: pairs %s, the definition %d" % (what, res.pairs, len(wi)))
    hi, hj, hd = sorted_list(res.i, res.j, res.d)
    check(len(hi) == len(wi), "%s: %d records for %d pairs" % (what, len(hi), len(wi)))
    bad = np.nonzero((hi != wi) | (hj != wj))[0]
    if len(bad):
        raise AssertionError("%s: pair (%d, %d), the definition's (%d, %d)" % (
            what, hi[bad[0]], hj[bad[0]], wi[bad[0]], wj[bad[0]]))
    diff = np.nonzero(hd.view(np.uint64) != wd.view(np.uint64))[0]
    if len(diff):
        raise AssertionError("%s: d of (%d, %d) is %r, the definition %r" % (
            what, hi[diff[0]], hj[diff[0]], hd[diff[0]], wd[diff[0]]))


def check_mda(mda, want, dm, r, tol, what):
    """MDAnalysis's list (i, j, d) against the definition's: every pair in
    one and not the other has |d - r| <= tol (d the definition's), and the
    common pairs' distances agree to tol. Returns (differences, the largest
    |d - r| among them)."""
    mi, mj, md = sorted_list(*mda)
    wi, wj, _ = want
    ncol = dm.shape[1]
    mk, wk = mi * ncol + mj, wi * ncol + wj
    check(len(np.unique(mk)) == len(mk), "%s: MDAnalysis lists a pair twice" % what)
    only = np.setxor1d(mk, wk)
    dd = dm[only // ncol, only % ncol]
    far = np.abs(dd - r) > tol
    check(not far.any(), "%s: %d pairs differ from MDAnalysis's by more than rounding at R = %r:"
          " %s" % (what, int(far.sum()), r, [(int(k // ncol), int(k % ncol), float(x))
                                              for k, x in zip(only[far][:5], dd[far][:5])]))
    common, at_m, _ = np.intersect1d(mk, wk, return_indices=True)
    err = np.abs(md[at_m] - dm[common // ncol, common % ncol])
    e = float(err.max()) if len(err) else 0.0
    check(e <= tol, "%s: MDAnalysis's d differs by %g (tol %g)" % (what, e, tol))
    return len(only), float(np.abs(dd - r).max()) if len(dd) else 0.0, e


def mda_self(pos, r, box, method):
    pairs, d = self_capped_distance(pos, r, box=box, method=method)
    pairs = np.sort(pairs, axis=1)  # i < j, as histd lists them
    return pairs[:, 0], pairs[:, 1], d


def mda_cross(a, b, r, box, method):
    pairs, d = capped_distance(a, b, r, box=box, method=method)
    return pairs[:, 0], pairs[:, 1], d


def check_per_point(c, data, data_b, dm, r, same, what, **params):
    """within r + per_point: each point's neighbours; nearest (alone and
    within r): its nearest other point (lowest index on ties) and d."""
    if same is not None:
        dm = np.where(same, np.inf, dm)
    want = np.count_nonzero(dm <= r, axis=1)
    res = c.neighbours(data, r, data_b, **params)
    got = np.asarray(res.neighbours, dtype=np.int64).ravel()
    check(np.array_equal(got, want), "%s: neighbours within %r: %s, the definition %s"
          % (what, r, got[:10], want[:10]))
    near = np.argmin(dm, axis=1)  # the first minimum: the lowest index
    near_d = dm[np.arange(len(dm)), near]
    for within in (None, r):
        res = c.nearest(data, data_b, within=within, **params)
        wn, wd = near.copy(), near_d.copy()
        if within is not None:
            wn[near_d > within] = -1
            wd[near_d > within] = np.nan
        gn = np.asarray(res.nearest, dtype=np.int64).ravel()
        gd = np.asarray(res.nearest_d, dtype=np.float64).ravel()
        check(np.array_equal(gn, wn), "%s: nearest (within %s): %s, the definition %s"
              % (what, within, gn[gn != wn][:5], wn[gn != wn][:5]))
        check(np.array_equal(gd, wd, equal_nan=True), "%s: nearest_d (within %s) differs"
              % (what, within))
    return int(want.sum())


def ulp32(x):
    return float(np.spacing(np.float32(x)))


def main():
    u = MDAnalysis.Universe(WATER)
    pos32 = u.atoms.positions  # float32 Angstrom, as MDAnalysis holds them
    pos = pos32.astype(np.float64)  # what histd is sent, exactly
    dims = u.dimensions.copy()
    box = [float(v) for v in dims[:3]]
    tol = ULPS * ulp32(max(box))
    ow = u.select_atoms("name OW")
    hw = u.select_atoms("name HW1 HW2")
    notes = []
    worst = [0.0, 0.0]  # the largest |d - R| of a pair in one list only; |d_MDA - d|

    def versus(what, mda, want, dm, r, tol, scale=1.0):
        n, w, e = check_mda(mda, want, dm, r, tol, what)
        worst[0], worst[1] = max(worst[0], w * scale), max(worst[1], e * scale)
        notes.append("%s R=%.17g: %d pairs, %d differ from MDAnalysis's" % (what, r, len(want[0]), n))
    with Daemon(exe()) as dmn:
        c = histd.Client("http://127.0.0.1:%d" % dmn.port)
        ds = c.upload(pos)
        ds_o, ds_h = c.upload(ow.positions), c.upload(hw.positions)

        # 1. the box's own pairs, orthorhombic: R = 3.5 A (the first shell),
        # a pair's exact d (listed) and the next double below it (not)
        dm = dmatrix(pos, pos, box)
        upper = dm[np.triu_indices(len(pos), k=1)]
        d_star = float(np.sort(upper[(upper > 3.0) & (upper < 3.5)])[7])
        radii = [3.5, d_star, float(np.nextafter(d_star, 0.0))]
        for r in radii:
            want = definition_pairs(dm, r, True)
            res = c.pairs_within(ds, r, box=box)
            check_exact(res, want, "self, R %r" % r)
            check(res.frame is None or np.all(np.asarray(res.frame) == 0), "one frame")
            for m in METHODS:
                versus("self " + m, mda_self(pos32, r, dims, m), want, dm, r, tol)
        check(d_star in set(c.pairs_within(ds, d_star, box=box).d.tolist()),
              "d == R is listed")
        n_pp = check_per_point(c, ds, None, dm, 3.5, np.eye(len(pos), dtype=bool), "self",
                               box=box)
        check(n_pp == 2 * len(definition_pairs(dm, 3.5, True)[0]),
              "per-point counts sum to twice the pairs")

        # 2. O x H, two uploads: every (O, H) pair, R = 2.5 A (the O-H bonds
        # and the hydrogen bonds)
        dm_oh = dmatrix(ow.positions, hw.positions, box)
        for r in (2.5, float(np.sort(dm_oh[(dm_oh > 1.8) & (dm_oh < 2.0)])[3])):
            want = definition_pairs(dm_oh, r, False)
            check_exact(c.pairs_within(ds_o, r, ds_h, box=box), want, "O x H, R %r" % r)
            for m in METHODS:
                versus("O x H " + m, mda_cross(ow.positions, hw.positions, r, dims, m), want,
                       dm_oh, r, tol)
        check_per_point(c, ds_o, ds_h, dm_oh, 2.5, None, "O x H", box=box)

        # 3. the same atoms in a triclinic box (gamma 60 degrees): GROMACS's
        # nine numbers as the client makes them from .dimensions
        u.dimensions = [dims[0], dims[1], dims[2], 90.0, 90.0, 60.0]
        tri = box_of(u)
        check(len(tri) == 9, "triclinic: %s" % tri)
        dm_t = dmatrix(pos, pos, tri)
        for r in (3.5, float(np.sort(dm_t[np.triu_indices(len(pos), k=1)])[5000])):
            want = definition_pairs(dm_t, r, True)
            check_exact(c.pairs_within(ds, r, box=tri), want, "triclinic, R %r" % r)
            for m in ("bruteforce", "nsgrid"):
                versus("triclinic " + m, mda_self(pos32, r, u.dimensions, m), want, dm_t, r, tol)
        check_per_point(c, ds, None, dm_t, 3.5, np.eye(len(pos), dtype=bool), "triclinic",
                        box=tri)
        u.dimensions = dims

        # 4. the GRO file as histd reads it (nm), name:OW x all of one
        # dataset: indices are the dataset's, and a point never meets itself
        names, pos_nm, box_nm = read_gro(WATER)
        gro = c.upload(WATER)
        a = np.array([k for k, s in enumerate(names) if s == "OW"])
        dm_g = dmatrix(pos_nm[a], pos_nm, box_nm)
        same = a[:, None] == np.arange(len(pos_nm))[None, :]
        r_nm = 0.32
        gi, gj, gd = definition_pairs(dm_g, r_nm, False, same)
        want = sorted_list(a[gi], gj, gd)
        sel = dict(select_a="name:OW", select_b="all", box=box_nm)
        # selections that share atoms: every (a, b) of distinct atoms, as asked
        # ("pairs": "ordered"; a list of them is refused without it)
        check_exact(c.pairs_within(gro, r_nm, pairs="ordered", **sel), want,
                    "OW x all of a GRO file")
        # MDAnalysis in Angstrom: its (OW k, atom j) pairs, less each OW with itself
        tol_nm = ULPS * ulp32(10 * max(box_nm)) / 10
        for m in METHODS:
            pi, pj, pd = mda_cross(ow.positions, u.atoms.positions, 10 * r_nm, dims, m)
            keep = ow.indices[pi] != pj
            mda = (pi[keep], pj[keep], pd[keep] / 10)
            versus("OW x all of the GRO (nm) " + m, mda, (gi, gj, gd),
                   np.where(same, np.inf, dm_g), r_nm, tol_nm, scale=10.0)
        check_per_point(c, gro, None, dm_g, r_nm, same, "OW x all (GRO)", **sel)

    for line in notes:
        print(line)
    print("the largest |d - R| of a pair listed by one side only: %.3g A; the largest |d_MDA - d|"
          " of a pair both list: %.3g A (tolerance %.3g A, %d float32 ulps of the box's side)"
          % (worst[0], worst[1], tol, ULPS))
    print("MDAnalysis %s; test_pairs_mda: all ok" % MDAnalysis.__version__)


if __name__ == "__main__":
    main()
