#!/usr/bin/env python3
"""corrfunc_compare.py -- histd's (r_p, pi) and (s, mu) pair counts against
Corrfunc's DDrppi and DDsmu, the outside oracle of issue 30 (bench only,
never CI: Corrfunc is fetched and built outside this repository by
bench/corrfunc_build.sh, never vendored).

    CORRFUNC=/dir/with/DDrppi+DDsmu SDH=build-dev/src/cli/sdh \\
        python3 bench/corrfunc_compare.py [--n-d 20000] [--n-r 50000]

Shared inputs (this file's generators, standard library only, fixed seeds):
uniform points, Gaussian clumps (70% of the points in N/50 clumps of
sigma 3, the rest uniform), uniform randoms, all with weights uniform in
[0.5, 1.5), in a 200-unit box; and an integer lattice (14^3 points,
spacing 1) whose pairs sit exactly on integer r_p, pi and s edges and on
mu edges (3-4-5 triangles). Each case runs histd's sdh and Corrfunc on the
same files, in a periodic box and in open space, self (DD) and cross (DR),
with and without weights (Corrfunc's weight_type pair_product), and the
counts are compared bin by bin: they must be identical, and the weighted
sums within 1e-10 relative.

How Corrfunc's bins map onto histd's (Corrfunc 2.5.3, read from its source):
- r_p (and s) edges: histd's own edges (from its JSON, 17 digits) written
  as Corrfunc's binfile (one "low high" line a bin); Corrfunc bins by the
  square, E[k-1]^2 <= r2 < E[k]^2 with E[k]^2 rounded, histd by
  E[k-1] <= sqrt(r2) < E[k]: the same except for r2 within an ulp of a
  squared edge.
- pi: Corrfunc has no pi_bins: npibins = (int) pimax, dpi = pimax/npibins
  (1 for an integer pi_max), bin (int)(|dz| * (1/dpi)), pairs with
  |dz| >= pimax left out; histd's pi_bins must equal pi_max here.
- mu: Corrfunc's mu_max and nmu_bins; mu = sqrt(dz^2 / s^2), bin
  (int)(mu * (1/dmu)), pairs with dz^2 >= s^2 mu_max^2 left out (so
  mu = mu_max is never counted); histd: mu = pi / sqrt(s.s), bin
  floor(mu / fl(mu_max / n)), mu = mu_max in the last bin.
- Self counts: Corrfunc counts a file against itself (the same path twice,
  its autocorr) once per unordered pair and doubles every bin at the end
  (and adds the N self pairs only when the first edge is 0, never here):
  halved here, and checked to be even.
- Periodic: Corrfunc's boxsize L (its periodic flag on every axis; it
  shifts a neighbour cell's points by +-L); open space: boxsize -1.
  histd: --periodic L (d - L nearbyint(d / L) per axis).
- Weights: Corrfunc prints weightavg (sum / npairs; printed with 17 digits
  by corrfunc_build.sh's one change): the sum is weightavg * npairs.
When counts differ, the pairs are found by a brute force of both rules
(numpy, small sets only) and printed with their value and the nearest edge.
"""
import json
import os
import random
import re
import subprocess
import sys
import time


# ---- shared inputs -----------------------------------------------------

def uniform_points(n, box, rng):
    return [(box * rng.random(), box * rng.random(), box * rng.random()) for _ in range(n)]


def wrap(v, box):
    v = v % box
    return 0.0 if v >= box else v


def clump_points(n, box, rng, sigma=3.0, clumped=0.7, per_clump=50):
    """Gaussian clumps: clumped * n points in n / per_clump clumps (centres
    uniform, each coordinate centre + N(0, sigma), wrapped into [0, box)),
    the rest uniform."""
    centres = uniform_points(max(1, n // per_clump), box, rng)
    pts = []
    for i in range(n):
        if i < clumped * n:
            c = centres[rng.randrange(len(centres))]
            pts.append(tuple(wrap(c[a] + rng.gauss(0.0, sigma), box) for a in range(3)))
        else:
            pts.append((box * rng.random(), box * rng.random(), box * rng.random()))
    return pts


def lattice_points(m):
    return [(float(i), float(j), float(k)) for i in range(m) for j in range(m) for k in range(m)]


def write_points(path, pts, weights, prefixes=()):
    """path: CSV x,y,z,w (histd; Corrfunc's 'c' format reads its first three
    columns and skips the header line); path.w: the weights one a line
    (Corrfunc's weights file). prefixes: (path2, n2) pairs, the first n2
    points written again to path2 (and path2.w): a random subset of i.i.d.
    points."""
    outs = [(path, len(pts))] + list(prefixes)
    files = [(open(p, "w"), open(p + ".w", "w"), n) for p, n in outs]
    for f, fw, _ in files:
        f.write("x,y,z,w\n")
    for i, (p, w) in enumerate(zip(pts, weights)):
        line = "%r,%r,%r,%r\n" % (p[0], p[1], p[2], w)
        wl = "%r\n" % w
        for f, fw, n in files:
            if i < n:
                f.write(line)
                fw.write(wl)
    for f, fw, _ in files:
        f.close()
        fw.close()


# ---- the two programs --------------------------------------------------

class Case:
    """One comparison: stat 'rp_pi' or 's_mu'; d and r CSV paths (r None: d
    against itself); bins: ('log', a, b, k) or ('edges', [..]); pi_max (rp_pi;
    pi_bins = pi_max), mu_bins and mu_max (s_mu); box (None: open)."""

    def __init__(self, name, stat, d, r, bins, box, weighted, pi_max=40, mu_bins=50, mu_max=1.0):
        self.name, self.stat, self.d, self.r, self.bins = name, stat, d, r, bins
        self.box, self.weighted = box, weighted
        self.pi_max, self.mu_bins, self.mu_max = pi_max, mu_bins, mu_max


def sdh_args(case):
    a = [case.d] + (["--with", case.r] if case.r else [])
    edges_flag, log_flag = ("--rp-edges", "--rp-log-bins") if case.stat == "rp_pi" else ("--edges", "--log-bins")
    if case.bins[0] == "log":
        a += [log_flag, "%r,%r,%d" % tuple(case.bins[1:])]
    else:
        a += [edges_flag, ",".join(repr(e) for e in case.bins[1])]
    a += ["--statistic", case.stat]
    if case.stat == "rp_pi":
        a += ["--pi-max", repr(float(case.pi_max)), "--pi-bins", str(int(case.pi_max))]
    else:
        a += ["--mu-bins", str(case.mu_bins), "--mu-max", repr(case.mu_max)]
    if case.box:
        a += ["--periodic", repr(float(case.box))]
    if case.weighted:
        a += ["--weighted"]
    return a + ["--format", "json"]


def tool_env():
    """The environment of sdh and Corrfunc: TOOL_LIBS (a packed library
    folder, bench/bench_c1.sh) ahead of LD_LIBRARY_PATH, for them alone."""
    env = dict(os.environ)
    if env.get("TOOL_LIBS"):
        env["LD_LIBRARY_PATH"] = env["TOOL_LIBS"] + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def run_sdh(sdh, case, extra=()):
    """histd: (result JSON, wall seconds)."""
    t0 = time.perf_counter()
    p = subprocess.run([sdh] + sdh_args(case) + list(extra), capture_output=True, text=True, env=tool_env())
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("sdh failed (%d): %s" % (p.returncode, p.stderr.strip()))
    return json.loads(p.stdout), wall


def run_corrfunc(bindir, case, edges, threads, workdir):
    """Corrfunc: (counts[i][j], sums[i][j] or None, pair seconds, wall
    seconds), its self counts halved."""
    binfile = os.path.join(workdir, "bins.txt")
    with open(binfile, "w") as f:
        for lo, hi in zip(edges[:-1], edges[1:]):
            f.write("%r %r\n" % (lo, hi))
    r = case.r or case.d  # the same path: Corrfunc's autocorr
    box = repr(float(case.box)) if case.box else "-1"
    if case.stat == "rp_pi":
        cmd = [os.path.join(bindir, "DDrppi"), case.d, "c", r, "c", binfile, repr(float(case.pi_max)), box, str(threads)]
        nb2 = int(case.pi_max)
    else:
        cmd = [os.path.join(bindir, "DDsmu"), case.d, "c", r, "c", binfile, repr(case.mu_max), str(case.mu_bins), box, str(threads)]
        nb2 = case.mu_bins
    if case.weighted:
        cmd += ["pair_product", case.d + ".w", "a"] + ([r + ".w", "a"] if case.r else [])
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=tool_env())
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (cmd[0], p.returncode, p.stderr.strip()[-2000:]))
    m = re.search(r"pair-counting time =\s*([0-9.eE+-]+)", p.stderr)
    pair_s = float(m.group(1)) if m else float("nan")
    rows = [l.split() for l in p.stdout.splitlines() if l.strip()]
    nb1 = len(edges) - 1
    if len(rows) != nb1 * nb2:
        raise RuntimeError("%s printed %d rows, expected %d x %d" % (cmd[0], len(rows), nb1, nb2))
    counts = [[0] * nb2 for _ in range(nb1)]
    sums = [[0.0] * nb2 for _ in range(nb1)] if case.weighted else None
    half = case.r is None
    for k, row in enumerate(rows):
        i, j = divmod(k, nb2)
        n = int(row[-2])
        wsum = float(row[-1]) * n
        if half:
            if n % 2:
                raise RuntimeError("%s: an odd self count %d in bin (%d, %d)" % (cmd[0], n, i, j))
            n //= 2
            wsum /= 2
        counts[i][j] = n
        if sums is not None:
            sums[i][j] = wsum
    return counts, sums, pair_s, wall


def run_cucount(exe, case, edges, weighted, workdir):
    """cucount (bench/cucount_c1.cu's front end, on the GPU): (the N1 x N2
    sums: pair counts, or weight sums when weighted; device seconds, wall
    seconds). Its signed pi and mu are folded, its ordered self pairs
    halved, by the front end."""
    edgefile = os.path.join(workdir, "edges.txt")
    with open(edgefile, "w") as f:
        f.write("".join("%r\n" % e for e in edges))
    top, n2 = (float(case.pi_max), int(case.pi_max)) if case.stat == "rp_pi" else (case.mu_max, case.mu_bins)
    cmd = [exe, case.stat, case.d, case.r or "-", edgefile, repr(top), str(n2),
           repr(float(case.box or 0)), "1" if weighted else "0"]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=tool_env())
    wall = time.perf_counter() - t0
    logs = [l for l in (p.stdout + p.stderr).splitlines() if l.strip() and not l.startswith("bin ")]
    if p.returncode != 0:
        raise RuntimeError("cucount_c1 failed (%d): %s" % (p.returncode, " / ".join(logs)[-300:]))
    vals = [float(l.split()[1]) for l in p.stdout.splitlines() if l.startswith("bin ")]
    if len(vals) != (len(edges) - 1) * n2:
        raise RuntimeError("cucount_c1 printed %d values, expected %d" % (len(vals), (len(edges) - 1) * n2))
    m = re.search(r"cucount seconds: ([0-9.eE+-]+)", p.stderr)
    grid = [vals[i * n2:(i + 1) * n2] for i in range(len(edges) - 1)]
    if not weighted:
        grid = [[int(round(v)) for v in row] for row in grid]
    return grid, float(m.group(1)) if m else float("nan"), wall


def compare(res, cf_counts, cf_sums):
    """(bins, differing bins [(i, j, histd, corrfunc)], max relative weight
    difference or None)."""
    diffs, worst, nbins = [], None, 0
    for i, row in enumerate(res["counts"]):
        for j, c in enumerate(row):
            nbins += 1
            if c != cf_counts[i][j]:
                diffs.append((i, j, c, cf_counts[i][j]))
    if cf_sums is not None:
        worst = 0.0
        for i, row in enumerate(res["weighted"]):
            for j, s in enumerate(row):
                t = cf_sums[i][j]
                scale = max(abs(s), abs(t))
                if scale > 0:
                    worst = max(worst, abs(s - t) / scale)
    return nbins, diffs, worst


# ---- explaining differences: both rules pair by pair (numpy) ----------

def explain(case, res, pts_d, pts_r):
    """Bins each pair by the contract (histd) and by Corrfunc's arithmetic,
    both in binary64 with numpy (the minimum image by histd's rule for
    both: Corrfunc's +-L shift of a cell can differ from it in the last
    bit); returns the per-bin differences the rules predict and the
    differing pairs grouped by (the quantity that decides, its value,
    histd's bin, Corrfunc's bin) with their numbers."""
    import numpy as np
    edges = np.array(res["edges"], dtype=np.float64)
    n1 = len(edges) - 1
    d = np.array(pts_d, dtype=np.float64)
    r = d if pts_r is None else np.array(pts_r, dtype=np.float64)
    box = float(case.box) if case.box else None
    n2 = int(case.pi_max) if case.stat == "rp_pi" else case.mu_bins
    top = float(case.pi_max) if case.stat == "rp_pi" else float(case.mu_max)
    width = top / n2                                    # histd: fl(max / n)
    inv = 1.0 / (top / n2)                              # Corrfunc: 1 / dmu, 1 / dpi
    esq = edges * edges
    pred = np.zeros((n1, n2), dtype=np.int64)
    groups = {}
    for i in range(len(d)):
        js = np.arange(i + 1, len(r)) if pts_r is None else np.arange(len(r))
        if len(js) == 0:
            continue
        dd = d[i] - r[js]
        if box:
            dd = dd - box * np.rint(dd / box)
        sxy = dd[:, 0] * dd[:, 0] + dd[:, 1] * dd[:, 1]
        pi = np.abs(dd[:, 2])
        if case.stat == "rp_pi":
            q1, q1sq, v = np.sqrt(sxy), sxy, pi
            ok_h = ok_c = v < top
            b2h = np.minimum(np.floor(v / width), n2 - 1)
            b2c = np.floor(v * inv)
        else:
            ss = sxy + dd[:, 2] * dd[:, 2]
            q1, q1sq = np.sqrt(ss), ss
            with np.errstate(invalid="ignore", divide="ignore"):
                v = np.where(ss > 0, pi / np.sqrt(ss), 0.0)
                vc = np.nan_to_num(np.sqrt(dd[:, 2] * dd[:, 2] / ss))
            ok_h = v <= top
            ok_c = (dd[:, 2] * dd[:, 2]) < ss * (top * top)
            b2h = np.minimum(np.floor(v / width), n2 - 1)
            b2c = np.floor(vc * inv)
        b1h = np.searchsorted(edges, q1, side="right") - 1   # E[k] <= q < E[k+1]
        b1c = np.searchsorted(esq, q1sq, side="right") - 1   # E[k]^2 <= r2 < E[k+1]^2
        inh = ok_h & (b1h >= 0) & (b1h < n1)
        inc = ok_c & (b1c >= 0) & (b1c < n1) & (b2c < n2)  # Corrfunc's bin n2: not printed
        np.add.at(pred, (b1h[inh], b2h[inh].astype(np.int64)), 1)
        np.add.at(pred, (b1c[inc], b2c[inc].astype(np.int64)), -1)
        differ = (inh != inc) | (inh & inc & ((b1h != b1c) | (b2h != b2c)))
        for k in np.nonzero(differ)[0]:
            axis1 = (b1h[k] != b1c[k]) or not ok_h[k] and not ok_c[k]
            what = ("r_p" if case.stat == "rp_pi" else "s", float(q1[k])) if axis1 else \
                ("pi" if case.stat == "rp_pi" else "mu", float(v[k]))
            key = what + ("%d,%d" % (b1h[k], b2h[k]) if inh[k] else "out",
                          "%d,%d" % (b1c[k], b2c[k]) if inc[k] else "out")
            groups[key] = groups.get(key, 0) + 1
    return pred, groups


# ---- the suite ---------------------------------------------------------

def table_row(case, nbins, diffs, worst, explained=""):
    w = "-" if worst is None else "%.1e" % worst
    verdict = "identical" if not diffs else "%d bins differ%s" % (len(diffs), explained)
    return "%-34s %6d  %-9s %s" % (case.name, nbins, w, verdict)


def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n-d", type=int, default=20000)
    ap.add_argument("--n-r", type=int, default=50000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    sdh = os.environ.get("SDH", "build-dev/src/cli/sdh")
    cf = os.environ.get("CORRFUNC")
    if not cf or not os.path.exists(os.path.join(cf, "DDrppi")):
        sys.exit("set CORRFUNC to the directory of Corrfunc's DDrppi and DDsmu (bench/corrfunc_build.sh)")
    work = args.dir or __import__("tempfile").mkdtemp(prefix="cfcmp")
    rng = random.Random(30)
    box = 200.0
    sets = {
        "U": uniform_points(args.n_d, box, rng),
        "C": clump_points(args.n_d, box, rng),
        "R": uniform_points(args.n_r, box, rng),
        "L": lattice_points(14),
    }
    paths = {}
    for k, pts in sets.items():
        paths[k] = os.path.join(work, k + ".csv")
        write_points(paths[k], pts, [0.5 + rng.random() for _ in pts])
    cases = []
    for geo, L in (("periodic", box), ("open", None)):
        for stat in ("rp_pi", "s_mu"):
            bins = ("log", 0.1, 50.0, 25)
            for name, d, r, wt in (("UxU", "U", None, False), ("CxC w", "C", None, True),
                                   ("CxR w", "C", "R", True), ("CxR", "C", "R", False)):
                cases.append((Case("%s %s %s" % (stat, geo, name), stat, paths[d],
                                   r and paths[r], bins, L, wt), d, r))
            # the lattice: integer edges, pi_max 6, mu in 5 bins (edges k/5)
            lat = ("edges", [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])  # Corrfunc: r_max < L/2
            cases.append((Case("%s %s lattice" % (stat, geo), stat, paths["L"], None, lat,
                               14.0 if L else None, False, pi_max=6, mu_bins=5), "L", None))
    print("Corrfunc %s against histd %s, %d threads, N_D %d, N_R %d, box %g (lattice 14^3)" % (
        cf, sdh, args.threads, args.n_d, args.n_r, box))
    print("%-34s %6s  %-9s %s" % ("case", "bins", "w rel", "counts"))
    bad = 0
    for case, dk, rk in cases:
        res, _ = run_sdh(sdh, case)
        counts, sums, _, _ = run_corrfunc(cf, case, res["edges"], args.threads, work)
        nbins, diffs, worst = compare(res, counts, sums)
        note = ""
        if diffs:
            if len(sets[dk]) * len(sets[rk] if rk else sets[dk]) <= 2e7:
                pred, groups = explain(case, res, sets[dk], sets[rk] if rk else None)
                seen = {(i, j): h - c for i, j, h, c in diffs}
                same = all(pred[i][j] == seen.get((i, j), 0)
                           for i in range(len(pred)) for j in range(len(pred[0])))
                note = ": %s" % ("all of them the pairs below (both rules, pair by pair)" if same
                                 else "NOT explained by the two rules")
                bad += not same
                shown = ["%6d pairs with %s = %.17g: histd bin %s, Corrfunc %s" % ((n,) + key)
                         for key, n in sorted(groups.items(), key=lambda t: -t[1])[:8]]
            else:
                bad += 1
                shown = ["bin (%d, %d): histd %d, Corrfunc %d" % t for t in diffs[:6]]
        if worst is not None and worst > 1e-10:
            bad += 1
        print(table_row(case, nbins, diffs, worst, note), flush=True)
        for s in (shown if diffs else []):
            print("    " + s)
    print("unexplained differences: %d" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
