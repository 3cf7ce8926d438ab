"""test_sdh_pairs.py -- sdh's pair list (--pairs-within R), per-point
counts (--within R --per-point) and nearest neighbours (--nearest) against
a brute force of the contract in numpy (tests/python/common.py's dmatrix:
binary64, dx = xi - xj, the minimum image dx - L * nearbyint(dx / L),
s = (dx*dx + dy*dy) + dz*dz, d = sqrt(s); a pair listed when d <= R).

selections: tests/io/data/water.gro (176 SPC waters, nm), --select-a
  name:OW --select-b all without --with: A and B are selections of one
  file, and a point never meets itself (README "A value per point, a record
  per pair"): no (i, i, 0) record, no point its own neighbour or nearest.

usage: test_sdh_pairs.py SDH_EXE
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
WATER = os.path.join(HERE, "..", "io", "data", "water.gro")
# the contract's distances and the GRO reader, written once for the tests
# (tests/python/common.py; it skips, 77, without numpy)
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from common import check, dmatrix, np, read_gro  # noqa: E402


def sdh_npz(sdh, args, tmp):
    path = os.path.join(tmp, "out.npz")
    with open(path, "wb") as out:
        p = subprocess.run([sdh] + args + ["-f", "npz"], stdout=out, stderr=subprocess.PIPE,
                           timeout=60)
    check(p.returncode == 0, "sdh %s: %d %s" % (" ".join(args), p.returncode, p.stderr.decode()))
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def test_selections(sdh, tmp):
    names, pos, box = read_gro(WATER)
    a = np.array([k for k, s in enumerate(names) if s == "OW"])
    dm = dmatrix(pos[a], pos, box)
    dm[a[:, None] == np.arange(len(pos))[None, :]] = np.inf  # never itself
    r = 0.32
    sel = [WATER, "--select-a", "name:OW", "--select-b", "all"]
    z = sdh_npz(sdh, sel + ["--pairs-within", str(r)], tmp)
    gi, gj = z["i"].astype(np.int64), z["j"].astype(np.int64)
    check(not np.any(gi == gj), "a point of A met itself: %d records (i, i)"
          % np.count_nonzero(gi == gj))
    wi, wj = np.nonzero(dm <= r)
    want = set(zip(a[wi].tolist(), wj.tolist()))
    got = set(zip(gi.tolist(), gj.tolist()))
    check(len(got) == len(gi) == int(z["pairs"]), "pairs %d, records %d, distinct %d"
          % (int(z["pairs"]), len(gi), len(got)))
    check(got == want, "OW x all: %d pairs, the definition %d; %d only in sdh's, %d only in"
          " the definition's" % (len(got), len(want), len(got - want), len(want - got)))
    dd = dm[np.searchsorted(a, gi), gj]
    check(np.array_equal(z["d"], dd), "d differs from the definition's")
    z = sdh_npz(sdh, sel + ["--within", str(r), "--per-point"], tmp)
    check(np.array_equal(z["neighbours"].ravel(), np.count_nonzero(dm <= r, axis=1)),
          "neighbours of each OW within %g" % r)
    z = sdh_npz(sdh, sel + ["--nearest"], tmp)
    near = np.argmin(dm, axis=1)
    check(np.array_equal(z["nearest"].ravel(), near), "nearest: %s, the definition %s"
          % (z["nearest"].ravel()[:8], near[:8]))
    check(np.array_equal(z["nearest_d"].ravel(), dm[np.arange(len(a)), near]), "nearest_d")
    print("selections of one file (OW x all, %d OW): %d pairs within %g nm, none of a point with"
          " itself; neighbours and nearest as the definition" % (len(a), len(got), r))


def main():
    sdh = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="histd-test-pairs-") as tmp:
        test_selections(sdh, tmp)
    print("test_sdh_pairs: all ok")


if __name__ == "__main__":
    main()
