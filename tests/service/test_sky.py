"""test_sky.py -- sky catalogues through the real daemon (issue 30, section 1):

- one catalogue (points at both poles, RA at 0, 360, just below 360, past
  720 and negative, redshifts from 0 to 3) uploaded as sky-csv, sky-json
  and FITS (a BINTABLE written here, by the standard: big-endian columns,
  2880-byte blocks) with ?omega_m=0.3 is one dataset (the same points, the
  same id); its document says "sky" and how it made its distances;
- its stored points are the test's own conversion: the comoving distance
  by scipy's adaptive quadrature (QUADPACK) of c/H0 / E(z), then
  D cos(dec) cos(ra), D cos(dec) sin(ra), D sin(dec) with numpy; checked
  through a pair list (pairs_within: every pair's d within 1e-12 of the
  test's) and a plain histogram against numpy's brute force of the test's
  points (no pair within 1e-9 of an edge, so rounding cannot move one);
- distances given (dist) need no cosmology: "omega_m" null;
- regions: a region column (the count is the largest label + 1), or
  ?regions=K (K clumps far apart: K regions, the same id uploaded again);
- every malformed catalogue and parameter is a 400 with a sentence, and
  nothing is stored;
- after a restart the documents read back and a job reads the payload.

usage: test_sky.py HISTD_EXE
"""
import json
import math
import os
import struct
import sys

import numpy as np
from scipy import integrate

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from daemon import Daemon, check  # noqa: E402

C_OVER_H0 = 2997.92458


def comoving(z, om):
    if z == 0:
        return 0.0
    f = lambda t: 1.0 / math.sqrt(om * (1 + t) ** 3 + 1 - om)  # noqa: E731
    v, err = integrate.quad(f, 0, z, epsabs=0, epsrel=1e-13, limit=200)
    return C_OVER_H0 * v


def points(ra, dec, d):
    r, t = np.radians(np.asarray(ra, float)), np.radians(np.asarray(dec, float))
    d = np.asarray(d, float)
    return np.stack([d * np.cos(t) * np.cos(r), d * np.cos(t) * np.sin(r), d * np.sin(t)], 1)


def catalogue():
    rng = np.random.default_rng(30)
    ra = [0.0, 360.0, 359.9999, 0.0001, -0.5, 720.25, 180.0, 45.0, 10.0, 200.0]
    dec = [90.0, -90.0, 10.0, -10.0, 0.0, 30.0, 89.9999, -89.9999, 45.0, -60.0]
    z = [0.5, 1.0, 0.2, 0.2, 0.0, 3.0, 0.75, 0.01, 1.5, 0.33]
    n = 40 - len(ra)
    ra += list(rng.uniform(-30, 390, n))
    dec += list(rng.uniform(-90, 90, n))
    z += list(rng.uniform(0, 2, n))
    return ra, dec, z


def fits_table(cols):
    """A FITS file: an empty primary HDU, then a BINTABLE of float64 columns
    (name -> list)."""
    def block(cards):
        text = "".join(c.ljust(80) for c in cards + ["END"])
        return (text + " " * (-len(text) % 2880)).encode("ascii")
    rows = len(next(iter(cols.values())))
    head = ["SIMPLE  = %20s" % "T", "BITPIX  = %20d" % 8, "NAXIS   = %20d" % 0,
            "EXTEND  = %20s" % "T"]
    tab = ["XTENSION= 'BINTABLE'", "BITPIX  = %20d" % 8, "NAXIS   = %20d" % 2,
           "NAXIS1  = %20d" % (8 * len(cols)), "NAXIS2  = %20d" % rows,
           "PCOUNT  = %20d" % 0, "GCOUNT  = %20d" % 1, "TFIELDS = %20d" % len(cols)]
    for k, name in enumerate(cols):
        tab += ["TTYPE%-3d= '%-8s'" % (k + 1, name), "TFORM%-3d= 'D       '" % (k + 1)]
    data = b"".join(struct.pack(">%dd" % len(cols), *[cols[c][r] for c in cols])
                    for r in range(rows))
    return block(head) + block(tab) + data + b"\0" * (-len(data) % 2880)


def upload(d, body, fmt, query="", ctype="application/octet-stream"):
    s, _, doc = d.json("POST", "/v1/datasets?format=%s%s" % (fmt, query), body,
                       {"Content-Type": ctype})
    return s, doc


def result(d, ds, **params):
    job = d.wait_job(d.submit(ds, kernel="cpu", **params)["id"])
    check(job["status"] == "succeeded", job)
    s, _, res = d.json("GET", "/v1/jobs/%s/result" % job["id"])
    check(s == 200, res)
    return res


def main():
    exe = sys.argv[1]
    ra, dec, z = catalogue()
    om = 0.3
    dist = [comoving(v, om) for v in z]
    pts = points(ra, dec, dist)
    n = len(ra)
    csv = "id,ra,dec,z\n" + "".join("g%d,%r,%r,%r\n" % (i, ra[i], dec[i], z[i]) for i in range(n))
    js = json.dumps({"ra": ra, "dec": dec, "z": z})
    fits = fits_table({"RA": ra, "DEC": dec, "Z": z})
    with Daemon(exe) as d:
        s, a = upload(d, csv, "sky-csv", "&omega_m=0.3", "text/csv")
        check(s == 201, (s, a))
        s, b = upload(d, js, "sky-json", "&omega_m=0.3", "application/json")
        check(s == 200 and b["id"] == a["id"], ("json: the same points", s, b))
        s, _, c = d.json("POST", "/v1/datasets?omega_m=0.3", fits,
                         {"Content-Type": "application/fits"})
        has_fits = not (s == 400 and "without FITS support" in c["detail"])
        check(not has_fits or (s == 200 and c["id"] == a["id"]), ("fits: the same points", s, c))
        check(a["n"] == n and a["sky"] == {"distance": "z", "omega_m": 0.3} and a["regions"] == 0
              and a["format"] == "sky-csv" and not a["weighted"], a)
        for k in range(3):
            lo, hi = a["bounds"]["min"][k], a["bounds"]["max"][k]
            check(abs(lo - pts[:, k].min()) <= 1e-9 and abs(hi - pts[:, k].max()) <= 1e-9,
                  ("bounds", k, lo, hi))

        # every pair's distance, against the test's points
        diff = pts[:, None, :] - pts[None, :, :]
        own = np.sqrt((diff ** 2).sum(-1))
        res = result(d, a["id"], pairs_within=1e6)
        check(len(res["i"]) == n * (n - 1) // 2, ("all pairs", len(res["i"])))
        worst = max(abs(dd - own[i, j]) / max(own[i, j], 1.0)
                    for i, j, dd in zip(res["i"], res["j"], res["d"]))
        check(worst <= 1e-12, ("pair distances", worst))

        # a plain histogram against numpy's brute force of the test's points
        width, buckets = 250.0, 40
        iu = np.triu_indices(n, 1)
        dd = own[iu]
        frac = dd / width - np.floor(dd / width)
        check(np.all(np.minimum(frac, 1 - frac) * width > 1e-9 * dd.max()), "no pair near an edge")
        want = np.bincount(np.minimum(np.floor(dd / width).astype(int), buckets), minlength=buckets + 1)
        res = result(d, a["id"], bucket_width=width, buckets=buckets)
        check(res["counts"] == list(want[:buckets]) and res["overflow"] == want[buckets],
              ("histogram", res["counts"], list(want)))

        # distances given: no cosmology, the same points as D * u
        body = "ra dec dist w region\n" + "".join(
            "%r %r %r %r %d\n" % (ra[i], dec[i], dist[i], 1 + i % 3, i % 5) for i in range(n))
        s, e = upload(d, body, "sky-csv", "", "text/csv")
        check(s == 201 and e["sky"] == {"distance": "dist", "omega_m": None} and
              e["regions"] == 5 and e["weighted"], (s, e))
        res = result(d, e["id"], pairs_within=1e6)
        worst = max(abs(dd - own[i, j]) / max(own[i, j], 1.0)
                    for i, j, dd in zip(res["i"], res["j"], res["d"]))
        check(worst <= 1e-12, ("dist pair distances", worst))

        # ?regions=K on K clumps far apart
        rng = np.random.default_rng(7)
        cra, cdec = [0, 90, 180, 270], [60, -30, 0, 30]
        cat = {"ra": [], "dec": [], "dist": []}
        for c in range(4):
            cat["ra"] += list(cra[c] + rng.uniform(-1, 1, 25))
            cat["dec"] += list(cdec[c] + rng.uniform(-1, 1, 25))
            cat["dist"] += list(rng.uniform(100, 200, 25))
        s, f = upload(d, json.dumps(cat), "sky-json", "&regions=4")
        check(s == 201 and f["regions"] == 4, (s, f))
        s, g = upload(d, json.dumps(cat), "sky-json", "&regions=4")
        check(s == 200 and g["id"] == f["id"], ("regions are deterministic", g))
        s, h = upload(d, json.dumps(cat), "sky-json", "")
        check(s == 200 or s == 201, h)
        check(h["id"] != f["id"] and h["regions"] == 0, ("labels are part of the dataset", h))
        s, _, one = d.json("GET", "/v1/datasets/" + f["id"])
        check(s == 200 and one["regions"] == 4 and one["sky"]["distance"] == "dist", one)

        # malformed catalogues and parameters: 400, a sentence, nothing stored
        s, _, listed = d.json("GET", "/v1/datasets")
        before = len(listed["datasets"])
        bad_fits = bytearray(fits)
        bad_fits[2880 * 2 + 8:2880 * 2 + 16] = struct.pack(">d", float("nan"))  # row 1's dec
        for fmt, body, query, says in [
            ("sky-csv", "ra,dec\n1,2\n", "", "neither a dist nor a z column"),
            ("sky-csv", "ra,z\n1,2\n", "", "no dec column"),
            ("sky-csv", "ra,dec,dist,z\n1,2,3,4\n", "", "both a dist and a z column"),
            ("sky-csv", "ra,dec,z\n1,2,abc\n", "", "'abc' is not a number (column z)"),
            ("sky-csv", "ra,dec,z\n1,nan,1\n", "", "'nan' is not a finite number"),
            ("sky-csv", "ra,dec,z\n1,91,1\n", "", "dec 91 is outside [-90, 90]"),
            ("sky-csv", "ra,dec,z\n1,2,-1\n", "", "z -1 is negative"),
            ("sky-csv", "ra,dec,z\n1,2\n", "", "expected 3 fields"),
            ("sky-csv", "ra,dec,z,region\n1,2,1,2.5\n", "", "region 2.5 is not a region"),
            ("sky-csv", "ra,dec,z,region\n1,2,1,0\n", "&regions=2", "give one or the other"),
            ("sky-json", '{"ra": [1, 2], "dec": [1], "z": [1, 2]}', "", "dec: has 1 values, but ra has 2"),
            ("sky-json", '{"ra": [1], "dec": [1], "z": [1], "x": [1]}', "", "unknown key"),
            ("sky-json", '{"ra": [null], "dec": [1], "z": [1]}', "", "ra[0]: expected a finite number"),
            ("fits", b"SIMPLE = T" + b" " * 3000, "", "not a FITS file"),
            ("fits", bytes(bad_fits), "", "row 1: DEC is null"),
            ("fits", fits[:2880 * 2], "", "more than the 5760 bytes"),
            ("sky-csv", "ra,dec,z\n1,2,1\n", "&omega_m=2", "omega_m must be a number from 0.01 to 1"),
            ("sky-csv", "ra,dec,z\n1,2,1\n", "&omega_m=abc", "omega_m must be"),
            ("sky-csv", "ra,dec,z\n1,2,1\n", "&regions=0", "regions must be a whole number"),
            ("sky-csv", "ra,dec,z\n1,2,1\n", "&regions=2", "at most the 1 points"),
            ("csv", "1,2,3\n", "&omega_m=0.3", "omega_m goes with a sky catalogue"),
            ("csv", "ra,dec,z\n1,2,1\n", "", "upload it as sky-csv"),
            ("sky-csv", "ra,dec,z\n1,2,1\n", "&growing=true", "cannot be a growing dataset"),
        ]:
            if fmt == "fits" and not has_fits:
                continue  # built without cfitsio: every FITS upload said so above
            s, doc = upload(d, body, fmt, query)
            detail = (doc or {}).get("detail", "")
            check(s == 400 and says.lower() in detail.lower(), (fmt, body[:40], query, s, doc))
        s, _, listed = d.json("GET", "/v1/datasets")
        check(len(listed["datasets"]) == before, "nothing stored")

        # after a restart: the same documents, and the payload's sky columns
        # and labels read back (a job maps and checks the payload again)
        d.stop()
        d.start()
        for want in (a, e, f):
            s, _, doc = d.json("GET", "/v1/datasets/" + want["id"])
            check(s == 200 and doc["sky"] == want["sky"] and doc["regions"] == want["regions"] and
                  doc["bytes"] == want["bytes"] and "error" not in doc, (doc, want))
        res = result(d, e["id"], pairs_within=1e6)
        worst = max(abs(dd - own[i, j]) / max(own[i, j], 1.0)
                    for i, j, dd in zip(res["i"], res["j"], res["d"]))
        check(worst <= 1e-12, ("after a restart", worst))
    print("test_sky: all checks passed")


if __name__ == "__main__":
    main()
