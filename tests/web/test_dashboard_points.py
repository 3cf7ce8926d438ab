#!/usr/bin/env python3
"""The dashboard's per-point statistics and pair lists in headless Chromium,
against the real daemon, checked against a brute force of the contract in
Python (d = sqrt((dx*dx + dy*dy) + dz*dz) in binary64 over every pair).

Uploads 70 points (random in a cube of side 6, CSV) and a 3-frame XYZ
trajectory of 16 atoms through the file picker, computes a g(r) as
before, then asks the form for:

1. neighbours within R: the job carries within R and per_point; the chart
   has a bar per neighbour count 0, 1, 2, ... whose heights are the brute
   force's numbers of points with that many neighbours; the summary gives
   the points, frames, mean and max;
2. the nearest neighbour anywhere: the bars hold every point, and the last
   edge is the largest nearest distance; then within a search radius: the
   points with none within it are counted apart and said so;
3. pairs within R: the histogram of d holds the brute force's pairs, and
   the NPZ button saves the API's .npz;
4. over the trajectory's frames: the neighbour counts and the pair list of
   every frame together (the chart says so), the x axis in the file's unit;
5. refusals under the Compute button: the form's own (no radius) and the
   daemon's problem+json sentence (pairs within 0), the same as the API's;
6. the details table lists every JSON scalar field that the result has
   per GET /v1/schema, with its value as the API gives it.

Screenshots go to $HISTD_WEB_OUT/dashboard-points.png and
dashboard-nearest.png. Exit 77 (skip) only when chromium is not installed.
"""
import collections
import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

OUT = h.OUT
left = h.deadline(80)  # the whole test, on a loaded machine
check = h.check


# ---- the contract, by brute force ---------------------------------------------

def dist(p, q):
    dx, dy, dz = p[0] - q[0], p[1] - q[1], p[2] - q[2]
    return math.sqrt((dx * dx + dy * dy) + dz * dz)


def neighbours(pts, r):
    return [sum(1 for j, q in enumerate(pts) if j != i and dist(p, q) <= r) for i, p in enumerate(pts)]


def nearest(pts, r=None):
    """Each point's distance to its nearest other point (None: none within r)."""
    out = []
    for i, p in enumerate(pts):
        d = min(dist(p, q) for j, q in enumerate(pts) if j != i)
        out.append(d if r is None or d <= r else None)
    return out


def pairs(pts, r):
    return [dist(pts[i], pts[j]) for i in range(len(pts)) for j in range(i + 1, len(pts))
            if dist(pts[i], pts[j]) <= r]


# ---- the page ---------------------------------------------------------------------

def random_points(n, seed, side):
    rnd = random.Random(seed)
    return [(rnd.uniform(0, side), rnd.uniform(0, side), rnd.uniform(0, side)) for _ in range(n)]


def bars(b):
    return b.js("return [...document.querySelectorAll('#chart rect.bar')].map(r => ({c: +r.dataset.count,"
                " lo: +r.dataset.lo, hi: +r.dataset.hi}))")


def summary(b):
    """The summary's rows, {term: description}."""
    return b.js("const o = {}; for (const dt of document.querySelectorAll('#summary dt'))"
                " o[dt.textContent] = dt.nextElementSibling.textContent; return o;")


def run_statistic(b, d, stat, radius):
    """Chooses the statistic and radius in the form, computes, and answers
    the job (GET /v1/jobs/{id}) once the page shows it succeeded."""
    h.choose(b, "statistic", stat)
    h.set_value(b, "#radius", radius)
    status, jid = h.submit_and_wait(b, min(15, left()), min(40, left()))
    check(status == "succeeded", "the %s job (R %r) succeeded in the page" % (stat, radius))
    b.wait(lambda: b.js("return document.getElementById('chart').dataset.mode") == "values",
           min(5, left()), "the values plot")
    return h.get_json(d.base, "/v1/jobs/" + jid)


def shows(text, typ, v):
    """Whether a details row's text is the value v of schema type typ."""
    if v is None:
        return text == "none"
    if typ in ("u64", "i64"):
        return int(text.replace(",", "")) == v
    if typ == "f64":
        return float(text) == float(v)
    if typ == "bool":
        return text == ("true" if v else "false")
    return text == v


def check_details(b, job, schema):
    """The details table: every JSON scalar of the result per the schema,
    each with the API's value."""
    res = job["result"]
    want = {}
    for f in schema:
        if f["shape"] != "scalar" or "json" not in f["outputs"]:
            continue
        holder = res.get(f["group"]) if f["group"] else res
        if isinstance(holder, dict) and f["name"] in holder:
            want[(f["group"] + "." if f["group"] else "") + f["name"]] = (f["type"], holder[f["name"]])
    rows = b.js("return [...document.querySelectorAll('#details tbody tr[data-field]')].map(r =>"
                " [r.dataset.field, r.children[1].textContent, r.children[2].textContent])")
    check(sorted(r[0] for r in rows) == sorted(want) and len(rows) == len(want),
          "the details table lists the %d JSON scalars the %s result has: %s"
          % (len(want), res["statistic"], ", ".join(sorted(want))))
    wrong = [(key, text, want[key][1]) for key, text, _unit in rows if not shows(text, *want[key])]
    check(not wrong, "each row shows the API's value exactly%s" % (": %s" % wrong if wrong else ""))
    groups = b.js("return [...document.querySelectorAll('#details tbody tr.group')].map(r => r.dataset.group)")
    check(groups == ["timing_ms"], "timing_ms's fields sit under their group: %s" % groups)
    if res.get("unit"):
        units = {k: u for k, _t, u in rows}
        check(units.get("radius") == res["unit"], "the radius's unit is the result's: %r" % units.get("radius"))


def run(chromium, chromedriver, work):
    pts = random_points(70, seed=11, side=6.0)
    cloud = os.path.join(work, "cloud.csv")
    with open(cloud, "w") as f:
        f.write("x,y,z\n")
        for p in pts:
            f.write("%r,%r,%r\n" % p)
    frames = [random_points(16, seed=100 + k, side=4.0) for k in range(3)]
    traj = os.path.join(work, "traj.xyz")
    with open(traj, "w") as f:
        for k, fr in enumerate(frames):
            f.write("16\nframe %d\n" % k)
            for p in fr:
                f.write("C %r %r %r\n" % p)

    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads)
    with h.Daemon(workdir=work) as d, h.Browser(chromium, chromedriver) as b:
        schema = h.get_json(d.base, "/v1/schema")["fields"]
        h.allow_downloads(b, downloads)
        h.open_dashboard(b, d.base, min(15, left()))
        traj_id = h.upload(b, traj, 48, min(20, left()))
        cloud_id = h.upload(b, cloud, 70, min(20, left()))
        check(cloud_id != traj_id, "two datasets")

        # 0. a histogram in a periodic box still plots g(r), and its details
        #    table lists its scalars (volume, density, bins, below, ...)
        h.choose(b, "statistic", "histogram")
        h.choose(b, "binning", "width")
        h.set_value(b, "#width", 0.5)
        h.set_value(b, "#buckets", 6)
        h.set_value(b, "#box", 6)
        status, jid = h.submit_and_wait(b, min(15, left()), min(40, left()))
        check(status == "succeeded" and b.js("return document.getElementById('chart').dataset.mode") == "g",
              "the periodic histogram plots g(r)")
        check_details(b, h.get_json(d.base, "/v1/jobs/" + jid), schema)
        h.set_value(b, "#box", "")

        # 5a. the form's own refusal, under the button
        h.choose(b, "statistic", "per_point")
        check(not b.js("return document.getElementById('radius-box').hidden") and
              b.js("return document.getElementById('hist-opts').hidden"), "neighbours ask for R, not bins")
        h.set_value(b, "#radius", "")
        b.click(b.find("#submit"))
        b.wait(lambda: b.js("return !document.getElementById('job-error').hidden"), min(5, left()), "the form's error")
        check("needed" in b.text(b.find("#job-error")), "no R: the form says R is needed")

        # 1. neighbours within R
        R = 1.5
        job = run_statistic(b, d, "per_point", R)
        check(b.js("return document.getElementById('job-error').hidden"), "a job that runs clears the error")
        p, res = job["params"], job["result"]
        check(p.get("per_point") is True and p.get("within") == R and "bucket_width" not in p,
              "the form sent within %r and per_point: %s" % (R, p))
        brute = neighbours(pts, R)
        check(res["neighbours"] == brute, "(the daemon's neighbours equal the brute force's)")
        hist = collections.Counter(brute)
        shown = bars(b)
        check(len(shown) == max(brute) + 1, "a bar per neighbour count 0..%d" % max(brute))
        check([x["c"] for x in shown] == [hist.get(k, 0) for k in range(max(brute) + 1)],
              "each bar's height is the brute force's points with that many neighbours: %s"
              % [x["c"] for x in shown])
        check(all(x["lo"] < k < x["hi"] for k, x in enumerate(shown)), "bar k stands over the count k")
        s = summary(b)
        check(s.get("points") == "70" and s.get("frames") == "1", "the summary: 70 points, 1 frame")
        check(s.get("max neighbours") == str(max(brute)) and
              math.isclose(float(s["mean neighbours"]), sum(brute) / 70, rel_tol=1e-5),
              "the summary: mean %s and max %s neighbours" % (s.get("mean neighbours"), s.get("max neighbours")))
        label = b.js("return document.querySelector('#chart g.axis.x text.label').textContent")
        check("neighbours within 1.5" in label, "the x axis: %r" % label)
        b.js("window.scrollTo(0, 0)")
        b.hover(b.find('#chart rect.bar[data-bucket="2"]'))
        b.wait(lambda: b.js("return !document.getElementById('tip').hidden"), min(5, left()), "the tooltip")
        tip = b.text(b.find("#tip"))
        check("2 neighbours" in tip and "%d points" % hist.get(2, 0) in tip, "the tooltip reads bar 2: %r" % tip)
        check_details(b, job, schema)
        b.js("window.scrollTo(0, 0)")
        h.log("screenshot:", b.screenshot(os.path.join(OUT, "dashboard-points.png")))

        # 2. the nearest neighbour, anywhere, then within a search radius
        job = run_statistic(b, d, "nearest", "")
        p, res = job["params"], job["result"]
        check(p.get("nearest") is True and "within" not in p, "the form sent nearest, no radius: %s" % p)
        brute = nearest(pts)
        shown = bars(b)
        check(len(shown) == 50 and sum(x["c"] for x in shown) == 70,
              "50 bins of nearest distances holding all 70 points")
        check(shown[0]["lo"] == 0 and shown[-1]["hi"] == max(brute),
              "the bins run from 0 to the largest nearest distance, %r" % max(brute))
        s = summary(b)
        check(math.isclose(float(s["max nearest_d"].split()[0]), max(brute), rel_tol=1e-5) and
              math.isclose(float(s["mean nearest_d"].split()[0]), sum(brute) / 70, rel_tol=1e-5),
              "the summary: mean %s, max %s" % (s["mean nearest_d"], s["max nearest_d"]))
        check_details(b, job, schema)
        R2 = 0.8
        job = run_statistic(b, d, "nearest", R2)
        p, res = job["params"], job["result"]
        check(p.get("nearest") is True and p.get("within") == R2, "the form sent nearest within %r: %s" % (R2, p))
        brute = nearest(pts, R2)
        none = sum(1 for v in brute if v is None)
        shown = bars(b)
        check(0 < none < 70, "(some points have no neighbour within %r: %d)" % (R2, none))
        check(sum(x["c"] for x in shown) == 70 - none and shown[-1]["hi"] == R2,
              "the bars hold the %d points with a neighbour within %r, in bins to R" % (70 - none, R2))
        note = b.js("const t = document.querySelector('#chart text.note'); return t ? t.textContent : ''")
        check("no neighbour within 0.8: %d of 70 points" % none in note, "the chart says the others apart: %r" % note)
        check(summary(b).get("no neighbour within 0.8") == "%d points" % none, "and so does the summary")
        check_details(b, job, schema)
        b.js("window.scrollTo(0, 0)")
        h.log("screenshot:", b.screenshot(os.path.join(OUT, "dashboard-nearest.png")))

        # 3. pairs within R
        job = run_statistic(b, d, "pairs", R)
        p, res = job["params"], job["result"]
        check(p.get("pairs_within") == R and "within" not in p, "the form sent pairs_within %r: %s" % (R, p))
        brute = pairs(pts, R)
        shown = bars(b)
        check(sum(x["c"] for x in shown) == len(brute) == res["pairs"],
              "the histogram of d holds the brute force's %d pairs" % len(brute))
        check(summary(b).get("pairs listed") == "{:,}".format(len(brute)), "the summary counts them")
        check_details(b, job, schema)
        api_npz = h.http("GET", d.base + "/v1/jobs/%s/result?format=npz" % job["id"]).body
        h.check_download(b, "#dl-npz", os.path.join(downloads, "histd-%s.npz" % job["id"]), api_npz, min(10, left()),
                         "the NPZ button saves GET /result?format=npz (%d bytes)" % len(api_npz))

        # 4. over several frames: every frame's values together
        h.choose(b, "dataset", traj_id)
        job = run_statistic(b, d, "per_point", R)
        res = job["result"]
        brute = [c for fr in frames for c in neighbours(fr, R)]
        hist = collections.Counter(brute)
        shown = bars(b)
        check(res["frames"] == 3 and [x["c"] for x in shown] == [hist.get(k, 0) for k in range(max(brute) + 1)],
              "3 frames: the bars count every frame's points together")
        note = b.js("return document.querySelector('#chart text.note').textContent")
        check("all 3 frames' values together" in note, "the chart says so: %r" % note)
        s = summary(b)
        check(s.get("points") == "16 a frame" and s.get("frames", "").startswith("3"),
              "the summary: 16 points a frame, 3 frames")
        job = run_statistic(b, d, "pairs", R)
        brute = [x for fr in frames for x in pairs(fr, R)]
        shown = bars(b)
        check(sum(x["c"] for x in shown) == len(brute), "the pair list of 3 frames: %d pairs" % len(brute))
        label = b.js("return document.querySelector('#chart g.axis.x text.label').textContent")
        unit = job["result"].get("unit")
        check(unit and unit in label, "the x axis is in the file's unit (%s): %r" % (unit, label))

        # 5b. the daemon's refusal, under the button, in its own words
        h.choose(b, "dataset", cloud_id)
        h.choose(b, "statistic", "pairs")
        h.set_value(b, "#radius", 0)
        b.click(b.find("#submit"))
        refused = h.http("POST", d.base + "/v1/jobs", {"dataset": cloud_id, "kernel": "auto",
                                                        "precision": "exact", "pairs_within": 0})
        check(400 <= refused.status < 500, "(the API refuses pairs_within 0: %d)" % refused.status)
        want = refused.json()["detail"]
        b.wait(lambda: b.text(b.find("#job-error-detail")) == want, min(10, left()), "the daemon's sentence")
        check(b.js("return !document.getElementById('job-error').hidden && document.getElementById('alert').hidden"),
              "the daemon's refusal shows under Compute: %r" % want)
        d.alive()


if __name__ == "__main__":
    h.main(run, "histd-web-points-")
