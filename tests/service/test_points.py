"""test_points.py -- the other two shapes of a 2-body statistic through the
daemon: a value per point (per_point: neighbours within R; nearest) and a
record per pair (pairs_within: the distance join), against brute forces
written here from the contract (Python floats are binary64; the
distance's operations are written one at a time, as the contract rounds
them).

- per point, self and A x B, open and periodic, one frame and several:
  JSON, CSV and npz hold the same rows, equal to the brute force;
- nearest within R and anywhere, ties to the lowest index;
- pairs_within over two frames: the list is the brute force's set (JSON,
  CSV and npz), i < j, its file is in the data dir, it survives a
  restart, DELETE of the result removes it, and its bytes count;
- per_point_histogram over two periodic frames: each point's counts, below
  and partners, the whole result's column sums and g (JSON, CSV, npz, and
  the stored result after a restart) = the brute force's;
- --max-pairs-bytes refuses a longer list before a pair is written, with
  a sentence naming both sizes; /v1/histogram refuses pairs_within and
  answers per_point; malformed combinations get 400 with a sentence.

usage: test_points.py HISTD_EXE
"""
import csv
import io
import json
import math
import os
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, csv_table, random_points  # noqa: E402


def dist(a, b, box=None):
    """The contract's d: per axis dx = a - b (wrapped by nearbyint in a box),
    then (dx*dx + dy*dy) + dz*dz, then sqrt; each operation rounded alone."""
    s = []
    for k in range(3):
        dx = a[k] - b[k]
        if box is not None:
            dx = dx - box[k] * round(dx / box[k])  # round: half to even, as nearbyint
        s.append(dx * dx)
    return math.sqrt((s[0] + s[1]) + s[2])


def npz_arrays(data):
    import numpy as np
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def test_per_point(d, pts, pts_b, ds, ds_b):
    R = 130.0
    for b, dsb in ((None, None), (pts_b, ds_b)):
        params = {"within": R, "per_point": True}
        if dsb is not None:
            params["dataset_b"] = dsb
        job = d.wait_job(d.submit(ds, **params)["id"])
        check(job["status"] == "succeeded", job)
        other = b if b is not None else pts
        want = [sum(1 for j, q in enumerate(other) if (b is not None or j != i)
                    and dist(p, q) <= R) for i, p in enumerate(pts)]
        s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
        check(s == 200 and res["statistic"] == "per_point" and res["neighbours"] == want and
              res["index"] == list(range(len(pts))) and res["radius"] == R,
              ("per point", dsb, res.get("neighbours", [])[:5], want[:5]))
        s, _, body = d.request("GET", "/v1/jobs/%s/result?format=csv" % job["id"])
        rows = list(csv.reader(io.StringIO("\n".join(csv_table(body)))))
        check(rows[0] == ["index", "neighbours"] and
              [int(r[1]) for r in rows[1:]] == want, rows[:3])
        s, _, body = d.request("GET", "/v1/jobs/%s/result?format=npz" % job["id"])
        z = npz_arrays(body)
        check(z["neighbours"].tolist() == want and str(z["neighbours"].dtype) == "uint64",
              "npz neighbours")
    # periodic, weighted, two frames (an extended XYZ of two frames of 60 atoms)
    L = 10.0
    frames = [random_points(60, seed=s, box=L) for s in (11, 12)]
    w = [0.5 + (i % 4) * 0.25 for i in range(60)]
    xyz = "".join('60\nLattice="%g 0 0 0 %g 0 0 0 %g" Properties=species:S:1:pos:R:3:w:R:1\n'
                  % (L, L, L) + "".join("Ar %r %r %r %r\n" % (p + (w[i],))
                                        for i, p in enumerate(f)) for f in frames)
    s, _, traj = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
    check(s == 201 and traj["frames"] == 2, (s, traj))
    job = d.wait_job(d.submit(traj["id"], within=2.5, per_point=True, weights=True)["id"])
    s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
    box = (L, L, L)
    want = [[sum(1 for j, q in enumerate(f) if j != i and dist(p, q, box) <= 2.5)
             for i, p in enumerate(f)] for f in frames]
    wsum = [[math.fsum(w[j] for j, q in enumerate(f) if j != i and dist(p, q, box) <= 2.5)
             for i, p in enumerate(f)] for f in frames]
    check(s == 200 and res["frames"] == 2 and res["neighbours"] == want and
          all(abs(a - b) <= 1e-12 * max(1.0, b) for ra, rb in zip(res["neighbour_weights"], wsum)
              for a, b in zip(ra, rb)), ("periodic frames", res.get("neighbours")))
    print("per point: self and A x B, periodic frames, weights: JSON, CSV, npz = brute force")
    return traj


def test_nearest(d, pts, ds):
    for within in (None, 40.0):
        params = {"nearest": True}
        if within is not None:
            params["within"] = within
        job = d.wait_job(d.submit(ds, **params)["id"])
        s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
        want_j, want_d = [], []
        for i, p in enumerate(pts):
            best = None
            for j, q in enumerate(pts):
                if j == i:
                    continue
                dd = dist(p, q)
                if (within is None or dd <= within) and (best is None or dd < best[0]):
                    best = (dd, j)  # ties: the first (lowest) index stays
            want_j.append(best[1] if best else -1)
            want_d.append(best[0] if best else None)
        check(s == 200 and res["nearest"] == want_j and res["nearest_d"] == want_d,
              ("nearest", within, res.get("nearest", [])[:5], want_j[:5]))
    print("nearest: anywhere and within R (none: -1 and null) = brute force")


def pairs_want(frames, R, box):
    out = set()
    for f, pts in enumerate(frames):
        for i in range(len(pts)):
            for j in range(i + 1, len(pts)):
                dd = dist(pts[i], pts[j], box)
                if dd <= R:
                    out.add((f, i, j, dd))
    return out


def test_pairs(d, traj, data_dir):
    L = 10.0
    frames = [random_points(60, seed=s, box=L) for s in (11, 12)]
    want = pairs_want(frames, 2.0, (L, L, L))
    job = d.wait_job(d.submit(traj["id"], pairs_within=2.0)["id"])
    check(job["status"] == "succeeded", job)
    jid = job["id"]
    s, _, res = d.json("GET", "/v1/jobs/%s/result" % jid)
    got = set(zip(res["frame"], res["i"], res["j"], res["d"]))
    check(s == 200 and res["pairs"] == len(want) and got == want and
          len(res["i"]) == len(want) and all(i < j for i, j in zip(res["i"], res["j"])) and
          sum(res["per_frame"]["pairs"]) == len(want), ("pairs JSON", len(got), len(want)))
    s, _, body = d.request("GET", "/v1/jobs/%s/result?format=csv" % jid)
    rows = list(csv.reader(io.StringIO("\n".join(csv_table(body)))))
    check(rows[0] == ["frame", "i", "j", "d"] and
          {(int(a), int(b), int(c), float(e)) for a, b, c, e in rows[1:]} == want, rows[:3])
    s, _, body = d.request("GET", "/v1/jobs/%s/result?format=npz" % jid)
    z = npz_arrays(body)
    check(set(zip(z["frame"].tolist(), z["i"].tolist(), z["j"].tolist(), z["d"].tolist())) ==
          want, "npz pairs")
    path = os.path.join(data_dir, "pairs", jid)
    check(os.path.getsize(path) == 16 * len(want), "the list's file: 16 bytes a pair")
    print("pairs_within over two frames: JSON, CSV, npz = the brute force's set; "
          "its file in the data dir, 16 bytes a pair")
    return jid, want


def hist_want(frames, edges, box):
    """Each point's counts in [E[k], E[k+1]) over every frame (bisect on the
    edges: the test's own rule), below E[0], and its partners."""
    import bisect
    n, count = len(frames[0]), len(edges) - 1
    rows, below, partners = [[0] * count for _ in range(n)], [0] * n, [0] * n
    for pts in frames:
        for i in range(n):
            for j in range(n):
                if j == i:
                    continue
                k = bisect.bisect_right(edges, dist(pts[i], pts[j], box)) - 1
                partners[i] += 1
                if k < 0:
                    below[i] += 1
                elif k < count:
                    rows[i][k] += 1
    return rows, below, partners


def test_point_histogram(d, traj):
    L = 10.0
    frames = [random_points(60, seed=s, box=L) for s in (11, 12)]
    edges = [0.5, 1.0, 2.0, 3.0, 4.5]
    rows, below, partners = hist_want(frames, edges, (L, L, L))
    job = d.wait_job(d.submit(traj["id"], edges=edges, per_point_histogram=True)["id"])
    check(job["status"] == "succeeded", job)
    s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
    pt = res.get("point", {})
    total = sum(partners)
    sums = [sum(r[k] for r in rows) for k in range(4)]
    check(s == 200 and res["statistic"] == "per_point_histogram" and pt["counts"] == rows and
          pt["below"] == below and pt["partners"] == partners and res["counts"] == sums and
          res["total"] == total and res["below"] == sum(below) and
          res["overflow"] == total - sum(below) - sum(sums) and res["index"] == list(range(60)),
          ("per-point histogram", s, pt.get("counts", [])[:2], rows[:2]))
    # g of a point: its counts over its partners' expectation, V the volume
    shell = [4 / 3 * math.pi * (edges[k + 1] ** 3 - edges[k] ** 3) for k in range(4)]
    g = [[rows[i][k] / (partners[i] * shell[k] / L ** 3) for k in range(4)] for i in range(60)]
    check(all(abs(a - b) <= 1e-12 * max(1, b) for ra, rb in zip(pt["g"], g)
              for a, b in zip(ra, rb)), ("point g", pt["g"][0], g[0]))
    s, _, body = d.request("GET", "/v1/jobs/%s/result?format=csv" % job["id"])
    text = body.decode()
    section = text[text.index("# [point]\n") + len("# [point]\n"):].splitlines()
    head = section[0].split(",")
    got = {}
    for line in section[1:]:
        if not line or line.startswith("#"):
            break
        r = dict(zip(head, line.split(",")))
        got[(int(r["point"]), int(r["bucket"]))] = int(r["point_count"])
    check(got == {(i, k): rows[i][k] for i in range(60) for k in range(4)},
          ("CSV [point]", head, list(got.items())[:3]))
    s, _, body = d.request("GET", "/v1/jobs/%s/result?format=npz" % job["id"])
    z = npz_arrays(body)
    check(z["point.counts"].shape == (60, 4) and z["point.counts"].tolist() == rows and
          z["point.partners"].tolist() == partners, "npz point.counts")
    print("per_point_histogram: two periodic frames, each point's counts, below, partners "
          "and g, the whole's sums: JSON, CSV, npz = brute force")
    return job["id"], rows


def test_refusals(d, ds):
    for body, why in (({"within": 10, "per_point": True, "bucket_width": 5}, "cannot be combined"),
                      ({"per_point": True}, "give within"),
                      ({"pairs_within": 10, "within": 5}, "cannot be combined"),
                      ({"pairs_within": 0}, "pairs_within must be"),
                      ({"nearest": True, "per_point": True, "within": 3}, "cannot be combined"),
                      ({"nearest": True, "weights": True}, "does not take weights"),
                      ({"per_point_histogram": True, "within": 3}, "cannot be combined"),
                      ({"per_point_histogram": True, "bucket_width": 3}, "number of bins"),
                      ({"per_point_histogram": True, "r_max": 9, "buckets": 3, "blocks": 2},
                       "does not go with blocks"),
                      ({"per_point_histogram": True, "r_max": 9, "buckets": 3, "weights": True},
                       "does not take weights")):
        body["dataset"] = ds
        s, _, doc = d.json("POST", "/v1/jobs", body)
        check(s in (400, 422) and why in doc["detail"], (body, s, doc))
    pts = [[0, 0, 0], [1, 0, 0], [0, 2, 0]]
    s, _, doc = d.json("POST", "/v1/histogram", {"points": pts, "pairs_within": 3})
    check(s == 400 and "submit it as a job" in doc["detail"], (s, doc))
    s, _, doc = d.json("POST", "/v1/histogram", {"points": pts, "within": 1.5, "per_point": True})
    check(s == 200 and doc["neighbours"] == [1, 1, 0], (s, doc))
    print("refusals: sentences for the combinations that make no sense; /v1/histogram's")


def main():
    exe = sys.argv[1]
    pts, pts_b = random_points(180, seed=3), random_points(90, seed=4)
    with tempfile.TemporaryDirectory() as root:
        data_dir = os.path.join(root, "data")  # the daemon's (Daemon runs it in root/data)
        with Daemon(exe, data_dir=root, args=["--workers", "1"]) as d:
            ds, ds_b = d.upload(pts)["id"], d.upload(pts_b)["id"]
            traj = test_per_point(d, pts, pts_b, ds, ds_b)
            test_nearest(d, pts, ds)
            jid, want = test_pairs(d, traj, data_dir)
            hid, rows = test_point_histogram(d, traj)
            test_refusals(d, ds)
        # the list survives a restart; DELETE of the result takes its file
        with Daemon(exe, data_dir=root, args=["--workers", "1"]) as d:
            s, _, res = d.json("GET", "/v1/jobs/%s/result" % jid)
            check(s == 200 and set(zip(res["frame"], res["i"], res["j"], res["d"])) == want,
                  "pairs after a restart")
            s, _, res = d.json("GET", "/v1/jobs/%s/result" % hid)
            check(s == 200 and res["point"]["counts"] == rows, "a per-point histogram stored")
            s, _, _ = d.json("DELETE", "/v1/jobs/%s/result" % jid)
            check(s == 204 and not os.path.exists(os.path.join(data_dir, "pairs", jid)),
                  ("DELETE of a pair list", s))
        # a list past --max-pairs-bytes fails before a pair is written
        with Daemon(exe, data_dir=root, args=["--workers", "1", "--max-pairs-bytes", "1k"]) as d:
            job = d.wait_job(d.submit(d.upload(pts)["id"], pairs_within=300)["id"])
            check(job["status"] == "failed" and "bytes" in job["error"] and "1024" in job["error"],
                  job)
            left = [f for f in os.listdir(os.path.join(data_dir, "pairs"))]
            check(left == [], ("nothing kept of a refused list", left))
            print("--max-pairs-bytes: %s" % job["error"])
    print("test_points: all ok")


if __name__ == "__main__":
    main()
