"""test_bins2.py -- counts in bins of two axes (statistic rp_pi and s_mu)
through the daemon, against a brute force written here from the rules in
shared/DESIGN.md (Python floats are binary64; each operation is written
on its own, as the contract rounds it):

- rp_pi and s_mu, self and A x B (DD and DR), weighted, open and periodic
  (pi across the box's z edge), the line of sight z and the midpoint:
  JSON's buckets x buckets2 rows, CSV's rows and npz's 2-D arrays hold the
  brute force's counts, below and overflow, weighted sums within 1e-12;
  edges2 and the API's names (rp_log_bins, the CLI's rp-pi spelling);
- the result after a restart (the store keeps the 2-D counts);
- theta: angles between sky points (a sky-csv catalogue through the poles
  and across RA 0/360, self and A x B, weighted, edges and log bins): the
  counts of the chords of unit vectors in chord edges, both by the rules
  written here, and theta_edges as given; a Cartesian dataset refused;
- every malformed job gets 400 or 422 with a sentence naming what is
  wrong, and nothing is queued.

usage: test_bins2.py HISTD_EXE
"""
import csv
import io
import math
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check, csv_table  # noqa: E402


def upload_weighted(d, pts, wts):
    body = "x,y,z,w\n" + "".join("%r,%r,%r,%r\n" % (p + (w,)) for p, w in zip(pts, wts))
    s, _, doc = d.json("POST", "/v1/datasets", body, {"Content-Type": "text/csv"})
    check(s in (200, 201) and doc["weighted"], (s, doc))
    return doc["id"]


def axis2(v, vmax, n, closed):
    if (v > vmax) if closed else (v >= vmax):
        return None
    k = math.floor(v / (vmax / n))
    return min(k, n - 1)


def axis1(u, edges):
    if u < edges[0]:
        return "below"
    for k in range(len(edges) - 1):
        if edges[k] <= u < edges[k + 1]:
            return k
    return "overflow"


def pair_coords(a, b, box, midpoint):
    """(r_p, pi, s.s) of a pair by the stated rules."""
    dx = [a[k] - b[k] for k in range(3)]
    if box is not None:
        dx = [dx[k] - box * round(dx[k] / box) for k in range(3)]
    xx, yy, zz = dx[0] * dx[0], dx[1] * dx[1], dx[2] * dx[2]
    ss = (xx + yy) + zz
    if not midpoint:
        return math.sqrt(xx + yy), abs(dx[2]), ss
    l = [a[k] + b[k] for k in range(3)]
    sl = (dx[0] * l[0] + dx[1] * l[1]) + dx[2] * l[2]
    ll = (l[0] * l[0] + l[1] * l[1]) + l[2] * l[2]
    pi = abs(sl) / math.sqrt(ll) if ll > 0 else 0.0
    t = ss - pi * pi
    return math.sqrt(t if t > 0 else 0.0), pi, ss


def brute(stat, pa, wa, pb, wb, edges, n2, max2, box=None, midpoint=False):
    """Counts, weighted sums, below, overflow, total, and ravg's sums of
    (w_i w_j) u (u: r_p or s) per bin."""
    n1 = len(edges) - 1
    counts = [[0] * n2 for _ in range(n1)]
    sums = [[0.0] * n2 for _ in range(n1)]
    usums = [[[] for _ in range(n2)] for _ in range(n1)]
    below = over = total = 0
    pairs = ([(i, j) for i in range(len(pa)) for j in range(i + 1, len(pa))] if pb is None
             else [(i, j) for i in range(len(pa)) for j in range(len(pb))])
    qb, vb = (pa, wa) if pb is None else (pb, wb)
    for i, j in pairs:
        rp, pi, ss = pair_coords(pa[i], qb[j], box, midpoint)
        total += 1
        if stat == "rp_pi":
            u, k2 = rp, axis2(pi, max2, n2, False)
        else:
            u = math.sqrt(ss)
            k2 = axis2(pi / u if ss > 0 else 0.0, max2, n2, True)
        k1 = axis1(u, edges) if k2 is not None else "overflow"
        if k1 == "below":
            below += 1
        elif k1 == "overflow":
            over += 1
        else:
            counts[k1][k2] += 1
            wp = wa[i] * vb[j] if wa is not None else 1.0
            if wa is not None:
                sums[k1][k2] = math.fsum([sums[k1][k2], wp])
            usums[k1][k2].append(wp * u)
    ravg = [[math.fsum(c) for c in row] for row in usums]
    return counts, sums, below, over, total, ravg


RAD = math.pi / 180


def unit(ra, dec):
    """The stated unit vector: r = ra fl(pi/180), d = dec fl(pi/180),
    (cos d cos r, cos d sin r, sin d)."""
    r, d = ra * RAD, dec * RAD
    return (math.cos(d) * math.cos(r), math.cos(d) * math.sin(r), math.sin(d))


def theta_brute(ua, wa, ub, wb, deg):
    """Chord c = |u_i - u_j| (the contract's s and sqrt) in chord edges
    2 sin((theta fl(pi/180)) / 2); counts, below, overflow, weighted sums."""
    chords = [2 * math.sin((t * RAD) * 0.5) for t in deg]
    k = len(deg) - 1
    counts, sums, below, over = [0] * k, [[] for _ in range(k)], 0, 0
    pairs = ([(i, j) for i in range(len(ua)) for j in range(i + 1, len(ua))] if ub is None
             else [(i, j) for i in range(len(ua)) for j in range(len(ub))])
    vb, wv = (ua, wa) if ub is None else (ub, wb)
    for i, j in pairs:
        dx, dy, dz = (ua[i][0] - vb[j][0], ua[i][1] - vb[j][1], ua[i][2] - vb[j][2])
        c = math.sqrt((dx * dx + dy * dy) + dz * dz)
        if c < chords[0]:
            below += 1
        elif c >= chords[-1]:
            over += 1
        else:
            b = max(n for n in range(k) if chords[n] <= c)
            counts[b] += 1
            sums[b].append(wa[i] * wv[j])
    return counts, [math.fsum(s) for s in sums], below, over, len(pairs)


def upload_sky(d, rows):
    body = "ra,dec,dist,w\n" + "".join("%r,%r,%r,%r\n" % r for r in rows)
    s, _, doc = d.json("POST", "/v1/datasets?format=sky-csv", body, {"Content-Type": "text/csv"})
    check(s in (200, 201) and doc["weighted"], (s, doc))
    return doc["id"]


def test_theta(d, rng, cartesian):
    """The theta jobs, checked; their (id, result) for the restart."""
    kept = []
    def cat(n):
        rows = [(rng.uniform(-30, 400), rng.uniform(-90, 90), rng.uniform(100, 900),
                 0.5 + rng.random()) for _ in range(n)]
        # the poles, RA across 0/360, and two points one degree apart
        rows += [(10.0, 90.0, 500.0, 1.0), (250.0, -90.0, 300.0, 2.0), (359.5, 0.0, 400.0, 1.0),
                 (0.5, 0.0, 600.0, 1.0), (-0.5, 10.0, 200.0, 1.0), (0.5, 10.0, 200.0, 1.0)]
        return rows
    ca, cb = cat(150), cat(120)
    ua = [unit(r[0] % 360, r[1]) for r in ca]
    ub = [unit(r[0] % 360, r[1]) for r in cb]
    wa, wb = [r[3] for r in ca], [r[3] for r in cb]
    ds_a, ds_b = upload_sky(d, ca), upload_sky(d, cb)
    deg = [0.5, 1, 2, 5, 10, 30, 60, 90, 120]
    lo, hi, k = 0.1, 100.0, 8
    logdeg = [math.exp(math.log(lo) + n * (math.log(hi) - math.log(lo)) / k) for n in range(k)]
    logdeg.append(hi)
    import json
    for name, params, want, edges in (
            ("theta self, edges, weighted", {"theta_edges": deg, "weights": True},
             theta_brute(ua, wa, None, None, deg), deg),
            ("theta A x B, log bins", {"theta_log_bins": [lo, hi, k], "dataset_b": ds_b,
                                       "weights": True},
             theta_brute(ua, wa, ub, wb, logdeg), logdeg)):
        job = d.wait_job(d.submit(ds_a, statistic="theta", **params)["id"])
        check(job["status"] == "succeeded", (name, job))
        r = json.loads(result(d, job["id"]))
        counts, sums, below, over, total = want
        check(r["statistic"] == "theta" and r["counts"] == counts and r["below"] == below and
              r["overflow"] == over and r["total"] == total,
              "%s: %s, the definition %s" % (name, {k2: r.get(k2) for k2 in ("statistic",
              "counts", "below", "overflow", "total")}, want[:1] + want[2:]))
        check(all(abs(a - b) <= 1e-15 * max(b, 1e-300) for a, b in zip(r["theta_edges"], edges))
              and len(r["theta_edges"]) == len(edges), (name, r["theta_edges"], edges))
        check(all(abs(g - v) <= 1e-12 * max(v, 1e-300) for g, v in zip(r["weighted"], sums)),
              (name, r["weighted"], sums))
        import numpy as np
        with np.load(io.BytesIO(result(d, job["id"], "npz")), allow_pickle=False) as z:
            check(z["theta_edges"].tolist() == r["theta_edges"] and
                  z["counts"].tolist() == counts and str(z["statistic"]) == "theta",
                  (name, "npz", z["theta_edges"]))
        kept.append((job["id"], r))
    bad = [({"theta_edges": deg}, cartesian, 422, "sky catalogue"),
           ({"theta_edges": deg, "box": [100]}, ds_a, 400, "box"),
           ({"bucket_width": 1}, ds_a, 400, "bucket_width"),
           ({"theta_edges": [0, 90, 200]}, ds_a, 422, "180"),
           ({"theta_edges": [179.99999999, 180]}, ds_a, 422, "one chord")]
    for params, ds, status, word in bad:
        s, _, doc = d.json("POST", "/v1/jobs", dict(params, statistic="theta", dataset=ds))
        check(s == status and word in (doc or {}).get("detail", ""),
              "theta %s: %s naming %r, got %s %s" % (params, status, word, s, doc))
    # two selections of one catalogue that share galaxies: the job fails, saying why
    job = d.wait_job(d.submit(ds_a, statistic="theta", theta_edges=deg, select_a="index:0-99",
                              select_b="index:50-149")["id"])
    check(job["status"] == "failed" and "share no galaxy" in job.get("error", ""), job)
    return kept


def result(d, job_id, fmt=None):
    s, h, body = d.request("GET", "/v1/jobs/%s/result%s" % (job_id, "?format=" + fmt if fmt else ""))
    check(s == 200, (s, body[:200]))
    return body


def check_job(d, ds, want, name, **params):
    job = d.wait_job(d.submit(ds, **params)["id"])
    check(job["status"] == "succeeded", (name, job))
    import json
    r = json.loads(result(d, job["id"]))
    counts, sums, below, over, total, usum = want
    check(r["statistic"] == params["statistic"].replace("-", "_"), (name, r["statistic"]))
    check(r["counts"] == counts, "%s: counts %s, the definition %s" % (name, r["counts"], counts))
    check((r["below"], r["overflow"], r["total"]) == (below, over, total),
          "%s: below, overflow, total %s, the definition %s"
          % (name, (r["below"], r["overflow"], r["total"]), (below, over, total)))
    n2 = r["buckets2"]
    check(len(r["edges2"]) == n2 + 1 and r["edges2"][-1] == r["max2"]
          and all(r["edges2"][k] == k * (r["max2"] / n2) for k in range(n2)), (name, r["edges2"]))
    if params.get("ravg"):  # each bin's mean separation, null where empty
        for k1, row in enumerate(usum):
            for k2, v in enumerate(row):
                den = sums[k1][k2] if params.get("weights") else counts[k1][k2]
                got = r["ravg"][k1][k2]
                if counts[k1][k2] == 0:
                    check(got is None, "%s: ravg of an empty bin %r" % (name, got))
                else:
                    check(abs(got - v / den) <= 1e-11 * abs(v / den),
                          "%s: ravg (%d, %d) %r, the definition %r" % (name, k1, k2, got, v / den))
    if params.get("weights"):
        for k1, row in enumerate(sums):
            for k2, v in enumerate(row):
                got = r["weighted"][k1][k2]
                check(abs(got - v) <= 1e-12 * max(abs(v), 1e-300),
                      "%s: weighted (%d, %d) %r, the definition %r" % (name, k1, k2, got, v))
    # CSV: a row a bin of each axis, the same counts
    rows = list(csv.DictReader(io.StringIO("\n".join(csv_table(result(d, job["id"], "csv"))))))
    check(len(rows) == len(counts) * n2 and
          all(int(row["count"]) == counts[int(row["bucket"])][int(row["bucket2"])]
              for row in rows), (name, "csv", rows[:3]))
    # npz: 2-D arrays
    import numpy as np
    with np.load(io.BytesIO(result(d, job["id"], "npz")), allow_pickle=False) as z:
        check(z["counts"].shape == (len(counts), n2) and z["counts"].tolist() == counts,
              (name, "npz", z["counts"].shape))
        check(z["edges2"].tolist() == r["edges2"], (name, "npz edges2"))
    return job["id"]


def main():
    exe = sys.argv[1]
    rng = random.Random(20261128)
    L = 40.0
    pa = [(rng.uniform(0, L), rng.uniform(0, L), rng.uniform(0, L)) for _ in range(260)]
    wa = [rng.choice([1.0, 0.5 + rng.random()]) for _ in pa]
    pb = [(rng.uniform(0, L), rng.uniform(0, L), rng.uniform(0, L)) for _ in range(200)]
    wb = [0.25 + rng.random() for _ in pb]
    # a lattice: r_p, pi and mu on their edges
    lat = [(float(x), float(y), float(z)) for x in range(5) for y in range(5) for z in range(5)]
    # a far shell: the midpoint line of sight
    sky = []
    for _ in range(200):
        u, ph, r = 2 * rng.random() - 1, 2 * math.pi * rng.random(), 500 + 30 * rng.random()
        c = math.sqrt(1 - u * u)
        sky.append((r * c * math.cos(ph), r * c * math.sin(ph), r * u))
    with tempfile.TemporaryDirectory() as tmp, Daemon(exe, data_dir=tmp) as d:
        ds_a = upload_weighted(d, pa, wa)
        ds_b = upload_weighted(d, pb, wb)
        ds_lat = d.upload(lat, "json")["id"]
        ds_sky = d.upload(sky, "json")["id"]
        log_edges = [0.5 * 2 ** (k / 2) for k in range(9)]  # to 8
        kept = check_job(d, ds_a, brute("rp_pi", pa, wa, None, None, log_edges, 5, 6.0, box=L),
                         "rp_pi periodic weighted", statistic="rp_pi", rp_edges=log_edges,
                         pi_max=6, pi_bins=5, box=[L], weights=True)
        check_job(d, ds_a, brute("rp_pi", pa, wa, pb, wb, log_edges, 4, 6.0),
                  "rp_pi DR open weighted, ravg", statistic="rp_pi", rp_edges=log_edges,
                  pi_max=6, pi_bins=4, dataset_b=ds_b, weights=True, ravg=True)
        check_job(d, ds_a, brute("s_mu", pa, wa, pb, wb, log_edges, 6, 1.0, box=L),
                  "s_mu DR periodic", statistic="s_mu", edges=log_edges, mu_bins=6,
                  dataset_b=ds_b, box=[L], weights=True)
        check_job(d, ds_lat, brute("rp_pi", lat, None, None, None, [1, 2, 3], 2, 2.0),
                  "rp_pi lattice, ravg", statistic="rp_pi", rp_edges=[1, 2, 3], pi_max=2,
                  pi_bins=2, ravg=True)
        check_job(d, ds_lat, brute("s_mu", lat, None, None, None, [0, 1, 2, 3], 2, 0.5),
                  "s_mu lattice, mu_max 1/2", statistic="s_mu", bucket_width=1, buckets=3,
                  mu_bins=2, mu_max=0.5)
        sky_edges = [math.exp(math.log(2) + k * (math.log(60) - math.log(2)) / 6) for k in range(6)]
        sky_edges.append(60.0)
        r = check_job(d, ds_sky, brute("rp_pi", sky, None, None, None, sky_edges, 8, 40.0,
                                       midpoint=True),
                      "rp_pi midpoint", statistic="rp-pi", rp_log_bins=[2, 60, 6], pi_max=40,
                      pi_bins=8, los="midpoint")
        thetas = test_theta(d, rng, ds_lat)
        # the stored result after a restart: the same 2-D counts
        import json
        before = json.loads(result(d, kept))
        d.stop()
        d.start()
        after = json.loads(result(d, kept))
        check(after["counts"] == before["counts"] and after["weighted"] == before["weighted"]
              and after["buckets2"] == before["buckets2"], "the stored rp_pi result")
        for job_id, was in thetas:  # theta's angles are kept beside the chords
            now = json.loads(result(d, job_id))
            check(now["statistic"] == "theta" and now["theta_edges"] == was["theta_edges"] and
                  now["counts"] == was["counts"], "the stored theta result")
        # malformed jobs: a sentence, nothing queued
        _, _, jobs0 = d.json("GET", "/v1/jobs")
        bad = [
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_bins": 3}, 400, "pi_max"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": 3}, 400, "pi_bins"),
            ({"statistic": "s_mu", "edges": [1, 2]}, 400, "mu_bins"),
            ({"statistic": "s_mu", "edges": [1, 2], "mu_bins": 2, "mu_max": 1.5}, 422, "mu_max"),
            ({"statistic": "xi", "edges": [1, 2]}, 422, "statistic"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": 3, "pi_bins": 0}, 422, "pi_bins"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": -3, "pi_bins": 2}, 422, "pi_max"),
            ({"bucket_width": 1, "pi_max": 3}, 400, "pi_max"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": 3, "pi_bins": 2, "los": "x"}, 422,
             "los"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": 3, "pi_bins": 2, "los": "midpoint",
              "box": [L]}, 422, "midpoint"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": 30, "pi_bins": 2, "box": [L]}, 422,
             "half the periodic box"),
            ({"statistic": "s_mu", "edges": [1, 2], "mu_bins": 2, "per_frame": True}, 422,
             "per_frame"),
            ({"statistic": "rp_pi", "edges": [1, 2], "pi_max": 3, "pi_bins": 4096,
              "log_bins": [1, 2, 4096]}, 400, "one way"),
            ({"statistic": "rp_pi", "log_bins": [1, 2, 5000], "pi_max": 3, "pi_bins": 5000}, 422,
             "more than"),
            ({"within": 2, "ravg": True}, 422, "ravg"),
            ({"statistic": "s_mu", "edges": [1, 2], "mu_bins": 2, "ravg": 1}, 400, "ravg"),
        ]
        for params, status, word in bad:
            body = dict(params, dataset=ds_a)
            s, _, doc = d.json("POST", "/v1/jobs", body)
            check(s == status and word in (doc or {}).get("detail", ""),
                  "%s: %s naming %r, got %s %s" % (params, status, word, s, doc))
        _, _, jobs1 = d.json("GET", "/v1/jobs")
        check(len(jobs1["jobs"]) == len(jobs0["jobs"]), "a refused job is not stored")
    print("test_bins2: all ok")


if __name__ == "__main__":
    main()
