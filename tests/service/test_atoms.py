"""test_atoms.py -- selections and exclusions through the real daemon
(issue 12, items 3, 4 and 7):

- a LAMMPS dump of two frames of a small water box (columns id mol type
  element x y z, atoms in another order in each frame) is uploaded; GET
  shows what its file said of the atoms: atoms a frame, the elements and
  types with their counts, the molecules, the last frame's box;
- an O-H job (select_a element:O, select_b element:H, exclude molecule) has
  the counts of a brute force written here (the contract's minimum image
  per axis, binary64, each frame on its own, pairs within a molecule left
  out), says how many pairs it excluded and which selections made A and B
  (with their sizes), and its g(r) is normalised by the pairs allowed;
- after a restart the result reads back the same, and a new job on the
  same dataset selects again (the topology is in the payload);
- the refusals, each a 4xx with a sentence and nothing stored: a selection
  of a kind the file does not give, exclude on a dataset without molecule
  ids, exclude with weights, a malformed selection; a selection that
  matches nothing fails its job with a sentence;
- POST /v1/histogram with an index selection of inline points;
- one selection against itself (element:O twice) is the self job, each
  pair once, `pairing` "self" (after a restart too); "pairs": "ordered"
  counts every (a, b), each atom with itself; a bad "pairs" is a 400; a
  pair list of selections that share some atoms fails with a sentence;
- "partials": "element" gives every species pair in one job, its O-O
  partial the O x O self job's counts.

usage: test_atoms.py HISTD_EXE OPENAPI_YAML
"""
import math
import os
import random
import struct
import sys
import tempfile
import shutil

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, image_d  # noqa: E402

L = (9.0, 9.5, 10.0)


def water(frames, molecules, seed):
    """Frames of `molecules` waters: (id, mol, type, element, x, y, z) rows."""
    rng = random.Random(seed)
    out = []
    for _ in range(frames):
        rows = []
        for m in range(molecules):
            o = [rng.uniform(0, L[a]) for a in range(3)]
            rows.append((3 * m + 1, m + 1, 1, "O", o[0], o[1], o[2]))
            for h in range(2):
                p = [o[a] + rng.uniform(-1, 1) for a in range(3)]
                rows.append((3 * m + 2 + h, m + 1, 2, "H", p[0], p[1], p[2]))
        rng.shuffle(rows)
        out.append(rows)
    return out


def dump(frames):
    text = []
    for t, rows in enumerate(frames):
        text.append("ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\n"
                    "ITEM: BOX BOUNDS pp pp pp\n0 %r\n0 %r\n0 %r\n"
                    "ITEM: ATOMS id mol type element x y z\n" % (t, len(rows), *L))
        text.extend("%d %d %d %s %r %r %r\n" % r for r in rows)
    return "".join(text)


def definition(frames, r_max, buckets):
    width = r_max / buckets
    counts, over, total, excluded = [0] * buckets, 0, 0, 0
    for rows in frames:
        o = [r for r in rows if r[3] == "O"]
        h = [r for r in rows if r[3] == "H"]
        for a in o:
            for b in h:
                if a[1] == b[1]:
                    excluded += 1
                    continue
                total += 1
                k = math.floor(image_d(a[4:], b[4:], L) / width)
                if k < buckets:
                    counts[k] += 1
                else:
                    over += 1
    return counts, over, total, excluded


def oo_definition(frames, r_max, buckets):
    """The O-O counts of every frame: each pair of distinct O once (the self
    job), and every ordered (a, b), each O with itself at 0 included."""
    width = r_max / buckets
    once, ordered = [0] * buckets, [0] * buckets
    for rows in frames:
        o = [r for r in rows if r[3] == "O"]
        for i, a in enumerate(o):
            for j, b in enumerate(o):
                k = math.floor(image_d(a[4:], b[4:], L) / width)
                if k < buckets:
                    ordered[k] += 1
                    once[k] += 1 if i < j else 0
    return once, ordered


def per_bin_excluded(rows, r_max, buckets):
    """The O-H pairs within a molecule, by bin (what exclusion leaves out)."""
    width = r_max / buckets
    out = [0] * buckets
    for a in rows:
        for b in rows:
            if a[3] == "O" and b[3] == "H" and a[1] == b[1]:
                k = math.floor(image_d(a[4:], b[4:], L) / width)
                if k < buckets:
                    out[k] += 1
    return out


def check_result(doc, frames, r_max, buckets):
    counts, over, total, excluded = definition(frames, r_max, buckets)
    n_o = sum(1 for r in frames[0] if r[3] == "O")
    check(doc["counts"] == counts and doc["overflow"] == over and doc["total"] == total,
          ("counts", doc["counts"], counts, doc["overflow"], over))
    check(doc["excluded"] == excluded and doc["exclude"] == "molecule", doc)
    check(doc["select_a"] == "element:O" and doc["select_b"] == "element:H", doc)
    check(doc["n"] == n_o * len(frames) and doc["n_b"] == 2 * n_o * len(frames), doc)
    vol = L[0] * L[1] * L[2]
    width = r_max / buckets
    for k in range(buckets):
        shell = 4.0 / 3.0 * math.pi * ((k + 1) ** 3 - k ** 3) * width ** 3
        want = counts[k] / (total * shell / vol)
        got = doc["g"][k]
        check(abs(got - want) <= 1e-12 * max(want, 1e-300), ("g", k, got, want))


def check_per_frame(doc, frames, r_max, buckets):
    check(doc["frames"] == len(frames) and "per_frame" in doc, doc)
    pf = doc["per_frame"]
    vol = L[0] * L[1] * L[2]
    width = r_max / buckets
    for f, rows in enumerate(frames):
        counts, over, total, excluded = definition([rows], r_max, buckets)
        check(pf["counts"][f] == counts and pf["total"][f] == total and
              pf["volume"][f] == vol, ("frame", f, pf, counts, total))
        for k in range(buckets):
            shell = 4.0 / 3.0 * math.pi * ((k + 1) ** 3 - k ** 3) * width ** 3
            want = counts[k] / (total * shell / vol)
            check(abs(pf["g"][f][k] - want) <= 1e-12 * max(want, 1e-300), ("g", f, k))


def test_atoms(exe):
    root = tempfile.mkdtemp(prefix="histd-atoms-")
    frames = water(2, 30, seed=5)
    r_max, buckets = 4.0, 16
    try:
        with Daemon(exe, data_dir=root, args=["--workers", "1"]) as d:
            s, _, ds = d.json("POST", "/v1/datasets?format=lammps", dump(frames),
                              {"Content-Type": "text/plain"})
            check(s == 201, (s, ds))
            atoms = ds["atoms"]
            check(atoms["per_frame"] == 90 and atoms["elements"] == {"H": 60, "O": 30} and
                  atoms["types"] == {"1": 30, "2": 60}, atoms)
            check(atoms["molecules"] == 30 and atoms["box_last"] == list(L), atoms)
            s, _, got = d.json("GET", "/v1/datasets/" + ds["id"])
            check(s == 200 and got["atoms"] == atoms, got)
            job = d.submit(ds["id"], r_max=r_max, buckets=buckets, select_a="element:O",
                           select_b="element:H", exclude="molecule")
            check(job["params"]["select_a"] == "element:O" and
                  job["params"]["exclude"] == "molecule", job)
            done = d.wait_job(job["id"])
            check(done["status"] == "succeeded", done)
            s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
            check(s == 200, (s, res))
            check_result(res, frames, r_max, buckets)

            # frames 1: of the two (the second) with its own table
            job2 = d.submit(ds["id"], r_max=r_max, buckets=buckets, select_a="element:O",
                            select_b="element:H", exclude="molecule", frames="1:",
                            per_frame=True)
            check(d.wait_job(job2["id"])["status"] == "succeeded", job2)
            s, _, res2 = d.json("GET", "/v1/jobs/%s/result" % job2["id"])
            check_per_frame(res2, frames[1:], r_max, buckets)

            # a trajectory without names takes another dataset's: the same
            # frames as raw float64 (one frame), named by an XYZ of frame 0
            rows = sorted(frames[0], key=lambda r: r[0])  # by id, as the dump's are
            raw = b"".join(struct.pack("<3d", r[4], r[5], r[6]) for r in rows)  # x y z triples
            s, _, bare = d.json("POST", "/v1/datasets?format=f64", raw,
                                {"Content-Type": "application/x-float64"})
            xyz = "%d\nnames\n" % len(rows) + "".join("%s %r %r %r\n" % (r[3], r[4], r[5], r[6])
                                                     for r in rows)
            s2, _, names = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
            check(s in (200, 201) and s2 in (200, 201), (s, bare, s2, names))
            job3 = d.submit(bare["id"], r_max=r_max, buckets=buckets, topology=names["id"],
                            select_a="element:O", select_b="element:H", box=list(L))
            check(d.wait_job(job3["id"])["status"] == "succeeded", job3)
            s, _, res3 = d.json("GET", "/v1/jobs/%s/result" % job3["id"])
            counts, over, total, excluded = definition([frames[0]], r_max, buckets)
            check(res3["counts"] == [c + e for c, e in zip(counts, per_bin_excluded(frames[0], r_max, buckets))],
                  ("the names of another dataset", res3["counts"]))
            s, _, four = d.json("POST", "/v1/datasets", "4\n\nO 0 0 0\nH 1 0 0\nH 0 1 0\nO 5 5 5\n",
                                {"Content-Type": "chemical/x-xyz"})
            for topo, says in [(four["id"], "same system"), (bare["id"], "names no atoms")]:
                s, _, doc = d.json("POST", "/v1/jobs", {"dataset": bare["id"], "r_max": 1,
                                                        "buckets": 2, "topology": topo})
                check(s == 422 and says in doc["detail"], (s, doc))

            # progress counts frames: a slow job over 12 frames, seen running
            rng = random.Random(2)
            xyz = "".join("1500\nLattice=\"30 0 0 0 30 0 0 0 30\"\n" +
                          "".join("Ar %r %r %r\n" % (rng.uniform(0, 30), rng.uniform(0, 30),
                                                      rng.uniform(0, 30)) for _ in range(1500))
                          for _ in range(12))
            s, _, many = d.json("POST", "/v1/datasets", xyz, {"Content-Type": "chemical/x-xyz"})
            slow = d.submit(many["id"], r_max=10, buckets=20, kernel="cpu-reference")
            running = d.wait_running(slow["id"])
            fr = running.get("frames", {})
            check(fr.get("total") == 12 and 0 <= fr.get("done", -1) <= 12 and
                  fr["done"] == int(running["progress"] * 12), ("frames done", running))
            check(d.wait_job(slow["id"])["status"] == "succeeded", "the slow job ends")

            # one selection against itself: the self job (each O-O pair once,
            # none with itself); "ordered" every (a, b), each O with itself
            oo_job = d.submit(ds["id"], r_max=r_max, buckets=buckets, select_a="element:O",
                              select_b="element:O")
            ord_job = d.submit(ds["id"], r_max=r_max, buckets=buckets, select_a="element:O",
                               select_b="element:O", pairs="ordered")
            check(d.wait_job(oo_job["id"])["status"] == "succeeded" and
                  d.wait_job(ord_job["id"])["status"] == "succeeded", (oo_job, ord_job))
            s, _, oo = d.json("GET", "/v1/jobs/%s/result" % oo_job["id"])
            s2, _, od = d.json("GET", "/v1/jobs/%s/result" % ord_job["id"])
            want_oo, want_od = oo_definition(frames, r_max, buckets)
            check(s == 200 and oo["pairing"] == "self" and oo["counts"] == want_oo and
                  oo["total"] == 2 * (30 * 29 // 2) and "n_b" not in oo, ("O x O", oo))
            check(s2 == 200 and od["pairing"] == "ordered" and od["counts"] == want_od and
                  od["total"] == 2 * 30 * 30 and od["n_b"] == 60, ("O x O ordered", od))
            s, _, doc = d.json("POST", "/v1/jobs", {"dataset": ds["id"], "r_max": 1, "buckets": 2,
                                                    "select_a": "element:O",
                                                    "select_b": "element:O", "pairs": "both"})
            check(400 <= s < 500 and "distinct" in doc.get("detail", ""), (s, doc))
            # every species pair in one job: its O-O partial is the O x O self job
            pj = d.submit(ds["id"], r_max=r_max, buckets=buckets, partials="element")
            check(d.wait_job(pj["id"])["status"] == "succeeded", pj)
            s, _, pr = d.json("GET", "/v1/jobs/%s/result" % pj["id"])
            part = pr.get("partial", {})
            check(s == 200 and pr.get("species") == "H,O" and part.get("a") == ["H", "H", "O"] and
                  part["counts"][2] == oo["counts"] and part["total"][2] == oo["total"] and
                  [sum(c[k] for c in part["counts"]) for k in range(buckets)] == pr["counts"],
                  ("partials", pr))
            # a pair list of selections that share some atoms: the job fails, saying why
            job = d.submit(ds["id"], pairs_within=1.0, select_a="element:O", select_b="all")
            done = d.wait_job(job["id"])
            check(done["status"] == "failed" and "share" in done.get("error", ""), done)

            # the refusals: 4xx, a sentence, no job
            plain = d.upload([(0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (2.0, 0.5, 0.0)], "json")
            for body, says in [
                ({"dataset": plain["id"], "r_max": 1, "buckets": 2, "select_a": "element:O"},
                 "gives its atoms no element"),
                ({"dataset": plain["id"], "r_max": 1, "buckets": 2, "exclude": "molecule"},
                 "molecule ids"),
                ({"dataset": ds["id"], "r_max": 1, "buckets": 2, "select_a": "colour:red"},
                 "KIND:LIST"),
                ({"dataset": ds["id"], "r_max": 1, "buckets": 2, "exclude": "residue"},
                 "molecule"),
                ({"dataset": ds["id"], "r_max": 1, "buckets": 2, "frames": "2:1"}, "STOP"),
                ({"dataset": ds["id"], "r_max": 1, "buckets": 2, "frames": "x"}, "START:STOP"),
                ({"dataset": plain["id"], "r_max": 1, "buckets": 2, "partials": "element"},
                 "need the atoms' element"),
                ({"dataset": ds["id"], "r_max": 1, "buckets": 2, "partials": "type",
                  "select_b": "type:1"}, "one set"),
                ({"dataset": ds["id"], "r_max": 1, "buckets": 2, "partials": "colour"},
                 "element, type, name or resname"),
            ]:
                s, _, doc = d.json("POST", "/v1/jobs", body)
                check(400 <= s < 500 and says in doc.get("detail", ""), (body, s, doc))
            # a selection that matches nothing: the job fails, saying why
            job = d.submit(ds["id"], r_max=1, buckets=2, select_a="type:7")
            done = d.wait_job(job["id"])
            check(done["status"] == "failed" and "matches none" in done.get("error", ""), done)
            # inline points, an index selection
            s, _, doc = d.json("POST", "/v1/histogram",
                               {"points": [[0, 0, 0], [1, 0, 0], [3, 0, 0], [7, 0, 0]],
                                "bucket_width": 1, "buckets": 8, "select_a": "index:0-2"})
            check(s == 200 and doc["n"] == 3 and doc["counts"][1] == 1 and
                  doc["counts"][2] == 1 and doc["counts"][3] == 1 and
                  doc["select_a"] == "index:0-2", (s, doc))
        with Daemon(exe, data_dir=root, args=["--workers", "1"]) as d:  # a restart
            s, _, again = d.json("GET", "/v1/jobs/%s/result" % oo_job["id"])
            check(s == 200 and again["pairing"] == "self" and again["counts"] == oo["counts"],
                  ("O x O after a restart", again))
            s, _, res = d.json("GET", "/v1/jobs/%s/result" % job_id_of(d, "element:O"))
            check(s == 200, (s, res))
            check_result(res, frames, r_max, buckets)
            job = d.submit(ds["id"], r_max=r_max, buckets=buckets, select_a="element:O",
                           select_b="element:H", exclude="molecule")
            check(d.wait_job(job["id"])["status"] == "succeeded", job)
            s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
            check_result(res, frames, r_max, buckets)
            s, _, again = d.json("GET", "/v1/jobs/%s/result" % job2["id"])
            check(s == 200 and again["per_frame"] == res2["per_frame"], "per_frame survives")
    finally:
        shutil.rmtree(root, ignore_errors=True)


def job_id_of(d, select_a):
    """The newest succeeded O-H job that selected select_a from every frame."""
    s, _, doc = d.json("GET", "/v1/jobs")
    for j in doc["jobs"]:
        if (j["params"].get("select_a") == select_a and
                j["params"].get("select_b") == "element:H" and "frames" not in j["params"] and
                "topology" not in j["params"] and j["status"] == "succeeded"):
            return j["id"]
    raise AssertionError("no job selected %s: %s" % (select_a, doc))


def main():
    test_atoms(sys.argv[1])
    print("test_atoms: all ok")


if __name__ == "__main__":
    main()
