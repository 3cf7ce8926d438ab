"""test_cluster.py -- three histd nodes, one throwaway PostgreSQL, a shared
directory: the cluster computes what one node and the definition compute,
through node deaths, stalls, cancels from elsewhere and a database restart.

argv: histd faults.so

The PostgreSQL is initdb'd into a temp dir and listens only on a Unix
socket there (run as the postgres user when the test runs as root, which
initdb requires). The nodes run the CPU engine (kernel cpu-reference, one
thread, so a shard takes a moment a test can act in), a 2 s lease, and
shards of about 2e7 pairs. The definition is the contract in numpy, each
operation on its own (numpy does not fuse), row block by row block.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "service"))
from daemon import Daemon, check, long_poll  # noqa: E402
from pg import Postgres  # noqa: E402

EXE, FAULTS = sys.argv[1], sys.argv[2]
# the coordinator's tables as histd made them at schema version 1
V1_SCHEMA = [
    "CREATE TABLE histd_schema (version integer NOT NULL)",
    "INSERT INTO histd_schema VALUES (1)",
    "CREATE TABLE histd_datasets (id text PRIMARY KEY, meta text NOT NULL,"
    " created_at double precision NOT NULL)",
    "CREATE TABLE histd_jobs (id text PRIMARY KEY, seq bigserial, dataset text NOT NULL,"
    " dataset_b text NOT NULL, n bigint NOT NULL, n_b bigint NOT NULL, params text NOT NULL,"
    " want bigint NOT NULL, status text NOT NULL, created_at double precision NOT NULL,"
    " started_at double precision NOT NULL DEFAULT 0,"
    " finished_at double precision NOT NULL DEFAULT 0, error text NOT NULL DEFAULT '',"
    " device text NOT NULL DEFAULT '', shards bigint NOT NULL,"
    " shards_done bigint NOT NULL DEFAULT 0, kernel_ms double precision NOT NULL DEFAULT 0,"
    " transfer_ms double precision NOT NULL DEFAULT 0, result bytea)",
    "CREATE TABLE histd_shards (job_id text NOT NULL REFERENCES histd_jobs(id) ON DELETE"
    " CASCADE, idx bigint NOT NULL, seq bigint NOT NULL, status text NOT NULL,"
    " token bigint NOT NULL DEFAULT 0, node text NOT NULL DEFAULT '', lease_until timestamptz,"
    " attempts integer NOT NULL DEFAULT 0, error text NOT NULL DEFAULT '', partial bytea,"
    " PRIMARY KEY (job_id, idx))",
]
WIDTH, BUCKETS = 40.0, 60
N = 20000
LEASE = 2.0


def definition(p, width, buckets, box=None):
    """The contract's counts and overflow; box: the periodic cube's side
    (the minimum image per axis, dx - L rint(dx / L))."""
    counts = np.zeros(buckets + 1, dtype=np.int64)
    for i0 in range(0, len(p) - 1, 256):
        a = p[i0:i0 + 256]
        for k in range(len(a)):
            i = i0 + k
            b = p[i + 1:]
            dx = a[k, 0] - b[:, 0]
            dy = a[k, 1] - b[:, 1]
            dz = a[k, 2] - b[:, 2]
            if box is not None:
                dx = dx - box * np.rint(dx / box)
                dy = dy - box * np.rint(dy / box)
                dz = dz - box * np.rint(dz / box)
            s = dx * dx + dy * dy
            s = s + dz * dz
            q = np.floor(np.sqrt(s) / width)
            q = np.minimum(q, buckets).astype(np.int64)
            counts += np.bincount(q, minlength=buckets + 1)
    return counts[:buckets].tolist(), int(counts[buckets])


def wait_end(node, job, timeout=120, unavailable_ok=False):
    deadline = time.time() + timeout
    while time.time() < deadline:
        s, _, doc = node.json("GET", "/v1/jobs/" + job)
        if unavailable_ok and s in (500, 503):  # the database is restarting
            time.sleep(0.2)
            continue
        check(s == 200, "GET job on node %s: %s %s" % (node.port, s, doc))
        if doc["status"] not in ("queued", "running"):
            return doc
        time.sleep(0.1)
    raise AssertionError("job %s did not end in %ss" % (job, timeout))


def result_counts(node, job):
    s, _, doc = node.json("GET", "/v1/jobs/%s/result" % job)
    check(s == 200, "result: %s %s" % (s, doc))
    return doc["counts"], doc["overflow"]


def wait_for(cond, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("never: " + what)


def main():
    root = tempfile.mkdtemp(prefix="histd-cluster-")
    pg = Postgres(root)
    shared = os.path.join(root, "shared")
    os.makedirs(shared)
    unreadable = os.path.join(root, "unreadable")
    nodes = []
    try:
        env = {"LD_PRELOAD": FAULTS, "HISTD_TEST_UNREADABLE": unreadable,
               "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}

        def node(name):
            os.makedirs(os.path.join(root, name), exist_ok=True)
            d = Daemon(EXE, data_dir=os.path.join(root, name), env=env,
                       args=["--coordinator", pg.url, "--shared-store", shared, "--lease",
                             "%gs" % LEASE, "--node-name", name, "--shard-pairs", "20000000"])
            return d.start()

        # `histd migrate` makes the schema (the nodes would, too), here over a
        # coordinator of schema version 1 (before jobs had an engine) holding
        # a job, which must come through with engine 'any'
        for q in V1_SCHEMA:
            pg.sql(q)
        pg.sql("INSERT INTO histd_jobs (id, dataset, dataset_b, n, n_b, params, want, status,"
               " created_at, shards) VALUES ('v1job', 'x', '', 1, 0, '{}', 1, 'succeeded', 0,"
               " 1)")
        out = subprocess.run([EXE, "migrate", "--coordinator", pg.url], capture_output=True,
                             text=True)
        check(out.returncode == 0, "histd migrate: %s" % out.stderr)
        check(pg.sql("SELECT max(version) FROM histd_schema") == "2", "schema version 2")
        check(pg.sql("SELECT engine FROM histd_jobs WHERE id = 'v1job'") == "any",
              "a version-1 job migrates with engine 'any'")
        pg.sql("DELETE FROM histd_jobs WHERE id = 'v1job'")
        nodes = [node("n1"), node("n2"), node("n3")]
        n1, n2, n3 = nodes

        rng = np.random.default_rng(42)
        pts = rng.uniform(0, 1000, size=(N, 3))
        want_counts, want_over = definition(pts, WIDTH, BUCKETS)
        ds = n1.upload([tuple(p) for p in pts], fmt="csv", name="cloud")
        params = {"bucket_width": WIDTH, "buckets": BUCKETS, "kernel": "cpu-reference",
                  "threads": 1}

        # the single-node result, from a plain daemon on the same points
        with Daemon(EXE) as single:
            single.upload([tuple(p) for p in pts], fmt="csv")
            j = single.submit(ds["id"], **params)
            check(single.wait_job(j["id"], 120)["status"] == "succeeded", "single node")
            single_counts, single_over = result_counts(single, j["id"])
        check(single_counts == want_counts and single_over == want_over,
              "one node equals the definition")

        # 1. submitted on n2 (which fetches the dataset), read on n3
        s, _, doc = n2.json("GET", "/v1/datasets/" + ds["id"])
        check(s == 200 and doc["n"] == N, "n2 serves n1's dataset: %s %s" % (s, doc))
        s, _, listed = n3.json("GET", "/v1/datasets")
        check(s == 200 and any(d["id"] == ds["id"] for d in listed["datasets"]),
              "n3 lists it: %s" % listed)
        job = n2.submit(ds["id"], **params)["id"]
        # a long-poll on a third node answers when the job ends (each call at
        # the end or at the daemon's 30 s cap: a loaded ThreadSanitizer run
        # takes longer than one cap), within seconds of its finished_at
        doc, late = long_poll(n3, job)
        check(doc["status"] == "succeeded" and late < 10,
              "?wait= on n3 answered with the end %.1f s after it: %s" % (late, doc))
        counts, over = result_counts(n1, job)
        check(counts == want_counts and over == want_over, "cluster == definition")
        shards = int(pg.sql("SELECT shards FROM histd_jobs WHERE id = '%s'" % job))
        used = pg.sql("SELECT count(DISTINCT node) FROM histd_shards WHERE job_id = '%s'" % job)
        check(shards >= 6, "the job was cut into %d shards" % shards)
        print("cluster job: %d shards on %s nodes, identical" % (shards, used))
        check(pg.sql("SELECT engine FROM histd_jobs WHERE id = '%s'" % job) == "cpu",
              "a cpu-reference job's engine is cpu")

        # 1a. a job for GPU workers (its row as a GPU node would write it: no
        # node here has a GPU, so none takes its shards, where before they
        # were claimed and failed), queued ahead of a CPU job that completes
        pg.sql("INSERT INTO histd_jobs (id, dataset, dataset_b, n, n_b, params, want, status,"
               " created_at, shards, engine) SELECT 'gpujob', dataset, dataset_b, n, n_b,"
               " params, want, 'queued', created_at, 3, 'cuda' FROM histd_jobs WHERE id = '%s'"
               % job)
        pg.sql("INSERT INTO histd_shards (job_id, idx, seq, status) SELECT 'gpujob', i, 0,"
               " 'queued' FROM generate_series(0, 2) i")
        after = n1.submit(ds["id"], **params)["id"]
        check(wait_end(n2, after)["status"] == "succeeded", "the CPU job behind it ran")
        check(pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = 'gpujob' AND"
                     " status = 'queued' AND attempts = 0") == "3",
              "no CPU worker claimed the GPU job's shards: %s" %
              pg.sql("SELECT status, node, attempts, error FROM histd_shards"
                     " WHERE job_id = 'gpujob'"))
        pg.sql("DELETE FROM histd_jobs WHERE id = 'gpujob'")
        print("a GPU job's shards stay queued on CPU nodes; the CPU job behind it ran")

        # 1b. the grid: a periodic g(r) to L/4 on the same points
        job = n3.submit(ds["id"], bucket_width=25.0, buckets=10, box=[1000.0],
                        kernel="grid", threads=1)["id"]
        doc = wait_end(n1, job)
        check(doc["status"] == "succeeded", "the grid job: %s" % doc)
        shards = int(pg.sql("SELECT shards FROM histd_jobs WHERE id = '%s'" % job))
        check(shards >= 3, "the grid job was cut into %d shards" % shards)
        check(result_counts(n2, job) == definition(pts, 25.0, 10, box=1000.0),
              "cluster's grid g(r) == definition (%d shards)" % shards)
        print("grid job: %d shards, identical" % shards)
        check(pg.sql("SELECT engine FROM histd_jobs WHERE id = '%s'" % job) == "any",
              "a grid job's engine is any")

        # 2. kill -9 a node while it holds shards
        job = n1.submit(ds["id"], **params)["id"]
        wait_for(lambda: pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s' AND "
                                "node = 'n2' AND status = 'running'" % job) != "0",
                 "n2 runs a shard")
        n2.proc.kill()
        n2.proc.wait(5)
        n2.proc.stdout.close()
        n2.proc = None
        doc = wait_end(n1, job)
        check(doc["status"] == "succeeded", "finished without n2: %s" % doc)
        check(result_counts(n3, job) == (want_counts, want_over), "identical after kill -9")
        retried = pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s' AND "
                         "attempts > 1" % job)
        check(retried != "0", "a shard n2 held was run again")
        n2.start()

        # 3. SIGSTOP a node past its lease, then SIGCONT: its late result is dropped
        job = n1.submit(ds["id"], **params)["id"]
        wait_for(lambda: pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s' AND "
                                "node = 'n3' AND status = 'running'" % job) != "0",
                 "n3 runs a shard")
        n3.proc.send_signal(signal.SIGSTOP)
        wait_for(lambda: pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s' AND "
                                "status = 'running' AND node = 'n3'" % job) == "0",
                 "another node took n3's shard", timeout=60)
        n3.proc.send_signal(signal.SIGCONT)
        doc = wait_end(n2, job)
        check(doc["status"] == "succeeded", "finished past the stall: %s" % doc)
        check(result_counts(n1, job) == (want_counts, want_over), "identical after SIGSTOP")
        done = pg.sql("SELECT shards_done = shards FROM histd_jobs WHERE id = '%s'" % job)
        check(done == "t", "every shard counted once")

        # 4. cancel on another node than the one that took the job
        job = n1.submit(ds["id"], **params)["id"]
        wait_for(lambda: pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s' AND "
                                "status = 'running'" % job) != "0", "the job runs")
        s, _, doc = n2.json("DELETE", "/v1/datasets/" + ds["id"])
        check(s == 409, "a dataset a running job uses is kept: %s %s" % (s, doc))
        t0 = time.time()
        s, _, doc = n3.json("DELETE", "/v1/jobs/" + job)
        check(s in (200, 202) and doc["status"] == "cancelled", "cancel on n3: %s %s" % (s, doc))
        time.sleep(1.0)
        busy = pg.sql("SELECT count(*) FROM histd_shards WHERE job_id = '%s' AND status IN "
                      "('queued', 'running')" % job)
        check(busy == "0", "no shard of the cancelled job is open")
        s, _, doc = n1.json("GET", "/v1/jobs/" + job)
        check(doc["status"] == "cancelled", "n1 sees it cancelled: %s" % doc)
        print("cancel answered in %.2f s" % (time.time() - t0))

        # 5. restart PostgreSQL during a job: it finishes (or fails with a sentence),
        # nothing counted twice
        job = n2.submit(ds["id"], **params)["id"]
        wait_for(lambda: pg.sql("SELECT shards_done FROM histd_jobs WHERE id = '%s'" % job)
                 not in ("", "0"), "a shard is done")
        pg.restart()
        doc = wait_end(n1, job, timeout=180, unavailable_ok=True)
        if doc["status"] == "succeeded":
            check(result_counts(n2, job) == (want_counts, want_over),
                  "identical across a database restart")
        else:
            check(doc["status"] == "failed" and doc.get("error"),
                  "failed with a sentence: %s" % doc)
        print("across a database restart: %s" % doc["status"])

        # 6. a shard that always fails fails the job after its retries: a
        # second dataset no node can read once its job is queued behind one
        # that keeps the workers busy
        other = n1.upload([tuple(p) for p in pts[:3000]], fmt="csv", name="doomed")
        busy_job = n1.submit(ds["id"], **params)["id"]
        doomed = n1.submit(other["id"], bucket_width=WIDTH, buckets=BUCKETS)["id"]
        with open(unreadable, "w") as f:
            f.write(other["id"])
        doc = wait_end(n3, doomed, timeout=120)
        check(doc["status"] == "failed" and "failed 3 times" in doc.get("error", ""),
              "the doomed job failed after its retries: %s" % doc)
        os.unlink(unreadable)
        check(wait_end(n1, busy_job)["status"] == "succeeded", "the other job was unharmed")
        print("failing shard: %s" % doc["error"])
    finally:
        for n in nodes:
            if n.proc is not None:
                try:
                    n.proc.send_signal(signal.SIGCONT)
                except OSError:
                    pass
            n.kill()
        pg.stop()
        if os.environ.get("KEEP") is None:
            shutil.rmtree(root, ignore_errors=True)
    print("test_cluster: all checks passed")


if __name__ == "__main__":
    main()
