"""test_cluster_s3.py -- the cluster with its datasets in S3: two nodes, a
throwaway PostgreSQL and s3rver (a local S3-compatible server).

argv: histd TESTS_CLUSTER_DIR

A dataset uploaded to one node reaches the other only through S3 (the
nodes share no directory): the other node's shards fetch its blocks into
their cache (a ranged GET a block, each block checked by its SHA-256 from
the object's manifest). The job's counts must be those of a plain node
(no coordinator) on the same points; a dataset deleted on one node is gone
from the other and from the bucket.
"""
import os
import random
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "service"))
sys.path.insert(0, HERE)
from daemon import Daemon, check  # noqa: E402
from pg import Postgres  # noqa: E402
from s3server import S3rver  # noqa: E402

EXE = sys.argv[1]
BUCKET = "histd"


def wait_end(node, job, timeout=120):
    s, _, doc = node.json("GET", "/v1/jobs/%s?wait=%d" % (job, timeout), timeout=timeout + 30)
    check(s == 200 and doc["status"] not in ("queued", "running"), "job ended: %s" % doc)
    return doc


def main():
    s3 = S3rver(sys.argv[2], BUCKET)
    root = tempfile.mkdtemp(prefix="histd-cluster-s3-")
    pg = Postgres(root)
    nodes = []
    try:
        env = dict(s3.env())

        def node(name):
            os.makedirs(os.path.join(root, name))
            d = Daemon(EXE, data_dir=os.path.join(root, name), env=env,
                       args=["--coordinator", pg.url, "--shared-store",
                             "s3://%s/cluster" % BUCKET, "--lease", "5s", "--node-name", name,
                             "--shard-pairs", "10000000"])
            nodes.append(d.start())
            return d

        n1, n2 = node("n1"), node("n2")
        rng = random.Random(5)
        pts = [(rng.uniform(0, 500), rng.uniform(0, 500), rng.uniform(0, 500))
               for _ in range(12000)]
        ds = n1.upload(pts, fmt="f64")
        params = {"bucket_width": 20, "buckets": 50, "kernel": "cpu", "threads": 1}
        job = n2.submit(ds["id"], **params)["id"]
        doc = wait_end(n1, job)
        check(doc["status"] == "succeeded", "the job over S3: %s" % doc)
        used = pg.sql("SELECT string_agg(DISTINCT node, ',') FROM histd_shards "
                      "WHERE job_id = '%s'" % job)
        s, _, got = n2.json("GET", "/v1/jobs/%s/result" % job)
        check(s == 200, "result: %s" % got)
        with Daemon(EXE) as plain:
            plain.upload(pts, fmt="f64")
            j = plain.submit(ds["id"], bucket_width=20, buckets=50)
            check(plain.wait_job(j["id"])["status"] == "succeeded", "plain node")
            _, _, want = plain.json("GET", "/v1/jobs/%s/result" % j["id"])
        check(got["counts"] == want["counts"] and got["overflow"] == want["overflow"],
              "the cluster over S3 counts what a plain node counts")
        cache = os.path.join(root, "n2", "data", "shared-cache", ds["id"] + ".blocks")
        if "n2" in (used or ""):
            check(os.path.exists(cache), "n2 ran shards from S3's blocks (%s)" % cache)
        print("shards on %s; identical to a plain node" % used)

        # deleted on n1: gone on n2 and from the bucket
        def stored():
            return [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(s3.work, "s3rver"))
                    for f in fs if ds["id"] + ".f64" in f]
        check(stored(), "the bucket holds the payload (s3rver's files)")
        s, _, _ = n1.json("DELETE", "/v1/datasets/" + ds["id"])
        check(s == 204, "delete on n1: %s" % s)
        s, _, _ = n2.json("GET", "/v1/datasets/" + ds["id"])
        check(s == 404, "n2 no longer has it: %s" % s)
        s, _, doc = n2.json("POST", "/v1/jobs", dict(params, dataset=ds["id"]))
        check(s == 404, "a job on it is refused on n2: %s %s" % (s, doc))
        check(not stored(), "the bucket no longer holds the payload: %s" % stored())
    finally:
        for n in nodes:
            n.kill()
        pg.stop()
        s3.stop()
        shutil.rmtree(root, ignore_errors=True)
    print("test_cluster_s3: all checks passed")


if __name__ == "__main__":
    main()
