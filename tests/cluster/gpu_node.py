"""gpu_node.py -- a cluster node with a GPU runs every kernel's shards on a
worker that can run them: GPU kernels and "auto" on its GPU workers, the
CPU kernels on its CPU worker (before schema version 2, a job naming
"cpu" on a GPU node failed: its GPU worker claimed the shards).

usage: python3 tests/cluster/gpu_node.py HISTD   (on a machine with a GPU;
the cluster bundle runs it: SCRIPT=tests/cluster/gpu_node.py bash run.sh)

One node, a throwaway PostgreSQL; 20,000 uniform points, width 500 in the
23,000 cube, shards of about 2e7 pairs. Each job must succeed with counts
identical to cpu-reference's (the contract, literally, on the CPU), and
its shards must have run where its kernel runs (the job's device line).
"""
import os
import random
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "service"))
sys.path.insert(0, HERE)
from daemon import Daemon, check  # noqa: E402
from pg import Postgres  # noqa: E402


def main():
    exe = sys.argv[1]
    root = tempfile.mkdtemp(prefix="histd-gpu-node-")
    pg = Postgres(root)
    shared = os.path.join(root, "shared")
    os.makedirs(shared)
    node = None
    try:
        os.makedirs(os.path.join(root, "n1"))
        node = Daemon(exe, data_dir=os.path.join(root, "n1"),
                      args=["--coordinator", pg.url, "--shared-store", shared,
                            "--node-name", "n1", "--shard-pairs", "20000000"]).start()
        s, _, devs = node.json("GET", "/v1/devices")
        check(s == 200 and devs["devices"], "the node sees a GPU: %s" % devs)
        rng = random.Random(7)
        pts = [(rng.uniform(0, 23000), rng.uniform(0, 23000), rng.uniform(0, 23000))
               for _ in range(20000)]
        ds = node.upload(pts, fmt="csv", name="cloud")
        results = {}
        for kernel, where in (("cpu-reference", "cpu"), ("cpu", "cpu"),
                              ("tiled-privatized", "GPU"), ("auto", "GPU")):
            job = node.submit(ds["id"], bucket_width=500.0, kernel=kernel)["id"]
            doc = node.wait_job(job, 300)
            check(doc["status"] == "succeeded", "%s on a GPU node: %s" % (kernel, doc))
            s, _, res = node.json("GET", "/v1/jobs/%s/result" % job)
            check(s == 200, "%s's result: %s" % (kernel, res))
            results[kernel] = (res.get("counts"), res.get("overflow"))
            device = doc.get("device", "")
            shards = pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s'" % job)
            engine = pg.sql("SELECT engine FROM histd_jobs WHERE id = '%s'" % job)
            check(where in device, "%s ran on \"%s\", not on the %s" % (kernel, device, where))
            print("%-17s engine %-4s %s shards, succeeded on: %s" % (kernel, engine, shards,
                                                                     device))
        ref = results["cpu-reference"]
        for kernel, got in results.items():
            check(got == ref, "%s's counts differ from cpu-reference's" % kernel)
        print("gpu_node: all kernels identical to cpu-reference")
    finally:
        if node is not None:
            node.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
