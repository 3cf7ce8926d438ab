"""bench_cluster.py -- what coordination costs: one job on a plain node, on a
one-node cluster, and on a three-node cluster, all on this machine.

usage: /usr/bin/python3 bench/bench_cluster.py BUILD_DIR [--n N] [--runs R]

Starts a throwaway PostgreSQL (as tests/cluster does) and histd nodes on
loopback with the CPU engine ("cpu"). The job is the full histogram of N
uniform points (width 500 in a 23,000 cube). The plain node runs it with
every core; the one-node cluster with every core, cut into shards of
--shard-pairs; the three-node cluster gives each node a third of the
cores (the same cores in all). Reports medians of R runs of each: the
job's time (timing_ms.total), and the overhead of coordination per shard
(the one-node cluster's job time outside its kernels, over the shards:
claiming, binding the dataset, committing).
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "service"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
from daemon import Daemon  # noqa: E402
from test_cluster import Postgres  # noqa: E402


def run_job(node, ds, threads, runs):
    times = []
    for _ in range(runs):
        s, _, doc = node.json("POST", "/v1/jobs", {"dataset": ds, "bucket_width": 500,
                                                   "kernel": "cpu", "threads": threads})
        assert s == 202, doc
        while True:
            _, _, doc = node.json("GET", "/v1/jobs/" + doc["id"])
            if doc["status"] not in ("queued", "running"):
                break
            time.sleep(0.02)
        assert doc["status"] == "succeeded", doc
        times.append((doc["timing_ms"]["total"], doc["timing_ms"]["kernel"]))
    t = statistics.median(x[0] for x in times)
    return t, statistics.median(x[0] - x[1] for x in times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shard-pairs", default="500000000")
    a = ap.parse_args()
    exe = os.path.join(a.build, "src", "service", "histd")
    cores = os.cpu_count()
    pts = np.random.default_rng(1).uniform(0, 23000, size=(a.n, 3))
    body = "x,y,z\n" + "".join("%r,%r,%r\n" % tuple(p) for p in pts)
    root = tempfile.mkdtemp(prefix="histd-bench-cluster-")
    pg = Postgres(root)
    shared = os.path.join(root, "shared")
    os.makedirs(shared)
    nodes = []
    try:
        def start(name, cluster=True):
            os.makedirs(os.path.join(root, name))
            args = ["--coordinator", pg.url, "--shared-store", shared, "--node-name", name,
                    "--shard-pairs", a.shard_pairs] if cluster else []
            d = Daemon(exe, data_dir=os.path.join(root, name), args=args).start()
            nodes.append(d)
            return d

        plain = start("plain", cluster=False)
        s, _, ds = plain.json("POST", "/v1/datasets", body, {"Content-Type": "text/csv"})
        t_plain, _ = run_job(plain, ds["id"], cores, a.runs)
        plain.kill()
        n1 = start("n1")
        n1.json("POST", "/v1/datasets", body, {"Content-Type": "text/csv"})
        t_one, outside_kernel = run_job(n1, ds["id"], cores, a.runs)
        shards = int(pg.sql("SELECT max(shards) FROM histd_jobs"))
        start("n2")
        start("n3")
        t_three, _ = run_job(n1, ds["id"], max(1, cores // 3), a.runs)
        pairs = a.n * (a.n - 1) // 2
        print("bench_cluster: N = %d (%.3g pairs), %d cores, %d shards, medians of %d"
              % (a.n, pairs, cores, shards, a.runs))
        print("| setup | job time | pairs/s | vs plain |")
        print("|---|---|---|---|")
        for name, t in (("plain node, %d threads" % cores, t_plain),
                        ("cluster of 1 node, %d threads" % cores, t_one),
                        ("cluster of 3 nodes, %d threads each" % max(1, cores // 3), t_three)):
            print("| %s | %.0f ms | %.3g | %.2fx |" % (name, t, pairs / (t / 1000), t / t_plain))
        print("coordination per shard (1-node cluster: job time outside the kernels, over "
              "%d shards; claim, dataset, bind, commit): %.1f ms" % (shards, outside_kernel / shards))
    finally:
        for d in nodes:
            d.kill()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
