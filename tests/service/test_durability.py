"""test_durability.py -- durable writes and the locks (issue 15, item 11).

A disk that does not answer (faults.so: while a flag file exists, every
sync of the database's WAL waits) must hold up exactly the requests that
wait for durability, and nothing else:

- a POST /v1/jobs whose row is not yet on disk does not answer (a 202
  means the job is durable), and answers 202 once the disk does;
- meanwhile the daemon serves everything that needs no sync: a queued
  job's state (the queue's lock), a finished job and the job list (the
  database), /readyz, /metrics;
- after a kill -9 that follows the 202, the restarted daemon has the job.

Nothing here measures time: a request that waits on the stalled disk
waits until the test ends the stall, so the bounds below only turn a
hang into a failure.

usage: test_durability.py HISTD_EXE FAULTS_SO
"""
import os
import shutil
import signal
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, random_points  # noqa: E402

HANG = 30  # seconds after which a request that should answer counts as hung


def main():
    exe, shim = sys.argv[1], sys.argv[2]
    root = tempfile.mkdtemp(prefix="histd-durable-")
    flag = os.path.join(root, "stall")
    env = {"LD_PRELOAD": shim, "HISTD_TEST_STALL_SYNC": flag,
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    os.makedirs(os.path.join(root, "d"))
    d = Daemon(exe, data_dir=os.path.join(root, "d"), args=["--workers", "1"], env=env)
    try:
        d.start()
        big = d.upload(random_points(200000, seed=81, box=23000.0), "f64")["id"]
        small = d.upload(random_points(60, seed=82), "json")["id"]
        done = d.wait_job(d.submit(small, bucket_width=10, buckets=10)["id"])
        blocker = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
        queued = d.submit(small, bucket_width=20, buckets=10)
        d.wait_running(blocker["id"])

        open(flag, "w").close()  # the disk stops answering syncs
        answer = {}

        def submit():
            answer["reply"] = d.json("POST", "/v1/jobs",
                                     {"dataset": small, "bucket_width": 5, "buckets": 10},
                                     timeout=HANG * 4)

        t = threading.Thread(target=submit)
        t.start()
        # its row is written (not yet synced): the list shows it
        for _ in range(HANG * 10):
            s, _, doc = d.json("GET", "/v1/jobs", timeout=HANG)
            check(s == 200, (s, doc))
            if len(doc["jobs"]) == 4:
                break
            t.join(0.1)
        check(len(doc["jobs"]) == 4, "the new job's row was never written")
        for path in ("/v1/jobs/" + queued["id"], "/v1/jobs/" + done["id"],
                     "/v1/jobs/" + blocker["id"], "/readyz", "/metrics"):
            s, _, _ = d.request("GET", path, timeout=HANG)
            check(s == 200, (path, s))
        check(t.is_alive() and "reply" not in answer,
              "POST /v1/jobs answered before its row was synced: %s" % answer)
        print("disk stalled: the submit waits; queued and finished jobs, the list, "
              "/readyz and /metrics answer")

        os.unlink(flag)  # the disk answers again
        t.join(HANG * 4)
        check(not t.is_alive(), "the submit never answered")
        s, _, job = answer["reply"]
        check(s == 202, (s, job))
        d.stop(signal.SIGKILL)
        d.start()
        s, _, doc = d.json("GET", "/v1/jobs/" + job["id"])
        check(s == 200 and doc["status"] in ("queued", "running", "succeeded"), (s, doc))
        print("the acknowledged job survives kill -9")
        d.stop()
    except BaseException:
        sys.stderr.write("---- daemon log ----\n" + d.log())
        raise
    finally:
        if os.path.exists(flag):
            os.unlink(flag)
        d.kill()
        shutil.rmtree(root, ignore_errors=True)
    print("test_durability: all ok")


if __name__ == "__main__":
    main()
