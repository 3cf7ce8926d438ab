"""jackknife_gpu.py -- jackknife counts on the GPU: exact, and what they cost.

usage: python3 bench/jackknife_gpu.py SDH [N_BIG]

1. Exactness: weighted sky catalogues with region columns (D: 3000 points,
   8 regions; R: 4000), DD(r_p, pi) and DR(s, mu) about the midpoint and
   DD(theta), each with --jackknife through `sdh` (kernel auto: the GPU
   where one is visible), held to the NumPy brute force of the stated rules
   in tests/service/test_jackknife.py (counts and each region's counts
   identical, weighted sums within 1e-12).
2. Cost: DD(r_p, pi) of N_BIG points (default 200000) in 16 regions, with
   and without --jackknife, median of 3 runs each: the ratio is what the
   region pairs' pieces cost over one run.
"""
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "service"))
import numpy as np  # noqa: E402
import test_jackknife as tj  # noqa: E402


def write(path, cat):
    ra, dec, dist, w, reg = cat
    with open(path, "w") as f:
        f.write("ra,dec,dist,w,region\n")
        for i in range(len(ra)):
            f.write("%r,%r,%r,%r,%d\n" % (float(ra[i]), float(dec[i]), float(dist[i]), float(w[i]), int(reg[i])))


def sdh(exe, *args):
    t0 = time.perf_counter()
    out = subprocess.run([exe, *args, "-i", "sky-csv", "-f", "json"], capture_output=True,
                         text=True)
    dt = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit("sdh %s: %s" % (" ".join(args), out.stderr))
    return json.loads(out.stdout), dt


def check(r, expect, name):
    counts, sums, rc, rw, rt = expect
    ok = np.array_equal(np.asarray(r["counts"]).reshape(-1), counts)
    ok &= np.array_equal(np.asarray(r["jackknife"]["counts"]), rc)
    ok &= np.array_equal(np.asarray(r["jackknife"]["total"]), rt)
    rel = max(np.max(np.abs(np.asarray(r["weighted"]).reshape(-1) - sums) /
                     np.maximum(np.abs(sums), 1e-300)),
              np.max(np.abs(np.asarray(r["jackknife"]["weighted"]) - rw) /
                     np.maximum(np.abs(rw), 1e-300)))
    ok &= rel <= 1e-12
    print("%-26s %-6s kernel %-12s device %s, weighted within %.1e" % (
        name, "exact" if ok else "WRONG", r["kernel"], r["device"][:40], rel))
    return ok


def main():
    exe = sys.argv[1]
    big = int(sys.argv[2]) if len(sys.argv) > 2 else 200000
    rng = np.random.default_rng(7)
    D, R = tj.catalogue(rng, 3000, 8), tj.catalogue(rng, 4000, 8)
    edges = [math.exp(math.log(1) + k * (math.log(60) - math.log(1)) / 8) for k in range(8)]
    edges.append(60.0)
    e = ",".join(repr(x) for x in edges)
    good = True
    with tempfile.TemporaryDirectory() as tmp:
        fd, fr = os.path.join(tmp, "d.csv"), os.path.join(tmp, "r.csv")
        write(fd, D)
        write(fr, R)
        r, _ = sdh(exe, fd, "--statistic", "rp_pi", "--rp-edges", e, "--pi-max", "40",
                   "--pi-bins", "8", "--los", "midpoint", "--weighted", "--jackknife")
        good &= check(r, tj.want("rp_pi", D, None, edges, 8, 40.0), "DD(r_p, pi) midpoint")
        r, _ = sdh(exe, fd, "--with", fr, "--statistic", "s_mu", "--edges", e, "--mu-bins", "5",
                   "--los", "midpoint", "--weighted", "--jackknife")
        good &= check(r, tj.want("s_mu", D, R, edges, 5, 1.0), "DR(s, mu) midpoint")
        deg = [0.5, 1, 2, 4, 8, 16]
        r, _ = sdh(exe, fd, "--statistic", "theta", "--theta-edges", ",".join(map(str, deg)),
                   "--weighted", "--jackknife")
        good &= check(r, tj.want("theta", D, None, deg), "DD(theta)")

        # the cost: one catalogue of `big` points in 16 regions (RA slices)
        ra = rng.uniform(0, 90, big)
        cat = (ra, rng.uniform(-30, 30, big), rng.uniform(300, 900, big),
               rng.uniform(0.5, 2.0, big), np.minimum((ra / 90 * 16).astype(int), 15))
        fb = os.path.join(tmp, "big.csv")
        write(fb, cat)
        args = [fb, "--statistic", "rp_pi", "--rp-log-bins", "0.5,60,12", "--pi-max", "40",
                "--pi-bins", "20", "--los", "midpoint", "--weighted"]
        rows = []
        for label, extra in (("plain", []), ("jackknife", ["--jackknife"])):
            times, last = [], None
            for _ in range(3):
                last, dt = sdh(exe, *args, *extra)
                times.append(dt)
            rows.append((label, statistics.median(times), last))
        plain, jk = rows[0][2], rows[1][2]
        wp, wj = np.asarray(plain["weighted"]), np.asarray(jk["weighted"])
        same = plain["counts"] == jk["counts"] and bool(
            np.all(np.abs(wj - wp) <= 1e-12 * np.maximum(np.abs(wp), 1e-300)))
    print("== cost: DD(r_p, pi), %d points, 16 regions, weighted, median of 3 (sdh wall time, "
          "parse included)" % big)
    for label, t, r in rows:
        print("%-10s %8.2f s  kernel %-10s %s" % (label, t, r["kernel"], r["device"][:40]))
    print("jackknife / plain: %.2fx; the same counts (weighted within 1e-12): %s" % (rows[1][1] / rows[0][1], same))
    print("exactness: %s" % ("all exact" if good and same else "FAILED"))
    sys.exit(0 if good and same else 1)


if __name__ == "__main__":
    main()
