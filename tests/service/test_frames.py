"""test_frames.py -- datasets that carry weights, periodic boxes and several
frames (issue 10, sections 4 to 6), through the real daemon:

- an extended XYZ upload with a Lattice per frame, two frames and a weight
  column is stored (201) and GET shows its frames, box and weights; the
  same upload again answers 200 with the same id, and the same points
  without their weights are another dataset;
- a job that gives no box uses each frame's own box ("box_source":
  "dataset"), a job's box overrides it ("job"); counts and weighted sums
  are the frames' sums and g(r) is sum_f counts_f / sum_f (P_f V_shell /
  V_f), checked against the definition written here (the contract's
  minimum image per axis, binary64, each frame on its own);
- A x B: a one-frame B meets every frame of A; frame counts that do not
  pair up are refused with a sentence;
- the refusals: weights asked of a dataset that has none, r_max beyond a
  frame's half box, a malformed frame (400 naming its line) -- nothing is
  stored, and the daemon goes on;
- POST /v1/histogram with weights ("w", or [x, y, z, w] points);
- a LAMMPS dump of two frames, uploaded with ?format=lammps, is the same
  dataset as the XYZ of the same frames and boxes;
- a DCD trajectory (tests/cli/lammps/frames.dcd), uploaded as
  application/x-dcd or with ?format=dcd, is stored with its frames and
  boxes and gives the counts of the LAMMPS dump of the same frames; a
  truncated one is refused naming its last frame;
- GROMACS trajectories (tests/io/data, written by MDAnalysis): an XTC
  upload (application/x-xtc) keeps its 4 frames and boxes, and a job's
  counts and g(r) are the definition's over the values MDAnalysis decodes;
  a TRR (?format=trr) keeps its triclinic box; a cut XTC is refused with
  400 naming the frame and the byte;
- a data dir of schema 2 (fixtures/datadir-v2, written by dfaecf5) is
  migrated to schema 3 on start: its results read back exactly (the
  periodic one with its g(r) and volume), and after a restart a dataset
  of frames still has them.

usage: test_frames.py HISTD_EXE OPENAPI_YAML
"""
import json
import math
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, definition, image_d, random_points  # noqa: E402

FIXTURE_V2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "datadir-v2")
XDR_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "io", "data")

BOXES = [(10.0, 11.0, 12.0), (10.5, 10.5, 10.5)]


def frames_of(sizes, seed):
    rng = random.Random(seed)
    frames = []
    for (lx, ly, lz), n in zip(BOXES, sizes):
        # some points outside the box: coordinates need not be wrapped
        frames.append([(rng.uniform(-2, lx + 2), rng.uniform(0, ly), rng.uniform(0, lz),
                        rng.uniform(-1, 2)) for _ in range(n)])
    return frames


def extxyz(frames, boxes=BOXES, weights=True):
    out = []
    for pts, (lx, ly, lz) in zip(frames, boxes):
        props = "species:S:1:pos:R:3" + (":w:R:1" if weights else "")
        out.append("%d\nLattice=\"%r 0 0 0 %r 0 0 0 %r\" Properties=%s pbc=\"T T T\"\n"
                   % (len(pts), lx, ly, lz, props))
        for p in pts:
            out.append("Ar %r %r %r%s\n" % (p[0], p[1], p[2], " %r" % p[3] if weights else ""))
    return "".join(out)


def frame_hist(a, b, box, width, buckets):
    """counts, weighted sums, overflow and pairs of one frame (b None: self)."""
    counts, sums, over, pairs = [0] * buckets, [0.0] * buckets, 0, 0
    for i in range(len(a)):
        for j in (range(i + 1, len(a)) if b is None else range(len(b))):
            q = a[j] if b is None else b[j]
            k = math.floor(image_d(a[i], q, box) / width)
            pairs += 1
            if k < buckets:
                counts[k] += 1
                sums[k] += a[i][3] * q[3]
            else:
                over += 1
    return counts, sums, over, pairs


def expect(frames, boxes, width, buckets, b_frames=None):
    """The frames' sums, and g and coordination written out."""
    counts, sums, over, total = [0] * buckets, [0.0] * buckets, 0, 0
    density, atoms = 0.0, 0
    for f, (pts, box) in enumerate(zip(frames, boxes)):
        b = None if b_frames is None else b_frames[f if len(b_frames) > 1 else 0]
        c, s, o, p = frame_hist(pts, b, box, width, buckets)
        counts = [x + y for x, y in zip(counts, c)]
        sums = [x + y for x, y in zip(sums, s)]
        over += o
        total += p
        density += p / (box[0] * box[1] * box[2])
        atoms += len(pts)
    g, n, cum = [], [], 0
    for k in range(buckets):
        lo, hi = k * width, (k + 1) * width
        shell = 4.0 / 3.0 * math.pi * (hi ** 3 - lo ** 3)
        g.append(counts[k] / (shell * density))
        cum += counts[k]
        n.append((1.0 if b_frames else 2.0) * cum / atoms)
    return counts, sums, over, total, g, n


def close(got, want, rel=1e-12, what=""):
    for k, (x, y) in enumerate(zip(got, want)):
        check(abs(x - y) <= rel * max(abs(y), 1e-300) + 1e-300, "%s[%d]: %r, want %r" % (what, k, x, y))


def upload(d, body, ctype, query=""):
    return d.json("POST", "/v1/datasets" + query, body, {"Content-Type": ctype})


def run(d, **params):
    s, _, job = d.json("POST", "/v1/jobs", params)
    check(s == 202, (s, job))
    job = d.wait_job(job["id"])
    check(job["status"] == "succeeded", job)
    return job["result"]


def test_frames(exe):
    frames = frames_of([40, 52], seed=3)
    with Daemon(exe, args=["--workers", "1"]) as d:
        body = extxyz(frames)
        s, _, ds = upload(d, body, "chemical/x-xyz")
        check(s == 201 and ds["frames"] == 2 and ds["weighted"] is True and
              ds["box"] == [10, 11, 12] and ds["n"] == 92 and ds["bytes"] == 92 * 32 + 2 * 64,
              (s, ds))
        s, _, again = d.json("GET", "/v1/datasets/" + ds["id"])
        check(s == 200 and again == ds, again)
        s, _, same = upload(d, body, "chemical/x-xyz")
        check(s == 200 and same["id"] == ds["id"], (s, same))
        s, _, plain = upload(d, extxyz(frames, weights=False), "chemical/x-xyz")
        check(s == 201 and plain["id"] != ds["id"] and plain["weighted"] is False, plain)

        # each frame in its own box; weights only when asked
        width, buckets = 0.5, 9
        counts, sums, over, total, g, n = expect(frames, BOXES, width, buckets)
        r = run(d, dataset=ds["id"], r_max=4.5, buckets=buckets, weights=True)
        check(r["frames"] == 2 and r["box_source"] == "dataset" and r["counts"] == counts and
              r["overflow"] == over and r["total"] == total, r)
        close(r["weighted"], sums, 1e-12, "weighted")
        close(r["g"], g, 1e-12, "g")
        close(r["coordination"], n, 1e-12, "coordination")
        r = run(d, dataset=ds["id"], r_max=4.5, buckets=buckets)
        check("weighted" not in r and r["counts"] == counts, r)
        print("frames: 2 frames in their own boxes, counts, weights, g(r) as defined")

        # the job's box overrides the file's, for every frame
        job_box = [(9.5, 9.5, 9.5)] * 2
        counts, _, over, _, g, _ = expect(frames, job_box, width, buckets)
        r = run(d, dataset=ds["id"], r_max=4.5, buckets=buckets, box=[9.5])
        check(r["box_source"] == "job" and r["counts"] == counts and r["overflow"] == over, r)
        close(r["g"], g, 1e-12, "g (job box)")

        # A x B: B's one frame meets every frame of A
        rng = random.Random(9)
        b = [(rng.uniform(0, 10), rng.uniform(0, 10), rng.uniform(0, 10), rng.uniform(0, 1))
             for _ in range(15)]
        s, _, dsb = upload(d, json.dumps({"points": [list(p) for p in b]}), "application/json")
        check(s == 201 and dsb["weighted"] and dsb["frames"] == 1 and dsb["box"] is None, dsb)
        counts, sums, over, total, g, n = expect(frames, BOXES, width, buckets, b_frames=[b])
        r = run(d, dataset=ds["id"], dataset_b=dsb["id"], r_max=4.5, buckets=buckets,
                weights=True)
        check(r["frames"] == 2 and r["counts"] == counts and r["total"] == total, r)
        close(r["weighted"], sums, 1e-12, "weighted A x B")
        close(r["g"], g, 1e-12, "g A x B")
        close(r["coordination"], n, 1e-12, "coordination A x B")
        print("frames: A x B with a one-frame B, and the job's box overriding the file's")

        # refusals, each a sentence; nothing stored
        s, _, listed = d.json("GET", "/v1/datasets")
        before = len(listed["datasets"])
        refusals = [
            ({"dataset": plain["id"], "r_max": 4, "buckets": 4, "weights": True}, 422,
             "weights were asked for, but the points (A) carry none"),
            ({"dataset": ds["id"], "r_max": 5.2, "buckets": 4}, 422,
             "exceeds half the periodic box's shortest perpendicular width, 5 (frame 1's"),
            ({"dataset": dsb["id"], "dataset_b": ds["id"], "r_max": 4, "buckets": 4, "box": [10]},
             422, "the second point set (B) has 2 frames and the first (A) one"),
        ]
        three = frames_of([5, 6], seed=4) + frames_of([7], seed=5)
        s, _, ds3 = upload(d, extxyz(three, BOXES + BOXES[:1]), "chemical/x-xyz")
        check(s == 201 and ds3["frames"] == 3, ds3)
        refusals.append(({"dataset": ds["id"], "dataset_b": ds3["id"], "r_max": 4, "buckets": 4},
                         422, "A has 2 frames and B 3"))
        for body, status, sentence in refusals:
            s, _, doc = d.json("POST", "/v1/jobs", body)
            check(s == status and sentence in doc["detail"], (body, s, doc))
        bad = [
            ("".join(extxyz(frames).splitlines(True)[:-1]), "chemical/x-xyz", "",
             "line 43 announces 52 atoms, but the input ends after 51"),
            ("1\nLattice=\"1 0 0 0 1 0 0 0\"\nH 0 0 0\n", "chemical/x-xyz", "",
             "line 2: Lattice needs 9 numbers"),
            ("1\nc\nH 0 0 0 1\n1\nc\nH 0 0 0\n", "chemical/x-xyz", "",
             "line 6: frame 2 has none, frame 1 has weights"),
            ('{"points": [[1, 2, 3]], "w": [1, 2]}', "application/json", "",
             "w: has 2 values, but there are 1 points"),
            ("ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 1\n"
             "0 1\n0 1\nITEM: ATOMS x y z\n0 0 0\nITEM: TIMESTEP\n", "text/plain",
             "?format=lammps", "line 12"),
        ]
        for body, ctype, query, sentence in bad:
            s, _, doc = upload(d, body, ctype, query)
            check(s == 400 and sentence in doc["detail"], (sentence, s, doc))
        s, _, listed = d.json("GET", "/v1/datasets")
        check(len(listed["datasets"]) == before + 1, "a refused upload left a dataset behind")
        check(d.request("GET", "/healthz")[0] == 200, "the daemon is alive")
        print("frames: refusals are sentences; nothing stored half-way")

        # a LAMMPS dump of two frames, each with its box
        dump = "".join("ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n"
                       "0 %r\n0 %r\n0 %r\nITEM: ATOMS id x y z\n" % (f, len(pts), *box) +
                       "".join("%d %r %r %r\n" % (i + 1, *p[:3]) for i, p in enumerate(pts))
                       for f, (pts, box) in enumerate(zip(frames, BOXES)))
        s, _, dsl = upload(d, dump, "text/plain", "?format=lammps")
        # the same points, frames and boxes as the unweighted XYZ: the same dataset
        check(s == 200 and dsl["id"] == plain["id"] and dsl["frames"] == 2 and
              dsl["box"] == [10, 11, 12], (s, dsl))
        counts, _, over, _, g, _ = expect(frames, BOXES, width, buckets)
        r = run(d, dataset=dsl["id"], r_max=4.5, buckets=buckets)
        check(r["counts"] == counts and r["box_source"] == "dataset", r)
        close(r["g"], g, 1e-12, "g (lammps)")
        print("frames: a LAMMPS dump of two frames gives the same counts and g(r)")

        # a DCD trajectory (binary): by Content-Type or ?format=dcd, each frame's cell its box
        lammps_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cli", "lammps")
        dcd = open(os.path.join(lammps_dir, "frames.dcd"), "rb").read()
        s, _, dsd = upload(d, dcd, "application/x-dcd")
        check(s == 201 and dsd["format"] == "dcd" and dsd["frames"] == 3 and dsd["n"] == 1500 and
              abs(dsd["box"][0] - 8.3979809569125372) < 1e-6, (s, dsd))
        s, _, again = upload(d, dcd, "application/octet-stream", "?format=dcd")
        check(s == 200 and again["id"] == dsd["id"], (s, again))
        s, _, doc = upload(d, dcd[:-5], "application/x-dcd")
        check(s == 400 and "frame 3 is cut short" in doc["detail"], (s, doc))
        s, _, doc = upload(d, dcd, "application/x-dcd", "?format=dcdx")
        check(s == 400 and "lammps, dcd" in doc["detail"], (s, doc))
        dump = open(os.path.join(lammps_dir, "frames.dump")).read()
        s, _, dsl = upload(d, dump, "text/x-lammps-dump")
        check(s in (200, 201), (s, dsl))
        rd = run(d, dataset=dsd["id"], r_max=3, buckets=100)
        rl = run(d, dataset=dsl["id"], r_max=3, buckets=100)
        check(rd["counts"] == rl["counts"] and rd["box_source"] == "dataset", (rd, rl))
        print("frames: a DCD of three frames (application/x-dcd or ?format=dcd) is stored with "
              "its boxes and gives the dump's counts; a truncated one is refused naming its frame")

        # POST /v1/histogram: weights beside the points, or as their fourth number
        for body in ({"points": [[0, 0, 0], [3, 4, 0], [6, 8, 0]], "w": [1, 2, 3]},
                     {"points": [[0, 0, 0, 1], [3, 4, 0, 2], [6, 8, 0, 3]]}):
            body.update(weights=True, bucket_width=5, buckets=3)
            s, _, doc = d.json("POST", "/v1/histogram", body)
            check(s == 200 and doc["counts"] == [0, 2, 1] and doc["weighted"] == [0, 8, 3],
                  (s, doc))
        print("frames: /v1/histogram takes weights too")


def gromacs_expected(name):
    """make_xtc.py's NAME.txt: per frame (the box's 9 numbers, [x, y, z, 1])
    with the float32 values MDAnalysis decoded."""
    f32 = lambda t: struct.unpack("<f", struct.pack("<f", float(t)))[0]  # noqa: E731
    frames = []
    for line in open(os.path.join(XDR_DATA, name + ".txt")):
        w = line.split()
        if w and w[0] == "box":
            frames.append(([f32(t) for t in w[1:]], []))
        elif frames and len(w) == 3:
            frames[-1][1].append([f32(t) for t in w] + [1.0])
    return frames


def test_gromacs(exe):
    with Daemon(exe, args=["--workers", "1"]) as d:
        xtc = open(os.path.join(XDR_DATA, "water.xtc"), "rb").read()
        want = gromacs_expected("water.xtc")
        boxes = [(b[0], b[4], b[8]) for b, _ in want]
        s, _, ds = upload(d, xtc, "application/x-xtc")
        check(s == 201 and ds["format"] == "xtc" and ds["frames"] == 4 and ds["n"] == 600 and
              ds["box"] == list(boxes[0]), (s, ds))
        counts, _, over, total, g, _ = expect([p for _, p in want], boxes, 0.25, 5)
        r = run(d, dataset=ds["id"], r_max=1.25, buckets=5)
        check(r["frames"] == 4 and r["box_source"] == "dataset" and r["counts"] == counts and
              r["overflow"] == over and r["total"] == total, (r, counts))
        close(r["g"], g, 1e-12, "g (xtc)")
        trr = open(os.path.join(XDR_DATA, "water.trr"), "rb").read()
        b = gromacs_expected("water.trr")[0][0]  # triclinic: [lx, ly, lz, xy, xz, yz]
        s, _, dt = upload(d, trr, "application/octet-stream", "?format=trr")
        check(s == 201 and dt["format"] == "trr" and dt["frames"] == 3 and dt["n"] == 180 and
              dt["box"] == [b[0], b[4], b[8], b[3], b[6], b[7]], (s, dt))
        s, _, doc = upload(d, xtc[:-10], "application/x-xtc")
        check(s == 400 and "frame 4, byte 2376: the frame is cut short" in doc["detail"], (s, doc))
        print("frames: GROMACS XTC and TRR uploads keep their frames and boxes; counts and "
              "g(r) as defined")


def test_v2_data_dir(exe):
    root = tempfile.mkdtemp(prefix="histd-v2-")
    try:
        shutil.copytree(FIXTURE_V2, os.path.join(root, "data"))
        pts = random_points(40, seed=7)
        frames = frames_of([20, 30], seed=11)
        with Daemon(exe, data_dir=root, args=["--workers", "1"]) as d:
            db = sqlite3.connect("file:%s?mode=ro" % os.path.join(root, "data", "histd.db"),
                                 uri=True)
            (version,) = db.execute("PRAGMA user_version").fetchone()
            db.close()
            check(version >= 5, "schema %d after the migration" % version)
            s, _, doc = d.json("GET", "/v1/jobs/b4b972f2fd706a670c5dd024a5a2d54d/result")
            counts, overflow, total = definition(pts, 50.0, 40)
            check(s == 200 and doc["counts"] == counts and doc["overflow"] == overflow and
                  doc["total"] == total and doc["frames"] == 1, (s, doc))
            s, _, doc = d.json("GET", "/v1/jobs/395450ba76638790d976ee806f1adb23/result")
            counts, overflow, total, g, _ = periodic_one(pts, 1000.0, 50.0, 8)
            check(s == 200 and doc["counts"] == counts and doc["overflow"] == overflow and
                  doc["volume"] == 1e9 and doc["box_source"] == "job", (s, doc))
            close(doc["g"], g, 1e-12, "g of a schema-2 result")
            s, _, old = d.json("GET", "/v1/datasets/" + "357f6c6e03261222587162a8ad2e70c1dc841209e4a6782daccaaa0d0f1d0b22")
            check(s == 200 and old["frames"] == 1 and old["weighted"] is False and
                  old["box"] is None, old)
            s, _, ds = upload(d, extxyz(frames), "chemical/x-xyz")
            check(s == 201, ds)
            first = run(d, dataset=ds["id"], r_max=4.5, buckets=9, weights=True)
        with Daemon(exe, data_dir=root, args=["--workers", "1"]) as d:  # a restart
            s, _, again = d.json("GET", "/v1/datasets/" + ds["id"])
            check(s == 200 and again["frames"] == 2 and again["weighted"] and
                  again["box"] == [10, 11, 12], again)
            second = run(d, dataset=ds["id"], r_max=4.5, buckets=9, weights=True)
            for k in ("counts", "weighted", "g", "coordination", "frames", "box_source", "volume"):
                check(first[k] == second[k], "%s differs after a restart" % k)
            counts, sums, _, _, g, _ = expect(frames, BOXES, 0.5, 9)
            check(second["counts"] == counts, second)
        print("frames: a schema-2 data dir migrates to 3 and serves its results; frames, "
              "boxes and weights survive a restart")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def periodic_one(pts, L, width, buckets):
    """One frame in a cube of side L (the fixture's periodic job)."""
    frames = [[p + (0.0,) for p in pts]]
    counts, _, over, total, g, n = expect(frames, [(L, L, L)], width, buckets)
    return counts, over, total, g, n


def main():
    exe = sys.argv[1]
    test_frames(exe)
    test_gromacs(exe)
    test_v2_data_dir(exe)
    print("test_frames: all ok")


if __name__ == "__main__":
    main()
