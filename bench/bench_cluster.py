"""bench_cluster.py -- what coordination costs, and what a second node buys:
one job on a plain node, on a one-node cluster, and on a cluster of
several nodes, all on this machine.

usage: python3 bench/bench_cluster.py HISTD [--n N] [--runs R] [--gpus G]
                                            [--shard-pairs P] [--width W]

Starts a throwaway PostgreSQL (tests/cluster/pg.py; $HISTD_PG_BIN names its
programs where they are not Debian's) and histd nodes on loopback sharing a
directory. The job is the full histogram of N uniform points in a 23,000
cube (width W, default 500: W2 at N = 2,000,000), kernel auto.

CPU (--gpus 0): the plain node and the one-node cluster use every core,
the three-node cluster a third of them each (the same cores in all).
GPU (--gpus G): the plain node runs the job on one GPU (a daemon's job runs
on one GPU worker); the one-node cluster has all G GPUs (a worker each);
the G-node cluster one GPU per node (CUDA_VISIBLE_DEVICES).

Reports medians of R runs: the job's time (timing_ms.total: from its
first shard's claim to its result), pairs/s, the speed-up over the plain
node, and the coordination per shard and as a share of the job: the
one-node cluster's time outside its kernels (claims, mapping, commits,
the merge), over its shards and over its job time.
"""
import argparse
import array
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "service"))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "cluster"))
from daemon import Daemon  # noqa: E402
from pg import Postgres  # noqa: E402


def run_job(node, ds, width, threads, runs):
    rows = []
    for _ in range(runs):
        job = {"dataset": ds, "bucket_width": width}
        if threads:
            job["threads"] = threads
        s, _, doc = node.json("POST", "/v1/jobs", job)
        assert s == 202, doc
        while True:
            _, _, doc = node.json("GET", "/v1/jobs/" + doc["id"])
            if doc["status"] not in ("queued", "running"):
                break
            time.sleep(0.01)
        assert doc["status"] == "succeeded", doc
        rows.append((doc["timing_ms"]["total"], doc["timing_ms"]["kernel"]))
    return (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows),
            doc)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("histd")
    ap.add_argument("--n", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--width", type=float, default=500)
    ap.add_argument("--shard-pairs", default="500000000")
    a = ap.parse_args()
    cores = os.cpu_count()
    rng = random.Random(1)
    body = array.array("d", (rng.uniform(0, 23000) for _ in range(3 * a.n))).tobytes()
    root = tempfile.mkdtemp(prefix="histd-bench-cluster-")
    pg = Postgres(root)
    shared = os.path.join(root, "shared")
    os.makedirs(shared)
    nodes = []
    try:
        def start(name, cluster=True, gpu=None):
            os.makedirs(os.path.join(root, name))
            args = ["--coordinator", pg.url, "--shared-store", shared, "--node-name", name,
                    "--shard-pairs", a.shard_pairs] if cluster else []
            env = {"CUDA_VISIBLE_DEVICES": str(gpu)} if gpu is not None else {}
            d = Daemon(a.histd, data_dir=os.path.join(root, name), args=args, env=env).start()
            nodes.append(d)
            return d

        def upload(node):
            s, _, doc = node.json("POST", "/v1/datasets", body,
                                  {"Content-Type": "application/x-float64"})
            assert s in (200, 201), doc
            return doc["id"]

        threads_all = 0 if a.gpus else cores
        plain = start("plain", cluster=False, gpu=0 if a.gpus else None)
        ds = upload(plain)
        t_plain, _, doc_plain = run_job(plain, ds, a.width, threads_all, a.runs)
        plain.kill()
        n1 = start("n1")
        upload(n1)
        t_one, k_one, doc_one = run_job(n1, ds, a.width, threads_all, a.runs)
        shards = int(pg.sql("SELECT max(shards) FROM histd_jobs"))
        where = [line for line in n1.log().splitlines() if "histd: shard" in line][-shards:]
        n1.kill()
        many = max(a.gpus, 3) if a.gpus == 0 else a.gpus
        cl = [start("m%d" % i, gpu=i if a.gpus else None) for i in range(many)]
        t_many, _, doc_many = run_job(cl[0], ds, a.width,
                                      0 if a.gpus else max(1, cores // many), a.runs)
        used = pg.sql("SELECT count(DISTINCT node) FROM histd_shards WHERE job_id = '%s'"
                      % doc_many["id"])
        pairs = a.n * (a.n - 1) // 2
        what = "%d GPUs" % a.gpus if a.gpus else "%d cores" % cores
        print("bench_cluster: N = %d (%.3g pairs), width %g, %s, %d shards, medians of %d"
              % (a.n, pairs, a.width, what, shards, a.runs))
        print("device: %s" % doc_plain.get("device", "?"))
        print("| setup | job time | pairs/s | speed-up |")
        print("|---|---|---|---|")
        rows = (("plain node (one job on %s)" % ("one GPU" if a.gpus else "every core"), t_plain),
                ("cluster of 1 node (%s)" % what, t_one),
                ("cluster of %d nodes (%s each; shards on %s nodes)"
                 % (many, "one GPU" if a.gpus else "%d threads" % max(1, cores // many), used),
                 t_many))
        for name, t in rows:
            print("| %s | %.1f ms | %.3g | %.2fx |" % (name, t, pairs / (t / 1000), t_plain / t))
        print("the one-node cluster's last job, shard by shard (the node's log):")
        for line in where:
            print("  " + line.split(": ", 1)[1])
        outside = t_one - k_one if not a.gpus else t_one - k_one / max(1, a.gpus)
        print("coordination (1-node cluster: job time outside the kernels%s): %.1f ms per "
              "shard, %.1f%% of the job" % (" over its GPUs" if a.gpus else "",
                                            outside / shards, 100 * outside / t_one))
    finally:
        for d in nodes:
            d.kill()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
