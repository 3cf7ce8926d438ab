"""Correlation-function estimators from histd's pair counts: the pair
normalisations, the natural and Landy-Szalay estimators, w_p(r_p) from
(r_p, pi) counts, the Legendre multipoles from (s, mu) counts, the
analytic RR of a periodic box (no randoms) and jackknife covariances.

Every function here but pair_norm needs numpy (the rest of the client
does not); each raises ImportError with a sentence where numpy is not
installed.

    import histd
    from histd import estimators as est
    dd = c.rp_pi(data, rp_log_bins=[0.1, 200, 25], pi_max=40, pi_bins=40)
    dr = c.rp_pi(data, randoms, rp_log_bins=[0.1, 200, 25], pi_max=40, pi_bins=40)
    rr = c.rp_pi(randoms, rp_log_bins=[0.1, 200, 25], pi_max=40, pi_bins=40)
    xi = est.landy_szalay(dd.counts / est.pair_norm(dd.n), dr.counts / est.pair_norm(dr.n, dr.n_b),
                          rr.counts / est.pair_norm(rr.n))
    w = est.wp(xi, dd.edges2)
"""
import math
from typing import Any, Callable, Optional, Sequence, Tuple

from ._points import _np

STATISTICS = ("histogram", "rp_pi", "s_mu")


def _numpy() -> Any:
    if _np is None:
        raise ImportError("histd.estimators needs numpy (Debian: python3-numpy; "
                          "pip: numpy); the rest of the client runs without it")
    return _np


def _float_array(x: Any, what: str) -> Any:
    np = _numpy()
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0:
        raise ValueError("%s must be an array, got the number %r" % (what, x))
    return a


def _edges(e: Any, what: str, lo: float = -math.inf) -> Any:
    np = _numpy()
    e = _float_array(e, what)
    if e.ndim != 1 or len(e) < 2:
        raise ValueError("%s must be a list of at least 2 edges, got shape %s" % (what, e.shape))
    if not (np.all(np.isfinite(e)) and np.all(np.diff(e) > 0) and e[0] >= lo):
        raise ValueError("%s must be finite, increasing%s: %s" % (
            what, "" if lo == -math.inf else ", from %g" % lo, e.tolist()))
    return e


# ---- normalisations ----

def pair_norm(a: Any, b: Any = None) -> float:
    """The number of pairs that the counts of a job are drawn from, the
    normalisation of DD, DR and RR (counts / pair_norm are the pair
    fractions the estimators take):

    - a set against itself (``b`` None), pairs i < j, self pairs excluded:
      ``a`` a count N gives N (N - 1) / 2; ``a`` the points' weights gives
      sum_{i<j} w_i w_j = ((sum w)^2 - sum w^2) / 2;
    - A x B: N_a N_b, or (sum w_a) (sum w_b) with weights.

    A count is a whole number (``result.n``, ``result.n_b``), weights a
    sequence of numbers, one a point. The sums are math.fsum's (correctly
    rounded), so the weighted normalisation is within a few units of
    2^-53 (sum w)^2 / 2 of the exact one. Needs no numpy."""
    def total(x: Any, what: str) -> Tuple[float, float]:
        # (sum, sum of squares): a count N is N unit weights
        if isinstance(x, bool):
            raise ValueError("%s must be a count or weights, got %r" % (what, x))
        if isinstance(x, int) or (hasattr(x, "ndim") and x.ndim == 0 and
                                  x.dtype.kind in "iu"):
            n = int(x)
            if n < 0:
                raise ValueError("%s must be a count from 0, got %d" % (what, n))
            return float(n), float(n)
        try:
            w = [float(v) for v in x] if _np is None else \
                _np.ascontiguousarray(x, dtype=_np.float64)
        except (TypeError, ValueError):
            w = None
        if w is None or (_np is not None and w.ndim != 1):
            raise ValueError("%s must be a count (a whole number) or weights (a sequence of "
                             "numbers, one a point), got %r" % (what, x))
        if _np is None:
            finite, squares = all(math.isfinite(v) for v in w), [v * v for v in w]
        else:  # fsum through memoryviews: 10x faster than a list on millions
            finite, squares = bool(_np.isfinite(w).all()), memoryview(w * w)
            w = memoryview(w)
        if not finite:
            raise ValueError("%s: every weight must be finite" % what)
        return math.fsum(w), math.fsum(squares)
    sa, qa = total(a, "a")
    if b is None:
        return (sa * sa - qa) / 2
    sb, _ = total(b, "b")
    return sa * sb


# ---- estimators ----

def natural(dd: Any, rr: Any) -> Any:
    """The natural estimator xi = DD / RR - 1 (Peebles and Hauser), bin by
    bin, from normalised counts (counts / pair_norm(...)) of any shape:
    1-D bins, (r_p, pi) or (s, mu). A bin where RR is 0 gives nan. Needs
    numpy."""
    np = _numpy()
    dd, rr = _float_array(dd, "dd"), _float_array(rr, "rr")
    if dd.shape != rr.shape:
        raise ValueError("dd and rr must have one shape, got %s and %s" % (dd.shape, rr.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rr != 0, dd / np.where(rr != 0, rr, 1) - 1, np.nan)


def landy_szalay(dd: Any, dr: Any, rr: Any) -> Any:
    """The Landy-Szalay estimator xi = (DD - 2 DR + RR) / RR, bin by bin,
    from normalised counts (counts / pair_norm(...): DD and RR over their
    own pairs, DR over N_D N_R) of any shape. A bin where RR is 0 gives
    nan. Needs numpy."""
    np = _numpy()
    dd, dr, rr = _float_array(dd, "dd"), _float_array(dr, "dr"), _float_array(rr, "rr")
    if not dd.shape == dr.shape == rr.shape:
        raise ValueError("dd, dr and rr must have one shape, got %s, %s and %s" % (
            dd.shape, dr.shape, rr.shape))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(rr != 0, (dd - 2 * dr + rr) / np.where(rr != 0, rr, 1), np.nan)


def wp(xi: Any, pi_edges: Any) -> Any:
    """The projected correlation function w_p(r_p) = 2 sum_j xi(r_p, pi_j)
    dpi_j over the pi bins (the last axis of ``xi``, one column a bin of
    ``pi_edges``: a result's ``edges2``, from 0 to pi_max), dpi_j the bin's
    width: the integral of xi over pi in (-pi_max, pi_max), xi constant in
    each bin. Needs numpy."""
    np = _numpy()
    xi = _float_array(xi, "xi")
    e = _edges(pi_edges, "pi_edges", 0.0)
    if xi.shape[-1] != len(e) - 1:
        raise ValueError("xi's last axis has %d pi bins, pi_edges %d" % (xi.shape[-1],
                                                                         len(e) - 1))
    return 2 * (xi * np.diff(e)).sum(axis=-1)


def _legendre(ell: int, x: Any) -> Any:
    """P_ell(x) by Bonnet's recursion."""
    np = _numpy()
    p0, p1 = np.ones_like(x), x
    if ell == 0:
        return p0
    for k in range(1, ell):
        p0, p1 = p1, ((2 * k + 1) * x * p1 - k * p0) / (k + 1)
    return p1


def legendre_weights(mu_edges: Any, ell: int) -> Any:
    """(2 ell + 1) times the exact integral of P_ell over each mu bin:
    (2 ell + 1) int P_ell = P_{ell+1} - P_{ell-1} between the bin's edges
    (for ell = 0: the bin's width). Needs numpy."""
    np = _numpy()
    e = _edges(mu_edges, "mu_edges", 0.0)
    if ell == 0:
        return np.diff(e)
    F = _legendre(ell + 1, e) - _legendre(ell - 1, e)
    return np.diff(F)


def multipoles(xi: Any, mu_edges: Any, ells: Sequence[int] = (0, 2, 4)) -> Any:
    """The Legendre multipoles of xi(s, mu), one row an ell:

        xi_ell(s) = (2 ell + 1) sum_k xi(s, mu_k) int_{mu_k}^{mu_k+1} P_ell(mu) dmu

    with mu = |pi| / s over [0, 1] (xi is even in mu, so the integral over
    [-1, 1] with the factor (2 ell + 1) / 2 is this one over [0, 1]) and
    xi constant in each mu bin: the quadrature is the exact integral of
    the Legendre polynomial over each bin (legendre_weights), so a xi that
    is constant in each bin gets its exact multipoles. The mu bins are the
    last axis of ``xi``, ``mu_edges`` a result's ``edges2``; with mu_max
    below 1 the integral stops at mu_max. ``ells`` are even (the odd
    multipoles of |mu| vanish). Needs numpy."""
    np = _numpy()
    xi = _float_array(xi, "xi")
    e = _edges(mu_edges, "mu_edges", 0.0)
    if e[-1] > 1:
        raise ValueError("mu_edges must end at 1 or before (mu = |pi| / s), got %r" % e[-1])
    if xi.shape[-1] != len(e) - 1:
        raise ValueError("xi's last axis has %d mu bins, mu_edges %d" % (xi.shape[-1],
                                                                         len(e) - 1))
    out = []
    for ell in ells:
        if isinstance(ell, bool) or not isinstance(ell, (int, np.integer)) or ell < 0 \
                or ell % 2:
            raise ValueError("ells must be even whole numbers from 0, got %r" % (ell,))
        out.append((xi * legendre_weights(e, int(ell))).sum(axis=-1))
    return np.array(out)


# ---- a periodic box: RR without randoms ----

def analytic_rr(statistic: str, edges: Any, volume: float, pairs: float,
                edges2: Any = None) -> Any:
    """The expected pair counts of points uniform in a periodic box of
    ``volume`` (the RR of infinitely many randoms, scaled to ``pairs``,
    pair_norm(...) of the data: N (N - 1) / 2, N_a N_b, or the weighted
    sums), each bin's volume over the box's:

    - "histogram" (1-D, ``edges`` in distance): pairs 4/3 pi (r_{k+1}^3 - r_k^3) / V;
    - "rp_pi": pairs pi (r_{k+1}^2 - r_k^2) 2 dpi_j / V (pi = |dz|: both signs of dz);
    - "s_mu":  pairs 4/3 pi (s_{k+1}^3 - s_k^3) dmu_j / V (|mu| over [0, 1]: both hemispheres).

    ``edges2`` are the pi or mu edges (a result's ``edges2``). Exact while
    every bin lies within the minimum image (r_p and s within half the
    box's widths across the line of sight, pi within half along it), as
    the daemon requires of a periodic job's bins. Needs numpy."""
    np = _numpy()
    if statistic not in STATISTICS:
        raise ValueError("statistic must be one of %s, got %r" % (", ".join(STATISTICS),
                                                                 statistic))
    if not (isinstance(volume, (int, float)) or hasattr(volume, "dtype")) or \
            not 0 < float(volume) < math.inf:
        raise ValueError("volume must be a positive number (a periodic box's), got %r"
                         % (volume,))
    e = _edges(edges, "edges", 0.0)
    if statistic == "histogram":
        if edges2 is not None:
            raise ValueError("a histogram has one axis: no edges2")
        return pairs * 4.0 / 3.0 * math.pi * np.diff(e ** 3) / float(volume)
    if edges2 is None:
        raise ValueError("%s needs edges2 (its %s edges)" % (
            statistic, "pi" if statistic == "rp_pi" else "mu"))
    e2 = _edges(edges2, "edges2", 0.0)
    if statistic == "rp_pi":
        area = math.pi * np.diff(e ** 2)
        return pairs * np.outer(area, 2 * np.diff(e2)) / float(volume)
    if e2[-1] > 1:
        raise ValueError("mu edges must end at 1 or before, got %r" % e2[-1])
    shell = 4.0 / 3.0 * math.pi * np.diff(e ** 3)
    return pairs * np.outer(shell, np.diff(e2)) / float(volume)


def xi_box(result: Any, weights: Any = None, weights_b: Any = None) -> Any:
    """xi = DD / RR - 1 of a one-frame result in a periodic box, RR the
    analytic_rr of its statistic, bins and ``volume``: the counts with
    pair_norm(result.n[, result.n_b]); with ``weights`` (the points'
    weights, and ``weights_b`` those of B in A x B), the weighted sums with
    the weighted normalisation. Needs numpy."""
    _numpy()
    if not result.volume:
        raise ValueError("xi_box needs a periodic box: the result has no volume (give the "
                         "job box=)")
    if (result.frames or 1) != 1:
        raise ValueError("xi_box takes one frame's result (this one sums %d frames, each "
                         "its own pairs and box)" % result.frames)
    cross = result.n_b is not None
    if weights is None:
        if weights_b is not None:
            raise ValueError("weights_b goes with weights")
        dd = result.counts
        pairs = pair_norm(result.n, result.n_b if cross else None)
    else:
        if result.weighted is None:
            raise ValueError("the result has no weighted sums: submit the job with weights")
        if cross and weights_b is None:
            raise ValueError("an A x B result needs weights_b (B's weights) beside weights")
        for w, n, name in ((weights, result.n, "weights"),
                           (weights_b, result.n_b, "weights_b")):
            if w is not None and len(w) != n:
                raise ValueError("%s has %d values for the result's %d points" % (
                    name, len(w), n))
        dd = result.weighted
        pairs = pair_norm(weights, weights_b if cross else None)
    rr = analytic_rr(result.statistic or "histogram", result.edges, result.volume, pairs,
                     result.edges2)
    return natural(dd, rr)


# ---- jackknife ----

def region_pair_norms(regions: Any, weights: Any = None, regions_b: Any = None,
                      weights_b: Any = None, n_regions: Optional[int] = None) -> Any:
    """Each jackknife region's share of pair_norm by the rule of per-region
    counts (a pair of points in regions a and b adds to region a and, if
    b != a, to region b), so that pair_norm less region k's share is the
    normalisation without region k's points. ``regions``: each point's
    region (0 to n_regions - 1); ``weights`` one a point (None: 1 each);
    ``regions_b`` and ``weights_b`` for B in A x B. With W_k the sum of the
    weights in region k (Q_k of their squares) and W the total:

    - a set against itself: W_k W - (W_k^2 + Q_k) / 2;
    - A x B: Wa_k Wb + Wa Wb_k - Wa_k Wb_k.

    Needs numpy."""
    np = _numpy()

    def sums(reg: Any, w: Any, what: str) -> Tuple[Any, Any]:
        reg = np.asarray(reg)
        if reg.ndim != 1 or (len(reg) and reg.dtype.kind not in "iu"):
            raise ValueError("%s must be whole numbers, one a point" % what)
        if len(reg) and reg.min() < 0:
            raise ValueError("%s must be from 0, got %d" % (what, reg.min()))
        w = np.ones(len(reg)) if w is None else _float_array(w, "weights")
        if w.shape != reg.shape:
            raise ValueError("%s has %d points, its weights %d" % (what, len(reg), len(w)))
        size = n_regions if n_regions is not None else (int(reg.max()) + 1 if len(reg) else 0)
        if len(reg) and reg.max() >= size:
            raise ValueError("%s names region %d of %d" % (what, reg.max(), size))
        return np.bincount(reg, w, size), np.bincount(reg, w * w, size)

    wa, qa = sums(regions, weights, "regions")
    if regions_b is None:
        W = math.fsum(wa)
        return wa * W - (wa * wa + qa) / 2
    wb, _ = sums(regions_b, weights_b, "regions_b")
    if len(wb) != len(wa):
        n = max(len(wa), len(wb))
        wa, wb = np.pad(wa, (0, n - len(wa))), np.pad(wb, (0, n - len(wb)))
    Wa, Wb = math.fsum(wa), math.fsum(wb)
    return wa * Wb + Wa * wb - wa * wb


def jackknife_counts(result: Any, weighted: Optional[bool] = None
                     ) -> Tuple[Tuple[Any, Any], Tuple[float, Any]]:
    """The two (total, per_region) pairs of a job run with jackknife=True,
    for jackknife(): its counts (weighted=True: its weighted sums; None:
    those when the job had weights), each region's row shaped as the
    counts; and its normalisation, pair_norm and each region's share of it
    by region_pair_norms' rule, from the result's per-region points (and
    weights' sums of w and w^2: jackknife.n_a, w_a, ww_a and for A x B n_b,
    w_b, ww_b). Needs numpy."""
    np = _numpy()
    jk = getattr(result, "jackknife", None)
    if not isinstance(jk, dict) or "counts" not in jk:
        raise ValueError("the result has no jackknife counts: run the job with jackknife=True "
                         "on catalogues with regions")
    use_w = ("weighted" in jk) if weighted is None else bool(weighted)
    if use_w and "weighted" not in jk:
        raise ValueError("the job had no weights: its jackknife rows are counts only")
    total = np.asarray(result.weighted if use_w else result.counts, dtype=np.float64)
    per = np.asarray(jk["weighted" if use_w else "counts"], dtype=np.float64)
    per = per.reshape((per.shape[0],) + total.shape)

    def side(s: str) -> Tuple[Any, Any]:
        n = np.asarray(jk["n_" + s], dtype=np.float64)
        if not use_w:  # each point's weight 1: w = w^2 = 1
            return n, n
        return (np.asarray(jk["w_" + s], dtype=np.float64),
                np.asarray(jk["ww_" + s], dtype=np.float64))

    wa, qa = side("a")
    if "n_b" not in jk:  # a set against itself: sum_{i<j} w_i w_j = (W^2 - Q) / 2
        W, Q = math.fsum(wa), math.fsum(qa)
        return (total, per), ((W * W - Q) / 2, wa * W - (wa * wa + qa) / 2)
    wb, _ = side("b")
    Wa, Wb = math.fsum(wa), math.fsum(wb)
    return (total, per), (Wa * Wb, wa * Wb + Wa * wb - wa * wb)


def jackknife(estimator: Callable[..., Any], *counts: Tuple[Any, Any]) -> Tuple[Any, Any]:
    """Jackknife estimates and their covariance, for any estimator.

    Each of ``counts`` is a pair (total, per_region): the total (bins...,
    or one number, each pair once) and the per-region array (regions x
    bins..., or one number a region such as region_pair_norms) built by
    the rule that a pair of points in regions a and b adds to region a's
    counts and, if b != a, to region b's, so that the counts without region
    k's points are total - per_region[k]. ``estimator`` takes those
    leave-one-out values, one of each pair in the order given, and returns
    the statistic (any shape). Returns (estimates, covariance):
    estimates[k] the statistic without region k (regions x its shape), the
    covariance over the statistic flattened:

        C = (R - 1) / R sum_k (x_k - mean)(x_k - mean)^T

    R the regions, mean the estimates' mean. Needs numpy."""
    np = _numpy()
    if not counts:
        raise ValueError("jackknife needs the (total, per_region) counts the estimator takes")
    pairs = []
    for c in counts:
        if not (isinstance(c, (tuple, list)) and len(c) == 2):
            raise ValueError("each of jackknife's counts must be a pair (total, per_region)")
        total = np.asarray(c[0], dtype=np.float64)
        per = _float_array(c[1], "per_region")
        if per.shape[1:] != total.shape:
            raise ValueError("per_region must be regions x the total's shape %s, got %s" % (
                total.shape, per.shape))
        pairs.append((total, per))
    R = len(pairs[0][1])
    if any(len(per) != R for _, per in pairs):
        raise ValueError("every per_region array must have one row a region: got %s" % (
            [len(per) for _, per in pairs]))
    if R < 2:
        raise ValueError("a jackknife needs at least 2 regions, got %d" % R)
    est = np.array([np.asarray(estimator(*[t - per[k] for t, per in pairs]), dtype=np.float64)
                    for k in range(R)])
    x = est.reshape(R, -1)
    dev = x - x.mean(axis=0)
    cov = (R - 1) / R * (dev.T @ dev)
    return est, cov
