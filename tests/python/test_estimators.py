"""test_estimators.py -- histd.estimators (api/python) held to definitions
computed here independently, and Client.rp_pi / Client.s_mu against the
real daemon with numpy's brute force:

- pair_norm: N(N-1)/2 and N_a N_b by counting the pairs; the weighted
  sum_{i<j} w_i w_j exactly, in fractions, by the double loop;
- natural and Landy-Szalay bin by bin as written by hand, nan where RR = 0;
- w_p of xi(pi) = 1 / (1 + pi^2) in bins (each bin its average,
  atan's difference over its width): 2 atan(pi_max);
- multipoles: a xi constant in each mu bin against Gauss-Legendre
  quadrature of the same function over each bin (exact), and
  xi = a + b P2 + c P4 (bin averages from numpy.polynomial's integrals)
  recovering a, b, c within the piecewise-constant bound;
- analytic RR: each bin's volume (rp_pi, s_mu, shells) bracketed by a fine
  grid of separation vectors, the cells wholly inside the bin (by the
  ranges r_p, pi, s and mu take over a cell) and those touching it;
- the jackknife: per-region counts built by brute force from region pairs,
  against an explicit loop that drops each region's points and counts
  DD, DR and RR and their normalisations again from scratch;
- the daemon: rp_pi (periodic, weighted) and s_mu (A x B) counts equal to
  numpy's brute force, edges2 and centers2; xi_box of uniform points
  (counts and weights) is 0 within its Poisson noise;
- api/python/README.md's estimators example runs as pasted and prints
  what it shows.

usage: test_estimators.py HISTD_EXE
"""
import itertools
import math
from fractions import Fraction

from common import Daemon, check, exe, np, run_readme_example

import histd
from histd import estimators as est


def test_pair_norm():
    rng = np.random.default_rng(3)
    for n in (0, 1, 2, 7, 40):
        check(est.pair_norm(n) == len(list(itertools.combinations(range(n), 2))), n)
    check(est.pair_norm(7, 11) == 77 and est.pair_norm(np.int64(5)) == 10, "counts")
    for w in (rng.uniform(0.1, 3, 60), np.r_[1e8, rng.uniform(0, 1e-3, 30)],
              list(rng.normal(0, 1, 25))):
        exact = sum(Fraction(float(w[i])) * Fraction(float(w[j]))
                    for i in range(len(w)) for j in range(i + 1, len(w)))
        got = est.pair_norm(w)
        scale = Fraction(math.fsum(abs(float(v)) for v in w)) ** 2 / 2
        check(abs(Fraction(got) - exact) <= 4 * 2 ** -53 * scale,
              "weighted self: %r vs %r" % (got, float(exact)))
    wa, wb = rng.uniform(0, 2, 13), rng.uniform(0, 2, 17)
    exact = sum(Fraction(float(a)) * Fraction(float(b)) for a in wa for b in wb)
    check(abs(Fraction(est.pair_norm(wa, wb)) - exact) <= 4 * 2 ** -53 * exact, "weighted A x B")
    for bad in (-1, True, "x", [1.0, float("nan")]):
        try:
            est.pair_norm(bad)
            raise AssertionError("pair_norm(%r) was taken" % (bad,))
        except ValueError as e:
            check(str(e), bad)
    print("pair_norm: counts, weights (exact within 4 ulp), A x B")


def test_estimators():
    dd = np.array([[0.30, 0.10], [0.05, 0.0]])
    dr = np.array([[0.20, 0.12], [0.06, 0.01]])
    rr = np.array([[0.25, 0.15], [0.0, 0.02]])
    nat, ls = est.natural(dd, rr), est.landy_szalay(dd, dr, rr)
    for i in range(2):
        for j in range(2):
            if rr[i][j] == 0:
                check(math.isnan(nat[i, j]) and math.isnan(ls[i, j]), "RR = 0 gives nan")
                continue
            want_n = dd[i][j] / rr[i][j] - 1
            want_ls = (dd[i][j] - 2 * dr[i][j] + rr[i][j]) / rr[i][j]
            check(abs(nat[i, j] - want_n) < 1e-15 and abs(ls[i, j] - want_ls) < 1e-15,
                  (i, j, nat[i, j], want_n, ls[i, j], want_ls))
    one = est.landy_szalay([0.5], [0.25], [0.125])
    check(one.shape == (1,) and abs(one[0] - 1.0) < 1e-15, one)  # (0.5-0.5+0.125)/0.125 - 0
    try:
        est.natural([1, 2], [1, 2, 3])
        raise AssertionError("shapes that differ were taken")
    except ValueError as e:
        check("shape" in str(e), e)
    # w_p: xi(r_p, pi) = A(r_p) / (1 + pi^2), each bin its mean over the bin
    pi_edges = np.array([0.0, 0.5, 1.25, 3.0, 7.0, 40.0])
    amp = np.array([2.0, 0.5, 0.1])
    a, b = pi_edges[:-1], pi_edges[1:]
    xi = amp[:, None] * ((np.arctan(b) - np.arctan(a)) / (b - a))[None, :]
    w = est.wp(xi, pi_edges)
    check(np.allclose(w, 2 * amp * math.atan(40.0), rtol=1e-14, atol=0), (w, 2 * amp * math.atan(40)))
    print("natural, Landy-Szalay, w_p: the hand-written formulas")


def P(ell, x):
    return np.polynomial.legendre.Legendre.basis(ell)(x)


def test_multipoles():
    # xi constant in each mu bin: its multipoles exactly, by Gauss-Legendre
    # quadrature (10 nodes: exact for degree 19) of xi P_ell over each bin
    rng = np.random.default_rng(5)
    mu_edges = np.sort(np.r_[0.0, rng.uniform(0, 1, 9), 1.0])
    xi = rng.normal(0, 1, (4, 10))
    x, wq = np.polynomial.legendre.leggauss(10)
    got = est.multipoles(xi, mu_edges)
    check(got.shape == (3, 4), got.shape)
    for li, ell in enumerate((0, 2, 4)):
        want = np.zeros(4)
        for k in range(10):
            lo, hi = mu_edges[k], mu_edges[k + 1]
            nodes = lo + (hi - lo) * (x + 1) / 2
            want += (2 * ell + 1) * xi[:, k] * ((hi - lo) / 2 * (wq * P(ell, nodes)).sum())
        check(np.allclose(got[li], want, rtol=1e-12, atol=1e-13), (ell, got[li], want))
    # xi(s, mu) = a + b P2 + c P4 averaged over each of 200 mu bins
    coef = np.array([[1.0, -0.4, 0.25], [0.3, 0.9, -0.5]])  # a row an s bin
    nb = 200
    e = np.linspace(0, 1, nb + 1)
    avg = np.zeros((2, nb))
    for row, (a, b, c) in enumerate(coef):
        f = np.polynomial.legendre.Legendre([a, 0, b, 0, c]).integ()
        avg[row] = (f(e[1:]) - f(e[:-1])) / np.diff(e)
    got = est.multipoles(avg, e, ells=(0, 2, 4))
    # the error is (2l+1) int (xi - its bin means)(P_l - its bin means): at most
    # (2l+1) (dmu / pi)^2 |xi'| |P_l'| (L2 norms on [0, 1]), below 2e-4 here
    check(np.allclose(got.T, coef, rtol=0, atol=2e-4), (got.T, coef))
    for bad in ((1,), (-2,), (2.0,)):
        try:
            est.multipoles(avg, e, ells=bad)
            raise AssertionError("ells=%r was taken" % (bad,))
        except ValueError as err:
            check("even" in str(err), err)
    print("multipoles: exact for xi constant in each bin; a + b P2 + c P4 recovered")


def bracket(values_lo, values_hi, edges):
    """For each cell, the bins its whole range [lo, hi] lies in: (inside,
    touching) boolean arrays a bin (bins as E[k] <= v < E[k+1])."""
    n = len(edges) - 1
    klo = np.searchsorted(edges, values_lo, side="right") - 1
    khi = np.searchsorted(edges, values_hi, side="right") - 1
    inside = [(klo == k) & (khi == k) for k in range(n)]
    touch = [(klo <= k) & (khi >= k) for k in range(n)]
    return inside, touch


def test_analytic_rr():
    """Each bin's volume of separation vectors, bracketed by a grid of
    cells of side h over the octant x, y, z > 0 (8 octants by symmetry):
    a cell is wholly in a bin when every value its points take is, and the
    values over a cell lie within its centre's +- the half-diagonal
    (r_p, pi = |z|, s are 1-Lipschitz; mu's range from those of |z| and s)."""
    side, n = 3.6, 150
    h = side / n
    c = (np.arange(n) + 0.5) * h
    X, Y, Z = np.meshgrid(c, c, c, indexing="ij")
    X, Y, Z = X.ravel(), Y.ravel(), Z.ravel()
    cell = 8 * h ** 3
    delta = math.sqrt(3) / 2 * h
    volume, pairs = 1000.0, 4950.0  # V, and N (N - 1) / 2 of N = 100
    # rp_pi: r_p and pi bins
    rp_e, pi_e = np.array([0.5, 1.5, 2.5, 3.4]), np.array([0.0, 1.0, 2.2, 3.4])
    rp = np.sqrt(X * X + Y * Y)
    half = math.sqrt(2) / 2 * h  # r_p's range over a cell: the xy square's half-diagonal
    in1, to1 = bracket(rp - half, rp + half, rp_e)
    in2, to2 = bracket(Z - h / 2, Z + h / 2, pi_e)
    rr = est.analytic_rr("rp_pi", rp_e, volume, pairs, pi_e)
    check(rr.shape == (3, 3), rr.shape)
    widest = 0
    for i in range(3):
        for j in range(3):
            lo = cell * np.count_nonzero(in1[i] & in2[j])
            hi = cell * np.count_nonzero(to1[i] & to2[j])
            got = rr[i, j] / pairs * volume
            check(lo <= got <= hi, "rp_pi bin (%d, %d): volume %g, the grid's [%g, %g]"
                  % (i, j, got, lo, hi))
            widest = max(widest, (hi - lo) / got)
    check(widest < 0.2, "the grid brackets within %.0f%%" % (100 * widest))
    # s_mu and shells
    s_e, mu_e = np.array([0.5, 1.5, 2.5, 3.5]), np.array([0.0, 0.3, 0.7, 1.0])
    s = np.sqrt(X * X + Y * Y + Z * Z)
    s_lo, s_hi = s - delta, s + delta
    mu_lo = np.maximum(Z - h / 2, 0) / s_hi
    mu_hi = np.minimum((Z + h / 2) / np.maximum(s_lo, 1e-300), 1.0)
    # mu = 1 lands in the last bin: a closed top edge
    mu_lo, mu_hi = np.minimum(mu_lo, 1 - 1e-15), np.minimum(mu_hi, 1 - 1e-15)
    in1, to1 = bracket(s_lo, s_hi, s_e)
    in2, to2 = bracket(mu_lo, mu_hi, mu_e)
    rr = est.analytic_rr("s_mu", s_e, volume, pairs, mu_e)
    shells = est.analytic_rr("histogram", s_e, volume, pairs)
    for i in range(3):
        for j in range(3):
            lo = cell * np.count_nonzero(in1[i] & in2[j])
            hi = cell * np.count_nonzero(to1[i] & to2[j])
            got = rr[i, j] / pairs * volume
            check(lo <= got <= hi and (hi - lo) < 0.35 * got,
                  "s_mu bin (%d, %d): volume %g, the grid's [%g, %g]" % (i, j, got, lo, hi))
        lo, hi = cell * np.count_nonzero(in1[i]), cell * np.count_nonzero(to1[i])
        got = shells[i] / pairs * volume
        check(lo <= got <= hi and (hi - lo) < 0.2 * got,
              "shell %d: volume %g, the grid's [%g, %g]" % (i, got, lo, hi))
    check(np.allclose(est.analytic_rr("s_mu", s_e, volume, 30.0, mu_e) * 100 / 30,
                      est.analytic_rr("s_mu", s_e, volume, 100.0, mu_e), rtol=1e-15), "pairs scale")
    for args in (("rp_pi", rp_e, volume, pairs), ("theta", s_e, volume, pairs),
                 ("histogram", s_e, 0.0, pairs), ("s_mu", s_e, volume, pairs, [0, 0.5, 2]),
                 ("histogram", [2.0, 1.0], volume, pairs)):
        try:
            est.analytic_rr(*args)
            raise AssertionError("analytic_rr%r was taken" % (args,))
        except ValueError as e:
            check(str(e), args)
    print("analytic RR: rp_pi, s_mu and shells within a grid's bracket of each bin's volume")


def test_jackknife():
    """Per-region counts by the rule (a pair of regions a, b adds to a and,
    if b != a, to b) against dropping each region's points and counting
    everything again."""
    rng = np.random.default_rng(11)
    L, R = 10.0, 5
    pd = rng.uniform(0, L, (90, 3))
    pr = rng.uniform(0, L, (200, 3))
    wd, wr = rng.uniform(0.5, 1.5, 90), rng.uniform(0.5, 1.5, 200)
    gd = np.minimum((pd[:, 0] / (L / R)).astype(int), R - 1)
    gr = np.minimum((pr[:, 0] / (L / R)).astype(int), R - 1)
    edges = np.array([0.5, 1.5, 3.0, 5.0])

    def dist(a, b):
        return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))

    def weighted(a, wa, b=None, wb=None):
        """Each bin's sum of w_i w_j, pairs i < j (b None) or a x b."""
        same = b is None
        b, wb = (a, wa) if same else (b, wb)
        d, ww = dist(a, b), wa[:, None] * wb[None, :]
        if same:
            iu = np.triu_indices(len(a), 1)
            d, ww = d[iu], ww[iu]
        k = np.searchsorted(edges, d.ravel(), side="right") - 1
        ok = (k >= 0) & (k < len(edges) - 1)
        return np.bincount(k[ok], ww.ravel()[ok], len(edges) - 1)

    def per_region(a, wa, ga, b=None, wb=None, gb=None):
        """Totals and per-region counts by the rule, from each pair of regions."""
        out = np.zeros((R, len(edges) - 1))
        total = np.zeros(len(edges) - 1)
        for ra in range(R):
            for rb in range(R):
                if b is None and rb < ra:
                    continue
                ia, = np.nonzero(ga == ra)
                if b is None:
                    ib, = np.nonzero(ga == rb)
                    c = weighted(a[ia], wa[ia]) if ra == rb else \
                        weighted(a[ia], wa[ia], a[ib], wa[ib])
                else:
                    ib, = np.nonzero(gb == rb)
                    c = weighted(a[ia], wa[ia], b[ib], wb[ib])
                total += c
                out[ra] += c
                if rb != ra:
                    out[rb] += c
        return total, out

    DD, DR, RR = (per_region(pd, wd, gd), per_region(pd, wd, gd, pr, wr, gr),
                  per_region(pr, wr, gr))
    ND = (est.pair_norm(wd), est.region_pair_norms(gd, wd))
    NDR = (est.pair_norm(wd, wr), est.region_pair_norms(gd, wd, gr, wr))
    NR = (est.pair_norm(wr), est.region_pair_norms(gr, wr))

    def ls(dd, dr, rr, nd, ndr, nr):
        return est.landy_szalay(dd / nd, dr / ndr, rr / nr)

    x, cov = est.jackknife(ls, DD, DR, RR, ND, NDR, NR)
    # the explicit loop: drop region k's points, count from scratch
    want = []
    for k in range(R):
        kd, kr = gd != k, gr != k
        a, w, b, v = pd[kd], wd[kd], pr[kr], wr[kr]
        nd = (w.sum() ** 2 - (w * w).sum()) / 2
        nr = (v.sum() ** 2 - (v * v).sum()) / 2
        ndr = w.sum() * v.sum()
        dd, dr, rr = weighted(a, w) / nd, weighted(a, w, b, v) / ndr, weighted(b, v) / nr
        want.append((dd - 2 * dr + rr) / rr)
    want = np.array(want)
    check(np.allclose(x, want, rtol=1e-10, atol=1e-12), (x, want))
    mean = want.mean(axis=0)
    C = sum(np.outer(want[k] - mean, want[k] - mean) for k in range(R)) * (R - 1) / R
    check(np.allclose(cov, C, rtol=1e-9, atol=1e-14), (cov, C))
    check(np.all(np.diag(cov) > 0), "a covariance that says something: %s" % np.diag(cov))
    for bad in ((DD[0], DD[1][:1]), (DD[0][:2], DD[1])):
        try:
            est.jackknife(lambda dd: dd, bad)
            raise AssertionError("jackknife took %r" % (bad,))
        except ValueError as e:
            check(str(e), e)
    print("jackknife: leave-one-out Landy-Szalay and its covariance, %d regions" % R)


# ---- the daemon ----

def brute(stat, a, b=None, box=None, wa=None, wb=None, edges=None, n2=None, max2=None):
    """rp_pi or s_mu counts (and weighted sums) by the rules: dx per axis,
    the minimum image per axis, r_p = sqrt(dx*dx + dy*dy), pi = |dz|,
    s = sqrt((dx*dx + dy*dy) + dz*dz), mu = pi / s (0 at s = 0); axis 2 bin
    floor(v / fl(max2 / n2)) (the last bin at most), pi < pi_max and
    mu <= mu_max counted; axis 1 E[k] <= v < E[k+1]."""
    same = b is None
    b, wb = (a, wa) if same else (b, wb)
    d = [a[:, None, k] - b[None, :, k] for k in range(3)]
    if box is not None:
        d = [x - box * np.rint(x / box) for x in d]
    xx, yy, zz = d[0] * d[0], d[1] * d[1], d[2] * d[2]
    pi = np.abs(d[2])
    if stat == "rp_pi":
        u, v, in2 = np.sqrt(xx + yy), pi, pi < max2
    else:
        u = np.sqrt((xx + yy) + zz)
        v = np.where(u > 0, pi / np.where(u > 0, u, 1), 0.0)
        in2 = v <= max2
    ww = np.ones_like(u) if wa is None else wa[:, None] * wb[None, :]
    if same:
        iu = np.triu_indices(len(a), 1)
        u, v, in2, ww = u[iu], v[iu], in2[iu], ww[iu]
    k2 = np.minimum(np.floor(v / (max2 / n2)), n2 - 1).astype(np.int64)
    k1 = np.searchsorted(edges, u, side="right") - 1
    ok = in2 & (k1 >= 0) & (k1 < len(edges) - 1)
    flat = k1[ok] * n2 + k2[ok]
    n1 = len(edges) - 1
    counts = np.bincount(flat, minlength=n1 * n2).reshape(n1, n2).astype(np.uint64)
    sums = np.bincount(flat, ww[ok], n1 * n2).reshape(n1, n2)
    below = int(np.count_nonzero(in2 & (k1 < 0)))
    return counts, sums, below, int(u.size) - int(counts.sum()) - below


def test_daemon(c):
    rng = np.random.default_rng(21)
    L = 12.0
    pts = rng.uniform(0, L, (500, 3))
    pts[40:80, 2] = rng.uniform(0, L - 4, 40)
    pts[:40, 2] = pts[40:80, 2] + np.array([0.0, 1.0, 2.0, 3.0] * 10)  # pi at its edges
    w = rng.uniform(0.5, 2.0, 500)
    r = c.rp_pi(np.c_[pts, w], rp_edges=[0.5, 1.0, 2.0, 4.0, 5.5], pi_max=4, pi_bins=4,
                box=[L], weights=True, progress=False)
    counts, sums, below, over = brute("rp_pi", pts, box=L, wa=w, edges=r.edges, n2=4, max2=4.0)
    check(r.statistic == "rp_pi" and r.counts.shape == (4, 4) and r.counts.dtype == np.uint64,
          repr(r))
    check(np.array_equal(r.counts, counts) and (r.below, r.overflow) == (below, over),
          "rp_pi: %s %s %s vs %s %s %s" % (r.counts, r.below, r.overflow, counts, below, over))
    check(np.allclose(r.weighted, sums, rtol=1e-12, atol=0), (r.weighted, sums))
    check(r.edges.tolist() == [0.5, 1.0, 2.0, 4.0, 5.5] and
          r.edges2.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0] and
          r.centers2.tolist() == [0.5, 1.5, 2.5, 3.5], (r.edges, r.edges2))
    check(r.total == 500 * 499 // 2 and r.volume == L ** 3 and "4 x 4" in repr(r), repr(r))
    b = rng.uniform(0, L, (300, 3))
    r = c.s_mu(pts, b, log_bins=[0.3, 6.0, 5], mu_bins=6, mu_max=0.9, progress=False)
    counts, _, below, over = brute("s_mu", pts, b, edges=r.edges, n2=6, max2=0.9)
    check(r.statistic == "s_mu" and r.n_b == 300 and np.array_equal(r.counts, counts) and
          (r.below, r.overflow) == (below, over),
          "s_mu A x B: %s %s %s vs %s %s %s" % (r.counts, r.below, r.overflow, counts, below,
                                                over))
    check(r.edges2[-1] == 0.9 and len(r.edges2) == 7, r.edges2)
    print("Client.rp_pi (periodic, weighted) and Client.s_mu (A x B): numpy's brute force")
    # uniform points in a periodic box: xi_box is 0 within the counts' noise
    n, L = 3000, 20.0
    pts = rng.uniform(0, L, (n, 3))
    w = rng.uniform(1.0, 3.0, n)
    ds = c.upload(np.c_[pts, w])
    nb = 2000
    wb = rng.uniform(1.0, 3.0, nb)
    ds_b = c.upload(np.c_[rng.uniform(0, L, (nb, 3)), wb])
    runs = [
        ("rp_pi", c.rp_pi(ds, rp_log_bins=[1, 8, 3], pi_max=8, pi_bins=4, box=[L],
                          weights=True, progress=False)),
        ("s_mu", c.s_mu(ds, r_max=8, buckets=4, mu_bins=4, box=[L], weights=True,
                        progress=False)),
        ("histogram", c.pair_counts(ds, edges=[1, 3, 5, 8], box=[L], weights=True,
                                    progress=False)),
        ("A x B", c.s_mu(ds, ds_b, r_max=8, buckets=2, mu_bins=3, box=[L], weights=True,
                         progress=False)),
    ]
    for name, r in runs:
        for weights in (None, w):
            xi = est.xi_box(r, weights, None if weights is None or r.n_b is None else wb)
            # in a periodic box the pairs are independent of each other, each in a
            # bin with the probability p of its volume: sigma(xi) < 1 / sqrt(RR);
            # weights fixed, the spread of w_i w_j adds <w^2> / <w>^2 = 13/12 < 1.1
            pairs = n * (n - 1) / 2 if r.n_b is None else n * nb
            rr = est.analytic_rr(r.statistic, r.edges, L ** 3, pairs, r.edges2)
            z = np.abs(xi) * np.sqrt(rr) / (1.0 if weights is None else 1.1)
            check(xi.shape == r.counts.shape and z.max() < 5,
                  "%s%s: xi %s, %s sigma" % (name, " weighted" if weights is not None else "",
                                             xi, z.max()))
    try:
        est.xi_box(c.rp_pi(ds, rp_edges=[1, 2], pi_max=2, pi_bins=2, progress=False))
        raise AssertionError("xi_box of open space was taken")
    except ValueError as e:
        check("periodic" in str(e), e)
    print("xi_box: uniform points give xi = 0 within 5 sigma (rp_pi, s_mu, shells; counts "
          "and weights)")


def test_jackknife_counts(c):
    """Client.upload_sky and a job with jackknife=True: estimators.jackknife_counts
    gives the counts' rows and each region's share of the normalisation, here
    summed over the pairs that touch each region (the rule, pair by pair)."""
    rng = np.random.default_rng(11)
    n, nb, R = 150, 120, 4
    ra, dec = rng.uniform(0, 40, n), rng.uniform(-10, 10, n)
    dist, w, reg = rng.uniform(100, 140, n), rng.uniform(0.5, 2, n), rng.integers(0, R, n)
    rb, db = rng.uniform(0, 40, nb), rng.uniform(-10, 10, nb)
    distb, wb, regb = rng.uniform(100, 140, nb), rng.uniform(0.5, 2, nb), rng.integers(0, R, nb)
    ds = c.upload_sky(ra, dec, dist=dist, w=w, region=reg, temporary=True)
    ds_b = c.upload_sky(rb, db, dist=distb, w=wb, region=regb, temporary=True)
    check(ds.regions == R and ds_b.regions == R, (ds.regions, ds_b.regions))
    for other in (None, ds_b):
        r = c.rp_pi(ds, other, rp_log_bins=[1, 30, 4], pi_max=20, pi_bins=4, los="midpoint",
                    weights=True, jackknife=True, progress=False)
        (total, per), (norm, shares) = est.jackknife_counts(r)
        check(per.shape == (R,) + r.counts.shape and np.allclose(total, r.weighted, 0, 0),
              (per.shape, r.counts.shape))
        if other is None:
            pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
            wj, rj = w, reg
        else:
            pairs = [(i, j) for i in range(n) for j in range(nb)]
            wj, rj = wb, regb
        want = [math.fsum(w[i] * wj[j] for i, j in pairs if reg[i] == k or rj[j] == k)
                for k in range(R)]
        whole = math.fsum(w[i] * wj[j] for i, j in pairs)
        check(abs(norm - whole) <= 1e-12 * whole and
              all(abs(shares[k] - want[k]) <= 1e-12 * want[k] for k in range(R)),
              "norms %r %r, pair by pair %r %r" % (norm, shares, whole, want))
        # unweighted: the pairs themselves
        (_, per_c), (npairs, nshares) = est.jackknife_counts(r, weighted=False)
        check(np.array_equal(per_c, np.asarray(r.jackknife["counts"]).reshape(per_c.shape)) and
              npairs == len(pairs) and
              list(nshares) == [sum(1 for i, j in pairs if reg[i] == k or rj[j] == k)
                                for k in range(R)], (npairs, nshares))
    print("jackknife_counts: the per-region rows, and each region's share of the "
          "normalisation as the pairs give it (self and A x B, weighted and not)")


def test_readme(port):
    run_readme_example(port, "## Correlation functions (histd.estimators)")
    run_readme_example(port, "### Jackknife errors on the sky")
    print("api/python/README.md's estimators and jackknife examples run as pasted")


def main():
    test_pair_norm()
    test_estimators()
    test_multipoles()
    test_analytic_rr()
    test_jackknife()
    with Daemon(exe()) as d:
        with histd.Client("http://127.0.0.1:%d" % d.port) as c:
            test_daemon(c)
            test_jackknife_counts(c)
        test_readme(d.port)
    print("test_estimators: all ok")


if __name__ == "__main__":
    main()
