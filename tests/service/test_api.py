"""test_api.py -- the happy paths: uploads in every format, jobs on both CPU
kernels against the definition, results as JSON and CSV, long-poll,
progress, /v1/histogram, kernels, devices, health.

usage: test_api.py HISTD_EXE
"""
import array
import csv
import json
import hashlib
import io
import os
import shutil
import struct
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, csv_scalars, csv_table, definition, encode, lattice_points, long_poll, random_points  # noqa: E402


def test_uploads(d):
    pts = random_points(300, seed=1)
    # f32 needs float32-exact values to hash the same; use a grid of halves.
    grid = [(x * 0.5, y * 0.25, z * 2.0) for x, y, z in lattice_points(6)]
    ids = {}
    for fmt in ("json", "json-xyz", "csv", "xyz", "f64", "f32"):
        doc = d.upload(grid, fmt, name="grid-" + fmt)
        check(doc["n"] == len(grid), "%s: n" % fmt)
        # XYZ names its atoms' elements (all C here): the payload keeps them,
        # 8 bytes an atom, and the dataset says what it holds
        named = fmt == "xyz"
        check(doc["bytes"] == (32 if named else 24) * len(grid), "%s: bytes" % fmt)
        check(named == ("atoms" in doc), "%s: atoms" % fmt)
        if named:
            check(doc["atoms"] == {"per_frame": len(grid), "elements": {"C": len(grid)}},
                  doc["atoms"])
        check(doc["bounds"] == {"min": [0, 0, 0], "max": [2.5, 1.25, 10]}, doc["bounds"])
        check(doc["created_at"].endswith("Z") and "T" in doc["created_at"], doc["created_at"])
        ids[fmt] = doc["id"]
    # Content-addressed: the same points in any format are one dataset (with
    # the same description of their atoms: XYZ's elements make another).
    xyz_id = ids.pop("xyz")
    check(len(set(ids.values())) == 1, "one id for the same points: %s" % ids)
    check(xyz_id != ids["json"], "the elements are part of the dataset")
    check(ids["json"] == ids["f64"], ids)
    did = ids["json"]
    # The stored payload is float64 SoA, named by its hash.
    path = os.path.join(d.data_dir, "data", "payloads", did + ".f64")
    with open(path, "rb") as f:
        raw = f.read()
    n = len(grid)
    check(len(raw) == 24 * n, "payload size")
    xs = struct.unpack("<%dd" % n, raw[:8 * n])
    check(list(xs) == [p[0] for p in grid], "payload is x[] first")
    # The id: SHA-256 over the SHA-256 of each float64 array (sha256.c).
    leaves = b"".join(hashlib.sha256(raw[8 * n * a:8 * n * (a + 1)]).digest() for a in range(3))
    check(did == hashlib.sha256(leaves).hexdigest(), "the id is the documented hash")

    # A chunked float64 body (no Content-Length) takes the buffered path and
    # lands on the same id as the streamed one.
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    raw64 = encode(grid, "f64")[0]
    conn.request("POST", "/v1/datasets", body=iter([raw64[:1000], raw64[1000:]]),
                 headers={"Content-Type": "application/x-float64"}, encode_chunked=True)
    resp = conn.getresponse()
    doc = json.loads(resp.read())
    conn.close()
    check(resp.status == 200 and doc["id"] == did, (resp.status, doc))

    # A big raw float64 body (hashed on a second thread as it streams in):
    # the documented id, the same as the buffered (chunked) path's.
    flat = array.array("d", (c for p in random_points(250000, seed=77) for c in p))
    big = flat.tobytes()
    soa = b"".join(flat[a::3].tobytes() for a in range(3))
    want = hashlib.sha256(b"".join(hashlib.sha256(soa[8 * 250000 * a:8 * 250000 * (a + 1)])
                                   .digest() for a in range(3))).hexdigest()
    s1, _, d1 = d.json("POST", "/v1/datasets", big, {"Content-Type": "application/x-float64"})
    check(s1 == 201 and d1["id"] == want and d1["n"] == 250000, (s1, d1))
    check(d1["bounds"] == {"min": [min(flat[a::3]) for a in range(3)],
                           "max": [max(flat[a::3]) for a in range(3)]}, d1["bounds"])
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    conn.request("POST", "/v1/datasets", body=iter([big[i:i + (1 << 20)] for i in
                                                    range(0, len(big), 1 << 20)]),
                 headers={"Content-Type": "application/x-float64"}, encode_chunked=True)
    resp = conn.getresponse()
    d2 = json.loads(resp.read())
    conn.close()
    check(resp.status == 200 and d2["id"] == want, (resp.status, d2))
    with open(os.path.join(d.data_dir, "data", "payloads", want + ".f64"), "rb") as f:
        check(f.read() == soa, "the streamed payload is x[], y[], z[]")
    s, _, _ = d.request("DELETE", "/v1/datasets/" + want)
    check(s == 204, s)

    # First upload says 201, the same points again 200, both with Location.
    body, ctype = encode(pts, "csv")
    s1, h1, doc1 = d.json("POST", "/v1/datasets?name=random300", body, {"Content-Type": ctype})
    s2, h2, doc2 = d.json("POST", "/v1/datasets", encode(pts, "f64")[0],
                          {"Content-Type": "application/octet-stream"})
    check(s1 == 201 and s2 == 200, (s1, s2))
    check(doc1["id"] == doc2["id"] and h1["location"] == "/v1/datasets/" + doc1["id"], h1)
    check(doc1["name"] == "random300" and doc1["format"] == "csv", doc1)
    # ?format= beats Content-Type.
    s3, _, doc3 = d.json("POST", "/v1/datasets?format=csv", body,
                         {"Content-Type": "application/octet-stream"})
    check(s3 == 200 and doc3["id"] == doc1["id"], (s3, doc3))

    s, _, doc = d.json("GET", "/v1/datasets/" + did)
    check(s == 200 and doc["id"] == did and "error" not in doc, doc)
    s, _, doc = d.json("GET", "/v1/datasets")
    listed = [x["id"] for x in doc["datasets"]]
    check(did in listed and doc1["id"] in listed, listed)

    # DELETE: 204, then 404; a finished job's result outlives its dataset.
    other = d.upload(random_points(20, seed=99))
    job = d.wait_job(d.submit(other["id"], bucket_width=100, buckets=20)["id"])
    check(job["status"] == "succeeded", job)
    s, _, _ = d.request("DELETE", "/v1/datasets/" + other["id"])
    check(s == 204, s)
    s, _, _ = d.request("GET", "/v1/datasets/" + other["id"])
    check(s == 404, s)
    check(not os.path.exists(os.path.join(d.data_dir, "data", "payloads", other["id"] + ".f64")),
          "payload removed")
    s, _, doc = d.json("GET", "/v1/jobs/%s/result" % job["id"])
    check(s == 200 and sum(doc["counts"]) + doc["overflow"] == 190, doc)
    print("uploads: ok")
    return doc1["id"], pts


def check_result(res, pts, width, buckets, kernel):
    counts, overflow, total = definition(pts, width, buckets)
    check(res["counts"] == counts, "%s: counts differ from the definition" % kernel)
    check(res["overflow"] == overflow and res["total"] == total, (res["overflow"], overflow))
    check(res["buckets"] == buckets and res["bucket_width"] == width, res)
    check(res["edges"][0] == 0 and len(res["edges"]) == buckets + 1, res["edges"][:3])
    check(res["exact"] is True and res["precision"] == "exact", res)


def test_jobs(d, did, pts):
    gpu = bool(d.json("GET", "/v1/devices")[2]["devices"])
    cuda = {k["name"] for k in d.json("GET", "/v1/kernels")[2]["kernels"] if k["engine"] == "cuda"}
    lat = lattice_points(7)  # 343 points, distances sqrt(k): many exactly on edges
    lid = d.upload(lat, "f64")["id"]
    for kernel in ("cpu-reference", "cpu", "auto"):
        for (dataset, points, width, buckets) in ((did, pts, 50.0, 30), (lid, lat, 1.0, 8),
                                                  (lid, lat, 0.5, 30)):
            job = d.submit(dataset, bucket_width=width, buckets=buckets, kernel=kernel)
            check(job["status"] in ("queued", "running", "succeeded"), job)
            check(job["params"]["kernel"] == kernel and job["params"]["buckets"] == buckets, job)
            done = d.wait_job(job["id"])
            check(done["status"] == "succeeded", done)
            check(done["progress"] == 1, done)
            res = done["result"]
            check_result(res, points, width, buckets, kernel)
            if kernel == "auto" and gpu:  # auto runs on a GPU worker there
                check(res["kernel"] in cuda and not done["device"].startswith("cpu"), done)
            else:
                want_kernel = "cpu" if kernel == "auto" else kernel
                check(res["kernel"] == want_kernel, res["kernel"])
                check(done["device"].startswith("cpu"), done["device"])
            for k in ("queue", "parse", "transfer", "kernel", "total"):
                check(done["timing_ms"][k] >= 0, done["timing_ms"])
            check(done["started_at"] and done["finished_at"], done)
    print("jobs on cpu-reference, cpu, auto: ok")

    # Default bucket count covers the diagonal: no overflow.
    job = d.wait_job(d.submit(did, bucket_width=100)["id"])
    check(job["params"]["buckets"] == int(job["result"]["buckets"]), job["params"])
    check(job["result"]["overflow"] == 0, job["result"])

    # Results: JSON, CSV by Accept, CSV by ?format=.
    jid = job["id"]
    s, h, doc = d.json("GET", "/v1/jobs/%s/result" % jid)
    check(s == 200 and h["content-type"].startswith("application/json"), h)
    s, h, body = d.request("GET", "/v1/jobs/%s/result" % jid, headers={"Accept": "text/csv"})
    check(s == 200 and h["content-type"].startswith("text/csv"), h)
    check("attachment" in h["content-disposition"], h)
    rows = list(csv.reader(io.StringIO("\n".join(csv_table(body)))))
    check(rows[0] == ["bucket", "lower", "upper", "count"], rows[0])
    check(int(csv_scalars(body)["total"]) == doc["total"], "the CSV's scalars")
    check([int(r[3]) for r in rows[1:-1]] == doc["counts"], "csv counts")
    check(rows[-1][0] == "overflow" and int(rows[-1][3]) == doc["overflow"], rows[-1])
    s2, h2, body2 = d.request("GET", "/v1/jobs/%s/result?format=csv" % jid)
    check(s2 == 200 and body2 == body, "csv by ?format=")

    # The list: newest first, without counts, ?limit.
    s, _, doc = d.json("GET", "/v1/jobs?limit=3")
    check(s == 200 and len(doc["jobs"]) == 3 and doc["jobs"][0]["id"] == jid, doc["jobs"][0])
    check(all("counts" not in (j.get("result") or {}) for j in doc["jobs"]), "no counts in lists")
    print("results JSON/CSV, list: ok")


def test_progress_and_longpoll(d):
    # ~2e8 pairs on the one-thread reference kernel: a second or more, long
    # enough to watch progress move whatever the fast kernels do.
    big = d.upload(random_points(20000, seed=5, box=23000.0), "f64")["id"]
    job = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
    seen = []
    t0 = time.time()
    while time.time() - t0 < 120:
        s, _, doc = d.json("GET", "/v1/jobs/" + job["id"])
        seen.append(doc["progress"])
        if doc["status"] == "succeeded":
            break
        time.sleep(0.05)
    check(doc["status"] == "succeeded", doc)
    middle = [p for p in seen if 0 < p < 1]
    check(middle, "progress never seen between 0 and 1: %s" % seen[:20])
    check(seen == sorted(seen), "progress went backwards")
    print("progress: ok (%d distinct values seen)" % len(set(seen)))

    # Long-poll: ?wait returns as soon as the job ends, not at the deadline.
    # A call may come back at the daemon's cap (--max-wait, 30 s) while the
    # job still runs (under ThreadSanitizer on a loaded machine it ran
    # longer): then it waits again. The call that sees the end must answer
    # within moments of the job's finished_at.
    job = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
    doc, late = long_poll(d, job["id"])
    check(doc["status"] == "succeeded", doc)
    check(late < 5, "long-poll answered %.1f s after the job ended, not at its end" % late)
    # A short wait on a finished job answers at once; a long one is capped.
    t0 = time.time()
    s, _, doc = d.json("GET", "/v1/jobs/%s?wait=5" % job["id"])
    check(s == 200 and time.time() - t0 < 2, "wait on a finished job")
    # Many concurrent long-polls on one running job all wake up.
    job = d.submit(big, bucket_width=500, buckets=80, kernel="cpu")
    out = []

    def poll():
        out.append(long_poll(d, job["id"])[0]["status"])
    threads = [threading.Thread(target=poll) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    check(out == ["succeeded"] * 8, out)
    print("long-poll: ok")


def start_histograms(d, body, count, done=None):
    """Sends `count` POST /v1/histogram at once, each on its own thread:
    join the threads, then the list holds each (status, headers, doc) and
    `done` (when given) the time each answer came."""
    answers = []

    def one():
        answers.append(d.json("POST", "/v1/histogram", body, timeout=300))
        if done is not None:
            done.append(time.time())
    threads = [threading.Thread(target=one) for _ in range(count)]
    for t in threads:
        t.start()
    return threads, answers


def test_histogram(d):
    pts = random_points(200, seed=3)
    s, _, doc = d.json("POST", "/v1/histogram",
                       {"points": [list(p) for p in pts], "bucket_width": 60, "buckets": 25})
    check(s == 200, (s, doc))
    check_result(doc, pts, 60.0, 25, "histogram")
    s, _, doc2 = d.json("POST", "/v1/histogram",
                        {"x": [p[0] for p in pts], "y": [p[1] for p in pts],
                         "z": [p[2] for p in pts], "bucket_width": 60, "buckets": 25,
                         "kernel": "cpu-reference"})
    check(s == 200 and doc2["counts"] == doc["counts"], (s, doc2))
    # CSV on request, and a bad format refused before any work.
    body = {"points": [list(p) for p in pts], "bucket_width": 60, "buckets": 25}
    s, h, text = d.request("POST", "/v1/histogram", body, {"Accept": "text/csv"})
    rows = csv_table(text)
    counts, overflow, _ = definition(pts, 60.0, 25)
    check(s == 200 and h["content-type"].startswith("text/csv") and len(rows) == 27 and
          [int(r.rsplit(",", 1)[1]) for r in rows[1:-1]] == counts and
          rows[-1] == "overflow,1500,,%d" % overflow, (s, h, rows[:3], rows[-1]))
    s, _, doc3 = d.json("POST", "/v1/histogram?format=xml", body)
    check(s == 400 and "format" in doc3["detail"], (s, doc3))
    # Heavy histograms do not hold up the HTTP threads: with more of them in
    # flight than the daemon has HTTP threads, /healthz still answers at once.
    big = {"points": [list(p) for p in random_points(12000, seed=4)], "bucket_width": 100,
           "kernel": "cpu-reference"}
    done = []
    t_start = time.time()
    threads, results = start_histograms(d, big, 6, done)
    time.sleep(0.5)
    t0 = time.time()
    s, _, _ = d.json("GET", "/healthz")
    took = time.time() - t0
    for t in threads:
        t.join(300)
    # held behind a histogram, /healthz would wait about one's whole time;
    # it must take a small part of the quickest one's (whatever the
    # machine's speed or a sanitizer's slowdown)
    quickest = min(done) - t_start
    check(s == 200 and took < 0.25 * quickest,
          "/healthz took %.2fs behind heavy histograms (the quickest took %.2fs)" % (took, quickest))
    check([r[0] for r in results] == [200] * 6, [r[0] for r in results])
    print("/v1/histogram: ok (/healthz answered in %.3fs behind 6 heavy ones)" % took)


def test_small_routes(d):
    s, _, doc = d.json("GET", "/v1/kernels")
    names = {k["name"]: k for k in doc["kernels"]}
    for k in ("cpu", "cpu-reference"):
        check(names[k]["available"] and names[k]["engine"] == "cpu", names[k])
    for k in ("auto", "grid"):  # the worker's GPU, or the CPU
        check(names[k]["available"] and names[k]["engine"] == "any", names[k])
    for k in names.values():
        check(k["available"] == (k["engine"] != "cuda" or bool(
            d.json("GET", "/v1/devices")[2]["devices"])), k)
    s, _, doc = d.json("GET", "/v1/devices")
    check(s == 200 and doc["cpu"]["threads"] == len(os.sched_getaffinity(0)), doc)
    if not doc["devices"]:
        check(doc["engine"] == "cpu" and doc["gpu_unavailable_reason"], doc)
    s, _, doc = d.json("GET", "/healthz")
    check(s == 200 and doc["status"] == "ok", doc)
    s, _, doc = d.json("GET", "/readyz")
    check(s == 200 and doc["status"] == "ready", doc)
    s, h, body = d.request("GET", "/metrics")
    check(s == 200 and h["content-type"].startswith("text/plain; version=0.0.4"), h)
    s, h, body = d.request("HEAD", "/healthz")
    check(s == 200 and body == b"", (s, body))
    print("kernels, devices, healthz, readyz: ok")


def test_static(exe):
    with Daemon(exe, args=["--static-dir", os.path.join(os.path.dirname(__file__), "static")]) as d:
        s, h, body = d.request("GET", "/")
        check(s == 200 and h["content-type"].startswith("text/html"), (s, h))
        check(b"histd test page" in body, body[:80])
        s, h, body = d.request("GET", "/app.js")
        check(s == 200 and h["content-type"].startswith("text/javascript"), h)
        s, h, body = d.request("GET", "/sub/style.css")
        check(s == 200 and h["content-type"].startswith("text/css"), h)
        for bad in ("/../daemon.py", "/%2e%2e/daemon.py", "/nothing.html", "/.hidden"):
            s, h, _ = d.request("GET", bad)
            check(s == 404, (bad, s))
    print("static files: ok")


def test_affinity(exe):
    """The daemon sizes its pools by the cores it may run on (taskset, a
    container's cpuset), not by the machine's: pinned to one, it says 1."""
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cpus)})  # inherited by the daemon
    try:
        with Daemon(exe) as d:
            s, _, doc = d.json("GET", "/v1/devices")
            check(s == 200 and doc["cpu"]["threads"] == 1, doc)
    finally:
        os.sched_setaffinity(0, cpus)
    print("cpu affinity: ok")


def test_large_result(exe):
    """A 2 Mi-bucket result (16 MB of counts) as JSON, CSV and in its job:
    the documents are right, and the daemon's peak memory for serving them
    stays near the counts it reads (the text is streamed through a file),
    not the 50-150 MB of text (it was 5-10x the counts)."""
    root = tempfile.mkdtemp(prefix="histd-large-")
    env = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=1"}
    try:
        pts = [(0.0, 0.0, 0.0), (3.0, 4.0, 0.0), (1.0, 1.0, 1.0), (7.0, 7.0, 7.0)]
        buckets, width = 1 << 21, 1e-5
        counts, overflow, _ = definition(pts, width, buckets)
        with Daemon(exe, data_dir=root, env=env) as d:
            ds = d.upload(pts, "json")["id"]
            job = d.wait_job(d.submit(ds, bucket_width=width, buckets=buckets)["id"], timeout=120)
            check(job["status"] == "succeeded", job)
            check(d.stop() == 0, "exit 0")
            d.start()  # a fresh process: its peak is the answers' own
            d.request("GET", "/healthz")
            start = d.status_kb("VmHWM")
            s, h, body = d.request("GET", "/v1/jobs/%s/result" % job["id"])
            doc = json.loads(body)
            check(s == 200 and doc["counts"] == counts and doc["overflow"] == overflow and
                  len(doc["edges"]) == buckets + 1, "JSON result")
            s, h, body = d.request("GET", "/v1/jobs/%s/result?format=csv" % job["id"])
            rows = csv_table(body)
            check(s == 200 and len(rows) == buckets + 2 and rows[0] == "bucket,lower,upper,count",
                  "CSV rows")
            check([int(r.rsplit(",", 1)[1]) for r in rows[1:-1]] == counts, "CSV counts")
            s, h, body = d.request("GET", "/v1/jobs/" + job["id"])
            doc = json.loads(body)
            check(s == 200 and doc["status"] == "succeeded" and doc["result"]["counts"] == counts,
                  "job document")
            grew = (d.status_kb("VmHWM") - start) * 1024
            with open("/proc/%d/maps" % d.pid()) as f:
                tsan = "libtsan" in f.read()  # its shadow memory grows with any use
            check(tsan or grew < 4 * 8 * buckets, "serving a %d MB result took %d MB" %
                  (8 * buckets >> 20, grew >> 20))
            print("a %d-bucket result as JSON, CSV and job: right, peak +%d MB" %
                  (buckets, grew >> 20))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_retention(exe):
    """--job-retention: finished jobs older than it leave the store (404),
    jobs still queued or running stay, whatever their age."""
    with Daemon(exe, args=["--job-retention", "2s", "--workers", "1"]) as d:
        small = d.upload(random_points(50, seed=81), "json")["id"]
        big = d.upload(random_points(200000, seed=82, box=23000.0), "f64")["id"]
        done = d.wait_job(d.submit(small, bucket_width=100)["id"])
        check(done["status"] == "succeeded", done)
        running = d.submit(big, bucket_width=500, buckets=80, kernel="cpu-reference")
        d.wait_running(running["id"])
        deadline = time.time() + 10
        while time.time() < deadline:
            s, _, _ = d.request("GET", "/v1/jobs/" + done["id"])
            if s == 404:
                break
            time.sleep(0.2)
        check(s == 404, "a finished job outlived --job-retention 2s")
        _, _, listed = d.json("GET", "/v1/jobs")
        check([j["id"] for j in listed["jobs"]] == [running["id"]], listed)
        s, _, doc = d.json("GET", "/v1/jobs/" + running["id"])
        check(s == 200 and doc["status"] == "running", doc)
        s, _, _ = d.request("GET", "/v1/datasets/" + small)
        check(s == 200, "datasets are not expired")
        s, _, _ = d.request("DELETE", "/v1/jobs/" + running["id"])
        check("removed" in d.log(), d.log()[-300:])
        check(d.stop() == 0, "exit 0")
    print("--job-retention: old finished jobs removed, running ones kept")


def test_histogram_threads(exe):
    """--histogram-threads 1: two heavy histograms sent together are computed
    one after the other (the second waits in the pool's queue)."""
    with Daemon(exe, args=["--histogram-threads", "1"]) as d:
        body = {"points": [list(p) for p in random_points(6000, seed=91)], "bucket_width": 100,
                "kernel": "cpu-reference"}
        threads, answers = start_histograms(d, body, 2)
        for t in threads:
            t.join(120)
        answers = [a[2] for a in answers]
        check(len(answers) == 2 and all("timing_ms" in a for a in answers), answers)
        first, second = sorted(answers, key=lambda a: a["timing_ms"]["queue"])
        check(second["timing_ms"]["queue"] >= 0.5 * first["timing_ms"]["kernel"],
              "the second did not wait for the first: %s, %s" %
              (first["timing_ms"], second["timing_ms"]))
        check(d.stop() == 0, "exit 0")
    print("--histogram-threads 1: the second of two histograms waited %.0f ms" %
          second["timing_ms"]["queue"])


def main():
    exe = sys.argv[1]
    test_histogram_threads(exe)
    test_retention(exe)
    test_affinity(exe)
    test_large_result(exe)
    with Daemon(exe) as d:
        did, pts = test_uploads(d)
        test_jobs(d, did, pts)
        test_histogram(d)
        test_small_routes(d)
        test_progress_and_longpoll(d)
        rc = d.stop()
        check(rc == 0, "exit status after SIGTERM: %s" % rc)
    test_static(exe)
    print("test_api: all ok")


if __name__ == "__main__":
    main()
