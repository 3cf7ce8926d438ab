"""test_client.py -- the Python client (api/python) against the real
daemon, for every route it wraps, with each result checked against the
numpy definitions in common.py: histograms of equal-width bins, explicit
and log-spaced edges, A x B, within a radius, g(r) with the coordination
number; uploads of arrays, lists and files (streamed: the client does not
hold the file); .npz and JSON results agree exactly (uint64 counts); the
daemon's problem+json sentence in the exception; a token; Ctrl-C during
wait() cancels the job on the daemon.

usage: test_client.py HISTD_EXE
"""
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc

from common import ROOT, Daemon, check, distances, edge_counts, exe, np, rdf, width_counts

import histd


def client_of(d, token=None):
    return histd.Client("http://127.0.0.1:%d" % d.port, token=token)


def test_routes(c, d):
    check(c.health()["status"] == "ok", "GET /healthz")
    check(any(k["name"] == "cpu" for k in c.kernels()), "GET /v1/kernels")
    check("cpu" in json.dumps(c.devices()), "GET /v1/devices")
    rng = np.random.default_rng(7)
    pts = rng.uniform(0, 100, (400, 3))
    ds = c.upload(pts, name="arr")
    check(ds.n == 400 and len(ds.id) == 64 and ds.name == "arr", ds)
    same = c.upload(pts.tolist())  # a list of triples: the same points
    check(same.id == ds.id, "a list uploads the same float64s as the array")
    check(c.dataset(ds.id).n == 400, "GET /v1/datasets/{id}")
    check(ds.id in [x.id for x in c.datasets()], "GET /v1/datasets")
    job = c.submit(ds, bucket_width=10, buckets=12)
    check(job.status in ("queued", "running", "succeeded"), job)
    res = job.wait(progress=True)
    check(c.job(job.id).status == "succeeded", "GET /v1/jobs/{id}")
    check(job.id in [j.id for j in c.jobs()], "GET /v1/jobs")
    counts, overflow = width_counts(distances(pts), 10, 12)
    check(res.counts.dtype == np.uint64 and np.array_equal(res.counts, counts),
          "counts: %s vs %s" % (res.counts, counts))
    check(res.overflow == overflow and res.total == 400 * 399 // 2 and res.n == 400, res.raw)
    check(np.allclose(res.edges, np.arange(13) * 10.0) and np.allclose(res.centers[:2], [5, 15]),
          "edges and centers")
    check(res.kernel and res.device and "total" in res.timing_ms, "the run's metadata")
    check(job.cancel().status == "succeeded", "DELETE on an ended job leaves it")
    tmp = c.upload(rng.uniform(0, 1, (5, 3)))
    tmp.delete()
    try:
        c.dataset(tmp.id)
        raise AssertionError("a deleted dataset is still there")
    except histd.HistdError as e:
        check(e.status == 404 and tmp.id in str(e), "404 says which: %s" % e)
    print("routes: health, kernels, devices, datasets (upload, get, list, delete), jobs "
          "(submit, get, list, wait, cancel, result)")
    return pts, ds


def test_statistics(c, pts, ds):
    rng = np.random.default_rng(8)
    # explicit edges, with below and overflow
    edges = [5.0, 12.5, 30.0, 31.0, 80.0]
    r = c.pair_counts(ds, edges=edges)
    counts, below, over = edge_counts(distances(pts), edges)
    check(np.array_equal(r.counts, counts) and r.below == below and r.overflow == over,
          "edges: %s %s %s vs %s %s %s" % (r.counts, r.below, r.overflow, counts, below, over))
    # log bins: the daemon publishes its edges; the counts follow them
    r = c.pair_counts(ds, log_bins=[1.0, 150.0, 20])
    check(len(r.edges) == 21 and abs(r.edges[0] - 1) < 1e-12 and abs(r.edges[-1] - 150) < 1e-9,
          "log_bins edges: %s" % r.edges)
    counts, below, over = edge_counts(distances(pts), r.edges)
    check(np.array_equal(r.counts, counts) and r.below == below and r.overflow == over,
          "log_bins counts")
    # A x B
    b = rng.uniform(0, 100, (150, 3))
    r = c.pair_counts(ds, b, r_max=60, buckets=6)
    counts, over = width_counts(distances(pts, b), 10, 6)
    check(np.array_equal(r.counts, counts) and r.overflow == over and r.n_b == 150 and
          r.total == 400 * 150, "A x B: %s vs %s" % (r.counts, counts))
    # within a radius
    r = c.pair_counts(ds, within=20)
    check(r.statistic == "within" and r.within == int(np.count_nonzero(distances(pts) <= 20)),
          "within: %s" % r.raw)
    # g(r) in a periodic box
    box = [100.0, 100.0, 100.0]
    r = c.rdf(ds, r_max=40, buckets=8, box=box)
    counts, g, coord = rdf(distances(pts, box=box), r.edges, 400 * 399 // 2, 1e6, 400)
    check(np.array_equal(r.counts, counts), "rdf counts: %s vs %s" % (r.counts, counts))
    check(np.allclose(r.g, g, rtol=1e-12) and np.allclose(r.coordination, coord, rtol=1e-12),
          "g(r) and coordination: %s vs %s" % (r.g, g))
    check(r.volume == 1e6, "the volume g(r) divides by")
    try:
        c.rdf(pts, r_max=10, buckets=4)
        raise AssertionError("rdf without a box")
    except ValueError as e:
        check("box" in str(e), e)
    # a file serves its own box (an extended XYZ's Lattice), as the daemon reads it;
    # a file without one is refused with the same sentence, after the run
    with tempfile.TemporaryDirectory() as tmp:
        xyz = os.path.join(tmp, "boxed.xyz")
        with open(xyz, "w") as f:
            f.write("%d\nLattice=\"100 0 0 0 100 0 0 0 100\"\n" % len(pts))
            f.writelines("Ar %r %r %r\n" % tuple(p) for p in pts.tolist())
        own = c.rdf(xyz, r_max=40, buckets=8)
        check(np.array_equal(own.counts, r.counts) and np.allclose(own.g, r.g, rtol=1e-12) and
              own.raw.get("box_source") == "dataset",
              "rdf of a file with its own box: %s vs %s" % (own.counts, r.counts))
        csv = os.path.join(tmp, "open.csv")
        with open(csv, "w") as f:
            f.write("x,y,z\n")
            f.writelines("%r,%r,%r\n" % tuple(p) for p in pts.tolist())
        try:
            c.rdf(csv, r_max=10, buckets=4)
            raise AssertionError("rdf of a file without a box")
        except ValueError as e:
            check("carries none" in str(e), e)
    print("statistics: width, edges (below, overflow), log_bins, A x B, within, g(r) and "
          "coordination agree with numpy")


def test_npz_json(c, d, ds):
    """The .npz the client reads and the JSON agree exactly; without numpy
    (a subprocess that cannot import it) the client reads JSON into lists."""
    job = c.submit(ds, r_max=45, buckets=9, box=[100])
    res = job.wait()
    s, h, raw = d.request("GET", "/v1/jobs/%s/result" % job.id,
                          headers={"Accept": "application/x-npz"})
    check(s == 200 and h["content-type"] == "application/x-npz" and raw[:2] == b"PK",
          "Accept: application/x-npz")
    doc = json.loads(d.request("GET", "/v1/jobs/%s/result" % job.id)[2])
    check([int(x) for x in res.counts] == doc["counts"], "npz counts == JSON counts")
    check(res.edges.tolist() == doc["edges"] and res.g.tolist() == doc["g"] and
          res.coordination.tolist() == doc["coordination"], "npz floats == JSON floats")
    check(res.below == doc["below"] and res.total == doc["total"], "scalars")
    code = ("import sys; sys.modules['numpy'] = None; sys.path.insert(0, %r); import histd; "
            "r = histd.Client(%r).job(%r).wait(progress=False); "
            "print(type(r.counts).__name__, r.counts, r.g == %r)"
            % (os.path.join(ROOT, "api", "python"), "http://127.0.0.1:%d" % d.port, job.id,
               doc["g"]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    check(out.returncode == 0, out.stderr)
    check(out.stdout.strip() == "list %s True" % doc["counts"], out.stdout)
    print("npz: the .npz and the JSON agree; without numpy the client reads JSON lists")


def test_files(c, pts):
    """Files upload streamed, in each format, to the same points."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = {"csv": os.path.join(tmp, "p.csv"), "xyz": os.path.join(tmp, "p.xyz"),
                 "json": os.path.join(tmp, "p.json"), "f64": os.path.join(tmp, "p.f64")}
        small = pts[:50]
        with open(paths["csv"], "w") as f:
            f.write("x,y,z\n" + "".join("%r,%r,%r\n" % tuple(p) for p in small.tolist()))
        with open(paths["xyz"], "w") as f:
            f.write("50\nframe\n" + "".join("C %r %r %r\n" % tuple(p) for p in small.tolist()))
        with open(paths["json"], "w") as f:
            json.dump({"points": small.tolist()}, f)
        small.astype("<f8").tofile(paths["f64"])
        ids = {fmt: c.upload(p).id for fmt, p in paths.items()}
        # XYZ names its atoms (C): the elements are part of that dataset
        xyz_id = ids.pop("xyz")
        check(len(set(ids.values())) == 1 and xyz_id not in ids.values(),
              "every format, the same points (XYZ with its elements apart): %s" % ids)
        other = os.path.join(tmp, "points.txt")
        os.rename(paths["csv"], other)
        try:
            c.upload(other)
            raise AssertionError("an unknown extension")
        except ValueError as e:
            check("format=" in str(e), e)
        check(c.upload(other, format="csv").id == ids["f64"], "format= names it")
        # a large file streams: the client holds a block, not the file
        big = np.random.default_rng(9).uniform(0, 1000, (400000, 3))
        path = os.path.join(tmp, "big.f64")
        big.astype("<f8").tofile(path)
        size = os.path.getsize(path)
        tracemalloc.start()
        ds = c.upload(path)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        check(ds.n == 400000, ds)
        check(peak < size / 4, "the upload held %d bytes of a %d-byte file" % (peak, size))
        ds.delete()
    print("files: csv, xyz, json, f64 uploads agree; a %d MB file streamed (peak %d KB)"
          % (size >> 20, peak >> 10))


def test_errors(c, d, ds):
    try:
        c.histogram(ds, bucket_width=-1)
        raise AssertionError("a bad width")
    except histd.HistdError as e:
        check(e.status == 422 and str(e) == "bucket_width must be > 0, got -1" and
              e.problem["status"] == 422, "problem+json: %r" % e.problem)
    try:
        c.submit(ds, bucket_width=1, colour="red")
        raise AssertionError("an unknown parameter")
    except histd.HistdError as e:
        check(e.status == 400 and "colour" in str(e) and "bucket_width" in str(e), e)
    try:
        histd.Client("http://127.0.0.1:1").health()
        raise AssertionError("nobody listens")
    except histd.HistdError as e:
        check(e.status == 0 and "cannot reach" in str(e), e)
    for bad in ("ftp://x", "localhost:8080"):
        try:
            histd.Client(bad)
            raise AssertionError(bad)
        except ValueError:
            pass
    print("errors: the daemon's sentence in HistdError (422, 400), unreachable, bad urls")


def test_token():
    with Daemon(exe(), env={"HISTD_TOKEN": "s3cret"}) as d:
        try:
            client_of(d).datasets()
            raise AssertionError("no token")
        except histd.HistdError as e:
            check(e.status == 401, e)
        r = client_of(d, "s3cret").histogram([[0, 0, 0], [3, 4, 0], [6, 8, 0]], 5, 4,
                                             progress=False)
        check(r.counts.tolist() == [0, 2, 1, 0], r.counts)
    print("token: 401 without it, results with it")


CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
import histd
job = histd.Client(sys.argv[2]).submit(sys.argv[3], bucket_width=0.5, kernel="cpu-reference",
                                       threads=1)
print(job.id, flush=True)
job.wait(progress=True)
"""


def test_ctrl_c(c, d):
    """SIGINT to a process in wait(): it cancels the job on the daemon."""
    big = d.upload(np.random.default_rng(10).uniform(0, 1000, (60000, 3)).tolist(), "f64")
    ds = histd.Dataset(c, big)
    child = subprocess.Popen([sys.executable, "-c", CHILD, os.path.join(ROOT, "api", "python"),
                              c.url, ds.id], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    try:
        job_id = child.stdout.readline().strip()
        if len(job_id) != 32:
            raise AssertionError("the child's job: %r %s" % (job_id, child.communicate()[1]))
        t0 = time.time()
        while c.job(job_id).status == "queued" and time.time() - t0 < 30:
            time.sleep(0.05)
        check(c.job(job_id).status == "running", "the child's job runs")
        # inside wait() once its progress bar shows on stderr
        ready, _, _ = select.select([child.stderr], [], [], 20)
        check(ready and os.read(child.stderr.fileno(), 64), "the child's progress bar")
        time.sleep(0.2)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    check(child.returncode != 0 and "KeyboardInterrupt" in err, "the child: %s" % err[-500:])
    t0 = time.time()
    status = c.job(job_id).status
    while status == "running" and time.time() - t0 < 10:
        time.sleep(0.05)
        status = c.job(job_id).status
    check(status == "cancelled", "the job is %s" % status)
    try:
        c.job(job_id).result()
        raise AssertionError("a cancelled job's result")
    except histd.JobFailed as e:
        check("cancelled" in str(e), e)
    print("ctrl-c: SIGINT in wait() cancelled job %s on the daemon" % job_id[:8])


def test_trajectory(c):
    """A LAMMPS dump of waters through the client: selections, exclusions,
    frames and the per-frame table, checked against a brute force here."""
    import math
    import random
    rng = random.Random(9)
    L = 10.0
    frames = []
    for _ in range(2):
        rows = []
        for m in range(20):
            o = [rng.uniform(0, L) for _ in range(3)]
            rows.append((3 * m + 1, m + 1, 1, o))
            for k in range(2):
                rows.append((3 * m + 2 + k, m + 1, 2, [x + rng.uniform(-0.5, 0.5) for x in o]))
        frames.append(rows)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "water.lammpstrj")
        with open(path, "w") as f:
            for t, rows in enumerate(frames):
                f.write("ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n"
                        "0 %r\n0 %r\n0 %r\nITEM: ATOMS id mol type x y z\n" % (t, len(rows), L, L, L))
                f.writelines("%d %d %d %r %r %r\n" % (i, m, ty, *p) for i, m, ty, p in rows)
        job = c.submit(path, select_a="type:1", select_b="type:2", exclude="molecule", r_max=4,
                       buckets=8, frames="1:", per_frame=True)
        r = job.wait(timeout=60)

    def d(p, q):
        s = 0.0
        for a in range(3):
            x = p[a] - q[a]
            x = x - L * round(x / L)
            s += x * x
        return math.sqrt(s)
    rows = frames[1]
    want, excluded = [0] * 8, 0
    for i, mi, ti, pi in rows:
        for j, mj, tj, pj in rows:
            if ti != 1 or tj != 2:
                continue
            if mi == mj:
                excluded += 1
            elif d(pi, pj) < 4:
                want[int(d(pi, pj) / 0.5)] += 1
    check(list(r.counts) == want and r.excluded == excluded and r.exclude == "molecule",
          "the client's O-H counts less the bonded pairs: %s, want %s" % (list(r.counts), want))
    check(r.select_a == "type:1" and r.select_b == "type:2" and r.n == 20 and r.n_b == 40 and
          r.frames == 1, "the selections and their sizes")
    check(r.per_frame is not None and r.per_frame["counts"].tolist() == [want],
          "the per-frame table")


def test_schema(c, ds):
    """Every field the daemon's schema lists for JSON, which a result has,
    is the Result's attribute (a grouped one a member of its group's dict),
    with the JSON's value, read from the .npz as from the JSON; per-point
    results and pair lists come back as numpy arrays."""
    schema = c.schema()
    check(schema and {"name", "group", "npz", "type", "shape"} <= set(schema[0]), schema[:1])
    jobs = [c.submit(ds, bucket_width=100, box=[2000]), c.submit(ds, within=150),
            c.submit(ds, within=150, per_point=True), c.submit(ds, nearest=True),
            c.submit(ds, pairs_within=120)]
    for job in jobs:
        r = job.wait(progress=False)
        doc = c._call("GET", "/v1/jobs/%s/result" % job.id)
        seen = 0
        for f in schema:
            if "json" not in f["outputs"]:
                continue
            src = doc.get(f["group"]) if f["group"] else doc
            if not isinstance(src, dict) or f["name"] not in src:
                continue
            want = src[f["name"]]
            got = (getattr(r, f["group"]) or {}).get(f["name"]) if f["group"] else \
                getattr(r, "binning" if f["name"] == "bins" else f["name"])  # bins: centres
            if f["shape"] != "scalar":
                got = [[None if x != x else x for x in row] if isinstance(row, list)
                       else (None if row != row else row) for row in got.tolist()]
            if want is None and isinstance(got, float) and got != got or got in (
                    float("inf"), float("-inf")):
                got = None  # JSON writes a non-finite number as null
            if f["group"] == "timing_ms" or f["name"] in ("device", "kernel_reason"):
                seen += got is not None  # the npz and the JSON were read at two times
                continue
            check(got == want, "%s: %s.%s: %r, the JSON's %r" % (doc["statistic"], f["group"],
                                                                 f["name"], got, want))
            seen += 1
        check(seen >= 12, "%s: %d fields" % (doc["statistic"], seen))
    r = c.neighbours(ds, 150, progress=False)
    check(str(r.neighbours.dtype) == "uint64" and len(r.neighbours) == ds.n, r.neighbours)
    r = c.nearest(ds, progress=False)
    check(str(r.nearest.dtype) == "int64" and (r.nearest >= 0).all(), r.nearest)
    r = c.pairs_within(ds, 120, progress=False)
    check(len(r.i) == len(r.j) == len(r.d) == r.pairs and (r.i < r.j).all() and
          (r.d <= 120).all(), (r.pairs, r.i[:3]))


def main():
    with Daemon(exe(), args=["--workers", "1"]) as d:
        c = client_of(d)
        pts, ds = test_routes(c, d)
        test_trajectory(c)
        test_schema(c, ds)
        test_statistics(c, pts, ds)
        test_npz_json(c, d, ds)
        test_files(c, pts)
        test_errors(c, d, ds)
        test_ctrl_c(c, d)
    test_token()
    print("test_client: all ok")


if __name__ == "__main__":
    main()
