"""test_result_store.py -- how results are stored and what happens when
they cannot be (issue 15, items 6, 8 and 9):

- a 2-point job with 16 Mi buckets stores a few bytes, not 128 MiB, and
  results come back exactly as the definition gives them; so do its
  weighted sums (issue 28, item 5) and a per-frame table of 8 frames of 2
  points in 512 Ki buckets (not 32 MiB each);
- a data dir written before results were encoded (fixtures/datadir-v0)
  still serves its results;
- a data dir of schema 5 (fixtures/datadir-v5: raw weighted sums and
  per-frame tables, a job left running by a kill -9, one left queued)
  opens, serves its results exactly, and runs its unfinished jobs;
- a stored result of the wrong size is an error (500 with a sentence),
  never a histogram of zeros, and its summary (?summary=true), which reads
  no blob, still answers;
- a result the disk has no room for (faults.so: the WAL may not grow past
  a mark) ends the job failed with SQLite's sentence, the metrics count it
  failed, and it stays failed after a restart;
- a job that cannot be recorded as running (faults.so: a full disk) fails
  instead of running unrecorded; /readyz says 503 on the full disk;
- re-uploading points whose stored payload is corrupt (right size, wrong
  bytes) repairs it.

usage: test_result_store.py HISTD_EXE FAULTS_SO
"""
import json
import math
import os
import re
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, csv_table, definition, image_d, random_points  # noqa: E402

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
FIXTURE = os.path.join(FIXTURES, "datadir-v0")


def db_path(d):
    return os.path.join(d.data_dir, "data", "histd.db")


def db_bytes(d):
    return sum(os.path.getsize(db_path(d) + ext) for ext in ("", "-wal")
               if os.path.exists(db_path(d) + ext))


def wait_listed(d, job_id, timeout=60):
    """Until the job ends, through GET /v1/jobs (summaries: no counts)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        s, _, doc = d.json("GET", "/v1/jobs?limit=10000")
        check(s == 200, (s, doc))
        job = [j for j in doc["jobs"] if j["id"] == job_id][0]
        if job["status"] not in ("queued", "running"):
            return job
        time.sleep(0.05)
    raise AssertionError("job %s did not end within %ss: %s" % (job_id, timeout, job))


def finished_total(d):
    s, _, body = d.request("GET", "/metrics")
    check(s == 200, s)
    got = {}
    for m in re.finditer(rb'^histd_jobs_finished_total\{status="(\w+)"\} (\d+)$', body, re.M):
        got[m.group(1).decode()] = int(m.group(2))
    return got


def test_compact(exe, root):
    os.makedirs(os.path.join(root, "compact"))
    with Daemon(exe, data_dir=os.path.join(root, "compact"), args=["--workers", "1"]) as d:
        two = d.upload([(0.0, 0.0, 0.0), (3.0, 4.0, 0.0)], "json")["id"]  # one pair at 5
        before = db_bytes(d)
        huge = d.submit(two, bucket_width=1, buckets=16777216, kernel="cpu")
        doc = wait_listed(d, huge["id"])
        check(doc["status"] == "succeeded", doc)
        grown = db_bytes(d) - before
        # the raw counts were 128 MiB; a few pages of WAL are all it may take
        check(grown < 1 << 20, "16 Mi buckets took %d bytes of database" % grown)
        db = sqlite3.connect("file:%s?mode=ro" % db_path(d), uri=True)
        (blob,) = db.execute("SELECT length(r_arrays) FROM jobs WHERE id = ?",
                             (huge["id"],)).fetchone()
        db.close()
        check(blob < 64, "the stored result's arrays have %d bytes" % blob)
        # sparse and dense results read back exactly
        sparse = d.wait_job(d.submit(two, bucket_width=0.001, buckets=70000)["id"])
        want = [0] * 70000
        want[5000] = 1
        check(sparse["result"]["counts"] == want and sparse["result"]["overflow"] == 0,
              "sparse result")
        pts = random_points(300, seed=61)
        dense = d.wait_job(d.submit(d.upload(pts, "json")["id"], bucket_width=1,
                                    buckets=1500)["id"])
        counts, overflow, total = definition(pts, 1.0, 1500)
        check(dense["result"]["counts"] == counts and dense["result"]["overflow"] == overflow
              and dense["result"]["total"] == total, "dense result")
        s, _, body = d.request("GET", "/v1/jobs/%s/result?format=csv" % sparse["id"])
        rows = csv_table(body)
        nonzero = [r for r in rows[1:] if not r.endswith(",0")]
        check(s == 200 and len(rows) == 70002 and nonzero == ["5000,5,5.001,1"], (s, nonzero))
        print("compact: 16 Mi buckets stored in %d bytes (database +%d bytes); results exact"
              % (blob, grown))


def test_compact_arrays(exe, root):
    os.makedirs(os.path.join(root, "arrays"))
    with Daemon(exe, data_dir=os.path.join(root, "arrays"), args=["--workers", "1"]) as d:
        # 2 weighted points, one pair at 5 (weight 0.75 x 1.5)
        two = d.json("POST", "/v1/datasets", {"points": [[0, 0, 0, 0.75], [3, 4, 0, 1.5]]})[2]
        # 8 frames of 2 atoms in a box of 100: frame f's pair is at 1 + f
        xyz = "".join('2\nLattice="100 0 0 0 100 0 0 0 100" pbc="T T T"\n'
                      "Ar 0 0 0\nAr %d 0 0\n" % (1 + f) for f in range(8))
        s, _, frames = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
        check(s == 201 and frames["frames"] == 8, (s, frames))
        before = db_bytes(d)
        huge_w = d.submit(two["id"], bucket_width=1, buckets=1 << 22, kernel="cpu",
                          weights=True)["id"]
        huge_f = d.submit(frames["id"], r_max=50, buckets=1 << 19, kernel="cpu",
                          per_frame=True)["id"]
        for job in (huge_w, huge_f):
            doc = wait_listed(d, job)
            check(doc["status"] == "succeeded", doc)
        grown = db_bytes(d) - before
        # raw, the sums were 32 MiB and the table 32 MiB
        check(grown < 1 << 20, "the two results took %d bytes of database" % grown)
        db = sqlite3.connect("file:%s?mode=ro" % db_path(d), uri=True)
        sizes = [db.execute("SELECT length(r_arrays) FROM jobs WHERE id = ?",
                            (job,)).fetchone()[0] for job in (huge_w, huge_f)]
        db.close()
        # counts and weighted sums; counts and the per-frame table
        check(sizes[0] < 128 and sizes[1] < 384, sizes)
        # and read back exactly (fewer buckets, so that the JSON stays small)
        w = d.wait_job(d.submit(two["id"], bucket_width=0.001, buckets=70000, kernel="cpu",
                                weights=True)["id"])
        want = [0.0] * 70000
        want[5000] = 0.75 * 1.5
        check(w["result"]["weighted"] == want, "sparse weighted sums")
        f = d.wait_job(d.submit(frames["id"], r_max=50, buckets=5000, kernel="cpu",
                                per_frame=True)["id"])
        table = f["result"]["per_frame"]
        check(table["total"] == [1] * 8 and
              all(row[100 * (1 + k)] == 1 and sum(row) == 1
                  for k, row in enumerate(table["counts"])), "sparse per-frame table")
        print("compact: 4 Mi weighted sums in %d bytes, 8 x 512 Ki per-frame cells in %d "
              "(database +%d bytes); read back exactly" % (sizes[0], sizes[1], grown))


def test_lists_without_arrays(exe, root):
    """Lists and summaries leave out an explicit edges list (issue 28, item 6:
    three jobs' listing was 44.7 MB); GET of the job has it."""
    os.makedirs(os.path.join(root, "lists"))
    with Daemon(exe, data_dir=os.path.join(root, "lists"), args=["--workers", "1"]) as d:
        ds = d.upload(random_points(20, seed=67), "json")["id"]
        edges = [i * 0.02 for i in range(100000)]
        job = d.submit(ds, edges=edges, kernel="cpu")
        d.wait_job(job["id"])
        for path in ("/v1/jobs", "/v1/jobs/%s?summary=true" % job["id"]):
            s, _, body = d.request("GET", path)
            doc = json.loads(body)
            j = doc["jobs"][0] if "jobs" in doc else doc
            check(s == 200 and len(body) < 10000 and "edges" not in j["params"] and
                  j["edges_count"] == 100000 and "counts" not in j["result"],
                  (path, s, len(body)))
        s, _, doc = d.json("GET", "/v1/jobs/" + job["id"])
        check(s == 200 and doc["params"]["edges"] == edges and "edges_count" not in doc and
              len(doc["result"]["counts"]) == 99999, s)
    print("lists and summaries leave out 100,000 edges; GET of the job has them")


def test_delete_result(exe, root):
    """DELETE /v1/jobs/{id}/result takes a succeeded job's result away (the
    job stays, with result_deleted_at), durably, and gives its bytes back
    to --max-data-bytes (issue 28, item 5)."""
    dd = os.path.join(root, "forget")
    os.makedirs(dd)
    d = Daemon(exe, data_dir=dd, args=["--workers", "1"]).start()
    try:
        pts = [list(p) + [1.5] for p in random_points(2000, seed=68)]
        ds = d.json("POST", "/v1/datasets", {"points": pts})[2]["id"]
        # 200,000 buckets of counts and weighted sums: about 1.9 MB stored
        big = d.submit(ds, bucket_width=0.009, buckets=200000, kernel="cpu", weights=True)["id"]
        small = d.submit(ds, bucket_width=100, buckets=20, kernel="cpu")["id"]
        for job in (big, small):
            check(wait_listed(d, job)["status"] == "succeeded", job)
        check(d.stop() == 0, "exit 0")
        held = db_bytes(d) + sum(os.path.getsize(os.path.join(dd, "data", "payloads", f))
                                 for f in os.listdir(os.path.join(dd, "data", "payloads")))
        # a budget the data dir is past: no room for another job
        d.args = ["--workers", "1", "--max-data-bytes", str(held - 200000)]
        d.start()
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": ds, "bucket_width": 100})
        check(s == 507, (s, doc))
        s, _, body = d.request("DELETE", "/v1/jobs/%s/result" % big)
        check(s == 204 and body == b"", (s, body))
        # its pages are free again: the budget has room
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": ds, "bucket_width": 100,
                                                "buckets": 20, "kernel": "cpu"})
        check(s == 202, (s, doc))
        check(d.wait_job(doc["id"])["status"] == "succeeded", "a new job runs")
        for attempt in ("first", "restart"):
            s, _, doc = d.json("GET", "/v1/jobs/%s/result" % big)
            check(s == 410 and "deleted" in doc["detail"], (attempt, s, doc))
            s, _, doc = d.json("GET", "/v1/jobs/" + big)
            check(s == 200 and doc["status"] == "succeeded" and "result" not in doc and
                  doc["result_deleted_at"] is not None, (attempt, s, doc))
            s, _, doc = d.json("DELETE", "/v1/jobs/%s/result" % big)
            check(s == 410, (attempt, s, doc))
            if attempt == "first":
                check(d.stop() == 0, "exit 0")
                d.start()
        # other jobs keep theirs; no result, no job: 409 and 404
        check(d.stop() == 0, "exit 0")
        d.args = ["--workers", "1"]
        d.start()
        s, _, doc = d.json("GET", "/v1/jobs/%s/result" % small)
        check(s == 200 and sum(doc["counts"]) + doc["overflow"] == 1999000, s)
        long_job = d.submit(d.upload(random_points(200000, seed=69), "f64")["id"],
                            bucket_width=10, kernel="cpu-reference")["id"]
        s, _, doc = d.json("DELETE", "/v1/jobs/%s/result" % long_job)
        check(s == 409 and "cancels" in doc["detail"], (s, doc))
        d.json("DELETE", "/v1/jobs/" + long_job)
        check(d.wait_job(long_job)["status"] == "cancelled", "cancelled")
        s, _, doc = d.json("DELETE", "/v1/jobs/%s/result" % long_job)
        check(s == 409 and "cancelled" in doc["detail"], (s, doc))
        s, _, doc = d.json("DELETE", "/v1/jobs/0123456789abcdef0123456789abcdef/result")
        check(s == 404, (s, doc))
        print("DELETE /v1/jobs/{id}/result: 204, then 410; its bytes back in the budget")
    finally:
        d.kill()


def test_old_data_dir(exe, root):
    dd = os.path.join(root, "old")
    shutil.copytree(FIXTURE, os.path.join(dd, "data"))
    pts = random_points(40, seed=7)
    with Daemon(exe, data_dir=dd) as d:
        for job_id, width, buckets in (("954e21fc5304825fe02bdc0f221d408f", 50.0, 40),
                                       ("2e63ed32a19583b39d9a4ca6ef0a522a", 1.0, 3000)):
            s, _, doc = d.json("GET", "/v1/jobs/%s/result" % job_id)
            counts, overflow, total = definition(pts, width, buckets)
            check(s == 200 and doc["counts"] == counts and doc["overflow"] == overflow and
                  doc["total"] == total, (job_id, s))
        # and the old data dir takes new work
        s, _, ds = d.json("GET", "/v1/datasets")
        job = d.wait_job(d.submit(ds["datasets"][0]["id"], bucket_width=50, buckets=40)["id"])
        counts, _, _ = definition(pts, 50.0, 40)
        check(job["result"]["counts"] == counts, job)
    print("a data dir written before results were encoded serves them exactly")


def test_v5_data_dir(exe, root):
    dd = os.path.join(root, "v5")
    shutil.copytree(os.path.join(FIXTURES, "datadir-v5"), os.path.join(dd, "data"))
    pts = random_points(40, seed=7)
    w = [0.5 + (i % 5) * 0.25 for i in range(40)]
    with Daemon(exe, data_dir=dd, args=["--workers", "1"]) as d:
        db = sqlite3.connect("file:%s?mode=ro" % db_path(d), uri=True)
        (version,) = db.execute("PRAGMA user_version").fetchone()
        db.close()
        check(version >= 6, "schema %d" % version)
        # weighted sums (the products are multiples of 1/16: exact sums)
        s, _, doc = d.json("GET", "/v1/jobs/75b4f62bf39414c5ed8158df60017465/result")
        counts, overflow, total = definition(pts, 50.0, 40)
        sums = [0.0] * 40
        for i in range(40):
            for j in range(i + 1, 40):
                b = math.floor(math.sqrt(sum((pts[i][k] - pts[j][k]) ** 2 for k in (0, 1, 2)))
                               / 50.0)
                if b < 40:
                    sums[b] += w[i] * w[j]
        check(s == 200 and doc["counts"] == counts and doc["overflow"] == overflow and
              doc["weighted"] == sums, ("weighted", s, doc))
        # per-frame table: two frames of 10 atoms in a box of 100
        fr = random_points(20, seed=8, box=100.0)
        s, _, doc = d.json("GET", "/v1/jobs/c2d5efad7980a05743fc7104e1da7a45/result")
        want = []
        for f in range(2):
            c = [0] * 8
            a = fr[10 * f:10 * f + 10]
            for i in range(10):
                for j in range(i + 1, 10):
                    b = math.floor(image_d(a[i], a[j], (100.0, 100.0, 100.0)) / 5.0)
                    if b < 8:
                        c[b] += 1
            want.append(c)
        check(s == 200 and doc["per_frame"]["counts"] == want and
              doc["per_frame"]["total"] == [45, 45] and
              doc["counts"] == [x + y for x, y in zip(*want)], ("per frame", s, doc))
        # left running by a kill -9 (no attempts counted before schema 6),
        # and left queued: both run
        run = d.wait_job("5f3600414ecc8eeecbe7a088f1fe74c0")
        check(run["status"] == "succeeded" and
              sum(run["result"]["counts"]) + run["result"]["overflow"] == 6000 * 5999 // 2, run)
        q = d.wait_job("1088c9e5c3b00f97a6ebcdaf1b5798b5")
        counts, overflow, _ = definition(pts, 100.0, 10)
        check(q["status"] == "succeeded" and q["result"]["counts"] == counts, q)
    print("a schema-5 data dir opens: weighted and per-frame results exact, unfinished jobs run")


def test_wrong_size(exe, root):
    os.makedirs(os.path.join(root, "wrong"))
    d = Daemon(exe, data_dir=os.path.join(root, "wrong"), args=["--workers", "1"]).start()
    try:
        ds = d.upload(random_points(30, seed=62), "json")["id"]
        jobs = [d.wait_job(d.submit(ds, bucket_width=10, buckets=100)["id"])["id"]
                for _ in range(3)]
        check(d.stop() == 0, "exit 0")
        db = sqlite3.connect(db_path(d))
        with db:
            # arrays cut short, and a blob that is no result's arrays
            db.execute("UPDATE jobs SET r_arrays = substr(r_arrays, 1, length(r_arrays) - 3) "
                       "WHERE id = ?", (jobs[0],))
            db.execute("UPDATE jobs SET r_arrays = x'0102' WHERE id = ?", (jobs[1],))
        db.close()
        d.start()
        for job_id in jobs[:2]:
            for path in ("/v1/jobs/" + job_id, "/v1/jobs/%s/result" % job_id):
                s, _, doc = d.json("GET", path)
                check(s == 500 and "stored result is corrupt" in doc["detail"] and
                      ("end inside" in doc["detail"] or "HRA1" in doc["detail"]), (path, s, doc))
        s, _, doc = d.json("GET", "/v1/jobs/%s/result" % jobs[2])
        check(s == 200 and sum(doc["counts"]) + doc["overflow"] == 435, (s, doc))
        # a summary reads no blob (issue 28, item 6), so it answers
        for job_id in jobs[:2]:
            s, _, doc = d.json("GET", "/v1/jobs/%s?summary=true" % job_id)
            check(s == 200 and doc["status"] == "succeeded" and doc["result"]["total"] == 435
                  and "counts" not in doc["result"], (s, doc))
        print("a stored result of the wrong size: 500 with a sentence; its summary: 200")
    finally:
        d.kill()


def test_result_without_room(exe, shim, root):
    mark = os.path.join(root, "wal-limit")
    env = {"LD_PRELOAD": shim, "HISTD_TEST_WAL_LIMIT": mark,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    os.makedirs(os.path.join(root, "room"))
    with Daemon(exe, data_dir=os.path.join(root, "room"), args=["--workers", "1"],
                env=env) as d:
        pts = random_points(2000, seed=63)
        ds = d.upload(pts, "json")["id"]
        small = d.wait_job(d.submit(ds, bucket_width=100, buckets=20)["id"])
        check(small["status"] == "succeeded", small)
        before = finished_total(d)
        wal = db_path(d) + "-wal"
        with open(mark, "w") as f:  # room for small updates, not for 1 MB of result
            f.write(str(os.path.getsize(wal) + 128 * 1024))
        big = d.submit(ds, bucket_width=0.002, buckets=1000000, kernel="cpu")
        doc = wait_listed(d, big["id"])
        check(doc["status"] == "failed" and "result could not be stored" in doc["error"] and
              "database or disk is full" in doc["error"], doc)
        # the counter follows the stored status by a moment (the worker
        # counts the job once its end is recorded): wait for it, bounded
        deadline = time.time() + 10
        after = finished_total(d)
        while after["failed"] == before["failed"] and time.time() < deadline:
            time.sleep(0.02)
            after = finished_total(d)
        check(after["failed"] == before["failed"] + 1 and
              after["succeeded"] == before["succeeded"], (before, after))
        s, _, doc2 = d.json("GET", "/v1/jobs/%s/result" % big["id"])
        check(s == 409 and "database or disk is full" in doc2["detail"], (s, doc2))
        # the others go on: a small result still fits
        check(d.wait_job(d.submit(ds, bucket_width=100, buckets=20)["id"])["status"] ==
              "succeeded", "small jobs still succeed")
        check(d.stop() == 0, "exit 0")
        d.start()  # the failure was recorded: not run again, not running
        s, _, doc3 = d.json("GET", "/v1/jobs/" + big["id"])
        check(s == 200 and doc3["status"] == "failed" and doc3["error"] == doc["error"], doc3)
        print("a result without room: failed: %s" % doc["error"])


def test_full_disk_start(exe, shim, root):
    flag = os.path.join(root, "disk-full")
    env = {"LD_PRELOAD": shim, "HISTD_TEST_DISK_FULL": flag,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    os.makedirs(os.path.join(root, "full"))
    with Daemon(exe, data_dir=os.path.join(root, "full"), args=["--workers", "1"],
                env=env) as d:
        s, _, _ = d.json("GET", "/readyz")
        check(s == 200, s)
        big = d.upload(random_points(200000, seed=64, box=23000.0), "f64")["id"]
        small = d.upload(random_points(50, seed=65), "json")["id"]
        blocker = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
        queued = d.submit(small, bucket_width=10, buckets=10)
        d.wait_running(blocker["id"])
        open(flag, "w").close()  # the disk is full from here on
        s, h, doc = d.json("GET", "/readyz")
        check(s == 503 and "full" in doc["detail"] and "retry-after" in h, (s, doc))
        d.cancel_running(blocker["id"])
        doc = d.wait_job(queued["id"], timeout=30)
        check(doc["status"] == "failed" and "recorded as running" in doc["error"] and
              "database or disk is full" in doc["error"], doc)
        s, _, b = d.json("GET", "/v1/jobs/" + blocker["id"])
        check(b["status"] == "cancelled", b)
        print("full disk: /readyz 503; a job that cannot be recorded running fails: %s"
              % doc["error"])
        os.unlink(flag)
        s, _, _ = d.json("GET", "/readyz")
        check(s == 200, s)


def test_reupload_repairs(exe, root):
    os.makedirs(os.path.join(root, "repair"))
    pts = random_points(500, seed=66)
    with Daemon(exe, data_dir=os.path.join(root, "repair"), args=["--workers", "1"]) as d:
        ds = d.upload(pts, "f64")["id"]
        path = os.path.join(d.data_dir, "data", "payloads", ds + ".f64")
        size = os.path.getsize(path)
        with open(path, "r+b") as f:  # same size, one byte different
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 0x40]))
        check(os.path.getsize(path) == size, "same size")
        for fmt in ("f64", "json"):  # streamed and buffered uploads
            s, _, doc = d.json("POST", "/v1/datasets", *encode_body(pts, fmt))
            check(s == 200 and doc["id"] == ds, (s, doc))
            job = d.wait_job(d.submit(ds, bucket_width=50, buckets=40)["id"])
            counts, _, _ = definition(pts, 50.0, 40)
            check(job["status"] == "succeeded" and job["result"]["counts"] == counts, job)
            with open(path, "r+b") as f:  # corrupt again for the next format
                f.seek(100)
                b = f.read(1)
                f.seek(100)
                f.write(bytes([b[0] ^ 0x40]))
    print("a re-upload repairs a payload of the right size and the wrong bytes")


def encode_body(pts, fmt):
    from daemon import encode
    body, ctype = encode(pts, fmt)
    return body, {"Content-Type": ctype}


def main():
    exe, shim = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp(prefix="histd-results-")
    try:
        test_compact(exe, root)
        test_compact_arrays(exe, root)
        test_lists_without_arrays(exe, root)
        test_delete_result(exe, root)
        test_old_data_dir(exe, root)
        test_v5_data_dir(exe, root)
        test_wrong_size(exe, root)
        test_result_without_room(exe, shim, root)
        test_full_disk_start(exe, shim, root)
        test_reupload_repairs(exe, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("test_result_store: all ok")


if __name__ == "__main__":
    main()
