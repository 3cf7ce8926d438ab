"""test_restart.py -- durability: kill -9 mid-job and restart with nothing
lost (datasets, finished results) and the unfinished jobs run again;
SIGTERM requeues a running job and exits 0; a corrupt or missing payload is
reported, not fatal; a job the daemon dies during --max-job-attempts times
fails with a sentence instead of running at every start, and clean stops
do not count.

usage: test_restart.py HISTD_EXE
"""
import os
import shutil
import signal
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, definition, random_points  # noqa: E402


def test_crash_loop(exe):
    """A job running whenever the daemon dies is run again, up to
    --max-job-attempts runs; then it fails with the count, and the next
    queued job runs. A clean stop (SIGTERM) does not count."""
    root = tempfile.mkdtemp(prefix="histd-crashloop-")
    args = ["--workers", "1", "--max-job-attempts", "2"]
    try:
        d = Daemon(exe, data_dir=root, args=args).start()
        big = d.upload(random_points(100000, seed=35, box=23000.0), "f64")["id"]
        pts = random_points(50, seed=36)
        small = d.upload(pts, "json")["id"]
        # minutes of one thread: it is running whenever the daemon goes
        loop = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")["id"]
        after = d.submit(small, bucket_width=40, buckets=30, kernel="cpu")["id"]
        for stop in (signal.SIGKILL, signal.SIGTERM, signal.SIGKILL):
            d.wait_running(loop)
            d.stop(stop)
            d = Daemon(exe, data_dir=root, args=args).start()
        # died twice while it ran (the SIGTERM between does not count): failed
        s, _, doc = d.json("GET", "/v1/jobs/" + loop)
        check(s == 200 and doc["status"] == "failed" and "died 2 times" in doc["error"] and
              "--max-job-attempts 2" in doc["error"], doc)
        nxt = d.wait_job(after)
        counts, overflow, _ = definition(pts, 40.0, 30)
        check(nxt["status"] == "succeeded" and nxt["result"]["counts"] == counts and
              nxt["result"]["overflow"] == overflow, nxt)
        check(d.stop() == 0, "exit 0")
        d = Daemon(exe, data_dir=root, args=args).start()
        s, _, again = d.json("GET", "/v1/jobs/" + loop)
        check(again["status"] == "failed" and again["error"] == doc["error"], again)
        check(d.stop() == 0, "exit 0")
        print("a job the daemon died during twice: failed: %s" % doc["error"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main():
    exe = sys.argv[1]
    root = tempfile.mkdtemp(prefix="histd-restart-")
    args = ["--workers", "1"]
    small_pts = random_points(150, seed=31)
    try:
        d = Daemon(exe, data_dir=root, args=args).start()
        small = d.upload(small_pts, "csv", name="small")
        other = d.upload(random_points(40, seed=32), "json")
        gone = d.upload(random_points(41, seed=33), "json")
        big = d.upload(random_points(25000, seed=34, box=23000.0), "f64")
        fin = d.wait_job(d.submit(small["id"], bucket_width=40, buckets=30)["id"])
        check(fin["status"] == "succeeded", fin)
        # a cut-off at a tenth of the points' extent: "auto" takes the grid and says why
        cut = d.wait_job(d.submit(small["id"], bucket_width=20, buckets=5)["id"])
        check(cut["status"] == "succeeded" and cut["result"]["kernel"] == "grid" and
              cut["result"]["kernel_reason"].startswith("grid: "), cut)
        # The one-thread reference kernel: seconds, so the kill lands mid-job.
        long_job = d.submit(big["id"], bucket_width=500, buckets=80, kernel="cpu-reference")
        queued = d.submit(big["id"], bucket_width=500, buckets=80, kernel="cpu")
        d.wait_running(long_job["id"])
        _, _, before = d.json("GET", "/v1/datasets")
        d.stop(signal.SIGKILL)
        print("killed -9 with a job running and one queued")

        d = Daemon(exe, data_dir=root, args=args).start()
        # A second daemon on the same data dir refuses to start.
        try:
            Daemon(exe, data_dir=root, args=args).start(timeout=5)
            raise AssertionError("a second daemon started on the same data dir")
        except RuntimeError as e:
            check("in use by another histd" in str(e), e)
        _, _, after = d.json("GET", "/v1/datasets")
        check(sorted(x["id"] for x in after["datasets"]) ==
              sorted(x["id"] for x in before["datasets"]), "datasets survive")
        check(all("error" not in x for x in after["datasets"]), after)
        s, _, again = d.json("GET", "/v1/jobs/" + fin["id"])
        check(s == 200 and again["status"] == "succeeded", again)
        check(again["result"]["counts"] == fin["result"]["counts"], "finished result survives")
        counts, overflow, total = definition(small_pts, 40.0, 30)
        check(again["result"]["counts"] == counts and again["result"]["overflow"] == overflow,
              "and still matches the definition")
        s, _, again = d.json("GET", "/v1/jobs/" + cut["id"] + "/result")
        ccounts, coverflow, _ = definition(small_pts, 20.0, 5)
        check(s == 200 and again["counts"] == ccounts and again["overflow"] == coverflow and
              again["kernel_reason"] == cut["result"]["kernel_reason"],
              ("the grid's result and its reason survive", again))
        for j in (long_job, queued):
            s, _, doc = d.json("GET", "/v1/jobs/" + j["id"])
            check(doc["status"] in ("queued", "running", "succeeded"), doc)
        a = d.wait_job(long_job["id"], timeout=150)
        b = d.wait_job(queued["id"], timeout=150)
        check(a["status"] == "succeeded" and b["status"] == "succeeded", (a, b))
        n = 25000
        check(sum(a["result"]["counts"]) + a["result"]["overflow"] == n * (n - 1) // 2, "total")
        check(a["result"]["counts"] == b["result"]["counts"], "the re-run agrees")
        print("restart after kill -9: datasets and results intact, 2 jobs re-run")

        # SIGTERM with a job running: exit 0, the job is queued again.
        term = d.submit(big["id"], bucket_width=250, buckets=160, kernel="cpu-reference")
        d.wait_running(term["id"])
        t0 = time.time()
        rc = d.stop(signal.SIGTERM)
        check(rc == 0, "exit status %s" % rc)
        check(time.time() - t0 < 5, "shutdown took %.1fs" % (time.time() - t0))
        d = Daemon(exe, data_dir=root, args=args).start()
        t = d.wait_job(term["id"], timeout=150)
        check(t["status"] == "succeeded", t)
        print("SIGTERM: exit 0 in %.2fs, the running job re-ran after restart" % (time.time() - t0))
        d.stop()

        # Damage payloads while the daemon is down: flip a byte, delete one.
        pay = os.path.join(root, "data", "payloads")
        with open(os.path.join(pay, small["id"] + ".f64"), "r+b") as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 0x40]))
        os.unlink(os.path.join(pay, gone["id"] + ".f64"))
        d = Daemon(exe, data_dir=root, args=args).start()
        s, _, doc = d.json("GET", "/v1/datasets/" + gone["id"])
        check(s == 200 and "missing" in doc["error"], doc)
        s, _, doc = d.json("POST", "/v1/jobs", {"dataset": gone["id"], "bucket_width": 10})
        check(s == 422 and "missing" in doc["detail"], (s, doc))
        bad = d.wait_job(d.submit(small["id"], bucket_width=40, buckets=30)["id"])
        check(bad["status"] == "failed" and "corrupt" in bad["error"], bad)
        s, _, doc = d.json("GET", "/v1/datasets/" + small["id"])
        check("corrupt" in doc["error"], doc)
        s, _, doc = d.json("GET", "/v1/datasets")
        check(len(doc["datasets"]) == 4, "every dataset is still listed")
        # The old result is still served, and an intact dataset still works.
        s, _, doc = d.json("GET", "/v1/jobs/%s/result" % fin["id"])
        check(s == 200 and doc["counts"] == counts, "old result")
        ok = d.wait_job(d.submit(other["id"], bucket_width=100)["id"])
        check(ok["status"] == "succeeded", ok)
        # Uploading the points again repairs the dataset.
        again = d.upload(small_pts, "json")
        check(again["id"] == small["id"] and "error" not in again, again)
        fixed = d.wait_job(d.submit(small["id"], bucket_width=40, buckets=30)["id"])
        check(fixed["status"] == "succeeded" and fixed["result"]["counts"] == counts, fixed)
        print("corrupt and missing payloads: reported, not fatal; re-upload repairs")
        check(d.stop() == 0, "exit 0")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    test_crash_loop(exe)
    print("test_restart: all ok")


if __name__ == "__main__":
    main()
