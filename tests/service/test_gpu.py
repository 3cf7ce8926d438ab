"""test_gpu.py -- the daemon's GPU workers: every CUDA kernel through
POST /v1/jobs against the definition, "auto" on the GPU, CPU kernels still
served beside the GPU workers, prefetch across queued jobs on different
datasets, cancelling a GPU job within a second, per-GPU memory in /metrics,
and /v1/histogram with a CUDA kernel. Skips (77) where the daemon finds no
GPU, saying why.

usage: test_gpu.py HISTD_EXE
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, definition, lattice_points, random_points  # noqa: E402


def main():
    exe = sys.argv[1]
    with Daemon(exe) as d:
        s, _, dev = d.json("GET", "/v1/devices")
        if not dev["devices"]:
            print("SKIP: the daemon finds no GPU: %s" % dev.get("gpu_unavailable_reason"))
            sys.exit(77)
        check(dev["engine"] == "cuda", dev)
        print("GPUs:", ", ".join("%d %s (cc %s)" % (g["index"], g["name"],
                                                    g["compute_capability"])
                                 for g in dev["devices"]))
        s, _, kd = d.json("GET", "/v1/kernels")
        cuda = [k["name"] for k in kd["kernels"] if k["engine"] == "cuda"]
        check(cuda and all(k["available"] for k in kd["kernels"]), kd)
        s, _, ready = d.json("GET", "/readyz")
        check(ready["engine"] == "cuda" and ready["workers"] >= 2, ready)

        pts = random_points(700, seed=61, box=2300.0)
        lat = lattice_points(8)
        a = d.upload(pts, "f64")["id"]
        b = d.upload(lat, "f64")["id"]
        cases = [(a, pts, 50.0, 70), (b, lat, 1.0, 14), (b, lat, 0.5, 20)]
        want = {(w, n): definition(p, w, n) for _, p, w, n in cases}
        # Queue everything at once: jobs alternate datasets, so GPU workers
        # prefetch the next job's points while the current one computes.
        jobs = []
        for kernel in cuda + ["auto", "cpu"]:
            for ds, _, w, n in cases:
                for bs in ((None, 256) if kernel not in ("auto", "cpu") else (None,)):
                    params = dict(bucket_width=w, buckets=n, kernel=kernel)
                    if bs:
                        params["block_size"] = bs
                    jobs.append((kernel, w, n, d.submit(ds, **params)["id"]))
        for kernel, w, n, jid in jobs:
            doc = d.wait_job(jid, timeout=120)
            check(doc["status"] == "succeeded", (kernel, doc))
            res = doc["result"]
            counts, overflow, total = want[(w, n)]
            check(res["counts"] == counts and res["overflow"] == overflow,
                  "%s (w=%g): counts differ from the definition" % (kernel, w))
            check(res["exact"] is True, res)
            if kernel == "cpu":
                check(doc["device"].startswith("cpu"), doc["device"])
            else:
                check(not doc["device"].startswith("cpu"), (kernel, doc["device"]))
        print("%d jobs on %d CUDA kernels, auto and cpu: all equal the definition" %
              (len(jobs), len(cuda)))

        # /v1/histogram with a CUDA kernel.
        s, _, doc = d.json("POST", "/v1/histogram", {"points": [list(p) for p in pts[:300]],
                                                     "bucket_width": 50, "buckets": 70,
                                                     "kernel": cuda[0]})
        check(s == 200 and doc["counts"] == definition(pts[:300], 50.0, 70)[0], (s, doc))

        # Cancel a long GPU job: 5e11 pairs on the slowest kernel.
        big = d.upload(random_points(1000000, seed=62, box=23000.0), "f64")["id"]
        job = d.submit(big, bucket_width=1, buckets=40000, kernel="naive")
        d.wait_running(job["id"], timeout=60)
        took, doc = d.cancel_running(job["id"])
        check(doc["status"] == "cancelled" and took < 1.0, (took, doc))
        print("GPU job cancelled in %.3fs at progress %.4f" % (took, doc["progress"]))

        s, _, body = d.request("GET", "/metrics")
        lines = [l for l in body.decode().splitlines()
                 if l.startswith("histd_device_memory_used_bytes{")]
        check(len(lines) == len(dev["devices"]), lines)
        print("metrics:", "; ".join(lines))
        check(d.stop() == 0, "exit 0")
    print("test_gpu: all ok")


if __name__ == "__main__":
    main()
