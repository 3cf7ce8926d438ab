#!/usr/bin/env python3
"""The dashboard's statistics form and plots in headless Chromium, against
the real daemon.

Uploads points (random in a cube of side 20) through the file picker,
submits a periodic job (box 20, r_max 10, 50 buckets) through the form and
checks that the chart plots g(r) whose values -- both the data attributes
and the positions of the points on the left axis -- equal the job's g from
GET /v1/jobs/{id}, with the coordination number on a second (right) axis and
a legend. Then an A x B job in log bins: one bar per bin whose edges and
counts equal the API's, placed on a log x axis (equal widths for equal
ratios). Then a LAMMPS dump of waters: the dataset's line names its atoms,
the selections are offered from them, and the O-H job without the bonded
pairs goes out as the form says. Then counts in (r_p, pi) as a heat map,
and the curves beside it, each plotted value (data-value) held to our own
NumPy computation from the definition (brute-force pair counts, equal to
the API's, and the bins' volumes; never the client's estimators): w_p(r_p)
= 2 sum xi dpi of a periodic job, xi = DD/RR - 1 with the box's analytic
RR; xi_0, xi_2 and xi_4 of an (s, mu) job in the box by numpy's Legendre
integrals over the mu bins; and in open space, first the sentence saying
RR is needed, then w_p with an RR job picked (natural) and with a DR job
too (Landy-Szalay). Also: a refused submit shows the daemon's
problem+json detail under the Compute button, and the CSV button fetches
/result?format=csv. Screenshots go to $HISTD_WEB_OUT/dashboard-gr.png,
dashboard-log.png, dashboard-rppi.png, dashboard-wp.png,
dashboard-multipoles.png and dashboard-wp-ls.png.

Exit 77 (skip) only when chromium is not installed.
"""
import math
import os
import random
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness as h  # noqa: E402

OUT = h.OUT
left = h.deadline(80)  # the whole test, on a loaded machine
check = h.check


def write_csv(path, n, seed, side=20.0):
    rnd = random.Random(seed)
    with open(path, "w") as f:
        f.write("x,y,z\n")
        for _ in range(n):
            f.write("%r,%r,%r\n" % (rnd.uniform(0, side), rnd.uniform(0, side), rnd.uniform(0, side)))


def write_water(path, molecules, seed, side=12.0):
    """A LAMMPS dump of waters: id mol type element x y z, one frame."""
    rnd = random.Random(seed)
    with open(path, "w") as f:
        f.write("ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n"
                "0 %r\n0 %r\n0 %r\nITEM: ATOMS id mol type element x y z\n" % (3 * molecules, side, side, side))
        for m in range(molecules):
            o = [rnd.uniform(0, side) for _ in range(3)]
            f.write("%d %d 1 O %r %r %r\n" % (3 * m + 1, m + 1, *o))
            for k in range(2):
                f.write("%d %d 2 H %r %r %r\n" % (3 * m + 2 + k, m + 1, *[c + rnd.uniform(-0.6, 0.6) for c in o]))


def read_csv(path):
    return np.loadtxt(path, delimiter=",", skiprows=1)


def brute_counts(statistic, a, b, e1, e2, box=None):
    """The pairs (i < j of a, or a x b) in each (r_p, pi) or (s, mu) bin, by
    the definition: d the separation (its minimum image in a periodic cube
    of side box), line of sight z, r_p = sqrt(dx^2 + dy^2), pi = |dz| in
    [0, pi_max); s = |d|, mu = pi / s in [0, mu_max] (mu_max in the last bin)."""
    if b is None:
        i, j = np.triu_indices(len(a), 1)
        d = a[j] - a[i]
    else:
        d = (b[None, :, :] - a[:, None, :]).reshape(-1, 3)
    if box:
        d = d - box * np.round(d / box)
    pi = np.abs(d[:, 2])
    if statistic == "rp_pi":
        x, y = np.sqrt(d[:, 0] ** 2 + d[:, 1] ** 2), pi
        inside = y < e2[-1]
    else:
        x = np.sqrt((d * d).sum(axis=1))
        y = np.where(x > 0, pi / np.where(x > 0, x, 1), 0)
        inside = y <= e2[-1]
    k1 = np.searchsorted(e1, x, "right") - 1
    k2 = np.minimum(np.searchsorted(e2, y, "right") - 1, len(e2) - 2)
    ok = inside & (k1 >= 0) & (k1 < len(e1) - 1)
    counts = np.zeros((len(e1) - 1, len(e2) - 1))
    np.add.at(counts, (k1[ok], k2[ok]), 1)
    return counts


def curve_points(b):
    """The plotted curve points: {(ell or None, bin): (value or None, lo, hi)}."""
    pts = b.js("return [...document.querySelectorAll('#chart circle.cpt')].map(c => ({i: +c.dataset.bucket,"
               " ell: c.dataset.ell === undefined ? null : +c.dataset.ell, v: c.dataset.value,"
               " lo: +c.dataset.lo, hi: +c.dataset.hi, cx: +c.getAttribute('cx'), cy: +c.getAttribute('cy')}))")
    return {(p["ell"], p["i"]): p for p in pts}


def check_curve(pts, ell, want, scale, what):
    """Each plotted value of the series ell equals want (None where RR is
    0) within 1e-9 of scale, the sum of its terms' sizes."""
    got = [pts[(ell, i)]["v"] for i in range(len(want))]
    check(len(pts) >= len(want) and all(
        (g == "null") if not np.isfinite(w) else (g != "null" and abs(float(g) - w) <= 1e-9 * s)
        for g, w, s in zip(got, want, scale)),
        "%s: plotted %s, by the definition %s" % (what, got, list(want)))


def choose_curve(b, mode, timeout):
    choose(b, "curve-view", "curve")
    b.wait(lambda: b.js("return document.getElementById('chart').dataset.mode") == mode, timeout, mode)


def d_json(d, path):
    return h.get_json(d.base, path)


set_value, choose = h.set_value, h.choose


def submit_and_wait(b):
    return h.submit_and_wait(b, min(15, left()), min(40, left()))


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def run(chromium, chromedriver, work):
    downloads = os.path.join(work, "downloads")
    os.makedirs(downloads)
    liquid = os.path.join(work, "liquid.csv")
    write_csv(liquid, 800, seed=42)
    randoms = os.path.join(work, "randoms.csv")
    write_csv(randoms, 300, seed=7)

    with h.Daemon(workdir=work) as d, h.Browser(chromium, chromedriver) as b:
        h.allow_downloads(b, downloads)
        h.open_dashboard(b, d.base, min(15, left()))
        rand_id = h.upload(b, randoms, 300, min(20, left()))
        liquid_id = h.upload(b, liquid, 800, min(20, left()))
        check(d_json(d, "/v1/datasets/" + liquid_id)["n"] == 800, "the liquid is dataset %s" % liquid_id[:8])
        check(b.js("return document.getElementById('dataset-b').value") == "",
              "the second dataset is 'none' by default")
        opts_b = b.js("return [...document.querySelectorAll('#dataset-b option')].map(o => o.value)")
        check(set(opts_b) == {"", rand_id, liquid_id}, "the second-dataset menu lists the uploads")

        # 1. a refused submit: the daemon's problem+json detail shows under Compute
        choose(b, "binning", "rmax")
        set_value(b, "#r-max", 10)
        set_value(b, "#rmax-buckets", 50)
        set_value(b, "#box", "5")
        b.click(b.find("#submit"))
        refused = h.http("POST", d.base + "/v1/jobs", {"dataset": liquid_id, "kernel": "auto", "precision": "exact",
                                                        "r_max": 10, "buckets": 50, "box": [5]})
        if 400 <= refused.status < 500:
            b.wait(lambda: b.js("return !document.getElementById('job-error').hidden"), min(10, left()), "the error")
            shown = b.text(b.find("#job-error-detail"))
            check(refused.json().get("detail") == shown, "a refused submit shows the daemon's detail: %r" % shown)
            check(b.js("return document.getElementById('alert').hidden"), "and only there, not in the page's alert")
        else:
            h.log("note: the daemon accepted r_max 10 in box 5 (%d); no refusal to check" % refused.status)
            b.wait(lambda: b.js("const s = document.getElementById('job-status').dataset.status;"
                                "return ['succeeded','failed','cancelled'].includes(s)"), min(30, left()), "that job")

        # 2. the periodic job: box 20, r_max 10, 50 buckets
        set_value(b, "#box", "20")
        status, gid = submit_and_wait(b)
        check(status == "succeeded", "the periodic job succeeded in the page")
        job = d_json(d, "/v1/jobs/" + gid)
        res = job["result"]
        check(job["params"].get("box") in ([20], [20.0]) or res.get("g"), "the job is periodic (box 20)")
        g = res["g"]
        coord = res["coordination"]
        edges = [float(e) for e in res["edges"]]
        check(len(g) == 50 and len(coord) == 50 and len(edges) == 51, "the API gives 50 g, 50 n and 51 edges")
        check(b.js("return document.getElementById('chart').dataset.mode") == "g", "the chart is in g(r) mode")
        pts = b.js("return [...document.querySelectorAll('#chart circle.gpt')].map(c => "
                   "({i: +c.dataset.bucket, g: c.dataset.g, r: +c.dataset.r, cx: +c.getAttribute('cx'), cy: +c.getAttribute('cy')}))")
        npts = b.js("return [...document.querySelectorAll('#chart circle.npt')].map(c => "
                    "({n: c.dataset.n, cx: +c.getAttribute('cx'), cy: +c.getAttribute('cy')}))")
        check(len(pts) == 50 and len(npts) == 50, "the plot has 50 g points and 50 n points")
        check([p["i"] for p in pts] == list(range(50)), "the points are in bin order")
        plotted = [None if p["g"] == "null" else float(p["g"]) for p in pts]
        check(plotted == [None if v is None else float(v) for v in g], "every plotted g equals the API's g exactly")
        check([None if p["n"] == "null" else float(p["n"]) for p in npts] == [None if v is None else float(v) for v in coord],
              "every plotted n equals the API's coordination exactly")
        check(all(close(p["r"], (edges[i] + edges[i + 1]) / 2) for i, p in enumerate(pts)), "points sit at bin centres")
        check(all(pts[i]["cx"] < pts[i + 1]["cx"] for i in range(49)), "bin centres go left to right")
        # the pixels: cy is an affine, decreasing function of g (the left axis)
        known = [(v, p["cy"]) for v, p in zip(plotted, pts) if v is not None]
        (ga, ya), (gb, yb) = min(known), max(known)
        check(gb > ga and yb < ya, "a larger g is drawn higher")
        slope = (yb - ya) / (gb - ga)
        check(all(abs(ya + slope * (v - ga) - y) < 0.02 for v, y in known), "each point's height is its g on the left axis")
        nk = [(float(p["n"]), p["cy"]) for p in npts if p["n"] != "null"]
        (na, nya), (nb, nyb) = min(nk), max(nk)
        nslope = (nyb - nya) / (nb - na)
        check(all(abs(nya + nslope * (v - na) - y) < 0.02 for v, y in nk), "each n point's height is its n on the right axis")
        # the g line goes through the g points
        dpath = b.js("return document.querySelector('#chart path.gline').getAttribute('d')")
        first = dpath[1:].split("L")[0].split()
        k0 = next(i for i, v in enumerate(plotted) if v is not None)
        check(abs(float(first[0]) - pts[k0]["cx"]) < 0.01 and abs(float(first[1]) - pts[k0]["cy"]) < 0.01,
              "the g(r) line starts at the first plotted g")
        y2 = b.js("const a = document.querySelector('#chart g.axis.y2'); if (!a) return null;"
                  "return {ticks: [...a.querySelectorAll('text.y2tick')].map(t => t.textContent),"
                  " x: +a.querySelector('text.y2tick').getAttribute('x'), label: a.querySelector('text.label').textContent,"
                  " w: document.getElementById('chart').viewBox.baseVal.width}")
        check(y2 and len(y2["ticks"]) >= 3 and y2["x"] > y2["w"] / 2 and "coordination" in y2["label"],
              "a second y axis on the right: %s (%s)" % (y2 and y2["label"], y2 and ", ".join(y2["ticks"])))
        legend = b.js("return [...document.querySelectorAll('#chart g.legend text')].map(t => t.textContent)")
        check(any("g(r)" in t for t in legend) and any("n(r)" in t for t in legend), "a legend: %s" % legend)
        summary = b.text(b.find("#summary"))
        check("below" in summary and "overflow" in summary and "{:,}".format(res["total"]) in summary,
              "the summary shows below, overflow and total")
        api_csv = h.http("GET", d.base + "/v1/jobs/%s/result?format=csv" % gid).body
        header = [l for l in api_csv.split(b"\n") if not l.startswith(b"#")][0]
        check(header.endswith(b",g,coordination"), "the API's CSV has g and coordination")
        h.check_download(b, "#dl-csv", os.path.join(downloads, "histd-%s.csv" % gid), api_csv, min(10, left()),
                         "the CSV button saves GET /result?format=csv")
        b.js("window.scrollTo(0, 0)")
        b.hover(b.find('#chart circle.gpt[data-bucket="25"]'))
        b.wait(lambda: b.js("return !document.getElementById('tip').hidden"), min(5, left()), "the tooltip")
        check("g = " in b.text(b.find("#tip")), "the tooltip reads g and n")
        h.log("screenshot:", b.screenshot(os.path.join(OUT, "dashboard-gr.png")))

        # 3. A x B in log bins, open space
        set_value(b, "#box", "")
        choose(b, "binning", "log")
        set_value(b, "#log-min", 0.5)
        set_value(b, "#log-max", 10)
        set_value(b, "#log-k", 12)
        choose(b, "dataset-b", rand_id)
        status, lid = submit_and_wait(b)
        check(status == "succeeded", "the log-bins A x B job succeeded in the page")
        job = d_json(d, "/v1/jobs/" + lid)
        res = job["result"]
        check(job.get("dataset_b") == rand_id and res.get("n_b") == 300 and res["total"] == 800 * 300,
              "the job counts A x B (800 x 300 pairs)")
        check("g" not in res and "box" not in (job.get("params") or {}), "the job is open space (no g)")
        edges = [float(e) for e in res["edges"]]
        chart = b.js("const c = document.getElementById('chart'); return {mode: c.dataset.mode, x: c.dataset.xscale}")
        check(chart == {"mode": "counts", "x": "log"}, "counts on a log x axis: %s" % chart)
        bars = b.js("return [...document.querySelectorAll('#chart rect.bar')].map(r => ({c: r.dataset.count,"
                    " lo: +r.dataset.lo, hi: +r.dataset.hi, x: +r.getAttribute('x'), w: +r.getAttribute('width')}))")
        check(len(bars) == 12, "12 bars")
        check([int(x["c"]) for x in bars] == [int(c) for c in res["counts"]], "every bar's count equals the API's")
        check([x["lo"] for x in bars] == edges[:-1] and [x["hi"] for x in bars] == edges[1:],
              "every bar carries its edges from the API")
        widths = [x["w"] for x in bars]
        check(max(widths) - min(widths) < 0.01, "equal-ratio bins are equally wide on the log axis")
        check(all(bars[i]["x"] + bars[i]["w"] <= bars[i + 1]["x"] + 1e-6 for i in range(11)), "bars go left to right by edge")
        # the tick labels sit at their values on the same log scale
        ticks = b.js("return [...document.querySelectorAll('#chart g.axis.x text:not(.label)')].map(t =>"
                     " ({v: t.textContent, x: +t.getAttribute('x')}))")
        x_of = lambda v: bars[0]["x"] - 0.5 + (math.log(v) - math.log(edges[0])) / (math.log(edges[-1]) - math.log(edges[0])) \
            * (bars[-1]["x"] + bars[-1]["w"] + 0.5 - bars[0]["x"] + 0.5)
        num = [t for t in ticks if t["v"].replace(".", "").isdigit()]
        check(len(num) >= 3 and all(abs(x_of(float(t["v"])) - t["x"]) < 1.0 for t in num),
              "the x tick labels are placed on the log scale: %s" % [t["v"] for t in num])
        summary = b.text(b.find("#summary"))
        check("{:,}".format(res["below"]) in summary and "{:,}".format(res["overflow"]) in summary
              and "240,000" in summary, "the summary shows below %d, overflow %d, total 240,000" % (res["below"], res["overflow"]))
        rows = b.js("return [...document.querySelectorAll('#jobs tbody tr[data-job]')].map(r => r.dataset.job)")
        check(gid in rows and lid in rows, "both jobs are in the history list")
        b.js("window.scrollTo(0, 0)")
        h.log("screenshot:", b.screenshot(os.path.join(OUT, "dashboard-log.png")))

        # 4. a water dump: the dataset's atoms offered as selections, the O-H job
        #    without the bonded pairs sent as the form says
        water = os.path.join(work, "water.lammpstrj")
        write_water(water, 40, seed=3)
        wid = h.upload(b, water, 120, min(20, left()))
        info = b.text(b.find("#dataset-info"))
        check("40 O" in info and "80 H" in info and "40 molecules" in info,
              "the dataset's line names its atoms: %r" % info)
        offered = b.js("return [...document.querySelectorAll('#selections option')].map(o => o.value)")
        check({"all", "element:O", "element:H", "type:1", "type:2"} <= set(offered),
              "the selections offered: %s" % offered)
        check(not b.js("return document.getElementById('exclude').disabled"), "exclusions are offered")
        choose(b, "dataset-b", "")
        b.js("document.getElementById('atoms-more').open = true")
        set_value(b, "#select-a", "element:O")
        set_value(b, "#select-b", "element:H")
        b.click(b.find("#exclude"))
        choose(b, "binning", "rmax")
        set_value(b, "#r-max", 5)
        set_value(b, "#rmax-buckets", 20)
        set_value(b, "#box", "")
        status, wjob = submit_and_wait(b)
        check(status == "succeeded", "the O-H job succeeded in the page")
        job = d_json(d, "/v1/jobs/" + wjob)
        p, res = job["params"], job["result"]
        check(p.get("select_a") == "element:O" and p.get("select_b") == "element:H" and
              p.get("exclude") == "molecule", "the form sent the selections: %s" % p)
        check(res["n"] == 40 and res["n_b"] == 80 and res["excluded"] == 80 and
              res["total"] == 40 * 80 - 80, "40 O x 80 H less the 80 bonded pairs: %s" % res["total"])
        label = b.js("return document.querySelector('#jobs tbody tr[data-job=\"' + arguments[0] + '\"]').textContent", wjob)
        check("[element:O]" in label and "[element:H]" in label, "the history names the selections: %r" % label)

        # 5. counts in (r_p, pi), a job of the API's: a heat map, a cell a bin pair, each
        # with the API's exact count, placed by its edges (r_p's log axis across, pi's up)
        sub = h.http("POST", d.base + "/v1/jobs", {"dataset": liquid_id, "statistic": "rp_pi",
                                                    "rp_log_bins": [0.5, 8, 4], "pi_max": 8,
                                                    "pi_bins": 4, "box": [20]})
        check(sub.status == 202, "the rp_pi job was accepted: %s" % sub.status)
        rid = sub.json()["id"]
        h.wait_for(lambda: d_json(d, "/v1/jobs/" + rid)["status"] == "succeeded", min(30, left()),
                   "the rp_pi job")
        rres = d_json(d, "/v1/jobs/" + rid + "/result")
        b.js("location.hash = '#job=' + arguments[0]", rid)
        b.wait(lambda: b.js("return document.getElementById('chart').dataset.mode") == "heatmap",
               min(15, left()), "the heat map")
        cells = b.js("return [...document.querySelectorAll('#chart rect.cell')].map(c => ({i: +c.dataset.bucket, "
                     "j: +c.dataset.bucket2, n: c.dataset.count, x: +c.getAttribute('x'), "
                     "y: +c.getAttribute('y'), w: +c.getAttribute('width')}))")
        check(len(cells) == 16 and all(str(rres["counts"][c["i"]][c["j"]]) == c["n"] for c in cells),
              "16 cells, each with the API's count: %s" % cells[:3])
        at = {(c["i"], c["j"]): c for c in cells}
        widths = [at[(i, 0)]["w"] for i in range(4)]  # log bins of equal ratio: equal widths
        check(max(widths) - min(widths) < 0.01 * max(widths) and
              all(at[(i, 0)]["x"] < at[(i + 1, 0)]["x"] for i in range(3)) and
              all(at[(0, j)]["y"] > at[(0, j + 1)]["y"] for j in range(3)),
              "r_p across on a log axis, pi up: %s" % widths)
        check(b.js("return document.getElementById('chart').dataset.xscale") == "log", "a log r_p axis")
        b.screenshot(os.path.join(OUT, "dashboard-rppi.png"))

        # 6. w_p(r_p) of that job: xi = DD / RR - 1 with the box's analytic RR,
        # checked against counts of our own and the bins' volumes
        L = read_csv(liquid)
        e1, e2 = np.array(rres["edges"], float), np.array(rres["edges2"], float)
        dd = brute_counts("rp_pi", L, None, e1, e2, box=20.0)
        check((dd == np.array(rres["counts"], float)).all(), "the API's (r_p, pi) counts are the brute force's")
        check(not b.js("return document.getElementById('curve-bar').hidden") and
              b.js("return document.getElementById('curve-view').value") == "counts",
              "a two-axis result offers its curves, the heat map first")
        choose_curve(b, "wp", min(10, left()))
        npairs = 800 * 799 / 2
        rr = npairs * np.outer(math.pi * (e1[1:] ** 2 - e1[:-1] ** 2), 2 * np.diff(e2)) / 20.0 ** 3
        xi = dd / rr - 1
        pts = curve_points(b)
        check(len(pts) == 4, "4 w_p points")
        check_curve(pts, None, 2 * (xi * np.diff(e2)).sum(axis=1), 2 * ((dd / rr + 1) * np.diff(e2)).sum(axis=1),
                    "w_p = 2 sum xi dpi, xi = DD/RR - 1 with RR = N(N-1)/2 pi dr_p^2 2 dpi / V")
        check([pts[(None, i)]["lo"] for i in range(4)] == e1[:-1].tolist(), "each point carries its r_p bin")
        check(all(pts[(None, i)]["cx"] < pts[(None, i + 1)]["cx"] for i in range(3)) and
              b.js("return document.getElementById('chart').dataset.xscale") == "log", "r_p across on a log axis")
        note = b.js("return document.querySelector('#chart text.note').textContent")
        check("analytic RR" in note and "periodic box" in note, "the caption says the RR is the box's: %r" % note)
        b.js("document.getElementById('result').scrollIntoView()")
        b.screenshot(os.path.join(OUT, "dashboard-wp.png"))
        choose(b, "curve-view", "counts")
        check(b.js("return document.getElementById('chart').dataset.mode") == "heatmap", "and back to the heat map")

        # 7. the multipoles of an s_mu job in the box: xi_ell = (2 ell + 1) sum_k xi_k
        # int_{mu_k}^{mu_k+1} P_ell, the integrals by numpy's Legendre series
        sub = h.http("POST", d.base + "/v1/jobs", {"dataset": liquid_id, "statistic": "s_mu",
                                                    "log_bins": [0.5, 8, 4], "mu_bins": 5, "box": [20]})
        check(sub.status == 202, "the s_mu job was accepted: %s" % sub.status)
        sid = sub.json()["id"]
        h.wait_for(lambda: d_json(d, "/v1/jobs/" + sid)["status"] == "succeeded", min(30, left()), "the s_mu job")
        sres = d_json(d, "/v1/jobs/" + sid + "/result")
        b.js("location.hash = '#job=' + arguments[0]", sid)
        b.wait(lambda: b.js("return document.getElementById('chart').dataset.mode") == "heatmap",
               min(15, left()), "the s_mu heat map")
        choose_curve(b, "multipoles", min(10, left()))
        e1, e2 = np.array(sres["edges"], float), np.array(sres["edges2"], float)
        dd = brute_counts("s_mu", L, None, e1, e2, box=20.0)
        check((dd == np.array(sres["counts"], float)).all(), "the API's (s, mu) counts are the brute force's")
        rr = npairs * np.outer(4 / 3 * math.pi * (e1[1:] ** 3 - e1[:-1] ** 3), np.diff(e2)) / 20.0 ** 3
        xi = dd / rr - 1
        pts = curve_points(b)
        check(len(pts) == 12, "3 multipoles x 4 s bins")
        for ell in (0, 2, 4):
            P = np.polynomial.legendre.Legendre.basis(ell).integ()
            w = (2 * ell + 1) * np.diff(P(e2))
            check_curve(pts, ell, (xi * w).sum(axis=1), ((dd / rr + 1) * np.abs(w)).sum(axis=1),
                        "xi_%d(s) = %d sum xi(s, mu) int P_%d dmu" % (ell, 2 * ell + 1, ell))
        b.js("document.getElementById('result').scrollIntoView()")
        b.screenshot(os.path.join(OUT, "dashboard-multipoles.png"))

        # 8. open space: w_p needs RR from another job; first none fits (a sentence),
        # then with RR alone xi = DD/RR - 1 and with DR too Landy-Szalay
        bins = {"statistic": "rp_pi", "rp_log_bins": [0.5, 6, 5], "pi_max": 6, "pi_bins": 3}
        sub = h.http("POST", d.base + "/v1/jobs", dict(bins, dataset=liquid_id))
        oid = sub.json()["id"]
        h.wait_for(lambda: d_json(d, "/v1/jobs/" + oid)["status"] == "succeeded", min(30, left()), "the DD job")
        b.js("location.hash = '#job=' + arguments[0]", oid)
        b.wait(lambda: b.js("return document.getElementById('chart').dataset.mode") == "heatmap",
               min(15, left()), "the DD heat map")
        choose_curve(b, "curve-needs", min(15, left()))
        msg = b.text(b.find("#curve-msg"))
        check("RR" in msg and "none" in msg and not b.find_all("#chart circle.cpt"),
              "with no RR in these bins the view says what it needs: %r" % msg)
        ids = {}
        for name, extra in (("dr", {"dataset": liquid_id, "dataset_b": rand_id}), ("rr", {"dataset": rand_id})):
            ids[name] = h.http("POST", d.base + "/v1/jobs", dict(bins, **extra)).json()["id"]
            h.wait_for(lambda: d_json(d, "/v1/jobs/" + ids[name])["status"] == "succeeded", min(30, left()), name)
        b.click(b.find("#refresh"))
        b.wait(lambda: not b.js("return document.getElementById('curve-pick').hidden"), min(15, left()), "DR and RR offered")
        opts = lambda sel: b.js("return [...document.querySelectorAll('#' + arguments[0] + ' option')].map(o => o.value)", sel)
        check(set(opts("curve-dr")) == {"", ids["dr"]} and set(opts("curve-rr")) == {"", ids["dr"], ids["rr"]},
              "DR offers the A x B job in these bins, RR every job in them")
        R = read_csv(randoms)
        ores = d_json(d, "/v1/jobs/" + oid)["result"]
        e1, e2 = np.array(ores["edges"], float), np.array(ores["edges2"], float)
        raw = {"dd": brute_counts("rp_pi", L, None, e1, e2), "dr": brute_counts("rp_pi", L, R, e1, e2),
               "rr": brute_counts("rp_pi", R, None, e1, e2)}
        for name, jid in (("dd", oid), ("dr", ids["dr"]), ("rr", ids["rr"])):
            check((raw[name] == np.array(d_json(d, "/v1/jobs/" + jid)["result"]["counts"], float)).all(),
                  "the %s job's counts are the brute force's" % name.upper())
        dd, dr, rr = raw["dd"] / npairs, raw["dr"] / (800 * 300), raw["rr"] / (300 * 299 / 2)
        choose(b, "curve-rr", ids["rr"])
        b.wait(lambda: b.js("return document.getElementById('chart').dataset.mode") == "wp", min(10, left()), "w_p")
        with np.errstate(divide="ignore", invalid="ignore"):
            xi = np.where(rr > 0, dd / rr - 1, np.nan)
            size = np.where(rr > 0, dd / rr + 1, 0)
        check_curve(curve_points(b), None, 2 * (xi * np.diff(e2)).sum(axis=1), 2 * (size * np.diff(e2)).sum(axis=1),
                    "w_p with RR alone: xi = (DD / N_D(N_D-1)/2) / (RR / N_R(N_R-1)/2) - 1")
        check("RR job" in b.js("return document.querySelector('#chart text.note').textContent"), "the caption names RR")
        choose(b, "curve-dr", ids["dr"])
        b.wait(lambda: "Landy" in (b.js("const t = document.querySelector('#chart text.note'); return t && t.textContent") or ""),
               min(10, left()), "Landy-Szalay")
        with np.errstate(divide="ignore", invalid="ignore"):
            xi = np.where(rr > 0, (dd - 2 * dr + rr) / rr, np.nan)
            size = np.where(rr > 0, (dd + 2 * dr + rr) / rr, 0)
        check_curve(curve_points(b), None, 2 * (xi * np.diff(e2)).sum(axis=1), 2 * (size * np.diff(e2)).sum(axis=1),
                    "w_p by Landy-Szalay, DR over N_D N_R")
        b.js("document.getElementById('result').scrollIntoView()")
        b.screenshot(os.path.join(OUT, "dashboard-wp-ls.png"))
        d.alive()


if __name__ == "__main__":
    h.main(run, "histd-web-stats-")
