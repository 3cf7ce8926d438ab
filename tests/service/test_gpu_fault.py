"""test_gpu_fault.py -- a GPU that hits a sticky CUDA error (an illegal
memory access, injected with HISTD_TEST_CUDA_FAULT): the job that hit it
fails with CUDA's words, the daemon stops as on SIGTERM (the job running
on the CPU stays queued) and exits 75 so that a supervisor restarts it;
the restarted daemon runs the queued job and GPU jobs again, exact. The
same for POST /v1/histogram with a CUDA kernel (503). Skips (77) where the
daemon finds no GPU.

usage: test_gpu_fault.py HISTD_EXE
"""
import os
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, definition, random_points  # noqa: E402

FAULT = {"HISTD_TEST_CUDA_FAULT": "1"}


def wait_exit(d, timeout=30):
    deadline = time.time() + timeout
    while d.proc.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    check(d.proc.poll() is not None, "the daemon did not stop after losing its GPU")
    return d.stop()


def main():
    exe = sys.argv[1]
    root = tempfile.mkdtemp(prefix="histd-gpufault-")
    try:
        d = Daemon(exe, data_dir=root, env=FAULT).start()
        s, _, dev = d.json("GET", "/v1/devices")
        if not dev["devices"]:
            print("SKIP: the daemon finds no GPU: %s" % dev.get("gpu_unavailable_reason"))
            d.kill()
            sys.exit(77)
        pts = random_points(2000, seed=71, box=2300.0)
        small = d.upload(pts, "f64")["id"]
        big = d.upload(random_points(200000, seed=72, box=23000.0), "f64")["id"]
        cpu_job = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
        d.wait_running(cpu_job["id"])
        gpu_job = d.submit(small, bucket_width=50, buckets=70, kernel="balanced")
        rc = wait_exit(d)
        check(rc == 75, "exit status %s" % rc)
        check("exit status 75" in d.log(), d.log())
        print("a sticky CUDA error: the daemon stopped, exit status 75")

        d = Daemon(exe, data_dir=root).start()  # as a supervisor would
        s, _, doc = d.json("GET", "/v1/jobs/" + gpu_job["id"])
        check(doc["status"] == "failed" and "illegal memory access" in doc["error"] and
              "can no longer use" in doc["error"], doc)
        s, _, doc = d.json("GET", "/v1/jobs/" + cpu_job["id"])
        check(doc["status"] in ("queued", "running"), doc)  # requeued, not failed
        s, _, _ = d.request("DELETE", "/v1/jobs/" + cpu_job["id"])
        check(s in (200, 202), s)
        again = d.wait_job(d.submit(small, bucket_width=50, buckets=70, kernel="balanced")["id"])
        counts, overflow, _ = definition(pts, 50.0, 70)
        check(again["status"] == "succeeded" and again["result"]["counts"] == counts and
              again["result"]["overflow"] == overflow, again)
        print("restarted: the failed job says why, the CPU job was requeued, the GPU works")
        check(d.stop() == 0, "exit 0")

        d = Daemon(exe, data_dir=root, env=FAULT).start()
        s, _, doc = d.json("POST", "/v1/histogram",
                           {"points": [list(p) for p in pts[:300]], "bucket_width": 50,
                            "kernel": "balanced"})
        check(s == 503 and "illegal memory access" in doc["detail"], (s, doc))
        rc = wait_exit(d)
        check(rc == 75, "exit status %s" % rc)
        print("POST /v1/histogram on a lost GPU: 503 with CUDA's words, exit status 75")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print("test_gpu_fault: all ok")


if __name__ == "__main__":
    main()
