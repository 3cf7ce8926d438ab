#!/usr/bin/env python3
"""dm_resolvable.py -- how much of D1 any exact cell-pair method can skip.

The density-map SDH (dm-tree) counts a pair of cells at once when every
distance between them falls in one bin. For D1 (points uniform in the
23,000 cube, bins of 2,000) this samples random point pairs, takes the
aligned cubes of side h holding each end, and asks whether that cube pair
resolves (its least and largest distance floor to the same bin); it prints
the share of pairs resolvable at each h and how many points such a cube
holds at N = 2,000,000 (D1-CPU) and 20,000,000 (D1). A cell pair must hold
many pairs to pay for its own test, so the share resolvable by cells of
tens of points bounds what skipping pairs can gain: the rest are met one
by one.

    python3 bench/dm_resolvable.py [--pairs N] [--seed S]
"""
import argparse

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=400000)
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    side, width = 23000.0, 2000.0
    p = rng.uniform(0, side, (args.pairs, 3))
    q = rng.uniform(0, side, (args.pairs, 3))
    print("cube side h   share resolvable   points a cube: N=2e6   N=2e7   ceiling 1/(1-share)")
    for div in (1, 2, 4, 8, 16, 32):
        h = width / div
        a, b = np.floor(p / h) * h, np.floor(q / h) * h
        lo = np.maximum(0, np.maximum(a - (b + h), b - (a + h)))
        hi = np.maximum(a + h - b, b + h - a)
        dmin, dmax = np.sqrt((lo**2).sum(1)), np.sqrt((hi**2).sum(1))
        share = float(np.mean(np.floor(dmin / width) == np.floor(np.nextafter(dmax, 0) / width)))
        per = [(h / (side / n ** (1 / 3))) ** 3 for n in (2e6, 2e7)]
        ceiling = 1 / (1 - share) if share < 1 else float("inf")
        print(f"w/{div:<2d} = {h:7.1f}   {share:16.3f}   {per[0]:19.2f}   {per[1]:7.2f}   {ceiling:8.1f}x")


if __name__ == "__main__":
    main()
