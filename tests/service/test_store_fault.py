"""test_store_fault.py -- a full disk (injected by the faults.so shim: the
database and payload files cannot be written): every write answers 500
with a sentence, nothing is stored half-way, the daemon stays up, and once
the disk is back the same requests work. Also: jobs restored after a restart that this
daemon cannot run (a CUDA kernel without a GPU, a GPU it does not have)
fail with the reason instead of staying queued forever.

usage: test_store_fault.py HISTD_EXE FAULTS_SO
"""
import os
import shutil
import signal
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, definition, encode, random_points  # noqa: E402


def listed(d, what):
    s, _, doc = d.json("GET", "/v1/" + what)
    check(s == 200, (s, doc))
    return sorted(x["id"] for x in doc[what])


def payloads(d):
    return sorted(os.listdir(os.path.join(d.data_dir, "data", "payloads")))


def test_full_disk(exe, shim, root):
    flag = os.path.join(root, "disk-full")
    env = {"LD_PRELOAD": shim, "HISTD_TEST_DISK_FULL": flag,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    os.makedirs(os.path.join(root, "a"))
    with Daemon(exe, data_dir=os.path.join(root, "a"), args=["--workers", "1"], env=env) as d:
        big = d.upload(random_points(200000, seed=41, box=23000.0), "f64")["id"]
        running = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
        queued = d.submit(big, bucket_width=500, buckets=80, kernel="cpu")
        d.wait_running(running["id"])
        datasets, jobs, files = listed(d, "datasets"), listed(d, "jobs"), payloads(d)

        open(flag, "w").close()  # the disk is full from here on
        s, _, doc = d.json("DELETE", "/v1/jobs/" + queued["id"])
        check(s == 500 and "still queued" in doc["detail"] and "database" in doc["detail"],
              (s, doc))
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": big, "bucket_width": 100})
        check(s == 500 and "could not be stored" in doc["detail"], (s, doc))
        for fmt, n, says in (("f64", 100000, "no room on the disk"),  # streamed
                             ("json", 3000, "could not be stored")):
            body, ctype = encode(random_points(n, seed=42), fmt)
            s, _, doc = d.json("POST", "/v1/datasets", body, {"Content-Type": ctype})
            check(s == 500 and says in doc["detail"], (fmt, s, doc))
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, "alive")
        check(listed(d, "datasets") == datasets and listed(d, "jobs") == jobs, "no new rows")
        check(payloads(d) == files, ("no new payload files", payloads(d), files))
        s, _, doc = d.json("GET", "/v1/jobs/" + queued["id"])
        check(doc["status"] == "queued", doc)
        print("full disk: 500s with sentences, nothing stored, still serving")

        os.unlink(flag)  # space again
        s, _, doc = d.json("DELETE", "/v1/jobs/" + queued["id"])
        check(s == 200 and doc["status"] == "cancelled", (s, doc))
        s, _, doc = d.json("DELETE", "/v1/jobs/" + running["id"])
        check(s in (200, 202), (s, doc))
        pts = random_points(300, seed=43)
        small = d.upload(pts, "f64")["id"]
        done = d.wait_job(d.submit(small, bucket_width=50, buckets=40)["id"])
        counts, overflow, _ = definition(pts, 50.0, 40)
        check(done["status"] == "succeeded" and done["result"]["counts"] == counts and
              done["result"]["overflow"] == overflow, done)
        check(d.stop() == 0, "exit 0")
        d.start()  # the cancellation was durable
        s, _, doc = d.json("GET", "/v1/jobs/" + queued["id"])
        check(doc["status"] == "cancelled", doc)
        check(d.stop() == 0, "exit 0")
    print("disk back: the same requests work, and the cancellation survives a restart")


def test_unrunnable_after_restart(exe, root):
    os.makedirs(os.path.join(root, "b"))
    d = Daemon(exe, data_dir=os.path.join(root, "b"), args=["--workers", "1"]).start()
    try:
        big = d.upload(random_points(200000, seed=44, box=23000.0), "f64")["id"]
        small = d.upload(random_points(50, seed=45), "json")["id"]
        blocker = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
        d.wait_running(blocker["id"])
        gpu_job = d.submit(small, bucket_width=10)
        fine = d.submit(small, bucket_width=10)
        d.stop(signal.SIGKILL)
        # As if these had been submitted to a daemon with a GPU 62 and a
        # CUDA kernel: no daemon here has a GPU 62.
        db = sqlite3.connect(os.path.join(d.data_dir, "data", "histd.db"))
        with db:
            db.execute("UPDATE jobs SET params = json_set(params, '$.kernel', 'balanced', "
                       "'$.devices', json('[62]')) WHERE id = ?", (gpu_job["id"],))
            db.execute("UPDATE jobs SET status = 4 WHERE id = ?", (blocker["id"],))  # cancelled
        db.close()
        d.start()
        doc = d.wait_job(gpu_job["id"], timeout=20)
        check(doc["status"] == "failed" and doc["error"], doc)
        _, _, kernels = d.json("GET", "/v1/kernels")
        if any(k["name"] == "balanced" for k in kernels["kernels"]):
            check("GPU" in doc["error"], doc)  # else: unknown kernel, said so
        print("restored job nobody can run: failed: %s" % doc["error"])
        check(d.wait_job(fine["id"])["status"] == "succeeded", "the others still run")
        check(d.stop() == 0, "exit 0")
    finally:
        d.kill()


def main():
    exe, shim = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp(prefix="histd-fault-")
    try:
        test_full_disk(exe, shim, root)
        test_unrunnable_after_restart(exe, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("test_store_fault: all ok")


if __name__ == "__main__":
    main()
