"""test_jackknife.py -- each jackknife region's counts ("jackknife": true).

Two weighted sky catalogues with region columns (D: regions 0-4; R:
regions 0-5, region 2 empty, so that R = 6 and some pieces are empty),
counted through the daemon, each checked against a NumPy brute force of
the stated rules, computed here from the catalogues' columns:

- the points: u = (cos d cos r, cos d sin r, sin d), r = ra fl(pi/180),
  d = dec fl(pi/180), x = dist u;
- (r_p, pi) about the pair's midpoint: s = x_i - x_j, l = x_i + x_j,
  pi = |s.l| / sqrt(l.l), r_p = sqrt(max(s.s - pi^2, 0)), dot products
  (a0 b0 + a1 b1) + a2 b2;
- (s, mu): s = sqrt(s.s), mu = pi / s;
- theta: the chord |u_i - u_j| in chord edges 2 sin(theta fl(pi/180) / 2);
- the jackknife rule: a pair of regions a and b adds to region a's row and,
  if b != a, to region b's; region k's pairs are those with a point in k.

Every count is exact; the weighted sums within 1e-12. DD in (r_p, pi), DR in
(s, mu) (A x B) and DD in theta; the CSV's and npz's jackknife tables; the
stored result after a restart; and the refusals (a catalogue without
regions, a Cartesian dataset, per_frame, partials), each a 4xx with a
sentence.

usage: test_jackknife.py HISTD_EXE
"""
import csv
import io
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, csv_table  # noqa: E402

try:
    import numpy as np
except ImportError:
    print("SKIP: numpy is not installed")
    sys.exit(77)

RAD = math.pi / 180


def catalogue(rng, n, regions, skip=None):
    ra = rng.uniform(10, 50, n)
    dec = rng.uniform(-15, 15, n)
    dist = rng.uniform(200, 260, n)
    w = rng.uniform(0.5, 2.0, n)
    reg = rng.integers(0, regions, n)
    if skip is not None:
        reg[reg == skip] = regions - 1
    return ra, dec, dist, w, reg


def clumps(rng, n, k):
    """k clumps of the sky, 90 / k degrees wide and far apart: k-means on
    them (?regions=K) gives each clump its own region, and a point of
    another catalogue in the same clumps takes its clump's region by the
    nearest centre (?regions_like=): how the test knows the labels, up to
    their order."""
    which = rng.integers(0, k, n)
    ra = which * (360.0 / k) + rng.uniform(0, 90.0 / k, n)
    dec = rng.uniform(-10, 10, n)
    return ra, dec, rng.uniform(200, 260, n), rng.uniform(0.5, 2.0, n), which


def same_rows(got, ref):
    """Whether the regions' rows are the same, up to the regions' order."""
    def key(rows):
        return sorted(tuple(np.ravel(r).tolist()) for r in rows)
    return key(got) == key(ref)


def upload_query(d, cat, query, region_column=True):
    ra, dec, dist, w, reg = cat
    head = "ra,dec,dist,w" + (",region" if region_column else "")
    body = head + "\n" + "".join(
        "%r,%r,%r,%r%s\n" % (float(ra[i]), float(dec[i]), float(dist[i]), float(w[i]),
                             ",%d" % int(reg[i]) if region_column else "")
        for i in range(len(ra)))
    return d.json("POST", "/v1/datasets?format=sky-csv" + query, body,
                  {"Content-Type": "text/csv"})


def upload(d, cat):
    ra, dec, dist, w, reg = cat
    body = "ra,dec,dist,w,region\n" + "".join(
        "%r,%r,%r,%r,%d\n" % (float(ra[i]), float(dec[i]), float(dist[i]), float(w[i]), int(reg[i])) for i in range(len(ra)))
    s, _, doc = d.json("POST", "/v1/datasets?format=sky-csv", body, {"Content-Type": "text/csv"})
    check(s in (200, 201) and doc.get("regions") == int(reg.max()) + 1, (s, doc))
    return doc["id"]


def units(cat):
    ra, dec = cat[0] * RAD, cat[1] * RAD
    cd = np.cos(dec)
    return np.stack([cd * np.cos(ra), cd * np.sin(ra), np.sin(dec)], 1)


def dot(a, b):
    return (a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1]) + a[:, 2] * b[:, 2]


def pairs(na, nb):
    if nb is None:
        return np.triu_indices(na, 1)
    i, j = np.meshgrid(np.arange(na), np.arange(nb), indexing="ij")
    return i.ravel(), j.ravel()


def brute(stat, ca, cb, edges, n2=None, max2=None):
    """(slot of each pair or -1, i, j): the stated rules, binned."""
    ua = units(ca)
    ub = ua if cb is None else units(cb)
    i, j = pairs(len(ua), None if cb is None else len(ub))
    edges = np.asarray(edges, dtype=np.float64)
    if stat == "theta":
        dx = ua[i] - ub[j]
        u = np.sqrt(dot(dx, dx))
        k2, ok2 = np.zeros(len(i), dtype=np.int64), np.ones(len(i), dtype=bool)
        chords = np.array([2 * math.sin((t * RAD) * 0.5) for t in edges])
        edges, n2 = chords, 1
    else:
        xa = ca[2][:, None] * ua
        xb = xa if cb is None else cb[2][:, None] * ub
        s, l = xa[i] - xb[j], xa[i] + xb[j]
        pi = np.abs(dot(s, l)) / np.sqrt(dot(l, l))
        ss = dot(s, s)
        if stat == "rp_pi":
            u = np.sqrt(np.maximum(ss - pi * pi, 0))
            ok2 = pi < max2
            k2 = np.floor(pi / (max2 / n2)).astype(np.int64)
        else:
            u = np.sqrt(ss)
            mu = np.where(ss > 0, pi / np.where(ss > 0, u, 1), 0)
            ok2 = mu <= max2
            k2 = np.minimum(np.floor(mu / (max2 / n2)).astype(np.int64), n2 - 1)
    k1 = np.searchsorted(edges, u, side="right") - 1
    ok = ok2 & (k1 >= 0) & (k1 < len(edges) - 1)
    slot = np.where(ok, k1 * n2 + np.where(ok2, k2, 0), -1)
    return slot, i, j


def want(stat, ca, cb, edges, n2=None, max2=None):
    """Counts, weighted sums, each region's counts, weighted sums and pairs."""
    slot, i, j = brute(stat, ca, cb, edges, n2, max2)
    slots = (len(edges) - 1) * (n2 or 1)
    wb, rb = (ca[3], ca[4]) if cb is None else (cb[3], cb[4])
    wp = ca[3][i] * wb[j]
    ra, rbj = ca[4][i], rb[j]
    regions = int(max(ca[4].max(), rb.max())) + 1
    ok = slot >= 0
    counts = np.bincount(slot[ok], minlength=slots)
    sums = [math.fsum(wp[ok & (slot == s)]) for s in range(slots)]
    rc = np.zeros((regions, slots), dtype=np.int64)
    rw = np.zeros((regions, slots))
    rt = np.zeros(regions, dtype=np.int64)
    for k in range(regions):
        m = (ra == k) | (rbj == k)
        rt[k] = int(m.sum())
        rc[k] = np.bincount(slot[m & ok], minlength=slots)
        rw[k] = [math.fsum(wp[m & ok & (slot == s)]) for s in range(slots)]
    return counts, np.array(sums), rc, rw, rt


def close(got, ref, name):
    got, ref = np.asarray(got, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    bad = np.abs(got - ref) > 1e-12 * np.maximum(np.abs(ref), 1e-300)
    check(got.shape == ref.shape and not bad.any(),
          "%s: %s, the definition %s" % (name, got[bad][:3], ref[bad][:3]))


def result(d, job_id, fmt=None):
    s, _, body = d.request("GET", "/v1/jobs/%s/result%s" % (job_id, "?format=" + fmt if fmt else ""))
    check(s == 200, (s, body[:200]))
    return body


def run(d, ds, name, expect, ca=None, cb=None, **params):
    job = d.wait_job(d.submit(ds, jackknife=True, weights=True, **params)["id"])
    check(job["status"] == "succeeded", (name, job))
    r = json.loads(result(d, job["id"]))
    counts, sums, rc, rw, rt = expect
    regions = len(rt)
    got = np.asarray(r["counts"]).reshape(-1)
    check(np.array_equal(got, counts), "%s: counts %s, the definition %s" % (name, got, counts))
    close(np.asarray(r["weighted"]).reshape(-1), sums, name + ": weighted")
    check(r["regions"] == regions, (name, r.get("regions")))
    jk = r["jackknife"]
    check(np.array_equal(np.asarray(jk["total"]), rt),
          "%s: each region's pairs %s, the definition %s" % (name, jk["total"], rt.tolist()))
    got = np.asarray(jk["counts"])
    check(got.shape == rc.shape and np.array_equal(got, rc),
          "%s: each region's counts differ from the definition in %s" % (
              name, np.argwhere(got != rc)[:3].tolist() if got.shape == rc.shape else got.shape))
    close(jk["weighted"], rw, name + ": each region's weighted sums")
    # each region's points and their weights' sums (a leave-one-out normalisation's)
    for side, cat in (("a", ca), ("b", cb)) if ca is not None else ():
        if cat is None:
            check("n_%s" % side not in jk, (name, "n_b of a self job"))
            continue
        reg, w = cat[4], cat[3]
        check(jk["n_" + side] == [int((reg == k).sum()) for k in range(regions)],
              (name, "n_" + side, jk["n_" + side]))
        close(jk["w_" + side], [math.fsum(w[reg == k]) for k in range(regions)], name + " w")
        close(jk["ww_" + side], [math.fsum(w[reg == k] ** 2) for k in range(regions)],
              name + " ww")
    print("ok - %s: %d regions, %d pairs in bins, exact" % (name, regions, int(counts.sum())))
    # npz: regions x slots
    with np.load(io.BytesIO(result(d, job["id"], "npz")), allow_pickle=False) as z:
        check(np.array_equal(z["jackknife.counts"], rc), (name, "npz", z["jackknife.counts"].shape))
        close(z["jackknife.weighted"], rw, name + ": npz")
    # CSV: a row a region and bin
    lines = result(d, job["id"], "csv").decode().splitlines()
    at = lines.index("# [jackknife]")
    rows = list(csv.DictReader(io.StringIO("\n".join(lines[at + 1:]))))
    slots = rc.shape[1]
    n2 = r.get("buckets2") or 1
    check(len(rows) == regions * slots and all(
        int(row["region_count"]) == rc[int(row["region"]),
                                        int(row["bucket"]) * n2 + int(row.get("bucket2") or 0)]
        for row in rows), (name, "csv", rows[:2]))
    return job["id"], r


def main():
    exe = sys.argv[1]
    rng = np.random.default_rng(20261128)
    D = catalogue(rng, 220, 5)
    R = catalogue(rng, 260, 6, skip=2)
    rp_edges = [math.exp(math.log(2) + k * (math.log(80) - math.log(2)) / 5) for k in range(5)]
    rp_edges.append(80.0)
    with tempfile.TemporaryDirectory() as tmp, Daemon(exe, data_dir=tmp) as d:
        ds_d, ds_r = upload(d, D), upload(d, R)
        kept, before = run(d, ds_d, "DD(r_p, pi) midpoint", want("rp_pi", D, None, rp_edges, 4, 40.0),
                           D, None,
                           statistic="rp_pi", rp_edges=rp_edges, pi_max=40, pi_bins=4,
                           los="midpoint")
        # what the rule promises: without region k's galaxies, the counts are
        # the total less region k's row (counted here on the catalogue less them)
        for k in (1, 4):
            keep = D[4] != k
            less = tuple(col[keep] for col in D)
            alone = want("rp_pi", less, None, rp_edges, 4, 40.0)[0]
            got = np.asarray(before["counts"]).reshape(-1) - np.asarray(before["jackknife"]["counts"][k])
            check(np.array_equal(got, alone), "without region %d: %s, counted %s" % (k, got, alone))
        print("ok - the counts without a region are the total less its row")
        run(d, ds_d, "DR(s, mu) midpoint", want("s_mu", D, R, rp_edges, 5, 1.0), D, R,
            statistic="s_mu", edges=rp_edges, mu_bins=5, los="midpoint", dataset_b=ds_r)
        deg = [0.5, 1, 2, 4, 8, 16]
        run(d, ds_d, "DD(theta)", want("theta", D, None, deg), statistic="theta", theta_edges=deg)
        run(d, ds_r, "RR(r_p, pi) with an empty region", want("rp_pi", R, None, rp_edges, 2, 20.0),
            statistic="rp_pi", rp_edges=rp_edges, pi_max=20, pi_bins=2, los="midpoint")

        # ?regions_like=: the galaxies take the randoms' regions (made by
        # ?regions=4), so that DR's and RR's regions are one set; on clumps
        # far apart, each clump one region
        C, Q = clumps(rng, 240, 4), clumps(rng, 200, 4)
        s, _, q = upload_query(d, Q, "&regions=4", region_column=False)
        check(s == 201 and q["regions"] == 4, (s, q))
        s, _, c = upload_query(d, C, "&regions_like=" + q["id"], region_column=False)
        check(s == 201 and c["regions"] == 4, (s, c))
        _, _, rc, rw, rt = want("s_mu", C, Q, rp_edges, 3, 1.0)
        job = d.wait_job(d.submit(c["id"], dataset_b=q["id"], jackknife=True, weights=True,
                                  statistic="s_mu", edges=rp_edges, mu_bins=3,
                                  los="midpoint")["id"])
        check(job["status"] == "succeeded", job)
        jk = json.loads(result(d, job["id"]))["jackknife"]
        rows = [[t, na, nb] + c for t, na, nb, c in zip(jk["total"], jk["n_a"], jk["n_b"],
                                                         jk["counts"])]
        want_rows = [[int(rt[k]), int((C[4] == k).sum()), int((Q[4] == k).sum())] + rc[k].tolist()
                     for k in range(4)]
        check(same_rows(rows, want_rows), "regions_like on four clumps: %s, the clumps' %s"
              % ([r[:3] for r in rows], [r[:3] for r in want_rows]))
        print("ok - ?regions_like=: the galaxies in the randoms' regions (four clumps), DR exact")

        # the stored result after a restart: the same regions' counts
        d.stop()
        d.start()
        after = json.loads(result(d, kept))
        check(after["jackknife"] == before["jackknife"] and after["regions"] == before["regions"],
              "the stored jackknife result")
        print("ok - the stored jackknife counts survive a restart")

        # refusals: a sentence, nothing queued
        flat = d.upload([(0.0, 0.0, 0.0), (1.0, 2.0, 3.0), (2.0, 1.0, 0.5)], "json")["id"]
        body = "ra,dec,dist,w\n1,2,100,1\n3,4,120,1\n5,1,90,1\n"
        s, _, doc = d.json("POST", "/v1/datasets?format=sky-csv", body, {"Content-Type": "text/csv"})
        check(s in (200, 201), (s, doc))
        plain_sky = doc["id"]
        _, _, jobs0 = d.json("GET", "/v1/jobs")
        base = {"statistic": "rp_pi", "rp_edges": [1, 2], "pi_max": 3, "pi_bins": 2,
                "jackknife": True}
        bad = [
            (flat, {}, "region"),
            (plain_sky, {}, "region"),
            (ds_d, {"dataset_b": plain_sky}, "dataset_b"),
            (ds_d, {"statistic": None, "rp_edges": None, "pi_max": None, "pi_bins": None,
                    "bucket_width": 1, "per_frame": True}, "per_frame"),
            (ds_d, {"statistic": None, "rp_edges": None, "pi_max": None, "pi_bins": None,
                    "within": 3}, "within"),
            (ds_d, {"jackknife": "yes"}, "jackknife"),
        ]
        for ds, change, words in bad:
            job = dict(base, dataset=ds, **change)
            job = {k: v for k, v in job.items() if v is not None}
            s, _, doc = d.json("POST", "/v1/jobs", job)
            msg = (doc or {}).get("detail") or (doc or {}).get("error") or ""
            check(400 <= s < 500 and words in msg, "%s: %s %s" % (change, s, doc))
            print("ok - refused (%d): %s" % (s, msg[:110]))
        # the uploads' refusals of regions_like
        for query, words, code in (("&regions_like=" + q["id"] + "&regions=2", "one without", 400),
                                   ("&regions_like=" + "0" * 64, "regions_like", 404),
                                   ("&regions_like=" + flat, "no jackknife regions", 400)):
            s, _, doc = upload_query(d, C, query, region_column=False)
            check(s == code and words in doc.get("detail", ""), (query, s, doc))
        s, _, doc = upload_query(d, C, "&regions_like=" + q["id"])
        check(s == 400 and "one or the other" in doc.get("detail", ""), (s, doc))
        s, _, doc = d.json("POST", "/v1/datasets?format=csv&regions_like=" + q["id"],
                           "x,y,z\n1,2,3\n", {"Content-Type": "text/csv"})
        check(s == 400 and "sky catalogue" in doc.get("detail", ""), (s, doc))
        print("ok - regions_like refused with a sentence: with regions, an unknown id, a "
              "dataset without regions, a region column, a Cartesian upload")
        _, _, jobs1 = d.json("GET", "/v1/jobs")
        check(len(jobs1["jobs"]) == len(jobs0["jobs"]), "a refused job is not queued")
        s, _, _ = d.request("GET", "/healthz")
        check(s == 200, "the daemon is alive")
    print("PASS")


if __name__ == "__main__":
    main()
