"""bench_family_multi.py -- the family's statistics on 1, 2 and 4 GPUs of one host.

usage: python3 bench/bench_family_multi.py SDH [N] [ROUNDS]

N weighted points (default 2,000,000) uniform in a periodic cube of 1000
(C1's box), and three jobs of C1's shapes through `sdh` (kernel auto):
  rp_pi  r_p in 25 log bins from 0.1 to 200, pi_max 40 in 40 bins
  s_mu   s in 25 log bins from 0.1 to 200, 50 mu bins
  hist   the pair distance in 200 bins to 200
each on --devices 0, then 0,1 and 0,1,2,3 where the host has them; the
median (of ROUNDS, default 3) of the result's kernel time and of sdh's
wall time, the ratio to one GPU, and whether the counts are the one-GPU
run's (weighted sums within 1e-12). The last lines are the table.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def run(sdh, path, devices, args):
    t0 = time.perf_counter()
    pick = ["--devices", devices] if devices != "cpu" else []
    out = subprocess.run([sdh, path, "-i", "csv", "--periodic", "1000", "--weighted", "-f", "json",
                          *pick, *args], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit("sdh --devices %s %s: %s" % (devices, " ".join(args), out.stderr))
    return json.loads(out.stdout), wall


def main():
    sdh = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000000
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    try:
        gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.count(
            "GPU ")
    except FileNotFoundError:
        gpus = 0  # no GPU: the CPU engine, once (to try the script)
    rng = np.random.default_rng(3)
    pts = np.empty((n, 4))
    pts[:, :3] = rng.uniform(0, 1000, (n, 3))
    pts[:, 3] = rng.uniform(0.5, 2.0, n)
    jobs = {
        "rp_pi": ["--statistic", "rp_pi", "--rp-log-bins", "0.1,200,25", "--pi-max", "40",
                  "--pi-bins", "40"],
        "s_mu": ["--statistic", "s_mu", "--log-bins", "0.1,200,25", "--mu-bins", "50"],
        "hist": ["--r-max", "200", "--buckets", "200"],
    }
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "points.csv")
        np.savetxt(path, pts, fmt="%.17g", delimiter=",", header="x,y,z,w", comments="")
        for name, args in jobs.items():
            base = None
            for devices in ("0", "0,1", "0,1,2,3") if gpus else ("cpu",):
                if gpus and len(devices.split(",")) > gpus:
                    continue
                kernel, wall, last = [], [], None
                for _ in range(rounds):
                    last, w = run(sdh, path, devices, args)
                    kernel.append(last["timing_ms"]["kernel"])
                    wall.append(w)
                k, w = statistics.median(kernel), statistics.median(wall)
                same = ""
                if base is None:
                    base = (last, k, w)
                else:
                    wp, wq = np.asarray(base[0]["weighted"]), np.asarray(last["weighted"])
                    ok = base[0]["counts"] == last["counts"] and bool(
                        np.all(np.abs(wq - wp) <= 1e-12 * np.maximum(np.abs(wp), 1e-300)))
                    same = "identical" if ok else "DIFFERENT"
                rows.append((name, devices, last["kernel"], k, w, base[1] / k, base[2] / w, same,
                             last["device"][:60]))
    print("== %d weighted points, periodic 1000 box, medians of %d; ratio = one GPU / this"
          % (n, rounds))
    print("| job | devices | kernel | kernel ms | wall s | x (kernel) | x (wall) | counts | device |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | --- | --- |")
    for r in rows:
        print("| %s | %s | %s | %.1f | %.2f | %.2f | %.2f | %s | %s |" % r)


if __name__ == "__main__":
    main()
