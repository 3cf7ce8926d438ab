#!/usr/bin/env python3
"""bench_c1.py -- workload C1 of issue 30: DD, DR and RR pair counts of a
clustered mock and its randoms in (r_p, pi) and (s, mu), histd's sdh (on the
GPU when it has one; kernel auto) against Corrfunc's DDrppi and DDsmu on the
same machine's cores, in one run, with the counts compared bin by bin.
Standard library only (the lent GPU machine has python3, maybe no numpy).

    SDH=... CORRFUNC=DIR [N_D=1000000 N_R=5000000 ROUNDS=3 CF_ROUNDS=ROUNDS
        CF_R=N_R/5 THREADS=nproc KERNEL=auto SLOW_S=20 CUCOUNT=EXE DIR=tmp]
        python3 bench/bench_c1.py

The points (bench/corrfunc_compare.py's generators, fixed seeds): N_D
Gaussian clumps (70% of them in N_D/50 clumps of sigma 3 Mpc/h, centres
uniform, the rest uniform) and N_R uniform randoms, in a periodic 1000 Mpc/h
box, every point weighted (w uniform in [0.5, 1.5); weighted counts: histd
--weighted, Corrfunc pair_product). Bins: r_p and s in 25 log bins from 0.1
to 200, pi in [0, 40) by 40 bins (Corrfunc's dpi = 1), mu in 50 bins of
[0, 1]. Timings are medians of ROUNDS runs (Corrfunc: CF_ROUNDS): histd's
is its result's timing_ms.total (the count: binning, transfers, kernel; no
parse), Corrfunc's its own "pair-counting time" (gridding and counting; no
read); each tool's wall time (parse included) is printed beside.

Corrfunc's DR and RR at full scale take minutes on 16 cores, so it counts
D x R' and R' x R' with R' the first CF_R randoms (i.i.d., so a random
subset) and its times are scaled by the ratio of the pairs: N_R / CF_R for
DR, N_R (N_R - 1) / (CF_R (CF_R - 1)) for RR (the table says so); CF_R =
N_R runs it in full. The counts are compared on what both counted: DD in
full, and D x R' and R' x R' by one more histd run each (identical counts,
weighted sums within 1e-10 relative). A run whose wall time passes SLOW_S (20)
seconds is not repeated (the table gives each median's number of runs).

CUCOUNT (bench/cucount_build.sh's cucount_c1) adds cucount on the same GPU
and the full sets: its weighted runs timed (medians of ROUNDS), one
unweighted run for its pair counts, both against histd's; CU_STEPS (default
"DD DR RR") picks the steps it runs.
"""
import os
import random
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corrfunc_compare as cc  # noqa: E402

BOX = 1000.0


def env_int(name, default):
    return int(float(os.environ.get(name, default)))


def main():
    sdh = os.environ.get("SDH", "build/src/cli/sdh")
    cf = os.environ.get("CORRFUNC")
    if not cf or not os.path.exists(os.path.join(cf, "DDrppi")):
        sys.exit("set CORRFUNC to the directory of Corrfunc's DDrppi and DDsmu (bench/corrfunc_build.sh)")
    n_d, n_r = env_int("N_D", 1000000), env_int("N_R", 5000000)
    rounds = env_int("ROUNDS", 3)
    cf_rounds = env_int("CF_ROUNDS", rounds)
    cf_r = min(n_r, env_int("CF_R", max(2, n_r // 5)))
    threads = env_int("THREADS", os.cpu_count())
    cucount = os.environ.get("CUCOUNT")
    cu_steps = os.environ.get("CU_STEPS", "DD DR RR").split()  # cucount's RR of (s, mu) takes minutes
    extra = ["--kernel", os.environ.get("KERNEL", "auto")] + os.environ.get("SDH_ARGS", "").split()
    work = os.environ.get("DIR") or tempfile.mkdtemp(prefix="c1")
    d, r, rs = (os.path.join(work, n) for n in ("D.csv", "R.csv", "Rsub.csv"))

    t_start = time.time()
    print("writing the mock and the randoms to %s" % work, flush=True)
    rng = random.Random(1)
    pts = cc.clump_points(n_d, BOX, rng)
    cc.write_points(d, pts, [0.5 + rng.random() for _ in pts])
    pts = cc.uniform_points(n_r, BOX, rng)
    cc.write_points(r, pts, [0.5 + rng.random() for _ in pts], prefixes=[(rs, cf_r)] if cf_r < n_r else [])
    del pts
    if cf_r == n_r:
        rs = r
    print("C1: %d clustered (Gaussian clumps) + %d random points, periodic %g box, weighted; "
          "histd %s (%s), Corrfunc %s on %d threads over %d randoms; medians of %d (Corrfunc %d) rounds"
          % (n_d, n_r, BOX, sdh, " ".join(extra), cf, threads, cf_r, rounds, cf_rounds), flush=True)
    print("(written in %.0f s)" % (time.time() - t_start), flush=True)

    def case(stat, a, b):
        bins = ("log", 0.1, 200.0, 25)
        return cc.Case(stat, stat, a, b, bins, BOX, True, pi_max=40, mu_bins=50)

    def repeat(fn, n):
        """fn() -> (..., seconds, wall): n runs, or fewer once a run's wall
        time passes SLOW_S (the table gives the number); their medians."""
        out = []
        while len(out) < n and (not out or out[-1][-1] <= slow):
            out.append(fn())
        return out[-1], statistics.median(o[-2] for o in out), statistics.median(o[-1] for o in out), len(out)

    slow = float(os.environ.get("SLOW_S", 20))
    rows, cu_rows, bad, device = [], [], 0, ""
    for stat in os.environ.get("STATS", "rp_pi s_mu").split():  # STATS: which of the two
        for name, full, sub, scale in (
                ("DD", (d, None), (d, None), 1.0),
                ("DR", (d, r), (d, rs), n_r / cf_r),
                ("RR", (r, None), (rs, None), n_r * (n_r - 1) / (cf_r * (cf_r - 1)))):
            def histd(a=full):
                res, wall = cc.run_sdh(sdh, case(stat, *a), extra)
                return res, res["timing_ms"]["total"] / 1e3, wall
            (res_full, _, _), hc, hw, hn = repeat(histd, rounds)
            device = device or "%s (%s)" % (res_full.get("device", "?"), res_full.get("kernel", "?"))
            res = res_full if sub == full else histd(sub)[0]
            (counts, sums, _, _), cp, cw, cn = repeat(
                lambda: cc.run_corrfunc(cf, case(stat, *sub), res["edges"], threads, work), cf_rounds)
            nbins, diffs, worst = cc.compare(res, counts, sums)
            bad += bool(diffs) or worst is None or worst > 1e-10
            rows.append((stat, name, hc, hw, hn, cp, cw, cn, scale, cp * scale / hc, nbins,
                         "identical" if not diffs else "%d bins differ" % len(diffs), worst))
            print("  %s %s: histd %.3f s (wall %.2f s), Corrfunc %.3f s x %.4g (wall %.2f s), %s, w %.1e"
                  % (stat, name, hc, hw, cp, scale, cw, rows[-1][11], worst or 0), flush=True)
            for i, j, h, c in diffs[:6]:
                print("    bin (%d, %d): histd %d, Corrfunc %d" % (i, j, h, c))
            if cucount and name in cu_steps:
                try:
                    (sums, _, _), us, uw, un = repeat(
                        lambda: cc.run_cucount(cucount, case(stat, *full), res_full["edges"], True, work), rounds)
                    counts, _, _ = cc.run_cucount(cucount, case(stat, *full), res_full["edges"], False, work)
                    nb, diffs, worst = cc.compare(res_full, counts, sums)
                    verdict = "identical" if not diffs else "%d bins differ (%+d pairs)" % (
                        len(diffs), sum(c - h for _, _, h, c in diffs))
                except RuntimeError as err:  # said once; no more cucount runs
                    us = uw = float("nan")
                    un, nb, worst, verdict = 0, 0, None, str(err)
                    cucount = None
                cu_rows.append((stat, name, hc, us, uw, un, hc and us / hc, nb, verdict, worst))
                print("  %s %s: cucount %.3f s (wall %.2f s), %s" % (stat, name, us, uw, verdict), flush=True)

    print("\nhistd on %s; Corrfunc 2.5.3 (double, OpenMP) on %d threads" % (device, threads))
    print("Corrfunc's DR and RR counted %d of the %d randoms, its time scaled by the pairs (x)" % (cf_r, n_r))
    print("| stat | pairs | histd count s (runs) | histd wall s | Corrfunc s (measured x scale, runs) "
          "| Corrfunc wall s | Corrfunc / histd | counts | w rel |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for stat, name, hc, hw, hn, cp, cw, cn, scale, ratio, nbins, verdict, worst in rows:
        print("| %s | %s | %.3f (%d) | %.2f | %.2f (%.3f x %.4g, %d) | %.2f | %.1fx | %s (%d bins) | %.1e |"
              % (stat, name, hc, hn, hw, cp * scale, cp, scale, cn, cw, ratio, verdict, nbins, worst))
    th = sum(r[2] for r in rows)
    tc = sum(r[5] * r[8] for r in rows)
    print("| all | DD+DR+RR | %.3f | %.2f | %.2f | %.2f | %.1fx | %s | |" % (
        th, sum(r[3] for r in rows), tc, sum(r[6] for r in rows), tc / th,
        "all identical" if not bad else "%d differ" % bad))
    if cu_rows:
        print("\ncucount (%s) on the same GPU, the full sets; counts against histd's" % os.environ["CUCOUNT"])
        print("| stat | pairs | histd count s | cucount s (runs) | cucount wall s | cucount / histd | counts | w rel |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for stat, name, hc, us, uw, un, ratio, nb, verdict, worst in cu_rows:
            print("| %s | %s | %.3f | %.3f (%d) | %.2f | %.2fx | %s (%d bins) | %s |" % (
                stat, name, hc, us, un, uw, ratio, verdict, nb, "-" if worst is None else "%.1e" % worst))
    print("\nbench_c1: %.0f s in all" % (time.time() - t_start))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
